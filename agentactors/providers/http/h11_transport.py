"""The owned HTTP path on both backends: a small HTTP/1.1 client, checked by h11, with its own pool.

It was written for trio, and its connections' I/O is the backend's own (:mod:`.h11_connection`):
on asyncio a lean protocol on the loop's transport, on trio the socket itself (TLS through anyio's
stream there).  On asyncio it overtook the aiohttp sender it was measured against — 0.6–0.7× its
client CPU per JSON request, about the same per streamed delta, ~6 KB less memory per open
stream — and became the default there too (:mod:`.transport`).

Why not httpx (or httpcore directly): on trio a provider's request through ``httpx.AsyncClient``
cost 2.6–3.2× the client CPU of the aiohttp path on asyncio.  Most of it is not HTTP: the
client's per-request machinery (an ``httpx.Request`` and ``httpx.Response``, header
normalising, auth and redirect flows, hooks, stream wrappers — a stack of async generators) and
httpcore's connection pool, which takes a lock and walks every connection on each request and
each release (at 32 concurrent requests that walk is the largest single cost).  Calling
httpcore's ``AsyncConnectionPool`` directly would skip the first but keep the second, and its
``Request`` / ``Response`` objects and generator-based body streams with it.  So this module
keeps what a provider needs and no more: connections kept per origin, last used first, in a
dict; a request's head written as bytes, its header names and values checked once per header
set by h11 (the maintained HTTP/1.1 library httpcore itself uses) — what h11 refuses is never
sent; and responses read by :mod:`._response_parser`, which frames bodies as h11 did at a
fraction of its cost (h11's per-event state machine was, at 32 concurrent requests, most of
what trio's path cost over aiohttp's C parser).

What it keeps from httpx's own transport, so nothing above the seam can tell them apart:

* **timeouts** as ``httpx.Timeout``: ``connect``, ``write``, ``read`` (each wait for bytes, as
  httpx), ``pool`` (a wait for a free connection at the limit);
* **limits**: at most ``max_connections`` open (in use and idle, all hosts), at most
  ``max_keepalive_connections`` idle, an idle one kept ``keepalive_expiry`` seconds;
* **connection reuse**, and never a dirty connection back in the pool: only a response read to
  its end, with both sides of h11's state machine done, returns its connection; an idle
  connection the server closed (it reads as readable: EOF) is dropped when next taken;
* **cancellation**: cancelling a request, or closing a response not read to its end, closes
  its connection at once (the socket is shut before anything is awaited), so the server sees
  the disconnect;
* **errors** as httpx's exceptions (see :mod:`.h11_connection`), which the classifier maps;
* **TLS** with httpx's context (certifi, ``SSL_CERT_FILE``), built on the first https request;
* **bodies as sent**: no decompression (:class:`~.body.BodyReader` inflates under its limit),
  no cookies, no redirects, no logging of URLs or headers (nothing to redact).

What it leaves to httpx: proxies (an environment that configures one gets the httpx path, see
:func:`.transport.owned_sender`) and HTTP/2 (the owned httpx client does not use it either).
"""

from __future__ import annotations

import collections
import ssl
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any, Final

import anyio
import h11
import httpx

from ._tls import default_client_context
from .h11_connection import READ_SIZE, H11Connection, Head, Origin, connect

__all__ = ["H11Response", "H11Sender"]

USER_AGENT: Final = b"agentactors (python)"
_CACHE_SIZE: Final = 256
_FRAMING: Final = (b"host", b"content-length", b"transfer-encoding")
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


class _Target:
    """A URL as the sender uses it: its origin, and its request line and ``host`` header as bytes."""

    __slots__ = ("origin", "start")

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise httpx.UnsupportedProtocol(f"not an http(s) URL with a host: {parts.scheme}://{parts.hostname}")
        port = parts.port or _DEFAULT_PORTS[scheme]
        self.origin: Origin = (scheme, parts.hostname, port)
        path = ((parts.path or "/") + (f"?{parts.query}" if parts.query else "")).encode("ascii")
        host = parts.netloc.rpartition("@")[2].encode("ascii")
        _checked(path, [(b"host", host)])
        self.start = b"POST %s HTTP/1.1\r\nhost: %s\r\n" % (path, host)


