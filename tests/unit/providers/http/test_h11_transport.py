"""The h11 sender (the owned HTTP path, both backends) against a raw HTTP/1.1 server: pool, bodies, failures, seam."""

from __future__ import annotations

import gzip
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType

import anyio
import anyio.abc
import httpx
import pytest
from anyio.streams.tls import TLSListener

from agentactors.errors import ResponseTooLargeError
from agentactors.providers.http.body import BodyReader
from agentactors.providers.http.h11_transport import H11Response, H11Sender
from agentactors.providers.http.transport import ENV, ClientSender, owned_sender
from tests.support.raw_http import read_request
from tests.support.tls import TestAuthority
from tests.unit.providers.http._early_answer import TOO_LARGE, answering_early

pytestmark = pytest.mark.anyio

TIMEOUT = httpx.Timeout(5.0)
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-test"}
Reply = Callable[[bytes, anyio.abc.ByteStream], Awaitable[bool]]


def content_length(body: bytes, *extra: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" + b"".join(extra)
    return head + b"content-length: %d\r\n\r\n" % len(body) + body


def chunked(*parts: bytes) -> bytes:
    out = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    for part in parts:
        out += b"%x\r\n%s\r\n" % (len(part), part)
    return out + b"0\r\n\r\n"


def replying(data: bytes, *, close: bool = False) -> Reply:
    async def reply(_: bytes, stream: anyio.abc.ByteStream) -> bool:
        await stream.send(data)
        return not close

    return reply


class RawServer:
    """Reads HTTP/1.1 requests on 127.0.0.1 and answers each with ``reply`` (``False``: then close)."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.accepted = 0
        self.requests: list[bytes] = []
        self.disconnects = 0  # connections the client closed
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    async def serve(self, stream: anyio.abc.ByteStream) -> None:
        self.accepted += 1
        buffer = b""
        async with stream:
            try:
                while True:
                    head, body, buffer = await read_request(stream, buffer)
                    self.requests.append(head + b"\r\n\r\n" + body)
                    if not await self.reply(body, stream):
                        return
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                self.disconnects += 1


@asynccontextmanager
async def raw_server(reply: Reply) -> AsyncIterator[RawServer]:
    server = RawServer(reply)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server.serve)
        yield server
        tg.cancel_scope.cancel()


async def read_all(response: H11Response) -> bytes:
    return b"".join([chunk async for chunk in response.aiter_raw()])


async def until(check: Callable[[], bool]) -> None:
    """Poll ``check`` for up to 5 s: what it watches happens in another task or on the server's side."""
    for _ in range(500):
        if check():
            return
        await anyio.sleep(0.01)
    raise AssertionError("not within 5 s")


# --- reuse and the pool -----------------------------------------------------------------------------


async def test_one_connection_serves_request_after_request() -> None:
    async with raw_server(replying(content_length(b'{"ok": true}'))) as server:
        sender = H11Sender(timeout=TIMEOUT)
        for i in range(3):
            response = await sender.send(server.url, HEADERS, b'{"n": %d}' % i)
            assert (response.status_code, await read_all(response)) == (200, b'{"ok": true}')
            assert response.headers["Content-Type"] == "application/json"
        assert server.accepted == 1 and sender.connections == (1, 1)
        request = server.requests[-1].lower()
        assert b"post /v1/chat/completions http/1.1" in request and b"host: 127.0.0.1:" in request
        assert b"content-length: 8" in request and request.endswith(b'{"n": 2}')
        await sender.aclose()
        assert sender.connections == (0, 0)
        await until(lambda: server.disconnects == 1)


async def test_a_chunked_body_is_read_whole_and_its_connection_reused() -> None:
    async with raw_server(replying(chunked(b"data: 1\n\n", b"data: 2\n\n", b"data: [DONE]\n\n"))) as server:
        sender = H11Sender(timeout=TIMEOUT)
        for _ in range(2):
            response = await sender.send(server.url, HEADERS, b"{}")
            assert await read_all(response) == b"data: 1\n\ndata: 2\n\ndata: [DONE]\n\n"
        assert server.accepted == 1
        await sender.aclose()


async def test_a_cancelled_read_discards_its_connection_and_the_server_sees_it() -> None:
    async def half(_: bytes, stream: anyio.abc.ByteStream) -> bool:
        head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        await stream.send(head + b"5\r\nfirst\r\n")
        await stream.receive()  # the rest never comes; this waits for the client to hang up
        return True

    async with raw_server(half) as server:
        sender = H11Sender(timeout=TIMEOUT)
        response = await sender.send(server.url, HEADERS, b"{}")
        chunks = response.aiter_raw()
        assert await chunks.__anext__() == b"first"
        with anyio.move_on_after(0.1):
            await chunks.__anext__()
        assert sender.connections == (0, 0)  # closed, not back in the pool
        await until(lambda: server.disconnects == 1)
        await response.aclose()  # idempotent


async def test_a_response_closed_half_read_is_not_reused() -> None:
    async with raw_server(replying(chunked(b"a" * 10, b"b" * 10))) as server:
        sender = H11Sender(timeout=TIMEOUT)
        response = await sender.send(server.url, HEADERS, b"{}")
        await response.aclose()
        assert sender.connections == (0, 0)
        response = await sender.send(server.url, HEADERS, b"{}")
        assert await read_all(response) == b"a" * 10 + b"b" * 10
        assert server.accepted == 2
        await sender.aclose()


async def test_a_cancelled_send_closes_its_connection() -> None:
    async def silent(_: bytes, stream: anyio.abc.ByteStream) -> bool:
        await anyio.sleep_forever()
        return True

    async with raw_server(silent) as server:
        sender = H11Sender(timeout=TIMEOUT)
        with anyio.move_on_after(0.1):
            await sender.send(server.url, HEADERS, b"{}")
        assert sender.connections == (0, 0)
        await until(lambda: len(server.requests) == 1)


async def test_a_keep_alive_connection_the_server_closed_is_not_used_again() -> None:
    async with raw_server(replying(content_length(b"{}"), close=True)) as server:
        sender = H11Sender(timeout=TIMEOUT)
        assert await read_all(await sender.send(server.url, HEADERS, b"{}")) == b"{}"
        assert sender.connections == (1, 1)  # the server said nothing of closing
        await anyio.sleep(0.05)  # its FIN arrives
        assert await read_all(await sender.send(server.url, HEADERS, b"{}")) == b"{}"
        assert server.accepted == 2
        await sender.aclose()


async def test_connection_close_from_the_server_is_honoured() -> None:
    async with raw_server(replying(content_length(b"{}", b"connection: close\r\n"), close=True)) as server:
        sender = H11Sender(timeout=TIMEOUT)
        assert await read_all(await sender.send(server.url, HEADERS, b"{}")) == b"{}"
        assert sender.connections == (0, 0)


async def test_an_idle_connection_past_its_expiry_is_closed_not_reused() -> None:
    async with raw_server(replying(content_length(b"{}"))) as server:
        sender = H11Sender(timeout=TIMEOUT, keepalive_expiry=0.01)
        await read_all(await sender.send(server.url, HEADERS, b"{}"))
        await anyio.sleep(0.05)
        await read_all(await sender.send(server.url, HEADERS, b"{}"))
        assert server.accepted == 2 and sender.connections == (1, 1)
        await sender.aclose()


async def test_at_the_limit_a_request_waits_for_a_free_connection_or_times_out() -> None:
    release = anyio.Event()

    async def held(_: bytes, stream: anyio.abc.ByteStream) -> bool:
        await release.wait()
        await stream.send(content_length(b"{}"))
        return True

    async with raw_server(held) as server:
        sender = H11Sender(timeout=httpx.Timeout(5.0, pool=0.1), max_connections=1)
        got: list[bytes] = []

        async def first() -> None:
            got.append(await read_all(await sender.send(server.url, HEADERS, b"{}")))

        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await until(lambda: len(server.requests) == 1)
            with pytest.raises(httpx.PoolTimeout):
                await sender.send(server.url, HEADERS, b"{}")

            async def second() -> None:
                got.append(await read_all(await sender.send(server.url, HEADERS, b"{}", httpx.Timeout(5.0))))

            tg.start_soon(second)
            await anyio.sleep(0.05)
            release.set()
        assert got == [b"{}", b"{}"] and server.accepted == 1
        await sender.aclose()


@asynccontextmanager
async def never_answering() -> AsyncIterator[tuple[int, list[anyio.abc.SocketStream]]]:
    """A listener that accepts and then says nothing (a TLS handshake to it never completes); yields its port and
    the connections it accepted."""
    accepted: list[anyio.abc.SocketStream] = []

    async def hold(stream: anyio.abc.SocketStream) -> None:
        accepted.append(stream)
        async with stream:
            await anyio.sleep_forever()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, hold)
        yield listener.extra(anyio.abc.SocketAttribute.local_port), accepted
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("ends", ["times out", "is cancelled"])
async def test_a_connect_that_ends_without_a_connection_gives_its_room_to_a_waiting_request(ends: str) -> None:
    """At the limit, a request waiting for room goes as soon as a connect fails or is cancelled (as httpx's pool).

    It used to wait for a release that never came, until its pool timeout (3 s here; a connect that
    ends takes at most 0.5 s): the failed connect freed its place but woke no one.
    """
    async with raw_server(replying(content_length(b"{}"))) as server, never_answering() as (port, accepted):
        connect = 0.5 if ends == "times out" else 30.0
        sender = H11Sender(timeout=httpx.Timeout(5.0, connect=connect, pool=3.0), max_connections=1)
        stuck = anyio.CancelScope()
        failed: list[BaseException] = []
        got: list[bytes] = []

        async def first() -> None:
            with stuck:
                try:
                    await sender.send(f"https://127.0.0.1:{port}/", HEADERS, b"{}")  # the TLS handshake never ends
                except httpx.ConnectTimeout as exc:
                    failed.append(exc)

        async def second() -> None:
            got.append(await read_all(await sender.send(server.url, HEADERS, b"{}")))

        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await until(lambda: len(accepted) == 1)  # the first request is connecting: the pool is at its limit
            tg.start_soon(second)
            if ends == "is cancelled":
                await anyio.sleep(0.1)
                stuck.cancel()
        assert got == [b"{}"] and len(failed) == (ends == "times out")
        assert server.accepted == 1 and sender.connections == (1, 1)
        await sender.aclose()


