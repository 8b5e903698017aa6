"""Fuzzing the Bedrock Converse decoders: whatever arrives, only a ``ProviderError`` escapes.

A ConverseStream body is binary (the AWS event stream: ``[total length][headers length][prelude CRC][headers]
[payload][message CRC]``), so the bytes go through :class:`EventStreamFramer` (botocore's parser) in arbitrary
chunkings, then :class:`BedrockStreamDecoder`: arbitrary bytes, valid messages with a byte flipped, cut short or
with a lying length (its prelude CRC recomputed, so the lie gets past the first check), headers of every type,
unknown message and event types, exception and error messages; wire-shaped event sequences go into the decoder
and arbitrary and Converse-shaped JSON into ``decode_converse``.  Anything undecodable must be a transient
"malformed vendor response"; only a recognised vendor error (an ``exception`` or ``error`` message, a
``{"message": …}`` body without ``output``) may be classified otherwise.  End to end, ``BedrockProvider`` over
``httpx.MockTransport`` with a fuzzed body ends one request in a response or a ``ProviderError`` whose text and
cause chain hold none of the canary credentials.
"""

from __future__ import annotations

import itertools
import json
import struct
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentactors.errors import ErrorKind, MalformedResponseError, ProviderError, StreamInterruptedError
from agentactors.messages import LLMRequest, LLMResponse, Message, StreamEnd, ToolSpec
from agentactors.providers.bedrock import EVENT_STREAM, BedrockProvider, BedrockWire, EventStreamFramer
from tests.support.fuzz import FUZZ, json_values

WIRE = BedrockWire()
REQUEST = LLMRequest(
    [Message.user("q")],
    tools=[ToolSpec("lookup", "", {"type": "object", "properties": {"w": {"type": "string"}}, "required": ["w"]})],
)
BACKENDS = pytest.mark.parametrize("backend", ["asyncio", "trio"])

KEY_ID, SECRET = "AKIDFUZZCANARY000000", "fuzz/Canary+Secret/00000000000000000000000"
TOKEN = "IQoJfuzz-canary-session-token-0000"


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # Mostly the valid shape (to reach deep states), sometimes any JSON value at all.
    return st.integers(0, 3).flatmap(lambda n: strategy if n else json_values)


# -- the binary framing ---------------------------------------------------------------------------------

#: A header value: (type byte, encoded value), for each of the event stream's ten header types.
HeaderValue = tuple[int, bytes]


def string_header(value: str) -> HeaderValue:
    raw = value.encode()
    return 7, struct.pack(">H", len(raw)) + raw


header_values: st.SearchStrategy[HeaderValue] = st.one_of(
    st.text(max_size=20).map(string_header),
    st.sampled_from([(0, b""), (1, b"")]),
    st.integers(-128, 127).map(lambda v: (2, struct.pack(">b", v))),
    st.integers(-(2**15), 2**15 - 1).map(lambda v: (3, struct.pack(">h", v))),
    st.integers(-(2**31), 2**31 - 1).map(lambda v: (4, struct.pack(">i", v))),
    st.integers(-(2**63), 2**63 - 1).flatmap(lambda v: st.sampled_from([(5, struct.pack(">q", v)),
                                                                         (8, struct.pack(">q", v))])),
    st.binary(max_size=12).map(lambda b: (6, struct.pack(">H", len(b)) + b)),
    st.binary(min_size=16, max_size=16).map(lambda b: (9, b)),
    # Past the ten types, or a value shorter than its type says: a corrupt header.
    st.tuples(st.integers(10, 255), st.binary(max_size=4)),
    st.tuples(st.integers(0, 9), st.binary(max_size=3)),
)


def encode_headers(headers: Iterable[tuple[str, HeaderValue]]) -> bytes:
    out = b""
    for name, (kind, value) in headers:
        raw = name.encode()[:255]
        out += struct.pack(">B", len(raw)) + raw + struct.pack(">B", kind) + value
    return out


