"""HTTP failure -> ProviderError (agentactors.providers.errors): status x headers x vendor bodies, retry-after."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from agentactors import ErrorKind, ProviderError, ProviderTimeout
from agentactors.providers.errors import (
    classify_error_body,
    classify_exception,
    classify_http_error,
    parse_retry_after,
)


def _openai(message: str, code: str | None = None, type_: str = "invalid_request_error") -> dict[str, object]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (400, ErrorKind.request, False),
        (401, ErrorKind.account, False),
        (403, ErrorKind.account, False),
        (404, ErrorKind.account, False),
        (408, ErrorKind.transient, True),
        (409, ErrorKind.transient, True),
        (413, ErrorKind.request, False),
        (422, ErrorKind.request, False),
        (429, ErrorKind.transient, True),
        (500, ErrorKind.transient, True),
        (502, ErrorKind.transient, True),
        (503, ErrorKind.transient, True),
        (504, ErrorKind.transient, True),
        (529, ErrorKind.transient, True),
        (599, ErrorKind.transient, True),  # any unlisted 5xx
        (418, ErrorKind.request, False),  # any unlisted 4xx
    ],
)
def test_status_matrix(status: int, kind: ErrorKind, retryable: bool) -> None:
    err = classify_http_error(status, {}, b"", provider="p", model="m")
    assert (err.kind, err.retryable, err.status) == (kind, retryable, status)


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (_openai("You exceeded your current quota", "insufficient_quota", "insufficient_quota"), ErrorKind.account),
        (_openai("Rate limit reached for requests", "rate_limit_exceeded", "requests"), ErrorKind.transient),
        ({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}, ErrorKind.transient),
        (_openai("You have reached your specified spend limit", "billing_hard_limit_reached"), ErrorKind.account),
        (
            {
                "error": {
                    "code": 429,
                    "status": "RESOURCE_EXHAUSTED",
                    "message": "Quota exceeded",
                    "details": [
                        {
                            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                            "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
                        }
                    ],
                }
            },
            ErrorKind.account,
        ),
        (
            {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "per-minute", "details": []}},
            ErrorKind.transient,
        ),
    ],
)
def test_429_account_vs_transient(body: dict[str, object], kind: ErrorKind) -> None:
    assert classify_http_error(429, {}, body, provider="p").kind is kind


def test_context_and_content_policy_codes() -> None:
    body = _openai("This model's maximum context length is 8192", "context_length_exceeded")
    ctx = classify_http_error(400, {}, body, provider="p")
    assert ctx.kind is ErrorKind.context and not ctx.retryable
    anth = {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens"}}
    assert classify_http_error(400, {}, anth, provider="p").kind is ErrorKind.context
    policy = classify_http_error(400, {}, _openai("blocked", "content_policy_violation"), provider="p")
    assert policy.kind is ErrorKind.content_policy


@pytest.mark.parametrize(
    ("param", "kind"),
    [
        # The conversation's own text over its cap: too long for the model (trimming or a larger model may help).
        ("messages[1].content", ErrorKind.context),
        ("messages[0].content[1].text", ErrorKind.context),
        ("input[2].output", ErrorKind.context),
        ("instructions", ErrorKind.context),
        (None, ErrorKind.context),  # no param: read as before
        # Any other field over its cap is the request's own mistake: not a conversation too long.
        ("messages[1].tool_calls[0].id", ErrorKind.request),
        ("messages[2].tool_call_id", ErrorKind.request),
        ("input[3].call_id", ErrorKind.request),
        ("user", ErrorKind.request),
        ("stop", ErrorKind.request),
        ("metadata", ErrorKind.request),
        ("prompt_cache_key", ErrorKind.request),
    ],
)
def test_a_string_over_its_cap_is_a_context_error_only_in_the_conversations_text(
    param: str | None, kind: ErrorKind
) -> None:
    """OpenAI's ``string_above_max_length`` names the field: on a call id or ``user`` it is no context overflow (a
    served client was told its conversation was too long, a fallback on context errors moved on for nothing)."""
    body = {"error": {"message": f"Invalid '{param}': string too long. Expected a string with maximum length 40, "
                                 "but got a string with length 64 instead.",
                      "type": "invalid_request_error", "param": param, "code": "string_above_max_length"}}
    error = classify_http_error(400, {}, body, provider="openai")
    assert error.kind is kind and not error.retryable


def test_anthropic_and_gemini_bodies() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                  "request_id": "req_1"}
    e = classify_http_error(529, {}, overloaded, provider="anthropic")
    assert e.kind is ErrorKind.transient and e.request_id == "req_1" and "Overloaded" in str(e)
    nf = {"error": {"code": 404, "message": "models/x is not found", "status": "NOT_FOUND"}}
    assert classify_http_error(404, {}, nf, provider="gemini").kind is ErrorKind.account


def test_retry_after_sources() -> None:
    assert parse_retry_after({"retry-after-ms": "1500"}) == pytest.approx(1.5)
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=lambda: now) == pytest.approx(30, abs=1.0)
    # retry-after-ms wins over retry-after
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == pytest.approx(0.25)
    gemini = {"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]}}
    assert parse_retry_after({}, gemini) == 37.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    err = classify_http_error(429, {"retry-after": "12"}, b"{}", provider="p")
    assert err.retry_after == 12.0


def test_x_should_retry_both_ways() -> None:
    no = classify_http_error(503, {"x-should-retry": "false"}, b"", provider="p")
    assert no.kind is ErrorKind.transient and no.retryable is False
    yes = classify_http_error(400, {"x-should-retry": "true"}, b"", provider="p")
    assert yes.kind is ErrorKind.transient and yes.retryable is True


def test_in_band_stream_error_bodies() -> None:
    groq = {"error": {"message": "tool call validation failed", "type": "invalid_request_error",
                      "code": "tool_use_failed"}, "status_code": 400}
    assert classify_error_body(groq, provider="groq").kind is ErrorKind.request
    anth = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert classify_error_body(anth, provider="anthropic").kind is ErrorKind.transient
    openrouter = {"error": {"code": 400, "message": "Provider returned error"}}
    assert classify_error_body(openrouter, provider="openrouter").status == 400


def test_classify_exception() -> None:
    assert classify_exception(httpx.ConnectError("refused"), provider="p").kind is ErrorKind.transient
    assert isinstance(classify_exception(httpx.ReadTimeout("slow"), provider="p"), ProviderTimeout)
    unknown = classify_exception(ValueError("what"), provider="p")
    assert unknown.kind is ErrorKind.request and not unknown.retryable

    class Flaky(Exception):
        retryable = True

    inner = Flaky("x")
    outer = RuntimeError("wrapped")
    outer.__cause__ = inner
    assert classify_exception(outer, provider="p").retryable is True
    pe = ProviderError("x", provider="p", kind="transient")
    assert classify_exception(pe, provider="q") is pe


def test_gemini_per_minute_quota_wording_is_transient_and_odd_details_are_tolerated() -> None:
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                      "message": "You exceeded your current quota, please check your plan and billing details.",
                      "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": 7}]}}
    assert classify_http_error(429, {}, body, provider="gemini").kind is ErrorKind.transient
    openai_quota = _openai("You exceeded your current quota, please check your plan and billing details.",
                           "insufficient_quota", "insufficient_quota")
    assert classify_http_error(429, {}, openai_quota, provider="openai").kind is ErrorKind.account


@pytest.mark.parametrize("status", [400, 429])
def test_anthropics_api_usage_limit_is_the_accounts(status: int) -> None:
    """Anthropic's spend cap answers (HTTP 400, ``invalid_request_error``) "You have reached your specified API usage
    limits. You will regain access on ...": no retry or request change helps before that date — the account's, so a
    ``fallback_on={"account"}`` chain moves on.  It was a request error at 400 and transient (retried) at 429."""
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": (
        "You have reached your specified API usage limits. You will regain access on 2027-01-01 at 00:00 UTC.")}}
    err = classify_http_error(status, {}, body, provider="anthropic")
    assert (err.kind, err.retryable) == (ErrorKind.account, False)


@pytest.mark.parametrize(
    ("status", "code", "message", "kind"),
    [
        (400, "invalid_request_error", "messages.0.content: 'explain the API usage limits of this plan' is too long",
         ErrorKind.request),
        (503, "api_error", "overloaded; see our API usage limits page", ErrorKind.transient),
    ],
)
def test_a_message_that_only_mentions_usage_limits_is_not_the_accounts(
    status: int, code: str, message: str, kind: ErrorKind
) -> None:
    body = {"type": "error", "error": {"type": code, "message": message}}
    assert classify_http_error(status, {}, body, provider="anthropic").kind is kind
