"""Timeouts for the trio direct path's socket waits, kept by one watchdog task per trio run.

Why not a cancel scope per wait, as anyio's stream and the first direct path did: on trio a
cancel scope with a deadline is the dearest thing a wait does — entering one builds its cancel
status, registers the deadline with the runner and leaves it again (~15 µs of CPU each, more
than the read).  A JSON response under load takes two waits (its head, then its body), a
streamed one a wait per burst of events, and every one of them had a scope of its own only to
bound it by the read timeout, which almost never fires.  Measured on W5 (trio, interleaved
A/B): without the scope a JSON request cost 16 % less CPU at concurrency 32.

How: a socket about to wait notes its deadline and joins the run's :class:`Deadlines`; it leaves
when its wait ends (a set insertion and removal).  The watchdog, a trio system task started the
first time a run needs it, sleeps until the earliest deadline it was told of and then wakes
every socket whose deadline has passed with ``trio.lowlevel.notify_closing``: their wait raises
``ClosedResourceError``, and the socket, seeing it was expired, raises the timeout.  Such a
socket is done for — trio's rule after ``notify_closing``, and an HTTP connection whose wait
timed out is never reused anyway: the sender closes it.

What is kept: the caller's own cancellation reaches the wait unchanged (``wait_readable`` is a
checkpoint of the caller's scopes); the deadline is on trio's clock, so a virtual clock drives it
as it drove the scope's; a deadline already past still times out.  A wait that ended on its own
an instant before the watchdog expired it also raises the timeout (its socket was already
handed to ``notify_closing``), never returns data from a socket trio no longer watches.
"""

from __future__ import annotations

import contextvars
import math
from typing import Protocol

import trio

__all__ = ["Deadlines", "Waiter", "deadlines"]


class Waiter(Protocol):
    """What the watchdog keeps: a socket waiting, until ``deadline`` (on trio's clock)."""

    #: When the wait times out, on ``trio.current_time()``'s clock.
    deadline: float

    def expire(self) -> None:
        """The deadline passed: mark the wait expired and wake it (never raises)."""
        ...


class Deadlines:
    """One trio run's waiting sockets and the watchdog that times them out (see the module)."""

    __slots__ = ("_alarm", "_waiting", "_wake_at")

    def __init__(self) -> None:
        self._waiting: set[Waiter] = set()
        self._wake_at = math.inf  # no later than the earliest deadline of a waiter (stale once it left: harmless)
        self._alarm: trio.CancelScope | None = None  # the watchdog's sleep, while it sleeps

    def watch(self, waiter: Waiter) -> None:
        """Time ``waiter`` out at its ``deadline`` unless :meth:`forget` comes first."""
        self._waiting.add(waiter)
        if waiter.deadline < self._wake_at:
            # Earlier than the watchdog planned to wake: rare when timeouts are alike (each new deadline is later).
            self._wake_at = waiter.deadline
            if self._alarm is not None:
                self._alarm.deadline = waiter.deadline

    def forget(self, waiter: Waiter) -> None:
        """``waiter``'s wait ended (idempotent)."""
        self._waiting.discard(waiter)

    def __len__(self) -> int:
        """How many waits are watched now."""
        return len(self._waiting)

    async def _watch_forever(self) -> None:
        """The watchdog: sleep until the earliest deadline, expire what is due, again.

        Cancellation: ends with the run (a system task is cancelled when the main task ends).
        """
        while True:
            with trio.CancelScope(deadline=self._wake_at) as alarm:
                self._alarm = alarm
                await trio.sleep_forever()
            self._alarm = None
            self._expire_due(trio.current_time())

    def _expire_due(self, now: float) -> None:
        earliest = math.inf
        for waiter in list(self._waiting):
            if waiter.deadline <= now:
                self._waiting.discard(waiter)
                waiter.expire()
            elif waiter.deadline < earliest:
                earliest = waiter.deadline
        self._wake_at = earliest


_DEADLINES: trio.lowlevel.RunVar[Deadlines] = trio.lowlevel.RunVar("agentactors_socket_deadlines")


def deadlines() -> Deadlines:
    """The running trio run's :class:`Deadlines`, its watchdog started on the first call."""
    try:
        return _DEADLINES.get()
    except LookupError:
        pass
    watch = Deadlines()
    _DEADLINES.set(watch)
    # A context of its own: the watchdog must not keep the first caller's context variables (its run's ticket...).
    trio.lowlevel.spawn_system_task(
        watch._watch_forever, name="agentactors: HTTP socket timeouts", context=contextvars.Context()
    )
    return watch
