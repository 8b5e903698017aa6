"""Fuzzing the OpenAI Responses decoders: whatever arrives, only a ``ProviderError`` escapes.

Arbitrary bytes go through the same SSE framing the provider uses and then the stream decoder; SSE-shaped text,
wire-shaped event sequences (output items added, argument deltas, items done, a terminal ``response``) and
arbitrary JSON go into the stream decoder and ``decode_response``.  Anything undecodable must be a transient
"malformed vendor response"; only a recognised vendor error (an ``error`` event, ``response.failed``, a body or
terminal response with an ``error`` or ``status: "failed"``) may be classified otherwise.  End to end,
``OpenAIResponsesProvider`` over ``httpx.MockTransport`` with a fuzzed body ends one request in a response or a
``ProviderError`` that holds no trace of the canary API key.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentactors.errors import ErrorKind, MalformedResponseError, ProviderError, StreamInterruptedError
from agentactors.messages import LLMRequest, LLMResponse, Message, StreamEnd, ToolSpec
from agentactors.providers.http.provider import iter_sse
from agentactors.providers.responses import ResponsesWire
from agentactors.providers.responses.provider import OpenAIResponsesProvider
from tests.support.fuzz import FUZZ, json_values

WIRE = ResponsesWire()
REQUEST = LLMRequest(
    [Message.user("q")],
    tools=[ToolSpec("lookup", "", {"type": "object", "properties": {"w": {"type": "string"}}, "required": ["w"]})],
)
BACKENDS = pytest.mark.parametrize("backend", ["asyncio", "trio"])
API_KEY = "sk-fuzzcanary-0123456789abcdefghijklmnopqrstuv"


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # Mostly the valid shape (to reach deep states), sometimes any JSON value at all.
    return st.integers(0, 3).flatmap(lambda n: strategy if n else json_values)


STATUSES = st.sampled_from(["completed", "incomplete", "in_progress", "failed", "queued", "cancelled", "weird"])
ITEM_STATUSES = st.sampled_from(["completed", "incomplete", "in_progress"])
fragments = st.sampled_from(["", "{", '"w": ', '"x"', "}", "[1]", "{}", '{"w":"a"}', "\\u12"]) | st.text(max_size=6)
CALL_IDS = st.sampled_from(["call_1", "call_2", ""])
parts = st.fixed_dictionaries(
    {"type": maybe(st.sampled_from(["output_text", "refusal", "other"]))},
    optional={"text": maybe(st.text(max_size=8)), "refusal": maybe(st.text(max_size=8)), "annotations": json_values},
)
items = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("function_call")},
        optional={"name": maybe(st.sampled_from(["lookup", "other", ""])), "call_id": maybe(CALL_IDS),
                  "id": maybe(st.sampled_from(["fc_1", "fc_2", ""])), "arguments": maybe(fragments),
                  "status": maybe(ITEM_STATUSES)},
    ),
    st.fixed_dictionaries(
        {"type": st.just("message")},
        optional={"id": maybe(st.text(max_size=4)), "role": st.just("assistant"), "phase": json_values,
                  "content": maybe(st.lists(maybe(parts), max_size=3)), "status": maybe(ITEM_STATUSES)},
    ),
    st.fixed_dictionaries(
        {"type": st.just("reasoning")},
        optional={"id": maybe(st.text(max_size=4)), "encrypted_content": maybe(st.text(max_size=8)),
                  "summary": maybe(st.lists(maybe(st.fixed_dictionaries({"type": st.just("summary_text"),
                                                                          "text": maybe(st.text(max_size=8))})),
                                            max_size=2))},
    ),
    st.fixed_dictionaries({"type": maybe(st.sampled_from(["web_search_call", "new_kind"]))}),
    json_values,
)
errors = st.fixed_dictionaries(
    {},
    optional={"code": maybe(st.sampled_from(["invalid_prompt", "rate_limit_exceeded", "server_error",
                                             "invalid_image", "new_code"])),
              "message": maybe(st.text(max_size=12)), "param": json_values},
)
usage = st.fixed_dictionaries(
    {},
    optional={"input_tokens": maybe(st.integers(-5, 10**6)), "output_tokens": maybe(st.integers(-5, 10**6)),
              "input_tokens_details": maybe(st.fixed_dictionaries({"cached_tokens": maybe(st.integers(0, 99))})),
              "output_tokens_details": maybe(st.fixed_dictionaries({"reasoning_tokens": maybe(st.integers(0, 99))}))},
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "id": maybe(st.text(max_size=6)),
        "object": st.just("response"),
        "model": maybe(st.text(max_size=6)),
        "status": maybe(STATUSES),
        "output": maybe(st.lists(items, max_size=4)),
        "usage": maybe(usage | st.none()),
        "incomplete_details": maybe(st.fixed_dictionaries({"reason": maybe(st.sampled_from(
            ["max_output_tokens", "content_filter", "other"]))}) | st.none()),
        "error": maybe(errors) | st.none(),
    },
)
EVENTS = [
    "response.created", "response.in_progress", "response.output_item.added", "response.output_item.done",
    "response.output_text.delta", "response.refusal.delta", "response.reasoning_summary_text.delta",
    "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.completed",
    "response.incomplete", "response.failed", "error", "response.something_new",
]
events = st.fixed_dictionaries(
    {"type": maybe(st.sampled_from(EVENTS))},
    optional={
        "sequence_number": st.integers(0, 99),
        "output_index": maybe(st.integers(0, 3)),
        "item_id": maybe(st.sampled_from(["fc_1", "fc_2", "rs_1", ""])),
        "summary_index": maybe(st.integers(0, 2)),
        "item": maybe(items),
        "delta": maybe(fragments),
        "response": maybe(bodies),
        "code": maybe(st.sampled_from(["server_error", "invalid_prompt"])),
        "message": maybe(st.text(max_size=8)),
    },
)


@st.composite
def wire_events(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Mostly coherent streams (calls added, their arguments, done, a terminal response holding them), with noise
    events spliced in anywhere."""
    out: list[dict[str, Any]] = [{"type": "response.created", "response": {"status": "in_progress", "output": []}}]
    final_items: list[Any] = []
    for index in range(draw(st.integers(0, 3))):
        item = draw(items)
        out.append({"type": "response.output_item.added", "output_index": index,
                    "item": {**item, "arguments": ""} if isinstance(item, dict) else item})
        for fragment in draw(st.lists(fragments, max_size=3)):
            kind = "response.function_call_arguments.delta"
            if isinstance(item, dict) and item.get("type") != "function_call":
                kind = draw(st.sampled_from(["response.output_text.delta", "response.reasoning_summary_text.delta"]))
            out.append({"type": kind, "output_index": index, "delta": fragment,
                        "item_id": item.get("id") if isinstance(item, dict) else None})
        if draw(st.integers(0, 4)):
            out.append({"type": "response.output_item.done", "output_index": index, "item": item})
        if draw(st.integers(0, 5)):
            final_items.append(item)
    if draw(st.integers(0, 5)):
        terminal = draw(st.sampled_from(["response.completed", "response.incomplete"]))
        response = {**draw(bodies), "output": final_items}
        response["status"] = "completed" if terminal == "response.completed" else "incomplete"
        response.pop("error", None)
        out.append({"type": terminal, "response": response})
    for noise in draw(st.lists(events, max_size=3)):
        out.insert(draw(st.integers(0, len(out))), noise)
    return out


