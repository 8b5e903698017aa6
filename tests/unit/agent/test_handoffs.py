"""Handoffs: ``handoff(agent)`` / ``Agent(..., handoffs=[...])`` continue a run with another agent.

What a user relies on: after the handoff call the target's system prompt, tools, provider and output type
are used; ``RunResult.agent`` names who answered and ``RunResult.handoffs`` the path; the step's other
calls still run; an ``input_filter`` shapes what the target sees; a handoff loop is bounded by the first
agent's ``max_steps``; an ``agent.handoff`` event records each.  Virtual time on both backends.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    LLMRequest,
    Message,
    Runtime,
    ScriptedProvider,
    ToolCall,
    handoff,
    tool,
)
from agentactors.agent import Handoff

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool
async def lookup_invoice(number: str) -> str:
    """Look an invoice up."""
    return f"invoice {number}: 40 EUR"


@tool
async def triage_note(text: str) -> str:
    """Note something."""
    return "noted"


def tool_names(request: LLMRequest) -> list[str]:
    return [t.name for t in request.tools]


def test_handoff_builds_a_tool_named_after_its_target() -> None:
    billing = Agent(ScriptedProvider([]), name="billing")
    h = handoff(billing)
    assert isinstance(h, Handoff) and h.target is billing and h.name == "transfer_to_billing"
    assert h.parameters["properties"] == {}
    assert "billing" in h.description
    named = handoff(billing, name="to_money", description="Money questions.")
    assert (named.name, named.description) == ("to_money", "Money questions.")
    with pytest.raises(ValueError, match="needs a name"):
        handoff(Agent(ScriptedProvider([])))
    with pytest.raises(TypeError, match="input_filter"):
        handoff(billing, input_filter="all")  # type: ignore[arg-type]


def test_agents_and_handoff_tools_are_both_accepted_and_a_handoff_among_tools_is_a_handoff() -> None:
    billing = Agent(ScriptedProvider([]), name="billing")
    refunds = Agent(ScriptedProvider([]), name="refunds")
    triage = Agent(ScriptedProvider([]), name="triage", tools=[triage_note, handoff(refunds)], handoffs=[billing])
    assert [h.name for h in triage.handoffs] == ["transfer_to_billing", "transfer_to_refunds"]
    assert [t.name for t in triage.tools] == ["triage_note"]
    with pytest.raises(TypeError, match="handoffs are Agents"):
        Agent(ScriptedProvider([]), handoffs=[42])
    with pytest.raises(ValueError, match="unique"):
        Agent(ScriptedProvider([]), tools=[triage_note], handoffs=[handoff(billing, name="triage_note")])


async def test_the_run_goes_on_with_the_targets_prompt_tools_and_provider() -> None:
    billing_model = ScriptedProvider([[ToolCall("b1", "lookup_invoice", {"number": "7"})], "Your invoice is 40 EUR."])
    billing = Agent(billing_model, name="billing", system="You handle billing.", tools=[lookup_invoice])
    triage_model = ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]])
    triage = Agent(triage_model, name="triage", system="You route requests.", tools=[triage_note], handoffs=[billing])
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await triage.run("How much is invoice 7?")
    assert result.ok and result.content == "Your invoice is 40 EUR."
    assert result.agent == "billing" and result.handoffs == ("billing",)
    assert result.steps == 3 and len({e.run_id for e in rec.events if e.run_id}) == 1  # one run throughout
    assert tool_names(triage_model.requests[0]) == ["triage_note", "transfer_to_billing"]
    first_billing = billing_model.requests[0]
    assert first_billing.messages[0] == Message.system("You handle billing.")
    assert tool_names(first_billing) == ["lookup_invoice"]
    # The target reads the whole conversation, the handoff's answer included.
    assert [m.role for m in first_billing.messages[1:]] == ["user", "assistant", "tool"]
    assert first_billing.messages[-1].content.startswith("Transferred to billing.")
    (event,) = [e for e in rec.events if e.type == "agent.handoff"]
    assert (event.from_agent, event.to_agent, event.call_id, event.step) == ("triage", "billing", "h1", 1)
    finished = next(e for e in rec.events if e.type == "run.finished")
    assert finished.handoffs == ("billing",) and finished.final_agent == "billing"


async def test_the_steps_other_calls_run_and_a_second_handoff_is_not_used() -> None:
    billing = Agent(ScriptedProvider(["billing answers"]), name="billing")
    sales = Agent(ScriptedProvider(["never"]), name="sales")
    triage_model = ScriptedProvider([
        [
            ToolCall("n1", "triage_note", {"text": "vip"}),
            ToolCall("h1", "transfer_to_billing", {}),
            ToolCall("h2", "transfer_to_sales", {}),
        ]
    ])
    triage = Agent(triage_model, name="triage", tools=[triage_note], handoffs=[billing, sales])
    result = await triage.run("help")
    assert result.agent == "billing" and result.handoffs == ("billing",)
    tools = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
    assert tools["n1"] == "noted"
    assert tools["h1"].startswith("Transferred to billing")
    assert tools["h2"].startswith("Not used")


async def test_the_target_answers_with_its_own_output_type() -> None:
    class Verdict(Enum):
        refund = "refund"
        replace = "replace"

    decider = Agent(
        ScriptedProvider([ToolCall("o1", "final_result", {"response": "refund"})]),
        name="decider",
        output_type=Verdict,
    )
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_decider", {})]]), name="triage", handoffs=[decider])
    result: Any = await triage.run("the parcel arrived broken")
    assert result.agent == "decider" and result.output is Verdict.refund


async def test_an_input_filter_decides_what_the_target_sees() -> None:
    def last_user_only(messages: tuple[Message, ...]) -> list[Message]:
        return [m for m in messages if m.role == "user"][-1:]

    billing_model = ScriptedProvider(["billing here"])
    billing = Agent(billing_model, name="billing")
    triage = Agent(
        ScriptedProvider([[ToolCall("h1", "to_billing", {})]]),
        name="triage",
        handoffs=[handoff(billing, name="to_billing", input_filter=last_user_only)],
    )
    result = await triage.run([Message.user("hello"), Message.assistant("hi"), Message.user("my invoice?")])
    assert billing_model.requests[0].messages == (Message.user("my invoice?"),)
    assert result.messages == (Message.user("my invoice?"), Message.assistant("billing here"))

    empty = Agent(
        ScriptedProvider([[ToolCall("h1", "to_billing", {})]]),
        name="triage",
        handoffs=[handoff(billing, name="to_billing", input_filter=lambda messages: [])],
    )
    with pytest.raises(ValueError, match="no message"):
        await empty.run("x")


@pytest.mark.parametrize("filtered_by", ["triage", "tech"])
async def test_an_input_filter_applies_only_to_the_handoff_it_was_given_to(filtered_by: str) -> None:
    """Two agents each hand off to billing with a tool of the same name (``transfer_to_billing``), one with an
    ``input_filter``: billing sees the filtered conversation only when it was reached through that one."""

    def last_user_only(messages: tuple[Message, ...]) -> list[Message]:
        return [m for m in messages if m.role == "user"][-1:]

    def to_billing(filtered: bool) -> Handoff:
        return handoff(billing, input_filter=last_user_only if filtered else None)

    billing_model = ScriptedProvider(["billing here", "billing again"])
    billing = Agent(billing_model, name="billing")
    tech = Agent(
        ScriptedProvider([[ToolCall("h2", "transfer_to_billing", {})]]),
        name="tech",
        handoffs=[to_billing(filtered_by == "tech")],
    )
    triage_model = ScriptedProvider(
        [[ToolCall("h1", "transfer_to_tech", {})], [ToolCall("h3", "transfer_to_billing", {})]]
    )
    triage = Agent(triage_model, name="triage", handoffs=[tech, to_billing(filtered_by == "triage")])
    async with Runtime():
        through_tech = await triage.run("my invoice?")  # triage -> tech -> billing
        direct = await triage.run("my invoice, again?")  # triage -> billing
    assert through_tech.handoffs == ("tech", "billing") and direct.handoffs == ("billing",)
    seen_through_tech, seen_direct = (len(r.messages) for r in billing_model.requests)
    assert seen_through_tech == (1 if filtered_by == "tech" else 5)  # the user's message, or all of it
    assert seen_direct == (1 if filtered_by == "triage" else 3)


async def test_a_resumed_run_takes_the_filters_of_the_agent_it_paused_in() -> None:
    """Paused in billing (after triage handed it over), then resumed through triage: billing's own handoff to
    the closer — without a filter — is the one taken, not triage's filtered handoff of the same name."""

    @tool(requires_approval=True)
    async def refund(amount: int) -> str:
        """Refund an amount."""
        return f"refunded {amount}"

    def last_user_only(messages: tuple[Message, ...]) -> list[Message]:
        return [m for m in messages if m.role == "user"][-1:]

    closing_model = ScriptedProvider(["closing here"])
    closer = Agent(closing_model, name="closer")
    billing_model = ScriptedProvider(
        [[ToolCall("r1", "refund", {"amount": 5})], [ToolCall("h2", "transfer_to_closer", {})]]
    )
    billing = Agent(billing_model, name="billing", tools=[refund], handoffs=[closer])
    triage = Agent(
        ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]),
        name="triage",
        handoffs=[billing, handoff(closer, input_filter=last_user_only)],
    )
    async with Runtime():
        paused = await triage.run("refund 5")
        result = await triage.resume(paused, {"r1": True})
    assert result.ok and result.agent == "closer" and result.handoffs == ("billing", "closer")
    assert len(closing_model.requests[0].messages) == 7  # everything: no filter on billing's handoff


