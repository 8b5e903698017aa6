"""An HTTP sender straight over aiohttp, on asyncio (``[aiohttp]``, ``AGENTACTORS_HTTP_TRANSPORT=aiohttp``).

It was asyncio's default until the h11 sender's asyncio path overtook it (:mod:`.transport`); it
stays for whoever prefers aiohttp's stack (its C parser, its proxy handling).

Why: at 32 concurrent requests httpcore's connection pool costs ~2 ms of client CPU per
request, aiohttp's ~0.3 ms (its parser is C, its pool a dict).  And no httpx object is made
per request on this path: building an ``httpx.Request`` (its headers normalised and copied, its
body wrapped in a stream) and an ``httpx.Response`` around aiohttp's (its headers decoded again)
cost as much as aiohttp itself, for nothing a provider reads.  :class:`AiohttpSender` takes the
provider's URL, headers and body as they are and hands back :class:`AiohttpResponse`, which
carries aiohttp's own parsed status and headers and reads the raw body.  httpx stays the API
around it: timeouts are given as ``httpx.Timeout``, and every failure is raised as the httpx
exception the classifier already maps, so nothing above the sender knows which stack carried a
request.  It is asyncio-only (aiohttp is); the default on both backends is :mod:`.h11_transport`, and
:mod:`.transport` picks.

What it keeps from httpx's own transport:

* **timeouts**: ``connect`` → aiohttp's ``sock_connect``, ``read`` → ``sock_read`` (between
  reads, as in httpx), ``pool`` → ``connect`` (aiohttp's pool wait plus connecting).  aiohttp
  has no *write* timeout; a request body of a few kilobytes goes into the socket buffer at
  once, and a whole-call bound is ``with_timeout``'s job anyway;
* **cancellation**: cancelling a request or closing a half-read response closes its
  connection (never returned to the pool), so the server sees the disconnect;
* **TLS**: the context is httpx's (certifi, ``SSL_CERT_FILE``), not the system store, so
  verification is the same on both transports; a certificate that does not verify is
  ``_tls.unverified`` (naming the host, not retried), as on every sender;
* **proxies** from the environment, chosen per URL as httpx chooses (:func:`._proxies.proxy_for`:
  ``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY``, ``NO_PROXY`` with its ports), read on a URL's
  first request, its credentials sent as ``Proxy-Authorization``; a refused tunnel is
  ``_proxies.refused_tunnel`` (the proxy named without its credentials; 407 not retried).  aiohttp's
  own reading (``trust_env``) is not used: it ignored a ``NO_PROXY`` entry's port, read ``~/.netrc``
  for the vendor's host, and cost two worker-thread hops per request;
* **bodies as sent**: no decompression (``auto_decompress=False``: the provider inflates
  and bounds bodies itself), no cookies, no redirects.

Errors: aiohttp's exceptions become httpx's — a connect failure ``ConnectError``, a connect or
pool timeout ``ConnectTimeout``, a read timeout ``ReadTimeout``, a dropped connection or a
truncated body ``RemoteProtocolError``, another socket error ``ReadError``, a header value
aiohttp refuses to send ``LocalProtocolError`` — each with the aiohttp exception as its cause.
"""

from __future__ import annotations

import base64
import io
import ssl
from collections.abc import Iterable, Mapping
from typing import Any, Final

import httpx

from ..._extras import needs_extra

with needs_extra("aiohttp", "agentactors' aiohttp sender"):
    import aiohttp
    from multidict import CIMultiDict
    from yarl import URL

from ._proxies import proxy_for, refused_tunnel
from ._tls import default_client_context, unverified, verify_failure

__all__ = ["AiohttpResponse", "AiohttpSender"]

_CACHE_SIZE: Final = 256
# aiohttp warns (ResourceWarning) of a body past 1 MiB given as bytes, which a test suite's warnings-as-errors
# turns into the request's failure: such a body (an image, a long document) goes as an in-memory buffer,
# which aiohttp writes in chunks, yielding between them, with its length declared all the same.
_LARGE_BODY: Final = 1 << 20
USER_AGENT: Final = "agentactors (python)"


def _mapped(exc: BaseException, *, reading: bool) -> httpx.TransportError:
    """The httpx exception for an aiohttp (or socket) failure (no ``httpx.Request`` exists on this path)."""
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
    err = mapped(text)
    err.__cause__ = exc
    return err


