"""One error taxonomy for every provider failure, and the one function that classifies HTTP failures.

Every library error derives from :class:`AgentActorsError`.  A provider failure is a
:class:`ProviderError` whose ``kind`` says whose fault it is and whose ``retryable``
says whether asking again can help.  The resilience decorators derive every
decision (retry, fall back, count in a breaker) from these two fields and nothing
else, so the classification lives here, in one place:

========== ===== ======== ==============
kind       retry fallback breaker counts
========== ===== ======== ==============
request    no    no       no
account    no    opt-in   no
context    no    opt-in   no
content_   no    opt-in   no
policy
transient  yes   yes      yes
circuit_   no    yes      no
open
========== ===== ======== ==============

Cancellation is never a ``ProviderError``: it is anyio's cancellation exception
and is re-raised at once by everything.

No credential ever appears in an error's ``str``, ``repr``, notes or
``body_excerpt``: providers register their keys with :func:`register_secret` and
every text that enters an error passes through :func:`redact`.
"""

from __future__ import annotations

import email.utils
import enum
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Self

import httpx

from .redaction import redact, register_secret

__all__ = [
    "ActorStopped",
    "AgentActorsError",
    "AllProvidersFailedError",
    "AskTimeout",
    "CircuitOpenError",
    "ErrorKind",
    "MalformedResponseError",
    "ProviderError",
    "ProviderTimeout",
    "StreamInterruptedError",
    "ToolStatusError",
    "UnsupportedToolChoiceError",
    "classify_exception",
    "classify_http_error",
    "parse_retry_after",
    "redact",
    "register_secret",
]

_EXCERPT_LIMIT = 500


class ErrorKind(enum.StrEnum):
    """Whose fault a failure is; see the module docstring for what each kind means."""

    request = "request"
    account = "account"
    context = "context"
    content_policy = "content_policy"
    transient = "transient"
    circuit_open = "circuit_open"

    @property
    def retryable(self) -> bool:
        return self is ErrorKind.transient


def _excerpt(body: str | bytes | None) -> str | None:
    if body is None:
        return None
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    text = redact(body.strip())
    return text if len(text) <= _EXCERPT_LIMIT else text[: _EXCERPT_LIMIT - 1] + "…"


# --- the hierarchy ------------------------------------------------------------------------------


class AgentActorsError(Exception):
    """Base class of every error this library raises (cancellation aside)."""


class ProviderError(AgentActorsError):
    """A model call failed.

    :param provider: the provider's name (``"openai"``, a fallback member's name, ...).
    :param kind: whose fault it is (:class:`ErrorKind`; its string value is accepted).
    :param model: the model called, when known.
    :param status: the HTTP status, when there was one.
    :param retry_after: seconds the vendor asked us to wait, relative.
    :param retryable: ``None`` derives it from ``kind`` (only transient is retryable).
    :param request_id: the vendor's request id, for support tickets.
    :param body_excerpt: the start of the vendor's error body, credentials removed.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        kind: ErrorKind | str,
        model: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        request_id: str | None = None,
        body_excerpt: str | bytes | None = None,
    ) -> None:
        self._message = redact(str(message))
        self.provider = provider
        self.kind = ErrorKind(kind)
        self.model = model
        self.status = status
        self.retry_after = retry_after if retry_after is None else max(0.0, float(retry_after))
        self.retryable = self.kind.retryable if retryable is None else bool(retryable)
        self.request_id = request_id
        self.body_excerpt = _excerpt(body_excerpt)
        super().__init__(self._message)

    @property
    def message(self) -> str:
        """The vendor's (or our) message, credentials removed."""
        return self._message

    def __str__(self) -> str:
        where = self.provider + (f"/{self.model}" if self.model else "")
        status = f" HTTP {self.status}" if self.status is not None else ""
        return f"{where}{status} [{self.kind.value}]: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, provider={self.provider!r}, model={self.model!r}, "
            f"status={self.status!r}, kind={self.kind.value!r}, retryable={self.retryable!r}, "
            f"retry_after={self.retry_after!r})"
        )

    def __reduce__(self) -> Any:
        # Keep errors picklable (Ray moves them between processes).
        state = dict(self.__dict__)
        return (_rebuild, (type(self), state))

    def add_note(self, note: str) -> None:
        super().add_note(redact(note))