class _HeaderBlock:
    """A provider's headers as the bytes a request carries (checked by h11), and whether they ask to close."""

    __slots__ = ("closes", "data", "source")

    def __init__(self, headers: dict[str, str]) -> None:
        self.source = headers  # kept: its id is the cache key, and must not be reused while cached
        try:
            pairs = [(name.lower().encode("ascii"), value.encode("ascii")) for name, value in headers.items()]
        except UnicodeEncodeError as exc:
            raise _refused(exc) from None
        framing = [name for name, _ in pairs if name in _FRAMING]
        if framing:
            raise _refused(ValueError(f"{framing[0].decode()} is set by the sender, not by a header"))
        if not any(name == b"user-agent" for name, _ in pairs):
            pairs.append((b"user-agent", USER_AGENT))
        _checked(b"/", [(b"host", b"h"), *pairs])
        self.data = b"".join(b"%s: %s\r\n" % pair for pair in pairs)
        self.closes = any(name == b"connection" and b"close" in value.lower() for name, value in pairs)


class _Headers(Mapping[str, str]):
    """A response's headers, looked up case-insensitively (h11 gives the names in lower case).

    A lookup by name (``[]``, ``get``, ``in``) scans the few raw pairs; only iterating builds the
    decoded dict.  The provider asks for a header or two of every response, and a stream holds its
    response for as long as it lives (W12: the dict was ~0.5 KB a live stream).
    """

    __slots__ = ("_items", "_map")

    def __init__(self, items: list[tuple[bytes, bytes]]) -> None:
        self._items = items
        self._map: dict[str, str] | None = None

    def _mapping(self) -> dict[str, str]:
        if self._map is None:
            found: dict[str, str] = {}
            for name, value in self._items:
                key, text = name.decode("latin-1"), value.decode("latin-1")
                found[key] = f"{found[key]}, {text}" if key in found else text  # repeated: joined, as httpx
            self._map = found
        return self._map

    def _lookup(self, key: object) -> str | None:
        if not isinstance(key, str):
            return None
        if self._map is not None:
            return self._map.get(key.lower())
        try:
            name = key.lower().encode("latin-1")
        except UnicodeEncodeError:
            return None  # no header name can be outside latin-1 (they are read as latin-1)
        found: str | None = None
        for item_name, value in self._items:
            if item_name == name:
                text = value.decode("latin-1")
                found = text if found is None else f"{found}, {text}"  # repeated: joined, as httpx
        return found

    def __getitem__(self, key: str) -> str:
        found = self._lookup(key)
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: str, default: Any = None) -> Any:
        found = self._lookup(key)
        return default if found is None else found

    def __contains__(self, key: object) -> bool:
        return self._lookup(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())

    def __repr__(self) -> str:
        return f"_Headers({list(self._mapping())!r})"


