"""Hostile vendors over loopback, per wire and on both backends (aiohttp under asyncio, httpcore under trio).

A tiny raw HTTP server (a thread per connection) answers every request with one scripted hostile
response — a gzip bomb, an endless chunked body, a 60 MB error page, an SSE line that never ends,
garbage, a truncated body, a trickle — and counts the bytes it managed to send.  Each case must
end in its typed error, read no further than its limit (the server's count, less what the
kernel's socket buffers held, says so), and keep the event loop responsive (a ticker task
records the longest gap; it is asserted loosely: the old code blocked for 5-30 s).
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

from agentactors.errors import (
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    ProviderTimeout,
    ResponseTooLargeError,
    StreamInterruptedError,
)
from agentactors.messages import LLMRequest, Message
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.http.provider import HTTPProvider
from agentactors.providers.openai.provider import OpenAIProvider

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

MiB = 1024 * 1024
REQUEST = LLMRequest([Message.user("hi")], max_tokens=16)
WIRES = ("openai", "anthropic", "gemini")
# What the kernel may hold between the server's send() and the client's read (loopback buffers).
SOCKET_SLACK = 24 * MiB

Script = Callable[[socket.socket], Iterator[bytes]]


def head(status: int = 200, ctype: str = "application/json", **extra: str) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"content-type: {ctype}"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def chunked(pieces: Iterator[bytes]) -> Iterator[bytes]:
    for piece in pieces:
        yield f"{len(piece):x}\r\n".encode() + piece + b"\r\n"


_BOMB: list[bytes] = []


def gzip_bomb() -> bytes:
    """512 MiB of zeros, gzipped once per session (about 0.5 MB)."""
    if not _BOMB:
        z = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        zeros = b"\0" * MiB
        _BOMB.append(b"".join(z.compress(zeros) for _ in range(512)) + z.flush())
    return _BOMB[0]


def endless_events(wire: str) -> Iterator[bytes]:
    if wire == "anthropic":
        yield (b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
               b'"role":"assistant","content":[],"model":"m","usage":{"input_tokens":1,"output_tokens":0}}}\n\n'
               b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
               b'"content_block":{"type":"text","text":""}}\n\n')
        frame = (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                 b'"delta":{"type":"text_delta","text":"a"}}\n\n')
    elif wire == "gemini":
        frame = b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"a"}]}}]}\n\n'
    else:
        frame = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    while True:
        yield frame * 64


class HostileServer:
    """Answers every request with ``script`` (a generator of raw bytes); counts the bytes sent."""

    def __init__(self) -> None:
        self.script: Callable[[], Iterator[bytes]] = lambda: iter(())
        self.sent = 0
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                data = b""
                while b"\r\n\r\n" not in data:
                    got = sock.recv(65536)
                    if not got:
                        return
                    data += got
                header, _, rest = data.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in header.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(rest) < length:
                    rest += sock.recv(65536)
                try:
                    for piece in outer.script():
                        sock.sendall(piece)
                        outer.sent += len(piece)
                except OSError:
                    return  # the client went away: what it should do past a limit

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        # serve_forever looks for shutdown() every poll_interval: 0.5 s by default, half a second of each test.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    def __enter__(self) -> HostileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with HostileServer() as server:
        yield server


def make(wire: str, port: int, **kw: Any) -> HTTPProvider:
    base = f"http://127.0.0.1:{port}"
    if wire == "openai":
        return OpenAIProvider("m", api_key="sk-hostile-0123456789", base_url=f"{base}/v1", **kw)
    if wire == "anthropic":
        return AnthropicProvider("m", api_key="sk-ant-hostile-0123456789", base_url=base, **kw)
    return GeminiProvider("m", api_key="AIza-hostile-0123456789-abcdefgh", base_url=base, **kw)


class Ticker:
    """Records the longest gap between ticks of a 10 ms ticker: how long the loop was blocked."""

    def __init__(self) -> None:
        self.longest = 0.0

    async def run(self) -> None:
        last = time.monotonic()
        while True:
            await anyio.sleep(0.01)
            now = time.monotonic()
            self.longest = max(self.longest, now - last)
            last = now


async def call(provider: HTTPProvider, *, stream: bool) -> BaseException:
    """Run one call under a ticker; return the exception it ended with (it must end in one)."""
    ticker = Ticker()
    async with provider, anyio.create_task_group() as tg:
        tg.start_soon(ticker.run)
        try:
            if stream:
                async with provider.stream(REQUEST) as events:
                    async for _ in events:
                        pass
            else:
                await provider.complete(REQUEST)
        except ProviderError as exc:
            error: BaseException = exc
        else:
            error = AssertionError("the hostile response was accepted")
        tg.cancel_scope.cancel()
    assert ticker.longest < 3.0, f"the event loop was blocked for {ticker.longest:.1f}s"
    return error


@pytest.mark.parametrize("wire", WIRES)
async def test_a_gzip_bomb_ends_at_the_limit_with_bounded_memory(hostile: HostileServer, wire: str) -> None:
    bomb = gzip_bomb()
    hostile.script = lambda: iter([head(content_encoding="gzip", content_length=str(len(bomb))), bomb])
    tracemalloc.start()
    try:
        error = await call(make(wire, hostile.port, max_response_bytes=16 * MiB), stream=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(error, ResponseTooLargeError) and error.limit == "max_response_bytes"
    assert peak < 48 * MiB, f"peak {peak / MiB:.0f} MiB for a 512 MiB bomb"


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("stream", [False, True])
async def test_an_endless_chunked_body_is_not_read_past_the_limit(
    hostile: HostileServer, wire: str, stream: bool
) -> None:
    junk = b"x" * 65536
    ctype = "text/event-stream" if stream else "application/json"
    hostile.script = lambda: iter([head(ctype=ctype, transfer_encoding="chunked"),
                                   *chunked(iter([junk] * 4096))])  # 256 MiB
    error = await call(make(wire, hostile.port, max_response_bytes=4 * MiB, max_sse_line_bytes=4 * MiB), stream=stream)
    assert isinstance(error, ResponseTooLargeError)
    assert hostile.sent < 4 * MiB + SOCKET_SLACK


@pytest.mark.parametrize("wire", WIRES)
async def test_a_60_mb_error_page_is_read_only_as_far_as_classification_needs(
    hostile: HostileServer, wire: str
) -> None:
    size = 60 * MiB
    hostile.script = lambda: iter([head(500, "text/html", content_length=str(size)), *([b"<p>oops</p>" * 6000] * 1000)])
    error = await call(make(wire, hostile.port), stream=False)
    assert isinstance(error, ProviderError) and (error.kind, error.status) == (ErrorKind.transient, 500)
    assert error.body_excerpt is not None and len(error.body_excerpt) <= 500
    assert hostile.sent < SOCKET_SLACK


@pytest.mark.parametrize("wire", WIRES)
async def test_an_sse_line_that_never_ends(hostile: HostileServer, wire: str) -> None:
    hostile.script = lambda: iter([head(ctype="text/event-stream", transfer_encoding="chunked"),
                                   *chunked(iter([b"data: " + b"y" * 65530] + [b"y" * 65536] * 4096))])
    error = await call(make(wire, hostile.port, max_sse_line_bytes=MiB), stream=True)
    assert isinstance(error, ResponseTooLargeError) and error.limit == "max_sse_line_bytes"
    assert hostile.sent < MiB + SOCKET_SLACK


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    ("case", "raw"),
    [
        ("not json", head(content_length="9") + b"not json!"),
        ("wrong shape", head(content_length="2") + b"[]"),
        ("truncated", head(content_length="1000") + b'{"choices": ['),
        ("bad gzip", head(content_encoding="gzip", content_length="9") + b"not gzip!"),
    ],
)
async def test_malformed_and_truncated_bodies_are_transient_failures(
    hostile: HostileServer, wire: str, case: str, raw: bytes
) -> None:
    hostile.script = lambda: iter([raw])
    error = await call(make(wire, hostile.port), stream=False)
    assert isinstance(error, ProviderError) and error.kind is ErrorKind.transient, case
    if case != "truncated":
        assert isinstance(error, MalformedResponseError), case


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stream_cut_before_its_end_is_never_a_complete_answer(hostile: HostileServer, wire: str) -> None:
    def script() -> Iterator[bytes]:
        yield head(ctype="text/event-stream", transfer_encoding="chunked")
        events = endless_events(wire)
        yield from chunked(iter([next(events)]))
        # ... and the connection closes without the terminating chunk.

    hostile.script = script
    error = await call(make(wire, hostile.port), stream=True)
    assert isinstance(error, StreamInterruptedError | MalformedResponseError | ProviderError)
    assert error.kind is ErrorKind.transient


@pytest.mark.parametrize("wire", WIRES)
async def test_a_trickle_ends_at_the_read_timeout(hostile: HostileServer, wire: str) -> None:
    def script() -> Iterator[bytes]:
        yield head(content_length="100000")
        for _ in range(50):
            time.sleep(0.4)
            yield b" "

    hostile.script = script
    timeout = httpx.Timeout(5.0, read=0.2)
    error = await call(make(wire, hostile.port, timeout=timeout), stream=False)
    assert isinstance(error, ProviderTimeout) and error.retryable
