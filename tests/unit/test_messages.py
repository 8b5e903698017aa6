from __future__ import annotations

from typing import Any

import attrs
import pytest

from agentactors import LLMRequest, LLMResponse, Message, StopReason, ToolCall, ToolChoice, ToolSpec, Usage
from agentactors.messages import parse_arguments, response_of, text_message

_CALL = ToolCall("c1", "add", {"a": 1})
_TEXT_MESSAGES = [
    ("user", "hello", (), None, None, "", None, False),
    ("system", "be brief", (), None, None, "", None, False),
    ("assistant", "", (_CALL,), None, None, "adding", {"anthropic": {"signature": "s"}}, False),
    ("assistant", "The answer is 3.", (), None, None, "", None, False),
    ("tool", "3", (), "c1", "add", "", None, False),
    ("tool", "Error: no", (), "c1", None, "", None, True),
]


@pytest.mark.parametrize("fields", _TEXT_MESSAGES)
def test_text_message_is_the_constructors_message_field_by_field(fields: tuple[Any, ...]) -> None:
    # The loop's messages are set slot by slot (text_message): every field must be the constructor's.
    fast, built = text_message(*fields), Message(*fields)
    assert fast == built
    assert attrs.asdict(fast, recurse=False) == attrs.asdict(built, recurse=False)
    assert fast.parts == built.parts and fast.media == ()
    if fields[6] is not None:  # provider data is copied, as the constructor's converter copies it
        assert fast.provider_data == fields[6] and fast.provider_data is not fields[6]


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (("tool", "x", (), None, None, "", None, False), ValueError),  # a tool message needs a call id
        (("tool", "x", (), "", None, "", None, False), ValueError),
        (("user", "x", (), "c1", None, "", None, False), ValueError),
        (("wizard", "x", (), None, None, "", None, False), ValueError),
        (("user", 3, (), None, None, "", None, False), TypeError),
        (("user", "x", (_CALL,), None, None, "", None, False), ValueError),
        (("assistant", "", ("not a call",), None, None, "", None, False), TypeError),
    ],
)
def test_text_message_refuses_what_the_constructor_refuses(fields: tuple[Any, ...], error: type[Exception]) -> None:
    with pytest.raises(error):
        Message(*fields)
    with pytest.raises(error):
        text_message(*fields)


@pytest.mark.parametrize(
    "fields",
    [
        ("The answer.", (), StopReason.end_turn, Usage(3, 1), "m-1", "scripted"),
        ("", (_CALL,), StopReason.tool_use, Usage(), None, None),
        ("", [_CALL], StopReason.tool_use, Usage(), "m", None),  # a list of calls becomes a tuple, as by the converter
    ],
)
def test_response_of_is_the_constructors_response_field_by_field(fields: tuple[Any, ...]) -> None:
    fast, built = response_of(*fields), LLMResponse(*fields)
    assert fast == built
    assert attrs.asdict(fast, recurse=False) == attrs.asdict(built, recurse=False)


