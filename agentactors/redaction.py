"""Credentials never leave the library in text: registered secrets and key-shaped strings are masked.

Providers register their API keys with :func:`register_secret`; every text the
library writes into an error or a log line, and what a record keeps of an event
where a credential may sit (an error's text, vendor options and settings'
``extra``, the ``repr`` of a value JSON cannot hold), passes through
:func:`redact`, as does each text of an OpenTelemetry span.  What is
the user's own is recorded as it is in events and JSONL records: a conversation's
text, the names they chose (an agent's, a provider's, a tool's) and what their
tools emit (``ctx.emit``) — redacting those on every step would cost every run, and
a key put there is not one the library was handed to keep.
Two nets, because either alone has holes: exact registered values catch keys of
any shape, and the shape patterns catch keys we were never told about (a key
echoed back in a vendor's error body, a bearer token in a proxy's message).

Two more pieces keep other people's text clean:

* :func:`excerpt` cuts a (possibly huge) text *before* redacting it, so showing the
  start of a 60 MB error page costs what showing 500 characters costs;
* :class:`RedactingFilter` / :func:`redact_loggers` mask records of loggers the
  library does not own (httpx, httpcore, hpack, aiohttp) before any handler sees them — and of the library's own
  (:data:`LIBRARY_LOGGERS`): a ``log.exception`` of a user's callback that raised with a key in its message
  carries the key in its traceback.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable

__all__ = [
    "LIBRARY_LOGGERS",
    "RedactingFilter",
    "excerpt",
    "on_secret_registered",
    "redact",
    "redact_loggers",
    "redact_registered",
    "register_secret",
]


_secrets: set[str] = set()
_secrets_lock = threading.Lock()
_secret_pattern: re.Pattern[str] | None = None
_ordered: tuple[str, ...] = ()  # the registered spellings, longest first (replaced whole: read without the lock)
_longest_secret = 0
# Called after a registration that added a secret (on_secret_registered): what made text before it was known.
_listeners: list[Callable[[], None]] = []
# Shapes of credentials we may never have been told about: vendor key prefixes, bearer tokens and HTTP Basic
# credentials (``Basic <base64 of user:password>``: what httpx makes of a URL's user info or a client's ``auth=``; 12
# base64 characters or more — a ``user:pass`` — and not a word: ``Basic Authentication`` is left alone, :func:`_mask`).
# A credential named by its key: ``api_key=...``, ``"token": "..."``, ``X-Amz-Security-Token=...``,
# ``aws_secret_access_key = ...``, ``client_secret=...``, SigV4's ``Signature=<hex>``.  Its value runs through
# base64's ``/+=`` and URL-encoding's ``%`` (AWS secret keys and session tokens hold them: cut at the first ``/``,
# the rest leaked).  The name and its value are found in every spelling a text gives the pair: ``=`` or ``:``,
# percent-encoded (``X-Amz-Signature%3D...``: a presigned URL quoted inside another URL's query), a pair of a
# split query or header list (``('X-Amz-Signature', '...')``, ``(b'x-api-key', b'...')``), JSON inside a JSON
# string (``\"token\": \"...\"``), S3's ``SignatureProvided`` (a field, or an XML element of its errors).
# A bare 64-hex string is *not* taken for a signature: far more of them are content hashes (x-amz-content-sha256,
# a digest) than signatures, and the one place the library makes a bare signature (botocore's debug line) is
# masked where it is made (agentactors.providers.bedrock.sigv4).
_KEY_NAMES = r"(?:api[_-]?key|x-api-key|x-goog-api-key|key|token|signature(?:provided)?|secret)"
_QUOTE = r"\\?[\"']"  # a quote, or one escaped inside a JSON string
_SEPARATOR = r"(?:(?:" + _QUOTE + r")?\s*(?:[=:]|%3[ADad])|" + _QUOTE + r"\s*,)\s*"
_KEY_PREFIX = r"(?:" + _KEY_NAMES + _SEPARATOR + r"(?:b?" + _QUOTE + r")?|signature(?:provided)?>)"
_KEY_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|sk-ant-[A-Za-z0-9_\-]{8,}|gsk_[A-Za-z0-9]{8,}|AIza[0-9A-Za-z_\-]{20,}"
    r"|ya29\.[0-9A-Za-z_\-]{10,}"
    # Bearer and Basic share their "b": one branch tried per character, not two (a second cost redact() ~20%).
    r"|(?i:b(?:earer\s+[A-Za-z0-9._\-]{8,}|asic[ \t]+[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/=])))"
    r"|(?i:" + _KEY_PREFIX + r")[A-Za-z0-9._\-/+=%]{12,})"
)
_PREFIX = re.compile(r"(?i)(" + _KEY_PREFIX + r")")
# A password: named (libpq's ``password=``, ``PGPASSWORD=``, ``"password": "..."``) — its value quoted (any
# character, up to the closing quote: libpq's ``password='a b'``) or bare, of 6 characters or more (shorter ones
# after the word are ordinary text: ``password: none``) — or a URL's user info, ``scheme://user:PASSWORD@host``.
_PASSWORDS = re.compile(
    r"(?i)(?P<name>passw(?:or)?d" + _SEPARATOR + r")"
    r"(?:(?P<quote>\\?[\"'])(?:(?!(?P=quote)).){1,256}?(?P=quote)|[^\s'\"&,;<>\\]{6,})"
    r"|(?P<url>\b[a-z][a-z0-9+.\-]{0,31}://[^\s:/@'\"<>]{0,256}:)[^\s/'\"<>]{1,256}@"
)  # (bounded runs: a hostile text of many "://" without an "@" costs linear time, not quadratic)
# A key-shaped match is at most this long in practice; an excerpt keeps this margin past its cut
# so that a credential straddling the cut is still seen whole by the patterns.
_SHAPE_MARGIN = 512
_NON_SPACE = re.compile(r"\S")


def _spellings(secret: str) -> set[str]:
    """``secret`` as it may appear in text: itself, and escaped the way ``repr`` of a str or bytes shows it.

    h11 and friends put header values in their messages as ``repr(bytes)``; a key holding a
    backslash or a quote is then spelled differently from the key itself.
    """
    out = {secret}
    out.add(repr(secret)[1:-1])
    try:
        out.add(repr(secret.encode("utf-8"))[2:-1])
    except UnicodeEncodeError:  # a lone surrogate: no bytes spelling exists
        pass
    return {s for s in out if len(s) >= 8}


def register_secret(secret: str | None) -> None:
    """Remember a credential so that :func:`redact` removes it from any text.

    Providers call this with their API key; call it for any other secret your
    tools or transports handle.  Strings shorter than 8 characters are ignored
    (redacting them would mangle ordinary words).  The escaped spellings ``repr``
    gives a str or bytes value are registered too.
    """
    global _secret_pattern, _longest_secret, _ordered
    if not secret or len(secret) < 8:
        return
    with _secrets_lock:
        new = _spellings(secret) - _secrets
        if not new:
            return
        _secrets.update(new)
        ordered = sorted(_secrets, key=len, reverse=True)
        _longest_secret = len(ordered[0])
        _secret_pattern = re.compile("|".join(re.escape(s) for s in ordered))
        _ordered = tuple(ordered)
        listeners = tuple(_listeners)
    for listener in listeners:  # outside the lock: a listener redacts (and may register) in its turn
        listener()


def on_secret_registered(listener: Callable[[], None]) -> None:
    """Call ``listener()`` after every :func:`register_secret` that adds a secret, in the registering thread.

    For text made *before* a secret was known that is still to be shown: a tool's schema, built when the tool
    was, goes to the vendor and into the records with every request — a ``default`` holding a key a provider
    registers later would go on being sent (:mod:`agentactors.tools.registry` drops it then).  Registrations
    are rare (a provider's construction), so a listener may walk what it keeps; it must not raise.
    """
    with _secrets_lock:
        _listeners.append(listener)


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
        m = _PREFIX.match(whole)
        if m:
            return m.group(1) + "[REDACTED]"
        if whole.lower().startswith("bearer"):
            return "Bearer [REDACTED]"
        if whole[:5].lower() == "basic":
            token = whole[5:].lstrip()
            if token.isalpha() and (token[1:].islower() or token.isupper()):
                return whole  # a word ("basic information"): base64 of a credential mixes case and digits
            return "Basic [REDACTED]"
        return "[REDACTED]"

    text = _KEY_SHAPES.sub(_mask, text)
    if "pass" in text or "PASS" in text or "://" in text or "Pass" in text:  # the common text holds neither
        text = _PASSWORDS.sub(_mask_password, text)
    return text


def _mask_password(match: re.Match[str]) -> str:
    url = match.group("url")
    if url is not None:
        return url + "[REDACTED]@"
    quote = match.group("quote") or ""
    return match.group("name") + quote + "[REDACTED]" + quote


def redact_registered(text: str) -> str:
    """Remove every registered secret from ``text`` — only those, not the key-shaped strings :func:`redact` masks too.

    For a text too large for :func:`redact`'s patterns (a tool result of megabytes: they cost ~0.16 µs a
    character, and hold the interpreter while they run): a plain search for each registered spelling, longest
    first, runs at memory speed (~1 ms for 10 MB and a few secrets), so no credential the library was told of
    gets through however long the text around it.
    """
    for secret in _ordered:
        if secret in text:
            text = text.replace(secret, "[REDACTED]")
    return text


def excerpt(text: str | bytes, limit: int) -> str:
    """The start of ``text``, at most ``limit`` characters, stripped and redacted (``…`` marks a cut).

    Cut *before* redacting, with a margin as long as the longest registered secret (and
    the longest credential shape), so a secret straddling the cut is masked, never shown
    in part; the work is O(``limit``) whatever the size of ``text``.
    """
    keep = limit + max(_longest_secret, _SHAPE_MARGIN) + 16
    beyond = False
    if isinstance(text, bytes | bytearray):
        # A UTF-8 character is at most 4 bytes: decoding more than this is wasted work.
        beyond = len(text) > keep * 4
        text = bytes(text[: keep * 4]).decode("utf-8", "replace")
    first = _NON_SPACE.search(text)
    if first is None:
        return ""
    start = first.start()
    head = text[start : start + keep]
    beyond = beyond or len(text) - start > keep
    if not beyond:
        head = head.rstrip()
    clean = redact(head)
    if not beyond and len(clean) <= limit:
        return clean
    return clean[: limit - 1] + "…"


class RedactingFilter(logging.Filter):
    """A :class:`logging.Filter` that masks credentials in a record's message, traceback and stack.

    Attach it to a logger the library does not own (:func:`redact_loggers` does, for the
    HTTP stack): filters run on the logger where a record is made, before any handler —
    so no handler, file or log shipper ever receives the secret.  It only runs for
    records the logger's level lets through, so it costs nothing while DEBUG is off.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string is the handler's problem to report, not ours
            return True
        clean = self.clean(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            # Formatted here to look for a credential; kept as the record's text (formatters reuse exc_text) only when
            # cleaning changed it — else a handler's own formatException (a one-line format) still formats it.
            text = logging.Formatter().formatException(record.exc_info)
            clean = self.clean(text)
            if clean != text:
                record.exc_text = clean
        elif record.exc_text:
            record.exc_text = self.clean(record.exc_text)
        if record.stack_info:
            record.stack_info = self.clean(record.stack_info)
        return True

    def clean(self, text: str) -> str:
        """``text`` as a record may hold it: credentials masked (:func:`redact`).  A subclass may do more."""
        return redact(text)


_FILTER = RedactingFilter()
_filtered: set[str] = set()


def redact_loggers(names: Iterable[str]) -> None:
    """Attach the shared :class:`RedactingFilter` to each named logger (idempotent).

    A logger's filters do not apply to records of its children, so name every logger
    that emits (``httpcore.http11``, not ``httpcore``).
    """
    with _secrets_lock:
        for name in names:
            if name not in _filtered:
                logging.getLogger(name).addFilter(_FILTER)
                _filtered.add(name)


#: Every logger the library makes (``logging.getLogger("agentactors...")``), given the filter when this module is
#: imported — before any of them logs: a filter acts only on records made at its own logger, never on a child's.
#: ``agentactors.tools`` has a filter of its own (:mod:`agentactors.tools._failure`, which also mends lone
#: surrogates).  tests/unit/test_library_logs_redacted.py scans the source so that a new logger cannot be missed.
LIBRARY_LOGGERS: tuple[str, ...] = (
    "agentactors",
    "agentactors.actors",
    "agentactors.agent",
    "agentactors.events",
    "agentactors.journal",
    "agentactors.loop",
    "agentactors.mcp",
    "agentactors.nudges",
    "agentactors.otel",
    "agentactors.pricing",
    "agentactors.providers",
    "agentactors.providers.http",
    "agentactors.ray",
    "agentactors.resilience.batch",
    "agentactors.serve",
    "agentactors.sessions",
    "agentactors.testing.fakevendor",
    "agentactors.testing.fakevendor.server",
    "agentactors.tools",
)
redact_loggers(name for name in LIBRARY_LOGGERS if name != "agentactors.tools")
