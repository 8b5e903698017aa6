"""Bounded reads at the HTTP layer, over ``httpx.MockTransport`` bodies that count what was pulled from them.

Every body here is a stream the provider has to pull chunk by chunk, so the tests can say how
far it read: never (much) past its limit, counted after decompression, and for an error body
never past what classification needs.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import pytest

from agentactors.errors import ErrorKind, MalformedResponseError, ProviderError, ResponseTooLargeError
from agentactors.messages import LLMRequest, Message, StreamEnd, TextDelta
from agentactors.providers.http.limits import ERROR_BODY_BYTES, ResponseLimits
from agentactors.providers.http.provider import iter_sse
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.redaction import excerpt, register_secret

pytestmark = pytest.mark.anyio

REQUEST = LLMRequest([Message.user("hi")])
KiB = 1024
MiB = 1024 * KiB
SSE = {"content-type": "text/event-stream"}


class CountingBody(httpx.AsyncByteStream):
    """Yields chunks from ``source`` and counts the bytes pulled; records whether it was closed."""

    def __init__(self, source: Iterator[bytes]) -> None:
        self.source = source
        self.pulled = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.source:
            self.pulled += len(chunk)
            yield chunk
            await anyio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        self.closed = True


def endless(chunk: bytes) -> Iterator[bytes]:
    while True:
        yield chunk


def gzip_bomb(total: int, step: int = MiB) -> Iterator[bytes]:
    """``total`` zero bytes, gzip-compressed on the fly (about a thousandth of the size on the wire)."""
    z = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    zeros = b"\0" * step
    for _ in range(total // step):
        if out := z.compress(zeros):
            yield out
    yield z.flush()


def provider(
    body: CountingBody, *, status: int = 200, headers: dict[str, str] | None = None, **limits: Any
) -> OpenAIProvider:
    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=headers or {"content-type": "application/json"}, stream=body)

    client = httpx.AsyncClient(transport=httpx.MockTransport(respond))
    return OpenAIProvider("m", base_url="http://vendor.test/v1", http_client=client, **limits)


def ok_json(text: str) -> bytes:
    return json.dumps(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    ).encode()


async def drain(p: OpenAIProvider) -> list[Any]:
    out: list[Any] = []
    async with p.stream(REQUEST) as events:
        async for event in events:
            out.append(event)
    return out


# --- JSON bodies --------------------------------------------------------------------------------


async def test_a_body_past_max_response_bytes_is_refused_and_not_read_further() -> None:
    body = CountingBody(endless(b" " * 64 * KiB))
    with pytest.raises(ResponseTooLargeError) as info:
        await provider(body, max_response_bytes=MiB).complete(REQUEST)
    err = info.value
    assert (err.kind, err.retryable) == (ErrorKind.transient, False)
    assert (err.limit, err.limit_bytes) == ("max_response_bytes", MiB)
    assert MiB < body.pulled <= MiB + 64 * KiB
    assert body.closed


async def test_a_gzip_bomb_is_counted_after_inflating() -> None:
    # 256 MiB of zeros, ~256 KiB on the wire: the limit of 1 MiB stops it after a few compressed bytes.
    body = CountingBody(gzip_bomb(256 * MiB))
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    with pytest.raises(ResponseTooLargeError) as info:
        await provider(body, headers=headers, max_response_bytes=MiB).complete(REQUEST)
    assert info.value.limit == "max_response_bytes"
    assert body.pulled < 64 * KiB  # a few compressed chunks, not the whole bomb


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
async def test_compressed_bodies_still_decode(encoding: str) -> None:
    raw = ok_json("squeezed")
    if encoding == "gzip":
        z = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    elif encoding == "deflate":
        z = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS)
    else:
        z = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    packed = z.compress(raw) + z.flush()
    body = CountingBody(iter([packed[:10], packed[10:]]))
    headers = {"content-type": "application/json", "content-encoding": encoding.replace("raw-", "")}
    assert (await provider(body, headers=headers).complete(REQUEST)).content == "squeezed"


async def test_an_encoding_that_was_not_offered_is_malformed() -> None:
    body = CountingBody(iter([ok_json("x")]))
    headers = {"content-type": "application/json", "content-encoding": "br"}
    with pytest.raises(MalformedResponseError, match="content-encoding 'br'"):
        await provider(body, headers=headers).complete(REQUEST)
    assert body.closed


async def test_the_request_offers_only_the_encodings_it_bounds() -> None:
    sent: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, content=ok_json("x"))

    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        await OpenAIProvider("m", base_url="http://vendor.test/v1", http_client=client).complete(REQUEST)
    assert sent[0].headers["accept-encoding"] == "gzip, deflate"


# --- error bodies -------------------------------------------------------------------------------


async def test_an_error_page_is_read_only_as_far_as_classification_needs() -> None:
    page = CountingBody(endless(b"<html>" + b"x" * (64 * KiB) + b"</html>"))
    with pytest.raises(ProviderError) as info:
        await provider(page, status=503, headers={"content-type": "text/html"}).complete(REQUEST)
    assert (info.value.kind, info.value.status) == (ErrorKind.transient, 503)
    assert page.pulled <= ERROR_BODY_BYTES + 70 * KiB
    assert info.value.body_excerpt is not None and len(info.value.body_excerpt) <= 500
    assert page.closed


async def test_an_error_body_is_still_classified_by_its_code() -> None:
    body = CountingBody(iter([json.dumps({"error": {"message": "no", "code": "insufficient_quota"}}).encode()]))
    with pytest.raises(ProviderError) as info:
        await provider(body, status=429).complete(REQUEST)
    assert info.value.kind is ErrorKind.account


# --- streams ------------------------------------------------------------------------------------


async def test_an_sse_line_that_never_ends_is_cut_at_max_sse_line_bytes() -> None:
    body = CountingBody(endless(b"x" * 64 * KiB))
    with pytest.raises(ResponseTooLargeError) as info:
        await drain(provider(body, headers=SSE, max_sse_line_bytes=256 * KiB))
    assert info.value.limit == "max_sse_line_bytes"
    assert body.pulled <= 256 * KiB + 64 * KiB


async def test_an_sse_event_that_never_ends_is_cut_at_max_event_bytes() -> None:
    body = CountingBody(endless(b"data: " + b"x" * 1000 + b"\n"))
    with pytest.raises(ResponseTooLargeError) as info:
        await drain(provider(body, headers=SSE, max_event_bytes=100 * KiB))
    assert info.value.limit == "max_event_bytes"
    assert body.pulled <= 110 * KiB


async def test_a_stream_past_max_response_bytes_after_its_first_event_is_interrupted() -> None:
    chunk = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    body = CountingBody(endless(chunk))
    events: list[Any] = []
    with pytest.raises(ProviderError) as info:
        async with provider(body, headers=SSE, max_response_bytes=64 * KiB).stream(REQUEST) as stream:
            async for event in stream:
                events.append(event)
    assert events and all(e == TextDelta("a") for e in events)
    assert isinstance(info.value.__cause__, ResponseTooLargeError)
    assert body.pulled <= 64 * KiB + len(chunk)


async def test_a_stream_within_the_limits_is_unchanged() -> None:
    frames = [b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\r\n\r\n',
              b'data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\r',
              b"\n\r\ndata: [DONE]\n\n"]
    events = await drain(provider(CountingBody(iter(frames)), headers=SSE))
    assert events[:2] == [TextDelta("Hel"), TextDelta("lo")] and isinstance(events[2], StreamEnd)


@pytest.mark.parametrize(
    "raw",
    [
        b"data: a\n\n",
        b"data: a\r\n\r\n",
        b"data: a\r\rdata: b\r\r",
        b"\xef\xbb\xbfdata: bom\n\n",
        b"event: e\ndata: 1\ndata: 2\n\n: comment\n\nid: 3\ndata:  spaced\n\n",
        b"data: cut-off-without-blank-line",
        b"data: \xff\xfe bad utf8\n\n",
    ],
)
def test_iter_sse_matches_httpx_sse(raw: bytes) -> None:
    from httpx_sse import EventSource

    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=raw)
    expected = [(s.event, s.data) for s in EventSource(response).iter_sse() if s.data]
    if raw.startswith(b"\xef\xbb\xbf"):
        expected = [("message", "bom")]  # WHATWG strips one leading BOM; httpx-sse keeps it in the field name
    assert list(iter_sse(raw)) == expected


# --- configuration and excerpts -----------------------------------------------------------------


@pytest.mark.parametrize("field", ["max_response_bytes", "max_sse_line_bytes", "max_event_bytes"])
@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_limits_must_be_positive_byte_counts(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        OpenAIProvider("m", **{field: value})
    with pytest.raises(ValueError, match=field):
        ResponseLimits(**{field: value})


def test_the_limits_are_on_the_provider() -> None:
    p = OpenAIProvider("m", max_response_bytes=5 * MiB)
    assert p.limits == ResponseLimits(max_response_bytes=5 * MiB)


def test_an_excerpt_is_cut_before_it_is_redacted_and_never_shows_part_of_a_secret() -> None:
    secret = "canary-EXCERPT-0123456789abcdefghij"
    register_secret(secret)
    for at in range(470, 520, 7):
        text = "x" * at + secret + "y" * 10_000
        out = excerpt(text, 500)
        assert len(out) <= 500 and out.endswith("…")
        assert secret[:10] not in out and secret[-10:] not in out
    huge = ("z" * 1000 + secret) * 60_000  # ~60 MB
    out = excerpt(huge.encode(), 500)
    assert len(out) == 500 and secret not in out
    assert excerpt("  short  ", 500) == "short" and excerpt("", 500) == ""
