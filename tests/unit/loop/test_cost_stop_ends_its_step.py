"""A run a cost budget stops in the middle of a step ends that step: ``step.finished`` (``cost_stopped``).

A step that began (``step.started``) and was stopped by a budget — after its call answered (the answer put the
run past its limit), or while its call waited for a ProviderActor's slot (a shared budget spent meanwhile) — had
no ``step.finished``: a trace read step by step showed a step that never ended.  A budget that stops a run before
a step begins (``stop_before``) opens none, and ends none.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    CostBudget,
    InMemoryRecorder,
    LLMResponse,
    ProviderActor,
    Runtime,
    ScriptedProvider,
    Usage,
)
from agentactors.errors import CostLimitExceededError
from agentactors.messages import LLMRequest
from agentactors.pricing import Price, clear_prices, set_price

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@pytest.fixture(autouse=True)
def _dollar_a_token() -> Iterator[None]:
    clear_prices()
    set_price("vend", "m1", Price(input=1_000_000.0, output=0.0))
    yield
    clear_prices()


def _steps(recorder: InMemoryRecorder, run_id: str | None) -> list[tuple[str, Any]]:
    return [(e.type, e.data.get("cost_stopped")) for e in recorder.events
            if e.run_id == run_id and e.type in ("step.started", "step.finished")]


async def test_a_step_whose_answer_passes_the_limit_ends() -> None:
    recorder = InMemoryRecorder()
    answer = LLMResponse(content="hello", usage=Usage(1, 0), model="m1", provider="vend")
    async with Runtime(recorders=[recorder]):
        result = await Agent(ScriptedProvider([answer], name="vend", model="m1")).run("x", cost_limit=0.5)
    assert type(result.error) is CostLimitExceededError
    assert _steps(recorder, result.run_id) == [("step.started", None), ("step.finished", True)]


async def test_a_step_whose_call_waited_past_a_spent_shared_budget_ends() -> None:
    async def model(request: LLMRequest) -> LLMResponse:
        await anyio.sleep(1.0)
        return LLMResponse(content="ok", usage=Usage(1, 0), model="m1", provider="vend")

    budget = CostBudget(1.0, name="shared")
    recorder = InMemoryRecorder()
    results: list[Any] = []
    async with Runtime(recorders=[recorder]) as rt:
        actor = ProviderActor(ScriptedProvider(model, name="vend", model="m1"), max_concurrency=1)
        agent = Agent(rt.spawn(actor, concurrency=actor.spawn_concurrency))

        async def one() -> None:
            results.append(await agent.run("q", cost_limit=budget))

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(one)
    refused = [r for r in results if type(r.error) is CostLimitExceededError and r.cost.total == 0]
    assert refused, [(r.error, r.cost) for r in results]
    for result in refused:
        assert _steps(recorder, result.run_id) == [("step.started", None), ("step.finished", True)]
    for result in results:  # every step that began ended, once
        steps = _steps(recorder, result.run_id)
        assert [k for k, _ in steps].count("step.started") == [k for k, _ in steps].count("step.finished")


async def test_a_run_stopped_before_its_first_step_opens_none() -> None:
    recorder = InMemoryRecorder()
    budget = CostBudget(0.5, name="shared")
    answer = LLMResponse(content="hello", usage=Usage(1, 0), model="m1", provider="vend")
    async with Runtime(recorders=[recorder]):
        agent = Agent(ScriptedProvider([answer, answer], name="vend", model="m1"))
        first = await agent.run("x", cost_limit=budget)  # its answer spends the budget
        second = await agent.run("x", cost_limit=budget)  # stopped before its first step
    assert type(first.error) is CostLimitExceededError and type(second.error) is CostLimitExceededError
    assert _steps(recorder, first.run_id) == [("step.started", None), ("step.finished", True)]
    assert _steps(recorder, second.run_id) == []
