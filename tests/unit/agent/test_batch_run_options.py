"""``run_many`` and ``as_completed`` take ``agent.run``'s options: ``deps``, ``settings``, ``deadline``, ``priority``,
``cost_limit``, and ``input_key`` — which names the batch, each run's key being ``"{input_key}:{index}"``.

A batch job had no way to give its tools their deps, each run a cost limit, or its tools a key to deduplicate on
per input (``ToolContext.input_key`` was ``None`` in every run of a batch).  Virtual time on both backends (a
scripted model, no I/O).
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import (
    Agent,
    CostBudget,
    CostLimitExceeded,
    LLMResponse,
    ModelSettings,
    Runtime,
    ScriptedProvider,
    ToolCall,
    ToolContext,
    tool,
)
from agentactors.errors import RunDeadlineExceeded
from agentactors.messages import LLMRequest
from tests.support.prices import STEP, USAGE, gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

PROMPTS = [f"order {i}" for i in range(7)]


def _clerk(seen: dict[str, tuple[str | None, Any]], requests: list[LLMRequest] | None = None) -> Agent[str]:
    @tool
    async def ship(order: str, ctx: ToolContext) -> str:
        """Ship an order."""
        seen[order] = (ctx.input_key, ctx.deps)
        return "shipped"

    def model(request: LLMRequest) -> Any:
        if requests is not None:
            requests.append(request)
        last = request.messages[-1]
        if last.role == "tool":
            return "done"
        return [ToolCall("c1", "ship", {"order": str(last.content)})]

    return Agent(ScriptedProvider(model), tools=[ship])


async def test_each_run_of_a_batch_gets_the_deps_and_a_key_naming_its_input() -> None:
    seen: dict[str, tuple[str | None, Any]] = {}
    db = object()
    async with Runtime():
        results = await _clerk(seen).run_many(PROMPTS, concurrency=3, deps=db, input_key="job7")
    assert all(r.ok for r in results)
    assert seen == {prompt: (f"job7:{i}", db) for i, prompt in enumerate(PROMPTS)}


async def test_the_keys_are_the_same_when_the_batch_runs_again() -> None:
    """What a tool with side effects deduplicates on: input i is "job7:i" in every attempt, whatever ran first."""
    first: dict[str, tuple[str | None, Any]] = {}
    again: dict[str, tuple[str | None, Any]] = {}
    async with Runtime() as rt:
        await rt.run_many(_clerk(first), PROMPTS, concurrency=7, input_key="job7")
        await rt.run_many(_clerk(again), PROMPTS, concurrency=1, input_key="job7")
    assert first == again and first["order 3"] == ("job7:3", None)


async def test_as_completed_names_each_input_as_run_many_does() -> None:
    seen: dict[str, tuple[str | None, Any]] = {}
    async with Runtime() as rt:
        async with rt.as_completed(_clerk(seen), PROMPTS, concurrency=2, input_key="b", deps="d") as results:
            done = [r async for r in results]
    assert len(done) == len(PROMPTS)
    assert seen == {prompt: (f"b:{i}", "d") for i, prompt in enumerate(PROMPTS)}


async def test_without_options_a_batch_runs_as_before() -> None:
    seen: dict[str, tuple[str | None, Any]] = {}
    async with Runtime():
        await _clerk(seen).run_many(PROMPTS[:2])
    assert seen == {"order 0": (None, None), "order 1": (None, None)}


async def test_settings_reach_every_model_call() -> None:
    requests: list[LLMRequest] = []
    async with Runtime():
        await _clerk({}, requests).run_many(PROMPTS[:3], settings=ModelSettings(temperature=0.25))
    assert len(requests) == 6 and {r.temperature for r in requests} == {0.25}


def _priced_looper() -> tuple[Agent[str], ScriptedProvider]:
    step = LLMResponse("", tool_calls=(ToolCall("c1", "look", {"item": "pen"}),), usage=USAGE)

    @tool
    async def look(item: str) -> str:
        """Look an item up."""
        return f"{item}: in stock"

    provider = ScriptedProvider(lambda request: step, name="openai", model="gpt-4o")
    return Agent(provider, tools=[look], max_steps=5), provider


async def test_a_number_is_each_runs_own_cost_limit() -> None:
    agent, provider = _priced_looper()
    async with Runtime():
        results = await agent.run_many(["a", "b", "c"], cost_limit=1.5 * STEP)
    for result in results:
        assert isinstance(result.error, CostLimitExceeded) and result.error.scope == "run", result.error
    assert provider.calls == 3  # one call each: the second, estimated at a step, would pass 1.5 steps


async def test_a_budget_is_one_limit_the_runs_share() -> None:
    agent, provider = _priced_looper()
    budget = CostBudget(2.5 * STEP)
    async with Runtime():
        results = await agent.run_many(["a", "b", "c", "d"], concurrency=1, cost_limit=budget)
    assert all(isinstance(r.error, CostLimitExceeded) for r in results)
    assert provider.calls <= 3 and budget.cost is not None and budget.cost.total <= 3 * STEP


async def test_a_deadline_bounds_each_run() -> None:
    provider = ScriptedProvider(lambda request: "late", latency=10.0)
    async with Runtime():
        results = await Agent(provider).run_many(["a", "b"], deadline=1.0)
    assert [type(r.error) for r in results] == [RunDeadlineExceeded, RunDeadlineExceeded]


@pytest.mark.parametrize(("options", "error"), [
    ({"deadline": -1}, ValueError),
    ({"cost_limit": -1}, ValueError),
    ({"input_key": 5}, TypeError),
    ({"priority": "high"}, TypeError),
    ({"settings": {"temperature": 0.2}}, TypeError),
])
async def test_a_bad_option_is_refused_before_any_run_starts(options: dict[str, Any], error: type[Exception]) -> None:
    provider = ScriptedProvider(lambda request: "x")
    agent = Agent(provider)
    async with Runtime() as rt:
        with pytest.raises(error):
            await agent.run_many(["a", "b"], **options)
        with pytest.raises(error):
            await rt.run_many(agent, ["a"], **options)
        with pytest.raises(error):
            agent.as_completed(["a"], **options)
    assert provider.calls == 0
