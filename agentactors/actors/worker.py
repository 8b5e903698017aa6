"""The worker: the task that handles an actor's messages while it has any.

A message arriving at an idle actor starts a worker in the runtime's task group
(:meth:`~agentactors.actors.runtime.Runtime._activate`); the worker runs the
actor's ``on_start`` the first time, handles messages until the mailbox stays
empty for a couple of scheduling rounds, and ends.  Up to ``concurrency``
workers run at once for one actor.

An ask's handler runs inside the asker's context (:func:`in_context`) and
inside the worker's current cancel scope, which the asker cancels if it gives
up.  A tell's handler runs in the runtime's own context.  Asks handled directly
in their askers' tasks hold handler slots too: a worker leaves the mailbox
alone while every slot is busy (the last direct handler to finish starts one).
"""

from __future__ import annotations

import contextvars
from collections import deque
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import anyio

from ..errors import ActorStopped
from .mailbox import QUEUED, RUNNING, Ask, CancelScopeLike, in_context
from .ref import OPEN, STOPPED, STOPPING

if TYPE_CHECKING:
    from .ref import ActorRef
    from .runtime import Runtime

__all__ = ["Failure", "serve", "work"]

# Scheduling rounds a worker waits with an empty mailbox before it ends (see serve()).
_LINGER_ROUNDS: Final = 2


# A direct ask's failure handed to a worker for supervision: (error, message, the asker's context).
Failure: TypeAlias = "tuple[Exception, Any, contextvars.Context]"


async def work(rt: Runtime, ref: ActorRef, failure: Failure | None = None) -> None:
    """One worker of ``ref``: start the actor if needed, serve its mailbox, then end (the actor goes idle).

    Given ``failure``, the worker takes over the slot of a direct ask (see
    :meth:`ActorRef._ask_direct`) whose handler failed under a policy that must await (restart):
    it applies the policy first, then serves what queued meanwhile.
    """
    try:
        if failure is not None:
            try:
                await ref._sup.failed(ref, *failure)
            finally:
                ref._busy -= 1  # the direct ask's handler slot, held through the restart
        elif not ref._started and not await ref._sup.start(ref):
            return
        mailbox = ref._mailbox
        while mailbox is not None and ref._state <= STOPPING:
            with rt._scope_cls() as scope:
                scopes = ref._scopes
                if scopes is None:
                    scopes = ref._scopes = set()
                scopes.add(scope)
                try:
                    if await serve(rt, ref, mailbox, scope):
                        break
                finally:
                    scopes.discard(scope)
    finally:
        ref._active -= 1
        rt._running -= 1
        if ref._active == 0:
            if ref._mailbox is not None and not ref._mailbox and ref._state == OPEN:
                ref._mailbox = None  # an idle actor keeps no buffer
            if ref._idle is not None:
                ref._idle.set()
                ref._idle = None
        if rt._running == 0 and rt._idle is not None:
            rt._idle.set()
            rt._idle = None
    if ref._active == 0 and ref._state == STOPPED:
        await rt._finalize(ref)


async def serve(rt: Runtime, ref: ActorRef, mailbox: deque[Any], scope: CancelScopeLike) -> bool:
    """Handle messages until the mailbox stays empty (True) or this scope is spent (False).

    One cancel scope serves many messages: an abandoned ask cancels it, and the worker then
    continues in a fresh one.
    """
    lingered = 0
    while ref._state <= STOPPING:
        if not mailbox:
            if lingered >= _LINGER_ROUNDS or rt._closed:
                return True
            # Stay a scheduling round or two before going idle: an asker that sends its next
            # message as soon as it has the answer finds this worker still here, instead of
            # paying for a new task per message (trio may run the asker after us in a round).
            lingered += 1
            await anyio.lowlevel.checkpoint()
            continue
        if ref._busy >= ref._concurrency:
            # Every handler slot is taken by direct asks (run in their askers' tasks): leave the
            # queued messages to the worker the last of them starts when it finishes.
            return True
        lingered = 0
        item = mailbox.popleft()
        if ref._waiters:
            ref._admit_waiter()
        failure: Exception | None = None
        ref._busy += 1
        if type(item) is Ask:
            if item.state != QUEUED:  # abandoned before it started
                ref._busy -= 1
                continue
            item.state = RUNNING
            item.scope = scope
            try:
                result = await in_context(item.ctx, ref._actor.receive(item.message))
            except Exception as exc:
                item.fail(exc)
                failure = exc
            else:
                item.succeed(result)
            finally:
                ref._busy -= 1
                if item.state == RUNNING:  # left by cancellation that the asker did not ask for
                    item.fail(ActorStopped(f"actor {ref.name!r} was stopped while handling the message"))
            if failure is not None and ref._sup.policy != "resume":
                await ref._sup.failed(ref, failure, item.message, item.ctx)
        else:
            try:
                await ref._actor.receive(item)
            except Exception as exc:
                failure = exc
            finally:
                ref._busy -= 1
            if failure is not None:
                await ref._sup.failed(ref, failure, item, None)
        if scope.cancel_called:
            return False
    return True
