"""HTTP failure → :class:`~agentactors.errors.ProviderError`: the one classifier every wire shares.

A vendor says whose fault a failure is in three places, and this module reads all of them, in this
order of precedence (``docs/resilience.md`` §1):

1. the ``x-should-retry`` header (``true`` → transient and retryable, ``false`` → not retryable,
   kind kept) — the vendor's explicit word;
2. the vendor's error code, type, status or reason in the body (a 429 ``insufficient_quota`` is an
   account error, a 400 ``context_length_exceeded`` a context error), and a few well-known phrases
   in its message for servers that send no code;
3. the HTTP status (listed 4xx/5xx statuses, then any other 5xx transient, any other 4xx request).

``retry-after-ms``, ``retry-after`` (seconds or an HTTP date) and Gemini's ``RetryInfo`` detail
become ``retry_after``.  A wire that knows more about its own errors refines the result in its
``_<wire>_decode`` module; nothing above the providers classifies HTTP.

:func:`classify_exception` is the other entry: any exception raised while calling a provider
becomes a :class:`~agentactors.errors.ProviderError` (transport errors transient, unknown errors
request faults unless they carry an explicit ``retryable``).

This lives next to the providers, not in :mod:`agentactors.errors`: the error tree is data every
layer imports, while classifying HTTP is the providers' job and needs ``httpx``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._scrub import scrub_chain
from ..errors import ErrorKind, ProviderError, ProviderTimeout
from ..redaction import redact
from ._settings import UnsupportedToolNameError

if TYPE_CHECKING:
    import httpx  # imported where a failure is classified: `import agentactors` does not load httpx

__all__ = [
    "UnsupportedToolNameError",
    "as_headers",
    "classify_error_body",
    "classify_exception",
    "classify_http_error",
    "explicit_retryable",
    "parse_retry_after",
    "request_id_of",
]


# Vendor error codes / types that refine the status (checked before the status).
_ACCOUNT_CODES = frozenset(
    {
        "insufficient_quota",
        "billing_hard_limit_reached",
        "billing_not_active",
        "account_deactivated",
        "invalid_api_key",
        "model_not_found",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "permission_denied",
        "unauthenticated",
        "not_found",
        "access_terminated",
        "organization_restricted",
    }
)
_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length", "model_context_window_exceeded"})
_POLICY_CODES = frozenset({"content_filter", "content_policy_violation", "safety", "prohibited_content"})
_TRANSIENT_CODES = frozenset(
    {
        "overloaded_error",
        "api_error",
        "rate_limit_error",
        "rate_limit_exceeded",
        "server_error",
        "unavailable",
        "internal",
        "deadline_exceeded",
        "timeout_error",
        "service_unavailable",
    }
)
_REQUEST_CODES = frozenset({"invalid_request_error", "invalid_argument", "request_too_large", "unsupported_value"})
_CONTEXT_PHRASES = (
    "context window",
    "context length",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "input token count",
    "exceeds the maximum number of tokens",
)
_ACCOUNT_PHRASES = (
    "spend limit",
    "spending limit",
    # Anthropic's spend cap: "You have reached your specified API usage limits. You will regain access on <date>"
    "reached your specified api usage limits",
    "credit balance is too low",
    "exceeded your current quota",
    "billing",
    "per day",
    "perday",
    "daily limit",
    "requests per day",
)
_TRANSIENT_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
_ACCOUNT_STATUSES = frozenset({401, 402, 403, 404})


def parse_retry_after(
    headers: Mapping[str, str] | httpx.Headers | None,
    body: Any = None,
    *,
    now: Callable[[], float] = time.time,
) -> float | None:
    """Seconds to wait, from ``retry-after-ms``, ``retry-after`` (seconds or HTTP date) or Gemini's RetryInfo.

    Only a finite, non-negative number of seconds is a value (an HTTP date already past is ``0.0``: the
    wait is over).  ``inf``, ``1e999``, ``nan`` or a negative number is no value — the server's text,
    not a delay it can mean: an infinite wait would be a hang, a NaN one compares false with every cap —
    and the next source is read (``retry-after`` after a bad ``retry-after-ms``).
    """
    if headers is not None:
        h = as_headers(headers)
        ms = _seconds(h.get("retry-after-ms"))
        if ms is not None:
            return ms / 1000.0
        ra = h.get("retry-after")
        if ra is not None:
            seconds = _seconds(ra)
            if seconds is not None:
                return seconds
            if not _is_number(ra):  # an HTTP date; a bad number is no value, never a date
                import email.utils  # an HTTP date is rare: its parser (~5 ms to import) waits for one

                try:
                    when: float | None = email.utils.parsedate_to_datetime(ra.strip()).timestamp()
                # OverflowError, OSError: a date far out of range (a naive one goes through mktime).
                except (TypeError, ValueError, IndexError, OverflowError, OSError):
                    when = None
                if when is not None:
                    wait = when - now()
                    return max(0.0, wait) if math.isfinite(wait) else None
    return _retry_info_delay(body)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _seconds(value: object) -> float | None:
    """``value`` (a header's text, a JSON number) as a finite, non-negative float; else ``None``."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value.strip() if isinstance(value, str) else value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _retry_info_delay(body: Any) -> float | None:
    """Gemini: ``error.details[] @type RetryInfo retryDelay: "37s"`` (or ``{"seconds": 37, "nanos": 0}``)."""
    err = body.get("error") if isinstance(body, dict) else None
    details = err.get("details") if isinstance(err, dict) else None
    if not isinstance(details, list):
        return None
    for d in details:
        if isinstance(d, dict) and str(d.get("@type", "")).endswith("RetryInfo"):
            delay = d.get("retryDelay")
            if isinstance(delay, str) and delay.endswith("s"):
                return _seconds(delay[:-1])
            if isinstance(delay, dict):
                seconds, nanos = _seconds(delay.get("seconds", 0)), _seconds(delay.get("nanos", 0))
                if seconds is None or nanos is None:
                    return None
                return _seconds(seconds + nanos / 1e9)
    return None


def _error_fields(body: Any) -> tuple[str, list[str], str | None]:
    """(message, lower-cased codes, request id) from any of the three vendors' error bodies."""
    if not isinstance(body, dict):
        return "", [], None
    err = body.get("error")
    request_id = body.get("request_id") if isinstance(body.get("request_id"), str) else None
    codes: list[str] = []
    message = ""
    if isinstance(err, dict):
        message = str(err.get("message") or "")
        for key in ("code", "type", "status"):
            v = err.get(key)
            if isinstance(v, str) and v:
                codes.append(_field_code(v.lower(), err.get("param")))
        details = err.get("details")
        if isinstance(details, list):
            for d in details:
                if not isinstance(d, dict):
                    continue
                reason = d.get("reason")
                if isinstance(reason, str):
                    codes.append(reason.lower())
                violations = d.get("violations")
                for v in violations if isinstance(violations, list) else ():
                    if isinstance(v, dict):
                        qid = str(v.get("quotaId", "")) + " " + str(v.get("quotaMetric", ""))
                        if "perday" in qid.lower().replace("_", "").replace("-", ""):
                            codes.append("per_day_quota")
        meta = err.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("raw"), str):
            message = f"{message} ({meta['raw']})" if message else meta["raw"]
    elif isinstance(err, str):
        message = err
    elif isinstance(body.get("message"), str):
        message = body["message"]
    return message, codes, request_id


