"""Awaiting Ray object refs from the driver's event loop, asyncio or trio, without a thread per wait.

Ray completes an object ref on one of its own threads.  ``ref.future()`` is a
:class:`concurrent.futures.Future` whose done-callback runs there; the callback
only schedules ``event.set`` into the driver's loop, without blocking Ray's
thread: ``call_soon_threadsafe`` on asyncio, ``TrioToken.run_sync_soon`` on
trio — both reached through anyio's event-loop token, so this is the one place
that knows a backend exists.  A wait costs a callback and an event, however
many refs are in flight.

**Ray going away.**  Once the driver's Ray is shut down (``ray.shutdown()``
from any thread, a cluster that started Ray leaving while another still runs)
a pending ref's future is never completed: nobody is left to complete it.  So
a wait also looks at ``ray.is_initialized()`` every :data:`LIVENESS_POLL`
seconds and ends with :class:`~agentactors.ray.errors.WorkerLostError` when Ray
is gone — a wait never outlives Ray.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Final

import anyio
import anyio.lowlevel

from .errors import WorkerLostError

__all__ = ["LIVENESS_POLL", "RefWaiter", "ray_gone_error"]

#: Seconds between a waiting call's looks at whether Ray is still up (a wakeup each: nothing costs less).
LIVENESS_POLL: Final = 1.0


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

        :raises WorkerLostError: Ray was shut down before the ref completed (its reply will never come).

        Cancellation: the waiter leaves at once; the ref is not cancelled (the caller decides
        whether to ``ray.cancel`` it), and its late completion wakes nobody.
        """
        import ray

        if not ray.is_initialized():
            raise ray_gone_error()
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
            while not event.is_set():
                with anyio.move_on_after(LIVENESS_POLL):
                    await event.wait()
                if not event.is_set() and not ray.is_initialized():
                    raise ray_gone_error()
        return future.result()


def ray_gone_error() -> WorkerLostError:
    """What a wait ends with once the driver's Ray is shut down (its reply will never come)."""
    return WorkerLostError("Ray was shut down on the driver: no reply from its workers will come")
