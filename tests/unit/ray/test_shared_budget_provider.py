"""``with_shared_budget(provider, name)``: each request holds a slot (and its rate units) while in flight.

Driven on a virtual clock with an in-process ledger: no Ray.
"""

from __future__ import annotations

import anyio
import pytest

from agentactors import LLMRequest, Message, ScriptedProvider, Usage
from agentactors.messages import LLMResponse, StreamEnd
from agentactors.providers.port import Capabilities, capabilities_of
from agentactors.ray import SharedBudget, with_shared_budget
from agentactors.ray._env import WorkerEnv, use_env
from agentactors.ray.lease import LeaseClient
from tests.unit.ray.test_lease import Port, clients

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

REQUEST = LLMRequest([Message.user("hello")])


async def test_complete_and_stream_hold_a_slot_while_in_flight() -> None:
    budget = SharedBudget(max_concurrency=2)
    port = Port(budget)
    peak = [0, 0]

    async def slow(request: LLMRequest) -> str:
        peak[0] += 1
        peak[1] = max(peak[1], peak[0])
        await anyio.sleep(0.1)
        peak[0] -= 1
        return "ok"

    async with clients(port, 1) as (lease,):
        with use_env(WorkerEnv("w0", {"vendor": lease})):
            provider = with_shared_budget(ScriptedProvider(slow), "vendor")
        assert provider.name == "scripted" and provider.budget_name == "vendor"
        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(provider.complete, REQUEST)
        assert peak[1] == 2
        async with provider.stream(REQUEST) as events:
            assert lease.busy == 1  # the stream holds its slot until it ends
            assert isinstance([e async for e in events][-1], StreamEnd)
        assert lease.busy == 0


async def test_token_usage_corrects_the_estimate() -> None:
    budget = SharedBudget(tokens_per_minute=6000, burst=0.1, token_ttl=10.0)
    port = Port(budget)
    response = LLMResponse("ok", usage=Usage(input_tokens=2, output_tokens=3))
    async with clients(port, 1) as (lease,):
        provider_lease: LeaseClient = lease
        with use_env(WorkerEnv("w0", {"t": provider_lease})):
            provider = with_shared_budget(ScriptedProvider([response, response]), "t")
        await provider.complete(LLMRequest([Message.user("x" * 400)], max_tokens=100))
        calls = lease.stats.ledger_calls
        # 201 tokens were estimated, 5 used: the 196 left pay for a request of 111 without a ledger call.
        await provider.complete(LLMRequest([Message.user("x" * 40)], max_tokens=100))
        assert lease.stats.ledger_calls == calls


def test_with_shared_budget_is_for_a_cluster_workers_factory() -> None:
    with pytest.raises(RuntimeError, match="agent_factory"):
        with_shared_budget(ScriptedProvider("x"), "vendor")
    with use_env(WorkerEnv("w0", {})), pytest.raises(KeyError, match="no budget named 'vendor'"):
        with_shared_budget(ScriptedProvider("x"), "vendor")


async def test_it_says_what_the_inner_provider_can_do() -> None:
    value = Capabilities(forced_tool_choice=True, media={"image"})
    inner = ScriptedProvider(["x"], rejects_forced_tool_choice=["old"], capabilities=value)
    async with clients(Port(SharedBudget(max_concurrency=1)), 1) as (lease,):
        with use_env(WorkerEnv("w0", {"vendor": lease})):
            provider = with_shared_budget(inner, "vendor")
    assert capabilities_of(provider, "m") == inner.capabilities("m") == value
    assert capabilities_of(provider, "old").forced_tool_choice is False
    assert provider.supports_forced_tool_choice("m") is True  # the first protocol's members too
