"""``HTTPProvider``: the thin HTTP adapter every vendor wire shares.

A vendor provider is a :class:`~agentactors.providers.codec.WireCodec` (pure
request/response/stream mapping) plus this class, which does the I/O:

* fills the fields a request leaves unset from the provider's default
  :class:`~agentactors.ModelSettings` (``settings=``), resolves the model and refuses a
  forced tool choice the model rejects *before* anything is sent;
* checks the API key once, when the provider is made (surrounding whitespace
  stripped; a key no HTTP header can carry refused with a ``ValueError`` that
  does not contain it), puts it in headers only (never in a URL) and registers
  it with :func:`~agentactors.redaction.register_secret`, so it is redacted from
  every error, cause chain and log line (httpx's and httpcore's included);
* sends through one seam (:mod:`.transport`): an injected
  :class:`httpx.AsyncClient` as is; else an owned pool created lazily inside the
  running event loop — aiohttp on asyncio when the ``[aiohttp]`` extra is
  installed (no httpx object per request, httpx's exceptions), on trio a
  small HTTP/1.1 client on h11 (:mod:`.h11_transport`), httpcore otherwise;
* reads bodies under byte limits counted after decompression
  (:mod:`.limits`, :mod:`.body`) and an error body only as far as
  classification needs;
* classifies every failure into the :class:`~agentactors.ProviderError`
  taxonomy: non-2xx through the codec, transport errors and timeouts as
  transient, an undecodable body as :class:`~agentactors.MalformedResponseError`,
  a body past a limit as :class:`~agentactors.ResponseTooLargeError`;
* decodes streams one SSE event at a time (:mod:`._sse`: bounded lines and
  events, httpx-sse's field decoder) through the codec's
  :class:`~agentactors.providers.codec.StreamDecoder`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar, Protocol, Self

import anyio
import anyio.lowlevel

from ..._containment import cancellation_alone
from ..._run_end import close_at_run_end
from ..._scrub import scrub_chain
from ...errors import ErrorKind, MalformedResponseError, ProviderError
from ...messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent, TextDelta
from ...pricing import load_table
from ...redaction import redact, redact_loggers, register_secret
from ...settings import ModelSettings
from ..codec import StreamDecoder, WireCodec
from ..errors import classify_exception
from ..port import (
    Capabilities,
    check_forced_tool_choice,
    check_response_format,
    events_for_response,
    interrupted,
    resolve_model,
)
from .body import BodyReader
from .checks import check_base_url, check_http_client, check_model, check_name, check_timeout, url_host
from .keys import clean_api_key
from .limits import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SSE_LINE_BYTES,
    ERROR_BODY_BYTES,
    ResponseLimits,
)
from .ratelimits import RateLimitState, read_rate_limits
from .sse import SSEReader, iter_events
from .transport import ClientSender, Sender, WireResponse, owned_sender, preload, raw_headers

if TYPE_CHECKING:
    # Imported where a timeout is made, a URL compared or a failure told apart: `import agentactors` does not
    # load httpx (making a provider does: transport.preload).
    import httpx

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_SSE_LINE_BYTES",
    "DEFAULT_TIMEOUT",
    "Framer",
    "HTTPProvider",
    "iter_sse",
]

log = logging.getLogger("agentactors.providers.http")

# LLM answers can take minutes before the first byte (reasoning models), so the read
# timeout is generous; connecting and pool waits should fail fast.  A whole-call bound
# belongs to the with_timeout decorator, not to the transport.  An ``httpx.Timeout``, made when first read.
DEFAULT_TIMEOUT: httpx.Timeout
# Undecodable exceptions a codec may raise on a vendor shape it did not foresee.
_DECODE_FAILURES = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)
# The loggers of the HTTP stack under us: each gets the redacting filter (a logger's filters do
# not apply to its children's records, so every emitting logger is named).
_TRANSPORT_LOGGERS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
    "hpack.hpack",
    "hpack.table",
    "h2",
    "h11",
    "aiohttp.client",
    "aiohttp.internal",
    "asyncio",
)
# Offered explicitly, so a server never answers in an encoding whose decoder we do not bound.
_ACCEPT_ENCODING = "gzip, deflate"
# One encoder for every request body (json.dumps with options builds a new one per call).
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


if not TYPE_CHECKING:  # for the interpreter only: a checker that saw it would accept any misspelt name

    def __getattr__(name: str) -> object:
        # PEP 562: DEFAULT_TIMEOUT is made when first read (from outside, or when a provider makes its pool).
        if name == "DEFAULT_TIMEOUT":
            return _default_timeout()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _default_timeout() -> httpx.Timeout:
    global DEFAULT_TIMEOUT
    try:
        return DEFAULT_TIMEOUT
    except NameError:
        import httpx

        DEFAULT_TIMEOUT = httpx.Timeout(connect=15.0, read=600.0, write=60.0, pool=60.0)
        return DEFAULT_TIMEOUT


def _httpx_timeout(timeout: httpx.Timeout | float) -> httpx.Timeout:
    import httpx

    return httpx.Timeout(timeout)


def iter_sse(raw: bytes | str) -> Iterator[tuple[str, str]]:
    """Decode a complete SSE body into ``(event, data)`` pairs, exactly as a live stream would be.

    Uses the same reader as :meth:`HTTPProvider.stream` (an unnamed event is
    ``"message"``; events with empty data are not dispatched, per WHATWG), with the
    default line and event limits.  Meant for tests and tooling that replay recorded
    streams.
    """
    content = raw.encode("utf-8") if isinstance(raw, str) else raw
    yield from iter_events(content, max_line_bytes=DEFAULT_MAX_SSE_LINE_BYTES, max_event_bytes=DEFAULT_MAX_EVENT_BYTES)


class Framer(Protocol):
    """Cuts a stream's raw body into ``(event, data)`` pairs for a :class:`StreamDecoder` (SSE by default)."""

    def feed(self, chunk: bytes) -> Iterable[tuple[str, str]]:
        """The pairs ``chunk`` completes."""
        ...

    def close(self) -> Iterable[tuple[str, str]]:
        """The pairs left at the end of the body (or a :class:`~agentactors.ProviderError` for a cut one)."""
        ...


