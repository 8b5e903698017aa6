"""A run's state (``LoopState``): made whole with its controller, by its constructor, and what steps do to it."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from agentactors.loop.config import LoopConfig
from agentactors.loop.controller import LoopController
from agentactors.loop.pause import PausedRun
from agentactors.loop.result import RunResult, answered
from agentactors.loop.state import LoopState
from agentactors.messages import LLMResponse, Message, ToolCall, ToolChoice, ToolSpec, Usage

pytestmark = pytest.mark.anyio

_SPEC = ToolSpec("lookup", "Look a key up.", {"type": "object", "properties": {}})


class _Never:
    async def ask(self, message: Any) -> Any:
        raise AssertionError("no request may be sent")


def test_a_controller_is_whole_before_its_run_starts() -> None:
    # The handle's cancelled result may be asked for before the run's task ever ran: it reports the input.
    inputs = (Message.system("sys"), Message.user("start"))
    controller = LoopController(LoopConfig(agent_name="a"), _Never(), None, list(inputs), run_id="r1")
    result = controller.cancelled_result()
    assert result.cancelled and result.content == ""
    assert result.messages == inputs
    assert (result.steps, result.tool_calls, result.run_id, result.agent) == (0, (), "r1", "a")


def test_the_usual_answers_result_is_the_one_built_by_keyword() -> None:
    # result() builds the usual answer's RunResult positionally: every field must land where its name says.
    call = ToolCall("c1", "lookup", {})
    state = LoopState(LoopConfig(agent_name="a", tool_specs=(_SPEC,)), [Message.user("q")], True, None, "r1")
    state.steps, state.usage, state.served_by = 2, Usage(7, 3), "scripted"
    state.tool_calls, state.followups = (call,), ("more?",)
    state.conversation.append(Message.assistant("done"))
    result = state.result("done")
    expected = RunResult(
        content="done", messages=tuple(state.conversation), tool_calls=(call,), steps=2, bounded=False,
        cancelled=False, generation_failed=False, error=None, followups=("more?",), usage=Usage(7, 3),
        served_by="scripted", run_id="r1", agent="a", cost=state.cost.spent,
    )
    assert result == expected
    assert attrs.asdict(result, recurse=False) == attrs.asdict(expected, recurse=False)  # error and the rest too
    # ... and the one the general path builds (a flag given, at its default, takes it).
    assert attrs.asdict(state.result("done", bounded=False), recurse=False) == attrs.asdict(result, recurse=False)


def test_start_takes_the_system_message_and_the_budget_it_leaves() -> None:
    # The agent's system text and the caller's leading system message become one; it replaces that message.
    config = LoopConfig(system="agent", context_budget_chars=100)
    state = LoopState(config, [Message.system("caller"), Message.user("q")], True, None, None)
    assert state.system == Message.system("agent\n\ncaller") and state.skip == 1
    assert state.budget is not None and state.budget.chars == 100 - len("agent\n\ncaller")
    assert state.conversation == [Message.system("caller"), Message.user("q")]
    assert (state.steps, state.answer_so_far, state.tool_calls) == (0, "", ())


def test_a_resumed_run_starts_with_the_paused_runs_counters() -> None:
    call = ToolCall("c1", "lookup", {})
    messages = (Message.user("q"), Message.assistant("Looking.", (call,)))
    paused = PausedRun(
        "r0", messages, (call,), (), (call,), {"c1": "needs a yes"},
        step=3, usage=Usage(5, 2), tool_calls=(call,), answer="Looking.", agent=None, handoffs=("b",),
    )
    state = LoopState(LoopConfig(), paused.messages, True, None, "r1", paused)
    assert (state.steps, state.usage, state.tool_calls, state.answer_so_far) == (3, Usage(5, 2), (call,), "Looking.")
    assert state.handoffs == ["b"]
    assert state.result("x").handoffs == ("b",)


def test_a_forced_choice_is_the_first_steps_only_and_needs_native_tools() -> None:
    config = LoopConfig(tool_specs=(_SPEC,), tool_choice=ToolChoice.required())
    state = LoopState(config, [Message.user("q")], True, None, None)
    assert state.step_choice() == ToolChoice.required()
    assert state.step_choice() == ToolChoice.auto()
    # On the JSON transport nothing can force a call: auto from the start.
    json_state = LoopState(config, [Message.user("q")], False, None, None)
    assert json_state.step_choice() == ToolChoice.auto()


def test_recorded_calls_get_ids_of_their_own_and_count_for_the_result() -> None:
    earlier = ToolCall("c1", "lookup", {})
    history = [Message.user("q"), Message.assistant("", (earlier,)), Message.tool("c1", "old result", "lookup")]
    state = LoopState(LoopConfig(), history, True, None, None)
    calls = state.record_calls(LLMResponse(provider="p"), "Checking.", [ToolCall("c1", "lookup", {})])
    assert [c.id for c in calls] == ["c1_2"]
    assert state.conversation[-1].tool_calls == tuple(calls)
    assert state.answer_so_far == "Checking." and state.served_by == "p"
    result = state.result(state.answer_so_far)
    assert result.tool_calls == tuple(calls) and result.served_by == "p"


def test_answered_makes_sequences_tuples_as_the_constructor_does() -> None:
    # Lists where answered() is typed for tuples, on purpose: it hands them to the constructor's converters.
    fields: tuple[Any, ...] = ("a", [Message.user("q")], [], 1, ["more?"], Usage(), None, None, None, None)
    result = answered(*fields)
    assert (result.messages, result.tool_calls, result.followups) == ((Message.user("q"),), (), ("more?",))
    assert result.output == "a" and result.ok
