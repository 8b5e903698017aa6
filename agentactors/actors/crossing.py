"""Calls into a runtime from another thread's event loop: handed over, no thread per call, no blocking.

A runtime belongs to the event loop that entered it (its actors, task group and cancel scopes are that
loop's).  Code running on *another* thread's event loop — a thread that called ``anyio.run``, a server
worker with a loop of its own — reaches it through :meth:`Runtime.call
<agentactors.actors.runtime.Runtime.call>`, which hands the call to the runtime's loop and awaits its
outcome in the caller's loop.  The two loops wake each other with their thread-safe, non-blocking
schedulers (asyncio's ``call_soon_threadsafe``, trio's ``TrioToken.run_sync_soon``), so neither loop
ever waits in a blocking call for the other and no worker thread is held while a call runs.

A :class:`Crossing` is one such call: made in the caller's loop, hosted by a task of the runtime's
loop, its outcome (a value or an exception) handed back to the caller's loop.  Cancelling the caller
cancels the hosted call in the runtime's loop, and the caller waits (shielded) until it has ended there
before its cancellation goes on: a call never outlives its caller.  Nothing here knows what is called.

Everything else a runtime has must be used from its own loop.  :func:`loop_probe` is how the runtime
tells its loop from another, and :func:`wrong_loop` the error the kernel raises for a call made from
another loop (an ``ask`` or ``tell`` from another thread's loop, say): it names :meth:`Runtime.call`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel

from ..errors import WrongEventLoopError

__all__ = ["Crossing", "Waker", "current_waker", "loop_probe", "wrong_loop"]

#: Schedules a plain callable to run soon in one event loop's thread; callable from any thread; never blocks.
Waker = Callable[[Callable[[], object]], object]


def current_waker() -> Waker:
    """The running event loop's thread-safe scheduler (``call_soon_threadsafe`` / ``run_sync_soon``).

    :raises RuntimeError: no event loop of anyio's backends is running in this thread.
    """
    native = _native_token()
    schedule = getattr(native, "run_sync_soon", None) or getattr(native, "call_soon_threadsafe", None)
    if schedule is None:  # pragma: no cover - anyio has only the two backends
        raise RuntimeError(f"cannot wake this event loop from another thread: {type(native).__name__}")
    waker: Waker = schedule
    return waker


def loop_probe() -> tuple[Callable[[], object], object]:
    """``(probe, home)``: ``probe()`` is the identity of the event loop running in the calling thread, ``home``
    the running loop's own (asyncio's loop, trio's ``TrioToken``).  Call it inside the loop to be ``home``.

    ``probe`` is the backend's own lookup (``asyncio.get_running_loop``, trio's ``current_trio_token``),
    resolved once: it answers ``None`` where no loop of ``home``'s library runs,
    so ``probe() is not home`` says "not in the home loop" from any thread, loop or library, without raising.
    A lookup is still ~0.1-0.2 µs (asyncio's reads the process id): the hot paths compare threads instead
    (``threading.get_ident()``, ~35 ns) and the runtime probes where it starts tasks and hands calls over.

    :raises RuntimeError: no event loop of anyio's backends is running in this thread.
    """
    native = _native_token()
    current: Callable[[], object]
    if callable(getattr(native, "run_sync_soon", None)):  # trio's token
        import trio

        current = trio.lowlevel.current_trio_token
    else:
        import asyncio  # the running loop is asyncio's: imported already

        current = asyncio.get_running_loop

    def probe() -> object:
        try:
            return current()
        except RuntimeError:  # no loop of that library runs in this thread (another library's, or none)
            return None

    return probe, native


def wrong_loop(what: str, thread: int | None, via: str) -> WrongEventLoopError:
    """The error for ``what`` (``"ask() to actor 'x'"``, say) done outside its runtime's event loop.

    ``thread``: the ident of the thread whose loop entered the runtime.  From another thread the error names
    :meth:`Runtime.call <agentactors.actors.runtime.Runtime.call>` with ``via``, the call to hand over
    (``"ref.runtime.call(ref.ask, message)"``); from another loop of that same thread (the runtime's loop has
    ended, or is not the one running) nothing can hand it over, and the error says so.
    """
    if thread != threading.get_ident():
        return WrongEventLoopError(
            f"{what} from another event loop: its Runtime belongs to the event loop of thread {thread}, not to "
            f"this thread's; hand the call to that loop with Runtime.call: `await {via}` (from a thread with no "
            "event loop: `anyio.from_thread.run(...)` with a token taken in the runtime's loop)"
        )
    return WrongEventLoopError(
        f"{what} from another event loop: its Runtime belongs to another event loop of this thread, which has "
        "ended or is not the one running now; use the Runtime only in the loop that entered it (and leave its "
        "`async with` there)"
    )


def _native_token() -> Any:
    """The running loop's own handle (asyncio's loop, trio's ``TrioToken``), as anyio reports it."""
    current = getattr(anyio.lowlevel, "current_token", None)
    native: Any
    if current is not None:
        native = current().native_token
    else:  # pragma: no cover - anyio < 4.11: the backends' own handles
        import asyncio  # here, not at the top: only this fallback needs it, and it is ~10 ms to import

        try:
            native = asyncio.get_running_loop()
        except RuntimeError:
            import trio

            native = trio.lowlevel.current_trio_token()
    return native


class Crossing:
    """One call handed from the caller's loop to a runtime's loop (see the module docstring).

    Made in the caller's loop (its :attr:`done` event belongs there); :meth:`cancel` and :meth:`finish`
    run in the runtime's loop; :meth:`outcome` in the caller's loop again.  ``ended`` turns true in the
    runtime's loop as the hosted call ends, before the caller's loop is woken.
    """

    __slots__ = ("_wake_caller", "cancel_requested", "done", "ended", "error", "result", "scope")

    def __init__(self, wake_caller: Waker) -> None:
        self._wake_caller = wake_caller
        self.done = anyio.Event()
        self.cancel_requested = False
        self.ended = False
        self.scope: anyio.CancelScope | None = None
        self.result: Any = None
        self.error: BaseException | None = None

    def cancel(self) -> None:
        """The caller was cancelled: cancel the hosted call (in the runtime's loop; before it starts too)."""
        self.cancel_requested = True
        if self.scope is not None:
            self.scope.cancel()

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        """The hosted call ended (in the runtime's loop): hand its outcome to the caller's loop."""
        self.result, self.error = result, error
        self.ended = True
        try:
            self._wake_caller(self.done.set)
        except RuntimeError:
            pass  # the caller's loop has ended: nobody waits any more

    async def outcome(self, wake_host: Waker) -> Any:
        """Wait (in the caller's loop) for the hosted call; its value, or its exception raised.

        Cancellation: the hosted call is cancelled through ``wake_host`` and waited for, shielded, then the
        caller's cancellation propagates.  When the call has ended already, or the runtime's loop has (its
        ``wake_host`` refuses: nothing of the call runs any more), the cancellation propagates at once —
        the cancellation itself, never the refusal's ``RuntimeError``.  Anything else thrown into the wait
        is answered the same way: trio raises Ctrl-C's ``KeyboardInterrupt`` at the waiting checkpoint
        (asyncio makes it a cancellation), and the call must not outlive its caller then either.
        """
        try:
            await self.done.wait()
        except BaseException:
            if not self.ended:
                try:
                    wake_host(self.cancel)
                except RuntimeError:
                    pass  # the runtime's loop has ended: nothing of the call runs there any more
                else:
                    with anyio.CancelScope(shield=True):
                        await self.done.wait()
            raise  # the caller's cancellation (the handler above has left: this is the exception handled here)
        error, self.error = self.error, None
        if error is not None:
            raise error
        return self.result
