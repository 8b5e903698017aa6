"""A Chat Completions body read into a run's conversation and settings, and every way it can be refused."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.messages import Message
from agentactors.serve._openai_input import BadRequest, read_chat_request


def body(messages: list[Any], **fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": messages, **fields}


def test_system_and_developer_messages_become_one_leading_system_message() -> None:
    request = read_chat_request(body([
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "hi"},
        {"role": "developer", "content": [{"type": "text", "text": "Use metric."}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ]))
    roles = [m.role for m in request.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    assert request.messages[0] == Message.system("Be terse.\n\nUse metric.")
    assert request.messages[2].tool_calls[0].arguments == {"x": 1}
    assert request.messages[3].tool_call_id == "c1" and request.messages[3].content == "42"


def test_sampling_fields_become_the_runs_settings() -> None:
    request = read_chat_request(body([{"role": "user", "content": "x"}], temperature=0.2, max_tokens=50,
                                     stop="END", stream=True, stream_options={"include_usage": True}))
    assert request.settings is not None
    assert (request.settings.temperature, request.settings.max_tokens, request.settings.stop) == (0.2, 50, ("END",))
    assert request.stream and request.include_usage
    assert read_chat_request(body([{"role": "user", "content": "x"}])).settings is None


@pytest.mark.parametrize(
    ("given", "param"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, "model"),
        (body([]), "messages"),
        (body("hi"), "messages"),  # type: ignore[arg-type]
        (body([{"role": "system", "content": "only a system prompt"}]), "messages"),
        (body([{"role": "user", "content": 3}]), "messages[0].content"),
        (body([{"role": "user", "content": [{"type": "audio"}]}]), "messages[0].content[0]"),
        (body([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]}]),
         "messages[0].content[0].image_url"),
        (body([{"role": "tool", "content": "x"}]), "messages[0].tool_call_id"),
        (body([{"role": "function", "content": "x"}]), "messages[0].role"),
        (body([{"role": "user", "content": "x"}], temperature="hot"), "temperature"),
        (body([{"role": "user", "content": "x"}], max_tokens=0), "max_tokens"),  # named as the client sent it
        (body([{"role": "user", "content": "x"}], stream="yes"), "stream"),
    ],
)
def test_a_body_of_the_wrong_shape_names_the_param_at_fault(given: dict[str, Any], param: str) -> None:
    with pytest.raises(BadRequest) as caught:
        read_chat_request(given)
    assert caught.value.param == param


def test_the_turns_new_messages_are_those_after_the_last_answer() -> None:
    from agentactors.serve._openai_input import read_chat_request

    request = read_chat_request({"model": "m", "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "one"},
        {"role": "assistant", "content": "answer"}, {"role": "user", "content": "two"}]})
    assert [(m.role, m.content) for m in request.new] == [("user", "two")]
    first = read_chat_request({"model": "m", "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "one"}]})
    assert [(m.role, m.content) for m in first.new] == [("system", "Be brief."), ("user", "one")]
    done = read_chat_request({"model": "m", "messages": [
        {"role": "user", "content": "one"}, {"role": "assistant", "content": "answer"}]})
    assert done.new == ()


def test_each_sampling_field_is_a_setting_named_by_the_field_that_set_it() -> None:
    user = [{"role": "user", "content": "x"}]
    request = read_chat_request(body(user, reasoning_effort="high", seed=3, max_completion_tokens=9, stop=[]))
    assert request.settings is not None
    assert (request.settings.reasoning_effort, request.settings.seed, request.settings.max_tokens) == ("high", 3, 9)
    assert request.settings.stop is None, "an empty stop list sets nothing: the agent's stop sequences stay"
    assert request.field_of("max_tokens") == "max_completion_tokens" and request.field_of("seed") == "seed"
    assert request.field_of("temperature") is None, "a setting the request left alone is the agent's"
    assert read_chat_request(body(user, max_tokens=9)).field_of("max_tokens") == "max_tokens"


def test_an_unknown_field_is_refused_unless_ignored_and_never_echoed_whole() -> None:
    user = [{"role": "user", "content": "x"}]
    with pytest.raises(BadRequest) as caught:
        read_chat_request(body(user, **{"k" * 10_000: 1}))
    assert caught.value.code == "unknown_parameter" and len(caught.value.message) < 300
    assert read_chat_request(body(user, top_k=3), ignored_fields=frozenset({"top_k"})).settings is None


def test_an_assistant_refusal_sent_back_in_the_history_is_read_as_its_text() -> None:
    # The official SDK's message, as a client echoes it back: a refusal is the field `refusal` with no content,
    # or a content part of type "refusal" — both what OpenAI's API takes in a request's history.
    request = read_chat_request(body([
        {"role": "user", "content": "How do I pick a lock?"},
        {"role": "assistant", "content": None, "refusal": "I can't help with that.", "annotations": [],
         "audio": None, "function_call": None, "tool_calls": None},
        {"role": "user", "content": "And this?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Partly:"},
                                          {"type": "refusal", "refusal": "not that part."}]},
        {"role": "user", "content": "ok"},
    ]))
    assert [m.content for m in request.messages if m.role == "assistant"] == [
        "I can't help with that.", "Partly:\nnot that part."
    ]
    with pytest.raises(BadRequest) as refused:
        read_chat_request(body([{"role": "user", "content": "x"},
                                {"role": "assistant", "content": [{"type": "refusal", "refusal": 3}]},
                                {"role": "user", "content": "y"}]))
    assert refused.value.param == "messages[1].content[0]"
