"""Trio's paths for the h11 sender's connections: a plain-TCP socket read and written directly, TLS watched.

Why: through anyio's stream, a request written on trio costs a scheduler round trip of its own
(trio's socket yields after every send, even one the kernel took at once), and every read is
wrapped twice (anyio's stream and cancel scope over trio's), with a cancel scope made even when
the bytes are already there.  Here a send the kernel takes whole does not yield (the read for
its answer, which follows at once, is the checkpoint), and a real wait is bounded by the run's
watchdog (:mod:`._trio_deadlines`), not by a cancel scope of its own.  What is kept: a cancelled
caller is refused before anything is sent or read (``checkpoint_if_cancelled``); a read that
finds its bytes ready still yields once, as trio's own does, so a fast body cannot starve other
tasks; each wait is bounded by its timeout and failures are httpx's exceptions, as on the anyio
path (:mod:`.h11_connection`).

Only on trio (this module imports it; :func:`.h11_connection.connect` imports this module only
when trio runs the task).  A TLS connection keeps anyio's TLS stream, which owns the
``SSLObject`` (:class:`WatchedTLS`): only its waits are bounded by the watchdog instead of a
cancel scope each.  The socket stays the anyio stream's: closing that stream closes it, and trio
wakes a read waiting on it with ``ClosedResourceError`` (raised here as ``ReadError``).
"""

from __future__ import annotations

import math
import socket
import ssl
from typing import Final

import anyio
import anyio.abc
import httpx
import trio

from ._io_errors import transport_error
from ._response_parser import END
from ._trio_deadlines import deadlines

__all__ = ["DirectSocket", "WatchedTLS"]

_WRITE_FAILED: Final = "sending the request failed"
_WRITE_TIMEOUT: Final = "sending the request timed out"
_READ_FAILED: Final = "reading the response failed"
_READ_TIMEOUT: Final = "reading the response timed out"
# What anyio's TLS stream raises when its socket fails or is closed (by the watchdog, too) under it.
_STREAM_FAILURES: Final = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, ssl.SSLError)


class _Watched:
    """A connection's socket as the run's watchdog sees it: the deadline of the wait in progress.

    The watchdog is the one of the run the wait is in, looked up at each wait (a dict lookup, on
    the path that is about to park the task anyway), not the one of the run that opened the
    connection: a sender's pool can outlive a ``trio.run`` and lend its idle connections to the
    next, and the earlier run's watchdog ended with it — a wait registered there never timed out.
    """

    __slots__ = ("_deadlines", "_expired", "_sock", "deadline")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._deadlines = deadlines()  # the watchdog of the wait in progress (or of the last one: forget is idempotent)
        self.deadline = math.inf  # of the wait in progress (the watchdog reads it)
        self._expired = False

    def _watch(self, within: float | None) -> None:
        """Bound the wait that follows by ``within`` seconds (``None``: unbounded) through this run's watchdog."""
        if within is not None:
            self.deadline = trio.current_time() + within
            self._deadlines = deadlines()  # this run's, which the wait's ``forget`` then leaves (see the class)
            self._deadlines.watch(self)

    def _failed(self, exc: BaseException, *, reading: bool) -> httpx.TransportError:
        """What a failed wait raises: the timeout if the watchdog ended it, else httpx's I/O error caused by ``exc``."""
        if self._expired:
            timeout = httpx.ReadTimeout(_READ_TIMEOUT) if reading else httpx.WriteTimeout(_WRITE_TIMEOUT)
            timeout.__suppress_context__ = True  # the ClosedResourceError is the watchdog's doing, not news
            return timeout
        if reading:
            return transport_error(httpx.ReadError, _READ_FAILED, exc)
        return transport_error(httpx.WriteError, _WRITE_FAILED, exc)

    def expire(self) -> None:
        """The watchdog's call: the deadline passed; wake the wait with ``ClosedResourceError``."""
        self._expired = True
        try:
            trio.lowlevel.notify_closing(self._sock)
        except (OSError, ValueError):  # closed already: closing woke the wait
            pass


