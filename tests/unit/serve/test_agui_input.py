"""Reading a RunAgentInput: what is new in a thread (after its last answer), the user messages' ids, the state."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import Interrupt, ResumeEntry, RunAgentInput

from agentactors.messages import ToolCall
from agentactors.serve._agui_input import (
    APPROVAL_SCHEMA,
    MAX_CONTEXT_CHARS,
    MAX_CONTEXT_ITEM_CHARS,
    MAX_CONTEXT_ITEMS,
    InvalidInput,
    ResumeAnswer,
    ResumeRefused,
    approval_schema,
    decisions_of,
    read_run_input,
)


def body(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"threadId": "t", "runId": "r", "messages": list(messages), **extra}


def test_the_new_messages_are_those_after_the_last_answer() -> None:
    run = read_run_input(body(
        {"id": "s", "role": "system", "content": "Be brief."},
        {"id": "u1", "role": "user", "content": "one"},
        {"id": "a1", "role": "assistant", "content": "answer"},
        {"id": "t1", "role": "tool", "toolCallId": "c", "content": "42"},
        {"id": "u2", "role": "user", "content": "two"},
        {"id": "u3", "role": "user", "content": [{"type": "text", "text": "three"}]},
    ))
    assert [(m.role, m.content) for m in run.new] == [("user", "two"), ("user", "three")]
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "tool", "user", "user"]
    assert [(given, m.content) for given, m in run.users] == [("u1", "one"), ("u2", "two"), ("u3", "three")]


def test_a_thread_without_an_answer_is_all_new_its_system_message_first() -> None:
    run = read_run_input(body({"role": "user", "content": "hi"}, {"role": "developer", "content": "Be kind."}))
    assert [(m.role, m.content) for m in run.new] == [("system", "Be kind."), ("user", "hi")]
    assert run.users[0][0] is None, "a message without an id has none"


def test_a_thread_ending_in_an_answer_has_nothing_new_and_the_state_is_kept() -> None:
    run = read_run_input(body({"id": "u", "role": "user", "content": "hi"}, {"id": "a", "role": "assistant",
                                                                              "content": "hello"}, state={"k": 1}))
    assert run.new == () and run.state == {"k": 1}


def test_a_bad_message_is_refused_whatever_part_it_is_in() -> None:
    with pytest.raises(InvalidInput):
        read_run_input(body({"role": "assistant", "content": "x"}, {"role": "user", "content": 5}))


def test_answers_to_interrupts_are_read_as_the_protocols_resume_entries_and_the_messages_are_not() -> None:
    """A ``resume`` continues the thread's paused run: its messages are not read (they may hold nothing new); one
    that is not an array of resume entries (``interruptId``, ``status`` resolved or cancelled, ``payload``, an object
    ``metadata``) — or answers an interrupt twice — is an input the app cannot serve."""
    entries = [
        {"interruptId": "call-9", "status": "resolved", "payload": {"approved": True}, "metadata": {"k": 1}},
        {"interruptId": "call-10", "status": "cancelled"},
    ]
    for entry in entries:
        ResumeEntry.model_validate(entry)
    answered = read_run_input(body({"role": "user", "content": "hi"}, resume=entries))
    assert answered.resume == (
        ResumeAnswer("call-9", "resolved", {"approved": True}), ResumeAnswer("call-10", "cancelled")
    )
    assert answered.messages == ()
    empties: tuple[list[Any] | None, ...] = (None, [])
    for empty in empties:
        plain = read_run_input(body({"role": "user", "content": "hi"}, resume=empty))
        assert plain.resume == () and [m.content for m in plain.messages] == ["hi"]
    bad: tuple[Any, ...] = (
        {"interruptId": "x"}, ["call-9"], [{"status": "resolved"}], [{"interruptId": 9, "status": "resolved"}],
        [{"interruptId": "", "status": "resolved"}], [{"interruptId": "c", "status": "approved"}],
        [{"interruptId": "c"}], [{"interruptId": "c", "status": "resolved", "metadata": "m"}],
        [{"interruptId": "c", "status": "resolved"}, {"interruptId": "c", "status": "cancelled"}],
    )
    for wrong in bad:
        with pytest.raises(InvalidInput, match="resume"):
            read_run_input(body({"role": "user", "content": "hi"}, resume=wrong))


PENDING = (ToolCall("call-1", "transfer", {"amount": 1}), ToolCall("call-2", "transfer", {"amount": 2}))


def test_answers_decide_every_pending_call_approved_denied_with_a_reason_or_dismissed() -> None:
    answers = (
        ResumeAnswer("call-2", "resolved", {"approved": False, "reason": " too much "}),
        ResumeAnswer("call-1", "resolved", {"approved": True, "reason": "fine", "note": "kept out"}),
    )
    assert decisions_of(answers, PENDING).decisions == {"call-1": True, "call-2": "too much"}
    plain = (ResumeAnswer("call-1", "resolved", {"approved": False}), ResumeAnswer("call-2", "cancelled", "ignored"))
    decided = decisions_of(plain, PENDING).decisions
    assert decided["call-1"] == "denied by a person" and "dismissed" in str(decided["call-2"])


def test_an_answer_naming_no_open_interrupt_is_skipped_as_the_protocol_says() -> None:
    """AG-UI: a resume entry that matches no open interrupt SHOULD be ignored — a client that still holds an
    interrupt answered already, or one of another run, has its other answers taken; the skipped one decides
    nothing (it is not among the decisions, and nothing fails)."""
    answers = (
        ResumeAnswer("call-7", "resolved", {"approved": True}),
        ResumeAnswer("call-1", "resolved", {"approved": True}),
        ResumeAnswer("call-2", "cancelled"),
        ResumeAnswer("call-8", "resolved", "a payload of any shape: never read"),
    )
    decided = decisions_of(answers, PENDING)
    assert set(decided.decisions) == {"call-1", "call-2"} and decided.decisions["call-1"] is True
    assert decided.skipped == ("call-7", "call-8")


@pytest.mark.parametrize(
    ("answers", "pending", "code"),
    [
        ((ResumeAnswer("call-1", "resolved", {"approved": True}),), (), "NoOpenInterrupts"),
        # entries that all match no open interrupt are skipped: the open ones are left unanswered
        ((ResumeAnswer("call-7", "cancelled"),), PENDING, "InterruptsNotCovered"),
        ((ResumeAnswer("call-2", "cancelled"), ResumeAnswer("call-7", "cancelled")), PENDING, "InterruptsNotCovered"),
        ((ResumeAnswer("call-1", "resolved", {"approved": True}),), PENDING, "InterruptsNotCovered"),
        ((ResumeAnswer("call-1", "resolved", True), ResumeAnswer("call-2", "cancelled")), PENDING,
         "InvalidResumePayload"),
        ((ResumeAnswer("call-1", "resolved"), ResumeAnswer("call-2", "cancelled")), PENDING, "InvalidResumePayload"),
        ((ResumeAnswer("call-1", "resolved", {"approved": "yes"}), ResumeAnswer("call-2", "cancelled")), PENDING,
         "InvalidResumePayload"),
        ((ResumeAnswer("call-1", "resolved", {"approved": False, "reason": 5}), ResumeAnswer("call-2", "cancelled")),
         PENDING, "InvalidResumePayload"),
        ((ResumeAnswer("call-1", "resolved", {"approved": True, "editedArgs": {"amount": 9}}),
          ResumeAnswer("call-2", "cancelled")), PENDING, "InvalidResumePayload"),
    ],
)
def test_answers_that_do_not_fit_the_pause_are_refused_whole(
    answers: tuple[ResumeAnswer, ...], pending: tuple[ToolCall, ...], code: str
) -> None:
    with pytest.raises(ResumeRefused) as refused:
        decisions_of(answers, pending)
    assert refused.value.code == code and str(refused.value)


def test_the_answer_an_interrupt_asks_for_is_a_json_schema_the_payloads_fit() -> None:
    """``APPROVAL_SCHEMA`` is what the interrupts publish (``responseSchema``): the payloads taken fit it."""
    Interrupt.model_validate({"id": "c", "reason": "tool_call", "responseSchema": APPROVAL_SCHEMA})
    assert APPROVAL_SCHEMA["required"] == ["approved"] and "editedArgs" not in APPROVAL_SCHEMA["properties"]


def test_an_approval_may_edit_the_calls_arguments_checked_against_its_tools_schema() -> None:
    """AG-UI's approve-with-edits: ``editedArgs`` replace the call's arguments whole, for a tool whose edits the server
    checks (``editable``) — against its schema, as a model's arguments are, before anything is decided."""
    from agentactors import tool

    @tool(requires_approval=True)
    def transfer(amount: int) -> str:
        """Move money."""
        return "moved"

    editable = {"transfer": transfer}

    def approve(edited: Any) -> tuple[ResumeAnswer, ...]:
        return (ResumeAnswer("call-1", "resolved", {"approved": True, "editedArgs": edited}),
                ResumeAnswer("call-2", "resolved", {"approved": False, "editedArgs": "not read: it does not run"}))

    decided = decisions_of(approve({"amount": 3}), PENDING, editable)
    assert decided.decisions == {"call-1": True, "call-2": "denied by a person"}
    assert decided.edits == {"call-1": {"amount": 3}}, "a denial's edit is not read"
    for bad in ({"amount": "3"}, {}, {"amount": 3, "extra": 1}, [3], "3"):
        with pytest.raises(ResumeRefused) as refused:
            decisions_of(approve(bad), PENDING, editable)
        assert refused.value.code == "InvalidResumePayload" and "editedArgs" in str(refused.value), bad
    with pytest.raises(ResumeRefused, match="own tools") as refused:
        decisions_of(approve({"amount": 3}), PENDING)  # no tool whose edits are checked: none taken
    assert refused.value.code == "InvalidResumePayload"
    schema = approval_schema(transfer)
    Interrupt.model_validate({"id": "c", "reason": "tool_call", "responseSchema": schema})
    assert schema["required"] == ["approved"] and schema["properties"]["editedArgs"]["properties"] == {
        "amount": {"type": "integer"}}


