"""asyncio's fast path for the h11 sender's plain-TCP connections: a lean protocol on the loop's own transport.

Why: anyio's asyncio stream keeps, for each connection, a deque of received chunks and two
``asyncio.Event``\\ s, each with a deque of its own (~2.3 KB a connection, held by every live
stream for its whole life: 10,000 of them in benchmark W12), and it pauses and resumes the
transport's reading around every receive (two ``epoll_ctl`` calls a read) and yields on every
send.  Here the transport reads whenever bytes arrive; they wait in one slot of the protocol
(reading pauses only when more than :data:`PAUSE_AT` bytes pile up unread), a reader waits on a
future made only for a real wait, and that wait is bounded by a timer handle, not a cancel scope.

What is kept, as on trio's direct path (:mod:`._trio_direct`): a cancelled caller is refused
before anything is sent or read (``checkpoint_if_cancelled``); a read that finds its bytes ready
still yields once, as anyio's stream does, so a fast body cannot starve other tasks; a send the
transport takes whole does not yield (the read for its answer, which follows at once, is the
checkpoint); each wait is bounded by its timeout; failures are httpx's exceptions, each with the
original as its cause.  Cancellation: every wait here is an ``await`` on a future, which is how
anyio's scopes cancel a task on asyncio, so a cancelled scope interrupts it at once.

Only on asyncio (this module is its backend seam: :func:`.h11_connection.connect` imports it only
when asyncio runs the task).  The connection is made by the loop (``create_connection``: its
resolver, happy eyeballs across the host's addresses, ``TCP_NODELAY``), and so is TLS for
``https``: the loop's own TLS layer (what aiohttp uses) sits between the socket and this protocol,
which then sees plain bytes; closing aborts it without the closing handshake, as the anyio path
(``tls_standard_compatible`` off) and httpcore do.
"""

from __future__ import annotations

import asyncio
import select
import ssl
from typing import Final

import anyio
import anyio.lowlevel
import httpx

from ._io_errors import transport_error

__all__ = ["PAUSE_AT", "WRITE_CHUNK", "DirectProtocol", "open_direct"]

#: Unread bytes past which the transport stops reading until the reader takes them.
PAUSE_AT: Final = 256 * 1024

#: The most a send hands the transport at once: a larger body goes in chunks (see ``DirectProtocol.send``).
WRITE_CHUNK: Final = 256 * 1024

#: What a waiter's future is resolved with when its timer fires first.
_TIMED_OUT: Final = False


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(_TIMED_OUT)