def _rebuild(cls: type[ProviderError], state: dict[str, Any]) -> ProviderError:
    err = cls.__new__(cls)
    Exception.__init__(err, state.get("_message", ""))
    err.__dict__.update(state)
    return err


class MalformedResponseError(ProviderError):
    """The vendor answered with something its wire does not allow (transient: asking again may help)."""

    def __init__(self, message: str, *, provider: str, model: str | None = None, **kw: Any) -> None:
        kw.setdefault("kind", ErrorKind.transient)
        super().__init__(f"malformed vendor response: {message}", provider=provider, model=model, **kw)


class UnsupportedToolChoiceError(ProviderError):
    """The request forces a tool choice that this provider/model rejects.

    Raised *before anything is sent*.  It is a request fault: no decorator retries
    it, moves it to a fallback, or counts it in a breaker.
    """

    def __init__(self, message: str | None = None, *, provider: str, model: str | None = None) -> None:
        super().__init__(
            message
            or f"model {model!r} of provider {provider!r} does not accept a forced tool choice "
            "('required' or a named tool); use ToolChoice.auto() or a model that supports it",
            provider=provider,
            model=model,
            kind=ErrorKind.request,
            retryable=False,
        )


class CircuitOpenError(ProviderError):
    """A circuit breaker refused the call without calling the provider.

    ``retry_after`` is the number of seconds until a probe may pass;
    ``last_error`` the failure that (last) opened the circuit.
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        provider: str,
        model: str | None = None,
        retry_after: float | None = None,
        last_error: BaseException | None = None,
    ) -> None:
        wait = f"; next probe in {retry_after:.3g}s" if retry_after is not None else ""
        super().__init__(
            message or f"circuit open{wait}",
            provider=provider,
            model=model,
            kind=ErrorKind.circuit_open,
            retry_after=retry_after,
            retryable=False,
        )
        self.last_error = last_error


class StreamInterruptedError(ProviderError):
    """A stream failed after its first event.  Never retried or failed over: the consumer saw part of it.

    ``partial_text`` is the answer text delivered before the failure.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str | None = None,
        partial_text: str = "",
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(
            message,
            provider=provider,
            model=model,
            kind=ErrorKind.transient,
            retryable=False,
            status=status,
            request_id=request_id,
        )
        self.partial_text = partial_text


class ProviderTimeout(ProviderError):
    """A call took longer than a configured timeout (transient)."""

    def __init__(self, message: str, *, provider: str, model: str | None = None) -> None:
        super().__init__(message, provider=provider, model=model, kind=ErrorKind.transient)


class AllProvidersFailedError(ProviderError, ExceptionGroup):
    """Every member of a fallback chain failed.

    Both an ``ExceptionGroup`` (``except*`` works, ``.exceptions`` lists the
    members' errors in order, primary first) and a :class:`ProviderError` whose
    kind, retryable and retry_after are the last error's.
    """

    def __new__(cls, message: str, errors: Sequence[Exception], **_: Any) -> Self:
        return super().__new__(cls, message, list(errors))

    def __init__(self, message: str, errors: Sequence[Exception], *, provider: str = "fallback") -> None:
        errs = list(errors)
        if not errs:
            raise ValueError("AllProvidersFailedError needs at least one error")
        last = errs[-1]
        last_pe = last if isinstance(last, ProviderError) else None
        ProviderError.__init__(
            self,
            message,
            provider=provider,
            kind=last_pe.kind if last_pe else ErrorKind.transient,
            model=last_pe.model if last_pe else None,
            status=last_pe.status if last_pe else None,
            retry_after=last_pe.retry_after if last_pe else None,
            retryable=last_pe.retryable if last_pe else False,
            request_id=last_pe.request_id if last_pe else None,
        )
        self.errors = tuple(errs)

    @property
    def exceptions(self) -> tuple[Exception, ...]:
        return self.errors

    def __str__(self) -> str:
        inner = "; ".join(str(e) for e in self.errors)
        return f"{self.message} ({len(self.errors)} errors: {inner})"

    def derive(self, excs: Sequence[Exception]) -> AllProvidersFailedError:  # type: ignore[override]
        return AllProvidersFailedError(self.message, list(excs), provider=self.provider)

    def __reduce__(self) -> Any:
        return (AllProvidersFailedError, (self.message, list(self.errors)), {"provider": self.provider})

    def __setstate__(self, state: dict[str, Any] | None) -> None:
        if state:
            self.provider = state["provider"]


