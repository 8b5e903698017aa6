"""Fuzzing the OpenAI-wire decoders: whatever arrives, only a ``ProviderError`` escapes.

Arbitrary bytes go through the same httpx-sse framing the provider uses (and, in
one property, through ``OpenAIProvider`` itself over ``httpx.MockTransport``),
then the stream decoder; arbitrary JSON and JSON shaped like the wire (to get
past the first checks) go into the response decoder and the stream decoder.
Anything undecodable must be a transient "malformed vendor response"; only a
recognised vendor error (an ``{"error": ...}`` body or chunk, an ``event: error``)
may be classified otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentactors.errors import ErrorKind, MalformedResponseError, ProviderError, StreamInterruptedError
from agentactors.messages import LLMRequest, LLMResponse, Message, StreamEnd, ToolSpec
from agentactors.providers.http.provider import iter_sse
from agentactors.providers.openai.provider import OpenAIProvider, OpenAIWire
from tests.support.fuzz import FUZZ, json_values

WIRE = OpenAIWire()
REQUEST = LLMRequest(
    [Message.user("q")],
    tools=[ToolSpec("lookup", "", {"type": "object", "properties": {"w": {"type": "string"}}, "required": ["w"]})],
)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # Mostly the valid shape (to reach deep states), sometimes any JSON value at all.
    return st.integers(0, 3).flatmap(lambda n: strategy if n else json_values)


functions = st.fixed_dictionaries(
    {},
    optional={
        "name": maybe(st.sampled_from(["lookup", "other", ""])),
        "arguments": maybe(st.sampled_from(["", "{", '"w": ', '"x"', "}", "{}", '{"w":"a"}', "[1]"])),
    },
)
tool_calls = st.fixed_dictionaries(
    {},
    optional={
        "index": maybe(st.integers(-1, 3)),
        "id": maybe(st.sampled_from(["", "call_1", "call_2", "x"])),
        "type": st.just("function"),
        "function": maybe(functions),
        "extra_content": json_values,
    },
)
usage = st.fixed_dictionaries(
    {},
    optional={
        "prompt_tokens": maybe(st.integers(-5, 10**6)),
        "completion_tokens": maybe(st.integers(-5, 10**6)),
        "prompt_tokens_details": maybe(st.fixed_dictionaries({"cached_tokens": maybe(st.integers(0, 99))})),
        "completion_tokens_details": maybe(st.fixed_dictionaries({"reasoning_tokens": maybe(st.integers(0, 99))})),
    },
)
FINISH = st.sampled_from(["stop", "length", "tool_calls", "content_filter", "function_call", "weird"])
messages = st.fixed_dictionaries(
    {},
    optional={
        "role": st.just("assistant"),
        "content": maybe(st.text(max_size=8) | st.none()),
        "reasoning": maybe(st.text(max_size=8)),
        "reasoning_content": maybe(st.text(max_size=8)),
        "refusal": maybe(st.text(max_size=8) | st.none()),
        "tool_calls": maybe(st.lists(maybe(tool_calls), max_size=3)),
        "reasoning_details": json_values,
        "extra_content": json_values,
    },
)
choices = st.fixed_dictionaries(
    {},
    optional={
        "index": maybe(st.integers(0, 1)),
        "message": maybe(messages),
        "delta": maybe(messages),
        "finish_reason": maybe(FINISH | st.none()),
    },
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "id": maybe(st.text(max_size=6)),
        "model": maybe(st.text(max_size=6)),
        "choices": maybe(st.lists(maybe(choices), max_size=2)),
        "usage": maybe(usage | st.none()),
        "x_groq": maybe(st.fixed_dictionaries({"usage": usage})),
    },
)
error_bodies = st.fixed_dictionaries(
    {
        "error": maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "message": maybe(st.text(max_size=12)),
                    "code": maybe(st.sampled_from([400, 429, 500, "rate_limit_exceeded", "insufficient_quota"])),
                    "type": maybe(st.text(max_size=8)),
                    "status_code": maybe(st.integers(100, 599)),
                },
            )
        )
    }
)


def recognised_error(value: Any) -> bool:
    return isinstance(value, dict) and value.get("error") is not None


def only_provider_errors(action: Callable[[], object], *, may_classify: bool) -> None:
    """Run ``action``: it may succeed or raise a ProviderError of the allowed sort; nothing else escapes."""
    error: ProviderError | None = None
    try:
        action()
    except ProviderError as exc:  # anything else escapes and fails the property
        error = exc
    if isinstance(error, MalformedResponseError):
        assert error.kind is ErrorKind.transient and error.retryable
        assert "malformed vendor response" in str(error)
    elif error is not None:
        assert may_classify, f"an unrecognised input was classified as a vendor error: {error!r}"


def decode(body: Any) -> LLMResponse:
    return WIRE.decode_response(body, request=REQUEST, model="m", provider="openai")


def feed_all(pairs: list[tuple[str, str]]) -> LLMResponse:
    decoder = WIRE.stream_decoder(request=REQUEST, model="m", provider="openai")
    for event, data in pairs:
        for out in decoder.feed(event, data):
            assert not isinstance(out, StreamEnd)
    response = decoder.finish()
    assert decoder.done
    return response


def may_classify_stream(pairs: list[tuple[str, str]]) -> bool:
    for event, data in pairs:
        if event == "error":
            return True
        try:
            if recognised_error(json.loads(data.strip())):  # the decoder strips the data the same way
                return True
        except ValueError:
            continue
    return False


@FUZZ
@given(st.binary(max_size=400))
def test_arbitrary_bytes_through_sse_framing_and_the_stream_decoder(raw: bytes) -> None:
    pairs = list(iter_sse(raw))
    only_provider_errors(lambda: feed_all(pairs), may_classify=may_classify_stream(pairs))


sse_lines = st.lists(
    st.one_of(
        st.sampled_from(["", "", ": OPENROUTER PROCESSING", "event: error", "data: [DONE]", "data:[DONE]", "id: 1"]),
        bodies.map(lambda b: "data: " + json.dumps(b)),
        error_bodies.map(lambda b: "data: " + json.dumps(b)),
        st.text(max_size=20).map(lambda t: "data: " + t),
        st.text(max_size=20),
    ),
    max_size=12,
)


@FUZZ
@given(sse_lines, st.sampled_from(["\n", "\r\n", "\r"]))
def test_sse_shaped_text_through_the_stream_decoder(lines: list[str], newline: str) -> None:
    pairs = list(iter_sse(newline.join(lines) + newline * 2))
    only_provider_errors(lambda: feed_all(pairs), may_classify=may_classify_stream(pairs))


@FUZZ
@given(st.lists(bodies | error_bodies | json_values, max_size=6), st.booleans())
def test_wire_shaped_chunks_through_the_stream_decoder(chunks: list[Any], done: bool) -> None:
    pairs = [("message", json.dumps(c)) for c in chunks] + ([("message", "[DONE]")] if done else [])
    only_provider_errors(lambda: feed_all(pairs), may_classify=any(recognised_error(c) for c in chunks))


@FUZZ
@given(json_values)
def test_arbitrary_json_into_decode_response(body: Any) -> None:
    only_provider_errors(lambda: decode(body), may_classify=recognised_error(body))


@FUZZ
@given(bodies | error_bodies)
def test_wire_shaped_json_into_decode_response(body: Any) -> None:
    only_provider_errors(lambda: decode(body), may_classify=recognised_error(body))


@FUZZ
@given(st.integers(300, 599), st.binary(max_size=200) | error_bodies.map(lambda b: json.dumps(b).encode()))
def test_error_classification_never_raises(status: int, body: bytes) -> None:
    err = WIRE.classify_error(status, {"retry-after": "x"}, body, model="m", provider="openai")
    assert isinstance(err, ProviderError) and err.status == status


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300) | sse_lines.map(lambda ls: ("\n".join(ls) + "\n\n").encode()), st.booleans())
def test_arbitrary_bodies_through_the_provider(raw: bytes, streaming: bool) -> None:
    """The whole provider path (httpx, httpx-sse, decoder, HTTPProvider) lets only ProviderError out."""
    headers = {"content-type": "text/event-stream" if streaming else "application/json"}

    async def main() -> ProviderError | None:
        transport = httpx.MockTransport(lambda r: httpx.Response(200, headers=headers, content=raw))
        async with httpx.AsyncClient(transport=transport) as client:
            provider = OpenAIProvider("m", base_url="http://fuzz.test/v1", http_client=client)
            try:
                if streaming:
                    ends = 0
                    async with provider.stream(REQUEST) as stream:
                        async for event in stream:
                            ends += isinstance(event, StreamEnd)
                    assert ends == 1
                else:
                    await provider.complete(REQUEST)
            except ProviderError as exc:  # anything else escapes and fails the property
                return exc
        return None

    error = anyio.run(main)
    if isinstance(error, StreamInterruptedError):
        assert isinstance(error.__cause__, ProviderError)
