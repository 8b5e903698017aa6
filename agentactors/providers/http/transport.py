"""How a provider puts a request on the wire: one seam, chosen at run time from the running backend.

Three ways, one interface (:class:`Sender`: send a POST, get a :class:`WireResponse` whose
body is not read yet):

* an **injected** ``httpx.AsyncClient`` is used as it is (``client.send``): the user's
  transport, auth, hooks and proxies, never replaced and never closed here; the response is
  httpx's.  Its redirect setting alone is overridden: no sender follows a redirect (the vendor's
  credential headers would go with it to another origin), so a 3xx is the same error on every sender;
* **owned** (the default on both backends): :class:`~.h11_transport.H11Sender`, a small
  HTTP/1.1 client (h11 checks each request; responses are read by ``_response_parser``) with its
  own pool.  Its connections skip anyio's stream: on asyncio each is a lean protocol on the loop's
  own transport, TLS included (``_asyncio_direct``); on trio a plain-TCP socket is read and written
  directly (``_trio_direct``) and TLS goes through anyio's TLS stream.  httpx's client and httpcore's pool
  cost trio 2.6–3.2× the CPU of the aiohttp path per request; on asyncio this sender costs
  0.6–0.7× the aiohttp sender's CPU per JSON request, about the same per streamed delta
  (0.9–1.1×), and ~6 KB less memory per open stream (benchmarks W5, W7, W12);
* **owned, over aiohttp** (``AGENTACTORS_HTTP_TRANSPORT=aiohttp``, the ``[aiohttp]`` extra, asyncio
  only): :class:`~.aiohttp_transport.AiohttpSender`, straight over aiohttp — the default before the
  h11 sender's asyncio path overtook it.  Neither an ``AsyncClient`` nor an ``httpx.Request`` /
  ``httpx.Response`` is made per request; its failures are still httpx's exceptions;
* **owned, over httpx** (a proxy configured in the environment, which the h11 sender does not speak to, or
  ``AGENTACTORS_HTTP_TRANSPORT=httpx``): an ``httpx.AsyncClient`` over httpcore.

``AGENTACTORS_HTTP_TRANSPORT=httpx`` forces the last one on either backend (an escape hatch, and
how the benchmarks compare them); ``=aiohttp`` takes the aiohttp sender on asyncio (an error if
aiohttp is missing; on trio, which aiohttp cannot run on, the default); ``=h11`` the h11 sender
even with a proxy configured.

Every owned sender not given a TLS context of its own uses a shared one (``_tls``): httpx's default (certifi, or
``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, read when it is first made), built once — per process for the h11 and
aiohttp senders, per thread for owned httpx clients (httpcore changes its client's context) — not per sender.

An owned sender's pool holds at most 256 connections (in use and idle, all hosts; 64 kept idle):
past them a request waits for one (``timeout.pool``).  ``AGENTACTORS_HTTP_MAX_CONNECTIONS=N`` sets
that bound for the process — read once, when the first owned sender is made — and keeps up to N
idle, for a service whose thousands of concurrent runs each hold a stream open.  An injected client
has its own limits (``httpx.AsyncClient(limits=...)``).

httpx is imported where a sender is made or a response read, not at the top: ``import agentactors``
does not load it (with its CLI's rich and click, when installed, it is most of the package's
import time).
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..._backend import running_trio
from ..._extras import missing_extra
from ._proxies import proxies_configured

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ClientSender",
    "Sender",
    "WireResponse",
    "owned_sender",
    "preload",
    "raw_headers",
    "running_backend",
]

ENV = "AGENTACTORS_HTTP_TRANSPORT"
#: The variable that sets the owned pool's size (see the module docstring).
MAX_CONNECTIONS_ENV = "AGENTACTORS_HTTP_MAX_CONNECTIONS"
#: The owned pool's limits (an ``httpx.Limits``, made on first use; the benchmarks assign their own).
OWNED_LIMITS: httpx.Limits


if not TYPE_CHECKING:  # for the interpreter only: a checker that saw it would accept any misspelt name

    def __getattr__(name: str) -> object:
        # PEP 562: OWNED_LIMITS is made when first read (from outside, or by owned_sender), then bound here.
        if name == "OWNED_LIMITS":
            return _owned_limits()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _owned_limits() -> httpx.Limits:
    global OWNED_LIMITS
    try:
        return OWNED_LIMITS
    except NameError:
        import httpx

        most = _max_connections()
        OWNED_LIMITS = (
            httpx.Limits(max_connections=256, max_keepalive_connections=64)
            if most is None
            else httpx.Limits(max_connections=most, max_keepalive_connections=most)
        )
        return OWNED_LIMITS


def _max_connections() -> int | None:
    """``AGENTACTORS_HTTP_MAX_CONNECTIONS`` as a positive int, or ``None`` when unset or empty.

    :raises ValueError: it is set to anything else (naming the variable and the value).
    """
    raw = os.environ.get(MAX_CONNECTIONS_ENV, "").strip()
    if not raw:
        return None
    try:
        most = int(raw)
    except ValueError:
        most = 0
    if most < 1:
        raise ValueError(f"{MAX_CONNECTIONS_ENV} must be a positive whole number of connections, not {raw!r}")
    return most


class WireResponse(Protocol):
    """A response whose headers arrived and whose body is read raw, as it comes (``httpx.Response``'s names).

    An ``httpx.Response`` is one; so is the aiohttp sender's own, lighter one.
    """

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Case-insensitive."""
        ...

    @property
    def is_stream_consumed(self) -> bool:
        """``True`` for a response built in memory whose body was read already (then :attr:`content` holds it)."""
        ...

    @property
    def content(self) -> bytes: ...

    def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive, not decoded."""
        ...

    async def aclose(self) -> None:
        """Close the response; one not read to its end closes its connection.

        Cancellation: a cancelled caller still closes it: the owned senders' responses close without waiting
        (``closes_without_waiting``), and httpcore closes an httpx response's stream under a shield.
        """
        ...


def raw_headers(response: WireResponse) -> Iterable[tuple[bytes, bytes]]:
    """``response``'s headers as ``(name, value)`` byte pairs, as they came."""
    import httpx

    headers = response.headers
    if isinstance(headers, httpx.Headers):
        return headers.raw
    raw: Iterable[tuple[bytes, bytes]] = getattr(response, "raw_headers", ())
    return raw


class Sender(Protocol):
    """Puts one POST on the wire; the response comes back with its body unread."""

    @property
    def name(self) -> str:
        """``"client"`` (an injected client), ``"httpx"``, ``"aiohttp"`` or ``"h11"`` (owned)."""
        ...

    async def send(
        self, url: str, headers: dict[str, str], content: bytes, io_timeout: httpx.Timeout | None = None
    ) -> WireResponse:
        """Send; return once the response headers arrived.

        ``headers`` is not changed, and must not change afterwards (a sender may keep a prepared
        form of it for the next request with the same dict).  ``io_timeout`` is this request's
        own httpx timeout (``ModelSettings.timeout``), replacing the sender's.  Raises httpx's
        exceptions.

        Cancellation: a cancellation point until the response's headers arrived.  A request cancelled
        while it is sent or its headers are awaited closes its connection (never back in the pool), so
        the server sees the disconnect; one cancelled while it waits for a connection takes none.
        """
        ...

    async def aclose(self) -> None:
        """Close what this sender owns (an injected client is left to its owner).

        Cancellation: a cancelled caller still closes every connection the sender owns: each sender
        closes them before its first wait, or under a shield.
        """
        ...


def running_backend() -> str:
    """``"asyncio"`` or ``"trio"``: the async library running the calling task."""
    return "trio" if running_trio() else "asyncio"


@functools.cache
def _body_class() -> Callable[[bytes], httpx.AsyncByteStream]:
    """The class of a request body httpx sends without an async generator (made once, on first use).

    httpx wraps ``content=bytes`` in a stream whose ``__aiter__`` is an async generator; a request
    cancelled while its body is being sent leaves that generator half-run, and trio reports it
    (a ``ResourceWarning``) when it is collected.  This body is one chunk handed out by a plain
    iterator: nothing to finalise.  It derives from httpx's stream (httpx's transports check), so it
    is made here, when a :class:`ClientSender` exists, rather than when this module is imported.
    """
    import httpx

    class _Body(httpx.AsyncByteStream):
        __slots__ = ("_data",)

        def __init__(self, data: bytes) -> None:
            self._data = data

        def __aiter__(self) -> _OneChunk:  # an iterator object, not a generator
            return _OneChunk(self._data)

    return _Body


class _OneChunk:
    __slots__ = ("_data",)

    def __init__(self, data: bytes | None) -> None:
        self._data = data

    def __aiter__(self) -> _OneChunk:
        return self

    async def __anext__(self) -> bytes:
        data, self._data = self._data, None
        if data is None:
            raise StopAsyncIteration
        return data


class ClientSender:
    """Sends through an ``httpx.AsyncClient`` (injected, or owned when ``owned``)."""

    def __init__(self, client: httpx.AsyncClient, *, timeout: httpx.Timeout | None, owned: bool) -> None:
        self.client = client
        self._timeout: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
        self._owned = owned
        self._body = _body_class()

    @property
    def name(self) -> str:
        return "httpx" if self._owned else "client"

    async def send(
        self, url: str, headers: dict[str, str], content: bytes, io_timeout: httpx.Timeout | None = None
    ) -> httpx.Response:
        """Send through the client (as :meth:`Sender.send`), its redirects never followed.

        Cancellation: as httpx's ``send``: a request cancelled while it is sent or its headers are awaited
        closes its connection (httpcore does not give a half-used connection back to its pool).
        """
        options = self._timeout if io_timeout is None else {"timeout": io_timeout}
        request = self.client.build_request("POST", url, content=content, headers=headers, **options)
        request.stream = self._body(content)  # the headers (Content-Length) were set from `content` above
        # Never the client's redirect setting: one that follows (openai's DefaultAsyncHttpxClient does) would carry
        # the vendor's credential headers to whatever origin a 3xx names (httpx strips only Authorization). The
        # owned senders follow none, so a redirect is the same typed error (status 3xx) through every sender.
        try:
            return await self.client.send(request, stream=True, follow_redirects=False)
        except _connect_failures() as exc:  # evaluated only when something is raised: the common path pays nothing
            raise _explained(exc, url, owned=self._owned)  # its cause set: exc, or what exc said (a certificate)

    async def aclose(self) -> None:
        """Close the owned client and its connections; an injected client is left to its owner.

        Cancellation: the client is marked closed first and httpcore closes its pool's connections under a
        shield, so a cancelled caller still closes every one.
        """
        if self._owned:
            await self.client.aclose()


@functools.cache
def _connect_failures() -> tuple[type[httpx.ProxyError], type[httpx.ConnectError]]:
    import httpx

    return httpx.ProxyError, httpx.ConnectError


def _explained(exc: httpx.ProxyError | httpx.ConnectError, url: str, *, owned: bool) -> httpx.TransportError:
    """httpx's failure to reach ``url`` said as every owned sender says it: a proxy's refusal naming the proxy (its
    credentials never: ``_proxies.refused_tunnel``), a certificate that did not verify naming the host
    (``_tls.unverified``); both not retried when asking again cannot help.  Any other failure is ``exc`` itself.

    The proxy is named only for an owned client, which took it from the environment (:func:`._proxies.proxy_for`);
    an injected client's own proxy is not known here.
    """
    import httpx

    from ._proxies import proxy_for, refused_tunnel
    from ._tls import unverified, verify_failure

    target = httpx.URL(url)
    port = target.port or (443 if target.scheme == "https" else 80)
    if isinstance(exc, httpx.ProxyError):
        return refused_tunnel(str(exc), proxy_for(url) if owned else None, f"{target.host}:{port}", exc)
    failure = verify_failure(exc)
    if failure is None:
        return exc
    return unverified(target.host, port, failure)


def _aiohttp_module() -> Any:
    try:
        # Imported here, not at the top: aiohttp is an extra, and `import agentactors` never loads it.
        import agentactors.providers.http.aiohttp_transport as _transport_aiohttp
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.partition(".")[0] in ("aiohttp", "multidict", "yarl"):
            return None  # the [aiohttp] extra is not installed
        raise
    return _transport_aiohttp


def preload() -> None:
    """Import what an owned sender needs now (a provider calls this when it is made): httpx, the h11 sender
    (the aiohttp one instead when ``AGENTACTORS_HTTP_TRANSPORT=aiohttp`` asks for it and it is installed).

    httpx takes ~0.1 s to import, aiohttp ~0.15 s: paid when a provider is built, not by its first request
    (nor by ``import agentactors``).
    """
    importlib.import_module("httpx")
    if os.environ.get(ENV, "").strip().lower() == "aiohttp":
        _aiohttp_module()
    else:
        importlib.import_module("agentactors.providers.http.h11_transport")


def owned_sender(timeout: httpx.Timeout) -> Sender:
    """The sender a provider owns, for the running backend (see the module docstring)."""
    import httpx

    choice = os.environ.get(ENV, "").strip().lower()
    if choice not in ("", "auto", "httpx", "aiohttp", "h11"):
        raise ValueError(f"{ENV} must be 'httpx', 'aiohttp' or 'h11', not {choice!r}")
    limits = _owned_limits()
    backend = running_backend()
    if choice == "aiohttp" and backend == "asyncio":
        module = _aiohttp_module()
        if module is not None:
            sender: Sender = module.AiohttpSender(
                timeout=timeout,
                max_connections=limits.max_connections or 256,
                keepalive_expiry=limits.keepalive_expiry or 5.0,
            )
            return sender
        raise missing_extra(f"{ENV}=aiohttp", "aiohttp")
    if choice == "h11" or (choice != "httpx" and not proxies_configured()):
        from .h11_transport import H11Sender  # imported on first use: `import agentactors` does not need it

        return H11Sender(
            timeout=timeout,
            max_connections=limits.max_connections or 256,
            max_keepalive_connections=limits.max_keepalive_connections or 64,
            keepalive_expiry=limits.keepalive_expiry or 5.0,
        )
    from ._tls import thread_client_context

    # The thread's shared context, not one of its own per client (loading certifi's bundle each time: ~20 ms); per
    # thread because httpcore sets ALPN on it before each connection (_tls's docstring).
    client = httpx.AsyncClient(timeout=timeout, limits=limits, verify=thread_client_context())
    return ClientSender(client, timeout=None, owned=True)
