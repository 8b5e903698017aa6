"""One HTTP/1.1 connection for the h11 sender: its backend's own socket I/O and a response parser over it.

It does the I/O of one request at a time and speaks httpx's language outward: timeouts are
given as ``httpx.Timeout`` fields (seconds, ``None`` for none) and every failure is raised as
the httpx exception :mod:`agentactors.providers.errors` already classifies — a connect failure
``ConnectError``, a timeout ``ConnectTimeout`` / ``WriteTimeout`` / ``ReadTimeout``, a socket
error while sending ``WriteError`` or reading ``ReadError``, a server that breaks the protocol
or closes early ``RemoteProtocolError`` (what :mod:`._response_parser` refuses) — each with the
original exception as its cause; a certificate that does not verify is :func:`._tls.unverified` (naming the
host, not retried), as on every sender.  Requests are checked and written by the sender.

A connection skips anyio's stream where it can: on asyncio it is a lean protocol on the loop's own
transport, TLS included (:mod:`._asyncio_direct`); on trio a plain-TCP one reads and writes its
socket directly (:mod:`._trio_direct` says why) and a TLS one goes through anyio's TLS stream,
each of their waits bounded by the run's watchdog, not a cancel scope (:mod:`._trio_deadlines`).

The read timeout is httpx's: it bounds each wait for bytes, not the whole response.  Closing
(:meth:`H11Connection.close_now`) shuts the socket before it awaits anything, so a cancelled
caller closes it too; TLS connections skip the closing handshake (``tls_standard_compatible``
off, as httpcore does), so closing never waits on the peer.
"""

from __future__ import annotations

import select
import ssl
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Final, Protocol

import anyio
import anyio.abc
import httpx
from anyio.streams.tls import TLSStream

from ..._backend import running_trio
from ._io_errors import transport_error
from ._response_parser import Head, ProtocolError, ResponseParser
from ._tls import unverified, verify_failure

if TYPE_CHECKING:
    from ._asyncio_direct import DirectProtocol

__all__ = ["READ_SIZE", "H11Connection", "Head", "Origin", "connect"]

#: ``(scheme, host, port)``: the connections one pool keeps apart.
Origin = tuple[str, str, int]

#: The most one read takes from the socket.
READ_SIZE: Final = 65536


class _Direct(Protocol):
    """How a connection reads and writes, each wait bounded (:mod:`._trio_direct`, :mod:`._asyncio_direct`)."""

    async def send(self, data: bytes, within: float | None) -> None: ...

    async def receive(self, size: int, within: float | None) -> bytes: ...


def _deadline(seconds: float | None) -> float:
    return anyio.current_time() + seconds if seconds is not None else float("inf")


async def connect(origin: Origin, *, within: float | None, ssl_context: ssl.SSLContext | None) -> H11Connection:
    """Open a connection to ``origin`` (TLS for ``https``) within ``within`` seconds.

    Cancellation: a cancellation point throughout; a connect or TLS handshake cancelled leaves nothing open
    (the socket being connected is closed by the backend), and the cancellation propagates as itself, never as
    ``ConnectTimeout``.
    """
    scheme, host, port = origin
    with anyio.CancelScope(deadline=_deadline(within)) as scope:
        try:
            if not running_trio():
                from ._asyncio_direct import open_direct  # the asyncio backend's seam: only when asyncio runs this

                context = ssl_context if scheme == "https" else None
                return H11Connection(origin, None, protocol=await open_direct(host, port, context))
            if scheme == "https":
                stream: anyio.abc.ByteStream = await anyio.connect_tcp(
                    host, port, ssl_context=ssl_context, tls=True, tls_standard_compatible=False
                )
            else:
                stream = await anyio.connect_tcp(host, port)
        except (OSError, ssl.SSLError, anyio.BrokenResourceError) as exc:
            failure = verify_failure(exc)
            if failure is not None:  # not retried, as on every sender (_tls.unverified)
                raise unverified(host, port, failure) from failure
            raise transport_error(httpx.ConnectError, f"cannot connect to {host}:{port}", exc) from exc
        except anyio.EndOfStream as exc:
            # trio: anyio's TLS stream, its closing handshake off, says a server that closed mid-handshake so.
            text = f"cannot connect to {host}:{port}: the server closed the connection during the TLS handshake"
            raise transport_error(httpx.ConnectError, text, exc) from exc
        return H11Connection(origin, stream, _direct(scheme, stream))
    assert scope.cancelled_caught
    raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out")