async def test_a_request_larger_than_the_socket_buffer_is_sent_whole() -> None:
    big = b"x" * (8 << 20)  # far past what the kernel takes at once: the sender must wait to write the rest
    async with raw_server(replying(content_length(b"{}"))) as server:
        sender = H11Sender(timeout=TIMEOUT)
        assert await read_all(await sender.send(server.url, HEADERS, big)) == b"{}"
        assert server.requests[0].endswith(b"\r\n\r\n" + big) and sender.connections == (1, 1)
        await sender.aclose()


async def test_a_server_that_reads_nothing_is_a_write_timeout() -> None:
    # A listener nobody accepts from: the kernel completes the handshake and buffers what it can, then
    # nothing more is taken.  (An anyio server would not do: its asyncio stream reads eagerly.)  On trio
    # the sender waits for the socket, on asyncio for the transport's buffer to drain: the write timeout
    # ends either.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        sender = H11Sender(timeout=httpx.Timeout(5.0, write=0.2, read=0.5))
        with pytest.raises(httpx.WriteTimeout):
            await sender.send(f"http://127.0.0.1:{port}/", HEADERS, b"x" * (64 << 20))
        assert sender.connections == (0, 0)


@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest.mark.parametrize("then", ["lingers", "resets"])
async def test_an_answer_sent_before_the_body_was_read_is_returned_not_a_write_error(
    then: str, scheme: str, anyio_backend_name: str, request: pytest.FixtureRequest
) -> None:
    """A server that answers a large upload early (413, ``connection: close``) and stops reading: its answer is the
    response (as httpcore and aiohttp return it), its connection closed after it — not a retryable ``WriteError``.

    ``lingers``: it half-closes and drains (nginx); on asyncio the transport closed itself at the EOF and the
    next chunk was written to it (an ``AttributeError`` from asyncio).  ``resets``: the send fails with a reset.
    """
    tls = request.getfixturevalue("authority").server_context() if scheme == "https" else None
    big = b"x" * (32 << 20)  # past what the kernel's buffers take: the server answers while the client still sends
    async with answering_early(then, tls=tls) as port:
        sender = H11Sender(timeout=TIMEOUT)
        url = f"{scheme}://127.0.0.1:{port}/"
        if (scheme, then, anyio_backend_name) == ("https", "resets", "trio"):
            # anyio's TLS stream (as trio's own, under httpcore) refuses every read once a send failed: the answer
            # cannot be read, and the send's error stands.
            with anyio.fail_after(10), pytest.raises(httpx.WriteError):
                await sender.send(url, HEADERS, big)
            assert sender.connections == (0, 0)
            return
        with anyio.fail_after(10):
            response = await sender.send(url, HEADERS, big)
            assert response.status_code == 413 and response.headers["connection"] == "close"
            assert await read_all(response) == TOO_LARGE
        assert sender.connections == (0, 0)
        await sender.aclose()


