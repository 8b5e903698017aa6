"""A paused run resumes once: a second ``agent.resume`` of the same pause — after the first or at the same
time, with the result or a stored copy of its state — raises ``PauseConsumedError`` and runs nothing (a
double-clicked "Approve" must not pay twice).  A resume that fails before its run starts gives the pause
back; a resumed run keeps the paused run's children.  Both backends."""

from __future__ import annotations

import pickle
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors import Agent, LLMResponse, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.errors import AgentActorsError, PauseConsumedError

pytestmark = pytest.mark.anyio

PAID: list[int] = []


@tool(requires_approval=True)
async def refund(amount: int) -> str:
    """Refund an amount."""
    await anyio.lowlevel.checkpoint()
    PAID.append(amount)
    return f"refunded {amount}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    PAID.clear()


def _agent(*answers: Any, tools: list[Any] | None = None) -> Agent[str]:
    script = [LLMResponse("", tool_calls=(ToolCall("r1", "refund", {"amount": 5}),)), *answers]
    return Agent(ScriptedProvider(script), name="desk", tools=tools or [refund])


async def test_a_second_resume_after_the_first_runs_nothing() -> None:
    agent = _agent("done", "done again")
    async with Runtime():
        paused = await agent.run("refund 5")
        assert paused.paused
        first = await agent.resume(paused, {"r1": True})
        with pytest.raises(PauseConsumedError) as caught:
            await agent.resume(paused, {"r1": True})
    assert first.ok and first.content == "done"
    assert PAID == [5]
    assert isinstance(caught.value, AgentActorsError) and caught.value.run_id == paused.run_id


async def test_two_resumes_at_once_run_the_call_once() -> None:
    agent = _agent("done", "done again")
    outcomes: list[Any] = []

    async def resume(paused: Any) -> None:
        try:
            outcomes.append(await agent.resume(paused, {"r1": True}))
        except PauseConsumedError as exc:
            outcomes.append(exc)

    async with Runtime():
        paused = await agent.run("refund 5")
        async with anyio.create_task_group() as tg:
            tg.start_soon(resume, paused)
            tg.start_soon(resume, paused.resume_state)
    assert PAID == [5]
    assert sorted(type(o).__name__ for o in outcomes) == ["PauseConsumedError", "RunResult"]


async def test_a_stored_copy_of_a_resumed_pause_is_refused_too() -> None:
    agent = _agent("done", "done again")
    async with Runtime():
        paused = await agent.run("refund 5")
        stored = pickle.dumps(paused.resume_state)
        await agent.resume(paused, {"r1": "no"})  # a denial consumes the pause as well
        with pytest.raises(PauseConsumedError):
            await agent.resume(pickle.loads(stored), {"r1": True})
    assert PAID == []


async def test_a_resume_that_fails_before_its_run_starts_gives_the_pause_back() -> None:
    agent = _agent("done")
    async with Runtime():
        paused = await agent.run("refund 5")
    closed = Runtime()
    with pytest.raises(RuntimeError):
        await agent.resume(paused, {"r1": True}, runtime=closed)
    with pytest.raises(ValueError):
        await agent.resume(paused, {})  # no decision for r1: nothing claimed either
    async with Runtime():
        result = await agent.resume(paused, {"r1": True})
    assert result.ok and PAID == [5]


async def test_a_resumed_run_keeps_the_paused_runs_children() -> None:
    helper = Agent(ScriptedProvider(["the helper's answer"]), name="helper")
    script = [
        LLMResponse(
            "",
            tool_calls=(ToolCall("h1", "helper", {"input": "look it up"}), ToolCall("r1", "refund", {"amount": 5})),
        ),
        "done",
    ]
    agent = Agent(ScriptedProvider(script), name="desk", tools=[refund, helper.as_tool()])
    async with Runtime():
        paused = await agent.run("refund 5")
        assert paused.paused and [c.content for c in paused.children] == ["the helper's answer"]
        result = await agent.resume(paused, {"r1": True})
    assert result.ok and PAID == [5]
    assert [c.content for c in result.children] == ["the helper's answer"]


async def test_a_resume_with_an_agent_that_cannot_reach_the_paused_one_is_refused_and_loses_nothing() -> None:
    """A run paused after a handoff goes on with the agent that was answering; resumed through an agent whose
    handoffs do not lead there (a wrong agent, a deployment that dropped it), it is a ValueError before
    anything runs — and the pause is still there for the right agent."""
    billing_model = ScriptedProvider([[ToolCall("r1", "refund", {"amount": 5})], "refunded"])
    billing = Agent(billing_model, name="billing", tools=[refund])
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", handoffs=[billing])
    elsewhere = Agent(ScriptedProvider([]), name="triage", handoffs=[Agent(ScriptedProvider([]), name="tech")])
    async with Runtime():
        paused = await triage.run("refund 5")
        assert paused.paused and paused.resume_state is not None and paused.resume_state.agent == "billing"
        with pytest.raises(ValueError, match="'billing'"):
            await elsewhere.resume(paused, {"r1": True})
        assert PAID == []
        result = await triage.resume(paused, {"r1": True})
    assert result.ok and result.content == "refunded" and PAID == [5]

