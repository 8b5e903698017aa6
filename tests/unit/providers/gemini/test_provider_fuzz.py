"""Fuzzing the Gemini decoders: whatever arrives, only a ProviderError escapes.

Arbitrary bytes go through the same httpx-sse framing the provider uses and then
the stream decoder; arbitrary JSON (and JSON shaped like Gemini's, with every
field liable to hold the wrong type) goes into ``decode_response``.  A failure is
a transient ``MalformedResponseError`` unless the input is a recognised vendor
error body or a blocked prompt, which are classified as such.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import anyio
import attrs
import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentactors.errors import MalformedResponseError, ProviderError
from agentactors.messages import LLMRequest, LLMResponse, Message, StreamEnd
from agentactors.providers.gemini.provider import GeminiProvider, GeminiWire
from agentactors.providers.http.provider import iter_sse

CODEC = GeminiWire()
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The right shape four times in five, any JSON value otherwise: deep fields get reached AND broken."""
    # (one_of would merge repeated alternatives, so the weighting is drawn explicitly)
    return st.integers(0, 4).flatmap(lambda pick: json_values if pick == 4 else strategy)


parts = st.fixed_dictionaries(
    {},
    optional={
        "text": maybe(st.text(max_size=20)),
        "thought": maybe(st.booleans()),
        "thoughtSignature": maybe(st.text(max_size=12)),
        "functionCall": maybe(
            st.fixed_dictionaries(
                {"name": maybe(st.sampled_from(["get_weather", "t", ""]))},
                optional={
                    "args": maybe(st.dictionaries(st.text(max_size=5), json_values)),
                    "id": maybe(st.text(max_size=6)),
                },
            )
        ),
    },
)
candidates = st.fixed_dictionaries(
    {"content": maybe(st.fixed_dictionaries({"parts": maybe(st.lists(maybe(parts), min_size=1, max_size=3))}))},
    optional={"finishReason": maybe(st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL", "X"]))},
)
gemini_like = st.fixed_dictionaries(
    {"candidates": maybe(st.lists(maybe(candidates), min_size=1, max_size=2))},
    optional={
        "usageMetadata": maybe(
            st.dictionaries(st.sampled_from(["promptTokenCount", "thoughtsTokenCount"]), json_values)
        ),
        "promptFeedback": maybe(st.fixed_dictionaries({}, optional={"blockReason": json_values})),
        "error": st.one_of(json_values, st.fixed_dictionaries({"code": json_values, "status": json_values})),
        "modelVersion": json_values,
        "responseId": json_values,
    },
)
# Valid bodies of each kind; `mutated` replaces exactly one subtree of one of them with junk, which
# reaches every field check far more often than generating whole bodies at random.
TEMPLATES: list[dict[str, Any]] = [
    {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "thinking", "thought": True},
                        {"text": "answer", "thoughtSignature": "c2ln"},
                        {
                            "functionCall": {"id": "v1", "name": "get_weather", "args": {"city": "Oslo"}},
                            "thoughtSignature": "eA==",
                        },
                        {"functionCall": {"name": "get_time", "args": {}}},
                    ],
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "thoughtsTokenCount": 1},
        "modelVersion": "gemini-x",
        "responseId": "r",
    },
    {"candidates": [{"finishReason": "SAFETY"}], "promptFeedback": {"safetyRatings": []}},
    {"promptFeedback": {"blockReason": "SAFETY"}},
    {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{"violations": [{"quotaId": "PerDay"}]}]}},
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, sub in items:
        out.extend(_paths(sub, (*prefix, key)))
    return out


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    template = copy.deepcopy(draw(st.sampled_from(TEMPLATES)))
    path = draw(st.sampled_from(_paths(template)[1:]))
    target = template
    for key in path[:-1]:
        target = target[key]
    if draw(st.booleans()):
        target[path[-1]] = draw(json_values)
    elif isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = None
    return template


bodies = st.one_of(mutated(), maybe(gemini_like))

# One of each JSON type, all truthy (falsy junk mostly reads as "absent" and tests little), plus deletion.
JUNK: list[Any] = [7, -1, 2.5, True, "x", [1], {"k": 1}, None]
_DELETE = object()


def one_field_wrong() -> list[Any]:
    out = []
    for template in TEMPLATES:
        for path in _paths(template)[1:]:
            for junk in [*JUNK, _DELETE]:
                body = copy.deepcopy(template)
                target = body
                for key in path[:-1]:
                    target = target[key]
                if junk is _DELETE and isinstance(target, dict):
                    del target[path[-1]]
                elif junk is not _DELETE:
                    target[path[-1]] = copy.deepcopy(junk)
                out.append(body)
    return out


