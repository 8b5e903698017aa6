"""HTTP for every wire: the provider base, the transports, bounded bodies and SSE, keys, rate-limit headers.

``provider``
    :class:`HTTPProvider`: the thin adapter every wire shares (a codec in, one POST, a decoder out).
``transport`` / ``aiohttp_transport``
    how a request goes on the wire: one seam chosen at run time from the running backend.
``body`` / ``limits`` / ``sse``
    a response read decompressed, never past its limit; the limits and why; SSE framing with a bound.
``keys``
    an API key as it may go in an HTTP header.
``ratelimits``
    what a vendor's response headers say of its rate limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .limits import ResponseLimits
from .provider import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SSE_LINE_BYTES,
    HTTPProvider,
    iter_sse,
)

if TYPE_CHECKING:
    from .provider import DEFAULT_TIMEOUT


if not TYPE_CHECKING:  # for the interpreter only: a checker that saw it would accept any misspelt name

    def __getattr__(name: str) -> object:
        # PEP 562: DEFAULT_TIMEOUT is an httpx.Timeout, made when first read (`import agentactors` does not load httpx).
        if name == "DEFAULT_TIMEOUT":
            from . import provider

            return provider.DEFAULT_TIMEOUT
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_SSE_LINE_BYTES",
    "DEFAULT_TIMEOUT",
    "HTTPProvider",
    "ResponseLimits",
    "iter_sse",
]
