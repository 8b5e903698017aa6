"""Reading a RunAgentInput: what is new in a thread (after its last answer), the user messages' ids, the state."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.serve._agui_input import InvalidInput, read_run_input


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


def test_answers_to_interrupts_are_read_as_their_ids_and_nothing_else() -> None:
    """A ``resume`` is refused whole by the app (its messages are not read: they may hold nothing new); one of
    the wrong shape is an input the app cannot serve."""
    answered = read_run_input(body(resume=[{"interruptId": "call-9", "status": "resolved", "payload": True}]))
    assert answered.resume == ("call-9",) and answered.messages == ()
    empties: tuple[list[Any] | None, ...] = (None, [])
    for empty in empties:
        plain = read_run_input(body({"role": "user", "content": "hi"}, resume=empty))
        assert plain.resume == () and [m.content for m in plain.messages] == ["hi"]
    for bad in ({"interruptId": "x"}, ["call-9"], [{"status": "resolved"}], [{"interruptId": 9}]):
        with pytest.raises(InvalidInput, match="resume"):
            read_run_input(body({"role": "user", "content": "hi"}, resume=bad))
