"""Virtual time on asyncio, to match trio's ``MockClock(autojump_threshold=0)``.

:class:`VirtualTimeLoop` is an asyncio event loop whose clock only moves when
the loop would otherwise sleep: it jumps straight to the next timer.  Code under
test sees ``anyio.current_time()`` advance by exactly the delays it waited, so a
scenario yields the same virtual timestamps on asyncio and on trio.

Like trio's autojumping clock, use it only where no real I/O happens: a wait on
a socket or a worker thread looks like idleness and makes the clock jump.

With the anyio pytest plugin::

    @pytest.fixture
    def anyio_backend():
        return ("asyncio", {"loop_factory": VirtualTimeLoop})
"""

from __future__ import annotations

import asyncio
import math
import selectors
import time
from collections.abc import Callable
from contextvars import Context
from typing import Any, TypeVarTuple, Unpack

__all__ = ["VirtualTimeLoop", "virtual_backends"]

_Ts = TypeVarTuple("_Ts")
# asyncio runs the timers due before ``time() + clock_resolution``, with the resolution it reads here.
_RESOLUTION = time.get_clock_info("monotonic").resolution
# asyncio waits at most this long in one turn of its loop (a day), even for a timer due later.
_MAX_WAIT: float = getattr(asyncio.base_events, "MAXIMUM_SELECT_TIMEOUT", 24 * 3600)


class _AutojumpSelector(selectors.DefaultSelector):
    """Polls without blocking; when nothing is ready and a timer is due later, moves the clock to it."""

    def __init__(self) -> None:
        super().__init__()
        self.loop: VirtualTimeLoop | None = None

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            # Nothing scheduled at all: only I/O (a thread's wake-up) can move us on.
            return super().select(None)
        assert self.loop is not None
        if timeout >= _MAX_WAIT:
            # asyncio caps a wait at a day: jump to the next timer itself, not a day at a time.
            timeout = max(timeout, self.loop.next_timer() - self.loop.time())
        self.loop.advance(timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop on a virtual, autojumping clock (starts at 0.0).

    Far out (past 2**24 s) a float's spacing exceeds asyncio's clock resolution, so a timer due at
    exactly ``now`` is not due for asyncio (``when < now + resolution`` is false) and, the clock
    being virtual, never becomes due: the loop spun forever.  Here the clock steps one float past a
    timer it jumps to, and a timer asked for at or before ``now`` is scheduled just before it
    (trio's MockClock has no such edge).
    """

    def __init__(self) -> None:
        selector = _AutojumpSelector()
        super().__init__(selector)
        selector.loop = self
        self._virtual_now = 0.0

    def time(self) -> float:
        return self._virtual_now

    def advance(self, seconds: float) -> None:
        """Move the clock forward (the selector does this when the loop is idle)."""
        if seconds > 0:
            now = self._virtual_now + seconds
            if now + _RESOLUTION <= now:  # a timer at ``now`` would not be due: step past it
                now = math.nextafter(now, math.inf)
            self._virtual_now = now

    def next_timer(self) -> float:
        """When the earliest timer is due (``-inf``: none).  asyncio has dropped cancelled ones off the head
        of its heap by the time it waits."""
        scheduled: list[asyncio.TimerHandle] = getattr(self, "_scheduled", [])
        return scheduled[0].when() if scheduled else -math.inf

    def call_at(
        self, when: float, callback: Callable[[Unpack[_Ts]], object], *args: *_Ts,
        context: Context | None = None,
    ) -> asyncio.TimerHandle:
        now = self._virtual_now
        if when <= now and now + _RESOLUTION <= now:  # due now, but asyncio would never find it due
            when = math.nextafter(now, -math.inf)
        return super().call_at(when, callback, *args, context=context)


def virtual_backends() -> list[tuple[str, dict[str, Any]]]:
    """``anyio_backend`` values for both backends on virtual time.

    :raises ModuleNotFoundError: trio is not installed (the ``[testing]`` extra).
    """
    from .._extras import import_extra

    trio_testing = import_extra("trio.testing", "testing", "agentactors.testing.virtual_backends()")

    return [
        ("asyncio", {"loop_factory": VirtualTimeLoop}),
        ("trio", {"clock": trio_testing.MockClock(autojump_threshold=0)}),
    ]
