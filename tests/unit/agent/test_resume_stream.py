"""``agent.resume_stream(paused, decisions)``: a resumed run as a live run — its events as they happen, and
steers, interrupts and approvals taken at its step boundaries, as a streamed run takes them.  The pause is
claimed once, when the handle is entered.  Both backends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from agentactors import Agent, LLMRequest, LLMResponse, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.errors import PauseConsumedError
from agentactors.tools.toolset import ToolsetError

pytestmark = pytest.mark.anyio

DONE: list[str] = []


@tool(requires_approval=True)
async def refund(amount: int) -> str:
    """Refund an amount."""
    DONE.append(f"refund {amount}")
    return f"refunded {amount}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    DONE.clear()


def _pause_then(*answers: Any) -> Agent[str]:
    script = [LLMResponse("", tool_calls=(ToolCall("r1", "refund", {"amount": 5}),)), *answers]
    return Agent(ScriptedProvider(script), name="desk", tools=[refund])


async def test_a_resumed_run_streams_its_events_and_ends_as_resume_would() -> None:
    agent = _pause_then("Refunded 5.")
    async with Runtime():
        paused = await agent.run("refund 5")
        assert paused.paused
        async with agent.resume_stream(paused, {"r1": True}) as run:
            kinds = [event.type async for event in run]
        result = run.result
    assert DONE == ["refund 5"]
    assert result.ok and result.content == "Refunded 5."
    assert kinds[0] == "run.started" and kinds[-1] == "run.finished"
    assert "run.resumed" in kinds and "llm.text_delta" in kinds  # live, not rebuilt from the result


async def test_a_resumed_run_takes_a_steer_at_its_next_step_boundary() -> None:
    entered, release = anyio.Event(), anyio.Event()
    seen: list[list[str]] = []

    async def model(request: LLMRequest) -> Any:
        seen.append([m.content for m in request.messages if m.role == "user"])
        if len(seen) == 1:
            return [ToolCall("r1", "refund", {"amount": 5})]
        if len(seen) == 2:  # the resumed run's first model call: steered while it waits
            entered.set()
            await release.wait()
            return "Refunded 5."
        return "Refunded 5, and noted: ship it."

    agent = Agent(ScriptedProvider(model), name="desk", tools=[refund])
    async with Runtime() as rt:
        paused = await agent.run("refund 5")
        async with agent.resume_stream(paused, {"r1": True}) as run:
            await entered.wait()
            assert run.run_id is not None
            found = rt.run_ref(run.run_id)  # the resumed run is addressable as any live run
            await found.steer("ship it")
            release.set()
            result = await run.wait()
    assert result.ok and result.content == "Refunded 5, and noted: ship it."
    assert seen[-1][-1] == "ship it"  # the steer reached the run's next model call


async def test_the_pause_is_claimed_when_the_handle_is_entered_once() -> None:
    agent = _pause_then("Refunded 5.", "again")
    async with Runtime():
        paused = await agent.run("refund 5")
        handle = agent.resume_stream(paused, {"r1": True})  # made, not entered: nothing claimed
        async with handle as run:
            await run.wait()
        with pytest.raises(PauseConsumedError):
            async with agent.resume_stream(paused, {"r1": True}):
                pass
        with pytest.raises(PauseConsumedError):
            await agent.resume(paused, {"r1": True})
    assert DONE == ["refund 5"]


async def test_a_handle_that_could_not_start_its_run_leaves_the_pause() -> None:
    agent = _pause_then("Refunded 5.")
    async with Runtime():
        paused = await agent.run("refund 5")
    closed = Runtime()  # a runtime nobody entered: the handle refuses it before anything is claimed
    with pytest.raises(RuntimeError):
        async with agent.resume_stream(paused, {"r1": True}, runtime=closed):
            pass
    async with Runtime():
        result = await agent.resume(paused, {"r1": True})
    assert result.ok and DONE == ["refund 5"]


class _Flaky:
    """A toolset whose listing fails while ``down``: a run of its agent cannot start."""

    name = "flaky"

    def __init__(self) -> None:
        self.down = False

    async def list_tools(self, host: Any) -> Sequence[Any]:
        if self.down:
            raise ConnectionError("the tool server is down")
        return ()


async def test_a_resumed_run_whose_toolsets_cannot_be_listed_leaves_the_pause_for_another_try() -> None:
    flaky = _Flaky()
    script = [LLMResponse("", tool_calls=(ToolCall("r1", "refund", {"amount": 5}),)), "Refunded 5."]
    agent = Agent(ScriptedProvider(script), name="desk", tools=[refund], toolsets=[flaky])
    async with Runtime():
        paused = await agent.run("refund 5")
        flaky.down = True
        with pytest.raises(ToolsetError):
            async with agent.resume_stream(paused, {"r1": True}):
                pass
        flaky.down = False
        async with agent.resume_stream(paused, {"r1": True}) as run:
            result = await run.wait()
    assert result.ok and DONE == ["refund 5"]


async def test_bad_decisions_are_refused_when_the_handle_is_made() -> None:
    agent = _pause_then("Refunded 5.")
    async with Runtime():
        paused = await agent.run("refund 5")
        with pytest.raises(ValueError, match="r1"):
            agent.resume_stream(paused, {})
        with pytest.raises(ValueError, match="resume_stream"):
            agent.resume_stream(LLMResponse("x"), {})  # type: ignore[arg-type]
        async with agent.resume_stream(paused, {"r1": "not today"}) as run:
            result = await run.wait()
    assert result.ok and DONE == []  # denied: the model read why, and answered


async def test_a_resumed_stream_keeps_the_paused_runs_children() -> None:
    helper = Agent(ScriptedProvider(["helped"]), name="helper")

    async def model(request: LLMRequest) -> Any:
        users = [m for m in request.messages if m.role == "tool"]
        if not users:
            return [ToolCall("h1", "helper", {"input": "help"}), ToolCall("r1", "refund", {"amount": 5})]
        return "Refunded 5."

    agent = Agent(ScriptedProvider(model), name="desk", tools=[refund, helper.as_tool()])
    async with Runtime():
        paused = await agent.run("refund 5")
        assert paused.paused and len(paused.children) == 1
        async with agent.resume_stream(paused, {"r1": True}) as run:
            result = await run.wait()
    assert result.ok and [child.content for child in result.children] == ["helped"]