async def test_a_send_reset_before_any_answer_is_still_a_write_error() -> None:
    """A reset with nothing answered: the read for an early answer finds none, and the send's own error is raised."""
    async with answering_early("resets", answer=b"") as port:
        sender = H11Sender(timeout=TIMEOUT)
        with anyio.fail_after(10), pytest.raises(httpx.WriteError) as info:
            await sender.send(f"http://127.0.0.1:{port}/", HEADERS, b"x" * (32 << 20))
        assert isinstance(info.value.__cause__, OSError) and sender.connections == (0, 0)
        await sender.aclose()


async def test_a_body_that_arrives_faster_than_it_is_read_comes_whole_and_in_order() -> None:
    """Megabytes sent at once to a reader that waits first: reading pauses while they pile up, and resumes."""
    body = b"".join(b"%08d" % i for i in range(512 * 1024))  # 4 MiB, every offset tells where it came from
    async with raw_server(replying(content_length(body))) as server:
        sender = H11Sender(timeout=TIMEOUT)
        for _ in range(2):  # and the connection serves the next request as usual
            response = await sender.send(server.url, HEADERS, b"{}")
            await anyio.sleep(0.3)  # the server writes all it can meanwhile
            assert await read_all(response) == body
        assert server.accepted == 1 and sender.connections == (1, 1)
        await sender.aclose()


