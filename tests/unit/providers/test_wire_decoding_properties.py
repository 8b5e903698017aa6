"""Properties of every wire's decoders under a hostile vendor: a typed error or a well-formed answer, nothing else.

For each wire (OpenAI Chat Completions, Responses, Anthropic Messages, Gemini, Bedrock Converse) a realistic
answer — reasoning, text in pieces, a tool call — is the template, as a JSON body and as a stream of events.
Hypothesis breaks it the way a broken or hostile vendor would: a field missing, ``null``, of another JSON type,
huge, nested past any sane depth, a list item duplicated; an event dropped, repeated, moved, renamed, or a
``[DONE]`` put early.  The invariants:

* only a :class:`~agentactors.ProviderError` escapes a decoder (no ``KeyError``, ``TypeError``, ...), and a
  failure that is not a recognised vendor error is a transient :class:`~agentactors.MalformedResponseError`;
* an answer is well formed (strings where strings belong, every tool call named with object arguments);
* a stream that succeeds told the caller what its answer holds: the text and reasoning deltas add up to the
  answer's (on every wire whose answer is assembled from its deltas: not Responses, whose answer is the one
  its terminal event carries), every tool call started once and ended once, the ended ones are the answer's;
* framing does not matter: an SSE body (LF, CRLF or CR line ends, comments, ``retry:`` and ``id:`` fields,
  data split over several ``data:`` lines, a BOM) or an AWS event stream cut into pieces at arbitrary
  boundaries — down to one byte a piece — decodes to exactly what the whole body decodes to;
* a corrupt AWS event stream (a CRC wrong, a length past the buffer or short of the prelude, unknown header
  types) is a transient ``MalformedResponseError``; an exception frame is the vendor's classified error.

Example counts are bounded: the file runs in a few seconds on two cores.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import struct
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentactors.errors import ErrorKind, MalformedResponseError, ProviderError
from agentactors.messages import (
    LLMResponse,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from agentactors.providers.anthropic.provider import AnthropicWire
from agentactors.providers.bedrock import BedrockStreamDecoder, EventStreamFramer
from agentactors.providers.bedrock.provider import BedrockWire
from agentactors.providers.codec import WireCodec
from agentactors.providers.gemini.provider import GeminiWire
from agentactors.providers.http.sse import SSEReader
from agentactors.providers.openai.provider import OpenAIWire
from agentactors.providers.responses.provider import ResponsesWire

SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=SLOW)
FEW = settings(max_examples=40, deadline=None, suppress_health_check=SLOW)

# --- the templates: one realistic answer per wire, whole and streamed ---------------------------------------

ARGS = '{"city": "Oslo"}'
OPENAI_BODY: dict[str, Any] = {
    "id": "c1", "model": "gpt",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "Hello", "reasoning_content": "hm",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}],
    }}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 1}},
}


def _chat(delta: dict[str, Any], **extra: Any) -> tuple[str, Any]:
    return "message", {"choices": [{"index": 0, "delta": delta, **extra}]}


OPENAI_STREAM: list[tuple[str, Any]] = [
    ("message", {"id": "c1", "model": "gpt",
                 "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]}),
    _chat({"content": "lo", "reasoning_content": "hm"}),
    _chat({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                           "function": {"name": "get_weather", "arguments": ""}}]}),
    _chat({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
    _chat({"tool_calls": [{"index": 0, "function": {"arguments": ' "Oslo"}'}}]}),
    ("message", {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                 "usage": {"prompt_tokens": 3, "completion_tokens": 4}}),
    ("message", "[DONE]"),
]

RESP_MESSAGE: dict[str, Any] = {
    "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
    "content": [{"type": "output_text", "text": "Hello", "annotations": []}],
}
RESP_CALL: dict[str, Any] = {
    "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": ARGS,
    "status": "completed",
}
RESP_REASONING: dict[str, Any] = {
    "type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hm"}], "encrypted_content": "enc",
}
RESPONSES_BODY: dict[str, Any] = {
    "id": "resp_1", "object": "response", "model": "gpt-5", "status": "completed",
    "output": [RESP_REASONING, RESP_MESSAGE, RESP_CALL],
    "usage": {"input_tokens": 3, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 1},
              "output_tokens_details": {"reasoning_tokens": 1}},
}


def _typed(kind: str, **fields: Any) -> tuple[str, Any]:
    return kind, {"type": kind, **fields}


RESPONSES_STREAM: list[tuple[str, Any]] = [
    _typed("response.created", response={"id": "resp_1", "status": "in_progress", "output": []}),
    _typed("response.output_item.added", output_index=0, item={"type": "reasoning", "id": "rs_1", "summary": []}),
    _typed("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, summary_index=0, delta="hm"),
    _typed("response.output_item.added", output_index=1,
           item={"type": "message", "id": "msg_1", "role": "assistant", "content": []}),
    _typed("response.output_text.delta", item_id="msg_1", output_index=1, content_index=0, delta="Hel"),
    _typed("response.output_text.delta", item_id="msg_1", output_index=1, content_index=0, delta="lo"),
    _typed("response.output_item.done", output_index=1, item=RESP_MESSAGE),
    _typed("response.output_item.added", output_index=2, item={**RESP_CALL, "arguments": "", "status": "in_progress"}),
    _typed("response.function_call_arguments.delta", item_id="fc_1", output_index=2, delta='{"city":'),
    _typed("response.function_call_arguments.delta", item_id="fc_1", output_index=2, delta=' "Oslo"}'),
    _typed("response.output_item.done", output_index=2, item=RESP_CALL),
    _typed("response.completed", response=RESPONSES_BODY),
]

ANTHROPIC_BODY: dict[str, Any] = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
    "content": [{"type": "thinking", "thinking": "hm", "signature": "sig"}, {"type": "text", "text": "Hello"},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
    "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 1},
}
ANTHROPIC_STREAM: list[tuple[str, Any]] = [
    _typed("message_start", message={"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
                                     "content": [], "usage": {"input_tokens": 3, "output_tokens": 1}}),
    _typed("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}),
    _typed("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "hm"}),
    _typed("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "sig"}),
    _typed("content_block_stop", index=0),
    _typed("ping"),
    _typed("content_block_start", index=1, content_block={"type": "text", "text": ""}),
    _typed("content_block_delta", index=1, delta={"type": "text_delta", "text": "Hel"}),
    _typed("content_block_delta", index=1, delta={"type": "text_delta", "text": "lo"}),
    _typed("content_block_stop", index=1),
    _typed("content_block_start", index=2,
           content_block={"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}),
    _typed("content_block_delta", index=2, delta={"type": "input_json_delta", "partial_json": '{"city":'}),
    _typed("content_block_delta", index=2, delta={"type": "input_json_delta", "partial_json": ' "Oslo"}'}),
    _typed("content_block_stop", index=2),
    _typed("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 4}),
    _typed("message_stop"),
]

GEMINI_BODY: dict[str, Any] = {
    "candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": [
        {"text": "hm", "thought": True}, {"text": "Hello", "thoughtSignature": "c2ln"},
        {"functionCall": {"id": "v1", "name": "get_weather", "args": {"city": "Oslo"}}}]}}],
    "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4}, "modelVersion": "gemini-x", "responseId": "r",
}


def _gemini(*parts: dict[str, Any], **extra: Any) -> tuple[str, Any]:
    return "message", {"candidates": [{"content": {"role": "model", "parts": list(parts)}, **extra}]}


GEMINI_STREAM: list[tuple[str, Any]] = [
    _gemini({"text": "hm", "thought": True}),
    _gemini({"text": "Hel"}),
    _gemini({"text": "lo"}),
    ("message", {"candidates": [{"finishReason": "STOP", "content": {"role": "model", "parts": [
        {"functionCall": {"id": "v1", "name": "get_weather", "args": {"city": "Oslo"}}}]}}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4}, "modelVersion": "gemini-x"}),
]

BEDROCK_BODY: dict[str, Any] = {
    "output": {"message": {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": "hm", "signature": "sig"}}}, {"text": "Hello"},
        {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Oslo"}}}]}},
    "stopReason": "tool_use", "usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7},
}
BEDROCK_STREAM: list[tuple[str, Any]] = [
    ("messageStart", {"role": "assistant"}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hm"}}}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig"}}}),
    ("contentBlockStop", {"contentBlockIndex": 0}),
    ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "Hel"}}),
    ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "lo"}}),
    ("contentBlockStop", {"contentBlockIndex": 1}),
    ("contentBlockStart", {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "t1", "name": "get_weather"}}}),
    ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"city":'}}}),
    ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": ' "Oslo"}'}}}),
    ("contentBlockStop", {"contentBlockIndex": 2}),
    ("messageStop", {"stopReason": "tool_use"}),
    ("metadata", {"usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}, "metrics": {"latencyMs": 5}}),
]

WIRES: dict[str, tuple[WireCodec, dict[str, Any], list[tuple[str, Any]]]] = {
    "openai": (OpenAIWire(), OPENAI_BODY, OPENAI_STREAM),
    "responses": (ResponsesWire(), RESPONSES_BODY, RESPONSES_STREAM),
    "anthropic": (AnthropicWire(), ANTHROPIC_BODY, ANTHROPIC_STREAM),
    "gemini": (GeminiWire(), GEMINI_BODY, GEMINI_STREAM),
    "bedrock": (BedrockWire(), BEDROCK_BODY, BEDROCK_STREAM),
}
SSE_WIRES = ["openai", "responses", "anthropic", "gemini"]

# --- breaking them -------------------------------------------------------------------------------------------


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


DEEP = _nested(900)  # deeper than any decoder should walk; json.loads still builds it
JUNK: list[Any] = [
    None, 0, -1, 7, 2**70, -(2**70), 2.5, float("inf"), True, False, "", "x", "[DONE]", "get_weather", "call_1",
    "x" * 100_000, [], [1], [None], [{}], {}, {"k": 1}, {"a": None}, DEEP,
]


def _copy(value: Any) -> Any:
    if value is DEEP:
        return value  # shared, never walked
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if value is DEEP:
        return out
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, sub in items:
        out.extend(_paths(sub, (*prefix, key)))
    return out


@st.composite
def broken(draw: st.DrawFn, template: Any, max_edits: int = 3) -> Any:
    """``template`` with one to ``max_edits`` subtrees replaced by junk, deleted, nulled or duplicated."""
    value = _copy(template)
    for _ in range(draw(st.integers(1, max_edits))):
        paths = _paths(value)[1:]
        if not paths:
            return draw(st.sampled_from(JUNK))
        path = draw(st.sampled_from(paths))
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        how = draw(st.sampled_from(["junk", "junk", "delete", "null", "duplicate"]))
        if how == "junk":
            parent[path[-1]] = _copy(draw(st.sampled_from(JUNK)))
        elif how == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif how == "duplicate" and isinstance(parent, list):
            parent.insert(path[-1], _copy(parent[path[-1]]))
        else:
            parent[path[-1]] = None
    return value


@st.composite
def broken_stream(draw: st.DrawFn, events: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    out = list(events)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(out) - 1))
        how = draw(st.sampled_from(["payload", "payload", "payload", "drop", "repeat", "swap", "done", "rename"]))
        name, data = out[i]
        if how == "payload":
            out[i] = (name, draw(broken(data, 2)) if not isinstance(data, str) else draw(st.sampled_from(JUNK)))
        elif how == "drop" and len(out) > 1:
            del out[i]
        elif how == "repeat":
            out.insert(i, out[i])
        elif how == "swap":
            j = draw(st.integers(0, len(out) - 1))
            out[i], out[j] = out[j], out[i]
        elif how == "done":
            out.insert(i, ("message", "[DONE]"))
        else:
            out[i] = (draw(st.sampled_from(["error", "message", out[-1][0], "x"])), data)
    return out


def _data(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value)
    except (ValueError, RecursionError):
        return "null"


# --- the invariants ------------------------------------------------------------------------------------------


def check_failure(exc: ProviderError) -> None:
    """A failure is typed; one that is not a recognised vendor error is a transient malformed response."""
    assert isinstance(exc, ProviderError)
    if isinstance(exc, MalformedResponseError):
        assert exc.kind is ErrorKind.transient
    assert isinstance(exc.message, str)


def check_response(response: LLMResponse) -> None:
    assert isinstance(response, LLMResponse)
    assert isinstance(response.content, str) and isinstance(response.reasoning, str)
    assert response.raw_stop_reason is None or isinstance(response.raw_stop_reason, str)
    for call in response.tool_calls:
        assert isinstance(call.id, str) and call.id
        assert isinstance(call.name, str) and call.name
        assert isinstance(call.arguments, dict)


def check_stream(wire: str, events: list[StreamEvent], final: LLMResponse) -> None:
    """What the caller was streamed is what the answer holds (see the module docstring)."""
    check_response(final)
    if wire != "responses":
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == final.content
        assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == final.reasoning
    starts = [e.index for e in events if isinstance(e, ToolCallStart)]
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert len(set(starts)) == len(starts), f"a call started twice: {starts}"
    assert sorted(starts) == sorted(e.index for e in ends), f"started {starts}, ended {[e.index for e in ends]}"
    ended: set[int] = set()
    for event in events:
        if isinstance(event, ToolCallDelta):
            assert event.index in starts and event.index not in ended, "a fragment outside its call"
        elif isinstance(event, ToolCallEnd):
            ended.add(event.index)
    assert {e.call.id for e in ends} == {c.id for c in final.tool_calls}


def decode_body(wire: str, body: Any) -> None:
    codec = WIRES[wire][0]
    try:
        response = codec.decode_response(body, request=None, model="m", provider=wire)
    except ProviderError as exc:
        check_failure(exc)
    else:
        check_response(response)


def decode_stream(wire: str, events: list[tuple[str, str]]) -> tuple[list[StreamEvent], LLMResponse] | ProviderError:
    decoder = WIRES[wire][0].stream_decoder(request=None, model="m", provider=wire)
    out: list[StreamEvent] = []
    try:
        for name, data in events:
            out.extend(decoder.feed(name, data))
        return out, decoder.finish()
    except ProviderError as exc:
        check_failure(exc)
        return exc


# --- the properties ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", list(WIRES))
def test_the_templates_decode_to_the_same_answer_whole_and_streamed(wire: str) -> None:
    codec, body, stream = WIRES[wire]
    whole = codec.decode_response(body, request=None, model="m", provider=wire)
    result = decode_stream(wire, [(n, _data(d)) for n, d in stream])
    assert not isinstance(result, ProviderError), result
    events, streamed = result
    check_stream(wire, events, streamed)
    for answer in (whole, streamed):
        assert (answer.content, answer.reasoning) == ("Hello", "hm")
        assert [(c.name, c.arguments) for c in answer.tool_calls] == [("get_weather", {"city": "Oslo"})]


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_broken_body_is_a_typed_error_or_a_well_formed_answer(wire: str) -> None:
    @FUZZ
    @given(broken(WIRES[wire][1]))
    def run(body: Any) -> None:
        decode_body(wire, body)

    run()


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_broken_stream_is_a_typed_error_or_an_answer_the_stream_told_truly(wire: str) -> None:
    @FUZZ
    @given(broken_stream(WIRES[wire][2]))
    def run(events: list[tuple[str, Any]]) -> None:
        result = decode_stream(wire, [(n, _data(d)) for n, d in events])
        if not isinstance(result, ProviderError):
            check_stream(wire, *result)

    run()


# --- SSE framing ---------------------------------------------------------------------------------------------


def _overflow(limit_name: str, limit: int, what: str) -> Exception:
    return MalformedResponseError(f"{what} past {limit_name}={limit}", provider="p")


def sse_pairs(chunks: list[bytes], *, max_line: int = 1 << 20, max_event: int = 1 << 20) -> list[tuple[str, str]]:
    reader = SSEReader(max_line_bytes=max_line, max_event_bytes=max_event, overflow=_overflow)
    out: list[tuple[str, str]] = []
    for piece in chunks:
        out.extend(reader.feed(piece))
    out.extend(reader.close())
    return out


@st.composite
def sse_body(draw: st.DrawFn, events: list[tuple[str, str]]) -> bytes:
    """``events`` as an SSE body, every framing liberty the spec allows taken at random."""
    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    out = ["\ufeff"] if draw(st.booleans()) else []
    for name, data in events:
        if draw(st.booleans()):
            out.append(draw(st.sampled_from([": keep-alive", ":", "retry: 3000", "id: 7", "id"])) + eol)
        if name != "message" or draw(st.booleans()):
            out.append(f"event: {name}{eol}")
        space = " " if draw(st.booleans()) else ""
        lines = data.split("\n")
        if len(lines) == 1 and len(data) > 2 and draw(st.booleans()):
            cut = draw(st.integers(1, len(data) - 1))
            lines = [data[:cut], data[cut:]]  # data over two lines: joined with a "\n", which JSON reads as space
            if not _json_split_ok(data, cut):
                lines = [data]
        out.extend(f"data:{space}{line}{eol}" for line in lines)
        out.append(eol)
    return "".join(out).encode()


def _parsed(data: str) -> Any:
    """``data`` as JSON when it is (a line break where the body split it is JSON whitespace), else as it is."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return data