def recognised(value: Any, event: str = "message") -> bool:
    """A vendor error the decoders classify: an ``error`` or failed body, or an event that carries one (an event
    is named by its ``type``, else by its SSE ``event:``)."""
    if not isinstance(value, dict):
        return False
    if value.get("error") is not None or value.get("status") == "failed":
        return True
    kind = value.get("type") if isinstance(value.get("type"), str) else event
    if kind in ("error", "response.failed"):
        return True
    return kind in ("response.completed", "response.incomplete") and recognised(value.get("response"))


def assert_allowed(exc: ProviderError, *, may_classify: bool) -> None:
    if isinstance(exc, MalformedResponseError):
        assert exc.kind is ErrorKind.transient and exc.retryable
        assert "malformed vendor response" in str(exc)
    else:
        assert may_classify, f"a non-malformed error from input that carried no vendor error: {exc!r}"


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def run_stream(pairs: list[tuple[str, str]]) -> LLMResponse | None:
    decoder = WIRE.stream_decoder(request=REQUEST, model="m", provider="openai-responses")
    classify = False
    try:
        for event, data in pairs:
            payload = _loads(data.strip())
            classify = event == "error" or recognised(payload, event)
            for out in decoder.feed(event, data):
                assert not isinstance(out, StreamEnd)
        response = decoder.finish()
    except ProviderError as exc:
        assert_allowed(exc, may_classify=classify)
        return None
    assert decoder.done
    return response


@FUZZ
@given(st.binary(max_size=600))
def test_arbitrary_bytes_through_sse_framing_and_the_stream_decoder(raw: bytes) -> None:
    run_stream(list(iter_sse(raw)))


sse_lines = st.lists(
    st.one_of(
        st.sampled_from(["", "", ": keepalive", "event: error", "event: response.completed", "data: [DONE]",
                         "id: 1", "retry: 5"]),
        events.map(lambda e: "data: " + json.dumps(e)),
        st.text(max_size=20).map(lambda t: "data: " + t),
        st.text(max_size=20),
    ),
    max_size=12,
)


@FUZZ
@given(sse_lines, st.sampled_from(["\n", "\r\n", "\r"]))
def test_sse_shaped_text_through_the_stream_decoder(lines: list[str], newline: str) -> None:
    run_stream(list(iter_sse(newline.join(lines) + newline * 2)))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wire_events())
