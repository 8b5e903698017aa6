"""``with_shared_budget(provider, name)``: a provider that spends a cluster-wide budget.

Used inside a :class:`~agentactors.ray.RayCluster`'s ``agent_factory``: each
request the decorated provider sends first holds a slot of the named
:class:`~agentactors.ray.SharedBudget` and its rate units (from the worker's
local pool, :mod:`agentactors.ray.lease`), for as long as it is in flight — a
stream until it ends.  Put it outermost (around retries and fallbacks): each
attempt a retry makes is then inside the one slot of its call, and waiting for
the budget never counts against an attempt's timeout.

A request's token estimate is the ProviderActor's: ~4 characters a token plus ``max_tokens``, counted up to
the budget's bucket (one ``burst`` of ``tokens_per_minute``) — ``max_tokens`` is a ceiling the caller chose,
and counted whole, one above the bucket waited for minutes (its units gathered a lease at a time) while the
worker's later requests queued behind it.  As at a ProviderActor, a request whose budget wait would exceed
:data:`~agentactors.gateway.scheduling.BUDGET_WAIT_BOUND` (15 minutes: a prompt bigger than many minutes'
budget) is refused at once with :class:`~agentactors.errors.Overloaded` (``reason="budget"``), nothing sent —
judged on arrival from what the worker knows (:meth:`~agentactors.ray.lease.LeaseClient.least_wait`: a lower
bound, the other workers' demand unknown).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ..errors import Overloaded
from ..gateway.provider import estimate_tokens
from ..gateway.scheduling import BUDGET_WAIT_BOUND
from ..messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent
from ..providers.port import LLMProvider, StreamContext
from ..resilience.decorator import ProviderDecorator
from ..resilience.streams import stream_of
from ._env import current_env
from .lease import LeaseClient

__all__ = ["SharedBudgetProvider", "with_shared_budget"]


class SharedBudgetProvider(ProviderDecorator):
    """An :class:`~agentactors.providers.port.LLMProvider` whose requests spend a shared budget.

    Build it with :func:`with_shared_budget`.  Identity and capabilities are the inner provider's.
    """

    def __init__(self, inner: LLMProvider | Any, lease: LeaseClient, budget_name: str) -> None:
        super().__init__(inner)
        self._lease = lease
        self._tokens = "tokens" in lease.budget.kinds
        self._requests = "requests" in lease.budget.kinds
        # max_tokens counts up to the bucket's size, as at a ProviderActor (its Scheduler.max_output).
        self._max_output = int(lease.budget.capacity("tokens")) if self._tokens else None
        self.budget_name = budget_name

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The inner provider's response, sent while holding a slot and the request's rate units.

        Cancellation: a call cancelled while it waits for the budget takes nothing from it; one
        cancelled in flight gives its slot back at once.
        """
        estimate = self._admit(request)
        async with self._lease.permit(estimate):
            response = await self._inner.complete(request)
        if self._tokens:
            self._lease.settle(estimate, response.usage.input_tokens + response.usage.output_tokens)
        return response

    def stream(self, request: LLMRequest) -> StreamContext:
        """The inner stream, holding a slot from before it opens until it ends (or is closed)."""
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: LLMRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        estimate = self._admit(request)
        async with self._lease.permit(estimate), stream_of(self._inner, request) as events:
            yield self._settling(events, estimate)

    def _admit(self, request: LLMRequest) -> int:
        """The request's token estimate (0 without a token budget), once its budget wait is known to be sane.

        :raises Overloaded: the wait for its rate units would exceed ``BUDGET_WAIT_BOUND`` (see the module
            docstring); nothing is taken from the budget.
        """
        estimate = estimate_tokens(request, max_output=self._max_output) if self._tokens else 0
        lease = self._lease
        wait = lease.least_wait("tokens", float(estimate)) if estimate > 0 else 0.0
        if self._requests:
            wait = max(wait, lease.least_wait("requests", 1.0))
        if wait > BUDGET_WAIT_BOUND:
            raise Overloaded(
                f"the shared budget {self.budget_name!r} refused the request: its budget wait would exceed "
                f"{BUDGET_WAIT_BOUND:g}s (at least {wait:.3g}s; the request is estimated at {estimate} tokens); "
                f"retry in about {wait:.3g}s",
                provider=self.name,
                model=request.model,
                retry_after=wait,
                reason="budget",
            )
        return estimate

    async def _settling(self, events: AsyncIterator[StreamEvent], estimate: int) -> AsyncIterator[StreamEvent]:
        async for event in events:
            if self._tokens and isinstance(event, StreamEnd):
                usage = event.response.usage
                self._lease.settle(estimate, usage.input_tokens + usage.output_tokens)
            yield event

    def __repr__(self) -> str:
        return f"SharedBudgetProvider({self._inner!r}, {self.budget_name!r})"


def with_shared_budget(provider: LLMProvider | Any, budget_name: str) -> SharedBudgetProvider:
    """``provider`` spending the cluster's :class:`~agentactors.ray.SharedBudget` named ``budget_name``.

    Call it inside the ``agent_factory`` of a :class:`~agentactors.ray.RayCluster` (that is
    where the worker's lease clients are); the cluster was given the budget as
    ``budgets={budget_name: SharedBudget(...)}``.

    :raises RuntimeError: called outside a RayCluster worker's ``agent_factory``.
    :raises KeyError: the cluster has no budget of that name (the message lists those it has).
    """
    env = current_env()
    if env is None:
        raise RuntimeError(
            "with_shared_budget() is called inside a RayCluster's agent_factory, on a worker: "
            "the budget's lease client lives there"
        )
    lease = env.budgets.get(budget_name)
    if lease is None:
        raise KeyError(f"the cluster has no budget named {budget_name!r}; it has {sorted(env.budgets)}")
    return SharedBudgetProvider(provider, lease, budget_name)
