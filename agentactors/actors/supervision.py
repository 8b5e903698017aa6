"""Supervision: what happens when an actor's handler (or ``on_start``) raises.

Policies, per actor:

``resume``
    The error goes to the asker (or, for a tell, to an ``actor.failed`` event);
    the actor goes on with its state as it is.
``restart``
    The error goes to the asker as well; the actor's state is rebuilt from its
    factory (the old object's ``on_stop`` runs if it had started, then the new
    one's ``on_start``), an ``actor.restarted`` event is recorded, and queued
    messages are kept.  The failure that would be restart number
    ``max_restarts + 1`` within ``restart_window`` seconds stops the actor
    instead: queued and waiting asks get :class:`~agentactors.errors.ActorStopped`.
``stop``
    The actor stops at once (queued asks: ``ActorStopped``; tells: dead letters).
``escalate``
    The actor stops and the runtime's task group is cancelled; the error
    leaves ``async with Runtime()`` as the bare exception.

An ``on_start`` that raises cannot be resumed from: under ``resume`` the actor
stops.  Under ``restart`` it is a failure like any other: the next incarnation is
built and started in turn.  Restarts follow one another in a loop (never one from
inside the last: a storm of them must not deepen the stack), each a cancellation
point, so a storm the limits allow is still ended by ``stop()``, a timeout or the
runtime's exit.  A handler that fails while the actor is already being
restarted (``concurrency > 1``: another handler's failure replaced the
incarnation it ran on) restarts nothing: its failure is answered and recorded,
and the restart under way goes on.  The policy and its limits live in the actor's shared
:class:`~agentactors.actors._cell.Spec`; the restart history in its cell.
These functions are the whole of it; they move the cell through its own
transitions and reach the runtime through the cell's host.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any

import anyio
import anyio.lowlevel

from .._containment import is_stray
from ..errors import redact
from ._cell import STOPPING, Cell, Failure
from ._inline import in_context

__all__ = ["after_direct_failure", "failed", "failed_now", "start", "start_direct", "stray_failure"]

log = logging.getLogger("agentactors.actors")


async def start(cell: Cell) -> bool:
    """Run the actor's ``on_start`` in the calling worker.  True when the actor may handle messages.

    An ``on_start`` that fails is supervised; under ``restart`` the next incarnation's ``on_start`` runs
    next, here, in this loop (see the module), until one starts or the limits stop the actor (False).

    Cancellation: an ``on_start`` cancelled with the worker leaves the actor
    unstarted (the next worker runs it again) and propagates.
    """
    while True:
        on_start = getattr(cell.actor, "on_start", None)
        if on_start is not None:
            try:
                try:
                    await on_start()
                except Exception:
                    raise
                except BaseException as exc:  # a stray cancellation is on_start's failure (see stray_failure)
                    raise stray_failure(exc) from exc
            except Exception as exc:
                if (
                    failed_now(cell, exc, None, None, "on_start")
                    and await _replace(cell, exc, None)
                    and cell.state <= STOPPING
                ):
                    # A new incarnation, not started yet: its on_start next — after a checkpoint, so that a
                    # storm of restarts whose hooks never await cannot hold the event loop (and is cancellable).
                    await anyio.lowlevel.checkpoint()
                    continue
                return False  # stopped (or escalated, or halted meanwhile): nothing more to start
        cell.started_now(False)
        return True


async def start_direct(cell: Cell) -> Failure | None:
    """Run the actor's ``on_start`` in the task of a direct ask that found it unstarted.  None: it started.

    As :func:`start` does in a worker, and in the same context — the runtime's own, not the asker's
    contextvars — but a failure is returned, not dealt with: the asker hands it to
    :func:`after_direct_failure` once out of its cancel scope (a restart awaits, and must not run in —
    nor be cancelled with — the asker's task).  Started, the asker's handler counts as busy at once.

    Cancellation: an ``on_start`` cut short did not complete: the actor stays unstarted (the next
    message starts it again) and the cancellation propagates.
    """
    on_start = getattr(cell.actor, "on_start", None)
    if on_start is not None:
        try:
            spec = cell.spec
            await in_context(spec.host.own_context(), spec.runtime, on_start())
        except Exception as exc:
            return (exc, None, None, "on_start")
    cell.started_now(True)
    return None


def stray_failure(exc: BaseException) -> Exception:
    """``exc``, caught out of a handler (or ``on_start``) in a worker, as the failure it is; raised again if none.

    A cancellation that no cancel scope asked for — asyncio's ``CancelledError`` raised by a library of its own
    (:mod:`agentactors._containment`) — is the handler's failure: out of the worker as it is, it would end the
    worker's task as cancelled, which the runtime's task group takes for a cancellation of the whole group
    (every other actor's handlers, and the runtime's block, cancelled).  It is handed to supervision as a
    :class:`RuntimeError` saying so (policies deal in ``Exception`` s); the asker gets the exception itself.
    Anything else — a real cancellation, ``KeyboardInterrupt`` ... — is raised again here: call this from
    the ``except`` clause, still inside the scopes the exception came through (that is how a real one is told).
    """
    if not is_stray(exc):
        raise exc
    failure = RuntimeError(f"a handler raised {type(exc).__name__} that no cancel scope asked for (a stray one)")
    failure.__cause__ = exc
    return failure


async def failed(
    cell: Cell, exc: Exception, message: Any, ctx: contextvars.Context | None, phase: str = "receive"
) -> None:
    """Apply the policy to a failure.  ``ctx`` is the asker's context (``None`` for a tell or ``on_start``).

    Cancellation: a restart in progress is cut short where it awaits (the old
    ``on_stop``, the new ``on_start``); the actor is then not started, and the
    next worker starts it.
    """
    if failed_now(cell, exc, message, ctx, phase) and await _replace(cell, exc, ctx):
        await start(cell)


def failed_now(
    cell: Cell, exc: Exception, message: Any, ctx: contextvars.Context | None, phase: str = "receive"
) -> bool:
    """The synchronous part of :func:`failed`: record the failure, resume, stop or escalate.

    Returns True when the actor is to be restarted, which the caller must then await
    (:func:`failed` does); in a closed runtime there is nothing to restart into, so the
    actor stops instead.  A direct ask (run in the asker's task) calls this for ``stop`` and
    ``escalate`` so that they take effect before the asker sees the error.
    """
    spec = cell.spec
    host = spec.host
    policy = spec.policy
    if phase != "receive" and policy == "resume":
        policy = "stop"
    if ctx is None or policy != "resume":
        host.record(
            ctx,
            "actor.failed",
            actor=cell.name,
            error=exc,
            policy=policy,
            phase=phase,
            message_type=None if message is None else type(message).__name__,
        )
    if policy == "resume":
        return False
    if policy == "escalate":
        host.escalate(cell, exc)
        return False
    if policy == "stop" or not host.running:
        cell.halt(f"it failed with {type(exc).__name__}")
        return False
    # Not when the handler ran on an incarnation that is no longer the actor's started one: another failure
    # replaced it meanwhile (that restart is under way: a second one would orphan the incarnation it is
    # starting), or the actor was halted.  Answered and recorded; nothing to restart.
    return phase != "receive" or (cell.started and cell.state <= STOPPING)


def after_direct_failure(cell: Cell, scope: Any, failure: Failure, busy: bool) -> None:
    """A handler (or ``on_start``) run directly in an asker's task raised: apply the policy, give the slot back.

    ``resume`` (for a handler) and ``stop`` / ``escalate`` take effect now, before the asker
    sees the error.  A ``restart`` awaits ``on_stop`` / ``on_start``, which must not run in —
    nor be cancelled with — the asker's task: a worker takes over the slot and does it, as it
    would have for a message from the mailbox.
    """
    exc, message, ctx, phase = failure
    spec = cell.spec
    if spec.policy == "restart" and spec.host.running:
        cell.hand_over(scope, failure, busy)
        return
    failed_now(cell, exc, message, ctx, phase)
    cell.leave_direct(scope, busy)


async def _replace(cell: Cell, exc: Exception, ctx: contextvars.Context | None) -> bool:
    """Put a new incarnation in place (not started: the caller starts it), or stop the actor (False).

    False when the failure is past ``max_restarts`` within the window, or the factory raised: the actor
    is halted.  Otherwise the old object's ``on_stop`` ran (if it had started) and ``True``.

    The decision (stop, or a new incarnation) is made before anything awaits: whoever the failure was
    answered to sees the actor stopped already when the limits say so.

    Cancellation: the old ``on_stop`` sees it like any await; the new object stays in place unstarted.
    """
    spec = cell.spec
    host = spec.host
    now = anyio.current_time()
    recent = [t for t in cell.restarts if now - t < spec.window]
    if len(recent) >= spec.max_restarts:
        cell.forget_restarts()
        reason = f"it failed {len(recent) + 1} times within {spec.window:g}s (max_restarts={spec.max_restarts})"
        cell.halt(reason)
        return False
    factory = cell.factory
    assert factory is not None, "spawn() checks that a restarting actor has a factory"
    try:
        fresh = factory()
    except Exception as build_error:
        log.warning(
            "the factory of actor %s raised %s while restarting it; the actor stops",
            cell.name,
            redact(f"{type(build_error).__name__}: {build_error}"),
        )
        cell.halt("its factory raised while restarting it")
        return False
    recent.append(now)
    old, was_started = cell.replace(fresh, recent)
    host.record(ctx, "actor.restarted", actor=cell.name, restarts=len(recent), error=exc)
    on_stop = getattr(old, "on_stop", None) if was_started else None
    if on_stop is not None:
        try:
            try:
                await on_stop()
            except Exception:
                raise
            except BaseException as exc:  # a stray cancellation is on_stop's failure (see stray_failure)
                raise stray_failure(exc) from exc
        except Exception as stop_error:
            host.record(ctx, "actor.failed", actor=cell.name, error=stop_error, policy="restart", phase="on_stop")
    return True
