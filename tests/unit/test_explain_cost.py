"""explain() tells what each step and the whole run cost — live and from a JSONL record alike — and says so
when it is unknown, never a zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentactors import (
    Agent,
    Explanation,
    InMemoryRecorder,
    JsonlRecorder,
    LLMResponse,
    ScriptedProvider,
    ToolCall,
    Usage,
    explain,
    tool,
)
from agentactors.pricing import Cost
from tests.support.prices import USAGE, gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool
async def lookup(city: str) -> str:
    """The weather in a city."""
    return "sunny"


def same(cost: Cost | None, expected: Cost) -> bool:
    got = (cost.input, cost.output, cost.total) if cost is not None else None
    return cost is not None and cost.currency == expected.currency and got == pytest.approx(
        (expected.input, expected.output, expected.total)
    )


def agent(recorder: object, *, model: str = "gpt-4o") -> Agent:
    provider = ScriptedProvider(
        [LLMResponse(tool_calls=(ToolCall("c1", "lookup", {"city": "Oslo"}),), usage=USAGE),
         LLMResponse("sunny", usage=Usage(20_000, 500))],
        name="openai", model=model,
    )
    return Agent(provider, tools=[lookup], recorders=[recorder])  # type: ignore[list-item]


async def test_each_step_and_the_run_say_what_they_cost_live_and_from_the_record(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    live = InMemoryRecorder()
    with JsonlRecorder(path) as jsonl:
        result = await agent(live).run("weather?")
        for e in live.events:
            jsonl.record(e)
    assert same(result.cost, Cost(0.075, 0.015))
    for explanation in (explain(result, live.events), Explanation.from_jsonl(path, str(result.run_id))):
        assert same(explanation.cost, Cost(0.075, 0.015))
        first, second = (p.cost for p in explanation.path)
        assert same(first, Cost(0.025, 0.01)) and same(second, Cost(0.05, 0.005))
        text = str(explanation)
        assert "cost: 0.09 USD (input 0.075, output 0.015)" in text
        assert "served by openai; cost 0.035 USD" in text and "served by openai; cost 0.055 USD" in text


async def test_an_unpriced_run_is_explained_as_unknown_never_zero() -> None:
    live = InMemoryRecorder()
    result = await agent(live, model="no-price-model").run("weather?")
    explanation = explain(result, live.events)
    assert explanation.cost is None and all(p.cost is None for p in explanation.path)
    assert "cost: unknown (unpriced)" in str(explanation) and "cost 0" not in str(explanation)


async def test_the_estimated_part_of_a_cost_survives_the_record(tmp_path: Path) -> None:
    # A hedge's losing copy is charged at an estimate (docs/costs.md, "Calls cut short"): explain() from a JSONL
    # record tells the same estimated part the live run had, and its text says so.  Before, the record's cost was
    # rebuilt without it.
    from tests.support.cut_short import PROMPT
    from tests.unit.loop.test_cost_cut_short import answering, hedged

    path = tmp_path / "events.jsonl"
    live = InMemoryRecorder()
    result = await Agent(hedged(answering([30.0, 1.0])), recorders=[live]).run(PROMPT)
    with JsonlRecorder(path) as jsonl:
        for e in live.events:
            jsonl.record(e)
    assert result.cost is not None and result.cost.estimated > 0
    for explanation in (explain(result, live.events), Explanation.from_jsonl(path, str(result.run_id))):
        assert explanation.cost is not None
        assert explanation.cost.estimated == pytest.approx(result.cost.estimated)
        assert "estimated" in str(explanation)
