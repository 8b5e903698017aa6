"""The h11 sender's connections at their edges: TLS closes and stalls, a handshake cut off, a pool kept across runs.

Real sockets on 127.0.0.1 throughout (servers the tests start).  The TLS cases run on both backends
(trio's path is anyio's TLS stream watched by the run's watchdog, asyncio's the loop's own TLS
layer): each failure must reach the caller as the httpx exception the classifier maps, and a
connection that failed is never pooled.  One case is trio's own: a connection pooled in one
``trio.run`` and used in the next must be timed out by the watchdog of the run it is used in.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import httpx
import pytest
import trio
from anyio.streams.tls import TLSStream

from agentactors.providers.http.h11_transport import H11Response, H11Sender
from tests.support.tls import TestAuthority

TIMEOUT = httpx.Timeout(5.0)
HEADERS = {"content-type": "application/json"}
Handler = Callable[[anyio.abc.SocketStream], Awaitable[None]]
#: What a test server's connection may end with when the client hangs up on it: not the test's concern.
HUNG_UP = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, ssl.SSLError, OSError)


@asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[int]:
    """A TCP listener on 127.0.0.1 whose every connection ``handler`` serves; yields its port."""

    async def quietly(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            with contextlib.suppress(*HUNG_UP):
                await handler(stream)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port: int = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, quietly)
        yield port
        tg.cancel_scope.cancel()


async def read_request(stream: anyio.abc.ByteStream) -> bytes:
    """One request's head (the tests' requests carry a two-byte body, read with it or ignored)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += await stream.receive()
    return data


async def read_all(response: H11Response) -> bytes:
    return b"".join([chunk async for chunk in response.aiter_raw()])


@pytest.fixture
def authority(tmp_path: Path) -> TestAuthority:
    return TestAuthority(tmp_path)


# --- connecting -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_server_that_hangs_up_during_the_tls_handshake_is_a_connect_error() -> None:
    """A TLS endpoint that reads the ClientHello and closes (an overloaded balancer does) is ``ConnectError``.

    On trio anyio's TLS stream (``tls_standard_compatible`` off) reports that EOF as ``anyio.EndOfStream``:
    it used to reach the caller as is, which the classifier calls a request fault, never retried.
    """

    async def hang_up(stream: anyio.abc.SocketStream) -> None:
        await stream.receive()  # the ClientHello, read whole: the close is a clean FIN, not a reset

    async with serving(hang_up) as port:
        sender = H11Sender(timeout=TIMEOUT, ssl_context=ssl.create_default_context())
        with anyio.fail_after(10), pytest.raises(httpx.ConnectError) as info:
            await sender.send(f"https://127.0.0.1:{port}/v1/messages", HEADERS, b"{}")
        assert info.value.__cause__ is not None and sender.connections == (0, 0)
        await sender.aclose()


# --- TLS closes and stalls ----------------------------------------------------------------------------