class _Target:
    """A URL as this sender sends to it: parsed, its TLS setting, and its proxy (``None``: direct)."""

    __slots__ = ("proxy", "proxy_as_set", "proxy_headers", "tls", "url")

    def __init__(self, url: URL, tls: ssl.SSLContext | bool, proxy: str | None) -> None:
        self.url = url
        self.tls = tls
        self.proxy_as_set = proxy  # as configured, credentials included: only ever shown through refused_tunnel
        self.proxy: URL | None = None
        self.proxy_headers: dict[str, str] | None = None
        if proxy is not None:
            parsed = URL(proxy)
            if parsed.user is not None:  # aiohttp takes the credentials as a header, not in the URL
                pair = f"{parsed.user}:{parsed.password or ''}".encode()  # UTF-8, as httpx encodes them
                self.proxy_headers = {"Proxy-Authorization": f"Basic {base64.b64encode(pair).decode('ascii')}"}
            self.proxy = parsed.with_user(None)


def _connect_failure(exc: BaseException, target: _Target) -> httpx.TransportError | None:
    """A refused tunnel or a certificate that did not verify, said as every sender says it; ``None``: neither."""
    host, port = target.url.host or "", target.url.port
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        return refused_tunnel(f"{exc.status} {exc.message}", target.proxy_as_set, f"{host}:{port}", exc)
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):  # an ssl.CertificateError itself, wrapping the real
        found = exc.certificate_error
        failure = verify_failure(found) if isinstance(found, BaseException) else None
    else:
        failure = verify_failure(exc)
    return None if failure is None else unverified(host, port, failure)


class AiohttpResponse:
    """One response: aiohttp's status and headers as parsed, and its raw body read as it is iterated.

    The surface :class:`~agentactors.providers.http.body.BodyReader` reads (``httpx.Response``'s
    names): ``status_code``, ``headers`` (case-insensitive), ``is_stream_consumed`` (always
    ``False``: nothing is read yet), ``aiter_raw()`` and ``aclose()``; plus ``raw_headers``, the
    ``(name, value)`` byte pairs the rate-limit reader takes.  The body iterator is a plain
    object, not an async generator, so nothing is left for the garbage collector to finalise
    when a reader stops half way; :meth:`aclose` never waits, so it needs no shield either.
    """

    __slots__ = ("_done", "_response", "headers", "raw_headers", "status_code")

    #: :meth:`aclose` closes at once, without awaiting anything: a cancelled caller cannot interrupt it.
    closes_without_waiting: Final = True
    is_stream_consumed: Final = False

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self._done = False
        self.status_code: int = response.status
        self.headers: Mapping[str, str] = response.headers
        self.raw_headers: Iterable[tuple[bytes, bytes]] = response.raw_headers

    @property
    def content(self) -> bytes:
        """Never read in memory on this path (``is_stream_consumed`` is ``False``)."""
        raise httpx.ResponseNotRead()

    def aiter_raw(self) -> AiohttpResponse:
        """The body's bytes as they arrive, undecoded."""
        return self

    def __aiter__(self) -> AiohttpResponse:
        return self

    async def __anext__(self) -> bytes:
        """The body bytes aiohttp has read (waiting for some if there are none).

        Cancellation: a cancellation point while it waits for bytes.  A cancelled read leaves the response open,
        to :meth:`aclose` (which :class:`~agentactors.providers.http.body.BodyReader` calls: it drops the
        connection).
        """
        if self._done:
            raise StopAsyncIteration
        try:
            chunk = await self._response.content.readany()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise _mapped(exc, reading=True)
        if not chunk:
            self._done = True
            self._response.release()  # read to its end: the connection goes back to the pool
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        """Close the response: a body not read to its end closes its connection (idempotent).

        Cancellation: not a cancellation point (it awaits nothing): a cancelled caller still closes it.
        """
        if not self._done:
            self._done = True
            # Half read (a stream left early, a cancelled call, a body past its limit): drop the
            # connection, so the server sees the disconnect and no one reuses a dirty socket.
            self._response.close()