#: The last name of a parameter that holds the conversation's own text: a string over its cap there is a
#: conversation too long (``messages[3].content``, ``input[0].output``, ``instructions``).
_TEXT_FIELDS = frozenset({"content", "text", "input", "instructions", "output", "arguments", "prompt", "messages"})


def _field_code(code: str, param: object) -> str:
    """``code``, but OpenAI's ``string_above_max_length`` on a parameter that is not the conversation's text (a
    call id, ``user``, ``stop``, ``metadata``, ``prompt_cache_key``...) as the request's fault it is.

    The code says only "a string over its cap": on a message's content it is a conversation too long for the
    model (a context error: trimming or a larger model may help), on a call id or a ``user`` field it is the
    request's own mistake — as a context error, a served client was told its conversation was too long and a
    fallback on context errors moved on for nothing.  Without a ``param``, the context reading stays.
    """
    if code != "string_above_max_length" or not isinstance(param, str) or not param:
        return code
    last = param.rsplit(".", 1)[-1].split("[", 1)[0]
    return code if last in _TEXT_FIELDS else "invalid_request_error"


def _kind_from_codes(codes: Iterable[str], message: str) -> ErrorKind | None:
    text = message.lower()
    codes = list(codes)
    if "per_day_quota" in codes:
        return ErrorKind.account
    if "resource_exhausted" in codes:
        # Gemini says "You exceeded your current quota" for per-minute limits too; only a
        # per-day quota (or a quota of zero: the model is not on this plan) is the account's.
        return ErrorKind.account if "limit: 0" in text else ErrorKind.transient
    for c in codes:
        if c in _CONTEXT_CODES:
            return ErrorKind.context
        if c in _POLICY_CODES:
            return ErrorKind.content_policy
        if c in _ACCOUNT_CODES:
            return ErrorKind.account
    if any(p in text for p in _CONTEXT_PHRASES):
        return ErrorKind.context
    if any(p in text for p in _ACCOUNT_PHRASES) and ("quota" in text or "limit" in text or "billing" in text):
        return ErrorKind.account
    for c in codes:
        if c in _TRANSIENT_CODES or c == "resource_exhausted":
            return ErrorKind.transient
        if c in _REQUEST_CODES:
            return None  # a generic request code: let the status decide
    return None