class DirectSocket(_Watched):
    """A connected, non-blocking TCP socket trio watches, read and written as the module docstring says."""

    __slots__ = ()

    async def send(self, data: bytes, within: float | None) -> None:
        """Send all of ``data`` within ``within`` seconds (yielding only if the kernel cannot take it at once)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        sent = self._send(data)
        if sent == len(data):
            return
        view = memoryview(data)
        self._watch(within)
        try:
            while sent < len(data):
                try:
                    await trio.lowlevel.wait_writable(self._sock)
                except trio.ClosedResourceError as exc:
                    raise self._failed(exc, reading=False)  # its cause set (or hidden) by _failed
                if self._expired:
                    raise httpx.WriteTimeout(_WRITE_TIMEOUT)
                sent += self._send(view[sent:])
        finally:
            self._deadlines.forget(self)

    def _send(self, data: bytes | memoryview) -> int:
        try:
            return self._sock.send(data)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError as exc:
            raise transport_error(httpx.WriteError, _WRITE_FAILED, exc) from exc

    async def receive(self, size: int, within: float | None) -> bytes:
        """Up to ``size`` bytes (``b""`` at the end of the stream); the wait for them bounded by ``within`` seconds.

        Cancellation: a cancelled caller is refused before anything is read; a wait is cancelled by the
        caller's scopes as any trio checkpoint is (the connection is then discarded by the sender).
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        data = self._recv(size)
        if data is not None:
            await trio.lowlevel.cancel_shielded_checkpoint()  # as trio's own socket: every read yields once
            return data
        self._watch(within)
        try:
            while True:
                try:
                    await trio.lowlevel.wait_readable(self._sock)
                except trio.ClosedResourceError as exc:
                    raise self._failed(exc, reading=True)  # its cause set (or hidden) by _failed
                if self._expired:
                    raise httpx.ReadTimeout(_READ_TIMEOUT)
                data = self._recv(size)
                if data is not None:
                    return data
        finally:
            self._deadlines.forget(self)

    def _recv(self, size: int) -> bytes | None:
        try:
            return self._sock.recv(size)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as exc:
            raise transport_error(httpx.ReadError, _READ_FAILED, exc) from exc


class WatchedTLS(_Watched):
    """A TLS connection on trio: anyio's TLS stream (which owns the ``SSLObject``), each wait bounded by the watchdog.

    The stream is read and written as it is; only the cancel scope anyio's path put around every
    receive and send is gone (the module docstring says why).  Its socket is the one the watchdog
    wakes: a wait under the TLS layer ends with ``ClosedResourceError`` from the stream, raised
    here as the timeout.
    """

    __slots__ = ("_stream",)

    def __init__(self, stream: anyio.abc.ByteStream, sock: socket.socket) -> None:
        super().__init__(sock)
        self._stream = stream

    async def send(self, data: bytes, within: float | None) -> None:
        """Send all of ``data`` within ``within`` seconds.

        Cancellation: as the stream's ``send`` (the connection is then discarded by the sender).
        """
        self._watch(within)
        try:
            await self._stream.send(data)
        except _STREAM_FAILURES as exc:
            raise self._failed(exc, reading=False)  # its cause set (or hidden) by _failed
        finally:
            self._deadlines.forget(self)
        if self._expired:  # sent as the deadline passed: the socket is trio's no more
            raise httpx.WriteTimeout(_WRITE_TIMEOUT)

    async def receive(self, size: int, within: float | None) -> bytes:
        """Up to ``size`` bytes (``b""`` at the end of the stream), the wait for them bounded by ``within`` seconds.

        Cancellation: as the stream's ``receive`` (the connection is then discarded by the sender).
        """
        self._watch(within)
        try:
            data = await self._stream.receive(size)
        except anyio.EndOfStream:
            data = END  # the parser ends a body read to the close, or calls an early end a RemoteProtocolError
        except _STREAM_FAILURES as exc:
            raise self._failed(exc, reading=True)  # its cause set (or hidden) by _failed
        finally:
            self._deadlines.forget(self)
        if self._expired:  # read as the deadline passed: the socket is trio's no more
            raise httpx.ReadTimeout(_READ_TIMEOUT)
        return data
