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

from .limits import ResponseLimits
from .provider import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SSE_LINE_BYTES,
    DEFAULT_TIMEOUT,
    HTTPProvider,
    iter_sse,
)

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_SSE_LINE_BYTES",
    "DEFAULT_TIMEOUT",
    "HTTPProvider",
    "ResponseLimits",
    "iter_sse",
]
