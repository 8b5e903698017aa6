"""An API key as it may go in an HTTP header: checked once, when a provider is made.

Keys read from a file or a Kubernetes secret end in ``"\\n"``; pasted ones sometimes carry a
space.  Sent as they are, h11 refuses the header and its error message — kept as the cause
of whatever wraps it — holds the whole key.  So surrounding whitespace is stripped, and a
key that still holds a character no header value may carry is refused here, with a message
that says where and what kind of character, never which.
"""

from __future__ import annotations

__all__ = ["clean_api_key"]

# Visible ASCII: what every vendor's keys are made of, and what every HTTP stack sends as is.
_FIRST, _LAST = 0x21, 0x7E


def _kind(ch: str) -> str:
    code = ord(ch)
    if code in (0x20, 0x09):
        return "a space or tab inside the key"
    if code < 0x20 or code == 0x7F:
        return "a control character (a line break or similar)"
    return "a non-ASCII character"


def clean_api_key(key: str | None, *, provider: str, what: str = "the API key") -> str | None:
    """``key`` stripped of surrounding whitespace; ``None`` if nothing is left.

    Raises ``ValueError`` (naming ``what`` — the API key, a token provider's token —, ``provider``,
    the position and the kind of character, never the key) for a key holding anything but visible
    ASCII inside.
    """
    if key is None:
        return None
    if not isinstance(key, str):
        raise TypeError(f"{what} for provider {provider!r} must be a str, not {type(key).__name__}")
    stripped = key.strip()
    for position, ch in enumerate(stripped):
        if not _FIRST <= ord(ch) <= _LAST:
            raise ValueError(
                f"{what} for provider {provider!r} cannot be sent in an HTTP header: it holds "
                f"{_kind(ch)} at position {position} of {len(stripped)} (after stripping surrounding "
                "whitespace); check how it was read or pasted"
            )
    return stripped or None
