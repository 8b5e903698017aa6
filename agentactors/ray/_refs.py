"""Awaiting Ray object refs from the driver's event loop, asyncio or trio, without a thread per wait.

Ray completes an object ref on one of its own threads.  ``ref.future()`` is a
:class:`concurrent.futures.Future` whose done-callback runs there; the callback
only schedules ``event.set`` into the driver's loop, without blocking Ray's
thread: ``call_soon_threadsafe`` on asyncio, ``TrioToken.run_sync_soon`` on
trio — both reached through anyio's event-loop token, so this is the one place
that knows a backend exists.  A wait costs a callback and an event, however
many refs are in flight.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import anyio
import anyio.lowlevel

__all__ = ["RefWaiter"]


class RefWaiter:
    """Made in the driver's event loop (it captures the loop); :meth:`wait` awaits one ref there."""

    __slots__ = ("_schedule",)

    def __init__(self) -> None:
        native = anyio.lowlevel.current_token().native_token
        schedule = getattr(native, "run_sync_soon", None) or getattr(native, "call_soon_threadsafe", None)
        if schedule is None:  # pragma: no cover - anyio has only the two backends
            raise RuntimeError(f"cannot wake this event loop from another thread: {type(native).__name__}")
        self._schedule: Callable[[Callable[[], object]], object] = schedule

    async def wait(self, ref: Any) -> Any:
        """The ref's value (or its exception, raised).

        Cancellation: the waiter leaves at once; the ref is not cancelled (the caller decides
        whether to ``ray.cancel`` it), and its late completion wakes nobody.
        """
        future: Future[Any] = ref.future()
        if not future.done():
            event = anyio.Event()
            schedule = self._schedule

            def done(_: Future[Any]) -> None:
                try:
                    schedule(event.set)
                except RuntimeError:
                    pass  # the driver's loop has ended: nobody waits any more

            future.add_done_callback(done)
            await event.wait()
        return future.result()