def frame(headers: bytes, payload: bytes, *, total: int | None = None) -> bytes:
    """One event-stream message; ``total`` a (lying) total length, the prelude CRC computed over it."""
    prelude = struct.pack(">II", 16 + len(headers) + len(payload) if total is None else total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def message(message_type: str, name: str, payload: Any) -> bytes:
    """A well-formed message: ``event`` (``name`` its event type), ``exception`` or ``error`` (``name`` its type)."""
    headers: list[tuple[str, HeaderValue]] = [(":message-type", string_header(message_type))]
    if message_type == "event":
        headers += [(":event-type", string_header(name)), (":content-type", string_header("application/json"))]
    elif message_type == "exception":
        headers.append((":exception-type", string_header(name)))
    else:
        said = payload.get("message") if isinstance(payload, dict) else None
        headers += [(":error-code", string_header(name)),
                    (":error-message", string_header(said if isinstance(said, str) else "it broke"))]
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return frame(encode_headers(headers), data)


# -- wire-shaped payloads ---------------------------------------------------------------------------------

EVENTS = ["messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata",
          "somethingNew"]
EXCEPTIONS = ["throttlingException", "validationException", "modelStreamErrorException", "internalServerException",
              "accessDeniedException", "someNewException", ""]
usages = st.dictionaries(
    st.sampled_from(["inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens", "cacheDetails"]),
    maybe(st.integers(-5, 10**6) | st.lists(st.fixed_dictionaries({"ttl": st.sampled_from(["1h", "5m", 3]),
                                                                     "inputTokens": maybe(st.integers(-1, 99))}),
                                              max_size=2)),
    max_size=5,
)
fragments = st.sampled_from(["", "{", '"w": ', '"x"', "}", "[1]", "{}", "\\u12"]) | st.text(max_size=6)
deltas = st.one_of(
    st.fixed_dictionaries({"text": maybe(st.text(max_size=8))}),
    st.fixed_dictionaries({"toolUse": maybe(st.fixed_dictionaries({"input": maybe(fragments)}))}),
    st.fixed_dictionaries({"reasoningContent": maybe(st.fixed_dictionaries(
        {}, optional={"text": maybe(st.text(max_size=8)), "signature": maybe(st.text(max_size=8)),
                      "redactedContent": maybe(st.text(max_size=8))}))}),
    st.fixed_dictionaries({"citation": json_values}),
    json_values,
)
starts = st.one_of(
    st.fixed_dictionaries({"toolUse": maybe(st.fixed_dictionaries(
        {}, optional={"toolUseId": maybe(st.sampled_from(["t1", "t2", ""])),
                      "name": maybe(st.sampled_from(["lookup", "other", ""]))}))}),
    json_values,
)
STOPS = st.sampled_from(["end_turn", "tool_use", "max_tokens", "stop_sequence", "guardrail_intervened", "new"])
payloads = st.fixed_dictionaries(
    {},
    optional={
        "contentBlockIndex": maybe(st.integers(0, 3)),
        "start": starts,
        "delta": deltas,
        "stopReason": maybe(STOPS),
        "usage": maybe(usages),
        "additionalModelResponseFields": json_values,
        "role": st.just("assistant"),
        "message": maybe(st.text(max_size=8)),
    },
)


@st.composite
def wire_events(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """Mostly well-formed ConverseStreams (start, blocks, stop, metadata) with noise spliced in anywhere."""
    events: list[tuple[str, Any]] = [("messageStart", {"role": "assistant"})] if draw(st.integers(0, 9)) else []
    for index in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            events.append(("contentBlockStart", {"contentBlockIndex": index, "start": draw(starts)}))
        for d in draw(st.lists(deltas, max_size=4)):
            events.append(("contentBlockDelta", {"contentBlockIndex": index, "delta": d}))
        if draw(st.integers(0, 5)):
            events.append(("contentBlockStop", {"contentBlockIndex": index}))
    if draw(st.integers(0, 4)):
        events.append(("messageStop", {"stopReason": draw(maybe(STOPS))}))
    if draw(st.integers(0, 4)):
        events.append(("metadata", {"usage": draw(maybe(usages)), "metrics": {"latencyMs": 1}}))
    for noise in draw(st.lists(st.tuples(st.sampled_from(EVENTS), payloads | json_values), max_size=3)):
        events.insert(draw(st.integers(0, len(events))), noise)
    return events


# Messages of every kind, most of them well-formed, with every third one or so broken on purpose.
good_messages = st.one_of(
    st.tuples(st.sampled_from(EVENTS), payloads).map(lambda e: message("event", *e)),
    st.tuples(st.sampled_from(EXCEPTIONS), maybe(st.fixed_dictionaries({"message": st.text(max_size=12)}))).map(
        lambda e: message("exception", *e)
    ),
    st.sampled_from(EXCEPTIONS).map(lambda name: message("error", name, b"")),
    st.tuples(st.text(max_size=8), st.sampled_from(EVENTS), st.binary(max_size=20)).map(
        lambda e: frame(encode_headers([(":message-type", string_header(e[0])),
                                        (":event-type", string_header(e[1]))]), e[2])
    ),
    st.tuples(st.lists(st.tuples(st.text(max_size=12), header_values), max_size=4), st.binary(max_size=30)).map(
        lambda hp: frame(encode_headers(hp[0]), hp[1])
    ),
)


@st.composite
def broken(draw: st.DrawFn, raw: bytes) -> bytes:
    """``raw`` with one thing wrong: a byte flipped, cut short, a lying (CRC-checked) length, or junk appended."""
    how = draw(st.sampled_from(["flip", "cut", "lie", "junk", "none"]))
    if how == "flip":
        at = draw(st.integers(0, len(raw) - 1))
        return raw[:at] + bytes([raw[at] ^ draw(st.integers(1, 255))]) + raw[at + 1:]
    if how == "cut":
        return raw[: draw(st.integers(0, len(raw) - 1))]
    if how == "lie":
        total = draw(st.integers(0, 64) | st.integers(0, 2**32 - 1) | st.just(2**32 - 1))
        headers_length = struct.unpack(">I", raw[4:8])[0]
        if draw(st.booleans()):
            headers_length = draw(st.integers(0, 2**32 - 1))
        prelude = struct.pack(">II", total, headers_length)
        return prelude + struct.pack(">I", zlib.crc32(prelude)) + raw[12:]
    if how == "junk":
        return raw + draw(st.binary(max_size=20))
    return raw


messages = good_messages.flatmap(lambda raw: st.integers(0, 2).flatmap(lambda n: broken(raw) if n == 0 else
                                                                          st.just(raw)))


def chunked(raw: bytes, cuts: list[int]) -> Iterator[bytes]:
    """``raw`` in pieces, cut at ``cuts`` (positions modulo its length)."""
    points = sorted({c % (len(raw) + 1) for c in cuts} | {0, len(raw)})
    for start, end in itertools.pairwise(points):
        yield raw[start:end]


# -- the promise -------------------------------------------------------------------------------------------


def assert_allowed(exc: ProviderError, *, recognised: bool) -> None:
    if isinstance(exc, MalformedResponseError):
        assert exc.kind is ErrorKind.transient and exc.retryable
        assert "malformed vendor response" in str(exc)
    else:
        assert recognised, f"a non-malformed error from input that carried no vendor error: {exc!r}"


def frame_and_decode(chunks: Iterable[bytes], *, max_event_bytes: int | None = None) -> LLMResponse | None:
    """The provider's path without the I/O: the framer over ``chunks``, every pair into a fresh decoder."""
    framer = EventStreamFramer(provider="bedrock", model="m", max_event_bytes=max_event_bytes)
    decoder = WIRE.stream_decoder(request=REQUEST, model="m", provider="bedrock")
    recognised = False

    def pairs() -> Iterator[tuple[str, str]]:
        for chunk in chunks:
            yield from framer.feed(chunk)
        yield from framer.close()

    try:
        for event, data in pairs():
            assert isinstance(event, str) and isinstance(data, str)
            recognised = event.startswith("exception:")
            decoder.feed(event, data)
        return decoder.finish()
    except ProviderError as exc:
        assert_allowed(exc, recognised=recognised)
        return None


@FUZZ
@given(st.binary(max_size=600), st.lists(st.integers(0, 600), max_size=6))
def test_arbitrary_bytes_through_the_framing_and_the_decoder(raw: bytes, cuts: list[int]) -> None:
    frame_and_decode(chunked(raw, cuts))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, max_size=8), st.lists(st.integers(0, 2000), max_size=8), st.sampled_from([None, 64, 4096]))
