"""10,000 concurrent runs through one ProviderActor: every result correct and in input order,
failures stay with their own run, and nothing is left running afterwards."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.errors import ErrorKind, ProviderError
from agentactors.gateway.provider import ProviderActor
from agentactors.messages import LLMRequest, LLMResponse, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool
from agentactors.tools.results import ToolStatus

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

RUNS = 10_000
PROVIDER_CONCURRENCY = 1_000


def _tool_fails(n: int) -> bool:
    return n % 97 == 0


def _provider_fails(n: int) -> bool:
    return n % 101 == 0


@tool
async def cube(n: int) -> int:
    """n cubed (raises for some n, to show a failing tool stays in its run)."""
    await anyio.sleep(0.1)
    if _tool_fails(n):
        raise ArithmeticError(f"cannot cube {n}")
    return n**3


def _prompt(request: LLMRequest) -> int:
    return int(next(m.content for m in request.messages if m.role == "user"))


@pytest.mark.soak  # a load test (its 10,000 is its point): `make soak`, which CI runs
async def test_ten_thousand_concurrent_runs_share_one_provider_actor() -> None:
    live = [0, 0]  # requests in flight now, the most ever

    async def model(request: LLMRequest) -> Any:
        live[0] += 1
        live[1] = max(live[1], live[0])
        try:
            await anyio.sleep(0.5)
        finally:
            live[0] -= 1
        n = _prompt(request)
        results = [m for m in request.messages if m.role == "tool"]
        if not results:
            return LLMResponse("", (ToolCall(f"c{n}", "cube", {"n": n}),))
        if _provider_fails(n):
            return ProviderError(f"vendor failed for {n}", provider="scripted", kind=ErrorKind.transient)
        if results[-1].is_error:
            return f"{n}: the tool failed"
        return f"{n} cubed is {results[-1].content}"

    provider = ScriptedProvider(model)
    agent = Agent(provider, tools=[cube], nudges=False)
    progress: list[tuple[int, int, int]] = []
    async with Runtime() as rt:
        ProviderActor.shared(rt, provider, max_concurrency=PROVIDER_CONCURRENCY)
        results = await rt.run_many(
            agent, [str(n) for n in range(RUNS)], concurrency=RUNS, progress=lambda *a: progress.append(a)
        )
        providers = [ref for ref in rt._actors if ref.name.startswith("provider:")]
        assert len(providers) == 1
        await rt.wait_idle()
        stats = rt.stats()
        assert stats.tasks == 0 and stats.busy == 0 and stats.queued == 0

    assert len(results) == RUNS
    assert provider.calls == 2 * RUNS
    assert live[1] == PROVIDER_CONCURRENCY  # the provider actor's budget was the only throttle
    failed = 0
    for n, result in enumerate(results):
        if _provider_fails(n):
            failed += 1
            assert result.generation_failed, n
            assert isinstance(result.error, ProviderError)
            assert result.content == ""
        elif _tool_fails(n):
            assert result.content == f"{n}: the tool failed"
            assert "cannot cube" in result.messages[2].content
        else:
            assert result.content == f"{n} cubed is {n**3}", n
            assert result.steps == 2 and result.ok
        assert result.messages[0].content == str(n)  # each result is its own input's
    assert progress[-1] == (RUNS, failed, RUNS)
    assert len({r.run_id for r in results}) == RUNS


async def test_failures_do_not_disturb_neighbours_under_status_routing() -> None:
    """A run that raises (a status routed to "raise") is a failed result; its neighbours finish."""

    async def model(request: LLMRequest) -> Any:
        await anyio.sleep(0.01)
        n = _prompt(request)
        if not any(m.role == "tool" for m in request.messages):
            return ToolCall(f"c{n}", "cube", {"n": n})
        return f"ok {n}"

    agent = Agent(ScriptedProvider(model), tools=[cube], on_tool_status={ToolStatus.error: "raise"})
    async with Runtime() as rt:
        results = await rt.run_many(agent, [str(n) for n in range(1000)], concurrency=1000)
        await rt.wait_idle()
        assert rt.stats().tasks == 0
    for n, result in enumerate(results):
        if _tool_fails(n):
            assert result.error is not None and type(result.error).__name__ == "ToolStatusError"
        else:
            assert result.content == f"ok {n}"
