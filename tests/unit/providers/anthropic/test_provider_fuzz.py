"""Fuzzing the Anthropic decoders: whatever arrives, only a ``ProviderError`` escapes.

Arbitrary bytes go through the same httpx-sse framing the provider uses and then the stream
decoder; arbitrary JSON (and JSON shaped like the wire, to get past the first checks) goes
into the response decoder and the stream decoder.  Anything undecodable must be a transient
"malformed vendor response"; only a recognised vendor error (an ``error`` event or an
``{"type": "error", "error": {...}}`` body) may be classified otherwise.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentactors.errors import ErrorKind, MalformedResponseError, ProviderError
from agentactors.messages import LLMRequest, LLMResponse, Message, ToolSpec
from agentactors.providers.anthropic.provider import AnthropicWire
from agentactors.providers.http.provider import iter_sse
from tests.support.fuzz import FUZZ, json_values

WIRE = AnthropicWire()
REQUEST = LLMRequest(
    [Message.user("q")],
    tools=[ToolSpec("lookup", "", {"type": "object", "properties": {"w": {"type": "string"}}, "required": ["w"]})],
)


EVENT_TYPES = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
    "surprise",
]
BLOCK_TYPES = ["text", "thinking", "redacted_thinking", "tool_use", "server_tool_use", "web_search_tool_result"]
DELTA_TYPES = ["text_delta", "thinking_delta", "signature_delta", "input_json_delta", "citations_delta", "x"]


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # Mostly the valid shape (to reach deep states), sometimes any JSON value at all.
    return st.integers(0, 3).flatmap(lambda n: strategy if n else json_values)


# Wire-shaped payloads, so the fuzzer reaches the block and delta logic and not just the first check.
blocks = st.fixed_dictionaries(
    {"type": maybe(st.sampled_from(BLOCK_TYPES))},
    optional={
        "text": maybe(st.text(max_size=8)),
        "thinking": maybe(st.text(max_size=8)),
        "signature": maybe(st.text(max_size=8)),
        "id": maybe(st.text(min_size=1, max_size=6)),
        "name": maybe(st.sampled_from(["lookup", "other", ""])),
        "input": json_values,
        "data": maybe(st.text(max_size=8)),
    },
)
deltas = st.fixed_dictionaries(
    {"type": maybe(st.sampled_from(DELTA_TYPES))},
    optional={
        "text": maybe(st.text(max_size=8)),
        "thinking": maybe(st.text(max_size=8)),
        "signature": maybe(st.text(max_size=8)),
        "partial_json": maybe(st.sampled_from(["", "{", '"w": ', '"x"', "}", "[1]", "{}"])),
        "stop_reason": maybe(st.sampled_from(["end_turn", "tool_use", "max_tokens", "refusal", "new"])),
    },
)
usages = st.dictionaries(
    st.sampled_from(["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]),
    maybe(st.integers(min_value=-5, max_value=10_000)),
    max_size=4,
)
payloads = st.fixed_dictionaries(
    {"type": maybe(st.sampled_from(EVENT_TYPES))},
    optional={
        "index": maybe(st.integers(min_value=0, max_value=3)),
        "message": maybe(
            st.fixed_dictionaries({"id": json_values, "content": json_values}, optional={"usage": usages})
        ),
        "content_block": maybe(blocks),
        "delta": maybe(deltas),
        "usage": maybe(usages),
        "error": maybe(st.fixed_dictionaries({"type": maybe(st.sampled_from(["overloaded_error", "api_error"]))})),
    },
)
GOOD_START = (
    "message_start",
    {"type": "message_start", "message": {"id": "msg_f", "content": [], "usage": {"input_tokens": 3}}},
)
GOOD_STOP = ("message_stop", {"type": "message_stop"})


_MATCHING = {
    "text": [("text_delta", "text")],
    "thinking": [("thinking_delta", "thinking"), ("signature_delta", "signature")],
    "tool_use": [("input_json_delta", "partial_json")],
    "server_tool_use": [("input_json_delta", "partial_json")],
}
fragments = st.sampled_from(["", "{", '"w": ', '"x"', "}", "[1]", "{}", "\\u12"]) | st.text(max_size=6)


def matching_delta(block_type: Any) -> st.SearchStrategy[dict[str, Any]]:
    """A delta of the kind this block type takes, with a value that is usually (not always) well typed."""
    options = _MATCHING.get(block_type) if isinstance(block_type, str) else None
    if not options:
        return deltas
    return st.sampled_from(options).flatmap(
        lambda kv: maybe(fragments).map(lambda value: {"type": kv[0], kv[1]: value})
    )


@st.composite
def wire_events(draw: st.DrawFn) -> list[tuple[str, dict[str, Any]]]:
    """Mostly well-formed block scripts (start, deltas, stop) with noise events spliced in anywhere."""
    events: list[tuple[str, dict[str, Any]]] = [GOOD_START] if draw(st.integers(0, 9)) else []
    for index in range(draw(st.integers(0, 4))):
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": draw(blocks)})
        )
        block_type = events[-1][1]["content_block"].get("type")
        for d in draw(st.lists(matching_delta(block_type) | deltas, max_size=5)):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}))
        if draw(st.integers(0, 5)):
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    if draw(st.booleans()):
        events.append(("message_delta", {"type": "message_delta", "delta": draw(deltas), "usage": draw(usages)}))
    if draw(st.integers(0, 4)):
        events.append(GOOD_STOP)
    for noise in draw(st.lists(st.tuples(st.sampled_from(EVENT_TYPES), payloads), max_size=3)):
        events.insert(draw(st.integers(0, len(events))), noise)
    return events


def assert_allowed(exc: ProviderError, *, recognised_error: bool) -> None:
    if isinstance(exc, MalformedResponseError):
        assert exc.kind is ErrorKind.transient and exc.retryable
        assert "malformed vendor response" in str(exc)
    else:
        assert recognised_error, f"a non-malformed error from input that carried no vendor error: {exc!r}"


def _type_of(data: str) -> Any:
    try:
        parsed = json.loads(data)
    except ValueError:
        return None
    return parsed.get("type") if isinstance(parsed, dict) else None


def run_stream(pairs: list[tuple[str, str]]) -> LLMResponse | None:
    decoder = WIRE.stream_decoder(request=REQUEST, model="claude-fuzz", provider="anthropic")
    recognised = False
    try:
        for event, data in pairs:
            recognised = event == "error" or _type_of(data) == "error"
            decoder.feed(event, data)
        return decoder.finish()
    except ProviderError as exc:
        assert_allowed(exc, recognised_error=recognised)
        return None


@FUZZ
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_through_sse_framing_and_decoder(raw: bytes) -> None:
    run_stream(list(iter_sse(raw)))


@FUZZ
@given(st.lists(st.tuples(st.sampled_from([*EVENT_TYPES, "message"]), st.text(max_size=60)), max_size=12))
def test_arbitrary_event_text(pairs: list[tuple[str, str]]) -> None:
    run_stream(pairs)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wire_events())
def test_wire_shaped_event_sequences(events: list[tuple[str, dict[str, Any]]]) -> None:
    framed = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    pairs = list(iter_sse(framed))
    assert len(pairs) == len(events)  # the framing itself is lossless
    response = run_stream(pairs)
    if response is not None:
        for call in response.tool_calls:
            # A call is either a clean object or carries the reason it is not one.
            assert call.arguments_error in (None, "unparseable", "empty")
            if call.arguments_error == "unparseable":
                assert call.arguments == {} and call.raw_arguments is not None


def decode(body: Any) -> None:
    try:
        WIRE.decode_response(body, request=REQUEST, model="claude-fuzz", provider="anthropic")
    except ProviderError as exc:
        recognised = isinstance(body, dict) and body.get("type") == "error"
        assert_allowed(exc, recognised_error=recognised)


@FUZZ
@given(json_values)
def test_arbitrary_json_into_decode_response(body: Any) -> None:
    decode(body)


@FUZZ
@given(
    st.fixed_dictionaries(
        {"content": maybe(st.lists(maybe(blocks), max_size=5))},
        optional={
            "type": maybe(st.sampled_from(["message", "error"])),
            "stop_reason": json_values,
            "stop_sequence": json_values,
            "usage": maybe(usages),
            "id": json_values,
            "model": json_values,
            "error": json_values,
        },
    )
)
def test_message_shaped_json_into_decode_response(body: dict[str, Any]) -> None:
    decode(body)


@pytest.mark.parametrize("body", [b"", b"\xff\xfe", b"<html>502 Bad Gateway</html>", b'{"type":"error"}'])
@pytest.mark.parametrize("status", [400, 429, 500, 529])
def test_error_classification_never_fails_on_odd_bodies(body: bytes, status: int) -> None:
    err = WIRE.classify_error(status, {}, body, model="m", provider="anthropic")
    assert isinstance(err, ProviderError) and err.status == status