def _kind_from_status(status: int) -> ErrorKind:
    if status in _TRANSIENT_STATUSES or status >= 500:
        return ErrorKind.transient
    if status in _ACCOUNT_STATUSES:
        return ErrorKind.account
    return ErrorKind.request


def classify_http_error(
    status: int,
    headers: Mapping[str, str] | httpx.Headers | None,
    body: bytes | str | Any,
    *,
    provider: str,
    model: str | None = None,
    now: Callable[[], float] = time.time,
) -> ProviderError:
    """Turn an HTTP failure into a :class:`ProviderError`.

    Precedence (``docs/resilience.md`` §1): the vendor's ``x-should-retry``
    header (``true`` → transient and retryable, ``false`` → not retryable, kind
    kept); the vendor's error code in the body (a 429 ``insufficient_quota`` is
    an account error); the status (unlisted 5xx transient, unlisted 4xx request).
    ``body`` may be raw bytes/text or an already parsed JSON value.
    """
    raw_text: str | None
    parsed: Any
    if isinstance(body, bytes | bytearray):
        raw_text = bytes(body).decode("utf-8", "replace")
        parsed = _try_json(raw_text)
    elif isinstance(body, str):
        raw_text = body
        parsed = _try_json(body)
    else:
        parsed = body
        raw_text = json.dumps(body, ensure_ascii=False) if body is not None else None
    h = as_headers(headers)
    message, codes, request_id = _error_fields(parsed)
    request_id = _request_id(request_id or h.get("request-id") or h.get("x-request-id"))
    kind = _kind_from_codes(codes, message) or _kind_from_status(status)
    retryable: bool | None = None
    should = (h.get("x-should-retry") or "").strip().lower()
    if should == "true":
        kind, retryable = ErrorKind.transient, True
    elif should == "false":
        retryable = False
    retry_after = parse_retry_after(h, parsed, now=now)
    text = message or (raw_text or "").strip()[:200] or f"HTTP {status}"
    return ProviderError(
        text,
        provider=provider,
        model=model,
        kind=kind,
        status=status,
        retry_after=retry_after,
        retryable=retryable,
        request_id=request_id,
        body_excerpt=raw_text,
    )


