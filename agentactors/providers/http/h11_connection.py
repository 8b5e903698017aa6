"""One HTTP/1.1 connection for the h11 sender: an anyio byte stream and an ``h11.Connection`` over it.

It does the I/O of one request at a time and speaks httpx's language outward: timeouts are
given as ``httpx.Timeout`` fields (seconds, ``None`` for none) and every failure is raised as
the httpx exception :mod:`agentactors.providers.errors` already classifies — a connect failure
``ConnectError``, a timeout ``ConnectTimeout`` / ``WriteTimeout`` / ``ReadTimeout``, a socket
error while sending ``WriteError`` or reading ``ReadError``, a server that breaks the protocol
or closes early ``RemoteProtocolError``, a request h11 refuses to write (a header value holding
a line break) ``LocalProtocolError`` — each with the original exception as its cause.

The read timeout is httpx's: it bounds each wait for bytes, not the whole response.  Closing
(:meth:`H11Connection.close_now`) shuts the socket before it awaits anything, so a cancelled
caller closes it too; TLS connections skip the closing handshake (``tls_standard_compatible``
off, as httpcore does), so closing never waits on the peer.
"""

from __future__ import annotations

import select
import ssl
from typing import Final

import anyio
import anyio.abc
import h11
import httpx
from anyio.streams.tls import TLSStream

__all__ = ["H11Connection", "Origin", "connect"]

#: ``(scheme, host, port)``: the connections one pool keeps apart.
Origin = tuple[str, str, int]

_READ_SIZE: Final = 65536


def _deadline(seconds: float | None) -> float:
    return anyio.current_time() + seconds if seconds is not None else float("inf")


async def connect(origin: Origin, *, within: float | None, ssl_context: ssl.SSLContext | None) -> H11Connection:
    """Open a connection to ``origin`` (TLS for ``https``) within ``within`` seconds."""
    scheme, host, port = origin
    with anyio.CancelScope(deadline=_deadline(within)) as scope:
        try:
            if scheme == "https":
                stream: anyio.abc.ByteStream = await anyio.connect_tcp(
                    host, port, ssl_context=ssl_context, tls=True, tls_standard_compatible=False
                )
            else:
                stream = await anyio.connect_tcp(host, port)
        except (OSError, ssl.SSLError, anyio.BrokenResourceError) as exc:
            raise _error(httpx.ConnectError, f"cannot connect to {host}:{port}", exc) from None
        return H11Connection(origin, stream)
    assert scope.cancelled_caught
    raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out")


def _error(kind: type[httpx.TransportError], text: str, cause: BaseException) -> httpx.TransportError:
    detail = str(cause) or type(cause).__name__
    err = kind(f"{text}: {detail}")
    err.__cause__ = cause
    return err


class H11Connection:
    """A connection the pool lends to one request at a time (see the module docstring)."""

    __slots__ = ("_raw", "_socket", "_stream", "closed", "idle_since", "origin", "parser")

    def __init__(self, origin: Origin, stream: anyio.abc.ByteStream) -> None:
        self.origin = origin
        self._stream = stream
        # Closing the TCP stream under a TLS one drops the connection at once (no close_notify to wait for).
        self._socket: anyio.abc.AsyncResource = stream.transport_stream if isinstance(stream, TLSStream) else stream
        self._raw = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
        self.parser = h11.Connection(h11.CLIENT)
        self.idle_since = 0.0
        self.closed = False

    def is_reusable(self) -> bool:
        """Idle and still open: nothing to read on it (a server that closed it has sent EOF: readable)."""
        if self.closed or self.parser.our_state is not h11.IDLE or self._raw is None:
            return False
        try:
            poller = select.poll()  # not select.select: it cannot watch a descriptor past 1023
            poller.register(self._raw, select.POLLIN)
            return not poller.poll(0)
        except (OSError, ValueError):  # closed under us: no descriptor
            return False

    def serialize(self, request: h11.Request, body: bytes) -> bytes:
        """``request`` and its whole ``body`` as bytes to send; the parser then awaits the response."""
        parser = self.parser
        head = parser.send(request)
        parser.send(h11.Data(data=body))
        parser.send(h11.EndOfMessage())
        assert head is not None
        return head + body

    async def write(self, data: bytes, within: float | None) -> None:
        """Send ``data`` (a whole request) within ``within`` seconds."""
        with anyio.CancelScope(deadline=_deadline(within)) as scope:
            try:
                await self._stream.send(data)
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, ssl.SSLError) as exc:
                raise _error(httpx.WriteError, "sending the request failed", exc) from None
            return
        assert scope.cancelled_caught
        raise httpx.WriteTimeout("sending the request timed out")

    def ready_event(self) -> h11.Event | None:
        """The next response event if the bytes read so far hold it (no I/O), else ``None``."""
        try:
            event = self.parser.next_event()
        except h11.RemoteProtocolError as exc:
            raise _error(httpx.RemoteProtocolError, "the server broke HTTP/1.1", exc) from None
        if event is h11.NEED_DATA:
            return None
        if isinstance(event, h11.ConnectionClosed):
            raise httpx.RemoteProtocolError("the server closed the connection before the response ended")
        assert isinstance(event, h11.Event)  # PAUSED comes only after a message ends: never asked for then
        return event

    async def next_event(self, within: float | None) -> h11.Event:
        """The next response event, reading as needed; each wait for bytes bounded by ``within`` seconds."""
        while (event := self.ready_event()) is None:
            self.parser.receive_data(await self._receive(within))
        return event

    async def _receive(self, within: float | None) -> bytes:
        with anyio.CancelScope(deadline=_deadline(within)) as scope:
            try:
                return await self._stream.receive(_READ_SIZE)
            except anyio.EndOfStream:
                return b""  # h11 turns an early end into RemoteProtocolError, a clean one into ConnectionClosed
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, ssl.SSLError) as exc:
                raise _error(httpx.ReadError, "reading the response failed", exc) from None
        assert scope.cancelled_caught
        raise httpx.ReadTimeout("reading the response timed out")

    async def close_now(self) -> None:
        """Close the socket (idempotent).  It is shut before the one checkpoint, which is shielded."""
        self.closed = True
        with anyio.CancelScope(shield=True):
            await self._socket.aclose()