def test_messages_broken_in_every_way_through_the_framing_and_the_decoder(
    parts: list[bytes], cuts: list[int], limit: int | None
) -> None:
    frame_and_decode(chunked(b"".join(parts), cuts), max_event_bytes=limit)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wire_events(), st.lists(st.integers(0, 4000), max_size=6))
def test_wire_shaped_streams_through_the_framing_and_the_decoder(events: list[tuple[str, Any]],
                                                                 cuts: list[int]) -> None:
    raw = b"".join(message("event", name, payload) for name, payload in events)
    response = frame_and_decode(chunked(raw, cuts))
    if response is not None:
        for call in response.tool_calls:
            # A call is either a clean object or carries the reason it is not one.
            assert call.arguments_error in (None, "unparseable", "empty")


@FUZZ
@given(st.lists(st.tuples(st.sampled_from([*EVENTS, "exception:throttlingException", ""]), st.text(max_size=40)),
                max_size=10))
def test_arbitrary_text_into_the_stream_decoder(pairs: list[tuple[str, str]]) -> None:
    decoder = WIRE.stream_decoder(request=REQUEST, model="m", provider="bedrock")
    recognised = False
    try:
        for event, data in pairs:
            recognised = event.startswith("exception:")
            decoder.feed(event, data)
        decoder.finish()
    except ProviderError as exc:
        assert_allowed(exc, recognised=recognised)