async def open_direct(host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> DirectProtocol:
    """A connection to ``host:port``, over TLS when ``ssl_context`` is given (the caller bounds the time it may take).

    :raises OSError: the host cannot be resolved or reached.
    :raises ssl.SSLError: the TLS handshake failed (a certificate that does not verify, say).
    """
    _, protocol = await asyncio.get_running_loop().create_connection(
        DirectProtocol,
        host,
        port,
        ssl=ssl_context,
        server_hostname=host if ssl_context is not None else None,
        happy_eyeballs_delay=0.25,
    )
    return protocol


class DirectProtocol(asyncio.Protocol):
    """One connection's bytes and state, read and written as the module docstring says."""

    __slots__ = ("_closed", "_data", "_drained", "_eof", "_full", "_lost", "_paused", "_reader", "_transport")

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._data = b""  # received, not yet taken
        self._reader: asyncio.Future[bool] | None = None  # set while a receive waits for bytes
        self._full = False  # the transport's write buffer is past its high-water mark
        self._drained: asyncio.Future[bool] | None = None  # set while a send waits for it to drain
        self._paused = False  # reading paused: PAUSE_AT bytes unread
        self._eof = False
        self._lost: BaseException | None = None  # the error the connection ended with
        self._closed = False  # the connection ended (EOF or lost): nothing more arrives

    # --- the transport's callbacks ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._data = self._data + data if self._data else data
        if len(self._data) > PAUSE_AT and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake_reader()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake_reader()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if exc is not None and self._lost is None:
            self._lost = exc
        self._wake_reader()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(True)

    def pause_writing(self) -> None:
        self._full = True

    def resume_writing(self) -> None:
        self._full = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(True)

    def _wake_reader(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.set_result(True)

    # --- what the connection asks -------------------------------------------------------------------------

    def is_reusable(self) -> bool:
        """Nothing arrived on the idle connection and the server has not closed it.

        The transport reads as bytes come, so what the loop has dispatched the protocol knows.  What it has
        not dispatched yet — a server that answered "keep-alive" and closed at once, its FIN in the socket
        but the loop not back to its selector — only the socket shows: it is polled too (one ``poll`` call,
        as on trio's path), or the next request would be written to a connection already closed.
        """
        transport = self._transport
        if self._data or self._eof or self._closed or transport is None or transport.is_closing():
            return False
        sock = transport.get_extra_info("socket")
        if sock is None:
            return True
        try:
            poller = select.poll()  # not select.select: it cannot watch a descriptor past 1023
            poller.register(sock.fileno(), select.POLLIN)
            return not poller.poll(0)
        except (OSError, ValueError):  # closed under us: no descriptor
            return False

    async def send(self, data: bytes, within: float | None) -> None:
        """Write all of ``data``; wait (at most ``within`` seconds) only while the transport's buffer is full.

        A body past :data:`WRITE_CHUNK` is handed over a chunk at a time, the buffer checked after each:
        over TLS the loop's layer takes any one write whole (it encrypts it all and passes it down) and
        tells the protocol its buffer is full only on a later write, so a large body written at once
        never waited, and the write timeout never applied to a server that reads nothing.
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        transport = self._transport
        if transport is None or self._closed or transport.is_closing():
            cause = self._lost or ConnectionResetError("the connection is closed")
            raise transport_error(httpx.WriteError, "sending the request failed", cause)
        if len(data) <= WRITE_CHUNK:
            await self._write(transport, data, within)
            return
        view = memoryview(data)
        for start in range(0, len(data), WRITE_CHUNK):
            await self._write(transport, view[start:start + WRITE_CHUNK], within)

    async def _write(self, transport: asyncio.Transport, data: bytes | memoryview, within: float | None) -> None:
        """One write, then the wait for the buffer to drain if it is full (the ``within`` bound is per wait).

        The connection can end only during an ``await`` (the loop's callbacks run then), so it is checked
        after the write (a socket error closes the transport at once) and after the wait: there a server
        that answered early and half-closed (its EOF makes the transport close itself, and
        ``connection_lost(None)`` ends the wait with no error) must not have the next chunk written to a
        closed transport (asyncio then fails with an ``AttributeError`` of its own).  Bytes the server sent
        stay in the protocol for the sender to read (its early answer).
        """
        transport.write(data)  # a socket error closes the transport (its cause reaches connection_lost)
        if transport.is_closing():
            await asyncio.sleep(0)  # connection_lost runs first: the cause
            raise self._write_failed()
        if self._full and not self._closed:
            # A future of this wait's own (as the reader's): one a cancelled send left behind is never awaited again.
            self._drained = asyncio.get_running_loop().create_future()
            try:
                if not await self._wait(self._drained, within):
                    raise httpx.WriteTimeout("sending the request timed out")
            finally:
                self._drained = None
            if self._closed or transport.is_closing():
                raise self._write_failed()

    def _write_failed(self) -> httpx.TransportError:
        cause = self._lost or ConnectionResetError("the connection was closed while sending")
        return transport_error(httpx.WriteError, "sending the request failed", cause)

    async def receive(self, size: int, within: float | None) -> bytes:
        """Up to ``size`` bytes (``b""`` at the end of the stream); the wait for them bounded by ``within`` seconds."""
        if self._data or self._closed or self._eof:
            await asyncio.sleep(0)  # as anyio's stream: every read yields once (and is a cancellation point)
        else:
            await anyio.lowlevel.checkpoint_if_cancelled()
            loop = asyncio.get_running_loop()
            self._reader = loop.create_future()
            try:
                if not await self._wait(self._reader, within):
                    raise httpx.ReadTimeout("reading the response timed out")
            finally:
                self._reader = None
        data = self._data
        if data:
            if len(data) > size:
                data, self._data = data[:size], data[size:]
            else:
                self._data = b""
            if self._paused and len(self._data) <= PAUSE_AT // 2 and self._transport is not None:
                self._paused = False
                self._transport.resume_reading()
            return data
        if self._lost is not None:
            raise transport_error(httpx.ReadError, "reading the response failed", self._lost)
        return b""  # EOF (or closed): the parser decides whether the response had ended

    @staticmethod
    async def _wait(waiter: asyncio.Future[bool], within: float | None) -> bool:
        """``False`` if ``within`` seconds passed before ``waiter`` was resolved."""
        if within is None:
            return await waiter
        timer = asyncio.get_running_loop().call_later(within, _expire, waiter)
        try:
            return await waiter
        finally:
            timer.cancel()

    async def aclose(self) -> None:
        """Close the socket now (no flushing, no waiting on the peer); one shielded checkpoint follows."""
        self._closed = True
        if self._lost is None:  # a read still waiting fails, as on the other paths, with ReadError
            self._lost = anyio.ClosedResourceError("the connection was closed")
        self._wake_reader()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.abort()  # the socket is closed by the loop's next turn, before the checkpoint below
        await anyio.lowlevel.cancel_shielded_checkpoint()
