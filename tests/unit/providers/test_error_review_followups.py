"""Follow-ups of the resilience review, in the providers' own helpers: one classification, one interruption.

* :func:`classify_exception` sees through an ``ExceptionGroup`` of exactly one failure, as the decorators'
  ``as_provider_error`` does (it calls it): code outside the decorators (the loop's ``failed``, a custom
  adapter) classifies a task group's wrapped timeout as the timeout, not as an unknown request fault.
* :func:`interrupted` classifies (and so scrubs) a foreign cause: a credential in its text is not reachable
  through the interruption's chain, whoever builds it (a wire, the scripted provider, the gateway).
* :func:`parse_retry_after` takes only a finite, non-negative number of seconds (or an HTTP date):
  ``inf``, ``1e999``, ``nan`` and negative values are no value, never an infinite or a NaN wait.
"""

from __future__ import annotations

import email.utils
import math
from typing import Any

import httpx
import pytest

from agentactors.errors import (
    AllProvidersFailedError,
    ErrorKind,
    ProviderError,
    ProviderTimeout,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from agentactors.messages import LLMRequest, Message, TextDelta
from agentactors.providers.errors import classify_exception, classify_http_error, parse_retry_after
from agentactors.providers.port import interrupted
from agentactors.providers.scripted import ScriptedProvider, StreamCut
from agentactors.redaction import register_secret
from agentactors.resilience.decorator import as_provider_error
from tests.support.chains import leaks

CANARY = "canary-FOLLOWUP-7a6b5c4d3e2f1a0b"  # not key-shaped: only registration redacts it
BEARER = "tok-BEARER-0f1e2d3c4b5a69788796a5b4"  # not registered: redacted for standing after "Bearer"


# --- 1. classify_exception: a group of one failure is that failure -------------------------------------


def _group(exc: Exception, depth: int = 1) -> ExceptionGroup[Exception]:
    group = ExceptionGroup("unhandled errors in a TaskGroup", [exc])
    for _ in range(depth - 1):
        group = ExceptionGroup("unhandled errors in a TaskGroup", [group])
    return group


@pytest.mark.parametrize("depth", [1, 3, 200])
def test_classify_exception_sees_the_sole_failure_inside_a_group(depth: int) -> None:
    # A provider sending from a task group: its timeout arrived wrapped and was an unknown, request fault
    # for anything that classified it outside the decorators (the loop's failed run, a custom adapter).
    timeout = ProviderTimeout("slow", provider="v")
    assert classify_exception(_group(timeout, depth), provider="p") is timeout
    refused = UnsupportedToolChoiceError(provider="v", model="m")
    assert classify_exception(_group(refused, depth), provider="p") is refused
    reset = httpx.ConnectError("connection refused")
    error = classify_exception(_group(reset, depth), provider="p", model="m")
    assert error.kind is ErrorKind.transient and error.retryable
    assert error.__cause__ is reset and error.provider == "p" and error.model == "m"


def test_a_group_of_several_failures_stays_a_request_fault_and_an_all_failed_error_stays_whole() -> None:
    several = ExceptionGroup("two", [ProviderTimeout("slow", provider="v"), httpx.ConnectError("refused")])
    error = classify_exception(several, provider="p")
    assert error.kind is ErrorKind.request and not error.retryable
    assert "two" in str(error)
    exhausted = AllProvidersFailedError("all failed", [ProviderTimeout("slow", provider="v")])
    assert classify_exception(exhausted, provider="p") is exhausted
    assert classify_exception(_group(exhausted), provider="p") is exhausted


@pytest.mark.parametrize(
    "exc",
    [
        _group(ProviderTimeout("slow", provider="v"), 2),
        _group(httpx.ReadTimeout("read timed out")),
        _group(RuntimeError("bug")),
        ExceptionGroup("two", [OSError("a"), OSError("b")]),
        _group(AllProvidersFailedError("all failed", [OSError("a")])),
    ],
    ids=["provider-error", "timeout", "unknown", "several", "all-failed"],
)
def test_classify_exception_agrees_with_the_decorators(exc: Exception) -> None:
    direct = classify_exception(exc, provider="p", model="m")
    decorated = as_provider_error(exc, ScriptedProvider([], name="p"), "m")
    assert type(direct) is type(decorated)
    assert (direct.kind, direct.retryable, str(direct)) == (decorated.kind, decorated.retryable, str(decorated))


# --- 2. interrupted: a foreign cause is classified and scrubbed -----------------------------------------


def _foreign_errors() -> list[Exception]:
    register_secret(CANARY)
    return [
        httpx.ReadError(f"connection reset: https://vendor.example/v1?key={CANARY}"),
        RuntimeError(f"proxy said: Authorization: Bearer {BEARER}"),
        _group(httpx.ReadError(f"reset: https://vendor.example/v1?key={CANARY}")),
        ValueError("decoding failed", {"echoed": f"key={CANARY}"}),
    ]


@pytest.mark.parametrize("index", range(4), ids=["url-key", "bearer-header", "grouped", "in-args"])
def test_an_interruption_never_keeps_a_credential_anywhere_in_its_chain(index: int) -> None:
    # interrupted() set the raw foreign exception as the cause: the key in its text (a URL's ?key=, an
    # Authorization header a proxy echoed) reached every traceback and every tool that walks the chain.
    exc = _foreign_errors()[index]
    error = interrupted(exc, provider="custom", model="m", partial_text="partial ")
    assert isinstance(error, StreamInterruptedError)
    assert error.partial_text == "partial " and error.provider == "custom" and error.model == "m"
    assert not error.retryable and error.kind is ErrorKind.transient
    assert isinstance(error.__cause__, ProviderError)  # the classified failure, its own cause scrubbed
    assert not leaks(error, CANARY, BEARER)


def test_an_interruption_keeps_a_classified_cause_as_it_is() -> None:
    cause = classify_http_error(503, {"x-request-id": "req-1"}, b"{}", provider="v")
    error = interrupted(cause, provider="v", model="m", partial_text="ab")
    assert error.__cause__ is cause and error.status == 503 and error.request_id == cause.request_id
    assert interrupted(error, provider="other", model=None, partial_text="") is error
    timeout = ProviderTimeout("slow", provider="v")
    assert interrupted(_group(timeout), provider="v", model="m", partial_text="a").__cause__ is timeout


REQ = LLMRequest([Message.user("hi")], model="m")


@pytest.mark.anyio
async def test_a_scripted_stream_cut_by_a_foreign_error_does_not_carry_its_credential() -> None:
    # The scripted provider (and the wires, the gateway) build their interruption with interrupted().
    register_secret(CANARY)
    cut = httpx.ReadError(f"connection reset: https://vendor.example/v1?key={CANARY}")
    provider = ScriptedProvider([StreamCut("partial answer", cut)], model="m")
    seen: list[str] = []
    with pytest.raises(StreamInterruptedError) as info:
        async with provider.stream(REQ) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    seen.append(event.text)
    assert "".join(seen) == "partial answer" and info.value.partial_text == "partial answer"
    assert not leaks(info.value, CANARY)


# --- 3. parse_retry_after: only finite, non-negative seconds ---------------------------------------------


@pytest.mark.parametrize("value", ["inf", "Infinity", "-inf", "1e999", "nan", "NaN", "-5", "-0.5"])
@pytest.mark.parametrize("header", ["retry-after", "retry-after-ms"])
def test_a_retry_after_that_is_not_a_finite_non_negative_number_is_no_value(header: str, value: str) -> None:
    # Retry-After: inf (or 1e999) was an infinite wait, nan a NaN one (NaN compares false with every cap),
    # -5 a zero wait: none is a delay the vendor can mean.
    assert parse_retry_after({header: value}) is None
    error = classify_http_error(429, {header: value}, b"{}", provider="v")
    assert error.retry_after is None and error.retryable


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "1e999"])
def test_a_bad_retry_after_ms_falls_back_to_retry_after(value: str) -> None:
    assert parse_retry_after({"retry-after-ms": value, "retry-after": "3"}) == 3.0