async def test_a_handoff_loop_is_bounded_by_the_first_agents_max_steps() -> None:
    ping_model = ScriptedProvider(lambda request: [ToolCall(f"p{len(request.messages)}", "transfer_to_pong", {})])
    pong_model = ScriptedProvider(lambda request: [ToolCall(f"q{len(request.messages)}", "transfer_to_ping", {})])
    pong = Agent(pong_model, name="pong", handoffs=["ping"], max_steps=100)  # back to ping, by name
    ping = Agent(ping_model, name="ping", max_steps=5, handoffs=[pong])
    result = await ping.run("go")
    assert result.bounded and result.steps == 5
    assert result.handoffs == ("pong", "ping", "pong", "ping", "pong")


async def test_a_handoff_by_name_must_reach_an_agent() -> None:
    lost = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_nobody", {})]]), name="lost", handoffs=["nobody"])
    with pytest.raises(ValueError, match=r"cannot reach: \['nobody'\]"):
        await lost.run("x")


async def test_two_different_agents_with_one_name_cannot_be_told_apart() -> None:
    a = Agent(ScriptedProvider([]), name="twin")
    b = Agent(ScriptedProvider([]), name="twin")
    routes = [handoff(a, name="to_a"), handoff(b, name="to_b")]
    triage = Agent(ScriptedProvider([[ToolCall("h1", "to_a", {})]]), name="t", handoffs=routes)
    with pytest.raises(ValueError, match="two different agents are named 'twin'"):
        await triage.run("x")


