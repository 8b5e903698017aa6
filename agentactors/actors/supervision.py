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
stops.  A :class:`Supervisor` is immutable and shared by every actor spawned
with the same settings; per-actor restart history lives on the actor's ref.
"""

from __future__ import annotations

import contextvars
import logging
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import redact

if TYPE_CHECKING:
    from .ref import ActorRef
    from .runtime import Runtime

__all__ = ["Supervisor"]

log = logging.getLogger("agentactors.actors")


class Supervisor:
    """One failure policy (``policy``, ``max_restarts``, ``window``) applied for one runtime."""

    __slots__ = ("max_restarts", "policy", "rt", "window")

    def __init__(self, rt: Runtime, policy: str, max_restarts: int, window: float) -> None:
        self.rt = rt
        self.policy = policy
        self.max_restarts = max_restarts
        self.window = window

    async def start(self, ref: ActorRef) -> bool:
        """Run the actor's ``on_start``.  True when the actor may handle messages."""
        on_start = getattr(ref._actor, "on_start", None)
        if on_start is not None:
            try:
                await on_start()
            except Exception as exc:
                await self.failed(ref, exc, None, None, phase="on_start")
                # A restart re-ran start() with a new object; anything else leaves the actor stopped.
                return ref._started and ref._state <= 1
        ref._started = True
        self.rt._fill(ref)
        return True

    async def failed(
        self,
        ref: ActorRef,
        exc: Exception,
        message: Any,
        ctx: contextvars.Context | None,
        *,
        phase: str = "receive",
    ) -> None:
        """Apply the policy to a failure.  ``ctx`` is the asker's context (``None`` for a tell)."""
        if self.failed_now(ref, exc, message, ctx, phase=phase):
            await self._restart(ref, exc, ctx)

    def failed_now(
        self,
        ref: ActorRef,
        exc: Exception,
        message: Any,
        ctx: contextvars.Context | None,
        *,
        phase: str = "receive",
    ) -> bool:
        """The synchronous part of :meth:`failed`: record the failure, resume, stop or escalate.

        Returns True when the actor is to be restarted, which the caller must then await
        (:meth:`failed` does); in a closed runtime there is nothing to restart into, so the
        actor stops instead.  A direct ask (run in the asker's task) calls this for ``stop`` and
        ``escalate`` so that they take effect before the asker sees the error.
        """
        rt = self.rt
        policy = self.policy
        if phase != "receive" and policy == "resume":
            policy = "stop"
        if ctx is None or policy != "resume":
            rt._emit(
                ctx,
                "actor.failed",
                actor=ref.name,
                error=exc,
                policy=policy,
                phase=phase,
                message_type=None if message is None else type(message).__name__,
            )
        if policy == "resume":
            return False
        if policy == "escalate":
            rt._escalate(ref, exc)
            return False
        if policy == "stop" or rt._closed:
            rt._halt(ref, f"it failed with {type(exc).__name__}")
            return False
        return True

    async def _restart(self, ref: ActorRef, exc: Exception, ctx: contextvars.Context | None) -> None:
        rt = self.rt
        now = anyio.current_time()
        recent = [t for t in (ref._restarts or ()) if now - t < self.window]
        if len(recent) >= self.max_restarts:
            ref._restarts = None
            reason = f"it failed {len(recent) + 1} times within {self.window:g}s (max_restarts={self.max_restarts})"
            rt._halt(ref, reason)
            return
        factory = ref._factory
        assert factory is not None, "spawn() checks that a restarting actor has a factory"
        try:
            fresh = factory()
        except Exception as build_error:
            log.warning(
                "the factory of actor %s raised %s while restarting it; the actor stops",
                ref.name,
                redact(f"{type(build_error).__name__}: {build_error}"),
            )
            rt._halt(ref, "its factory raised while restarting it")
            return
        recent.append(now)
        ref._restarts = recent
        old, was_started = ref._actor, ref._started
        ref._actor = fresh
        ref._started = False
        rt._emit(ctx, "actor.restarted", actor=ref.name, restarts=len(recent), error=exc)
        on_stop = getattr(old, "on_stop", None) if was_started else None
        if on_stop is not None:
            try:
                await on_stop()
            except Exception as stop_error:
                rt._emit(ctx, "actor.failed", actor=ref.name, error=stop_error, policy="restart", phase="on_stop")
        await self.start(ref)