@pytest.mark.parametrize(
    "delay",
    ["infs", "1e999s", "nans", "-3s", {"seconds": "inf"}, {"seconds": -1}, {"seconds": 1e999}, {"nanos": "nan"}],
)
def test_a_gemini_retry_delay_that_is_not_finite_and_non_negative_is_no_value(delay: Any) -> None:
    body = {"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]}}
    assert parse_retry_after({}, body) is None


def test_valid_retry_after_values_are_still_read() -> None:
    assert parse_retry_after({"retry-after": "0"}) == 0.0
    assert parse_retry_after({"retry-after": " 7.5 "}) == 7.5
    assert parse_retry_after({"retry-after-ms": "0"}) == 0.0
    assert parse_retry_after({"retry-after-ms": "1e6"}) == 1000.0
    now = 1_700_000_000.0
    assert parse_retry_after({"retry-after": email.utils.formatdate(now + 30, usegmt=True)}, now=lambda: now) == 30.0
    # A date already past: the wait is over, not a missing value.
    assert parse_retry_after({"retry-after": email.utils.formatdate(now - 30, usegmt=True)}, now=lambda: now) == 0.0
    gemini = {"error": {"details": [{"@type": "x.RetryInfo", "retryDelay": {"seconds": 2, "nanos": 500_000_000}}]}}
    assert parse_retry_after({}, gemini) == 2.5
    assert math.isfinite(parse_retry_after({"retry-after": "1e300"}) or math.nan)
