"""The FakeVendor's HTTP/1.1 server: h11 over anyio, one task per connection, for its ASGI app.

Why not hypercorn (which served it before): when a client closed an *idle* keep-alive
connection, hypercorn noticed the end of the stream but kept the connection's task — and its
socket, in CLOSE_WAIT — until its keep-alive timer ran out (120 s here; the timer must outlast
every client's idle expiry, or the server closes a connection just as a client reuses it).  A
long-running ``python -m agentactors fakevendor`` held 86-104 such sockets after one
cancellation storm.  Here a connection's task ends the moment its client goes away, idle or not.

What the app gets is the ASGI HTTP subset it uses: ``http.request`` messages with the body,
then ``http.disconnect`` when the client goes away (watched while the answer is sent); its
``http.response.start`` / ``http.response.body`` messages go out as h11 events (chunked unless
the app set a content-length).  An answer the app leaves unfinished drops the connection
mid-message, as a vendor cut off would.
"""

from __future__ import annotations

import functools
import http
import logging
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import anyio.abc
import h11

__all__ = ["FakeServer"]

log = logging.getLogger("agentactors.testing.fakevendor.server")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_READ = 65536
_REQUEST_HEAD_TIMEOUT = 30.0  # a client that starts a request must finish sending its head
_SHUTDOWN_GRACE = 1.0
_CLOSED = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
#: Statuses the fake sends that :class:`http.HTTPStatus` does not name: Anthropic's "overloaded" 529.
_UNLISTED = {529: b"Overloaded"}


class _Gone(Exception):
    """The client went away."""