async def test_a_streamed_run_follows_the_handoff() -> None:
    billing = Agent(ScriptedProvider(["streamed from billing"]), name="billing")
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", handoffs=[billing])
    async with Runtime(), triage.stream("help") as run:
        text = "".join([t async for t in run.text_stream()])
    assert text == "streamed from billing"
    assert run.result.agent == "billing"


def test_a_handoff_steps_results_come_back_in_call_order_with_one_transfer() -> None:
    from agentactors.loop.seats import handoff_results, not_used_text, transferred_text
    from agentactors.tools.results import ToolResult, ToolStatus

    calls = [ToolCall("a", "lookup", {}), ToolCall("h1", "to_b", {}), ToolCall("h2", "to_b", {})]
    ran = [ToolResult.of("a", "lookup", ToolStatus.ok, "found")]
    results = handoff_results(calls, calls[1:], "b", ran, pausing=False)
    assert [r.call_id for r in results] == ["a", "h1", "h2"]
    assert [r.content for r in results] == ["found", transferred_text("b"), not_used_text("b")]
    # Another call waits for approval: the run pauses first, and no handoff is taken.
    paused = handoff_results(calls, calls[1:], "b", ran, pausing=True)
    assert all(r.content.startswith("Not used: other calls of this step wait for approval") for r in paused[1:])
