"""A handoff whose target cannot be seated (its toolset cannot list, two of its tools share a name) ends the run
with a failed result — what the run had, its usage kept, the error naming the handoff in a note — never an
exception out of ``run()`` / ``stream()`` after paid steps.  Both backends, virtual time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    LLMResponse,
    ScriptedProvider,
    ToolCall,
    ToolChoice,
    Usage,
    tool,
)
from agentactors.tools.toolset import ToolNameClashError, ToolsetError

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Down:
    name = "down"

    async def list_tools(self, host: Any) -> Sequence[Any]:
        raise OSError("no route to host")


@tool
async def echo(text: str) -> str:
    """Echo."""
    return text


class Clashing:
    name = "clashing"

    async def list_tools(self, host: Any) -> Sequence[Any]:
        return [echo]


def first(text: str = "") -> ScriptedProvider:
    return ScriptedProvider(
        [LLMResponse(text, tool_calls=[ToolCall("c1", "transfer_to_target", {})], usage=Usage(1000, 50))]
    )


def target(broken: str) -> Agent[str]:
    if broken == "toolset":
        return Agent(ScriptedProvider(["target answer"]), name="target", toolsets=[Down()])
    if broken == "choice":  # a tool choice naming a tool its toolsets do not list
        return Agent(ScriptedProvider(["t"]), name="target", toolsets=[Clashing()], tool_choice=ToolChoice.tool("x"))
    return Agent(ScriptedProvider(["target answer"]), name="target", tools=[echo], toolsets=[Clashing()])


def check(result: Any, error: type[Exception]) -> None:
    assert isinstance(result.error, error)
    assert result.generation_failed and not result.output and result.content == ""
    assert result.usage == Usage(1000, 50) and result.steps == 1
    assert result.agent == "a" and result.handoffs == ()
    notes = getattr(result.error, "__notes__", [])
    assert any("handing off from 'a' to 'target'" in n for n in notes), notes


@pytest.mark.parametrize(
    ("broken", "error"), [("toolset", ToolsetError), ("clash", ToolNameClashError), ("choice", ValueError)]
)
async def test_a_target_that_cannot_be_seated_ends_the_run_with_its_usage(broken: str, error: type[Exception]) -> None:
    recorder = InMemoryRecorder()
    agent = Agent(first(), name="a", handoffs=[target(broken)], recorders=[recorder])
    result = await agent.run("x")
    check(result, error)
    (finished,) = [e for e in recorder.events if e.type == "run.finished"]
    assert finished.data["usage"] == Usage(1000, 50)
    assert not [e for e in recorder.events if e.type == "agent.handoff"]


async def test_a_stream_ends_the_same_way() -> None:
    agent = Agent(first(), name="a", handoffs=[target("toolset")])
    async with agent.stream("x") as run:
        async for _ in run:
            pass
    check(run.result, ToolsetError)


async def test_run_many_reports_the_usage_of_the_failed_run() -> None:
    (result,) = await Agent(first(), name="a", handoffs=[target("toolset")]).run_many(["x"])
    check(result, ToolsetError)


async def test_what_the_model_said_before_the_handoff_is_kept() -> None:
    result = await Agent(first("Let me pass you on."), name="a", handoffs=[target("toolset")]).run("x")
    assert isinstance(result.error, ToolsetError) and result.content == "Let me pass you on."
    assert result.bounded and result.usage == Usage(1000, 50)