def test_wire_shaped_event_sequences(sequence: list[dict[str, Any]]) -> None:
    framed = "".join(f"event: {e.get('type')}\ndata: {json.dumps(e)}\n\n" for e in sequence)
    pairs = list(iter_sse(framed))
    assert len(pairs) == len(sequence)  # the framing itself is lossless
    response = run_stream(pairs)
    if response is not None:
        assert len({c.id for c in response.tool_calls}) <= len(response.tool_calls)
        for call in response.tool_calls:
            # A call is either a clean object or carries the reason it is not one.
            assert call.arguments_error in (None, "unparseable", "empty")


@FUZZ
@given(st.lists(st.tuples(st.sampled_from([*EVENTS, "message"]), st.text(max_size=60) | events.map(json.dumps)),
                max_size=10))
def test_arbitrary_event_text(pairs: list[tuple[str, str]]) -> None:
    run_stream(pairs)


def decode(body: Any) -> None:
    try:
        WIRE.decode_response(body, request=REQUEST, model="m", provider="openai-responses")
    except ProviderError as exc:
        assert_allowed(exc, may_classify=recognised(body))


@FUZZ
@given(json_values)
def test_arbitrary_json_into_decode_response(body: Any) -> None:
    decode(body)


@FUZZ
@given(bodies)
def test_wire_shaped_json_into_decode_response(body: Any) -> None:
    decode(body)


@FUZZ
@given(
    st.integers(300, 599),
    st.dictionaries(st.sampled_from(["retry-after", "x-request-id", "x-should-retry", "x-proxy"]),
                    st.sampled_from(["1", "true", "false", "", "caf\xe9"]) | st.text(max_size=10), max_size=3),
    st.binary(max_size=200) | bodies.map(lambda b: json.dumps(b).encode()),
)
def test_error_classification_never_raises(status: int, headers: dict[str, str], body: bytes) -> None:
    err = WIRE.classify_error(status, headers, body, model="m", provider="openai-responses")
    assert isinstance(err, ProviderError) and err.status == status


def test_an_error_answer_with_a_non_ascii_header_is_classified() -> None:
    """Found by fuzzing the Bedrock wire, shared by every wire: a header value a transport decoded from bytes past
    ASCII (a proxy's) made the shared classifier raise, and a 401 became a transient "could not be classified"."""
    err = WIRE.classify_error(401, {"x-proxy": "caf\xe9", "retry-after": "3"},
                              b'{"error": {"message": "bad key", "code": "invalid_api_key"}}', model="m",
                              provider="openai-responses")
    assert (err.kind, err.status, err.message) == (ErrorKind.account, 401, "bad key")


# -- end to end --------------------------------------------------------------------------------------------


def causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack += [current.__cause__, current.__context__]


def shows_the_key(exc: BaseException) -> bool:
    """The canary key, or its first 8 characters, anywhere in ``exc``'s text, attributes or cause chain."""
    return any(
        API_KEY[:8] in " ".join([str(e), repr(e), repr(e.args), repr(vars(e)), *getattr(e, "__notes__", [])])
        for e in causes(exc)
    )


def through_the_provider(raw: bytes, streaming: bool, cuts: list[int], backend: str) -> ProviderError | None:
    headers = {"content-type": "text/event-stream" if streaming else "application/json"}

    async def body() -> AsyncIterator[bytes]:
        points = sorted({c % (len(raw) + 1) for c in cuts} | {0, len(raw)})
        for start, end in itertools.pairwise(points):
            yield raw[start:end]

    async def main() -> ProviderError | None:
        transport = httpx.MockTransport(lambda r: httpx.Response(200, headers=headers, content=body()))
        async with httpx.AsyncClient(transport=transport) as client:
            provider = OpenAIResponsesProvider("gpt-5-mini", api_key=API_KEY, base_url="http://fuzz.test/v1",
                                               http_client=client)
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

    return anyio.run(main, backend=backend)


# Some bodies quote the key back, as a vendor or proxy echoing the request would.
echoed = st.sampled_from(["", f"Incorrect API key provided: {API_KEY}", f"Bearer {API_KEY}"])


@BACKENDS
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.binary(max_size=300),
        sse_lines.map(lambda ls: ("\n".join(ls) + "\n\n").encode()),
        wire_events().map(lambda evs: "".join(f"data: {json.dumps(e)}\n\n" for e in evs).encode()),
        st.tuples(bodies, echoed).map(lambda be: json.dumps({**be[0], "note": be[1]}).encode()),
        st.tuples(errors, echoed).map(
            lambda ee: f"data: {json.dumps({'type': 'error', **ee[0], 'message': ee[1]})}\n\n".encode()
        ),
    ),
    st.booleans(),
    st.lists(st.integers(0, 2000), max_size=4),
)
def test_arbitrary_bodies_through_the_provider(backend: str, raw: bytes, streaming: bool, cuts: list[int]) -> None:
    """The whole path (httpx, SSE, the decoder, HTTPProvider) lets only a ProviderError out, and never the key."""
    error = through_the_provider(raw, streaming, cuts, backend)
    if error is None:
        return
    if isinstance(error, StreamInterruptedError):
        assert isinstance(error.__cause__, ProviderError)
    assert not shows_the_key(error)