@pytest.mark.parametrize("total", [2**32 - 1, 2**31, 24 * 2**20 + 17, 16 * 2**20])
def test_a_lying_total_length_neither_allocates_it_nor_waits_for_it(total: int) -> None:
    """A prelude (its CRC right) that claims up to 4 GiB: refused at once, nothing near that size allocated.

    Past botocore's own 24 MiB bound it is corrupt; under it but past ``max_event_bytes`` it is too large —
    either way before the claimed bytes are waited for.
    """
    claim = frame(encode_headers([(":message-type", string_header("event"))]), b"{}", total=total)
    tracemalloc.start()
    try:
        started = time.perf_counter()
        with pytest.raises(ProviderError) as info:
            frame_and_decode_strict([claim, b"x" * 1024], max_event_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 5
    assert peak < 8 << 20
    assert info.value.kind is ErrorKind.transient


def frame_and_decode_strict(chunks: Iterable[bytes], *, max_event_bytes: int | None) -> list[tuple[str, str]]:
    """Every pair the framer hands on for ``chunks``, raising what it raises, before the body ends."""
    framer = EventStreamFramer(provider="bedrock", model="m", max_event_bytes=max_event_bytes)
    return [pair for chunk in chunks for pair in framer.feed(chunk)]


# -- whole bodies ------------------------------------------------------------------------------------------

blocks = st.one_of(
    st.fixed_dictionaries({"text": maybe(st.text(max_size=8))}),
    st.fixed_dictionaries({"toolUse": maybe(st.fixed_dictionaries(
        {}, optional={"toolUseId": maybe(st.sampled_from(["t1", "t2", ""])),
                      "name": maybe(st.sampled_from(["lookup", ""])), "input": json_values}))}),
    st.fixed_dictionaries({"reasoningContent": maybe(st.fixed_dictionaries(
        {}, optional={"reasoningText": maybe(st.fixed_dictionaries(
            {}, optional={"text": maybe(st.text(max_size=8)), "signature": maybe(st.text(max_size=8))})),
            "redactedContent": maybe(st.text(max_size=8))}))}),
    json_values,
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "output": maybe(st.fixed_dictionaries({"message": maybe(st.fixed_dictionaries(
            {"role": st.just("assistant"), "content": maybe(st.lists(blocks, max_size=4))}))})),
        "stopReason": maybe(STOPS),
        "usage": maybe(usages),
        "additionalModelResponseFields": json_values,
        "metrics": json_values,
        "message": maybe(st.text(max_size=12)),
    },
)