def _json_split_ok(data: str, cut: int) -> bool:
    try:
        return bool(json.loads(data[:cut] + "\n" + data[cut:]) == json.loads(data))
    except ValueError:
        return False


def cut(raw: bytes, points: list[int]) -> list[bytes]:
    bounds = sorted({0, len(raw), *(p % (len(raw) + 1) for p in points)})
    return [raw[a:b] for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize("wire", SSE_WIRES)
def test_an_sse_body_cut_anywhere_decodes_as_the_whole_body_does(wire: str) -> None:
    @FEW
    @given(st.data())
    def run(data: st.DataObject) -> None:
        events = data.draw(st.one_of(st.just(WIRES[wire][2]), broken_stream(WIRES[wire][2])))
        pairs = [(n, _data(d)) for n, d in events]
        raw = data.draw(sse_body(pairs))
        whole = sse_pairs([raw])
        # The framing changes nothing: the events come out as they went in (data "\n"-joined lines re-read).
        assert [(n, _parsed(d)) for n, d in whole] == [(n, _parsed(d)) for n, d in pairs if d]
        pieces = cut(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
        assert sse_pairs(pieces) == whole
        assert _outcome(wire, sse_pairs(pieces)) == _outcome(wire, whole)

    run()


def _outcome(wire: str, pairs: list[tuple[str, str]]) -> Any:
    result = decode_stream(wire, pairs)
    if isinstance(result, ProviderError):
        return type(result), result.kind
    # A call id the decoder made up (a vendor that sent none, or reused one) is fresh on every decode.
    return re.sub(r"call_[0-9a-f]{24}", "call_*", repr(result))


@pytest.mark.parametrize("wire", SSE_WIRES)
@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_an_sse_body_fed_one_byte_at_a_time_decodes_as_the_whole_body_does(wire: str, eol: str) -> None:
    raw = "".join(f"event: {n}{eol}data: {_data(d)}{eol}{eol}" for n, d in WIRES[wire][2]).encode()
    whole = sse_pairs([raw])
    assert sse_pairs([raw[i : i + 1] for i in range(len(raw))]) == whole
    result = decode_stream(wire, whole)
    assert not isinstance(result, ProviderError), result
    check_stream(wire, *result)


@pytest.mark.parametrize("wire", SSE_WIRES)
def test_a_body_whose_last_event_lacks_its_blank_line_is_a_typed_error_or_the_same_answer(wire: str) -> None:
    raw = "".join(f"event: {n}\ndata: {_data(d)}\n\n" for n, d in WIRES[wire][2]).encode()
    complete = _outcome(wire, sse_pairs([raw]))
    for trimmed in (raw[:-1], raw[:-2]):
        outcome = _outcome(wire, sse_pairs([trimmed]))
        # The spec drops an event not ended by a blank line: the stream then lacks its last event.
        assert outcome == complete or outcome == (MalformedResponseError, ErrorKind.transient), outcome


def test_done_early_or_twice_ends_the_chat_stream_at_the_first_done() -> None:
    pairs = [(n, _data(d)) for n, d in OPENAI_STREAM]
    result = decode_stream("openai", [*pairs, ("message", "[DONE]"), pairs[1]])
    assert not isinstance(result, ProviderError)
    assert result[1].content == "Hello"  # nothing after the first [DONE] belongs to the answer
    early = decode_stream("openai", [pairs[0], ("message", "[DONE]"), *pairs[1:]])
    assert not isinstance(early, ProviderError)
    events, final = early
    assert final.content == "Hel" and not final.tool_calls
    check_stream("openai", events, final)


@FUZZ
@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=6))
def test_arbitrary_bytes_frame_the_same_whole_or_cut(raw: bytes, points: list[int]) -> None:
    try:
        whole: Any = sse_pairs([raw], max_line=64, max_event=128)
    except MalformedResponseError:
        whole = "too large"
    try:
        split: Any = sse_pairs(cut(raw, points), max_line=64, max_event=128)
    except MalformedResponseError:
        split = "too large"
    assert split == whole


