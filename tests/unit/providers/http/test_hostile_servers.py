"""A hostile HTTP/1.1 server against every sender we own, on both backends: a typed error, a clean pool, no hang.

A real socket server on 127.0.0.1 answers the provider's first request with one broken response — a malformed
status line, a head past the parser's limit, a chunked body with a bad chunk size, a ``content-length`` that
lies either way, a body that does not inflate or inflates past the limit, a body that stalls past the read
timeout or is cut off — and every later request correctly.  Each case must end in the library's typed error
(a :class:`~agentactors.ProviderError` of the right class and kind), within the configured timeouts, and the
next request must get the right answer: the broken connection is never given back to the pool, and nothing the
broken response left on it is read as the next one's.

Senders: the h11 one (asyncio's direct protocol, trio's direct socket), the aiohttp one (asyncio only) and the
httpx one, chosen by ``AGENTACTORS_HTTP_TRANSPORT``, as a deployment chooses.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import anyio.abc
import httpx
import pytest

from agentactors import AnthropicProvider, GeminiProvider, OpenAIProvider
from agentactors.errors import (
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    ProviderTimeoutError,
    ResponseTooLargeError,
    StreamInterruptedError,
)
from agentactors.messages import LLMRequest, Message, StreamEnd, TextDelta
from agentactors.providers.http.transport import ENV
from tests.support.paths import CORPUS
from tests.unit.providers.http._early_answer import answering_early

pytestmark = pytest.mark.anyio

KEY = "sk-hostile-server-test-0000000000000000"
ANSWER = json.dumps(
    {"id": "c", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"},
                                          "finish_reason": "stop"}]}
).encode()
SSE = (
    b'data: {"choices": [{"index": 0, "delta": {"content": "par"}}]}\n\n'
    b'data: {"choices": [{"index": 0, "delta": {"content": "tial"}, "finish_reason": "stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
#: Every wait for bytes ends here: a case that hangs fails in a few seconds, not at the suite's timeout.
READ_TIMEOUT = 0.5
BOUND = 10.0

# What the server does with one request: write to the stream; True keeps the connection open for the next one.
Reply = Callable[[anyio.abc.ByteStream, "Server"], Awaitable[bool]]


def ok(body: bytes = ANSWER, *extra: bytes, ctype: bytes = b"application/json") -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: " + ctype + b"\r\n" + b"".join(extra)
    return head + b"content-length: %d\r\n\r\n" % len(body) + body


def chunked_head(ctype: bytes = b"application/json") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: " + ctype + b"\r\ntransfer-encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class Server:
    """Answers the first request with ``hostile`` and every later one with a correct JSON answer."""

    def __init__(self, hostile: Reply) -> None:
        self.hostile = hostile
        self.requests = 0
        self.last_head = b""  # the last request's head, as the server read it
        self.accepted = 0
        self.port = 0
        self.client_gone = anyio.Event()  # the client closed a connection the hostile reply left open
        self.server_closed = anyio.Event()  # the server closed a connection (after its socket is shut)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def serve(self, stream: anyio.abc.ByteStream) -> None:
        self.accepted += 1
        try:
            await self._serve(stream)
        finally:
            self.server_closed.set()

    async def _serve(self, stream: anyio.abc.ByteStream) -> None:
        buffer = b""
        async with stream:
            try:
                while True:
                    while b"\r\n\r\n" not in buffer:
                        buffer += await stream.receive()
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                    self.last_head = head
                    found = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
                    length = int(found.group(1)) if found else 0
                    while len(buffer) < length:
                        buffer += await stream.receive()
                    buffer = buffer[length:]
                    self.requests += 1
                    if self.requests == 1:
                        keep = await self.hostile(stream, self)
                    else:
                        await stream.send(ok())
                        keep = True
                    if not keep:
                        return
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self.client_gone.set()


@asynccontextmanager
async def serving(hostile: Reply) -> AsyncIterator[Server]:
    server = Server(hostile)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server.serve)
        yield server
        tg.cancel_scope.cancel()


def sends(data: bytes, *, then_close: bool = True) -> Reply:
    async def reply(stream: anyio.abc.ByteStream, server: Server) -> bool:
        await stream.send(data)
        return not then_close

    return reply


def sends_then_stalls(data: bytes) -> Reply:
    """Sends ``data``, then nothing more until the client gives up and closes the connection."""

    async def reply(stream: anyio.abc.ByteStream, server: Server) -> bool:
        await stream.send(data)
        try:
            while await stream.receive():
                pass
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            pass
        server.client_gone.set()
        return False

    return reply


def trickles(data: bytes, *, every: float) -> Reply:
    """Sends ``data`` one byte at a time, ``every`` seconds apart (a server slower than the read timeout)."""

    async def reply(stream: anyio.abc.ByteStream, server: Server) -> bool:
        for i in range(len(data)):
            await stream.send(data[i : i + 1])
            with anyio.move_on_after(every):
                await server.client_gone.wait()
            if server.client_gone.is_set():
                return False
        return False

    return reply


# Each sender on each backend it runs on: aiohttp's is asyncio's only (never generated on trio, not skipped there).
_CASES = [("asyncio", "h11"), ("asyncio", "aiohttp"), ("asyncio", "httpx"), ("trio", "h11"), ("trio", "httpx")]


@pytest.fixture(params=_CASES, ids=[f"{backend}-{sender}" for backend, sender in _CASES])
def backend_sender(request: pytest.FixtureRequest) -> tuple[str, str]:
    return cast(tuple[str, str], request.param)


@pytest.fixture
def anyio_backend(backend_sender: tuple[str, str]) -> str:
    """This module's backends come with its senders (:data:`_CASES`), in place of the suite's own fixture."""
    return backend_sender[0]


@pytest.fixture
def transport(backend_sender: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENV, backend_sender[1])
    return backend_sender[1]


def provider(server: Server, **kw: Any) -> OpenAIProvider:
    timeout = httpx.Timeout(BOUND, read=READ_TIMEOUT)
    return OpenAIProvider("m", api_key=KEY, base_url=server.base_url, timeout=timeout, **kw)


REQUEST = LLMRequest([Message.user("q")])


async def complete_then_recover(server: Server, **kw: Any) -> ProviderError:
    """The first call's typed error; the second call, on the same provider, must get the right answer."""
    async with provider(server, **kw) as p:
        with anyio.fail_after(BOUND):
            with pytest.raises(ProviderError) as caught:
                await p.complete(REQUEST)
            again = await p.complete(REQUEST)
    assert again.content == "fine"
    assert KEY not in repr(caught.value) and KEY not in str(caught.value)
    return caught.value


