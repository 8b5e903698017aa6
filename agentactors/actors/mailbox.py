"""What travels through a mailbox: the ask envelope and the answer that owns work.

The mailbox itself is a :class:`collections.deque` owned by the actor's cell
(:mod:`agentactors.actors._cell`: created on the first message and dropped when
the actor goes idle).  It was chosen by measurement over anyio memory object
streams: a deque append/popleft plus one wake-up event per ask costs a fraction
of a stream send/receive pair, and an idle actor holds no buffer at all.  Tells
are queued as the bare message (no allocation); asks as an :class:`Ask`
envelope carrying the reply slot.  Whoever handles an ask runs its handler with
the asker's contextvars through :mod:`agentactors.actors._inline`.
"""

from __future__ import annotations

import contextvars
import logging
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._cell import CancelScopeLike, EventLike

__all__ = ["ABANDONED", "DONE", "QUEUED", "RUNNING", "Ask", "ReleasableAnswer", "release_unclaimed"]

log = logging.getLogger("agentactors.actors")

# Ask states.  Plain ints: compared on the hot path.
QUEUED: Final = 0
RUNNING: Final = 1
DONE: Final = 2
ABANDONED: Final = 3


@runtime_checkable
class ReleasableAnswer(Protocol):
    """An answer that owns work (a task, a connection) and must release it if its asker never takes it.

    An asker that is cancelled, or whose ``timeout`` expires, after the
    handler answered but before the answer reached it, abandons an answer that
    nobody will ever see.  When that answer implements this protocol, the
    kernel calls :meth:`release_unclaimed` on it — once, in the abandoning
    asker's task — so the work it owns does not outlive the ask (a
    :class:`~agentactors.gateway.provider.ProviderStream` cancels its feeding
    task and HTTP request).  A handler that still answers after its asker left
    (it reached no checkpoint after the cancellation) has its answer released
    the same way, in the worker's task, as it answers.
    """

    def release_unclaimed(self) -> None:
        """Release what the answer owns; it will never be used.  Must not block, nor raise."""
        ...


def release_unclaimed(answer: object) -> None:
    """Release ``answer`` if it is a :class:`ReleasableAnswer` (an answer its asker gave up on).

    Called while the asker's own cancellation (or timeout) propagates, so a
    release that raises is logged, never raised over it.
    """
    if isinstance(answer, ReleasableAnswer):
        try:
            answer.release_unclaimed()
        except Exception as exc:
            log.warning("releasing an unclaimed %s raised %s", type(answer).__name__, type(exc).__name__)


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
            # The asker left while the handler ran, and the handler finished anyway (no checkpoint after
            # the cancellation): nobody will take this answer, so one that owns work lets it go.
            release_unclaimed(result)
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
            # Answered, but the asker will never take the answer: an answer that owns work releases it.
            self.state = ABANDONED
            result, self.result = self.result, None
            release_unclaimed(result)
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