def recognised_body(body: Any) -> bool:
    return isinstance(body, dict) and "message" in body and "output" not in body


def decode(body: Any) -> None:
    try:
        WIRE.decode_response(body, request=REQUEST, model="m", provider="bedrock")
    except ProviderError as exc:
        assert_allowed(exc, recognised=recognised_body(body))


@FUZZ
@given(json_values)
def test_arbitrary_json_into_decode_response(body: Any) -> None:
    decode(body)


@FUZZ
@given(bodies)
def test_converse_shaped_json_into_decode_response(body: Any) -> None:
    decode(body)


@FUZZ
@given(
    st.integers(300, 599),
    st.dictionaries(st.sampled_from(["x-amzn-ErrorType", "retry-after", "x-amzn-RequestId"]),
                    st.sampled_from(["ThrottlingException:http://x", "validationException", "#", ":", "", "x"])
                    | st.text(max_size=12), max_size=3),
    st.binary(max_size=200) | bodies.map(lambda b: json.dumps(b).encode()),
)
def test_error_classification_never_raises(status: int, headers: dict[str, str], body: bytes) -> None:
    err = WIRE.classify_error(status, headers, body, model="m", provider="bedrock")
    assert isinstance(err, ProviderError) and err.status == status


# -- end to end --------------------------------------------------------------------------------------------


def secrets_in(exc: BaseException, secrets: tuple[str, ...]) -> list[str]:
    """The canaries (or their first 8 characters) anywhere in ``exc``'s text, attributes and cause chain."""
    seen: set[int] = set()
    found: list[str] = []
    stack: list[BaseException | None] = [exc]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        text = " ".join([str(current), repr(current), repr(current.args), repr(vars(current)),
                         *getattr(current, "__notes__", [])])
        found += [s for s in secrets if s[:8] in text]
        stack += [current.__cause__, current.__context__]
    return found


def through_the_provider(raw: bytes, streaming: bool, cuts: list[int], backend: str,
                         extra: Callable[[httpx.Request], None] | None = None) -> ProviderError | None:
    """One request to a BedrockProvider whose vendor answers 200 with ``raw`` (in ``cuts`` pieces)."""
    headers = {"content-type": EVENT_STREAM if streaming else "application/json"}

    async def body() -> AsyncIterator[bytes]:
        for piece in chunked(raw, cuts):
            yield piece

    def answer(request: httpx.Request) -> httpx.Response:
        if extra is not None:
            extra(request)
        return httpx.Response(200, headers=headers, content=body())

    async def main() -> ProviderError | None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            provider = BedrockProvider("us.amazon.nova-pro-v1:0", region="us-east-1", access_key_id=KEY_ID,
                                       secret_access_key=SECRET, session_token=TOKEN, http_client=client,
                                       max_event_bytes=4096)
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


bodies_on_the_wire = st.one_of(
    st.binary(max_size=300),
    st.lists(messages, max_size=6).map(b"".join),
    wire_events().map(lambda evs: b"".join(message("event", n, p) for n, p in evs)),
    bodies.map(lambda b: json.dumps(b).encode()),
)