GZIP_BOMB = gzip.compress(b"\0" * (8 * 1024 * 1024))
CASES: dict[str, tuple[Reply, type[ProviderError]]] = {
    "a malformed status line": (sends(b"HTTP/1.1 2O0 OK\r\ncontent-length: 2\r\n\r\n{}"), ProviderError),
    "a status line that is not HTTP": (sends(b"SSH-2.0-OpenSSH_9.6\r\n\r\n"), ProviderError),
    "a header line past the parser's limit": (
        sends(b"HTTP/1.1 200 OK\r\nx-junk: " + b"a" * 200_000 + b"\r\ncontent-length: 2\r\n\r\n{}"), ProviderError),
    "a head that never ends": (sends(b"HTTP/1.1 200 OK\r\n" + b"x-a: b\r\n" * 40_000, then_close=False),
                               ProviderError),
    "a chunk size that is not hex": (sends(chunked_head() + b"zz\r\n{}\r\n0\r\n\r\n"), ProviderError),
    "a chunk longer than its size": (sends(chunked_head() + b"2\r\n{}xx\r\n0\r\n\r\n"), ProviderError),
    "a chunk size past any body": (sends(chunked_head() + b"ffffffffffffffffff\r\n{}"), ProviderError),
    "a content-length that is not a number": (
        sends(b"HTTP/1.1 200 OK\r\ncontent-length: -2\r\n\r\n{}"), ProviderError),
    "two content-lengths that disagree": (
        sends(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}x"), ProviderError),
    "a content-length longer than the body, then a close": (
        sends(b"HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\n" + ANSWER), ProviderError),
    "a content-length longer than the body, then silence": (
        sends_then_stalls(b"HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\n" + ANSWER), ProviderTimeoutError),
    "a chunked body cut off mid-chunk": (sends(chunked_head() + b"100\r\n" + ANSWER[:20]), ProviderError),
    "a body that stalls past the read timeout": (sends_then_stalls(chunked_head() + chunk(ANSWER[:10])),
                                                 ProviderTimeoutError),
    "a head that stalls past the read timeout": (sends_then_stalls(b"HTTP/1.1 200 OK\r\n"), ProviderTimeoutError),
    "a body trickled slower than the read timeout": (trickles(ok(), every=READ_TIMEOUT * 3), ProviderTimeoutError),
    "a gzip body that does not inflate": (
        sends(ok(b"\x1f\x8b\x08\x00garbage-not-deflate", b"content-encoding: gzip\r\n"), then_close=False),
        MalformedResponseError),
    "a gzip body whose checksum is wrong": (
        sends(ok(gzip.compress(ANSWER)[:-8] + b"\0" * 8, b"content-encoding: gzip\r\n"), then_close=False),
        MalformedResponseError),
    "a deflate body that does not inflate": (
        sends(ok(b"\xff\xfe not deflate at all", b"content-encoding: deflate\r\n"), then_close=False),
        MalformedResponseError),
    "a gzip bomb": (sends(ok(GZIP_BOMB, b"content-encoding: gzip\r\n"), then_close=False), ResponseTooLargeError),
    "a content-encoding not offered": (sends(ok(ANSWER, b"content-encoding: br\r\n"), then_close=False),
                                       MalformedResponseError),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_a_hostile_response_is_a_typed_error_and_the_next_request_is_answered(
    case: str, transport: str
) -> None:
    reply, expected = CASES[case]
    async with serving(reply) as server:
        err = await complete_then_recover(server, max_response_bytes=1024 * 1024)
    assert isinstance(err, expected), f"{case} on {transport}: {err!r}"
    if expected is ResponseTooLargeError:
        assert err.kind is ErrorKind.transient and not err.retryable
    elif expected is not ProviderError:
        assert err.kind is ErrorKind.transient
    else:
        # The server's fault: transient (a fallback chain moves on, a retry may find a sane server).
        assert err.kind is ErrorKind.transient, f"{case} on {transport}: {err!r}"
    if "content-encoding" in case or "gzip" in case or "deflate" in case:
        assert server.accepted in (1, 2)  # HTTP framed it right: its connection may serve again, read to its end
    else:
        assert server.accepted == 2  # the broken connection was never reused


@pytest.mark.parametrize("status", [200, 401, 500])
async def test_a_server_that_echoes_the_request_headers_never_gets_the_key_into_the_error(
    status: int, transport: str
) -> None:
    async def echo(stream: anyio.abc.ByteStream, server: Server) -> bool:
        body = b'{"error": {"message": "bad request: %s"}, "choices": "%s"}' % (server.last_head, server.last_head)
        head = b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\nx-echo: %s\r\n" % (
            status, server.last_head.split(b"\r\n")[-1])
        await stream.send(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        return True

    async with serving(echo) as server:
        err = await complete_then_recover(server)
    assert KEY.encode() in server.last_head  # the key was sent, and echoed back
    seen: BaseException | None = err
    while seen is not None:
        for text in (str(seen), repr(seen), str(getattr(seen, "body_excerpt", "")), repr(seen.args)):
            assert KEY not in text, f"{type(seen).__name__}: {text[:200]}"
        seen = seen.__cause__ or seen.__context__


async def test_bytes_past_a_short_content_length_are_never_read_as_the_next_answer(
    transport: str, request: pytest.FixtureRequest
) -> None:
    if transport == "httpx":
        # httpcore hands h11 the bytes it read past a response, and h11 reads them as the next response's.
        request.applymarker(pytest.mark.xfail(strict=True, reason="httpcore/h11 keep bytes past a response"))
    smuggled = ok(json.dumps({"choices": [{"index": 0, "message": {"content": "SMUGGLED"},
                                           "finish_reason": "stop"}]}).encode())
    async with serving(sends(ok(ANSWER)[:-1] + ANSWER[-1:] + smuggled, then_close=False)) as server:
        async with provider(server) as p:
            with anyio.fail_after(BOUND):
                first = await p.complete(REQUEST)
                second = await p.complete(REQUEST)
    assert (first.content, second.content) == ("fine", "fine")
    assert server.accepted == 2


async def test_a_keep_alive_connection_the_server_closed_is_not_reused(
    transport: str, request: pytest.FixtureRequest
) -> None:
    if transport == "aiohttp":
        # aiohttp's pool asks its protocol, which learns of the FIN only when the loop dispatches it.
        request.applymarker(pytest.mark.xfail(reason="aiohttp reuses a connection whose FIN is not dispatched"))
    async def answer_then_close(stream: anyio.abc.ByteStream, server: Server) -> bool:
        await stream.send(ok())  # says keep-alive (HTTP/1.1, no "connection: close") ...
        return False  # ... and closes

    async with serving(answer_then_close) as server:
        async with provider(server) as p:
            with anyio.fail_after(BOUND):
                first = await p.complete(REQUEST)
                await server.server_closed.wait()
                second = await p.complete(REQUEST)
    assert (first.content, second.content) == ("fine", "fine")
    assert server.accepted == 2


STREAM_CASES: dict[str, Reply] = {
    "a stream cut off mid-chunk": sends(chunked_head(b"text/event-stream") + chunk(SSE[:60]) + b"100\r\nabc"),
    "a stream whose next chunk size is not hex": sends(chunked_head(b"text/event-stream") + chunk(SSE[:60])
                                                       + b"zz\r\n"),
    "a stream that stalls past the read timeout": sends_then_stalls(chunked_head(b"text/event-stream")
                                                                    + chunk(SSE[:60])),
    "a stream whose gzip turns corrupt": sends(
        chunked_head(b"text/event-stream")[:-2] + b"content-encoding: gzip\r\n\r\n"
        + chunk(zlib.compressobj(wbits=31).compress(SSE[:60]) + b"\xff" * 64) + b"0\r\n\r\n", then_close=False),
}


@pytest.mark.parametrize("case", list(STREAM_CASES))
async def test_a_stream_broken_mid_body_ends_in_a_typed_error_and_the_next_request_is_answered(
    case: str, transport: str
) -> None:
    async with serving(STREAM_CASES[case]) as server:
        async with provider(server) as p:
            with anyio.fail_after(BOUND):
                events: list[Any] = []
                with pytest.raises(ProviderError) as caught:
                    async with p.stream(REQUEST) as stream:
                        async for event in stream:
                            events.append(event)
                again = await p.complete(REQUEST)
    err = caught.value
    assert not any(isinstance(e, StreamEnd) for e in events)
    if any(isinstance(e, TextDelta) for e in events):
        assert isinstance(err, StreamInterruptedError), f"{case} on {transport}: {err!r}"
        assert err.partial_text == "".join(e.text for e in events if isinstance(e, TextDelta))
    assert err.kind is ErrorKind.transient, f"{case} on {transport}: {err!r}"
    assert again.content == "fine"
    assert server.accepted == (server.accepted if "gzip" in case else 2)  # HTTP framed the gzip case right


def _corpus_sse(name: str) -> bytes:
    return cast(str, json.loads((CORPUS / name).read_text())["response"]["sse"]).encode()


# Each wire's whole stream, terminal event included ([DONE], message_stop, a chunk with finishReason).
AFTER_TERMINAL_WIRES: dict[str, tuple[Callable[[Server], Any], bytes]] = {
    "openai": (provider, SSE),
    "anthropic": (
        lambda server: AnthropicProvider("claude-sonnet-4-5", api_key=KEY, base_url=f"http://127.0.0.1:{server.port}",
                                         timeout=httpx.Timeout(BOUND, read=READ_TIMEOUT)),
        _corpus_sse("anthropic__stream_text__1.json"),
    ),
    "gemini": (
        lambda server: GeminiProvider("gemini-2.5-flash", api_key=KEY, base_url=f"http://127.0.0.1:{server.port}",
                                      timeout=httpx.Timeout(BOUND, read=READ_TIMEOUT)),
        _corpus_sse("gemini__stream_text__1.json"),
    ),
}


@pytest.mark.parametrize("then", ["drops", "stalls"])
@pytest.mark.parametrize("wire", list(AFTER_TERMINAL_WIRES))
async def test_a_connection_lost_after_the_terminal_event_keeps_the_whole_answer(
    wire: str, then: str, transport: str
) -> None:
    """The whole stream, its terminal event included, then the connection closed before the chunked body's end
    (a proxy closing after the answer), or silence past the read timeout: the answer is complete and paid for,
    so the stream ends with it — never a StreamInterruptedError that no retry would follow."""
    make, sse = AFTER_TERMINAL_WIRES[wire]
    head_and_body = chunked_head(b"text/event-stream") + chunk(sse)  # no "0\r\n\r\n"
    reply = sends(head_and_body) if then == "drops" else sends_then_stalls(head_and_body)
    async with serving(reply) as server:
        async with make(server) as p:
            with anyio.fail_after(BOUND):
                async with p.stream(REQUEST) as stream:
                    events = [event async for event in stream]
                again = await p.complete(REQUEST) if wire == "openai" else None
    end = events[-1]
    assert isinstance(end, StreamEnd), f"{wire} on {transport}: {events[-1]!r}"
    assert end.response.content == "".join(e.text for e in events if isinstance(e, TextDelta)) != ""
    if again is not None:
        assert again.content == "fine"
        assert server.accepted == 2  # the broken connection was never reused


@pytest.mark.parametrize("then", ["lingers", "resets"])
async def test_an_early_413_to_an_oversized_request_is_the_error_on_every_sender(
    then: str, transport: str, request: pytest.FixtureRequest
) -> None:
    """A proxy or vendor that answers an oversized upload 413 after its head, unread, then half-closes and drains
    it (``lingers``) or resets the connection (``resets``): the 413 is the error — a request fault, not retried —
    never a transient write failure that a retry would answer by uploading the same body again."""
    if transport == "httpx" and then == "resets" and request.node.callspec.params["backend_sender"][0] == "asyncio":
        # httpcore reads for an answer after its send failed, but anyio's asyncio stream the failure closed has
        # none to give: a ReadError, transient (its trio stream keeps the answer).
        request.applymarker(pytest.mark.xfail(strict=True, reason="httpcore on asyncio loses the answer to a reset"))
    async with answering_early(then) as port:
        base_url = f"http://127.0.0.1:{port}/v1"
        async with OpenAIProvider("m", api_key=KEY, base_url=base_url, timeout=httpx.Timeout(BOUND)) as p:
            with anyio.fail_after(BOUND), pytest.raises(ProviderError) as caught:
                await p.complete(LLMRequest([Message.user("x" * (32 << 20))]))
    err = caught.value
    assert (err.status, err.kind, err.retryable) == (413, ErrorKind.request, False), f"{transport}: {err!r}"


@pytest.mark.filterwarnings("error")
async def test_a_body_over_a_mebibyte_is_sent_whole_with_no_warning_on_every_sender(transport: str) -> None:
    """A request carrying an image is often over 1 MiB.  aiohttp warns (``ResourceWarning``) of a body that size
    given as bytes; under a test suite's warnings-as-errors that warning was the request's failure.  Every sender
    sends it whole, its length declared, twice (a retry sends the same body again)."""
    async with serving(sends(ok(), then_close=False)) as server:
        async with provider(server) as p:
            text = "x" * (3 << 20)
            for _ in range(2):
                response = await p.complete(LLMRequest([Message.user(text)]))
                assert response.content == "fine"
                declared = re.search(rb"content-length: *(\d+)", server.last_head, re.IGNORECASE)
                assert declared is not None and int(declared.group(1)) > len(text), transport
    assert server.requests == 2


# --- the parser under a server that sends one byte at a time ------------------------------------------------


class _CountingSearch:
    """Stands in for the parser's head-end pattern, counting the bytes each search is asked to scan."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern
        self.scanned = 0

    def search(self, buffer: bytes, start: int = 0) -> re.Match[bytes] | None:
        self.scanned += len(buffer) - start
        return self.pattern.search(buffer, start)


def test_a_head_sent_one_byte_at_a_time_is_scanned_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read used to rescan the whole head so far: 64 KiB a byte at a time cost ~2 G byte scans (20 s of CPU)."""
    from agentactors.providers.http import _response_parser

    counting = _CountingSearch(_response_parser._HEAD_END)
    monkeypatch.setattr(_response_parser, "_HEAD_END", counting)
    head = b"HTTP/1.1 200 OK\r\n" + b"x-a: b\r\n" * 2000 + b"content-length: 2\r\n\r\n{}"
    parser = _response_parser.ResponseParser()
    events: list[Any] = []
    for i in range(len(head)):
        parser.receive(head[i : i + 1])
        while (event := parser.next_event()) is not None:
            events.append(event)
            if event == _response_parser.END:
                break
    assert isinstance(events[0], _response_parser.Head) and b"".join(events[1:]) == b"{}"
    assert counting.scanned < 4 * len(head), counting.scanned
