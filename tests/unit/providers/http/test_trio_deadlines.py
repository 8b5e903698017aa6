"""The trio direct path's timeout watchdog (``_trio_deadlines``), on trio's virtual clock.

trio only: it is the trio backend's own piece (asyncio's direct path bounds a wait with a timer
handle of the loop).  The sender's timeouts through it, on both backends, are checked in
``test_h11_transport.py``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

from agentactors.providers.http._trio_deadlines import Deadlines, deadlines

_SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="nothing")


class _Waiter:
    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.expired_at: float | None = None
        self.context_seen = ""

    def expire(self) -> None:
        self.expired_at = trio.current_time()
        self.context_seen = _SEEN.get()


def _run_virtual(main: Callable[[], Awaitable[None]]) -> None:
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_each_wait_expires_at_its_own_deadline_and_a_forgotten_one_never() -> None:
    async def main() -> None:
        watch = deadlines()
        start = trio.current_time()
        late, gone, early = _Waiter(start + 5), _Waiter(start + 3), _Waiter(start + 1)
        for waiter in (late, gone, early):  # each earlier than the last: the watchdog must wake sooner each time
            watch.watch(waiter)
        watch.forget(gone)
        await trio.sleep(0.5)
        assert (late.expired_at, early.expired_at) == (None, None) and len(watch) == 2
        await trio.sleep(10)
        assert early.expired_at == pytest.approx(start + 1)
        assert late.expired_at == pytest.approx(start + 5)
        assert gone.expired_at is None and len(watch) == 0

    _run_virtual(main)


def test_a_deadline_already_past_expires_at_once() -> None:
    async def main() -> None:
        watch = deadlines()
        await trio.sleep(1)  # the watchdog is parked, with nothing to wait for
        waiter = _Waiter(trio.current_time() - 1)
        watch.watch(waiter)
        await trio.sleep(0.001)
        assert waiter.expired_at is not None

    _run_virtual(main)


def test_one_watchdog_a_run_and_it_keeps_no_callers_context() -> None:
    seen: list[Deadlines] = []

    async def main() -> None:
        _SEEN.set("the first caller's run ticket")
        watch = deadlines()
        assert deadlines() is watch
        seen.append(watch)
        waiter = _Waiter(trio.current_time() + 1)
        watch.watch(waiter)
        await trio.sleep(2)
        assert waiter.context_seen == "nothing"

    _run_virtual(main)
    _run_virtual(main)
    assert seen[0] is not seen[1]  # a run of its own, a watchdog of its own


def test_the_watchdog_ends_with_its_run() -> None:
    async def main() -> None:
        deadlines().watch(_Waiter(trio.current_time() + 3600))  # still watched when the run ends

    _run_virtual(main)  # returns: the system task is cancelled, not waited for
