"""Credentials never leave the library in text: registered secrets and key-shaped strings are masked.

Providers register their API keys with :func:`register_secret`; every text that
enters an error, an event payload or a log line passes through :func:`redact`.
Two nets, because either alone has holes: exact registered values catch keys of
any shape, and the shape patterns catch keys we were never told about (a key
echoed back in a vendor's error body, a bearer token in a proxy's message).
"""

from __future__ import annotations

import re
import threading

__all__ = ["redact", "register_secret"]



_secrets: set[str] = set()
_secrets_lock = threading.Lock()
_secret_pattern: re.Pattern[str] | None = None
# Shapes of credentials we may never have been told about: vendor key prefixes and bearer tokens.
_KEY_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|sk-ant-[A-Za-z0-9_\-]{8,}|gsk_[A-Za-z0-9]{8,}|AIza[0-9A-Za-z_\-]{20,}"
    r"|ya29\.[0-9A-Za-z_\-]{10,}|(?i:bearer)\s+[A-Za-z0-9._\-]{8,}"
    r"|(?i:(?:api[_-]?key|x-api-key|x-goog-api-key|key|token)[\"']?\s*[=:]\s*[\"']?)[A-Za-z0-9._\-]{12,})"
)


def register_secret(secret: str | None) -> None:
    """Remember a credential so that :func:`redact` removes it from any text.

    Providers call this with their API key; call it for any other secret your
    tools or transports handle.  Strings shorter than 8 characters are ignored
    (redacting them would mangle ordinary words).
    """
    global _secret_pattern
    if not secret or len(secret) < 8:
        return
    with _secrets_lock:
        if secret in _secrets:
            return
        _secrets.add(secret)
        ordered = sorted(_secrets, key=len, reverse=True)
        _secret_pattern = re.compile("|".join(re.escape(s) for s in ordered))


def redact(text: str) -> str:
    """Remove every registered secret and anything shaped like a credential from ``text``."""
    if not text:
        return text
    pattern = _secret_pattern
    if pattern is not None:
        text = pattern.sub("[REDACTED]", text)

    def _mask(match: re.Match[str]) -> str:
        whole = match.group(0)
        # Keep the "api_key=" style prefix readable; mask only the value.
        m = re.match(r"(?i)((?:api[_-]?key|x-api-key|x-goog-api-key|key|token)[\"']?\s*[=:]\s*[\"']?)", whole)
        if m:
            return m.group(1) + "[REDACTED]"
        if whole.lower().startswith("bearer"):
            return "Bearer [REDACTED]"
        return "[REDACTED]"

    return _KEY_SHAPES.sub(_mask, text)