def test_every_field_of_every_template_broken_in_every_way() -> None:
    cases = one_field_wrong()
    assert len(cases) > 300
    for body in cases:
        try:
            resp = CODEC.decode_response(body, request=None, model="m", provider="gemini")
        except ProviderError as exc:
            check_failure(exc, [body])
        else:
            check_response(resp)
        decoder = CODEC.stream_decoder(request=None, model="m", provider="gemini")
        try:
            decoder.feed("message", json.dumps(body))
            if decoder.done:
                check_response(decoder.finish())
        except ProviderError as exc:
            check_failure(exc, [body])


def recognised(body: Any) -> bool:
    """An error body or a blocked prompt: classified, not 'malformed'."""
    if not isinstance(body, dict):
        return False
    feedback = body.get("promptFeedback")
    return isinstance(body.get("error"), dict | str) or (
        isinstance(feedback, dict) and bool(feedback.get("blockReason"))
    )


def check_failure(exc: ProviderError, inputs: list[Any]) -> None:
    if isinstance(exc, MalformedResponseError):
        assert exc.kind.value == "transient" and "malformed vendor response" in exc.message
    else:
        assert any(recognised(i) for i in inputs), f"{exc!r} from unrecognised input"


@FUZZ
@given(bodies)
def test_decode_response_raises_only_provider_errors(body: Any) -> None:
    try:
        resp = CODEC.decode_response(body, request=None, model="m", provider="gemini")
    except ProviderError as exc:
        check_failure(exc, [body])
    else:
        check_response(resp)


def check_response(resp: LLMResponse) -> None:
    assert isinstance(resp.content, str) and isinstance(resp.reasoning, str)
    assert resp.raw_stop_reason is None or isinstance(resp.raw_stop_reason, str)
    assert all(isinstance(v, int) for v in attrs.astuple(resp.usage))
    assert all(isinstance(c.arguments, dict) and isinstance(c.name, str) and c.name for c in resp.tool_calls)
    assert len({c.id for c in resp.tool_calls}) == len(resp.tool_calls)


@FUZZ
@given(st.binary(max_size=400))
def test_arbitrary_bytes_through_sse_and_decoder(raw: bytes) -> None:
    decoder = CODEC.stream_decoder(request=None, model="m", provider="gemini")
    fed: list[Any] = []
    try:
        for event, data in iter_sse(raw):
            try:
                fed.append(json.loads(data))
            except (ValueError, RecursionError):
                fed.append(None)
            decoder.feed(event, data)
        decoder.finish()
    except ProviderError as exc:
        check_failure(exc, fed)


@FUZZ
@given(st.lists(bodies, max_size=4), st.sampled_from(["\n\n", "\r\n\r\n", "\r\r"]), st.booleans())
def test_gemini_shaped_chunks_through_sse_and_decoder(chunks: list[Any], sep: str, space: bool) -> None:
    prefix = "data: " if space else "data:"
    raw = "".join(prefix + json.dumps(c) + sep for c in chunks).encode()
    decoder = CODEC.stream_decoder(request=None, model="m", provider="gemini")
    try:
        for event, data in iter_sse(raw):
            decoder.feed(event, data)
        resp = decoder.finish()
    except ProviderError as exc:
        check_failure(exc, chunks)
    else:
        assert decoder.done
        check_response(resp)


async def _through_provider(raw: bytes) -> list[Any]:
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=raw)
    )
    async with httpx.AsyncClient(transport=transport) as client:
        provider = GeminiProvider(
            "gemini-2.5-flash", api_key="AIzaFuzzKey000000000000000000000000000", http_client=client
        )
        async with provider.stream(LLMRequest([Message.user("q")])) as stream:
            return [e async for e in stream]


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.lists(bodies, max_size=3).map(lambda cs: "".join(f"data: {json.dumps(c)}\n\n" for c in cs).encode()),
    )
)
def test_arbitrary_streams_through_the_provider(raw: bytes) -> None:
    try:
        events = anyio.run(_through_provider, raw)
    except ProviderError:
        pass  # classified, malformed or interrupted: all ProviderErrors
    else:
        assert isinstance(events[-1], StreamEnd)
        assert sum(isinstance(e, StreamEnd) for e in events) == 1
