"""``with_shared_budget(provider, name)``: a provider that spends a cluster-wide budget.

Used inside a :class:`~agentactors.ray.RayCluster`'s ``agent_factory``: each
request the decorated provider sends first holds a slot of the named
:class:`~agentactors.ray.SharedBudget` and its rate units (from the worker's
local pool, :mod:`agentactors.ray.lease`), for as long as it is in flight — a
stream until it ends.  Put it outermost (around retries and fallbacks): each
attempt a retry makes is then inside the one slot of its call, and waiting for
the budget never counts against an attempt's timeout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ..gateway.provider import estimate_tokens
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
        self.budget_name = budget_name

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The inner provider's response, sent while holding a slot and the request's rate units.

        Cancellation: a call cancelled while it waits for the budget takes nothing from it; one
        cancelled in flight gives its slot back at once.
        """
        estimate = estimate_tokens(request) if self._tokens else 0
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
        estimate = estimate_tokens(request) if self._tokens else 0
        async with self._lease.permit(estimate), stream_of(self._inner, request) as events:
            yield self._settling(events, estimate)

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
