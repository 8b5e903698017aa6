"""A stream's private runtime, hosted in a task of its own rather than in the consumer's.

``async with agent.stream(p) as run:`` with no runtime running opens a runtime for that run alone.  Its task
group is a cancel scope, and a cancel scope belongs to the task that entered it: entered in the consumer's
task, it stayed on that task's stack while the consumer did other things — a web framework's response
generator (``async with agent.stream(p) as run: async for ev in run: yield ...``) yields inside it, a handle
entered with ``await run.__aenter__()`` returns with it open — and the consumer's going away was then
finalised in another task (trio: a system task; asyncio: a task of its own) that left the scope from the
wrong task: trio's scope and nursery stacks corrupted, asyncio's caller cancelled by a scope not its own.

So the runtime is entered and left by a task that does nothing else (:func:`host_private`): the handle asks
it to close (:meth:`HostedRuntime.close`) from whatever task leaves the handle, and waits for it — legal from
any task of the loop, and the consumer's task holds no scope of the runtime's.  That task is not a child of
the consumer (there is no task group to start it in: that is the point): a trio system task, or an asyncio
task held here; both are cancelled when their event loop's run ends, which closes a runtime nobody closed.
It never raises: what leaving the runtime raised (an escalated failure) is kept for :meth:`close` to raise.
"""

from __future__ import annotations

import logging
from contextlib import AbstractAsyncContextManager

import anyio

from .._backend import spawn_detached
from ..actors.runtime import Runtime

__all__ = ["HostedRuntime", "host_private"]

log = logging.getLogger("agentactors.agent")

class HostedRuntime:
    """A runtime that a task of its own entered and leaves when :meth:`close` (or :meth:`close_soon`) asks it."""

    __slots__ = ("_closing", "_done", "_ready", "error", "rt")

    def __init__(self) -> None:
        self._ready = anyio.Event()
        self._closing = anyio.Event()
        self._done = anyio.Event()
        self.rt: Runtime | None = None
        self.error: BaseException | None = None  # what entering or leaving the runtime raised

    async def _host(self, opened: AbstractAsyncContextManager[Runtime]) -> None:
        """The host task: enter ``opened``, wait to be asked to close, leave it.  Never raises."""
        try:
            async with opened as rt:
                self.rt = rt
                self._ready.set()
                await self._closing.wait()
        except BaseException as exc:  # (out of a trio system task it would crash the run; asyncio would log it)
            if not isinstance(exc, anyio.get_cancelled_exc_class()):  # cancelled: the loop's run is ending
                self.error = exc
        finally:
            self._ready.set()
            self._done.set()

    def close_soon(self) -> None:
        """Ask the host to leave the runtime, without waiting (a finaliser's way).  Only in the loop's thread."""
        self._closing.set()

    async def close(self) -> None:
        """Ask the host to leave the runtime and wait until it has; from any task of the runtime's loop.

        :raises BaseException: what leaving the runtime raised (a failure of one of its tasks, escalated).

        Cancellation: the wait is shielded (the runtime's exit is bounded: ``Runtime.__aexit__``).
        """
        self._closing.set()
        with anyio.CancelScope(shield=True):
            await self._done.wait()
        error, self.error = self.error, None
        if error is not None:
            raise error


async def host_private(opened: AbstractAsyncContextManager[Runtime]) -> HostedRuntime:
    """``opened`` entered in a task of its own; returns once it runs (``.rt``).

    The host task runs in a copy of the caller's contextvars, as the runtime's workers did when the caller
    entered it itself.

    :raises BaseException: what entering ``opened`` raised.

    Cancellation: a cancelled caller closes the runtime (shielded) before the cancellation propagates.
    """
    hosted = HostedRuntime()
    spawn_detached(hosted._host, opened, name="agentactors: a stream's private runtime")
    try:
        await hosted._ready.wait()
    except BaseException:
        try:
            await hosted.close()
        except Exception:
            log.debug("closing a private runtime whose opener was cancelled raised", exc_info=True)
        raise
    if hosted.rt is None:  # entering failed (or the loop's run is ending)
        error = hosted.error or RuntimeError("the private runtime of a stream could not be opened")
        hosted.error = None
        raise error
    return hosted