class AskTimeout(AgentActorsError, TimeoutError):
    """An ``ask`` got no answer in time; the work done for it was cancelled."""


class ActorStopped(AgentActorsError):
    """The actor was stopped (or stopped itself) and cannot answer."""


class ToolStatusError(AgentActorsError):
    """Raised by a run whose ``on_tool_status`` routes a tool status to ``"raise"``."""

    def __init__(self, message: str, *, status: Any = None, result: Any = None) -> None:
        super().__init__(redact(message))
        self.status = status
        self.result = result


# --- classification -----------------------------------------------------------------------------

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
    """Seconds to wait, from ``retry-after-ms``, ``retry-after`` (seconds or HTTP date) or Gemini's RetryInfo."""
    if headers is not None:
        h = httpx.Headers(headers) if not isinstance(headers, httpx.Headers) else headers
        ms = h.get("retry-after-ms")
        if ms is not None:
            try:
                value = float(ms) / 1000.0
                if value >= 0:
                    return value
            except ValueError:
                pass
        ra = h.get("retry-after")
        if ra is not None:
            ra = ra.strip()
            try:
                return max(0.0, float(ra))
            except ValueError:
                try:
                    when = email.utils.parsedate_to_datetime(ra)
                except (TypeError, ValueError, IndexError):
                    when = None
                if when is not None:
                    return max(0.0, when.timestamp() - now())
    return _retry_info_delay(body)


def _retry_info_delay(body: Any) -> float | None:
    """Gemini: ``error.details[] @type RetryInfo retryDelay: "37s"``."""
    err = body.get("error") if isinstance(body, dict) else None
    details = err.get("details") if isinstance(err, dict) else None
    if not isinstance(details, list):
        return None
    for d in details:
        if isinstance(d, dict) and str(d.get("@type", "")).endswith("RetryInfo"):
            delay = d.get("retryDelay")
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    return max(0.0, float(delay[:-1]))
                except ValueError:
                    return None
            if isinstance(delay, dict):  # {"seconds": 37, "nanos": 0}
                try:
                    return float(delay.get("seconds", 0)) + float(delay.get("nanos", 0)) / 1e9
                except (TypeError, ValueError):
                    return None
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
                codes.append(v.lower())
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
    h = httpx.Headers(headers or {})
    message, codes, request_id = _error_fields(parsed)
    request_id = request_id or h.get("request-id") or h.get("x-request-id")
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
    if isinstance(body, dict) and isinstance(body.get("status_code"), int):
        found = body["status_code"]
    elif isinstance(inner, dict):
        code = inner.get("code")
        if isinstance(code, int) and 100 <= code <= 599:
            found = code
        elif isinstance(inner.get("status_code"), int):
            found = inner["status_code"]
    if found is None:
        message, codes, _ = _error_fields(body)
        kind = _kind_from_codes(codes, message)
        if kind is None:
            # An unknown in-band error during generation: the vendor failed mid-answer.
            found = 500 if not any(c in _REQUEST_CODES for c in codes) else 400
    return classify_http_error(found or 500, None, body, provider=provider, model=model)


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


def classify_exception(exc: BaseException, *, provider: str, model: str | None = None) -> ProviderError:
    """Wrap any exception raised while calling a provider into the taxonomy.

    A :class:`ProviderError` is returned as is.  httpx transport errors and
    timeouts are transient; anything else unknown is a request fault (unknown
    errors are not retried — retrying unknowns is how peers burn money), unless
    it or its cause carries an explicit ``retryable`` attribute.
    Cancellation must not reach this function; callers re-raise it first.
    """
    if isinstance(exc, ProviderError):
        return exc
    explicit = explicit_retryable(exc)
    if isinstance(exc, httpx.TimeoutException):
        err: ProviderError = ProviderTimeout(f"{type(exc).__name__}: {exc}", provider=provider, model=model)
    elif isinstance(exc, httpx.TransportError | ConnectionError | OSError | TimeoutError):
        err = ProviderError(
            f"{type(exc).__name__}: {exc}", provider=provider, model=model, kind=ErrorKind.transient
        )
    else:
        kind = ErrorKind.transient if explicit else ErrorKind.request
        err = ProviderError(f"{type(exc).__name__}: {exc}", provider=provider, model=model, kind=kind)
    if explicit is not None:
        err.retryable = explicit
    err.__cause__ = exc
    return err
