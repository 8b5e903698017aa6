"""A session's resume streamed for the request that sent it (``streamed_resume``): the resumed run is a live run
handed to the request's ``follow`` as it runs — its events before its result — with the person's edited arguments in
the pause it resumes, and its result going back to the session."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.agent.run import AgentRun
from agentactors.messages import ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.serve._turns import streamed_resume
from agentactors.tools import tool

pytestmark = pytest.mark.anyio


async def test_a_resume_is_streamed_to_follow_with_the_edits_in_its_pause() -> None:
    ran: list[int] = []

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay (a person approves each call)."""
        ran.append(amount)
        return f"paid {amount}"

    provider = ScriptedProvider([[ToolCall("call-1", "pay", {"amount": 500})], "Paid 50."])
    agent = Agent(provider, tools=[pay], name="bank")
    seen: list[str] = []

    async def follow(run: AgentRun[Any]) -> None:
        assert isinstance(run, AgentRun) and not run.done
        async for event in run:
            seen.append(event.type)

    async with Runtime() as rt:
        paused = await agent.run("Pay 500.", runtime=rt)
        state = paused.resume_state
        assert state is not None and ran == []
        turn = streamed_resume(agent, follow, {"call-1": {"amount": 50}})
        result = await turn.resume(state, {"call-1": True}, runtime=rt)
        assert state.pending[0].arguments == {"amount": 500}, "the kept pause is the model's"
    assert ran == [50], "the call ran with the person's arguments"
    assert result.ok and result.content == "Paid 50."
    assert {"run.resumed", "llm.request", "llm.text_delta"} <= set(seen), "the resumed run's events went to follow"
    (made,) = [c for m in provider.requests[-1].messages for c in m.tool_calls]
    assert made.arguments == {"amount": 50}, "the model reads the call as it ran"


async def test_a_turns_run_through_it_is_the_agents_own() -> None:
    agent = Agent(ScriptedProvider(["hello"]), name="a")
    followed: list[AgentRun[Any]] = []

    async def follow(run: AgentRun[Any]) -> None:  # pragma: no cover - not called for a run
        followed.append(run)

    async with Runtime() as rt:
        result = await streamed_resume(agent, follow).run("hi", runtime=rt)
    assert result.content == "hello" and followed == []