async def test_a_cancelled_caller_sends_nothing_on_an_idle_connection() -> None:
    async with raw_server(replying(content_length(b"{}"))) as server:
        sender = H11Sender(timeout=TIMEOUT)
        await read_all(await sender.send(server.url, HEADERS, b"{}"))
        with anyio.CancelScope() as scope:
            scope.cancel()
            await sender.send(server.url, HEADERS, b'{"late": 1}')
        assert scope.cancelled_caught and sender.connections == (0, 0)
        await until(lambda: server.disconnects == 1)
        assert len(server.requests) == 1


async def test_closing_the_sender_fails_a_read_in_progress_with_a_read_error() -> None:
    async def first_chunk_only(_: bytes, stream: anyio.abc.ByteStream) -> bool:
        await stream.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await stream.receive()
        return True

    async with raw_server(first_chunk_only) as server:
        sender = H11Sender(timeout=TIMEOUT)
        response = await sender.send(server.url, HEADERS, b"{}")
        chunks = response.aiter_raw()
        assert await chunks.__anext__() == b"first"
        failed: list[BaseException] = []

        async def read_on() -> None:
            try:
                await chunks.__anext__()
            except httpx.TransportError as exc:
                failed.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_on)
            await anyio.sleep(0.05)  # the read is waiting for bytes
            await sender.aclose()
        assert len(failed) == 1 and isinstance(failed[0], httpx.ReadError)
        assert sender.connections == (0, 0)


# --- bodies through BodyReader ---------------------------------------------------------------------