# --- the AWS event stream (Bedrock) ---------------------------------------------------------------------------


def _header(name: str, value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">B", len(name)) + name.encode() + struct.pack(">BH", 7, len(raw)) + raw


def es_message(
    headers: bytes,
    payload: bytes,
    *,
    total: int | None = None,
    header_length: int | None = None,
    prelude_crc: Callable[[int], int] = lambda c: c,
    message_crc: Callable[[int], int] = lambda c: c,
) -> bytes:
    """One event-stream message; every length and checksum right unless told otherwise."""
    prelude = struct.pack(">II", 16 + len(headers) + len(payload) if total is None else total,
                          len(headers) if header_length is None else header_length)
    prelude += struct.pack(">I", prelude_crc(zlib.crc32(prelude)))
    body = prelude + headers + payload
    return body + struct.pack(">I", message_crc(zlib.crc32(body)))


def es_event(name: str, payload: Any) -> bytes:
    headers = _header(":message-type", "event") + _header(":event-type", name) + _header(
        ":content-type", "application/json")
    return es_message(headers, _data(payload).encode())


def es_frames(chunks: list[bytes], max_event: int | None = None) -> list[tuple[str, str]] | ProviderError:
    framer = EventStreamFramer(provider="bedrock", model="m", max_event_bytes=max_event,
                               overflow=lambda n, lim, what: MalformedResponseError(what, provider="bedrock"))
    out: list[tuple[str, str]] = []
    try:
        for piece in chunks:
            out.extend(framer.feed(piece))
        out.extend(framer.close())
    except ProviderError as exc:
        check_failure(exc)
        return exc
    return out


