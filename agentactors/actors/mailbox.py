"""The pieces a mailbox is made of: the ask envelope, the sender waiting for room, and the context trampoline.

The mailbox itself is a :class:`collections.deque` owned by the
:class:`~agentactors.actors.runtime.ActorRef` (created on the first message and
dropped when the actor goes idle).  It was chosen by measurement over anyio
memory object streams: a deque append/popleft plus one wake-up event per ask
costs a fraction of a stream send/receive pair, and an idle actor holds no
buffer at all.  Tells are queued as the bare message (no allocation); asks as
an :class:`Ask` envelope carrying the reply slot.
"""

from __future__ import annotations

import contextvars
import types
from collections.abc import Coroutine, Generator
from typing import Any, Protocol

__all__ = ["ABANDONED", "DONE", "QUEUED", "RUNNING", "Ask", "CancelScopeLike", "EventLike", "Waiter", "in_context"]

# Ask states.  Plain ints: compared on the hot path.
QUEUED = 0
RUNNING = 1
DONE = 2
ABANDONED = 3


class EventLike(Protocol):
    """The subset of ``anyio.Event`` the mailbox uses."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    async def wait(self) -> None: ...


class CancelScopeLike(Protocol):
    """The subset of ``anyio.CancelScope`` the mailbox uses."""

    def cancel(self) -> None: ...

    @property
    def cancel_called(self) -> bool: ...


class Ask:
    """One ``ask`` in flight: the message, the asker's context, and the reply slot.

    ``state`` moves QUEUED -> RUNNING -> DONE, or to ABANDONED when the asker
    gives up (cancelled or timed out): a queued abandoned ask is skipped, a
    running one has its handler's cancel scope cancelled.
    """

    __slots__ = ("ctx", "done", "error", "message", "result", "scope", "state")

    def __init__(self, message: Any, ctx: contextvars.Context, done: EventLike) -> None:
        self.message = message
        self.ctx = ctx
        self.done = done
        self.state = QUEUED
        self.result: Any = None
        self.error: BaseException | None = None
        self.scope: CancelScopeLike | None = None

    def succeed(self, result: Any) -> None:
        if self.state == ABANDONED:
            return
        self.state = DONE
        self.result = result
        self.done.set()

    def fail(self, error: BaseException) -> None:
        if self.state == ABANDONED:
            return
        self.state = DONE
        self.error = error
        self.done.set()

    def abandon(self) -> None:
        """The asker gave up: skip the message if not started, cancel its handler if running."""
        state = self.state
        if state == DONE:
            # Answered, but the asker will never take the answer: let an answer that owns
            # work (a provider stream's feeding task) release it.
            hook = getattr(self.result, "_abandoned_by_asker", None)
            self.state = ABANDONED
            if hook is not None:
                hook()
            return
        if state == ABANDONED:
            return
        self.state = ABANDONED
        if state == RUNNING and self.scope is not None:
            self.scope.cancel()

    def outcome(self) -> Any:
        if self.error is not None:
            error, self.error = self.error, None  # drop the reference: no traceback cycle through the envelope
            raise error
        return self.result


class Waiter:
    """A sender waiting for room in a full mailbox.

    The worker that frees a slot hands the waiting item straight into the
    mailbox (``admitted = True``) and wakes the sender, so a new sender cannot
    overtake one that is already waiting (FIFO, per-sender order kept).
    ``admitted = False`` means the actor stopped while the sender waited.
    """

    __slots__ = ("admitted", "event", "item")

    def __init__(self, item: Any, event: EventLike) -> None:
        self.item = item
        self.event = event
        self.admitted: bool | None = None


@types.coroutine
def in_context(ctx: contextvars.Context, coro: Coroutine[Any, Any, Any]) -> Generator[Any, Any, Any]:
    """Run ``coro`` to completion inside ``ctx`` while staying in the current task.

    Each step of the coroutine is executed with ``ctx.run``; what it yields to
    the event loop (asyncio futures, trio traps) is passed through unchanged and
    what the loop sends or throws back is forwarded.  The task, its cancel
    scopes and the backend's bookkeeping stay those of the calling task — only
    the contextvars differ, and changes the coroutine makes to them stay in
    ``ctx``.  This is how an ask runs its handler with the asker's contextvars
    without starting a task per message.
    """
    send = coro.send
    throw = coro.throw
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            if error is None:
                yielded = ctx.run(send, value)
            else:
                pending, error = error, None
                yielded = ctx.run(throw, pending)
        except StopIteration as stop:
            return stop.value
        try:
            value = yield yielded
        except GeneratorExit:
            ctx.run(coro.close)
            raise
        except BaseException as exc:
            error = exc
            value = None