def test_edits_put_the_persons_arguments_wherever_the_pause_holds_the_call() -> None:
    from agentactors.loop.pause import PausedRun
    from agentactors.messages import Message
    from agentactors.serve._turns import with_edits

    calls = (ToolCall("call-1", "transfer", {"amount": 500}), ToolCall("call-2", "lookup", {"city": "Oslo"}))
    state = PausedRun("run-1", (Message.user("Pay."), Message.assistant("", list(calls))), calls, (), calls[:1],
                      tool_calls=calls)
    edited = with_edits(state, {"call-1": {"amount": 50}})
    for held in (edited.messages[-1].tool_calls, edited.calls, edited.tool_calls):
        assert [(c.id, c.arguments) for c in held] == [("call-1", {"amount": 50}), ("call-2", {"city": "Oslo"})]
    assert [(c.id, c.arguments) for c in edited.pending] == [("call-1", {"amount": 50})]
    assert edited.messages[0] is state.messages[0] and state.pending[0].arguments == {"amount": 500}


# --- context: what the frontend shares with the agent for the run (CopilotKit's readables) ---------------------


def test_the_context_is_the_protocols_context_entries_rendered_plainly_for_the_run() -> None:
    context = [
        {"description": "The user's cart", "value": "2 apples, 1 pear"},
        {"description": "The open document", "value": "Title\nFirst line", "extra": "kept by AG-UI, not read"},
        {"description": "", "value": "no description"},
        {"description": "nothing", "value": ""},  # says nothing: left out
    ]
    raw = body({"id": "u", "role": "user", "content": "What is in my cart?"}, context=context)
    RunAgentInput.model_validate({**raw, "state": {}, "tools": [], "forwardedProps": {}})
    run = read_run_input(raw)
    assert run.context == (
        "Context from the application:\n"
        "- The user's cart: 2 apples, 1 pear\n"
        "- The open document: Title\n  First line\n"
        "- no description"
    )
    assert [(m.role, m.content) for m in run.messages] == [("user", "What is in my cart?")], "not a message"
    assert read_run_input(body({"role": "user", "content": "hi"})).context == ""
    assert read_run_input(body({"role": "user", "content": "hi"}, context=[])).context == ""
    # a resume's run sees the context its request carries
    resumed = read_run_input(body(resume=[{"interruptId": "c", "status": "cancelled"}], context=context[:1]))
    assert resumed.context == "Context from the application:\n- The user's cart: 2 apples, 1 pear"