def _bedrock(pairs: list[tuple[str, str]] | ProviderError) -> Any:
    if isinstance(pairs, ProviderError):
        return type(pairs), pairs.kind
    return _outcome("bedrock", pairs)


@FEW
@given(st.data())
def test_an_event_stream_cut_anywhere_decodes_as_the_whole_body_does(data: st.DataObject) -> None:
    events = data.draw(st.one_of(st.just(BEDROCK_STREAM), broken_stream(BEDROCK_STREAM)))
    raw = b"".join(es_event(n, d) for n, d in events)
    whole = es_frames([raw])
    pieces = cut(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=10)))
    assert es_frames(pieces) == whole if not isinstance(whole, ProviderError) else isinstance(es_frames(pieces),
                                                                                              ProviderError)
    assert _bedrock(es_frames(pieces)) == _bedrock(whole)


def test_an_event_stream_fed_one_byte_at_a_time_gives_the_answer() -> None:
    raw = b"".join(es_event(n, d) for n, d in BEDROCK_STREAM)
    pairs = es_frames([raw[i : i + 1] for i in range(len(raw))])
    assert not isinstance(pairs, ProviderError)
    result = decode_stream("bedrock", pairs)
    assert not isinstance(result, ProviderError)
    check_stream("bedrock", *result)
    assert result[1].content == "Hello"