@BACKENDS
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies_on_the_wire, st.booleans(), st.lists(st.integers(0, 4000), max_size=4))
def test_arbitrary_bodies_through_the_provider(backend: str, raw: bytes, streaming: bool, cuts: list[int]) -> None:
    """The whole path (httpx, SigV4, the framer, the decoder, HTTPProvider) lets only a ProviderError out, and
    no credential — not the secret key, the session token, nor the signature it sent — is in it."""
    sent: list[str] = []

    def note_signature(request: httpx.Request) -> None:
        sent.append(request.headers["authorization"].rpartition("Signature=")[2])

    error = through_the_provider(raw, streaming, cuts, backend, note_signature)
    if error is None:
        return
    if isinstance(error, StreamInterruptedError):
        assert isinstance(error.__cause__, ProviderError)
    (signature,) = sent
    assert len(signature) == 64
    assert secrets_in(error, (SECRET, TOKEN, signature)) == []


@BACKENDS
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(EXCEPTIONS), st.sampled_from(["exception", "error"]), st.booleans())
def test_vendor_errors_that_echo_the_credentials_show_none_of_them(
    backend: str, name: str, kind: str, streaming: bool
) -> None:
    """A vendor (or a proxy) that quotes the request's credentials back in an exception message or a body."""
    echo = {"message": f"bad {SECRET} {TOKEN}"}
    raw = message(kind, name, echo) if streaming else json.dumps(echo).encode()
    error = through_the_provider(raw, streaming, [], backend)
    assert error is not None
    assert secrets_in(error, (SECRET, TOKEN)) == []


# -- what the fuzzing found ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 403, 429, 500])
def test_an_error_answer_with_a_non_ascii_header_is_classified(status: int) -> None:
    """Found by fuzzing: a header byte past ASCII (obs-text, legal in HTTP: a proxy's header), which a transport
    hands on decoded as latin-1, made the classifier raise ``UnicodeEncodeError`` — every error answer then
    became a transient "could not be classified", so a 403 was retried as if the vendor had hiccupped."""
    headers = {"X-Amzn-ErrorType": "AccessDeniedException:http://x", "x-proxy-note": "caf\xe9", "retry-after": "7"}
    err = WIRE.classify_error(status, headers, b'{"message": "no"}', model="m", provider="bedrock")
    assert (err.kind, err.status, err.message) == (ErrorKind.account, status, "no")


@BACKENDS
def test_an_error_answer_with_a_non_ascii_header_is_classified_end_to_end(backend: str) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, headers=[(b"x-amzn-ErrorType", b"AccessDeniedException:"),
                                            (b"x-proxy-note", b"caf\xe9")], content=b'{"message": "denied"}')

    async def main() -> ProviderError:
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            provider = BedrockProvider("us.amazon.nova-pro-v1:0", region="us-east-1", access_key_id=KEY_ID,
                                       secret_access_key=SECRET, http_client=client)
            with pytest.raises(ProviderError) as info:
                await provider.complete(REQUEST)
            return info.value

    err = anyio.run(main, backend=backend)
    assert (err.kind, err.status) == (ErrorKind.account, 403)


def test_a_message_at_the_limit_passes_in_any_chunking_and_one_past_it_is_refused_at_its_prelude() -> None:
    """Found by fuzzing (the lying length above): a prelude claiming more than ``max_event_bytes`` (under
    botocore's 24 MiB) was waited for until that many bytes came — a vendor that sent the prelude and then
    trickled had the stream wait for its read timeout.  The claim is refused once the prelude's CRC checks."""
    raw = message("event", "messageStart", {"role": "assistant"})
    for cut in range(len(raw) + 1):
        assert frame_and_decode_strict([raw[:cut], raw[cut:]], max_event_bytes=len(raw)) == [
            ("messageStart", '{"role": "assistant"}')
        ]
        framer = EventStreamFramer(provider="bedrock", model="m", max_event_bytes=len(raw) - 1)
        if cut < 12:  # the prelude is not whole yet: nothing to judge by
            assert list(framer.feed(raw[:cut])) == []
        else:
            with pytest.raises(MalformedResponseError, match="by its prelude" if cut < len(raw) else "past"):
                list(framer.feed(raw[:cut]))