class FakeServer:
    """Serves ``app`` on a listener until ``closing`` is set (see the module docstring).

    :param keep_alive_timeout: seconds an idle connection is kept open (longer than any
        client's idle expiry, as real vendors' are).

    Shutdown: once ``closing`` is set the listener closes, idle connections close at once,
    and answers in progress get a short grace (the app ends its own waits on ``closing``)
    before they are cancelled.

    Failures stay with their connection: a client that breaks HTTP mid-body (a malformed chunk)
    gets a 400 if no answer has started, else its connection just closes; anything else that
    escapes one connection is logged.  Neither stops the server for everyone else.
    """

    def __init__(self, app: App, *, closing: anyio.Event, keep_alive_timeout: float = 120.0) -> None:
        self._app = app
        self._closing = closing
        self._keep_alive = keep_alive_timeout
        self._idle: set[anyio.CancelScope] = set()
        self._open = 0
        self._drained = anyio.Event()  # set when the last connection closes during shutdown

    @property
    def connections(self) -> int:
        """Client connections open now (each one a socket)."""
        return self._open

    async def serve(self, listener: anyio.abc.Listener[anyio.abc.ByteStream]) -> None:
        """Accept and serve connections until ``closing`` is set; then shut down (see the class)."""
        accepting = anyio.CancelScope()

        async def accept(tg: anyio.abc.TaskGroup) -> None:
            try:
                with accepting:
                    await listener.serve(self._connection, tg)
            finally:
                # Closed once accepting has stopped: closing it under a pending accept() would raise.
                with anyio.CancelScope(shield=True):
                    await listener.aclose()

        async with anyio.create_task_group() as tg:
            tg.start_soon(accept, tg)
            await self._closing.wait()
            accepting.cancel()
            for scope in list(self._idle):
                scope.cancel()
            if self._open:
                with anyio.move_on_after(_SHUTDOWN_GRACE):
                    await self._drained.wait()
            tg.cancel_scope.cancel()

    async def _connection(self, stream: anyio.abc.ByteStream) -> None:
        self._open += 1
        conn = h11.Connection(h11.SERVER)
        try:
            async with stream:
                while not self._closing.is_set():
                    request = await self._next_request(conn, stream)
                    if request is None or not await self._exchange(conn, stream, request):
                        return
                    conn.start_next_cycle()
        except Exception as exc:  # ExceptionGroup too: one connection's failure never ends the server
            if not _benign(exc):
                log.exception("FakeVendor: a connection failed (the server keeps serving)")
        finally:
            self._open -= 1
            if not self._open and self._closing.is_set():
                self._drained.set()

    async def _next_request(self, conn: h11.Connection, stream: anyio.abc.ByteStream) -> h11.Request | None:
        """The next request's head, or ``None`` when the connection should close."""
        idle = True
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                await self._refuse(conn, stream, exc.error_status_hint)
                return None
            if isinstance(event, h11.Request):
                return event
            if event is not h11.NEED_DATA:
                return None  # ConnectionClosed, or PAUSED on a connection that should close
            with anyio.CancelScope() as scope:
                if idle:
                    scope.deadline = anyio.current_time() + self._keep_alive
                    self._idle.add(scope)
                else:
                    scope.deadline = anyio.current_time() + _REQUEST_HEAD_TIMEOUT
                try:
                    data = await _receive(stream)
                finally:
                    self._idle.discard(scope)
            if scope.cancelled_caught:
                return None
            conn.receive_data(data)
            if not data:
                return None  # the client closed the connection: close ours now, not at the timeout
            idle = False

    async def _refuse(self, conn: h11.Connection, stream: anyio.abc.ByteStream, status: int) -> None:
        if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            try:
                head = h11.Response(status_code=status, headers=[("content-length", "0"), ("connection", "close")],
                                    reason=_reason(status))
                data = conn.send(head)
                await stream.send((data or b"") + (conn.send(h11.EndOfMessage()) or b""))
            except (*_CLOSED, h11.LocalProtocolError):
                pass

    async def _exchange(self, conn: h11.Connection, stream: anyio.abc.ByteStream, request: h11.Request) -> bool:
        """Run the app for one request; whether the connection may serve another."""
        target = request.target.decode("latin-1")
        path, _, query = target.partition("?")
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": request.http_version.decode("ascii"),
            "method": request.method.decode("ascii").upper(),
            "scheme": "http",
            "path": path,
            "raw_path": request.target,
            "query_string": query.encode("latin-1"),
            "headers": [(name.lower(), value) for name, value in request.headers],
        }
        inbox_send, inbox = anyio.create_memory_object_stream[MutableMapping[str, Any]](math.inf)
        gone = False
        broken: h11.RemoteProtocolError | None = None  # the client broke HTTP (a malformed body)

        async def read_client() -> None:
            nonlocal gone, broken
            body_done = False
            while True:
                try:
                    event = conn.next_event() if not body_done else h11.NEED_DATA
                except h11.RemoteProtocolError as exc:
                    # This exchange ends (answered 400 below if nothing was sent yet); the server goes on.
                    broken = exc
                    event = h11.ConnectionClosed()
                if isinstance(event, h11.Data):
                    inbox_send.send_nowait({"type": "http.request", "body": bytes(event.data), "more_body": True})
                    continue
                if isinstance(event, h11.EndOfMessage):
                    inbox_send.send_nowait({"type": "http.request", "body": b"", "more_body": False})
                    body_done = True
                    continue
                if event is h11.NEED_DATA or event is h11.PAUSED:
                    data = await _receive(stream)
                    if data:
                        conn.receive_data(data)  # after the body: held by h11 for the next request
                        continue
                gone = True
                inbox_send.send_nowait({"type": "http.disconnect"})
                return

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal gone
            if gone:
                return
            kind = message["type"]
            if kind == "http.response.start":
                headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", [])]
                status = int(message["status"])
                data = conn.send(h11.Response(status_code=status, headers=headers, reason=_reason(status)))
            elif kind == "http.response.body":
                body = bytes(message.get("body", b""))
                data = conn.send(h11.Data(data=body)) if body else b""
                if not message.get("more_body", False):
                    data = (data or b"") + (conn.send(h11.EndOfMessage()) or b"")
            else:
                return
            try:
                if data:
                    await stream.send(data)
            except _CLOSED:
                gone = True

        async def receive() -> MutableMapping[str, Any]:
            return await inbox.receive()

        with inbox_send, inbox:
            async with anyio.create_task_group() as tg:
                tg.start_soon(read_client)
                try:
                    await self._app(scope, receive, send)
                except Exception:
                    log.exception("FakeVendor: the app failed on %s %s", scope["method"], path)
                    if conn.our_state is h11.SEND_RESPONSE and not gone:
                        head = {"type": "http.response.start", "status": 500, "headers": [(b"content-length", b"0")]}
                        await send(head)
                        await send({"type": "http.response.body", "body": b""})
                finally:
                    tg.cancel_scope.cancel()
        if broken is not None:
            await self._refuse(conn, stream, broken.error_status_hint)
            return False
        return not gone and conn.our_state is h11.DONE and conn.their_state is h11.DONE


@functools.cache
def _reason(status: int) -> bytes:
    """The status line's reason phrase: the standard one (``OK``, ``Too Many Requests``), else the class's.

    Without one the line read ``HTTP/1.1 200 `` — valid, but what clients in other languages show as the
    status (curl's status line, Go's ``Response.Status``) then said nothing.
    """
    try:
        return http.HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        if status in _UNLISTED:
            return _UNLISTED[status]
        return {4: b"Client Error", 5: b"Server Error"}.get(status // 100, b"")


def _benign(exc: BaseException) -> bool:
    """Whether ``exc`` (or every exception in its group) is only the client going away or breaking HTTP."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_benign(inner) for inner in exc.exceptions)
    return isinstance(exc, (*_CLOSED, _Gone, h11.ProtocolError))


async def _receive(stream: anyio.abc.ByteStream) -> bytes:
    """The next bytes from the client; ``b""`` once it closed or broke the connection."""
    try:
        return await stream.receive(_READ)
    except _CLOSED:
        return b""