async def test_a_gzip_body_is_inflated_by_the_reader_and_bounded_by_its_limit() -> None:
    text = b'{"answer": "' + b"x" * 5000 + b'"}'
    packed = content_length(gzip.compress(text), b"content-encoding: gzip\r\n")
    async with raw_server(replying(packed)) as server:
        sender = H11Sender(timeout=TIMEOUT)
        reader = BodyReader(
            await sender.send(server.url, HEADERS, b"{}"), limit=1 << 20, limit_name="l", provider="p", model="m"
        )
        try:
            assert await reader.read_all() == text
        finally:
            await reader.aclose()
        assert sender.connections == (1, 1)
        small = BodyReader(
            await sender.send(server.url, HEADERS, b"{}"), limit=100, limit_name="l", provider="p", model="m"
        )
        with pytest.raises(ResponseTooLargeError):
            await small.read_all()
        await small.aclose()
        # The whole (small) compressed body had arrived with the head: the connection is clean, so kept.
        assert sender.connections == (1, 1) and server.accepted == 1
        await sender.aclose()


# --- failures are httpx's exceptions ---------------------------------------------------------------


async def test_a_refused_connection_is_a_connect_error() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()
    with pytest.raises(httpx.ConnectError):
        await H11Sender(timeout=TIMEOUT).send(f"http://127.0.0.1:{port}/", HEADERS, b"{}")


async def test_a_server_that_closes_without_answering_is_a_remote_protocol_error() -> None:
    async def hang_up(_: bytes, stream: anyio.abc.ByteStream) -> bool:
        return False

    async with raw_server(hang_up) as server:
        sender = H11Sender(timeout=TIMEOUT)
        with pytest.raises(httpx.RemoteProtocolError):
            await sender.send(server.url, HEADERS, b"{}")
        assert sender.connections == (0, 0)


async def test_a_body_cut_short_is_a_remote_protocol_error() -> None:
    cut = content_length(b'{"ok": true}')[:-4]
    async with raw_server(replying(cut, close=True)) as server:
        sender = H11Sender(timeout=TIMEOUT)
        response = await sender.send(server.url, HEADERS, b"{}")
        with pytest.raises(httpx.RemoteProtocolError):
            await read_all(response)
        assert sender.connections == (0, 0)


async def test_a_silent_server_is_a_read_timeout() -> None:
    async def silent(_: bytes, stream: anyio.abc.ByteStream) -> bool:
        await anyio.sleep_forever()
        return True

    async with raw_server(silent) as server:
        sender = H11Sender(timeout=httpx.Timeout(5.0, read=0.1))
        with pytest.raises(httpx.ReadTimeout):
            await sender.send(server.url, HEADERS, b"{}")
        assert sender.connections == (0, 0)


async def test_a_stream_that_stalls_mid_body_is_a_read_timeout_and_its_connection_dropped() -> None:
    async def stalls(_: bytes, stream: anyio.abc.ByteStream) -> bool:
        await stream.send(chunked(b"data: 1\n\n")[: -len(b"0\r\n\r\n")])  # the head and one part, no end
        await stream.receive()  # nothing comes: the client closes (EndOfStream, counted as a disconnect)
        return True

    async with raw_server(stalls) as server:
        sender = H11Sender(timeout=httpx.Timeout(5.0, read=0.2))
        response = await sender.send(server.url, HEADERS, b"{}")
        assert await response.__anext__() == b"data: 1\n\n"
        with anyio.fail_after(5), pytest.raises(httpx.ReadTimeout):
            await response.__anext__()
        assert sender.connections == (0, 0)
        await until(lambda: server.disconnects == 1)


SLOW = b'{"slow": true}'


