"""Reading a RunAgentInput: what is new in a thread (after its last answer), the user messages' ids, the state."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import Interrupt, ResumeEntry

from agentactors.messages import ToolCall
from agentactors.serve._agui_input import (
    APPROVAL_SCHEMA,
    InvalidInput,
    ResumeAnswer,
    ResumeRefused,
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
    assert decisions_of(answers, PENDING) == {"call-1": True, "call-2": "too much"}
    plain = (ResumeAnswer("call-1", "resolved", {"approved": False}), ResumeAnswer("call-2", "cancelled", "ignored"))
    decided = decisions_of(plain, PENDING)
    assert decided["call-1"] == "denied by a person" and "dismissed" in str(decided["call-2"])


@pytest.mark.parametrize(
    ("answers", "pending", "code"),
    [
        ((ResumeAnswer("call-1", "resolved", {"approved": True}),), (), "NoOpenInterrupts"),
        (tuple(ResumeAnswer(f"call-{n}", "cancelled") for n in (1, 2, 3)), PENDING, "UnknownInterrupt"),
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
