"""A run that ends in the middle of a tool step leaves no call without its result (agentactors/loop/state.py).

A typed step runs its other calls and feeds their results back, then checks the output call — with the
``output_validator``, which may await.  A deadline passing there ended the run with the step's assistant message,
the other calls' results and no result for the output call: a conversation every vendor refuses, so a later turn
could not go on from ``result.messages``.  Only a trailing assistant message was dropped before.  Now the
unfinished step is left out whole, for a deadline and for a failure (a halted executor ends a run mid-step too).
"""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest

from agentactors import Agent, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.errors import ProviderError, RunDeadlineExceeded
from agentactors.loop.config import LoopConfig
from agentactors.loop.state import LoopState
from agentactors.messages import Message

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@attrs.frozen
class Verdict:
    approved: bool


@tool
async def look() -> str:
    """Look."""
    return "seen"


async def test_a_deadline_while_an_output_validator_checks_leaves_the_unfinished_step_out() -> None:
    async def slow(value: Any) -> Any:
        await anyio.sleep(100)
        return value

    model = ScriptedProvider([
        [ToolCall("l0", "look", {})],
        [ToolCall("l1", "look", {}), ToolCall("o1", "final_result", {"approved": True})],
    ])
    agent: Agent[Verdict] = Agent(model, tools=[look], output_type=Verdict, output_validator=slow)
    async with Runtime():
        result = await agent.run("x", deadline=10)
    assert isinstance(result.error, RunDeadlineExceeded)
    # The first step is whole and stays; the second (l1 answered, o1 not) is left out.
    assert [(m.role, m.tool_call_id, [c.id for c in m.tool_calls]) for m in result.messages] == [
        ("user", None, []), ("assistant", None, ["l0"]), ("tool", "l0", [])
    ]


def _state_mid_step() -> LoopState:
    state = LoopState(LoopConfig(), [Message.user("q")], True, None, "r1")
    state.conversation += [
        Message.assistant("", [ToolCall("a", "look", {})]), Message.tool("a", "seen"),
        Message.assistant("", [ToolCall("b", "look", {}), ToolCall("c", "look", {})]), Message.tool("b", "seen"),
    ]
    return state


def test_a_failure_mid_step_leaves_the_unfinished_step_out() -> None:
    result = _state_mid_step().failed(ProviderError("halted", provider="p", kind="transient"))
    assert result.generation_failed
    assert [m.tool_call_id or [c.id for c in m.tool_calls] for m in result.messages] == [[], ["a"], "a"]


def test_a_failure_between_steps_keeps_the_whole_conversation() -> None:
    state = _state_mid_step()
    state.conversation.append(Message.tool("c", "seen"))
    result = state.failed(ProviderError("down", provider="p", kind="transient"))
    assert tuple(result.messages) == tuple(state.conversation)