class AiohttpSender:
    """Sends a provider's requests through one ``aiohttp.ClientSession`` (see the module docstring).

    :param timeout: the provider's timeout, used when a request brings none of its own.
    :param max_connections: the pool's limit (connections in use and idle, all hosts).
    :param keepalive_expiry: seconds an idle connection is kept (httpx's default, 5 s).
    :param ssl_context: ``None``: the process's shared default (httpx's, certifi; see ``_tls``), taken on the
        first https request.
    :param trust_env: read proxies from the environment, as httpx does (``False``: never a proxy).

    The session is created on first use, inside the running event loop, and closed by
    :meth:`aclose`.  asyncio only.
    """

    name: Final = "aiohttp"

    def __init__(
        self,
        *,
        timeout: httpx.Timeout,
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
        self._default_timeout = self._timeout(timeout)
        self._urls: dict[str, _Target] = {}
        # id(the provider's header dict) -> (that dict, its aiohttp form): a provider sends the same
        # few header dicts again and again (see HTTPProvider._prepare); the dict is kept, so its id is not reused.
        self._header_sets: dict[int, tuple[dict[str, str], CIMultiDict[str]]] = {}

    @property
    def session(self) -> aiohttp.ClientSession | None:
        """The open session, if any (its ``connector`` is the connection pool)."""
        return self._session

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=self._max_connections, keepalive_timeout=self._keepalive)
        # Never aiohttp's trust_env: the proxy is chosen per URL here, as httpx chooses (see the module).
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            trust_env=False,
            timeout=aiohttp.ClientTimeout(total=None),
        )
        return self._session

    def _timeout(self, timeout: httpx.Timeout) -> aiohttp.ClientTimeout:
        key = (timeout.connect, timeout.read, timeout.pool)
        found = self._timeouts.get(key)
        if found is None:
            connect, read, pool = key
            found = aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read, connect=pool)
            if len(self._timeouts) < 64:
                self._timeouts[key] = found
        return found

    def _url(self, text: str) -> _Target:
        known = self._urls.get(text)
        if known is None:
            url = URL(text, encoded=True)
            known = _Target(url, self._ssl_for(url), proxy_for(text) if self._trust_env else None)
            if len(self._urls) >= _CACHE_SIZE:
                self._urls.clear()
            self._urls[text] = known
        return known

    def _ssl_for(self, url: URL) -> ssl.SSLContext | bool:
        if url.scheme != "https":
            return True  # aiohttp's default; no context is built for a plain-HTTP server
        if self._ssl is None:
            self._ssl = default_client_context()  # the process's one (made on the first https request of any)
        return self._ssl

    def _headers(self, headers: dict[str, str]) -> CIMultiDict[str]:
        known = self._header_sets.get(id(headers))
        if known is not None and known[0] is headers:
            return known[1]
        prepared = CIMultiDict(headers)
        prepared.setdefault("user-agent", USER_AGENT)
        if len(self._header_sets) >= _CACHE_SIZE:
            self._header_sets.clear()
        self._header_sets[id(headers)] = (headers, prepared)
        return prepared

    async def send(
        self, url: str, headers: dict[str, str], content: bytes, io_timeout: httpx.Timeout | None = None
    ) -> AiohttpResponse:
        """POST ``content``; return once the response headers arrived, its body unread.

        ``headers`` must not change after it was given: its aiohttp form is kept for the next request
        with the same dict.

        Cancellation: a cancellation point until the headers arrived.  Cancelling while the request is sent
        or its headers awaited closes the connection (aiohttp does), so the server sees the disconnect; a
        request cancelled while it waits for a connection at the pool's limit takes none.
        """
        session = self._session or self._open()
        target = self._url(url)
        try:
            response = await session.request(
                "POST",
                target.url,
                ssl=target.tls,
                proxy=target.proxy,
                proxy_headers=target.proxy_headers,
                headers=self._headers(headers),
                data=content if len(content) <= _LARGE_BODY else io.BytesIO(content),
                allow_redirects=False,
                timeout=self._default_timeout if io_timeout is None else self._timeout(io_timeout),
            )
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
            raise _connect_failure(exc, target) or _mapped(exc, reading=False)
        return AiohttpResponse(response)

    async def aclose(self) -> None:
        """Close the session and every connection in its pool (idempotent).

        Cancellation: aiohttp closes every connection before its one wait (for the closes to complete), so a
        cancelled caller leaves none open; the session is forgotten first, and a second call does nothing.
        """
        session, self._session = self._session, None
        if session is not None:
            await session.close()