def classify_error_body(
    body: Any, *, provider: str, model: str | None = None, status: int | None = None
) -> ProviderError:
    """Classify an error that arrived *inside* an HTTP 200 stream (Anthropic ``event: error``, Groq,
    OpenRouter error chunks, OpenAI ``{"error": ...}`` data).  A status found in the body wins."""
    inner = body.get("error") if isinstance(body, dict) else None
    found = status
    if isinstance(body, dict) and _error_status(body.get("status_code")) is not None:
        found = body["status_code"]
    elif isinstance(inner, dict):
        found = _error_status(inner.get("code")) or _error_status(inner.get("status_code")) or found
    if found is None:
        message, codes, _ = _error_fields(body)
        kind = _kind_from_codes(codes, message)
        if kind is None:
            # An unknown in-band error during generation: the vendor failed mid-answer.
            found = 500 if not any(c in _REQUEST_CODES for c in codes) else 400
    return classify_http_error(found or 500, None, body, provider=provider, model=model)


def _error_status(value: Any) -> int | None:
    """``value`` if it is an HTTP error status (400–599), else ``None``.

    An in-band error's body is the vendor's to get wrong: a ``status_code`` of 200, ``true``, ``-5`` or 302
    says nothing about whose fault the error is, and taken as the status it made a vendor failure
    mid-answer a request fault (not retried, no fallback).  Such a body is read by its codes and message
    instead, as one without a status.
    """
    if isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599:
        return value
    return None


def _request_id(value: str | None) -> str | None:
    """A vendor's request id as an error may keep it: redacted, since it is the vendor's text.

    It comes from a header or the error body — both the server's to fill — and an error's ``__dict__`` is
    what its ``repr(vars())``, pickle (Ray ships errors between processes) and support tooling show: a
    proxy or a test server that puts the caller's ``Authorization`` there must not have it kept verbatim.
    """
    return None if value is None else redact(value)


def as_headers(headers: Mapping[str, str] | httpx.Headers | None) -> httpx.Headers:
    """``headers`` as ``httpx.Headers``, whatever their values hold.

    A transport hands on a response's header bytes past ASCII (obs-text, legal in HTTP: a proxy's header)
    decoded as latin-1, and ``httpx.Headers`` would encode those ``str`` back as ASCII and raise: the vendor's
    error would then be lost behind a ``UnicodeEncodeError`` (a 403 taken for a transient hiccup).  UTF-8 takes
    any ``str`` and reads back the same text.
    """
    import httpx

    return headers if isinstance(headers, httpx.Headers) else httpx.Headers(headers or {}, encoding="utf-8")


def request_id_of(headers: Mapping[str, str] | httpx.Headers | None, *names: str) -> str | None:
    """The first of the ``names`` headers present, redacted (see :func:`_request_id`): for a wire whose
    request id header is its own (Bedrock's ``x-amzn-requestid``)."""
    if not headers:
        return None
    h = as_headers(headers)
    for name in names:
        value = h.get(name)
        if value:
            return _request_id(value)
    return None


def _try_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def explicit_retryable(exc: BaseException) -> bool | None:
    """An explicit ``retryable`` attribute on ``exc`` or anything in its ``__cause__`` chain."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        value = getattr(cur, "retryable", None)
        if isinstance(value, bool):
            return value
        cur = cur.__cause__
    return None


# aiohttp's exception types, by name (aiohttp is an optional extra: it is never imported here).  Our own
# aiohttp transport maps them to httpx's; these catch them from an injected client that does not.
_AIOHTTP_TIMEOUTS = frozenset({"ServerTimeoutError", "ConnectionTimeoutError", "SocketTimeoutError"})
_AIOHTTP_TRANSIENT = frozenset({"ClientConnectionError", "ClientPayloadError", "ClientConnectionResetError"})


def _aiohttp_kind(exc: BaseException) -> str | None:
    """``"timeout"`` / ``"transient"`` for aiohttp's transport failures, else ``None``."""
    for klass in type(exc).__mro__:
        if not klass.__module__.startswith("aiohttp"):
            continue
        if klass.__name__ in _AIOHTTP_TIMEOUTS:
            return "timeout"
        if klass.__name__ in _AIOHTTP_TRANSIENT:
            return "transient"
    return None


