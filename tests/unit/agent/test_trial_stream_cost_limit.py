"""``agent.stream`` takes ``cost_limit`` as ``agent.run`` and ``agent.resume_stream`` do: a live run in a service
(the way a chat endpoint runs an agent) is stopped past its own limit, and a bad limit is refused when the handle
is made, as the handle's other arguments are.  Virtual time on both backends (a scripted model, no I/O)."""

from __future__ import annotations

import pytest

from agentactors import Agent, CostLimitExceeded, LLMResponse, Runtime, ScriptedProvider, ToolCall, tool
from tests.support.prices import STEP, USAGE, gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool
async def look(item: str) -> str:
    """Look an item up."""
    return f"{item}: in stock"


def _looping() -> tuple[Agent[str], ScriptedProvider]:
    step = LLMResponse("", tool_calls=(ToolCall("c1", "look", {"item": "pen"}),), usage=USAGE)
    provider = ScriptedProvider([step, step, step, LLMResponse("never", usage=USAGE)], name="openai", model="gpt-4o")
    return Agent(provider, name="clerk", tools=[look]), provider


async def test_a_streamed_run_is_stopped_past_its_cost_limit() -> None:
    agent, provider = _looping()
    async with Runtime(), agent.stream("is there a pen?", cost_limit=1.5 * STEP) as run:
        seen = [event.type async for event in run]
    result = run.result
    assert isinstance(result.error, CostLimitExceeded) and result.error.scope == "run"
    assert "run.cost_limit_exceeded" in seen
    assert provider.calls == 1  # a second call, estimated at a step, would pass 1.5 steps: it was not sent


async def test_stream_refuses_a_bad_cost_limit_when_the_handle_is_made() -> None:
    agent, provider = _looping()
    with pytest.raises(ValueError, match="cost_limit"):
        agent.stream("is there a pen?", cost_limit=-1)
    assert provider.calls == 0