@pytest.mark.parametrize(
    ("context", "said"),
    [
        ({"description": "d", "value": "v"}, "'context' must be an array"),
        (["cart"], "'context' must be an array of objects"),
        ([{"description": "cart"}], "context[0].value"),
        ([{"description": "cart", "value": {"items": 2}}], "context[0].value"),
        ([{"value": "v"}], "context[0].description"),
        ([{"description": 3, "value": "v"}], "context[0].description"),
        ([{"description": "d", "value": "v"}] * (MAX_CONTEXT_ITEMS + 1), f"at most {MAX_CONTEXT_ITEMS}"),
        ([{"description": "d", "value": "secret-" + "x" * MAX_CONTEXT_ITEM_CHARS}], "context[0]"),
        (  # each entry within its bound, all of them past the total's
            [{"description": "d", "value": "x" * (MAX_CONTEXT_ITEM_CHARS - 10)}]
            * (MAX_CONTEXT_CHARS // MAX_CONTEXT_ITEM_CHARS + 1),
            f"over {MAX_CONTEXT_CHARS} characters",
        ),
    ],
)
def test_context_of_another_shape_or_past_its_bounds_is_refused_saying_which_never_echoing_it(
    context: Any, said: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        read_run_input(body({"role": "user", "content": "hi"}, context=context))
    assert said in str(refused.value)
    assert "secret-" not in str(refused.value) and len(str(refused.value)) < 300
