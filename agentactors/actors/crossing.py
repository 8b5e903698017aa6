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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel

__all__ = ["Crossing", "Waker", "current_waker"]

#: Schedules a plain callable to run soon in one event loop's thread; callable from any thread; never blocks.
Waker = Callable[[Callable[[], object]], object]


def current_waker() -> Waker:
    """The running event loop's thread-safe scheduler (``call_soon_threadsafe`` / ``run_sync_soon``).

    :raises RuntimeError: no event loop of anyio's backends is running in this thread.
    """
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
    schedule = getattr(native, "run_sync_soon", None) or getattr(native, "call_soon_threadsafe", None)
    if schedule is None:  # pragma: no cover - anyio has only the two backends
        raise RuntimeError(f"cannot wake this event loop from another thread: {type(native).__name__}")
    waker: Waker = schedule
    return waker


class Crossing:
    """One call handed from the caller's loop to a runtime's loop (see the module docstring).

    Made in the caller's loop (its :attr:`done` event belongs there); :meth:`cancel` and :meth:`finish`
    run in the runtime's loop; :meth:`outcome` in the caller's loop again.
    """

    __slots__ = ("_wake_caller", "cancel_requested", "done", "error", "result", "scope")

    def __init__(self, wake_caller: Waker) -> None:
        self._wake_caller = wake_caller
        self.done = anyio.Event()
        self.cancel_requested = False
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
        try:
            self._wake_caller(self.done.set)
        except RuntimeError:
            pass  # the caller's loop has ended: nobody waits any more

    async def outcome(self, wake_host: Waker) -> Any:
        """Wait (in the caller's loop) for the hosted call; its value, or its exception raised.

        Cancellation: the hosted call is cancelled through ``wake_host`` and waited for, shielded, then the
        caller's cancellation propagates.
        """
        try:
            await self.done.wait()
        except anyio.get_cancelled_exc_class():
            try:
                wake_host(self.cancel)
            except RuntimeError:
                raise  # the runtime's loop has ended: nothing of the call runs any more
            with anyio.CancelScope(shield=True):
                await self.done.wait()
            raise
        error, self.error = self.error, None
        if error is not None:
            raise error
        return self.result