GOOD = es_event("messageStart", {"role": "assistant"})
HEADERS = _header(":message-type", "event") + _header(":event-type", "messageStart")
CORRUPT_FRAMES = {
    "a wrong prelude CRC": es_message(HEADERS, b"{}", prelude_crc=lambda c: c ^ 1),
    "a wrong message CRC": es_message(HEADERS, b"{}", message_crc=lambda c: c ^ 1),
    "a total length past the buffer": es_message(HEADERS, b"{}", total=10_000),
    "a total length past botocore's bound": es_message(HEADERS, b"{}", total=2**32 - 1),
    "a total length short of the prelude": es_message(HEADERS, b"{}", total=4),
    "a headers length past the message": es_message(HEADERS, b"{}", header_length=5_000),
    "a header of an unknown type": es_message(b"\x01x\x63abc", b"{}"),
    "a header cut in its name": es_message(b"\x10abc", b"{}"),
    "a message cut short": GOOD[:-3],
    "a prelude alone": GOOD[:12],
}


@pytest.mark.parametrize("case", list(CORRUPT_FRAMES))
def test_a_corrupt_event_stream_is_a_transient_malformed_response_whole_or_byte_by_byte(case: str) -> None:
    raw = GOOD + CORRUPT_FRAMES[case]
    for pieces in ([raw], [raw[i : i + 1] for i in range(len(raw))]):
        result = es_frames(pieces)
        assert isinstance(result, MalformedResponseError), (case, result)
        assert result.kind is ErrorKind.transient


