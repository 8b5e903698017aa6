"""The session codec is lossless: every object it stores comes back equal, field for field."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors.loop.pause import PausedRun
from agentactors.messages import Message, Role, ToolCall, Usage
from agentactors.parts import Audio, Document, Image, Part, Text
from agentactors.sessions import codec
from agentactors.tools.results import ToolResult, ToolStatus

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x01" * 16
PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n"
WAV = b"RIFF" + b"\x24\x00\x00\x00" + b"WAVE" + b"\x00" * 40

# --- strategies ------------------------------------------------------------------------------------

text = st.text(max_size=20)
names = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=10
)
# What the tags carry beside plain JSON: tuples, bytes, and dicts that look like a tag.
tagged_values = st.recursive(
    scalars | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.sampled_from(["$bytes", "$tuple", "$dict", "$x", "a"]) | text, inner, max_size=3),
    max_leaves=10,
)
wires = st.sampled_from(["anthropic", "gemini", "openai"])
provider_data = st.none() | st.dictionaries(wires, tagged_values, max_size=2)

media: st.SearchStrategy[Part] = st.one_of(
    st.just(Image(data=PNG)),
    st.builds(lambda p: Image(url=f"https://example.com/{p}.png"), names),
    st.builds(lambda p, mt: Image(url=f"https://example.com/{p}", media_type=mt), names, st.just("image/jpeg")),
    st.builds(lambda t: Document(data=PDF, title=t), st.none() | text),
    st.builds(lambda s: Document(data=s, media_type="text/plain"), text),
    st.builds(lambda p: Document(url=f"https://example.com/{p}.pdf"), names),
    st.just(Audio(WAV)),
    st.just(Audio(b"\x00\x01", media_type="audio/mpeg")),
)
parts = st.lists(st.builds(Text, text) | media, min_size=1, max_size=4)
calls = st.builds(
    ToolCall,
    id=text,
    name=names,
    arguments=st.dictionaries(text, json_values, max_size=3),
    raw_arguments=st.none() | text,
    arguments_error=st.sampled_from([None, "unparseable", "empty"]),
    arguments_error_detail=st.none() | text,
    provider_data=provider_data,
)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role: Role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    common: dict[str, Any] = {
        "name": draw(st.none() | names),
        "reasoning": draw(text),
        "provider_data": draw(provider_data),
        "is_error": draw(st.booleans()),
    }
    if role == "assistant":
        return Message("assistant", draw(text), tool_calls=draw(st.lists(calls, max_size=2)), **common)
    call_id = draw(names) if role == "tool" else None
    if role in ("user", "tool") and draw(st.booleans()):
        return Message(role, tool_call_id=call_id, parts=draw(parts), **common)
    return Message(role, draw(text), tool_call_id=call_id, **common)


usages = st.builds(
    Usage, *(st.integers(0, 10**9) for _ in range(6)),
    **{name: st.integers(0, 10**9) for name in (
        "input_audio_tokens", "cache_audio_read_tokens", "output_audio_tokens",
        "input_image_tokens", "cache_image_read_tokens", "output_image_tokens",
    )},
)
results = st.builds(
    ToolResult,
    call_id=text,
    name=names,
    status=st.sampled_from(list(ToolStatus)),
    content=text,
    size_chars=st.integers(0, 10**6),
    duration=st.floats(0, 1e6),
    truncated=st.booleans(),
    refused=st.booleans(),
    original_chars=st.none() | st.integers(0, 10**6),
    parts=st.lists(media, max_size=2).map(tuple),
    awaiting_approval=st.booleans(),
)


@st.composite
def paused_runs(draw: st.DrawFn) -> PausedRun:
    step_calls = draw(st.lists(calls, min_size=1, max_size=3, unique_by=lambda c: c.id))
    pending = draw(
        st.lists(st.sampled_from(step_calls), min_size=1, max_size=len(step_calls), unique_by=lambda c: c.id)
    )
    return PausedRun(
        run_id=draw(st.none() | text),
        messages=tuple(draw(st.lists(messages(), max_size=3))),
        calls=tuple(step_calls),
        results=tuple(draw(st.lists(results, max_size=2))),
        pending=tuple(pending),
        reasons={c.id: draw(text) for c in pending},
        step=draw(st.integers(0, 100)),
        usage=draw(usages),
        tool_calls=tuple(draw(st.lists(calls, max_size=2))),
        answer=draw(text),
        agent=draw(st.none() | names),
        handoffs=tuple(draw(st.lists(names, max_size=2))),
        output_step=draw(st.booleans()),
    )


def _through_json(doc: Any) -> Any:
    """What a store gives back: the document written as JSON text and read again."""
    return json.loads(json.dumps(doc))


# --- round trips ----------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(messages())
def test_a_message_round_trips(message: Message) -> None:
    back = codec.message_from_json(_through_json(codec.message_to_json(message)))
    assert back == message
    assert back.parts == message.parts and back.media == message.media


@settings(max_examples=200, deadline=None)
@given(results)
def test_a_tool_result_round_trips(result: ToolResult) -> None:
    assert codec.result_from_json(_through_json(codec.result_to_json(result))) == result


@settings(max_examples=100, deadline=None)
@given(paused_runs())
def test_a_paused_run_round_trips(state: PausedRun) -> None:
    assert codec.paused_from_json(_through_json(codec.paused_to_json(state))) == state


@settings(max_examples=200, deadline=None)
@given(tagged_values)
def test_free_form_values_round_trip_with_their_tags(value: Any) -> None:
    assert codec.value_from_json(_through_json(codec.value_to_json(value))) == value


@given(usages)
def test_usage_round_trips_and_stores_only_counts(usage: Usage) -> None:
    doc = codec.usage_to_json(usage)
    assert codec.usage_from_json(_through_json(doc)) == usage
    assert all(v for v in doc.values())


# --- the codec covers every field -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "covered"),
    [
        (Message, {"role", "content", "tool_calls", "tool_call_id", "name", "reasoning", "provider_data",
                   "is_error", "_parts"}),
        (ToolCall, {"id", "name", "arguments", "raw_arguments", "arguments_error", "arguments_error_detail",
                    "provider_data"}),
        (ToolResult, {"call_id", "name", "status", "content", "size_chars", "duration", "truncated", "refused",
                      "original_chars", "parts", "awaiting_approval"}),
        (Usage, {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
                "cache_write_1h_tokens", "input_audio_tokens", "cache_audio_read_tokens", "output_audio_tokens",
                "input_image_tokens", "cache_image_read_tokens", "output_image_tokens"}),
        (Image, {"data", "url", "media_type"}),
        (Document, {"data", "url", "media_type", "title", "pages"}),  # pages: derived from the data
        (Audio, {"data", "media_type"}),
    ],
)
def test_the_codec_knows_every_field(cls: type, covered: set[str]) -> None:
    """A field added to a stored class must be added to the codec (and this list) or it would be lost."""
    assert {f.name for f in attrs.fields(cls)} == covered


def test_a_paused_runs_document_names_every_field() -> None:
    call = ToolCall("c1", "refund", {"amount": 5})
    doc = codec.paused_to_json(PausedRun("run-1", (Message.user("x"),), (call,), (), (call,)))
    assert set(doc) == {f.name for f in attrs.fields(PausedRun)}


# --- shapes and refusals --------------------------------------------------------------------------


def test_a_text_message_stores_only_what_differs_from_the_defaults() -> None:
    assert codec.message_to_json(Message.user("hi")) == {"role": "user", "content": "hi"}
    assert codec.message_to_json(Message.assistant("")) == {"role": "assistant"}
    doc = codec.message_to_json(Message.user([Text("look"), Image(data=PNG)]))
    assert doc["parts"][0] == {"type": "text", "text": "look"}
    assert doc["parts"][1]["type"] == "image" and doc["parts"][1]["media_type"] == "image/png"
    assert "content" not in doc


def test_bytes_are_base64_and_urls_stay_urls() -> None:
    doc = codec.part_to_json(Image(url="https://example.com/cat.png"))
    assert doc == {"type": "image", "url": "https://example.com/cat.png"}
    assert codec.part_to_json(Audio(b"\x00\x01", media_type="audio/mpeg"))["data"] == "AAE="


def test_a_dict_that_looks_like_a_tag_is_escaped() -> None:
    assert codec.value_to_json({"$bytes": "AAE="}) == {"$dict": {"$bytes": "AAE="}}
    assert codec.value_from_json({"$dict": {"$bytes": "AAE="}}) == {"$bytes": "AAE="}
    assert codec.value_to_json({"$a": 1, "b": 2}) == {"$a": 1, "b": 2}  # two keys: not a tag


def test_values_json_cannot_keep_are_refused() -> None:
    with pytest.raises(TypeError, match="not object"):
        codec.value_to_json({"when": object()})
    with pytest.raises(TypeError, match="keys must be str"):
        codec.value_to_json({1: "x"})
    with pytest.raises(TypeError, match="not set"):
        codec.message_to_json(Message.assistant("", [ToolCall("c", "t", {"s": {1, 2}})]))


def test_decoding_checks_what_it_builds() -> None:
    with pytest.raises(ValueError, match="role"):
        codec.message_from_json({"role": "robot"})
    with pytest.raises(ValueError, match="unknown stored part"):
        codec.part_from_json({"type": "video", "url": "https://x.y/z"})
    with pytest.raises(ValueError, match="unknown stored usage"):
        codec.usage_from_json({"tokens": 3})
    with pytest.raises(ValueError, match="media"):
        codec.result_from_json({"call_id": "c", "name": "t", "status": "ok", "content": "", "size_chars": 0,
                                "duration": 0.0, "parts": [{"type": "text", "text": "x"}]})
