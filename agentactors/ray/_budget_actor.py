"""The Ray side of a shared budget: the ledger's actor (a thin shell) and the workers' port to it.

:class:`BudgetActor` is made a Ray actor by the cluster (``ray.remote(BudgetActor)``,
named, ``max_restarts=-1``, ``max_task_retries=0``): Ray restarts it when it
dies, and Ray's own retries never replay a ledger call — a replayed release
could free a slot twice.  Everything it does is
:class:`~agentactors.ray.ledger.LedgerService`'s; it only learns from Ray
whether it is a restarted incarnation (then it recovers before granting).

:class:`RayLedgerPort` is how a worker's lease client calls it; a call that
finds the actor dead or restarting raises
:class:`~agentactors.ray.ledger.LedgerUnavailable`, and the client backs off.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from .budget import SharedBudget
from .ledger import BudgetLedger, LedgerService, LedgerUnavailable, RateReply, Roster, SlotReply

__all__ = ["BudgetActor", "RayLedgerPort"]


class BudgetActor:
    """One :class:`~agentactors.ray.budget.SharedBudget`'s ledger, as a Ray async actor."""

    def __init__(self, budget: SharedBudget) -> None:
        import ray

        with warnings.catch_warnings():
            # Ray's own implementation reads a deprecated property; the answer is what we need.
            warnings.simplefilter("ignore", DeprecationWarning)
            restarted = bool(ray.get_runtime_context().was_current_actor_reconstructed)
        self._service = LedgerService(BudgetLedger(budget, restarted=restarted))

    async def register(self, worker: str, held: int, roster: Roster | None) -> SlotReply:
        return await self._service.register(worker, held, roster)

    async def acquire(self, worker: str, epoch: str | None, want: int, wait: float) -> SlotReply:
        return await self._service.acquire(worker, epoch, want, wait)

    async def release(self, worker: str, epoch: str | None, count: int, wanting: int) -> SlotReply:
        return await self._service.release(worker, epoch, count, wanting)

    async def check_in(self, worker: str, epoch: str | None, wanting: int) -> SlotReply:
        return await self._service.check_in(worker, epoch, wanting)

    async def take(self, kind: str, want: float) -> RateReply:
        return await self._service.take(kind, want)

    async def give_back(self, epoch: str | None, kind: str, units: float) -> None:
        await self._service.give_back(epoch, kind, units)

    async def set_roster(self, roster: Roster) -> None:
        self._service.set_roster(roster)

    async def stats(self) -> dict[str, object]:
        return {**self._service.stats(), "pid": os.getpid()}


class RayLedgerPort:
    """A :class:`~agentactors.ray.ledger.LedgerPort` over a :class:`BudgetActor` handle (on a worker)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    async def _call(self, method: str, *args: Any) -> Any:
        import ray.exceptions

        try:
            return await getattr(self._handle, method).remote(*args)
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
            raise LedgerUnavailable(type(exc).__name__) from None

    async def register(self, worker: str, held: int, roster: Roster | None) -> SlotReply:
        reply: SlotReply = await self._call("register", worker, held, roster)
        return reply

    async def acquire(self, worker: str, epoch: str | None, want: int, wait: float) -> SlotReply:
        reply: SlotReply = await self._call("acquire", worker, epoch, want, wait)
        return reply

    async def release(self, worker: str, epoch: str | None, count: int, wanting: int) -> SlotReply:
        reply: SlotReply = await self._call("release", worker, epoch, count, wanting)
        return reply

    async def check_in(self, worker: str, epoch: str | None, wanting: int) -> SlotReply:
        reply: SlotReply = await self._call("check_in", worker, epoch, wanting)
        return reply

    async def take(self, kind: str, want: float) -> RateReply:
        reply: RateReply = await self._call("take", kind, want)
        return reply

    async def give_back(self, epoch: str | None, kind: str, units: float) -> None:
        await self._call("give_back", epoch, kind, units)
