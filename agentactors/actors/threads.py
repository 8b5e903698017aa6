"""Worker threads for blocking calls: a bounded number at once, and the abandoned ones counted.

``anyio.to_thread.run_sync(fn, abandon_on_cancel=True)`` lets a caller walk away from a blocking
call whose thread nothing can stop.  When such calls pile up (a blocking function stuck on I/O,
called again and again, each call abandoned at its timeout) anyio's default limiter goes wrong
in two ways: on trio an abandoned thread keeps its limiter token until its function returns, so
after ``total_tokens`` (40) of them every later call waits for a token forever — or until its
own timeout; on asyncio the token comes back, but nothing says how many stuck threads are alive.

:class:`WorkerThreads` keeps its own limiter, whose token a call gives back the moment its caller
leaves; the thread behind an abandoned call runs on, counted in :attr:`WorkerThreads.abandoned`
until its function returns (a thread cannot be killed: the count is the honest part).  Threads
still come from anyio's pool, through a limiter of ours without a bound, so the default limiter
anyio shares with everything else in the process is never held by a stuck call either.

One :class:`WorkerThreads` serves each event loop (:func:`worker_threads`), as anyio's default
limiter does.  Nothing here knows what runs in the threads: the runtime reports the count in
``rt.stats()`` and the tool executor hands its sync tools to it.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from typing import Final, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

__all__ = ["DEFAULT_LIMIT", "WorkerThreads", "worker_threads"]

T = TypeVar("T")

log = logging.getLogger("agentactors.actors")

#: Calls at once per event loop unless told otherwise (anyio's own default).
DEFAULT_LIMIT: Final = 40

# A call's life, as the caller and the thread see it (changed under the pool's lock only).
_PENDING: Final = 0  # handed to anyio, not started in a thread yet
_RUNNING: Final = 1  # its function runs in a thread; the caller waits
_DONE: Final = 2  # its function returned or raised
_ABANDONED: Final = 3  # the caller left while the function ran: counted until it returns
_DROPPED: Final = 4  # the caller left before the function started: it never will


class _Call:
    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = _PENDING


class WorkerThreads:
    """At most ``limit`` blocking calls at once in worker threads; abandoned calls free their slot.

    :param limit: calls running at once (callers beyond it wait for a slot).
    :raises ValueError: ``limit`` is not a positive int.
    """

    __slots__ = ("_abandoned", "_limit", "_lock", "_slots", "_threads")

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._limit = _check_limit(limit)
        self._lock = threading.Lock()
        self._abandoned = 0
        # Made on first use, inside the event loop they belong to.
        self._slots: anyio.CapacityLimiter | None = None
        self._threads: anyio.CapacityLimiter | None = None

    def __repr__(self) -> str:
        return f"WorkerThreads(limit={self._limit}, running={self.running}, abandoned={self._abandoned})"

    @property
    def limit(self) -> int:
        """Calls running at once; settable (waiting callers are let in when it grows)."""
        return self._limit

    @limit.setter
    def limit(self, value: int) -> None:
        self._limit = _check_limit(value)
        if self._slots is not None:
            self._slots.total_tokens = self._limit

    @property
    def running(self) -> int:
        """Calls holding a slot now (their callers are waiting for them)."""
        return 0 if self._slots is None else int(self._slots.borrowed_tokens)

    @property
    def abandoned(self) -> int:
        """Threads still running a function whose caller left (cancelled, timed out); 0 when none."""
        return self._abandoned

    async def run_sync(
        self, fn: Callable[[], T], *, on_abandoned: Callable[[int], object] | None = None
    ) -> T:
        """Run ``fn()`` in a worker thread once a slot is free, and return what it returns.

        :raises BaseException: whatever ``fn`` raises, as it raised it.

        Cancellation: a caller cancelled while waiting for a slot leaves; ``fn`` never runs.  A
        caller cancelled while ``fn`` runs abandons the call: its slot is free at once, the thread
        runs on (counted in :attr:`abandoned` until ``fn`` returns, its result discarded), and
        ``on_abandoned(abandoned)`` is called before the cancellation propagates.  ``fn`` can see
        that it was abandoned with ``anyio.from_thread.check_cancelled()``.
        """
        slots, threads = self._slots, self._threads
        if slots is None or threads is None:
            slots = self._slots = anyio.CapacityLimiter(self._limit)
            threads = self._threads = anyio.CapacityLimiter(math.inf)
        call = _Call()
        lock = self._lock

        def work() -> T:
            with lock:
                if call.state == _DROPPED:
                    raise _Dropped  # nobody waits for it: do not start what was given up
                call.state = _RUNNING
            try:
                return fn()
            finally:
                with lock:
                    if call.state == _ABANDONED:
                        self._abandoned -= 1
                    call.state = _DONE

        async with slots:
            try:
                return await anyio.to_thread.run_sync(work, abandon_on_cancel=True, limiter=threads)
            except BaseException:
                with lock:
                    state = call.state
                    if state == _RUNNING:
                        call.state = _ABANDONED
                        self._abandoned += 1
                        alive = self._abandoned
                    elif state == _PENDING:
                        call.state = _DROPPED
                if state == _RUNNING and on_abandoned is not None:
                    try:
                        on_abandoned(alive)
                    except Exception:  # a report must not replace the cancellation it reports
                        log.exception("an on_abandoned callback raised; the call is abandoned all the same")
                raise


class _Dropped(Exception):
    """Raised in a thread that started a call its caller had already given up (nobody sees it)."""


def _check_limit(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"a worker-thread limit must be a positive int, not {value!r}")
    return value


_LOOP_THREADS: anyio.lowlevel.RunVar[WorkerThreads] = anyio.lowlevel.RunVar("agentactors.worker_threads")


def worker_threads() -> WorkerThreads:
    """The running event loop's :class:`WorkerThreads` (made on first use; one per event loop).

    Set its :attr:`~WorkerThreads.limit` to allow more (or fewer) blocking calls at once.

    :raises RuntimeError: no event loop is running in this thread.
    """
    try:
        return _LOOP_THREADS.get()
    except LookupError:
        threads = WorkerThreads()
        _LOOP_THREADS.set(threads)
        return threads
