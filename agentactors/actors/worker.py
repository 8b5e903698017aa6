"""The worker: the task that handles an actor's messages while it has any.

A message arriving at an idle actor starts a worker in the runtime's task group
(:meth:`~agentactors.actors._cell.Cell.offer` asks the cell's host for one);
the worker runs the actor's ``on_start`` if it has not run yet, handles
messages until the mailbox stays empty for a couple of scheduling rounds, and
ends.  Up to ``concurrency`` workers run at once for one actor.

An ask's handler runs inside the asker's context
(:func:`~agentactors.actors._inline.run_inline`) and inside the worker's
current cancel scope, which the asker cancels if it gives up.  A tell's handler
runs in the runtime's own context.  Asks handled directly in their askers'
tasks hold handler slots too: a worker leaves the mailbox alone while every
slot is busy (the last direct handler to finish starts one).

A handler or ``on_start`` that raises a ``BaseException`` that is neither a
failure (an ``Exception``, supervised) nor a cancellation — ``KeyboardInterrupt``,
``SystemExit``, one of the user's own — escalates whatever the actor's policy: the
actor halts, the runtime is cancelled, and the exception leaves ``async with
Runtime()`` bare once the exit has run (out of the task group as it is, it would
leave wrapped in a group on trio, and leave asyncio's event loop itself).

``GeneratorExit`` escalates too.  It is no failure: a coroutine's close throws it,
and a handler that raises it has leaked generator protocol, not met an error its
policy could resume or restart from (converting it, as PEP 479 does StopIteration,
would hand askers a made-up ``RuntimeError``).  One rule for every ``BaseException``
that is not a cancellation keeps the policy for ``Exception`` s.  Nothing here awaits
after catching it, so a worker whose coroutine *is* being closed (its task collected
pending, the loop abandoned) still ends as ``close()`` requires: it returns.

A cancellation that no cancel scope asked for (a *stray* one: asyncio's ``CancelledError`` raised by
a library of its own) is the handler's failure, not the worker's end: out of the worker it would end
the task as cancelled, which the runtime's task group takes for a cancellation of the whole group.
The asker gets it as raised; supervision sees a ``RuntimeError`` saying so
(:func:`~agentactors.actors.supervision.stray_failure`).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Final

import anyio

import agentactors.actors.supervision as supervision

from ..errors import ActorStopped
from ._cell import STOPPING, CancelScopeLike, Cell, Failure
from ._inline import Suspended, run_inline
from .mailbox import QUEUED, RUNNING, Ask

__all__ = ["serve", "work"]

# Scheduling rounds a worker waits with an empty mailbox before it ends (see serve()).
_LINGER_ROUNDS: Final = 2


async def work(cell: Cell, failure: Failure | None = None) -> None:
    """One worker of ``cell``: start the actor if needed, serve its mailbox, then end (the actor goes idle).

    Given ``failure``, the worker has taken over the slot of a direct ask (see
    :meth:`~agentactors.actors.ref.ActorRef.ask`) whose handler or ``on_start``
    failed under a policy that must await (restart): it applies the policy
    first, then serves what queued meanwhile.

    Cancellation: the runtime's task group cancels workers when it closes; a
    cancelled handler's ask fails with ``ActorStopped`` and the worker ends.
    """
    try:
        try:
            ready = True
            if failure is not None or not cell.started:
                ready = False
                # Unstarted with another slot holder (rare): this worker, started while the actor was, runs only
                # now that a restart is under way there — which starts the new incarnation and fills the slots
                # after.  Running its on_start here too would start it twice: this worker leaves.
                if failure is not None or cell.slots == 1:
                    # on_start (a restart's, too) in a registered scope, as a handler: a halt (rt.stop, drain
                    # or not) cancels it rather than waiting for an on_start that may never return.
                    with cell.spec.new_scope() as scope:
                        cell.register(scope)
                        try:
                            if failure is not None:
                                try:
                                    await supervision.failed(cell, *failure)
                                finally:
                                    if failure[3] == "receive":
                                        cell.handler_done()  # the direct ask's slot, held through the restart
                                ready = True
                            else:
                                ready = await supervision.start(cell)
                        finally:
                            cell.unregister(scope)
            # Not ready: on_start failed, or a halt cut it short.  No return here: a halted actor is
            # finalized below like after any worker's end.
            mailbox = cell.mailbox if ready else None
            while mailbox is not None and cell.state <= STOPPING:
                with cell.spec.new_scope() as scope:
                    cell.register(scope)
                    try:
                        if await serve(cell, mailbox, scope):
                            break
                    finally:
                        cell.unregister(scope)
        finally:
            finalize = cell.leave_worker()
        if finalize:
            try:
                await cell.finalize()  # on_stop, in this task: still the runtime's work (a drain waits for it)
            except BaseException as exc:
                stop_error = supervision.stray_failure(exc)  # raises it again unless it is a stray cancellation
                cell.spec.host.record(None, "actor.failed", actor=cell.name, error=stop_error, phase="on_stop")
    except BaseException as exc:
        if isinstance(exc, Exception | anyio.get_cancelled_exc_class()):
            raise
        # KeyboardInterrupt, SystemExit, GeneratorExit... (see the module): the runtime's exit finalizes the
        # halted actor.  No await from here on: a coroutine being closed must not suspend again.
        cell.spec.host.escalate(cell, exc)
    finally:
        cell.spec.host.worker_done()


async def serve(cell: Cell, mailbox: deque[Any], scope: CancelScopeLike) -> bool:
    """Handle messages until the mailbox stays empty (True) or this scope is spent (False).

    One cancel scope serves many messages: an abandoned ask cancels it, and the worker then
    continues in a fresh one.

    Cancellation: ``scope`` cancelled (an asker gave up on the message running, or a halt) cancels the
    running handler; its ask fails with ``ActorStopped`` if its asker still waits, and this returns False.
    The runtime's own cancellation (its exit) propagates.
    """
    spec = cell.spec
    host = spec.host
    lingered = 0
    while cell.state <= STOPPING:
        if not mailbox:
            if lingered >= _LINGER_ROUNDS or not host.running:
                return True
            # Stay a scheduling round or two before going idle: an asker that sends its next
            # message as soon as it has the answer finds this worker still here, instead of
            # paying for a new task per message (trio may run the asker after us in a round).
            lingered += 1
            await anyio.lowlevel.checkpoint()
            continue
        if cell.busy >= spec.concurrency:
            # Every handler slot is taken by direct asks (run in their askers' tasks): leave the
            # queued messages to the worker the last of them starts when it finishes.
            return True
        if not cell.started:
            # Another worker is restarting the actor (concurrency > 1): the new incarnation handles
            # nothing before its on_start; the restarting worker serves the queue (and fills) after it.
            return True
        lingered = 0
        item = cell.take()
        failure: Exception | None = None
        if type(item) is Ask:
            if item.state != QUEUED:  # abandoned before it started
                cell.handler_done()
                continue
            item.state = RUNNING
            item.scope = scope
            try:
                result = run_inline(item.ctx, spec.runtime, cell.actor.receive(item.message))
                if type(result) is Suspended:
                    result = await result
            except Exception as exc:
                item.fail(exc)
                failure = exc
            except BaseException as exc:
                failure = supervision.stray_failure(exc)  # raises it again unless it is a stray cancellation
                item.fail(exc)  # the asker gets it as it was raised (as from a handler run in its own task)
            else:
                item.succeed(result)
            finally:
                cell.handler_done()
                if item.state == RUNNING:  # left by cancellation that the asker did not ask for
                    item.fail(ActorStopped(f"actor {cell.name!r} was stopped while handling the message"))
            if failure is not None and spec.policy != "resume":
                await supervision.failed(cell, failure, item.message, item.ctx)
        else:
            try:
                await cell.actor.receive(item)
            except Exception as exc:
                failure = exc
            except BaseException as exc:
                failure = supervision.stray_failure(exc)  # raises it again unless it is a stray cancellation
            finally:
                cell.handler_done()
            if failure is not None:
                await supervision.failed(cell, failure, item, None)
        if scope.cancel_called:
            return False
    return True
