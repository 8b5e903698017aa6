"""Rate-limit headers → RateLimitState, and HTTPProvider surfacing the last one it saw (httpx.MockTransport)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from agentactors import AnthropicProvider, LLMRequest, Message, OpenAIProvider, ProviderError
from agentactors.providers.http.ratelimits import Budget, RateLimitState, parse_duration, read_rate_limits

OPENAI_HEADERS = {
    "x-ratelimit-limit-requests": "10000",
    "x-ratelimit-remaining-requests": "9000",
    "x-ratelimit-reset-requests": "6m0s",
    "x-ratelimit-limit-tokens": "1000000",
    "x-ratelimit-remaining-tokens": "50000",
    "x-ratelimit-reset-tokens": "2.5s",
    "x-request-id": "req_1",
    "content-type": "application/json",
}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("2m59.56s", 179.56), ("1h2m3s", 3723.0), ("7.66", 7.66),
     ("soon", None), ("", None), ("5x", None), ("-1", None)],
)
def test_durations(text: str, seconds: float | None) -> None:
    got = parse_duration(text)
    assert got == (pytest.approx(seconds) if seconds is not None else None)


def test_openai_headers() -> None:
    state = read_rate_limits(httpx.Headers(OPENAI_HEADERS), now=100.0)
    assert state is not None and state.observed == 100.0
    budgets = {b.name: b for b in state.budgets}
    assert budgets["requests"] == Budget("requests", 10000, 9000, 460.0)
    assert budgets["tokens"] == Budget("tokens", 1000000, 50000, 102.5)
    assert state.headroom(100.0) == pytest.approx(0.05)  # the tightest: tokens
    assert state.headroom(103.0) == pytest.approx(0.9)  # the token budget has reset since: only requests count
    assert not state.blocked(100.0)


def test_anthropic_headers_with_rfc3339_resets() -> None:
    reset = (datetime.now(UTC) + timedelta(seconds=30)).isoformat().replace("+00:00", "Z")
    headers = httpx.Headers({
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": reset,
        "anthropic-ratelimit-input-tokens-limit": "40000",
        "anthropic-ratelimit-input-tokens-remaining": "39000",
        "anthropic-ratelimit-output-tokens-limit": "8000",
        "anthropic-ratelimit-output-tokens-remaining": "8000",
    })
    state = read_rate_limits(headers, now=0.0)
    assert state is not None
    names = {b.name for b in state.budgets}
    assert names == {"requests", "input_tokens", "output_tokens"}
    requests = next(b for b in state.budgets if b.name == "requests")
    assert requests.reset == pytest.approx(30.0, abs=2.0)
    assert state.blocked(1.0)  # no request left until the reset
    assert not state.blocked(40.0)


def test_retry_after_blocks_until_it_expires() -> None:
    state = read_rate_limits([(b"Retry-After", b"7"), (b"server", b"x")], now=10.0)
    assert state == RateLimitState((), retry_after_until=17.0, observed=10.0)
    assert state.blocked(16.9) and not state.blocked(17.0)
    ms = read_rate_limits([(b"retry-after-ms", b"1500"), (b"retry-after", b"9")], now=0.0)
    assert ms is not None and ms.retry_after_until == pytest.approx(1.5)


@pytest.mark.parametrize("value", [b"inf", b"-inf", b"1e400", b"nan", b"1e309"])
def test_a_count_too_large_for_an_int_is_ignored_not_raised(value: bytes) -> None:
    """A proxy's ``inf`` (or a number past float range) is not a count: read as unsaid, never an OverflowError —
    raised here, it failed every call of the provider with an error that is not a ProviderError."""
    state = read_rate_limits(
        [
            (b"x-ratelimit-limit-requests", value),
            (b"x-ratelimit-remaining-requests", value),
            (b"x-ratelimit-reset-requests", b"1s"),
            (b"retry-after-ms", value),
        ],
        now=0.0,
    )
    assert state == RateLimitState((Budget("requests", None, None, 1.0),), observed=0.0)


@pytest.mark.anyio
async def test_a_response_with_an_infinite_count_is_still_answered() -> None:
    headers = {**OPENAI_HEADERS, "x-ratelimit-remaining-requests": "inf"}
    client = httpx.AsyncClient(
        transport=httpx.MockTransport(lambda r: httpx.Response(200, headers=headers, content=_openai_reply(r).content))
    )
    provider = OpenAIProvider("m", api_key="sk-test-ratelimits-0000", http_client=client)
    assert (await provider.complete(LLMRequest([Message.user("hi")]))).content == "hi"
    state = provider.rate_limit
    assert state is not None and next(b for b in state.budgets if b.name == "requests").remaining is None
    await client.aclose()


def test_no_rate_limit_headers_no_state() -> None:
    assert read_rate_limits(httpx.Headers({"content-type": "application/json", "x-request-id": "r"})) is None


def _openai_reply(request: httpx.Request) -> httpx.Response:
    body = {"id": "c1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    return httpx.Response(200, headers=OPENAI_HEADERS, content=json.dumps(body).encode())


@pytest.mark.anyio
async def test_http_provider_surfaces_the_last_rate_limit_state_errors_included() -> None:
    replies: Iterator[Callable[[httpx.Request], httpx.Response]] = iter([
        _openai_reply,
        lambda r: httpx.Response(429, headers={"retry-after": "3"}, json={"error": {"message": "slow down"}}),
        lambda r: httpx.Response(200, json=json.loads(_openai_reply(r).content)),  # no headers: state kept
    ])
    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda r: next(replies)(r)))
    provider = OpenAIProvider("m", api_key="sk-test-ratelimits-0000", http_client=client)
    before = provider.rate_limit  # a local: mypy would hold provider.rate_limit None past the calls below
    assert before is None
    request = LLMRequest([Message.user("hi")])
    await provider.complete(request)
    first = provider.rate_limit
    assert first is not None and first.headroom() == pytest.approx(0.05)
    with pytest.raises(ProviderError):
        await provider.complete(request)
    told = provider.rate_limit
    assert told is not None and told.blocked()
    await provider.complete(request)
    assert provider.rate_limit is told
    await client.aclose()


@pytest.mark.anyio
async def test_a_stream_surfaces_it_too() -> None:
    sse = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","type":"message","role":'
        b'"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":0}}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        b'"usage":{"output_tokens":1}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    headers = {"content-type": "text/event-stream", "anthropic-ratelimit-tokens-limit": "100",
               "anthropic-ratelimit-tokens-remaining": "5"}
    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(200, headers=headers,
                                                                                     content=sse)))
    provider = AnthropicProvider("c", api_key="sk-ant-test-ratelimits-0000", http_client=client)
    async with provider.stream(LLMRequest([Message.user("hi")])) as events:
        [e async for e in events]
    state = provider.rate_limit
    assert state is not None and state.headroom() == pytest.approx(0.05)
    await client.aclose()
