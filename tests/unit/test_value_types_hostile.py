"""The value types users build requests from, given what they should not be: refused where built, clearly.

Every value that builds must be sendable, storable in a journal and loadable again (the sessions' lossless
codec), and its text forms (``repr``, :func:`~agentactors.parts.describe`, errors) must hold no payload and no
credential.  What cannot be all that is refused at construction with a ``TypeError`` / ``ValueError`` naming
the field — not later, deep in a wire's encoder or at a journal's commit.  Pure and synchronous: no event loop.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agentactors import (
    Audio,
    Document,
    Image,
    LLMRequest,
    LLMResponse,
    Message,
    ModelSettings,
    StopReason,
    Text,
    ToolCall,
    ToolSpec,
)
from agentactors.journal.codec import response_from_json, response_to_json
from agentactors.parts import describe
from agentactors.providers.anthropic.models import check_parts as anthropic_check_parts
from agentactors.providers.responses.models import check_parts as responses_check_parts
from agentactors.sessions.codec import (
    call_from_json,
    call_to_json,
    message_from_json,
    message_to_json,
    part_from_json,
    part_to_json,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x01" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\x02" * 64
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 40


# --- LLMResponse ------------------------------------------------------------------------------------------


def test_a_response_given_its_stop_reason_as_a_string_holds_the_enum_and_journals() -> None:
    # A custom provider writing stop_reason="tool_use" got a response whose journal record raised
    # AttributeError ('str' object has no attribute 'value') at commit.
    response = LLMResponse("", (ToolCall("c1", "add", {"a": 1}),), "tool_use")  # type: ignore[arg-type]
    assert response.stop_reason is StopReason.tool_use
    assert response_from_json(response_to_json(response)) == response
    with pytest.raises(ValueError, match="stop_reason"):
        LLMResponse("x", stop_reason="finished")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"content": None}, "content must be a str"),
        ({"content": b"x"}, "content must be a str"),
        ({"reasoning": None}, "reasoning must be a str"),
        ({"usage": None}, "usage must be a Usage"),
        ({"tool_calls": [{"id": "c1", "name": "add"}]}, "tool_calls must hold ToolCall"),
        ({"model": 5}, "model must be a str"),
        ({"provider": 5}, "provider must be a str"),
        ({"raw_stop_reason": 1}, "raw_stop_reason must be a str"),
        ({"response_id": 7}, "response_id must be a str"),
    ],
)
def test_a_response_refuses_fields_no_journal_or_conversation_could_carry(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(TypeError, match=match):
        LLMResponse(**kwargs)


# --- Message ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"role": "user", "content": "x", "name": 3}, "name must be a str"),
        ({"role": "tool", "content": "x", "tool_call_id": 5}, "tool_call_id must be a str"),
        ({"role": "assistant", "content": "x", "reasoning": None}, "reasoning must be a str"),
        ({"role": "tool", "content": "x", "tool_call_id": "c1", "is_error": "yes"}, "is_error must be a bool"),
        ({"role": {"role": "user"}, "content": "x"}, "role must be one of"),
        ({"role": "user", "content": "x", "provider_data": {1: "x"}}, "provider_data"),
    ],
)
def test_a_message_refuses_fields_a_wire_or_a_journal_would_get_wrong(kwargs: dict[str, Any], match: str) -> None:
    # Each built before, and came back from the journal different (reasoning None -> "", "yes" -> True), or
    # went onto a wire as a number where the vendor takes a string.
    with pytest.raises(TypeError, match=match):
        Message(**kwargs)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Message.user(None), "not None"),  # type: ignore[arg-type]  # was an empty user message, silently
        (lambda: Message.tool("c1", None), "not None"),  # type: ignore[arg-type]  # an empty tool result, silently
        (lambda: Message.user(5), "not int"),  # type: ignore[arg-type]  # was "'int' object is not iterable"
        (lambda: Message.user({"role": "user", "content": "hi"}), "not dict"),  # type: ignore[dict-item]
        (lambda: Message.user(b"hi"), "not bytes"),  # type: ignore[arg-type]
        (lambda: Message.tool(5, "x"), "tool_call_id must be a str"),  # type: ignore[arg-type]
    ],
)
def test_the_message_factories_refuse_what_is_not_text_or_parts(build: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        build()


def test_every_message_that_builds_comes_back_from_the_journal_equal() -> None:
    messages = [
        Message("user", "x", name="ann"),
        Message.tool("c1", "3", "add", is_error=True),
        Message.assistant("", [ToolCall("c1", "add", {"a": 1})], reasoning="r", provider_data={"anthropic": {}}),
        Message.user([Text("look"), Image(data=PNG), Document(url="https://example.com/r.pdf")]),
    ]
    for message in messages:
        assert message_from_json(message_to_json(message)) == message


# --- ToolCall ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"raw_arguments": 5}, TypeError, "raw_arguments must be a str"),  # was AttributeError in arguments_json
        ({"arguments_error_detail": 5}, TypeError, "arguments_error_detail must be a str"),
        ({"arguments": {1: 2}}, TypeError, "argument names must be str"),  # the journal refused it at commit
        ({"provider_data": {1: {}}}, TypeError, "provider_data"),
    ],
)
def test_a_tool_call_refuses_what_no_wire_or_journal_can_carry(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        ToolCall("c1", "add", **kwargs)


def test_a_tool_call_that_builds_is_stored_and_loaded_equal() -> None:
    calls = [
        ToolCall("c1", "add", {"a": 1, "b": [1, 2], "c": {"d": None}}),
        ToolCall.from_raw("c2", "add", '{"a": 1'),
        ToolCall("c3", "add", {}, provider_data={"gemini": {"thought_signature": "s"}}),
    ]
    for call in calls:
        assert call_from_json(call_to_json(call)) == call


# --- LLMRequest -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        # NaN reached the body encoder (ValueError: Out of range float values are not JSON compliant)
        ({"temperature": float("nan")}, ValueError, "temperature must be finite"),
        ({"temperature": float("inf")}, ValueError, "temperature must be finite"),
        ({"temperature": -1.0}, ValueError, "temperature must be >= 0"),
        ({"temperature": "0.5"}, TypeError, "temperature must be a number"),  # sent as a JSON string
        ({"temperature": True}, TypeError, "temperature must be a number"),
        ({"max_tokens": True}, TypeError, "max_tokens must be an int"),  # one token
        ({"max_tokens": 1.5}, TypeError, "max_tokens must be an int"),
        ({"max_tokens": "5"}, TypeError, "max_tokens must be an int"),  # was "'<=' not supported"
        ({"stop": [""]}, ValueError, "stop sequences must be non-empty"),
        ({"stop": [5]}, ValueError, "stop sequences must be non-empty"),
        ({"model": 5}, TypeError, "model must be a str"),
        ({"vendor_options": {"openai": 5}}, TypeError, "vendor_options is keyed by wire"),  # silently ignored
        ({"tools": [{"name": "add"}]}, TypeError, "tools must hold ToolSpec"),  # was AttributeError
    ],
)
def test_a_request_refuses_settings_no_wire_can_send(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        LLMRequest([Message.user("q")], **kwargs)


def test_a_request_keeps_its_lenient_temperature_ceiling_and_names_a_lone_message() -> None:
    # A compatible server may take a temperature above 2: LLMRequest leaves the ceiling to the wire.
    assert LLMRequest([Message.user("q")], temperature=5.0).temperature == 5.0
    # None is ModelSettings' "unset" for stop: no stop sequences (was "'NoneType' object is not iterable").
    assert LLMRequest([Message.user("q")], stop=None).stop == ()
    with pytest.raises(TypeError, match="a sequence of Message"):
        LLMRequest(Message.user("q"))  # type: ignore[arg-type]


def test_a_tool_spec_description_is_text() -> None:
    with pytest.raises(TypeError, match="description must be a str"):
        ToolSpec("add", None)  # type: ignore[arg-type]


# --- parts ------------------------------------------------------------------------------------------------


def test_a_url_document_with_media_type_none_is_a_pdf_on_every_wire_and_in_the_journal() -> None:
    # Document(url=..., media_type=None) kept None in a str field: Anthropic's and Responses' checks raised
    # AttributeError ('NoneType' object has no attribute 'startswith'), and the journal loaded it as a PDF.
    document = Document(url="https://example.com/r.pdf", media_type=None)  # type: ignore[arg-type]
    assert document == Document(url="https://example.com/r.pdf")
    assert part_from_json(part_to_json(document)) == document
    message = [Message.user([Text("read"), document])]
    anthropic_check_parts(message, "claude-sonnet-4-5")
    responses_check_parts(message, "gpt-5", official=True)


def test_a_urls_userinfo_is_a_credential_and_never_shown() -> None:
    image = Image(url="https://alice:s3cr3t@bucket.example.com/cat.png")
    for text in (repr(image), describe(image), repr(Message.user([Text("q"), image]))):
        assert "s3cr3t" not in text and "alice" not in text
    assert "https://bucket.example.com/cat.png" in repr(image)
    with pytest.raises(ValueError) as info:
        Image(url="ftp://alice:s3cr3t@example.com/cat.png")
    assert "s3cr3t" not in str(info.value)


def test_a_url_given_as_bytes_or_holding_whitespace_is_refused_clearly() -> None:
    with pytest.raises(TypeError, match="url must be a str"):
        Image(url=b"https://example.com/a.png")  # type: ignore[arg-type]
    # urlsplit strips tabs and newlines before the check, but the raw string went to the vendor.
    for url in ("https://example.com/a\nb.png", " https://example.com/a.png", "ht\ttps://example.com/a.png",
                "https://example.com/a b.png"):
        with pytest.raises(ValueError, match="whitespace or control"):
            Image(url=url)


def test_an_image_or_audio_without_bytes_is_refused() -> None:
    with pytest.raises(ValueError, match="no bytes"):
        Image(data=b"", media_type="image/png")
    with pytest.raises(ValueError, match="no bytes"):
        Image(url="data:image/png;base64,")
    with pytest.raises(ValueError, match="no bytes"):
        Audio(b"", media_type="audio/wav")
    assert Document(data="", media_type="text/plain").text == ""  # an empty text is still a text


def test_an_image_whose_bytes_contradict_its_media_type_is_refused() -> None:
    # Anthropic answers 400 "image does not match the provided media type" — after the request was sent.
    with pytest.raises(ValueError, match="bytes are image/jpeg, not image/png"):
        Image(data=JPEG, media_type="image/png")
    with pytest.raises(ValueError, match="bytes are image/jpeg, not image/png"):
        Image(url="data:image/png;base64," + base64.b64encode(JPEG).decode())
    # Types the bytes cannot tell, and the HEIF family, are taken as given.
    assert Image(data=b"\x89PNG-ish", media_type="image/png").media_type == "image/png"
    assert Image(data=b"\0\0\0\x18ftypheic\0\0\0\0", media_type="image/heif").media_type == "image/heif"
    assert Image(data=JPEG, media_type="image/jpg").media_type == "image/jpeg"


# --- ModelSettings ----------------------------------------------------------------------------------------


def test_merging_settings_with_an_empty_extra_keeps_the_others_extra() -> None:
    # An empty extra from the run replaced the agent's whole extra: extra merges wire by wire, key by key.
    agent = ModelSettings(extra={"anthropic": {"top_k": 5}})
    merged = agent.merge(ModelSettings(temperature=0.5, extra={}))
    assert merged.extra == {"anthropic": {"top_k": 5}} and merged.temperature == 0.5
    assert ModelSettings(extra={}).merge(agent).extra == {"anthropic": {"top_k": 5}}
