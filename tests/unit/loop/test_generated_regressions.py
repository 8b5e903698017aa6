"""Plain examples of what the generated runs (test_generated_runs.py) found, each on both backends."""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, LLMResponse, ScriptedProvider, ToolCall, ToolStatus, Usage, tool
from agentactors.errors import ToolStatusError

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@dataclass
class Point:
    x: int
    y: int


@tool
async def echo(x: str) -> str:
    """Echo."""
    return x


async def test_an_output_call_before_another_call_gets_its_result_in_call_order() -> None:
    """A typed step calling the output tool and then another tool: the other call runs first (docs/output.md),
    but the results go back in call order (docs/loop.md, "results appended in call order"), as the wires that
    pair results by position (Gemini) need."""
    provider = ScriptedProvider(
        [
            LLMResponse(
                tool_calls=[ToolCall("c1", "final_result", {"x": 1, "y": 2}), ToolCall("c2", "echo", {"x": "hi"})]
            )
        ]
    )
    result = await Agent(provider, tools=[echo], output_type=Point).run("go")
    assert result.output == Point(1, 2)
    assert [m.tool_call_id for m in result.messages if m.role == "tool"] == ["c1", "c2"]


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pays, once a person approves (it takes a second: the run is in its tool step when cancelled)."""
    await anyio.sleep(1)
    return f"paid {amount}"


async def test_a_resumed_run_cancelled_through_its_handle_leaves_no_call_without_its_result() -> None:
    """Cancelled before the paused step's calls were answered, the resumed run's messages ended with them
    unanswered — a conversation every vendor refuses (RunResult.messages: "no call is without its result").
    The step is left out whole, as a deadline leaves it."""
    provider = ScriptedProvider([ToolCall("c1", "pay", {"amount": 1}), "done"])
    agent = Agent(provider, tools=[pay])
    paused = await agent.run("go")
    assert paused.paused
    async with agent.resume_stream(paused, {"c1": True}) as run:
        async for _event in run:
            run.cancel()
            break
        result = await run.wait()
    assert result.cancelled and not result.paused
    assert [m.role for m in result.messages] == ["user"]


async def test_a_cancelled_runs_finished_event_counts_its_childrens_usage_as_its_result_does() -> None:
    """run.finished of a run cancelled through its handle said the usage without its delegated runs', while
    its result's usage counts them (docs/loop.md: "usage (summed, children's included)")."""
    child = Agent(ScriptedProvider(lambda request: LLMResponse("child answer", usage=Usage(7, 3))), name="helper")

    @tool
    async def slow() -> str:
        """Takes a while."""
        await anyio.sleep(10)
        return "late"

    provider = ScriptedProvider(
        [
            LLMResponse(
                tool_calls=[ToolCall("c1", "helper", {"input": "look"}), ToolCall("c2", "slow", {})], usage=Usage(1, 1)
            )
        ]
    )
    rec = InMemoryRecorder()
    agent = Agent(provider, tools=[child.as_tool(), slow], recorders=[rec])
    async with agent.stream("go") as run:
        async for event in run:
            if event.type == "run.finished" and event.parent_run_id is not None:
                run.cancel()
        result = await run.wait()
    assert result.cancelled
    assert result.usage == Usage(8, 4)
    finished = next(e for e in rec.events if e.type == "run.finished" and e.run_id == result.run_id)
    assert finished.data["usage"] == result.usage


async def test_a_raising_runs_finished_event_counts_its_childrens_usage() -> None:
    """The same for a run that raises (a status routed to "raise") after a delegated run answered."""
    child = Agent(ScriptedProvider(lambda request: LLMResponse("child answer", usage=Usage(7, 3))), name="helper")

    @tool
    async def boom() -> str:
        """Raises."""
        raise ValueError("boom")

    provider = ScriptedProvider(
        [
            LLMResponse(
                tool_calls=[ToolCall("c1", "helper", {"input": "look"}), ToolCall("c2", "boom", {})], usage=Usage(1, 1)
            )
        ]
    )
    rec = InMemoryRecorder()
    agent = Agent(provider, tools=[child.as_tool(), boom], recorders=[rec], on_tool_status={ToolStatus.error: "raise"})
    with pytest.raises(ToolStatusError):
        await agent.run("go")
    finished = [e for e in rec.events if e.type == "run.finished" and e.parent_run_id is None]
    assert [e.data["usage"] for e in finished] == [Usage(8, 4)]


async def test_a_steer_from_a_cancelled_caller_leaves_the_run_as_it_was() -> None:
    """AgentRun.steer's "Cancellation:" paragraph: a caller cancelled before the run took the steer sends
    nothing (no run.steer_received, the conversation without it); the run goes on, not cancelled."""

    @tool
    async def wait_a_bit() -> str:
        """Takes a second."""
        await anyio.sleep(1)
        return "done waiting"

    provider = ScriptedProvider([ToolCall("c1", "wait_a_bit", {}), "Answer."])
    rec = InMemoryRecorder()
    agent = Agent(provider, tools=[wait_a_bit], recorders=[rec])
    async with agent.stream("go") as run:
        async for event in run:
            if event.type == "tools.started":
                with anyio.CancelScope() as scope:
                    scope.cancel()
                    await run.steer("never sent")
                assert scope.cancelled_caught
        result = await run.wait()
    assert result.ok and result.content == "Answer."
    assert rec.of_type("run.steer_received") == []
    assert all(m.content != "never sent" for m in result.messages)