class CutAfter(anyio.abc.ByteStream):
    """A server's TCP stream that, once :attr:`cut` is set, sends only half of what it is given and stalls."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self.stream = stream
        self.cut = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self.stream.receive(max_bytes)

    async def send(self, item: bytes) -> None:
        if not self.cut:
            await self.stream.send(item)
            return
        await self.stream.send(item[: len(item) // 2])  # half a TLS record: the client cannot decrypt it
        await anyio.sleep_forever()

    async def send_eof(self) -> None:
        await self.stream.send_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()


@pytest.mark.anyio
async def test_over_tls_a_read_stalled_mid_record_times_out_and_its_connection_is_dropped(
    authority: TestAuthority,
) -> None:
    """The body's next TLS record arrives half: the wait under the TLS layer still ends as ``ReadTimeout``."""
    hung_up = anyio.Event()

    async def half_a_record(stream: anyio.abc.SocketStream) -> None:
        wire = CutAfter(stream)
        tls = await TLSStream.wrap(wire, server_side=True, ssl_context=authority.server_context(),
                                   standard_compatible=False)
        try:
            await read_request(tls)
            await tls.send(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n" + b"a" * 10)
            wire.cut = True
            async with anyio.create_task_group() as tg:
                tg.start_soon(tls.send, b"b" * 990)  # stalls half way through its record

                async def until_hung_up() -> None:
                    with contextlib.suppress(*HUNG_UP):
                        await stream.receive()  # the client closes its end when its read timed out
                    hung_up.set()
                    tg.cancel_scope.cancel()

                tg.start_soon(until_hung_up)
        finally:
            await anyio.aclose_forcefully(stream)

    async with serving(half_a_record) as port:
        sender = H11Sender(timeout=httpx.Timeout(5.0, read=0.2), ssl_context=authority.client_context())
        with anyio.fail_after(10):
            response = await sender.send(f"https://127.0.0.1:{port}/v1/messages", HEADERS, b"{}")
            assert await response.__anext__() == b"a" * 10
            started = anyio.current_time()
            with pytest.raises(httpx.ReadTimeout):
                await response.__anext__()
            assert anyio.current_time() - started < 4  # its own 0.2 s, not the test's bound
            assert sender.connections == (0, 0)
            await hung_up.wait()
        await sender.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("close_notify", [False, True], ids=["no-close-notify", "close-notify"])
async def test_over_tls_a_close_ends_a_body_read_to_the_close_and_cuts_a_framed_one_short(
    authority: TestAuthority, close_notify: bool
) -> None:
    """A server that closes its TLS connection, with or without ``close_notify`` (most vendors' balancers skip it).

    A body framed by the close ends cleanly; a ``content-length`` body cut short is ``RemoteProtocolError`` —
    never a ``ReadError`` for the missing ``close_notify``, never a hang, and neither connection is pooled.
    """
    answers = iter([
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: 1\n\ndata: 2\n\n",
        b'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"cut',
    ])

    async def answer_then_close(stream: anyio.abc.SocketStream) -> None:
        tls = await TLSStream.wrap(stream, server_side=True, ssl_context=authority.server_context(),
                                   standard_compatible=close_notify)
        await read_request(tls)
        await tls.send(next(answers))
        await anyio.sleep(0.05)  # the answer is read before the close arrives, as it is from a real server
        with contextlib.suppress(*HUNG_UP):
            await tls.aclose()  # with close_notify: sent, then it waits for the client's (which never comes)

    async with serving(answer_then_close) as port:
        url = f"https://127.0.0.1:{port}/v1/messages"
        sender = H11Sender(timeout=TIMEOUT, ssl_context=authority.client_context())
        with anyio.fail_after(10):
            assert await read_all(await sender.send(url, HEADERS, b"{}")) == b"data: 1\n\ndata: 2\n\n"
            assert sender.connections == (0, 0)
            response = await sender.send(url, HEADERS, b"{}")
            with pytest.raises(httpx.RemoteProtocolError):
                await read_all(response)
            assert sender.connections == (0, 0)
        await sender.aclose()


@pytest.mark.anyio
async def test_over_tls_a_server_that_reads_nothing_is_a_write_timeout(authority: TestAuthority) -> None:
    """A TLS server that completes the handshake and then reads nothing: a large body ends in ``WriteTimeout``.

    On asyncio the loop's TLS layer takes any one write whole and says its buffer is full only on the
    next write: a body written at once never waited, and the request ended in the read timeout instead
    (30 s here) with the whole body held in memory.  The sender now writes a large body in chunks.  (The bound
    on the time is generous: encrypting 64 MB on a laptop whose cores are busy took 5 s once.)
    """
    stalled = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(10)
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/v1/messages"

        def handshake_then_read_nothing() -> None:
            with contextlib.suppress(OSError), listener.accept()[0] as connection:
                with authority.server_context().wrap_socket(connection, server_side=True):
                    stalled.wait(60)

        server = threading.Thread(target=handshake_then_read_nothing, name="reads nothing", daemon=True)
        server.start()
        sender = H11Sender(timeout=httpx.Timeout(30.0, write=0.3), ssl_context=authority.client_context())
        try:
            with anyio.fail_after(50):
                started = anyio.current_time()
                with pytest.raises(httpx.WriteTimeout):
                    await sender.send(url, HEADERS, b"x" * (64 << 20))
                assert anyio.current_time() - started < 15  # its own 0.3 s (and the encrypting), not the read's 30 s
            assert sender.connections == (0, 0)
        finally:
            stalled.set()
            await sender.aclose()
            server.join(10)


# --- a pool kept from one trio run to the next ----------------------------------------------------------------


def test_a_connection_pooled_in_an_earlier_trio_run_is_timed_out_by_the_current_runs_watchdog() -> None:
    """A sender's idle connection, opened in one ``trio.run``, serves a request in the next: its read still times out.

    The watchdog is one per run (a ``RunVar``).  A connection that kept the one of the run that opened it
    registered its waits with a watchdog that had ended with that run: a silent server then held the read
    forever, whatever its timeout.  (The providers start a fresh pool in each run; a sender used directly
    need not.)
    """
    received: list[bytes] = []
    hung_up = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(10)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/messages"

        def serve_one_connection() -> None:
            """Answer the first request; read the second and say nothing until the client hangs up."""
            with contextlib.suppress(OSError), listener.accept()[0] as connection:
                connection.settimeout(30)  # past the test's own bounds: a hang shows as theirs
                received.append(connection.recv(65536))
                connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
                while data := connection.recv(65536):
                    received.append(data)
            hung_up.set()

        server = threading.Thread(target=serve_one_connection, name="silent second answer", daemon=True)
        server.start()
        sender = H11Sender(timeout=httpx.Timeout(5.0, read=0.2))

        async def first_run() -> None:
            with trio.fail_after(10):
                assert await read_all(await sender.send(url, HEADERS, b"{}")) == b"{}"
            assert sender.connections == (1, 1)  # pooled, idle, when this run ends

        async def second_run() -> None:
            started = trio.current_time()
            with trio.fail_after(5), pytest.raises(httpx.ReadTimeout):
                await sender.send(url, HEADERS, b"{}")
            assert trio.current_time() - started < 4  # its own 0.2 s
            assert sender.connections == (0, 0)

        try:
            trio.run(first_run)
            trio.run(second_run)
        finally:
            trio.run(sender.aclose)
            assert hung_up.wait(10)
            server.join(10)
    assert len(received) >= 2 and received[1].startswith(b"POST /v1/messages")  # both on the one connection
