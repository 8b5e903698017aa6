"""An httpx transport over aiohttp: the HTTP path on asyncio, when aiohttp is installed (``[aiohttp]``).

Why: at 32 concurrent requests httpcore's connection pool costs ~2.9 ms of client CPU per
request, aiohttp's ~0.3 ms (its parser is C, its pool a dict).  httpx stays the API — this is
an ``httpx.AsyncBaseTransport``: requests and responses are httpx's, and every failure is
raised as the httpx exception the classifier already maps — so nothing above the transport
knows which one carried a request.  It is asyncio-only (aiohttp is); on trio, httpcore stays
(:mod:`._transport` picks per running backend).

What it keeps from httpx's own transport:

* **timeouts**: ``connect`` → aiohttp's ``sock_connect``, ``read`` → ``sock_read`` (between
  reads, as in httpx), ``pool`` → ``connect`` (aiohttp's pool wait plus connecting).  aiohttp
  has no *write* timeout; a request body of a few kilobytes goes into the socket buffer at
  once, and a whole-call bound is ``with_timeout``'s job anyway;
* **cancellation**: cancelling a request or closing a half-read response closes its
  connection (never returned to the pool), so the server sees the disconnect;
* **TLS**: the context is httpx's (certifi, ``SSL_CERT_FILE``), not the system store, so
  verification is the same on both transports; proxies come from the environment
  (``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY``, read when the session opens), as httpx does;
* **bodies as sent**: no decompression (``auto_decompress=False``: the provider inflates
  and bounds bodies itself), no cookies, no redirects.

Errors: aiohttp's exceptions become httpx's — a connect failure ``ConnectError``, a connect or
pool timeout ``ConnectTimeout``, a read timeout ``ReadTimeout``, a dropped connection or a
truncated body ``RemoteProtocolError``, another socket error ``ReadError``, a header value
aiohttp refuses to send ``LocalProtocolError`` — each with the aiohttp exception as its cause.
"""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Self

import aiohttp
import httpx
from multidict import CIMultiDict
from yarl import URL

__all__ = ["AiohttpTransport"]

_URL_CACHE_SIZE = 256


def _mapped(exc: BaseException, request: httpx.Request, *, reading: bool) -> httpx.TransportError:
    """The httpx exception for an aiohttp (or socket) failure."""
    text = str(exc) or type(exc).__name__
    mapped: type[httpx.TransportError]
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        mapped = httpx.ConnectTimeout
    elif isinstance(exc, aiohttp.ServerTimeoutError | TimeoutError):
        mapped = httpx.ReadTimeout
    elif isinstance(exc, aiohttp.ClientConnectorError):
        mapped = httpx.ConnectError
    elif isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        mapped = httpx.RemoteProtocolError
    elif isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
        mapped = httpx.UnsupportedProtocol
    elif isinstance(exc, ValueError) and not reading:
        # aiohttp refuses header values holding a line break with a ValueError, before sending.
        mapped = httpx.LocalProtocolError
    elif isinstance(exc, aiohttp.ClientError | OSError):
        mapped = httpx.ReadError
    else:
        mapped = httpx.TransportError
    err = mapped(text, request=request)
    err.__cause__ = exc
    return err


class _Body(httpx.AsyncByteStream):
    """An aiohttp response body as httpx's stream: a plain iterator, not an async generator.

    A plain iterator has nothing for the garbage collector to finalise when a reader stops
    half way; :meth:`aclose` closes the connection unless the body was read to its end.
    """

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request
        self._done = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        if self._done:
            raise StopAsyncIteration
        try:
            chunk = await self._response.content.readany()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise _mapped(exc, self._request, reading=True)
        if not chunk:
            self._done = True
            self._response.release()  # read to its end: the connection goes back to the pool
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        if not self._done:
            self._done = True
            # Half read (a stream left early, a cancelled call, a body past its limit): drop the
            # connection, so the server sees the disconnect and no one reuses a dirty socket.
            self._response.close()


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` carried by one ``aiohttp.ClientSession`` (see the module docstring).

    :param max_connections: the pool's limit (connections in use and idle, all hosts).
    :param keepalive_expiry: seconds an idle connection is kept (httpx's default, 5 s).
    :param ssl_context: ``None`` builds httpx's default context (certifi) on the first https request.
    :param trust_env: read proxies from the environment, as httpx does.

    The session is created on first use, inside the running event loop, and closed by
    :meth:`aclose`.  asyncio only.
    """

    def __init__(
        self,
        *,
        max_connections: int = 256,
        keepalive_expiry: float = 5.0,
        ssl_context: ssl.SSLContext | None = None,
        trust_env: bool = True,
    ) -> None:
        self._max_connections = max_connections
        self._keepalive = keepalive_expiry
        self._ssl = ssl_context
        self._trust_env = trust_env
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[tuple[Any, ...], aiohttp.ClientTimeout] = {}
        self._urls: dict[str, URL] = {}

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=self._max_connections, keepalive_timeout=self._keepalive)
        # aiohttp's trust_env costs two worker-thread hops per request (netrc, then proxies): paid only
        # when a proxy is actually configured in the environment, which is all httpx reads it for.
        trust_env = self._trust_env and bool(urllib.request.getproxies())
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            trust_env=trust_env,
            timeout=aiohttp.ClientTimeout(total=None),
        )
        return self._session

    def _timeout(self, request: httpx.Request) -> aiohttp.ClientTimeout:
        given = request.extensions.get("timeout") or {}
        key = (given.get("connect"), given.get("read"), given.get("pool"))
        timeout = self._timeouts.get(key)
        if timeout is None:
            connect, read, pool = key
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read, connect=pool)
            if len(self._timeouts) < 64:
                self._timeouts[key] = timeout
        return timeout

    def _ssl_for(self, url: URL) -> ssl.SSLContext | bool:
        if url.scheme != "https":
            return True  # aiohttp's default; no context is built for a plain-HTTP server
        if self._ssl is None:
            # Built on the first https request (it loads certifi's bundle: ~0.1 s), httpx's own way.
            self._ssl = httpx.create_ssl_context()
        return self._ssl

    def _url(self, request: httpx.Request) -> URL:
        text = str(request.url)
        url = self._urls.get(text)
        if url is None:
            url = URL(text, encoded=True)
            if len(self._urls) >= _URL_CACHE_SIZE:
                self._urls.clear()
            self._urls[text] = url
        return url

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; the response's body is read as it is iterated.

        Cancellation: cancelling while the request is sent or its headers awaited closes the
        connection (aiohttp does), so the server sees the disconnect.
        """
        session = self._session or self._open()
        headers = CIMultiDict(request.headers.multi_items())
        # aiohttp frames the body itself; httpx's framing headers would be sent twice.
        headers.popall("content-length", None)
        headers.popall("transfer-encoding", None)
        try:
            content: bytes | None = request.content or None
        except httpx.RequestNotRead:
            raise httpx.LocalProtocolError("the aiohttp transport sends bodies given as bytes", request=request)
        url = self._url(request)
        try:
            response = await session.request(
                request.method,
                url,
                ssl=self._ssl_for(url),
                headers=headers,
                data=content,
                allow_redirects=False,
                timeout=self._timeout(request),
                skip_auto_headers=("accept-encoding", "user-agent", "accept"),
            )
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
            raise _mapped(exc, request, reading=False)
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if response.reason:
            extensions["reason_phrase"] = response.reason.encode("latin-1", "replace")
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_Body(response, request),
            request=request,
            extensions=extensions,
        )

    async def aclose(self) -> None:
        """Close the session and every connection in its pool (idempotent)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.aclose()