def _loop_token() -> object | None:
    """The running event loop's identity (anyio >= 4.11), or ``None`` when it cannot be told."""
    current = getattr(anyio.lowlevel, "current_token", None)
    if current is None:
        return None
    try:
        token: object = current()
    except Exception:
        return None
    return token


def _is_2xx(status: int) -> bool:
    return 200 <= status < 300


class HTTPProvider:
    """Thin HTTP adapter around a :class:`~agentactors.providers.codec.WireCodec`.

    Subclasses set :attr:`wire_name` (the default provider name),
    :attr:`api_key_env` (environment variables tried in order when ``api_key``
    is ``None``) and :attr:`key_required_host` (the vendor's own host, which
    answers 401 to a request without a key), and usually override :meth:`supports_forced_tool_choice`,
    :meth:`supports_response_format` and :meth:`_wire_traits` with per-model data
    (:meth:`capabilities` is composed of them).

    :param max_response_bytes: the most bytes read of one response — a JSON body or a
        whole stream — counted after decompression (default 64 MiB).
    :param max_sse_line_bytes: the longest SSE line read (default 16 MiB).
    :param max_event_bytes: the most bytes of one SSE event's lines (default 16 MiB).
        Past any of the three: :class:`~agentactors.ResponseTooLargeError`, and nothing
        more is read (see :mod:`agentactors.providers.http.limits`).

    Errors: :meth:`complete` and :meth:`stream` raise only
    :class:`~agentactors.ProviderError` subclasses (or anyio's cancellation
    exception).  A forced tool choice the model rejects raises
    :class:`~agentactors.UnsupportedToolChoiceError` and a missing model a
    request-kind error, both before any request is sent.  A stream that fails
    after its first event raises :class:`~agentactors.StreamInterruptedError`
    (``partial_text`` = the answer text delivered); before it, the classified
    error itself.  Without a key (none given, none in :attr:`api_key_env`) for
    a ``base_url`` on :attr:`key_required_host`, :meth:`complete` and
    :meth:`stream` raise an account-kind, non-retryable
    :class:`~agentactors.ProviderError` naming the environment variable, and
    nothing is sent (the provider itself can be made without one: to ask its
    capabilities, or with the variable set later in a test).

    The constructor checks its arguments (``ValueError`` for a wrong value,
    ``TypeError`` for a wrong type, naming the parameter and never a key's
    value): ``base_url`` an ``http(s)://`` URL with a host; ``timeout`` a
    positive finite number of seconds, an ``httpx.Timeout`` of such bounds
    (``None`` for no bound) or ``None`` (the default); ``http_client`` an
    ``httpx.AsyncClient`` or ``None``; ``name`` and ``model`` ``None`` or a
    non-empty str; ``api_key`` ``None`` (read from :attr:`api_key_env`) or a
    str that is not blank and that an HTTP header can carry.

    Cancellation: cancelling a call, or leaving a stream's context manager
    early, closes the HTTP response, so the server sees the disconnect.  The
    process's first request loads the price table in a worker thread
    (:func:`agentactors.pricing.load_table`, ~0.15 s): cancelled meanwhile, it
    waits for the load to end before raising.

    The provider belongs to one event loop: its owned pool is created in the
    first loop that uses it.  :meth:`aclose` closes it (a later call creates a
    new one).
    """

    wire_name: ClassVar[str] = "http"
    api_key_env: ClassVar[tuple[str, ...]] = ()
    #: The vendor's own host (lower case): a request there without a key can only be refused, so it is not sent.
    #: ``None``: a key is optional (a compatible server — vLLM, llama.cpp — may need none).
    key_required_host: ClassVar[str | None] = None
    #: How a key is given, for the missing-key error (Azure adds its token provider).
    _key_sources: ClassVar[str] = "api_key="
    #: The content type of a stream this wire frames (another one is decoded whole, as a JSON body).
    stream_content_type: ClassVar[str] = "text/event-stream"

    def __init__(
        self,
        codec: WireCodec,
        *,
        model: str | None,
        api_key: str | None,
        base_url: str,
        http_client: httpx.AsyncClient | None = None,
        name: str | None = None,
        carries_forced_tool_choice: bool = True,
        timeout: httpx.Timeout | float | None = None,
        settings: ModelSettings | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_sse_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        if settings is not None and not isinstance(settings, ModelSettings):
            raise TypeError(f"settings must be a ModelSettings, not {type(settings).__name__}")
        # Every argument checked here, not at the first call (where a URL without a scheme was a retryable
        # "transient" failure): see the class docstring.
        self._name = check_name(name) or self.wire_name
        self._model = check_model(model)
        check_timeout(timeout)
        check_http_client(http_client)
        if api_key is not None:  # neither message holds the key
            if not isinstance(api_key, str):
                raise TypeError(f"api_key for provider {self._name!r} must be a str, not {type(api_key).__name__}")
            if not api_key.strip():
                read = f", or leave api_key out to read {' or '.join(self.api_key_env)}" if self.api_key_env else ""
                raise ValueError(
                    f"api_key for provider {self._name!r} is empty (or only whitespace): pass the key{read}"
                )
        self._base_url = check_base_url(base_url).rstrip("/")
        if timeout is None and settings is not None and settings.timeout is not None:
            timeout = settings.timeout  # the default settings' timeout is this provider's
        self._settings = settings or None
        self._codec = codec
        raw_key = api_key if api_key is not None else self._key_from_env()
        register_secret(raw_key)  # before checking it: even a refused key is never shown
        key = clean_api_key(raw_key, provider=self._name)
        register_secret(key)
        redact_loggers(_TRANSPORT_LOGGERS)
        self.__api_key = key
        # Checked at each call (_prepare), not here: a provider is also made to ask its capabilities, or in a
        # test before the environment is set.
        self._key_missing = key is None and self._key_required()
        self._timeout: httpx.Timeout | None = None if timeout is None else _httpx_timeout(timeout)
        self._limits = ResponseLimits(
            max_response_bytes=max_response_bytes,
            max_sse_line_bytes=max_sse_line_bytes,
            max_event_bytes=max_event_bytes,
        )
        self._owns_sender = http_client is None
        if self._owns_sender:
            preload()
        self._sender: Sender | None = (
            None if http_client is None else ClientSender(http_client, timeout=self._timeout, owned=False)
        )
        self._sender_loop: object | None = None
        # Closes the owned sender when this provider is collected or its event loop ends (..._run_end).
        self._keeper: Callable[[], Awaitable[None]] | None = None
        self._carries_forced = bool(carries_forced_tool_choice)
        self._rate_limit: RateLimitState | None = None
        # The request headers, per stream flag: the same on every request, so built once (never changed
        # afterwards: a sender may keep a prepared form of each).
        self._header_sets: dict[bool, dict[str, str]] = {}

    def _key_from_env(self) -> str | None:
        """The first of :attr:`api_key_env` set to something not blank (an empty variable is an unset one)."""
        for var in self.api_key_env:
            value = os.environ.get(var)
            if value and value.strip():
                return value
        return None

    def _key_required(self) -> bool:
        """Whether a request without a key cannot succeed: ``base_url`` is on :attr:`key_required_host`."""
        host = self.key_required_host
        return host is not None and url_host(self._base_url) == host

    def _no_key(self, model: str | None) -> ProviderError:
        env = f" or set {' or '.join(self.api_key_env)}" if self.api_key_env else ""
        return ProviderError(
            f"no API key: pass {self._key_sources}{env} (nothing was sent to {redact(self._base_url)})",
            provider=self._name,
            model=model,
            kind=ErrorKind.account,
            retryable=False,
        )

    def __repr__(self) -> str:
        # Never the key: only whether there is one.
        has_key = "set" if self.__api_key else "none"
        return (
            f"{type(self).__name__}(name={self._name!r}, model={self._model!r}, "
            f"base_url={redact(self._base_url)!r}, api_key={has_key})"
        )

    # -- LLMProvider ------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The name given, else :attr:`wire_name`."""
        return self._name

    @property
    def default_model(self) -> str | None:
        """The model given to the constructor (``request.model`` wins)."""
        return self._model

    @property
    def base_url(self) -> str:
        """The vendor's base URL, without a trailing slash."""
        return self._base_url

    @property
    def settings(self) -> ModelSettings | None:
        """The default settings given to the constructor (a request's own fields win over them)."""
        return self._settings

    @property
    def codec(self) -> WireCodec:
        """The wire codec this provider sends through."""
        return self._codec

    @property
    def limits(self) -> ResponseLimits:
        """The byte limits responses are read under."""
        return self._limits

    @property
    def transport(self) -> str | None:
        """How requests go out: ``"client"`` (injected), ``"aiohttp"``, ``"h11"`` or ``"httpx"`` (owned).

        ``None`` until the first request of an owned pool (the choice depends on the running backend).
        """
        return None if self._sender is None else self._sender.name

    def capabilities(self, model: str | None) -> Capabilities:
        """What ``model`` (``None``: the default model) can do over this wire.

        Composed of the members of the first protocol (:meth:`supports_forced_tool_choice`,
        :meth:`supports_response_format`, ...), so a subclass overriding one of them answers the same
        through both, and of :meth:`_wire_traits` (thinking, media, the ``parallel_tool_calls`` setting)
        from the wire's model tables.
        """
        thinking, media, parallel = self._wire_traits(model or self._model)
        return Capabilities(
            native_tools=self.carries_tools is not False,
            forced_tool_choice=self.carries_forced_tool_choice is True
            and self.supports_forced_tool_choice(model) is True,
            streaming=self.supports_streaming is not False,
            response_format=self.supports_response_format(model) is True,
            thinking=thinking,
            media=media,
            parallel_tool_calls=parallel,
        )

    def _wire_traits(self, model: str | None) -> tuple[bool, frozenset[str], bool]:
        """``(thinking, media kinds, parallel_tool_calls)`` for ``model`` (``None``: no model known).

        The base knows no wire's models, so it claims none of them (:class:`Capabilities`' defaults);
        each wire answers from its own tables.
        """
        return False, frozenset(), False

    @property
    def carries_tools(self) -> bool:
        """``True``: every wire here calls tools natively."""
        return True

    @property
    def carries_forced_tool_choice(self) -> bool:
        """As given to the constructor; :meth:`supports_forced_tool_choice` refines it per model."""
        return self._carries_forced

    @property
    def supports_streaming(self) -> bool:
        """``True``: every wire here streams (a server that answers with one JSON body is decoded whole)."""
        return True

    @property
    def rate_limit(self) -> RateLimitState | None:
        """What the vendor's last response said about its rate limits (its headers), or ``None`` if nothing yet.

        Read from every response, error responses included (a 429's ``retry-after``); see
        :mod:`agentactors.providers.http.ratelimits`.  ``with_pool`` steers away from a member near its limit.
        """
        return self._rate_limit

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """Whether a forced choice (``required`` / a named tool) may be sent to ``model``.

        The base answers with :attr:`carries_forced_tool_choice`; vendor
        subclasses refine it with per-model data.
        """
        return self._carries_forced

    def supports_response_format(self, model: str | None) -> bool:
        """Whether a JSON-schema response format may be sent to ``model``.

        The base answers ``False`` (the port's default: a wire that has no mapping for it would drop it);
        vendor subclasses whose codec maps it answer per model.
        """
        return False

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Send ``request`` and return the decoded response.

        Raises a classified :class:`~agentactors.ProviderError`; see the class docstring.

        Cancellation: as :meth:`~agentactors.LLMProvider.complete` — the HTTP request is cancelled where it waits
        and its response closed (shielded, bounded), so the vendor sees the disconnect; nothing is retried.
        """
        model, url, headers, content = self._prepare(request, stream=False)
        response = await self._send(url, headers, content, model, stream=False, io_timeout=request.timeout)
        reader = self._reader(response, model)
        try:
            self._note_rate_limit(response)
            if not _is_2xx(response.status_code):
                raise await self._http_error(response, reader, model)
            body = await self._read_all(reader, model)
        finally:
            await reader.aclose()
        return self._decode_body(body, request, model, response.status_code)

    def stream(self, request: LLMRequest) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        """Stream ``request``: an async context manager whose value iterates stream events.

        The model check and the forced-tool-choice check happen here, at call
        time, before any request exists.  A successful stream ends with exactly
        one :class:`~agentactors.StreamEnd`; a stream whose terminal event never
        arrives raises instead of returning a partial answer.
        """
        prepared = self._prepare(request, stream=True)
        return self._stream(request, *prepared)

    async def aclose(self) -> None:
        """Close the owned HTTP pool (an injected client is left to its owner).

        Cancellation: as :meth:`~agentactors.LLMProvider.aclose` — the pool is let go before anything is awaited,
        so a cancelled close still leaves the provider closed (its next call creates a new pool).
        """
        if not self._owns_sender:
            return
        sender, self._sender = self._sender, None
        keeper, self._keeper = self._keeper, None
        if sender is not None:
            await sender.aclose()
        if keeper is not None:
            await keeper()  # its sender is closed: the arrangement ends

    async def __aenter__(self) -> Self:
        """``async with provider:`` — the provider itself.

        Cancellation: not a cancellation point (it awaits nothing).
        """
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Leaving the block closes the provider (:meth:`aclose`); an exception of the block propagates.

        Cancellation: as :meth:`aclose`: a block left by a cancellation still leaves the provider closed.
        """
        await self.aclose()

    # -- internals --------------------------------------------------------------------------------

    def _prepare(self, request: LLMRequest, *, stream: bool) -> tuple[str, str, dict[str, str], bytes]:
        if self._key_missing:
            raise self._no_key(request.model or self._model)
        request = self.with_defaults(request)
        model = resolve_model(self, request)
        check_forced_tool_choice(self, request, model)
        check_response_format(self, request, model)
        try:
            body = self._codec.encode_request(request, model, stream=stream)
        except ProviderError:
            raise
        except (TypeError, ValueError, KeyError) as exc:
            # The request cannot be expressed on this wire: a request fault, raised before sending.
            raise ProviderError(
                f"the request cannot be encoded for the {self._codec.wire} wire: {exc}",
                provider=self._name,
                model=model,
                kind=ErrorKind.request,
            ) from exc
        try:
            content = _JSON.encode(body).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise ProviderError(
                f"the request body cannot be sent as JSON: {exc}",
                provider=self._name,
                model=model,
                kind=ErrorKind.request,
            ) from exc
        headers = self._header_sets.get(stream)
        if headers is None:
            headers = self._header_sets[stream] = {
                "content-type": "application/json",
                "accept": self.stream_content_type if stream else "application/json",
                "accept-encoding": _ACCEPT_ENCODING,
                **self._codec.headers(self.__api_key),
            }
        return model, self._codec.url(self._base_url, model, stream=stream), headers, content

    def with_defaults(self, request: LLMRequest) -> LLMRequest:
        """``request`` with this provider's default settings filling the fields it leaves unset."""
        return request if self._settings is None else request.with_defaults(self._settings)

    @property
    def http_client(self) -> httpx.AsyncClient | None:
        """The ``httpx.AsyncClient`` given to the constructor, or ``None`` when the provider owns its pool."""
        sender = self._sender
        return sender.client if not self._owns_sender and isinstance(sender, ClientSender) else None

    async def credential_headers(self, url: str, content: bytes = b"", model: str | None = None) -> dict[str, str]:
        """The headers a request to ``url`` — this vendor's, beside the wire's own calls (a batch job, a file
        upload: :class:`~agentactors.BatchProvider`) — carries this provider's credentials in.

        :raises ValueError: ``url`` is not on this provider's ``base_url`` origin: the key never goes elsewhere.
        :raises ProviderError: account kind, not retryable: no key for the vendor's own endpoint (as a call).

        Cancellation: nothing is sent; a caller cancelled while a per-request credential is obtained (a bearer
        token, AWS credentials for a SigV4 signature) leaves at once — a lookup running in a worker thread is
        abandoned to end on its own.
        """
        import httpx

        if httpx.URL(url).copy_with(path="/", query=None) != httpx.URL(self._base_url).copy_with(path="/", query=None):
            raise ValueError(f"{self._name}: credentials go only to {redact(self._base_url)}, not {redact(url)}")
        if self._key_missing:
            raise self._no_key(model or self._model)
        headers = dict(self._codec.headers(self.__api_key))
        return await self._authorize(url, headers, content, model or self._model or "")

    def _get_sender(self) -> Sender:
        # Created on first use so that it binds to the running event loop, not the importer's.
        token = _loop_token()
        if self._owns_sender and self._sender is not None and token is not None and token != self._sender_loop:
            # The loop that owned the pool is gone (a second anyio.run): its connections cannot be
            # used or closed from here, so start a fresh pool rather than fail every call.
            self._sender = None
        if self._sender is None:
            self._sender = owned_sender(self._timeout or _default_timeout())
            self._sender_loop = token
            self._keeper = None  # the new sender's keeper starts with its first request (_send)
        return self._sender

    async def _send(
        self,
        url: str,
        headers: dict[str, str],
        content: bytes,
        model: str,
        *,
        stream: bool,
        io_timeout: float | None = None,
    ) -> WireResponse:
        """Put the request on the wire; ``io_timeout`` is the request's own (``ModelSettings.timeout``)."""
        sender = self._get_sender()
        if self._keeper is None and self._owns_sender:
            # Arranged in the loop the sender belongs to: a provider nobody closes — a script's agent.run
            # without a Runtime, a provider dropped — leaves no pool to be collected with its sockets open.
            self._keeper = await close_at_run_end(self, sender.aclose)
            # The price table, loaded in a worker thread before the answer is priced (on the loop it froze every
            # task of the process for ~0.15 s): once per process, here with the sender's other first-request work.
            await load_table()
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s: POST %s (model=%s%s)", self._name, redact(url), model, ", stream" if stream else "")
        headers = await self._authorize(url, headers, content, model)
        try:
            return await sender.send(url, headers, content, None if io_timeout is None else _httpx_timeout(io_timeout))
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            failure = self._transport_error(exc, model)
        except BaseExceptionGroup as group:  # trio: cancelled while httpx connects (_containment.cancellation_alone)
            alone = cancellation_alone(group)
            if alone is None:
                raise
            raise alone from None
        # Raised outside the except block, so the foreign exception is not kept as __context__ either.
        raise failure

    def _reader(self, response: WireResponse, model: str) -> BodyReader:
        return BodyReader(
            response,
            limit=self._limits.max_response_bytes,
            limit_name="max_response_bytes",
            provider=self._name,
            model=model,
        )

    async def _read_all(self, reader: BodyReader, model: str) -> bytes:
        try:
            return await reader.read_all()
        except anyio.get_cancelled_exc_class():
            raise
        except ProviderError:
            raise
        except Exception as exc:
            failure = self._transport_error(exc, model)
        raise failure

    def _note_rate_limit(self, response: WireResponse) -> None:
        state = read_rate_limits(raw_headers(response))
        if state is not None:  # a response without the headers says nothing new
            self._rate_limit = state

    def _transport_error(self, exc: BaseException, model: str) -> ProviderError:
        return classify_exception(exc, provider=self._name, model=model)

    async def _http_error(self, response: WireResponse, reader: BodyReader, model: str) -> ProviderError:
        # Only as much of the body as classification needs: an error page may be 60 MB.
        try:
            body = await reader.read_head(ERROR_BODY_BYTES)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:  # a body that cannot be read must not hide the status
            body = b""
        return self._classified(response.status_code, response.headers, body, model)

    def _classified(self, status: int, headers: Mapping[str, str], body: bytes, model: str) -> ProviderError:
        try:
            return self._codec.classify_error(status, headers, body, model=model, provider=self._name)
        except _DECODE_FAILURES as exc:  # a codec bug must not hide the vendor's failure
            err = MalformedResponseError(
                f"HTTP {status} with an error body that could not be classified ({type(exc).__name__})",
                provider=self._name,
                model=model,
                status=status,
                body_excerpt=body,
            )
            err.__cause__ = scrub_chain(exc)
            return err

    def _decode_body(self, body: bytes, request: LLMRequest, model: str, status: int) -> LLMResponse:
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            not_json: MalformedResponseError | None = MalformedResponseError(
                f"the response body is not JSON (HTTP {status}, {len(body)} bytes: {reason})",
                provider=self._name,
                model=model,
                status=status,
                body_excerpt=body,
            )
        else:
            not_json = None
        if not_json is not None:
            # Neither chained nor raised in the except block (where it would be the __context__, reachable if
            # not shown): a JSONDecodeError keeps the whole body (up to the limit, a key echoed back) in .doc.
            raise not_json
        try:
            response = self._codec.decode_response(parsed, request=request, model=model, provider=self._name)
        except ProviderError:
            raise
        except _DECODE_FAILURES as exc:
            failure = MalformedResponseError(
                f"the response could not be decoded ({type(exc).__name__})",
                provider=self._name,
                model=model,
                status=status,
                body_excerpt=body,
            )
            failure.__cause__ = scrub_chain(exc)
            raise failure from failure.__cause__
        return response if response.provider == self._name else response.with_provider(self._name)

    def _stream(
        self, request: LLMRequest, model: str, url: str, headers: dict[str, str], content: bytes
    ) -> _OpenedStream:
        return _OpenedStream(self, request, model, url, headers, content)

    async def _open_stream(
        self, request: LLMRequest, model: str, url: str, headers: dict[str, str], content: bytes
    ) -> tuple[AsyncGenerator[StreamEvent, None], BodyReader]:
        """Send a streamed request; its events (unread) and the reader to close once they are done with."""
        response = await self._send(url, headers, content, model, stream=True, io_timeout=request.timeout)
        reader = self._reader(response, model)
        try:
            self._note_rate_limit(response)
            if not _is_2xx(response.status_code):
                raise await self._http_error(response, reader, model)
            ctype = response.headers.get("content-type", "").partition(";")[0].strip().lower()
            if ctype != self.stream_content_type:
                # A server that ignored stream=true and answered in one body: decode it whole.
                body = await self._read_all(reader, model)
                whole = self._decode_body(body, request, model, response.status_code)
                return _replay(events_for_response(whole)), reader
            decoder = self._codec.stream_decoder(request=request, model=model, provider=self._name)
            return self._events(reader, decoder, model), reader
        except BaseException:
            # Shielded and bounded: a cancelled caller still closes the socket, so the server sees it.
            await reader.aclose()
            raise

    async def _events(
        self, reader: BodyReader, decoder: StreamDecoder, model: str
    ) -> AsyncGenerator[StreamEvent, None]:
        text: list[str] = []
        started = False
        sse = self._framer(reader, model)
        try:
            while True:
                try:
                    chunk = await reader.read()
                except Exception as exc:  # (never a cancellation: that is a BaseException on both backends)
                    if not decoder.done:
                        raise
                    # The terminal event came, so the answer is whole: the rest of the body (the chunked end,
                    # a proxy's close, a read that times out waiting for it) carries nothing of it, and an
                    # interruption here would throw a complete, paid answer away (and is never retried).
                    log.debug(
                        "%s: reading past the stream's terminal event failed (%s); the answer is complete",
                        self._name,
                        type(exc).__name__,
                    )
                    break
                last = not chunk
                pairs = sse.feed(chunk) if chunk else sse.close()
                del chunk  # nothing read is held while the next read waits (seconds between deltas: W12)
                for event, data in pairs:
                    for out in decoder.feed(event, data):
                        if isinstance(out, TextDelta):
                            text.append(out.text)
                        started = True
                        yield out
                del pairs
                event = data = ""
                if last:
                    break
            final = decoder.finish()
            yield StreamEnd(final if final.provider == self._name else final.with_provider(self._name))
            return
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            err = self._stream_error(exc, model)
            if err is exc and not started:
                raise
            failure = (
                interrupted(err, provider=self._name, model=model, partial_text="".join(text)) if started else err
            )
        raise failure

    def _framer(self, reader: BodyReader, model: str) -> Framer:
        """What cuts a stream's body into ``(event, data)`` pairs: SSE, bounded by :attr:`limits`.

        A wire with another framing (Bedrock's binary event stream) answers with its own reader.
        """
        return SSEReader(
            max_line_bytes=self._limits.max_sse_line_bytes,
            max_event_bytes=self._limits.max_event_bytes,
            overflow=lambda name, limit, what: reader.too_large(name, limit, what),
        )

    async def _authorize(self, url: str, headers: dict[str, str], content: bytes, model: str) -> dict[str, str]:
        """The headers one request goes out with: ``headers`` as they are.

        A provider whose credential is made per request (a SigV4 signature over the body, a bearer token asked
        for each time) returns a copy with it added; ``headers`` itself is never changed.
        """
        return headers

    def _stream_error(self, exc: Exception, model: str) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        import httpx

        if isinstance(exc, _DECODE_FAILURES) and not isinstance(exc, httpx.HTTPError):
            err = MalformedResponseError(
                f"a stream event could not be decoded ({type(exc).__name__})", provider=self._name, model=model
            )
            err.__cause__ = scrub_chain(exc)
            return err
        return self._transport_error(exc, model)


class _OpenedStream:
    """:meth:`HTTPProvider.stream`'s context manager: the request sent on entry, its events the value, the
    response closed on exit — whatever the block raised (which is never swallowed).

    A class rather than an ``@asynccontextmanager`` generator: every live stream holds it, and a generator's
    frame and context-manager object cost ~0.35 KB more (W12: 10,000 streams live at once).
    """

    __slots__ = ("_args", "_events", "_owner", "_reader")

    def __init__(
        self, owner: HTTPProvider, request: LLMRequest, model: str, url: str, headers: dict[str, str], content: bytes
    ) -> None:
        self._owner = owner
        self._args: tuple[LLMRequest, str, str, dict[str, str], bytes] | None = (request, model, url, headers, content)
        self._events: AsyncGenerator[StreamEvent, None] | None = None
        self._reader: BodyReader | None = None

    async def __aenter__(self) -> AsyncIterator[StreamEvent]:
        args, self._args = self._args, None
        if args is None:
            raise RuntimeError("a provider stream is entered once")
        self._events, self._reader = events, _ = await self._owner._open_stream(*args)
        return events

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        events, reader, self._events, self._reader = self._events, self._reader, None, None
        try:
            if events is not None:
                # Finalise the iterator now (not at garbage collection) so nothing reads after we close.
                with anyio.CancelScope(shield=True):
                    await events.aclose()
        finally:
            if reader is not None:
                # Shielded and bounded: a cancelled caller still closes the socket, so the server sees it.
                await reader.aclose()


async def _replay(events: list[StreamEvent]) -> AsyncGenerator[StreamEvent, None]:
    for event in events:
        yield event
