"""``HTTPProvider``: the thin httpx adapter every vendor wire shares.

A vendor provider is a :class:`~agentactors.providers.codec.WireCodec` (pure
request/response/stream mapping) plus this class, which does the I/O:

* resolves the model and refuses a forced tool choice the model rejects
  *before* anything is sent;
* puts the API key in headers only (never in a URL) and registers it with
  :func:`~agentactors.redaction.register_secret`, so it is redacted from every
  error and log line;
* owns one pooled :class:`httpx.AsyncClient`, created lazily inside the running
  event loop (an injected client is used as is and never closed here);
* classifies every failure into the :class:`~agentactors.ProviderError`
  taxonomy: non-2xx through the codec, transport errors and timeouts as
  transient, an undecodable body as :class:`~agentactors.MalformedResponseError`;
* decodes streams with ``httpx-sse`` (WHATWG framing) one event at a time
  through the codec's :class:`~agentactors.providers.codec.StreamDecoder`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, ClassVar, Self

import anyio
import anyio.lowlevel
import httpx
from httpx_sse import EventSource

from ..errors import ErrorKind, MalformedResponseError, ProviderError
from ..messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent, TextDelta
from ..redaction import redact, register_secret
from ._classify import classify_exception
from .base import check_forced_tool_choice, events_for_response, interrupted, resolve_model
from .codec import StreamDecoder, WireCodec
from .ratelimits import RateLimitState, read_rate_limits

__all__ = ["DEFAULT_TIMEOUT", "HTTPProvider", "iter_sse"]

log = logging.getLogger("agentactors.providers.http")

# LLM answers can take minutes before the first byte (reasoning models), so the read
# timeout is generous; connecting and pool waits should fail fast.  A whole-call bound
# belongs to the with_timeout decorator, not to the transport.
DEFAULT_TIMEOUT = httpx.Timeout(connect=15.0, read=600.0, write=60.0, pool=60.0)
# Closing a response must not hang a cancelled caller; past this we abandon the socket.
_CLOSE_GRACE = 5.0
# Undecodable exceptions a codec may raise on a vendor shape it did not foresee.
_DECODE_FAILURES = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)


def iter_sse(raw: bytes | str) -> Iterator[tuple[str, str]]:
    """Decode a complete SSE body into ``(event, data)`` pairs, exactly as a live stream would be.

    Uses the same ``httpx-sse`` path as :meth:`HTTPProvider.stream` (an unnamed
    event is ``"message"``; events with empty data are not dispatched, per
    WHATWG).  Meant for tests and tooling that replay recorded streams.
    """
    content = raw.encode("utf-8") if isinstance(raw, str) else raw
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=content)
    for sse in EventSource(response).iter_sse():
        if sse.data:
            yield sse.event, sse.data


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
    """Thin httpx adapter around a :class:`~agentactors.providers.codec.WireCodec`.

    Subclasses set :attr:`wire_name` (the default provider name) and
    :attr:`api_key_env` (environment variables tried in order when ``api_key``
    is ``None``) and usually override :meth:`supports_forced_tool_choice` with
    per-model data.

    Errors: :meth:`complete` and :meth:`stream` raise only
    :class:`~agentactors.ProviderError` subclasses (or anyio's cancellation
    exception).  A forced tool choice the model rejects raises
    :class:`~agentactors.UnsupportedToolChoiceError` and a missing model a
    request-kind error, both before any request is sent.  A stream that fails
    after its first event raises :class:`~agentactors.StreamInterruptedError`
    (``partial_text`` = the answer text delivered); before it, the classified
    error itself.

    Cancellation: cancelling a call, or leaving a stream's context manager
    early, closes the HTTP response, so the server sees the disconnect.

    The provider belongs to one event loop: its owned client is created in the
    first loop that uses it.  :meth:`aclose` closes it (a later call creates a
    new one).
    """

    wire_name: ClassVar[str] = "http"
    api_key_env: ClassVar[tuple[str, ...]] = ()

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
    ) -> None:
        self._codec = codec
        self._model = model
        key = api_key if api_key is not None else self._key_from_env()
        register_secret(key)
        self.__api_key = key or None
        self._base_url = base_url.rstrip("/")
        self._client = http_client
        self._owns_client = http_client is None
        self._client_loop: object | None = None
        self._name = name or self.wire_name
        self._carries_forced = bool(carries_forced_tool_choice)
        self._timeout: httpx.Timeout | None = None if timeout is None else httpx.Timeout(timeout)
        self._rate_limit: RateLimitState | None = None

    @classmethod
    def _key_from_env(cls) -> str | None:
        for var in cls.api_key_env:
            value = os.environ.get(var)
            if value:
                return value
        return None

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
    def codec(self) -> WireCodec:
        """The wire codec this provider sends through."""
        return self._codec

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
        :mod:`agentactors.providers.ratelimits`.  ``with_pool`` steers away from a member near its limit.
        """
        return self._rate_limit

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """Whether a forced choice (``required`` / a named tool) may be sent to ``model``.

        The base answers with :attr:`carries_forced_tool_choice`; vendor
        subclasses refine it with per-model data.
        """
        return self._carries_forced

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Send ``request`` and return the decoded response.

        Raises a classified :class:`~agentactors.ProviderError`; see the class docstring.
        """
        model, url, headers, content = self._prepare(request, stream=False)
        client = self._get_client()
        log.debug("%s: POST %s (model=%s)", self._name, redact(url), model)
        try:
            response = await client.post(url, content=content, headers=headers, **self._timeout_kw())
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            raise self._transport_error(exc, model) from exc
        self._note_rate_limit(response.headers)
        if not _is_2xx(response.status_code):
            raise self._http_error(response.status_code, response.headers, response.content, model)
        return self._decode_body(response.content, request, model, response.status_code)

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
        """Close the owned HTTP client (an injected one is left to its owner)."""
        client, self._client = (self._client, None) if self._owns_client else (None, self._client)
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- internals --------------------------------------------------------------------------------

    def _prepare(self, request: LLMRequest, *, stream: bool) -> tuple[str, str, dict[str, str], bytes]:
        model = resolve_model(self, request)
        check_forced_tool_choice(self, request, model)
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
            content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise ProviderError(
                f"the request body cannot be sent as JSON: {exc}",
                provider=self._name,
                model=model,
                kind=ErrorKind.request,
            ) from exc
        headers = {"content-type": "application/json", "accept": "text/event-stream" if stream else "application/json"}
        headers.update(self._codec.headers(self.__api_key))
        return model, self._codec.url(self._base_url, model, stream=stream), headers, content

    def _get_client(self) -> httpx.AsyncClient:
        # Created on first use so that it binds to the running event loop, not the importer's.
        token = _loop_token()
        if self._owns_client and self._client is not None and token is not None and token != self._client_loop:
            # The loop that owned the pool is gone (a second anyio.run): its connections cannot be
            # used or closed from here, so start a fresh pool rather than fail every call.
            self._client = None
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self._timeout or DEFAULT_TIMEOUT,
                limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
            )
            self._client_loop = token
        return self._client

    def _timeout_kw(self) -> dict[str, Any]:
        # An injected client keeps its own timeout unless one was given to us explicitly.
        return {"timeout": self._timeout} if self._timeout is not None else {}

    def _note_rate_limit(self, headers: httpx.Headers) -> None:
        state = read_rate_limits(headers)
        if state is not None:  # a response without the headers says nothing new
            self._rate_limit = state

    def _transport_error(self, exc: BaseException, model: str) -> ProviderError:
        return classify_exception(exc, provider=self._name, model=model)

    def _http_error(self, status: int, headers: Mapping[str, str], body: bytes, model: str) -> ProviderError:
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
            err.__cause__ = exc
            return err

    def _decode_body(self, body: bytes, request: LLMRequest, model: str, status: int) -> LLMResponse:
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise MalformedResponseError(
                f"the response body is not JSON (HTTP {status}, {len(body)} bytes)",
                provider=self._name,
                model=model,
                status=status,
                body_excerpt=body,
            ) from exc
        try:
            response = self._codec.decode_response(parsed, request=request, model=model, provider=self._name)
        except ProviderError:
            raise
        except _DECODE_FAILURES as exc:
            raise MalformedResponseError(
                f"the response could not be decoded ({type(exc).__name__})",
                provider=self._name,
                model=model,
                status=status,
                body_excerpt=body,
            ) from exc
        return response if response.provider == self._name else response.with_provider(self._name)

    @asynccontextmanager
    async def _stream(
        self, request: LLMRequest, model: str, url: str, headers: dict[str, str], content: bytes
    ) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        client = self._get_client()
        log.debug("%s: POST %s (model=%s, stream)", self._name, redact(url), model)
        response: httpx.Response | None = None
        try:
            try:
                http_request = client.build_request("POST", url, content=content, headers=headers, **self._timeout_kw())
                response = await client.send(http_request, stream=True)
                self._note_rate_limit(response.headers)
                if not _is_2xx(response.status_code):
                    body = await response.aread()
                    raise self._http_error(response.status_code, response.headers, body, model)
                ctype = response.headers.get("content-type", "").partition(";")[0].strip().lower()
                if ctype != "text/event-stream":
                    # A server that ignored stream=true and answered in one body: decode it whole.
                    body = await response.aread()
                    whole = self._decode_body(body, request, model, response.status_code)
                    events: AsyncGenerator[StreamEvent, None] = _replay(events_for_response(whole))
                else:
                    decoder = self._codec.stream_decoder(request=request, model=model, provider=self._name)
                    events = self._events(response, decoder, model)
            except anyio.get_cancelled_exc_class():
                raise
            except ProviderError:
                raise
            except Exception as exc:
                raise self._transport_error(exc, model) from exc
            try:
                yield events
            finally:
                # Finalise the iterator now (not at garbage collection) so nothing reads after we close.
                with anyio.CancelScope(shield=True):
                    await events.aclose()
        finally:
            if response is not None:
                # Shielded and bounded: a cancelled caller still closes the socket, so the server sees it.
                with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_GRACE):
                    await response.aclose()

    async def _events(
        self, response: httpx.Response, decoder: StreamDecoder, model: str
    ) -> AsyncGenerator[StreamEvent, None]:
        text: list[str] = []
        started = False
        sse = EventSource(response).aiter_sse()
        try:
            async for event in sse:
                if not event.data:  # WHATWG: an event with an empty data buffer is not dispatched
                    continue
                for out in decoder.feed(event.event, event.data):
                    if isinstance(out, TextDelta):
                        text.append(out.text)
                    started = True
                    yield out
            final = decoder.finish()
            yield StreamEnd(final if final.provider == self._name else final.with_provider(self._name))
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            err = self._stream_error(exc, model)
            if started:
                raise interrupted(err, provider=self._name, model=model, partial_text="".join(text)) from err
            if err is exc:
                raise
            raise err from exc
        finally:
            # Closes httpx-sse's line reader; httpx's own nested byte iterators cannot be closed from
            # here, so on trio an early exit may log a ResourceWarning for them (ignored by default).
            # The socket itself is closed by _stream, which is what the server sees.
            with anyio.CancelScope(shield=True):
                await sse.aclose()

    def _stream_error(self, exc: Exception, model: str) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        if isinstance(exc, _DECODE_FAILURES) and not isinstance(exc, httpx.HTTPError):
            err = MalformedResponseError(
                f"a stream event could not be decoded ({type(exc).__name__})", provider=self._name, model=model
            )
            err.__cause__ = exc
            return err
        return self._transport_error(exc, model)


async def _replay(events: list[StreamEvent]) -> AsyncGenerator[StreamEvent, None]:
    for event in events:
        yield event
