"""Handoffs at their edges: a filter that splits calls from results, a handoff beside a typed run's output call.

A handoff's ``input_filter`` that splits a tool call from its results is refused at the handoff
(agentactors/loop/seats.py).

The handoff's own docstring suggests a filter may "drop earlier tool calls"; one that does it by role alone keeps
half of each pair — assistant messages whose calls have no results, or results without their calls.  The target's
first model call then failed with the vendor's refusal, far from the cause.  Now the handoff raises a
``ValueError`` that names the filter.  Virtual time on both backends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import pytest

from agentactors import Agent, Message, Runtime, ScriptedProvider, ToolCall, handoff, tool
from agentactors.loop.seats import Seat, filtered

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool
async def note(text: str) -> str:
    """Take a note."""
    return "noted"


Filter = Callable[[tuple[Message, ...]], Sequence[Message]]
DROPS_RESULTS: Filter = lambda messages: [m for m in messages if m.role != "tool"]  # noqa: E731
DROPS_CALLS: Filter = lambda messages: [m for m in messages if not m.tool_calls]  # noqa: E731
KEEPS_PAIRS: Filter = lambda messages: [m for m in messages if m.role not in ("tool", "assistant")]  # noqa: E731


def _triage(input_filter: Filter, billing: Agent[str]) -> Agent[str]:
    model = ScriptedProvider([[ToolCall("n1", "note", {"text": "x"})], [ToolCall("h1", "to_billing", {})]])
    return Agent(
        model, name="triage", tools=[note], handoffs=[handoff(billing, name="to_billing", input_filter=input_filter)]
    )


@pytest.mark.parametrize(
    ("input_filter", "match"),
    [(DROPS_RESULTS, "without their results"), (DROPS_CALLS, "without the assistant message")],
    ids=["drops-results", "drops-calls"],
)
async def test_a_filter_that_splits_calls_from_results_is_refused_at_the_handoff(
    input_filter: Filter, match: str
) -> None:
    billing_model = ScriptedProvider(["billing here"])
    billing = Agent(billing_model, name="billing")
    async with Runtime():
        with pytest.raises(ValueError, match=f"input_filter returned .*{match}"):
            await _triage(input_filter, billing).run("my invoice?")
    assert billing_model.requests == []  # the target never sent a conversation the vendor refuses


async def test_a_filter_that_keeps_or_drops_whole_pairs_is_taken() -> None:
    billing_model = ScriptedProvider(["billing here"])
    billing = Agent(billing_model, name="billing")
    async with Runtime():
        result = await _triage(KEEPS_PAIRS, billing).run("my invoice?")
    assert result.ok and result.agent == "billing"
    assert billing_model.requests[0].messages == (Message.user("my invoice?"),)


def test_on_the_json_transport_tool_turns_are_text_and_not_checked() -> None:
    calls = (ToolCall("c1", "note", {}),)
    conversation = (Message.user("q"), Message.assistant("", calls), Message.tool("c1", "noted"))
    seat = Seat(None, None, None, native=False, input_filter=DROPS_CALLS)
    assert filtered(seat, conversation) == (Message.user("q"), Message.tool("c1", "noted"))
    with pytest.raises(ValueError, match="without the assistant message"):
        filtered(Seat(None, None, None, native=True, input_filter=DROPS_CALLS), conversation)


# -- a handoff beside an output call (agentactors/loop/output_steps.py) -----------------------------------


@attrs.frozen
class Verdict:
    approved: bool


@tool(requires_approval=True)
async def refund() -> str:
    """Refund."""
    return "refunded"


async def test_a_handoff_beside_an_output_call_is_answered_not_used_not_as_an_unknown_tool() -> None:
    """It reached the executor, which knows no handoff tool: the model read "there is no tool named
    'transfer_to_billing'" about a tool it had been offered."""
    billing_model = ScriptedProvider(["billing here"])
    billing = Agent(billing_model, name="billing")
    model = ScriptedProvider([
        [ToolCall("h1", "transfer_to_billing", {}), ToolCall("o1", "final_result", {"approved": "maybe"})],
        [ToolCall("o2", "final_result", {"approved": True})],
    ])
    triage: Agent[Verdict] = Agent(model, name="triage", handoffs=[billing], output_type=Verdict)
    async with Runtime():
        result = await triage.run("refund?")
    assert result.ok and result.output == Verdict(True) and result.agent == "triage" and billing_model.requests == []
    (answer,) = [m for m in result.messages if m.role == "tool" and m.tool_call_id == "h1"]
    assert answer.content.startswith("Not used: a final result was given in the same step") and not answer.is_error
    assert [m.tool_call_id for m in result.messages if m.role == "tool"] == ["h1", "o1", "o2"]


async def test_a_handoff_beside_an_output_call_and_a_pausing_call_keeps_its_answer_through_the_pause() -> None:
    billing = Agent(ScriptedProvider([]), name="billing")
    model = ScriptedProvider([
        [ToolCall("r1", "refund", {}), ToolCall("h1", "transfer_to_billing", {}),
         ToolCall("o1", "final_result", {"approved": True})],
    ])
    triage: Agent[Verdict] = Agent(model, name="triage", tools=[refund], handoffs=[billing], output_type=Verdict)
    async with Runtime():
        paused = await triage.run("refund?")
        assert paused.paused and [c.id for c in paused.pending_approvals] == ["r1"]
        result = await triage.resume(paused, {"r1": True})
    assert result.ok and result.output == Verdict(True)
    assert [m.tool_call_id for m in result.messages if m.role == "tool"] == ["r1", "h1", "o1"]
    assert next(m for m in result.messages if m.tool_call_id == "h1").content.startswith("Not used")