class BesideASlowRequest:
    """A request answered only when :meth:`run` says so (:attr:`reply` serves it), and one timed out meanwhile.

    It checks that a short timeout set after a long one fires on time and ends only its own request.
    (On trio the waits share one watchdog per run: the short deadline must wake it early, and expire
    only the waiter that is due.)
    """

    def __init__(self, other: Reply) -> None:
        self.other = other  # how every request but the slow one is answered
        self.answer = anyio.Event()

    async def reply(self, body: bytes, stream: anyio.abc.ByteStream) -> bool:
        if body != SLOW:
            return await self.other(body, stream)
        await self.answer.wait()
        await stream.send(content_length(b'{"late": true}'))
        return True

    async def run(
        self, sender: H11Sender, url: str, server: RawServer, times_out: Callable[[], Awaitable[object]]
    ) -> None:
        """The slow request (read timeout 30 s) first, then ``times_out()``, which must raise ``ReadTimeout`` soon."""
        got: list[bytes] = []

        async def slow() -> None:
            got.append(await read_all(await sender.send(url, HEADERS, SLOW)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await until(lambda: len(server.requests) == 1)  # the long wait is watched first
            started = anyio.current_time()
            with anyio.fail_after(10), pytest.raises(httpx.ReadTimeout):
                await times_out()
            assert anyio.current_time() - started < 4  # not the other's 30 s
            self.answer.set()
        assert got == [b'{"late": true}']
        assert sender.connections == (1, 1)  # the slow request's connection, clean; the timed-out one dropped
        await sender.aclose()


async def test_each_wait_keeps_its_own_read_timeout_beside_the_others() -> None:
    async def silent(_: bytes, stream: anyio.abc.ByteStream) -> bool:
        await anyio.sleep_forever()
        return True

    case = BesideASlowRequest(silent)
    async with raw_server(case.reply) as server:
        sender = H11Sender(timeout=httpx.Timeout(5.0, read=30.0))
        await case.run(sender, server.url, server,
                       lambda: sender.send(server.url, HEADERS, b"{}", httpx.Timeout(5.0, read=0.2)))


async def test_a_header_value_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    async with raw_server(replying(content_length(b"{}"))) as server:
        sender = H11Sender(timeout=TIMEOUT)
        with pytest.raises(httpx.LocalProtocolError):
            await sender.send(server.url, {"x-trace": "a\nb"}, b"{}")
        assert server.accepted == 0 and sender.connections == (0, 0)


async def test_a_url_that_is_not_http_is_unsupported() -> None:
    with pytest.raises(httpx.UnsupportedProtocol):
        await H11Sender(timeout=TIMEOUT).send("ftp://example.test/x", HEADERS, b"{}")


async def test_a_hundred_waits_each_end_as_their_own_timeout_says(anyio_backend_name: str) -> None:
    """Fast answers inside a long timeout and slow ones past a short one, interleaved, at once.

    Every request ends — answered or ``ReadTimeout``, as its own timeout says, none hung and none ended by
    another's deadline — and what is left is consistent: the answered requests' connections idle, the
    timed-out ones' closed, and (on trio) nothing left watched by the run's watchdog.
    """

    async def after_the_delay_asked(body: bytes, stream: anyio.abc.ByteStream) -> bool:
        await anyio.sleep(float(body))
        await stream.send(content_length(b'{"ok": true}'))
        return True

    outcomes: dict[str, list[str]] = {"fast": [], "slow": []}
    async with raw_server(after_the_delay_asked) as server:
        sender = H11Sender(timeout=TIMEOUT, max_connections=128, max_keepalive_connections=128)

        async def one(kind: str) -> None:
            delay, read = (b"0.02", 3.0) if kind == "fast" else (b"5", 0.15)
            try:
                await read_all(await sender.send(server.url, HEADERS, delay, httpx.Timeout(5.0, read=read)))
                outcomes[kind].append("answered")
            except httpx.ReadTimeout:
                outcomes[kind].append("timed out")

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for i in range(100):
                    tg.start_soon(one, "fast" if i % 2 else "slow")
        assert outcomes == {"fast": ["answered"] * 50, "slow": ["timed out"] * 50}
        assert sender.connections[0] == sender.connections[1] <= 50  # only the answered ones' connections, idle
        if anyio_backend_name == "trio":
            from agentactors.providers.http._trio_deadlines import deadlines

            assert len(deadlines()) == 0
        await sender.aclose()


# --- the seam --------------------------------------------------------------------------------------


async def test_the_seam_takes_h11_on_both_backends_and_keeps_the_escape_hatches(
    anyio_backend_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for proxy in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.delenv(ENV, raising=False)
    sender = owned_sender(TIMEOUT)
    assert isinstance(sender, H11Sender) and sender.name == "h11"
    await sender.aclose()
    monkeypatch.setenv(ENV, "aiohttp")  # the aiohttp sender on asyncio; trio, which aiohttp cannot run on, keeps h11
    chosen = owned_sender(TIMEOUT)
    assert chosen.name == ("aiohttp" if anyio_backend_name == "asyncio" else "h11")
    await chosen.aclose()
    monkeypatch.setenv(ENV, "httpx")
    forced = owned_sender(TIMEOUT)
    assert isinstance(forced, ClientSender) and forced.name == "httpx"
    await forced.aclose()
    monkeypatch.setenv(ENV, "h11")
    assert isinstance(owned_sender(TIMEOUT), H11Sender)
    monkeypatch.delenv(ENV)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # a list of hosts no proxy serves: no proxy at all
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    unproxied = owned_sender(TIMEOUT)
    assert isinstance(unproxied, H11Sender)
    await unproxied.aclose()
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    proxied = owned_sender(TIMEOUT)
    assert proxied.name == "httpx"  # httpx honours proxies
    await proxied.aclose()


# --- the owned pool's size ---------------------------------------------------------------------------


@pytest.fixture
def seam(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The transport module with its pool limits forgotten (read again from the environment), and the
    limits a test made forgotten after it: the next test's senders get the process's own."""
    from agentactors.providers.http import transport

    monkeypatch.delattr(transport, "OWNED_LIMITS", raising=False)  # restored after the test if it was made
    yield transport
    vars(transport).pop("OWNED_LIMITS", None)


@pytest.mark.parametrize("transport", ["auto", "h11", "httpx"])
async def test_the_owned_pool_size_comes_from_the_environment(
    transport: str, seam: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six requests at once through a pool of two: the server never holds more than two connections."""
    for proxy in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv(ENV, transport)
    monkeypatch.setenv(seam.MAX_CONNECTIONS_ENV, "2")
    in_flight, peak = 0, 0

    async def slow(_: bytes, stream: anyio.abc.ByteStream) -> bool:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.1)
        in_flight -= 1
        await stream.send(content_length(b'{"ok": true}'))
        return True

    bodies: list[bytes] = []
    async with raw_server(slow) as server:
        sender = owned_sender(TIMEOUT)
        assert seam.OWNED_LIMITS.max_connections == 2

        async def one(i: int) -> None:
            response = await sender.send(server.url, HEADERS, b'{"n": %d}' % i)
            bodies.append(b"".join([chunk async for chunk in response.aiter_raw()]))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for i in range(6):
                    tg.start_soon(one, i)
        await sender.aclose()
    assert bodies == [b'{"ok": true}'] * 6 and len(server.requests) == 6
    assert peak == 2, peak  # requests at the server at once: reached, never exceeded
    assert server.accepted == 2  # and the two connections were kept and reused


@pytest.mark.parametrize("value", ["0", "-3", "many", "2.5"])
def test_a_pool_size_that_is_not_a_positive_number_is_a_clear_error(
    value: str, seam: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(seam.MAX_CONNECTIONS_ENV, value)
    with pytest.raises(ValueError, match=f"AGENTACTORS_HTTP_MAX_CONNECTIONS must be a positive whole number.*{value}"):
        owned_sender(TIMEOUT)
    monkeypatch.delenv(seam.MAX_CONNECTIONS_ENV)
    assert seam.OWNED_LIMITS.max_connections == 256  # unset: the default, and nothing was cached by the error


def test_response_headers_look_up_by_name_as_httpx_does_without_building_the_whole_mapping() -> None:
    from agentactors.providers.http.h11_transport import _Headers

    headers = _Headers(
        [(b"content-type", b"text/event-stream"), (b"x-seen", b"one"), (b"x-seen", b"two"), (b"x-latin", b"caf\xe9")]
    )
    assert headers["Content-Type"] == "text/event-stream"
    assert headers.get("x-seen") == "one, two"  # repeated: joined, as httpx joins them
    assert headers.get("X-Latin") == "café"
    assert headers.get("missing", "dflt") == "dflt" and headers.get("missing") is None
    assert "CONTENT-TYPE" in headers and "missing" not in headers
    assert object() not in headers
    assert headers.get("x-\u20ac") is None  # a name no header can have
    with pytest.raises(KeyError):
        headers["missing"]
    expected = {"content-type": "text/event-stream", "x-seen": "one, two", "x-latin": "café"}
    assert dict(headers) == expected and len(headers) == 3
    # Once iterated (the whole mapping built), lookups read it, with the same answers.
    assert headers["x-seen"] == "one, two" and headers.get("Content-Type") == "text/event-stream"


# --- HTTPS ---------------------------------------------------------------------------------------------


@asynccontextmanager
async def tls_server(reply: Reply, authority: TestAuthority) -> AsyncIterator[RawServer]:
    server = RawServer(reply)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    tls = TLSListener(listener, authority.server_context(), standard_compatible=False)
    async with tls, anyio.create_task_group() as tg:
        tg.start_soon(tls.serve, server.serve)
        yield server
        tg.cancel_scope.cancel()


@pytest.fixture
def authority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestAuthority:
    """A CA of this test's own, which the sender trusts through ``SSL_CERT_FILE`` (as httpx's context reads it)."""
    made = TestAuthority(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(made.ca_file))
    return made


async def test_https_requests_reuse_their_connection_and_stream_whole(authority: TestAuthority) -> None:
    """Over TLS (asyncio's own TLS layer under the lean protocol; anyio's TLS stream on trio), as over TCP."""
    stream = chunked(b"data: 1\n\n", b"data: 2\n\n", b"data: [DONE]\n\n")
    answers = iter([content_length(b'{"ok": true}'), stream, content_length(b'{"ok": true}')])

    async def reply(_: bytes, s: anyio.abc.ByteStream) -> bool:
        await s.send(next(answers))
        return True

    async with tls_server(reply, authority) as server:
        sender = H11Sender(timeout=TIMEOUT)
        url = server.url.replace("http://", "https://")
        assert await read_all(await sender.send(url, HEADERS, b"{}")) == b'{"ok": true}'
        assert await read_all(await sender.send(url, HEADERS, b"{}")) == b"data: 1\n\ndata: 2\n\ndata: [DONE]\n\n"
        big = b"y" * (3 << 20)  # a request body past one TLS record, and past what a socket takes at once
        assert await read_all(await sender.send(url, HEADERS, big)) == b'{"ok": true}'
        assert server.accepted == 1 and server.requests[-1].endswith(big) and sender.connections == (1, 1)
        await sender.aclose()
        assert sender.connections == (0, 0)
        await until(lambda: server.disconnects == 1)


async def test_a_certificate_the_client_does_not_trust_is_a_connect_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stranger = TestAuthority(tmp_path)  # signs the server's certificate; the client trusts another CA
    (tmp_path / "other").mkdir()
    monkeypatch.setenv("SSL_CERT_FILE", str(TestAuthority(tmp_path / "other").ca_file))
    async with tls_server(replying(content_length(b"{}")), stranger) as server:
        sender = H11Sender(timeout=TIMEOUT)
        with pytest.raises(httpx.ConnectError) as info:
            await sender.send(server.url.replace("http://", "https://"), HEADERS, b"{}")
        assert isinstance(info.value.__cause__, ssl.SSLError) and "certificate verify failed" in str(info.value)
        assert server.requests == [] and sender.connections == (0, 0)
        await sender.aclose()


async def test_https_timeouts_end_only_their_own_request_and_drop_its_connection(authority: TestAuthority) -> None:
    """Over TLS, a server silent after the head times the read out; a slow one inside its timeout still answers.

    (On trio a TLS wait sits under anyio's TLS stream: the watchdog wakes it through the socket below.)
    """

    async def stalls(_: bytes, stream: anyio.abc.ByteStream) -> bool:
        await stream.send(chunked(b"data: 1\n\n")[: -len(b"0\r\n\r\n")])
        await anyio.sleep_forever()
        return True

    case = BesideASlowRequest(stalls)
    async with tls_server(case.reply, authority) as server:
        url = server.url.replace("http://", "https://")
        sender = H11Sender(timeout=httpx.Timeout(5.0, read=30.0))

        async def stalled_mid_body() -> None:
            response = await sender.send(url, HEADERS, b"{}", httpx.Timeout(5.0, read=0.2))
            assert await response.__anext__() == b"data: 1\n\n"
            await response.__anext__()

        await case.run(sender, url, server, stalled_mid_body)
