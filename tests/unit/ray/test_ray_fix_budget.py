"""A shared token budget and a request bigger than its bucket: ``max_tokens`` counts up to the bucket, and a wait
beyond any sane bound is refused at once with ``Overloaded`` — as at a local ProviderActor.

Driven on a virtual clock with an in-process ledger: no Ray (the cluster's case is in
tests/integration/test_ray_fix_cluster.py).
"""

from __future__ import annotations

import anyio
import pytest

from agentactors import LLMRequest, Message, ScriptedProvider
from agentactors.errors import Overloaded
from agentactors.gateway.scheduling import BUDGET_WAIT_BOUND
from agentactors.ray import SharedBudget, with_shared_budget
from agentactors.ray._env import WorkerEnv, use_env
from tests.unit.ray.test_lease import Port, clients

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


async def test_max_tokens_above_the_bucket_counts_only_up_to_the_bucket() -> None:
    # A bucket of 600 tokens, 10 a second.  Counted whole, max_tokens=5000 waited (5000 - 600) / 10 = 440 s
    # for its units to gather, a lease at a time, with nothing said.
    budget = SharedBudget(tokens_per_minute=600)
    inner = ScriptedProvider(["ok", "ok"])
    async with clients(Port(budget), 1) as (lease,):
        with use_env(WorkerEnv("w0", {"t": lease})):
            provider = with_shared_budget(inner, "t")
        start = anyio.current_time()
        with anyio.fail_after(120):  # two requests of ~601 tokens: a bucket and a minute
            response = await provider.complete(LLMRequest([Message.user("hi")], max_tokens=5000))
            async with provider.stream(LLMRequest([Message.user("hi")], max_tokens=5000)) as events:
                _ = [event async for event in events]
        assert response.content == "ok"
        assert anyio.current_time() - start < 120


async def test_a_request_whose_budget_wait_is_beyond_the_bound_is_refused_at_once() -> None:
    # 40,000 characters are ~10,000 tokens: with 600 a minute (a bucket of 600) at least (10,001 - 600) / 10 s
    # = ~940 s of waiting, past the 15 minutes a ProviderActor allows a budget wait.
    budget = SharedBudget(tokens_per_minute=600)
    inner = ScriptedProvider(["never"])
    request = LLMRequest([Message.user("x" * 40_000)], model="m")
    async with clients(Port(budget), 1) as (lease,):
        with use_env(WorkerEnv("w0", {"t": lease})):
            provider = with_shared_budget(inner, "t")
        start = anyio.current_time()
        with pytest.raises(Overloaded) as caught:
            await provider.complete(request)
        with pytest.raises(Overloaded):
            async with provider.stream(request):
                pass
        assert anyio.current_time() - start < 1  # at once, not after minutes
        error = caught.value
        assert error.reason == "budget" and error.retry_after is not None and error.retry_after > BUDGET_WAIT_BOUND
        assert "'t'" in str(error) and error.model == "m"
        assert inner.calls == 0  # nothing sent
        # the budget is untouched: a small request goes through at once
        assert lease.least_wait("tokens", 10.0) == 0.0


async def test_least_wait_is_zero_with_units_at_hand_and_a_lower_bound_otherwise() -> None:
    budget = SharedBudget(tokens_per_minute=600, requests_per_minute=60)
    async with clients(Port(budget), 1) as (lease,):
        assert lease.least_wait("tokens", 600.0) == 0.0  # the bucket holds it
        assert lease.least_wait("tokens", 700.0) == pytest.approx(10.0)  # 100 more at 10 a second
        assert lease.least_wait("requests", 1.0) == 0.0