def test_unknown_headers_and_unknown_events_are_skipped_not_fatal() -> None:
    odd = es_message(_header(":message-type", "event") + _header(":event-type", "somethingNew")
                     + _header("x-vendor-extra", "v") + b"\x05x-int\x04\x00\x00\x00\x07", b'{"k": 1}')
    raw = b"".join(es_event(n, d) for n, d in BEDROCK_STREAM[:1]) + odd + b"".join(
        es_event(n, d) for n, d in BEDROCK_STREAM[1:])
    pairs = es_frames([raw])
    assert not isinstance(pairs, ProviderError)
    result = decode_stream("bedrock", pairs)
    assert not isinstance(result, ProviderError)
    assert result[1].content == "Hello"


@pytest.mark.parametrize(
    ("headers", "kind"),
    [
        ({":message-type": "exception", ":exception-type": "throttlingException"}, ErrorKind.transient),
        ({":message-type": "exception", ":exception-type": "validationException"}, ErrorKind.request),
        ({":message-type": "exception", ":exception-type": "modelStreamErrorException"}, ErrorKind.transient),
        ({":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"}, ErrorKind.transient),
    ],
)
def test_an_exception_frame_mid_stream_is_the_vendors_classified_error(
    headers: dict[str, str], kind: ErrorKind
) -> None:
    frame = es_message(b"".join(_header(k, v) for k, v in headers.items()), b'{"message": "no"}')
    raw = b"".join(es_event(n, d) for n, d in BEDROCK_STREAM[:5]) + frame + b"".join(
        es_event(n, d) for n, d in BEDROCK_STREAM[5:])
    pairs = es_frames([raw])
    assert not isinstance(pairs, ProviderError)
    decoder = BedrockStreamDecoder(request=None, model="m", provider="bedrock")
    with pytest.raises(ProviderError) as caught:
        for name, data in pairs:
            decoder.feed(name, data)
    assert caught.value.kind is kind and not isinstance(caught.value, MalformedResponseError)


