"""How a provider puts a request on the wire: one seam, chosen at run time from the running backend.

Three ways, one interface (:class:`Sender`: send a POST, get an httpx response whose body is
not read yet):

* an **injected** ``httpx.AsyncClient`` is used as it is (``client.send``): the user's
  transport, auth, hooks and proxies, never replaced and never closed here;
* **owned, on asyncio with aiohttp installed** (the ``[aiohttp]`` extra):
  :class:`~._transport_aiohttp.AiohttpTransport`, called directly.  No ``AsyncClient`` sits
  around it: its per-request work (cookies, auth flow, redirects, hooks, header merging) is
  most of what httpx costs over its transport, and a provider uses none of it;
* **owned otherwise** (trio, or asyncio without aiohttp): an ``httpx.AsyncClient`` over
  httpcore, as before.

``AGENTACTORS_HTTP_TRANSPORT=httpx`` forces the last one on asyncio too (an escape hatch, and
how the benchmarks compare the two); ``=aiohttp`` makes a missing aiohttp an error on asyncio
instead of a quiet fallback.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

import httpx

__all__ = ["ClientSender", "Sender", "TransportSender", "owned_sender", "preload", "running_backend"]

ENV = "AGENTACTORS_HTTP_TRANSPORT"
OWNED_LIMITS = httpx.Limits(max_connections=256, max_keepalive_connections=64)
_USER_AGENT = "agentactors (python)"
_URL_CACHE_SIZE = 256


class Sender(Protocol):
    """Puts one POST on the wire; the response comes back with its body unread."""

    @property
    def name(self) -> str:
        """``"client"`` (an injected client), ``"httpx"`` or ``"aiohttp"`` (owned)."""
        ...

    async def send(
        self, url: str, headers: dict[str, str], content: bytes, io_timeout: httpx.Timeout | None = None
    ) -> httpx.Response:
        """Send; return once the response headers arrived.

        ``io_timeout`` is this request's own httpx timeout (``ModelSettings.timeout``), replacing the sender's.
        Raises httpx's exceptions.  Cancellation: cancelling closes the connection.
        """
        ...

    async def aclose(self) -> None:
        """Close what this sender owns (an injected client is left to its owner)."""
        ...


def running_backend() -> str:
    """``"asyncio"`` or ``"trio"``: the async library running the calling task."""
    try:
        import sniffio
    except ImportError:  # trio depends on sniffio: without it, only asyncio can be running
        return "asyncio"
    return str(sniffio.current_async_library())


class ClientSender:
    """Sends through an ``httpx.AsyncClient`` (injected, or owned when ``owned``)."""

    def __init__(self, client: httpx.AsyncClient, *, timeout: httpx.Timeout | None, owned: bool) -> None:
        self.client = client
        self._timeout: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
        self._owned = owned

    @property
    def name(self) -> str:
        return "httpx" if self._owned else "client"

    async def send(
        self, url: str, headers: dict[str, str], content: bytes, io_timeout: httpx.Timeout | None = None
    ) -> httpx.Response:
        options = self._timeout if io_timeout is None else {"timeout": io_timeout}
        request = self.client.build_request("POST", url, content=content, headers=headers, **options)
        return await self.client.send(request, stream=True)

    async def aclose(self) -> None:
        if self._owned:
            await self.client.aclose()


class TransportSender:
    """Sends straight to an owned httpx transport, with the provider's timeout on every request."""

    def __init__(self, transport: httpx.AsyncBaseTransport, *, timeout: httpx.Timeout, name: str) -> None:
        self.transport = transport
        self._extensions = {"timeout": timeout.as_dict()}
        self._name = name
        self._urls: dict[str, httpx.URL] = {}
        self._header_sets: dict[tuple[tuple[str, str], ...], httpx.Headers] = {}

    @property
    def name(self) -> str:
        return self._name

    def _url(self, url: str) -> httpx.URL:
        parsed = self._urls.get(url)
        if parsed is None:
            parsed = httpx.URL(url)
            if len(self._urls) >= _URL_CACHE_SIZE:
                self._urls.clear()
            self._urls[url] = parsed
        return parsed

    def _headers(self, headers: dict[str, str]) -> httpx.Headers:
        # A provider sends the same few header sets again and again; httpx copies a Headers as is.
        key = tuple(headers.items())
        parsed = self._header_sets.get(key)
        if parsed is None:
            parsed = httpx.Headers({"user-agent": _USER_AGENT, **headers})
            if len(self._header_sets) >= _URL_CACHE_SIZE:
                self._header_sets.clear()
            self._header_sets[key] = parsed
        return parsed

    async def send(
        self, url: str, headers: dict[str, str], content: bytes, io_timeout: httpx.Timeout | None = None
    ) -> httpx.Response:
        extensions = self._extensions if io_timeout is None else {"timeout": io_timeout.as_dict()}
        request = httpx.Request(
            "POST", self._url(url), headers=self._headers(headers), content=content, extensions=extensions
        )
        response = await self.transport.handle_async_request(request)
        response.request = request
        return response

    async def aclose(self) -> None:
        await self.transport.aclose()


def _aiohttp_module() -> Any:
    try:
        # Imported here, not at the top: aiohttp is an extra, and `import agentactors` never loads it.
        from . import _transport_aiohttp
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.partition(".")[0] in ("aiohttp", "multidict", "yarl"):
            return None  # the [aiohttp] extra is not installed
        raise
    return _transport_aiohttp


def preload() -> None:
    """Import the aiohttp transport now if it is installed (a provider calls this when it is made).

    aiohttp takes ~0.15 s to import: paid when a provider is built, not by its first request.
    """
    _aiohttp_module()


def _aiohttp_transport() -> httpx.AsyncBaseTransport | None:
    module = _aiohttp_module()
    if module is None:
        return None
    transport: httpx.AsyncBaseTransport = module.AiohttpTransport(
        max_connections=OWNED_LIMITS.max_connections or 256,
        keepalive_expiry=OWNED_LIMITS.keepalive_expiry or 5.0,
    )
    return transport


def owned_sender(timeout: httpx.Timeout) -> Sender:
    """The sender a provider owns, for the running backend (see the module docstring)."""
    choice = os.environ.get(ENV, "").strip().lower()
    if choice not in ("", "auto", "httpx", "aiohttp"):
        raise ValueError(f"{ENV} must be 'httpx' or 'aiohttp', not {choice!r}")
    if choice != "httpx" and running_backend() == "asyncio":
        transport = _aiohttp_transport()
        if transport is not None:
            return TransportSender(transport, timeout=timeout, name="aiohttp")
        if choice == "aiohttp":
            raise RuntimeError(f"{ENV}=aiohttp, but aiohttp is not installed (pip install 'agentactors[aiohttp]')")
    client = httpx.AsyncClient(timeout=timeout, limits=OWNED_LIMITS)
    return ClientSender(client, timeout=None, owned=True)
