"""The shape every vendor wire codec has: pure functions plus a small stream decoder.

A codec does no I/O.  :mod:`agentactors.providers.http.provider` wraps one in an httpx
call; tests drive codecs directly with the recorded corpus.  Each wire is one
folder (``openai/``, ``anthropic/``, ``gemini/``): ``provider.py`` (the codec class
and the provider class) over ``encode.py`` (the request body) and ``stream.py``
(its :class:`StreamDecoder`), over ``decode.py`` (bodies, usage, stop reasons, tool
calls, error refinement), over ``models.py`` (per-model data); imports go that one way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..errors import ProviderError
from ..messages import LLMRequest, LLMResponse, StreamEvent

__all__ = ["StreamDecoder", "WireCodec"]


class StreamDecoder(Protocol):
    """Decodes one response stream, fed one SSE event at a time.

    One decoder per stream: it accumulates the answer as events arrive.  It does no
    I/O, so it has nothing to cancel; :class:`~agentactors.providers.http.provider.HTTPProvider`
    owns the connection and stops feeding when its consumer goes away.
    """

    @property
    def done(self) -> bool:
        """Whether the wire's terminal event has arrived (``[DONE]``, ``message_stop``, a ``finishReason``).

        Once it is ``True``, :meth:`finish` returns the response instead of raising, and the provider ends
        the stream with it even when reading the rest of the body then fails (a connection closed before
        the chunked body's end): so it must mean the whole answer has arrived, usage included.
        """
        ...

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        """The stream events that one SSE event produces (possibly none).

        ``event`` is the SSE event name (``"message"`` when the server sent none) and
        ``data`` its data, lines joined.  Raises the classified
        :class:`~agentactors.ProviderError` for an in-band error event, and a transient
        :class:`~agentactors.MalformedResponseError` for data this wire does not allow.
        """
        ...

    def finish(self) -> LLMResponse:
        """The complete response, at end of input: the one the final :class:`~agentactors.StreamEnd` carries.

        Raises a transient :class:`~agentactors.MalformedResponseError` when the wire's
        terminal event never arrived: a truncated stream is never returned as if complete.
        """
        ...


class WireCodec(Protocol):
    """One vendor wire: pure mappings between the library's data model and the vendor's JSON.

    No method does I/O: each is a function of its arguments and the codec's
    configuration (fresh tool-call ids where a vendor sends none aside, and the clock an
    HTTP-date ``retry-after`` is read against).
    """

    wire: str
    """The wire's key: ``"openai"``, ``"anthropic"`` or ``"gemini"``.

    Used as the key of ``LLMRequest.vendor_options`` and of ``provider_data`` on
    messages and tool calls (what this wire replays on the next request).
    """

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        """The endpoint to ``POST`` to for ``model``, streaming or not (never with a credential in it)."""
        ...

    def headers(self, api_key: str | None) -> dict[str, str]:
        """The wire's headers, the credential included (``None``: a local server that needs none).

        The only place a key goes: :class:`~agentactors.providers.http.provider.HTTPProvider`
        registers it for redaction and never puts it in a URL or a log line.  Asked once per
        provider and kind of request (streamed or not): the provider reuses the answer for every
        request, so it must not depend on the request.
        """
        ...

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        """The JSON body for ``request`` sent to ``model``.

        Raises a request-kind :class:`~agentactors.ProviderError` (or ``TypeError`` /
        ``ValueError``, which the adapter turns into one) for a request this wire cannot
        express; nothing has been sent then.
        """
        ...

    def decode_response(self, body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
        """The response in a 2xx body (parsed JSON).

        ``request`` (when known) lets the decoder judge tool arguments against the tool's
        schema; ``provider`` names the response and any error.  Raises the classified
        :class:`~agentactors.ProviderError` for an error body sent with a 2xx status and a
        transient :class:`~agentactors.MalformedResponseError` for a body this wire does
        not allow.
        """
        ...

    def stream_decoder(self, *, request: LLMRequest | None, model: str, provider: str) -> StreamDecoder:
        """A fresh :class:`StreamDecoder` for one stream of ``model``."""
        ...

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
    ) -> ProviderError:
        """The :class:`~agentactors.ProviderError` for a non-2xx answer (returned, not raised).

        The shared classifier (:mod:`agentactors.providers.errors`: ``x-should-retry``,
        the vendor's error code, the status, ``retry-after``), refined by what this wire
        knows about its own error bodies.
        """
        ...
