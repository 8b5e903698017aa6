"""The shape every vendor wire codec has: pure functions plus a small stream decoder.

A codec does no I/O.  :mod:`agentactors.providers.http` wraps one in an httpx
call; tests drive codecs directly with the recorded corpus.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..errors import ProviderError
from ..messages import LLMRequest, LLMResponse, StreamEvent

__all__ = ["StreamDecoder", "WireCodec"]


class StreamDecoder(Protocol):
    """Decodes one response stream, fed one SSE event at a time.

    ``feed`` returns the stream events that this SSE event produces (possibly
    none) and raises the classified :class:`ProviderError` for an in-band error
    event, or a transient ``MalformedResponseError`` for data it cannot decode.
    ``finish`` is called at end of input: it returns the complete response (the
    same one the final :class:`~agentactors.StreamEnd` carries) or raises a
    transient ``MalformedResponseError`` when the wire's terminal event never
    arrived (a truncated stream is never returned as if complete).
    """

    @property
    def done(self) -> bool:
        """Whether the wire's terminal event has arrived."""
        ...

    def feed(self, event: str, data: str) -> list[StreamEvent]: ...

    def finish(self) -> LLMResponse: ...


class WireCodec(Protocol):
    """One vendor wire.  ``wire`` is the key used in ``vendor_options`` and ``provider_data``."""

    wire: str

    def url(self, base_url: str, model: str, *, stream: bool) -> str: ...

    def headers(self, api_key: str | None) -> dict[str, str]: ...

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]: ...

    def decode_response(self, body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse: ...

    def stream_decoder(self, *, request: LLMRequest | None, model: str, provider: str) -> StreamDecoder: ...

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
    ) -> ProviderError: ...