class H11Response:
    """One response: its status and headers, and its raw body read as it is iterated.

    The surface :class:`~.body.BodyReader` reads (``httpx.Response``'s names), as the aiohttp
    sender's response has: ``status_code``, ``headers``, ``raw_headers``, ``is_stream_consumed``
    (always ``False``), ``aiter_raw()`` and ``aclose()``.  The body iterator is a plain object,
    not an async generator: a reader that stops half way leaves nothing for the collector.
    """

    __slots__ = (
        "_closes",
        "_connection",
        "_done",
        "_ended",
        "_read_timeout",
        "_sender",
        "headers",
        "raw_headers",
        "status_code",
    )

    #: :meth:`aclose` shuts the socket before its one (shielded) checkpoint: a cancelled caller cannot stop it.
    closes_without_waiting: Final = True
    is_stream_consumed: Final = False

    def __init__(
        self, sender: H11Sender, connection: H11Connection, head: Head, read_timeout: float | None, closes: bool
    ) -> None:
        self._sender = sender
        self._connection = connection
        self._read_timeout = read_timeout
        self._closes = closes  # the request asked for the connection to close after it
        self._done = False  # released or closed
        self._ended = False  # the end of the body was read
        self.status_code: int = head.status_code
        self.raw_headers: list[tuple[bytes, bytes]] = head.headers
        self.headers: Mapping[str, str] = _Headers(self.raw_headers)

    @property
    def content(self) -> bytes:
        """Never read in memory on this path (``is_stream_consumed`` is ``False``)."""
        raise httpx.ResponseNotRead()

    def aiter_raw(self) -> H11Response:
        """The body's bytes as they arrive, undecoded."""
        return self

    def __aiter__(self) -> H11Response:
        return self

    async def __anext__(self) -> bytes:
        """The body bytes read so far (reading only if there are none).

        The parser joins the chunks that arrived together: that spares every layer above one pass
        per chunk (a stream's events often come several to a read).  An end read with the last
        data is noted at once: a reader that stops there still gives a clean connection back.
        The read loop is inline (not a helper coroutine): a stream waits here between deltas,
        and every coroutine in the waiting stack is an object the garbage collector promotes
        (see :meth:`.h11_connection.H11Connection.receive`).

        Cancellation: a cancellation point while it waits for bytes.  A cancelled read closes the response and
        its connection (shielded: the server sees the disconnect, and the connection is never reused) before
        the cancellation propagates.
        """
        if not self._done and not self._ended:
            connection = self._connection
            try:
                while (chunk := connection.ready_event()) is None:
                    connection.parser.receive(await connection.receive(READ_SIZE, self._read_timeout))
            except BaseException:
                await self.aclose()  # a failed or cancelled read: the connection is not reused
                raise
            assert isinstance(chunk, bytes)  # a head comes once, before the body
            # END (trailers, if any, were skipped: no vendor sends them), or the last data, the end read with it.
            self._ended = not chunk or connection.parser.done
            if chunk:
                return chunk
        if not self._done:
            self._done = True  # read to its end: the connection may serve the next request
            await self._sender.release(self._connection, self._closes)
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Close the response: a body not read to its end closes its connection (idempotent).

        Cancellation: it cannot be interrupted (its one checkpoint, the socket's close, is shielded): a
        cancelled caller still closes the response, and the cancellation is delivered at its next checkpoint.
        """
        if self._done:
            return
        self._done = True
        if self._ended:  # its body was read to the end: the connection is clean
            await self._sender.release(self._connection, self._closes)
        else:
            await self._sender.discard(self._connection)


class H11Sender:
    """Sends a provider's requests over a pool of h11 connections (see the module docstring).

    :param timeout: the provider's timeout, used when a request brings none of its own.
    :param max_connections: connections open at once (in use and idle, all hosts).
    :param max_keepalive_connections: idle connections kept.
    :param keepalive_expiry: seconds an idle connection is kept (httpx's default, 5 s).
    :param ssl_context: ``None``: the process's shared default (httpx's, certifi; see ``_tls``), taken on the
        first https request.
    """

    name: Final = "h11"

    def __init__(
        self,
        *,
        timeout: httpx.Timeout,
        max_connections: int = 256,
        max_keepalive_connections: int = 64,
        keepalive_expiry: float = 5.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._timeout = timeout
        self._max_connections = max_connections
        self._max_idle = max_keepalive_connections
        self._expiry = keepalive_expiry
        self._ssl = ssl_context
        self._idle: dict[Origin, list[H11Connection]] = {}
        self._idle_count = 0
        self._open: set[H11Connection] = set()
        self._connecting = 0
        self._waiters: collections.deque[anyio.Event] = collections.deque()
        self._targets: dict[str, _Target] = {}
        # id(the provider's header dict) -> its block; the block keeps the dict, so its id is not reused.
        self._header_blocks: dict[int, _HeaderBlock] = {}

    @property
    def connections(self) -> tuple[int, int]:
        """``(open, idle)``: connections open now (in use or idle), and how many of them are idle."""
        return len(self._open), self._idle_count

    async def send(
        self, url: str, headers: dict[str, str], content: bytes, io_timeout: httpx.Timeout | None = None
    ) -> H11Response:
        """POST ``content``; return once the response headers arrived, its body unread.

        ``headers`` must not change after it was given: its encoded form is kept for the next request
        with the same dict.

        Cancellation: a cancellation point until the headers arrived.  A request cancelled while it waits for
        room in the pool takes none (room handed to it as it was cancelled goes to the next waiter), one
        cancelled while it connects frees its place, and one cancelled while it is written or its head read
        closes its connection (shielded), so the server sees the disconnect.
        """
        timeout = self._timeout if io_timeout is None else io_timeout
        target = self._target(url)
        block = self._block(headers)
        request = b"%s%scontent-length: %d\r\n\r\n%s" % (target.start, block.data, len(content), content)
        connection = await self._acquire(target.origin, timeout)
        try:
            await connection.write(request, timeout.write)
            head = await connection.next_event(timeout.read)  # 1xx heads are skipped by the parser
        except httpx.WriteError as failed:  # only the write raises it (a read fails as ReadError)
            return await self._early_answer(connection, failed, timeout.read)
        except BaseException:
            await self.discard(connection)
            raise
        assert isinstance(head, Head)  # the parser gives a response's head before its body
        return H11Response(self, connection, head, timeout.read, block.closes)

    async def _early_answer(
        self, connection: H11Connection, failed: httpx.WriteError, within: float | None
    ) -> H11Response:
        """The response a server sent before it stopped reading the request, or ``failed`` if there is none.

        A proxy or vendor may answer an oversized upload (413) after its head and close or reset the
        connection with the body unread: the send fails, but the answer is the request's outcome — a
        retry would upload the same body again.  httpcore and aiohttp read it; so does this, the wait
        for it bounded by the read timeout.  The connection is closed after the response (as httpcore
        marks it), whatever its headers say.  Timeouts and cancellation are not write errors: they
        never come here.
        """
        try:
            head = await connection.next_event(within)
        except Exception:  # no whole head came (the connection ended, failed or fell silent): the send's error stands
            head = None
        except BaseException:
            await self.discard(connection)
            raise
        if head is None:
            await self.discard(connection)
            raise failed
        assert isinstance(head, Head)
        return H11Response(self, connection, head, within, closes=True)

    def _target(self, url: str) -> _Target:
        found = self._targets.get(url)
        if found is None:
            found = _Target(url)
            if len(self._targets) >= _CACHE_SIZE:
                self._targets.clear()
            self._targets[url] = found
        return found

    def _block(self, headers: dict[str, str]) -> _HeaderBlock:
        """``headers`` as bytes, checked (names, values) before any connection is taken; cached per dict."""
        known = self._header_blocks.get(id(headers))
        if known is not None and known.source is headers:
            return known
        block = _HeaderBlock(headers)
        if len(self._header_blocks) >= _CACHE_SIZE:
            self._header_blocks.clear()
        self._header_blocks[id(headers)] = block
        return block

    async def _acquire(self, origin: Origin, timeouts: httpx.Timeout) -> H11Connection:
        """A connection to ``origin``: the last idle one still usable, a new one, or the first one freed."""
        deadline: float | None = None
        while True:
            connection = await self._idle_connection(origin)
            if connection is not None:
                return connection
            if len(self._open) + self._connecting < self._max_connections:
                return await self._connect(origin, timeouts.connect)
            if self._idle_count:
                await self._drop_oldest_idle()  # at the limit, idle ones to other hosts make room
                continue
            if deadline is None:
                deadline = anyio.current_time() + timeouts.pool if timeouts.pool is not None else float("inf")
            if not await self._wait_for_room(deadline):
                raise httpx.PoolTimeout(f"no connection of {self._max_connections} came free in time")

    async def _idle_connection(self, origin: Origin) -> H11Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            self._idle_count -= 1
            if now - connection.idle_since < self._expiry and connection.is_reusable():
                # The parser sent and read one whole exchange: it starts the next one on this socket.
                return connection
            await self.discard(connection)
        return None

    async def _connect(self, origin: Origin, within: float | None) -> H11Connection:
        self._connecting += 1
        try:
            connection = await connect(origin, within=within, ssl_context=self._ssl_for(origin))
        except BaseException:  # failed, timed out or cancelled: its place is free, and a request may wait for it
            self._connecting -= 1
            self._wake()
            raise
        self._connecting -= 1
        self._open.add(connection)
        return connection

    def _ssl_for(self, origin: Origin) -> ssl.SSLContext | None:
        if origin[0] != "https":
            return None
        if self._ssl is None:
            self._ssl = default_client_context()  # the process's one (made on the first https request of any)
        return self._ssl

    async def _drop_oldest_idle(self) -> None:
        oldest = min((conns[0] for conns in self._idle.values() if conns), key=lambda c: c.idle_since)
        self._idle[oldest.origin].remove(oldest)
        self._idle_count -= 1
        await self.discard(oldest)

    async def _wait_for_room(self, deadline: float) -> bool:
        """Wait until a connection is released or closed; ``False`` if ``deadline`` came first."""
        waiter = anyio.Event()
        self._waiters.append(waiter)
        try:
            with anyio.CancelScope(deadline=deadline):
                await waiter.wait()
        except BaseException:
            if waiter.is_set():
                self._wake()  # cancelled after being given the room: the next waiter takes it
            else:
                self._waiters.remove(waiter)
            raise
        if not waiter.is_set():
            self._waiters.remove(waiter)
            return False
        return True

    def _wake(self) -> None:
        if self._waiters:
            self._waiters.popleft().set()

    async def release(self, connection: H11Connection, closes: bool = False) -> None:
        """A response read to its end gives its connection back (kept idle if it may serve another).

        ``closes``: its request asked the server to close the connection after the response.

        Cancellation: it cannot be interrupted: the connection is pooled without a wait, or closed as
        :meth:`discard` closes it.
        """
        parser = connection.parser
        if connection in self._open and parser.reusable and not closes and self._idle_count < self._max_idle:
            parser.start_next()
            connection.idle_since = time.monotonic()
            self._idle.setdefault(connection.origin, []).append(connection)
            self._idle_count += 1
            self._wake()
        else:  # the server said "close", the pool closed meanwhile, or enough are idle already
            await self.discard(connection)

    async def discard(self, connection: H11Connection) -> None:
        """Close ``connection`` and free its place (idempotent).

        Cancellation: it cannot be interrupted: the place is freed before its one checkpoint, the socket's close,
        which is shielded; the cancellation is delivered at the caller's next checkpoint.
        """
        if connection.closed:
            return
        self._open.discard(connection)
        self._wake()
        await connection.close_now()

    async def aclose(self) -> None:
        """Close every connection, idle or in use (a response still being read then fails with ``ReadError``).

        Cancellation: it cannot be interrupted: each connection is closed as :meth:`discard` closes it, so a
        cancelled caller still closes them all; the cancellation is delivered at its next checkpoint.
        """
        self._idle.clear()
        self._idle_count = 0
        for connection in list(self._open):
            await self.discard(connection)


def _checked(target: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """What h11 would refuse to write in a POST with ``target`` and ``headers`` is refused here."""
    try:
        h11.Request(method=b"POST", target=target, headers=[*headers, (b"content-length", b"0")])
    except h11.LocalProtocolError as exc:
        raise _refused(exc) from None


def _refused(exc: Exception) -> httpx.LocalProtocolError:
    """h11 (or ASCII) refused what the request would send: a request fault, never retried."""
    err = httpx.LocalProtocolError(f"the request cannot be sent as HTTP/1.1: {exc}")
    err.__cause__ = exc
    return err