# --- what these properties found (each failed before its fix) ------------------------------------------------


@pytest.mark.parametrize("junk", [[], {}, [1], {"k": 1}])
@pytest.mark.parametrize("where", ["added", "delta", "done"])
def test_a_responses_output_index_that_is_not_hashable_is_a_malformed_response(junk: Any, where: str) -> None:
    events = copy.deepcopy(RESPONSES_STREAM)
    position = {"added": 7, "delta": 8, "done": 10}[where]
    events[position][1]["output_index"] = junk
    if where == "added":
        events[position][1]["item"]["id"] = junk  # no key at all to find it by
    result = decode_stream("responses", [(n, _data(d)) for n, d in events])
    if not isinstance(result, ProviderError):
        check_stream("responses", *result)


@pytest.mark.parametrize("summary", [2.5, 7, True, "text"])
def test_a_responses_reasoning_summary_that_is_not_a_list_reads_as_none(summary: Any) -> None:
    body = copy.deepcopy(RESPONSES_BODY)
    body["output"][0]["summary"] = summary
    response = WIRES["responses"][0].decode_response(body, request=None, model="m", provider="responses")
    assert (response.content, response.reasoning) == ("Hello", "")


def test_a_responses_function_call_announced_twice_starts_once() -> None:
    events = copy.deepcopy(RESPONSES_STREAM)
    events.insert(8, events[7])
    result = decode_stream("responses", [(n, _data(d)) for n, d in events])
    assert not isinstance(result, ProviderError), result
    check_stream("responses", *result)
    assert sum(isinstance(e, ToolCallStart) for e in result[0]) == 1


