"""``agent.resume`` takes the keywords of ``agent.run`` that shape a run: ``cost_limit`` (the resumed run is
stopped past it, as a run is) and ``on_token`` (the resumed run streams its answer text).  Both backends."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import Agent, CostLimitExceeded, LLMResponse, Runtime, ScriptedProvider, ToolCall, tool
from tests.support.prices import STEP, USAGE, gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = pytest.mark.anyio


@tool(requires_approval=True)
async def refund(amount: int) -> str:
    """Refund an amount."""
    return f"refunded {amount}"


def _agent(*answers: Any) -> tuple[Agent[str], ScriptedProvider]:
    script = [LLMResponse("", tool_calls=(ToolCall("r1", "refund", {"amount": 5}),), usage=USAGE), *answers]
    provider = ScriptedProvider(script, name="openai", model="gpt-4o")
    return Agent(provider, name="desk", tools=[refund]), provider


async def test_a_resumed_run_is_stopped_past_its_cost_limit() -> None:
    agent, provider = _agent(LLMResponse("done", usage=USAGE), LLMResponse("never", usage=USAGE))
    async with Runtime():
        paused = await agent.run("refund 5")
        assert paused.paused
        result = await agent.resume(paused, {"r1": True}, cost_limit=0.5 * STEP)
    error = result.error
    assert isinstance(error, CostLimitExceeded) and error.scope == "run"
    assert provider.calls == 2  # the resumed run's one call passed the limit: no third


async def test_a_resumed_run_streams_its_answer_to_on_token() -> None:
    agent, _ = _agent("done, refunded")
    pieces: list[str] = []
    async with Runtime():
        paused = await agent.run("refund 5")
        assert paused.resume_state is not None
        result = await agent.resume(paused.resume_state, {"r1": True}, on_token=pieces.append)
    assert result.ok and result.content == "done, refunded"
    assert "".join(pieces) == "done, refunded"


async def test_resume_refuses_an_on_token_or_cost_limit_of_the_wrong_type_before_claiming_the_pause() -> None:
    agent, provider = _agent("done")
    async with Runtime():
        paused = await agent.run("refund 5")
        with pytest.raises(TypeError, match="on_token must be callable"):
            await agent.resume(paused, {"r1": True}, on_token="print")  # type: ignore[arg-type]
        with pytest.raises((TypeError, ValueError), match="cost_limit"):
            await agent.resume(paused, {"r1": True}, cost_limit=-1)
        assert provider.calls == 1
        assert (await agent.resume(paused, {"r1": True})).content == "done"  # the pause was not claimed