def _direct(scheme: str, stream: anyio.abc.ByteStream) -> _Direct:
    """On trio, how the connection reads and writes: its plain-TCP socket directly, or its TLS stream watched."""
    from ._trio_direct import DirectSocket, WatchedTLS  # imports trio: only when trio runs this task

    raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)  # every TCP stream of anyio's has one
    return DirectSocket(raw) if scheme == "http" else WatchedTLS(stream, raw)


class _Closable(Protocol):
    async def aclose(self) -> None: ...


class H11Connection:
    """A connection the pool lends to one request at a time (see the module docstring)."""

    __slots__ = ("_direct", "_protocol", "_raw", "_socket", "closed", "idle_since", "origin", "parser")

    def __init__(
        self,
        origin: Origin,
        stream: anyio.abc.ByteStream | None,
        direct: _Direct | None = None,
        *,
        protocol: DirectProtocol | None = None,
    ) -> None:
        """On trio, anyio's ``stream`` and how it is read and written (``direct``); on asyncio, ``protocol``."""
        self.origin = origin
        self._protocol = protocol  # asyncio (TCP or TLS): the whole connection
        self._socket: _Closable
        self._direct: _Direct
        if stream is None:
            assert protocol is not None
            self._direct = protocol
            self._socket = protocol
            self._raw = None
        else:
            assert direct is not None
            self._direct = direct  # trio: the stream's socket (plain TCP) or the TLS stream, waits watched
            # Closing the TCP stream under a TLS one drops the connection at once (no close_notify to wait for).
            self._socket = stream.transport_stream if isinstance(stream, TLSStream) else stream
            self._raw = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
        self.parser = ResponseParser()
        self.idle_since = 0.0
        self.closed = False

    def is_reusable(self) -> bool:
        """Idle and still open: nothing to read on it (a server that closed it has sent EOF: readable)."""
        if self.closed or not self.parser.idle:
            return False
        if self._protocol is not None:
            return self._protocol.is_reusable()  # it reads as bytes come: the socket would look quiet
        if self._raw is None:
            return False
        try:
            poller = select.poll()  # not select.select: it cannot watch a descriptor past 1023
            poller.register(self._raw, select.POLLIN)
            return not poller.poll(0)
        except (OSError, ValueError):  # closed under us: no descriptor
            return False

    def write(self, data: bytes, within: float | None) -> Awaitable[None]:
        """Send ``data`` (a whole request) within ``within`` seconds (the direct path's own coroutine)."""
        return self._direct.send(data, within)

    def ready_event(self) -> Head | bytes | None:
        """The response's head, body bytes or ``END`` if the bytes read so far hold it (no I/O), else ``None``."""
        try:
            return self.parser.next_event()
        except ProtocolError as exc:
            raise transport_error(httpx.RemoteProtocolError, "the server broke HTTP/1.1", exc) from exc

    async def next_event(self, within: float | None) -> Head | bytes:
        """The next part of the response, reading as needed; each wait for bytes bounded by ``within`` seconds.

        Cancellation: a cancellation point while it waits for bytes.  A cancelled read leaves the connection
        mid-response, not reusable: its owner closes it (the sender discards it).
        """
        while (event := self.ready_event()) is None:
            self.parser.receive(await self.receive(READ_SIZE, within))
        return event

    def receive(self, size: int, within: float | None) -> Awaitable[bytes]:
        """Up to ``size`` bytes (``END`` at EOF), the wait bounded by ``within`` seconds; failures as httpx's.

        Not a coroutine itself: it returns the reading one (the socket's, the TLS stream's or the protocol's), so
        a wait for bytes adds one coroutine to the waiting stack, not two.  A stream waits there
        between deltas, seconds apart, and each frame of a stack parked that long survives the young
        GC generations: at 10,000 live streams the full collections those survivors set off were
        most of the client's CPU (benchmark W12).
        """
        return self._direct.receive(size, within)

    async def close_now(self) -> None:
        """Close the socket (idempotent).

        Cancellation: it cannot be interrupted: its one checkpoint, the socket's close, is shielded, so a
        cancelled caller closes the socket too; the cancellation is delivered at its next checkpoint.
        """
        self.closed = True
        with anyio.CancelScope(shield=True):
            await self._socket.aclose()
