"""How much of a vendor's answer the HTTP layer reads: the limits, their defaults, and why those.

A response is counted *after* decompression (a 0.5 MB gzip body may inflate to 512 MiB), and
reading stops at the limit: memory stays bounded by the limit, whatever the vendor sends.
Past a limit the call fails with :class:`~agentactors.errors.ResponseTooLargeError` (kind
``transient``, not retryable; see its docstring).  The defaults are generous — far above any
answer a model gives — so they only ever stop a broken or hostile server:

==================== ========= ==================================================================
limit                default   what it bounds
==================== ========= ==================================================================
max_response_bytes   64 MiB    a JSON body, or all the bytes of one stream (an answer of 128k
                               tokens is under 1 MiB; an inline image a few MiB)
max_sse_line_bytes   16 MiB    one SSE line: a line that never ends is cut here
max_event_bytes      16 MiB    the data of one SSE event (its ``data:`` lines, joined); one AWS event-stream message
error body           64 KiB    what is read of a non-2xx body to classify it (not configurable:
                               vendors' error bodies are a few hundred bytes; the excerpt an
                               error keeps is 500 characters)
==================== ========= ==================================================================
"""

from __future__ import annotations

import attrs

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_SSE_LINE_BYTES",
    "ERROR_BODY_BYTES",
    "ResponseLimits",
]

MiB = 1024 * 1024
DEFAULT_MAX_RESPONSE_BYTES = 64 * MiB
DEFAULT_MAX_SSE_LINE_BYTES = 16 * MiB
DEFAULT_MAX_EVENT_BYTES = 16 * MiB
ERROR_BODY_BYTES = 64 * 1024


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{attribute.name} must be a positive number of bytes, not {value!r}")


@attrs.frozen(slots=True)
class ResponseLimits:
    """The byte limits one provider reads responses under (see the module docstring)."""

    max_response_bytes: int = attrs.field(default=DEFAULT_MAX_RESPONSE_BYTES, validator=_positive)
    max_sse_line_bytes: int = attrs.field(default=DEFAULT_MAX_SSE_LINE_BYTES, validator=_positive)
    max_event_bytes: int = attrs.field(default=DEFAULT_MAX_EVENT_BYTES, validator=_positive)