def classify_exception(exc: BaseException, *, provider: str, model: str | None = None) -> ProviderError:
    """Wrap any exception raised while calling a provider into the taxonomy.

    A :class:`ProviderError` is returned as is.  httpx transport errors and
    timeouts are transient (aiohttp's too, recognised by type name), except a
    request the HTTP stack refused to send (``httpx.LocalProtocolError``: a
    malformed header, say), which is a request fault.  Anything else unknown is a
    request fault (unknown errors are not retried — retrying unknowns is how peers
    burn money), unless it or its cause carries an explicit ``retryable`` attribute.
    The cause kept is :func:`~agentactors._scrub.scrub_chain` of ``exc``: ``exc``
    itself, or a stand-in if its text held a credential.
    Cancellation must not reach this function; callers re-raise it first.

    An ``ExceptionGroup`` holding exactly one failure (however deeply nested) is
    classified as that failure: a provider that sends its request from a task
    group gets every error wrapped, and the wrapper would make a vendor's timeout
    an unknown, request fault — never retried, moved or counted.  A
    ``ProviderError`` inside is returned as is (an ``UnsupportedToolChoiceError``
    stays one), and so is a ``ProviderError`` that is itself a group
    (``AllProvidersFailedError``: classified already).  A group of several
    failures is classified as a whole: a request fault unless it says otherwise
    (asking again is not known to fix all of them).  This is the one
    classification: the resilience decorators call it too.
    """
    exc = _sole_failure(exc)
    if isinstance(exc, ProviderError):
        return exc
    import httpx

    explicit = explicit_retryable(exc)
    text = redact(f"{type(exc).__name__}: {_safe_str(exc)}")
    aiohttp_kind = _aiohttp_kind(exc)
    if isinstance(exc, httpx.TimeoutException) or aiohttp_kind == "timeout":
        err: ProviderError = ProviderTimeout(text, provider=provider, model=model)
    elif isinstance(exc, httpx.LocalProtocolError):
        # Our side refused to send what we built (an illegal header value): asking again sends it again.
        err = ProviderError(text, provider=provider, model=model, kind=ErrorKind.request, retryable=False)
    elif isinstance(exc, httpx.TransportError | ConnectionError | OSError | TimeoutError) or aiohttp_kind:
        err = ProviderError(text, provider=provider, model=model, kind=ErrorKind.transient)
    else:
        kind = ErrorKind.transient if explicit else ErrorKind.request
        err = ProviderError(text, provider=provider, model=model, kind=kind)
    if explicit is not None:
        err.retryable = explicit
    err.__cause__ = scrub_chain(exc)
    return err


# Deeper than this, a group of one is classified as a group: a bound for a hostile ``exceptions`` that makes a
# new group each time it is read (nothing real nests a task group's error this deep).
_GROUP_DEPTH = 1000


def _sole_failure(exc: BaseException) -> BaseException:
    """The one failure inside ``exc`` when it is an ``ExceptionGroup`` of exactly one (nested groups too).

    Only an ``ExceptionGroup`` is opened, whose members are all ``Exception``: a ``BaseExceptionGroup``
    holds a cancellation or an interpreter exit, which is never classified.
    """
    for _ in range(_GROUP_DEPTH):
        # A ProviderError that is a group (AllProvidersFailedError) is classified already: kept whole.
        if not isinstance(exc, ExceptionGroup) or isinstance(exc, ProviderError) or len(exc.exceptions) != 1:
            break
        exc = exc.exceptions[0]
    return exc


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # an exception whose __str__ raises must not hide the failure it reports
        return f"<{type(exc).__name__} with an unprintable message>"