def test_a_responses_function_call_missing_from_the_final_answer_is_a_malformed_response() -> None:
    events = copy.deepcopy(RESPONSES_STREAM)
    events[-1][1]["response"]["output"] = [RESP_REASONING, RESP_MESSAGE]  # the streamed call is not in the answer
    result = decode_stream("responses", [(n, _data(d)) for n, d in events])
    assert isinstance(result, MalformedResponseError)
    assert "missing from the final response" in result.message


def test_two_function_calls_at_one_responses_output_index_are_a_malformed_response() -> None:
    events = copy.deepcopy(RESPONSES_STREAM)
    other = {**RESP_CALL, "id": "fc_2", "call_id": "call_2", "arguments": ""}
    events.insert(8, ("response.output_item.added", {"type": "response.output_item.added", "output_index": 2,
                                                      "item": other}))
    assert isinstance(decode_stream("responses", [(n, _data(d)) for n, d in events]), MalformedResponseError)


def test_bedrock_blocks_out_of_index_order_keep_the_streamed_order_in_the_answer() -> None:
    events = copy.deepcopy(BEDROCK_STREAM)
    events[4][1]["contentBlockIndex"] = 7  # "Hel" under a later index than "lo"'s
    result = decode_stream("bedrock", [(n, _data(d)) for n, d in events])
    assert not isinstance(result, ProviderError), result
    check_stream("bedrock", *result)
    assert result[1].content == "Hello"


def test_a_responses_call_id_announced_at_two_positions_ends_every_call_it_started() -> None:
    events = copy.deepcopy(RESPONSES_STREAM)
    stray = copy.deepcopy(events[7])
    stray[1]["output_index"] = 9
    stray[1]["item"]["id"] = "fc_9"
    events.insert(7, stray)  # the same call_id first at another position, never finished there
    result = decode_stream("responses", [(n, _data(d)) for n, d in events])
    if not isinstance(result, ProviderError):
        check_stream("responses", *result)
    else:
        assert isinstance(result, MalformedResponseError)