def test_message_constructors_and_roles() -> None:
    assert Message.system("s").role == "system"
    assert Message.user("u").content == "u"
    call = ToolCall("c1", "add", {"a": 1})
    a = Message.assistant("", [call])
    assert a.role == "assistant" and a.tool_calls == (call,)
    t = Message.tool("c1", "3", name="add")
    assert (t.role, t.tool_call_id, t.name, t.content) == ("tool", "c1", "add", "3")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"role": "tool", "content": "x"}, ValueError),  # a tool message needs a call id
        ({"role": "user", "content": "x", "tool_call_id": "c1"}, ValueError),
        ({"role": "wizard", "content": "x"}, ValueError),
        ({"role": "user", "content": 3}, TypeError),
        ({"role": "user", "content": "x", "tool_calls": (ToolCall("c", "t"),)}, ValueError),
        ({"role": "assistant", "content": "", "tool_calls": ("not a call",)}, TypeError),
    ],
)
def test_message_validation(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        Message(**kwargs)  # type: ignore[arg-type]


def test_messages_are_frozen_and_slotted() -> None:
    m = Message.user("hi")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        m.content = "x"  # type: ignore[misc]
    assert not hasattr(m, "__dict__")


def test_tool_choice_modes_and_validation() -> None:
    assert ToolChoice.auto().mode == "auto" and not ToolChoice.auto().forced
    assert ToolChoice.none().mode == "none"
    assert ToolChoice.required().forced
    t = ToolChoice.tool("add")
    assert (t.mode, t.name, t.forced) == ("tool", "add", True)
    with pytest.raises(ValueError):
        ToolChoice("tool")  # needs a name
    with pytest.raises(ValueError):
        ToolChoice.tool("")
    with pytest.raises(ValueError):
        ToolChoice("auto", "add")
    with pytest.raises(ValueError):
        ToolChoice("sometimes")  # type: ignore[arg-type]


def test_tool_spec_validation() -> None:
    spec = ToolSpec("add", "adds", {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
    assert spec.required == ("a",)
    with pytest.raises(ValueError):
        ToolSpec("has space", "", {})
    with pytest.raises(ValueError):
        ToolSpec("x" * 65, "", {})
    with pytest.raises(ValueError):
        ToolSpec("ok", "", {"type": "array"})


def test_tool_call_keeps_raw_and_marks_unparseable() -> None:
    ok = ToolCall.from_raw("c1", "add", '{"a": 1}')
    assert ok.arguments == {"a": 1} and ok.raw_arguments == '{"a": 1}' and ok.arguments_error is None
    cut = ToolCall.from_raw("c2", "add", '{"a": 1, "b"')
    assert cut.arguments == {} and cut.arguments_error == "unparseable" and cut.raw_arguments == '{"a": 1, "b"'
    not_object = ToolCall.from_raw("c3", "add", "[1, 2]")
    assert not_object.arguments_error == "unparseable"
    # Empty raw arguments for a schema with no required properties parse as {} (no error) ...
    assert ToolCall.from_raw("c4", "now", "").arguments_error is None
    # ... and are marked when the schema requires something.
    assert ToolCall.from_raw("c5", "add", "", required=True).arguments_error == "empty"
    with pytest.raises(ValueError):
        ToolCall("c6", "add", arguments_error="weird")
    with pytest.raises(ValueError):
        ToolCall("c7", "")


def test_parse_arguments() -> None:
    assert parse_arguments('{"x": [1]}') == ({"x": [1]}, None)
    assert parse_arguments("   ") == ({}, None)
    assert parse_arguments("   ", required=True) == ({}, "empty")
    assert parse_arguments("nope") == ({}, "unparseable")


def test_request_validation() -> None:
    spec = ToolSpec("add", "", {"type": "object", "properties": {}})
    with pytest.raises(ValueError):
        LLMRequest([])
    with pytest.raises(TypeError):
        LLMRequest(["hi"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        LLMRequest([Message.user("x")], tool_choice=ToolChoice.required())  # forced with no tools
    with pytest.raises(ValueError):
        LLMRequest([Message.user("x")], tools=[spec], tool_choice=ToolChoice.tool("mul"))
    with pytest.raises(ValueError):
        LLMRequest([Message.user("x")], tools=[spec, spec])
    with pytest.raises(ValueError):
        LLMRequest([Message.user("x")], max_tokens=0)
    req = LLMRequest([Message.user("x")], tools=[spec], tool_choice=ToolChoice.tool("add"), stop="END")
    assert req.stop == ("END",)  # a bare string is one stop sequence
    assert req.with_model("m").model == "m" and req.model is None
    assert LLMRequest([Message.user("x")], vendor_options={"openai": {"seed": 1}}).options_for("openai") == {"seed": 1}


def test_response_and_usage() -> None:
    u = Usage(1, 2, 3, 4, 5) + Usage(10, 20, 30, 40, 50)
    assert u == Usage(11, 22, 33, 44, 55) and u.total_tokens == 33
    call = ToolCall("c1", "add", {"a": 1})
    r = LLMResponse("", (call,), StopReason.tool_use, provider_data={"anthropic": {"blocks": [{"type": "thinking"}]}})
    msg = r.to_message()
    assert msg.tool_calls == (call,) and msg.provider_data == {"anthropic": {"blocks": [{"type": "thinking"}]}}
    assert StopReason("content_filter") is StopReason.content_filter


def test_opaque_provider_data_is_carried_untouched() -> None:
    blob = {"gemini": {"thought_signature": "abc+/="}}
    call = ToolCall("c1", "t", {}, provider_data=blob)
    msg = Message.assistant("", [call], provider_data={"anthropic": {"blocks": [{"signature": "s"}]}})
    assert msg.tool_calls[0].provider_data == blob
