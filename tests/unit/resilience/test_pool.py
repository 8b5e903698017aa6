"""with_pool: spreading, skipping open breakers, steering by rate-limit headers, failover, composition."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import anyio
import httpx
import pytest

from agentactors import OpenAIProvider, with_circuit_breaker, with_fallback, with_pool
from agentactors.errors import (
    AllProvidersFailedError,
    CircuitOpenError,
    ErrorKind,
    ProviderError,
    UnsupportedToolChoiceError,
)
from agentactors.messages import LLMRequest, LLMResponse, Message, StreamEnd, TextDelta
from agentactors.providers.http.ratelimits import Budget, RateLimitState
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience.pool import PoolProvider
from tests.support.resilience import FORCED, REQ, http_error, recording

# On virtual, autojumping clocks (tests/conftest.py): the sleeps below cost no real time, and the
# in-memory transport of the header-steering test opens no socket.
pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def member(name: str, answer: Any = None, **kw: Any) -> ScriptedProvider:
    return ScriptedProvider(answer if answer is not None else (lambda r: f"from {name}"), name=name, **kw)


class Limited(ScriptedProvider):
    """A scripted member that reports a vendor rate-limit state, as an HTTPProvider does from its headers."""

    def __init__(self, name: str, state: RateLimitState | None = None) -> None:
        super().__init__(lambda r: f"from {name}", name=name)
        self.rate_limit = state


def served(responses: list[LLMResponse]) -> list[str]:
    return [r.content.removeprefix("from ") for r in responses]


async def test_round_robin_takes_members_in_turn() -> None:
    pool = with_pool(member("a"), member("b"), member("c"), strategy="round_robin")
    assert served([await pool.complete(REQ) for _ in range(6)]) == ["a", "b", "c", "a", "b", "c"]
    assert pool.name == "pool(a, b, c)"


async def test_least_loaded_spreads_concurrent_calls_and_rotates_when_idle() -> None:
    gate = anyio.Event()
    counts: Counter[str] = Counter()

    def slow(name: str) -> Any:
        async def answer(request: LLMRequest) -> str:
            counts[name] += 1
            await gate.wait()
            return name

        return answer

    pool = with_pool(member("a", slow("a")), member("b", slow("b")), member("c", slow("c")))
    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(pool.complete, REQ)
            await anyio.sleep(1.0)  # virtual time: each call is in flight before the next is started
        assert pool.in_flight == [2, 2, 2]
        gate.set()
    assert counts == {"a": 2, "b": 2, "c": 2}
    assert pool.in_flight == [0, 0, 0]
    idle = with_pool(member("a"), member("b"))
    assert served([await idle.complete(REQ) for _ in range(4)]) == ["a", "b", "a", "b"]


async def test_weighted_gives_each_member_its_share_smoothly() -> None:
    pool = with_pool(member("a"), member("b"), strategy="weighted", weights=[3, 1])
    order = served([await pool.complete(REQ) for _ in range(12)])
    assert Counter(order) == {"a": 9, "b": 3}
    for i in range(0, 12, 4):  # not a burst of a's then b's: every window of four holds one b
        assert order[i : i + 4].count("b") == 1


async def test_a_member_whose_breaker_is_open_is_skipped_not_called() -> None:
    a_inner, b_inner = member("a"), member("b")
    a, b = with_circuit_breaker(a_inner), with_circuit_breaker(b_inner)
    a.force_open()
    pool = with_pool(a, b, strategy="round_robin")
    with recording() as rec:
        assert served([await pool.complete(REQ) for _ in range(4)]) == ["b"] * 4
    assert a_inner.requests == []  # never reached, not even to be refused
    assert [e.get("member") for e in rec.of_type("pool.skipped")] == ["a"] * 4
    assert rec.of_type("breaker.rejected") == []


async def test_a_failing_member_hands_the_call_on_and_its_breaker_keeps_it_out() -> None:
    clock = Clock()
    calls: list[str] = []

    def failing(request: LLMRequest) -> Any:
        calls.append("a")
        raise http_error(503, provider="a")

    a = with_circuit_breaker(member("a", failing), consecutive_failures=1, open_duration=10.0, clock=clock)
    b = member("b")
    pool = with_pool(a, b, strategy="round_robin", clock=clock)
    with recording() as rec:
        results = served([await pool.complete(REQ) for _ in range(4)])
    assert results == ["b"] * 4
    assert calls == ["a"]  # one failure opened a's breaker; after that a is skipped
    [moved] = rec.of_type("pool.moved")
    assert (moved.from_member, moved.to_member, moved.reason) == ("a", "b", ErrorKind.transient)


async def test_a_recovered_member_gets_its_share_back() -> None:
    clock = Clock()
    outcomes = iter([http_error(503, provider="a"), "from a", "from a", "from a"])

    def flaky(request: LLMRequest) -> Any:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    a = with_circuit_breaker(member("a", flaky), consecutive_failures=1, open_duration=5.0, clock=clock)
    pool = with_pool(a, member("b"), strategy="round_robin", clock=clock)
    assert served([await pool.complete(REQ) for _ in range(4)]) == ["b", "b", "b", "b"]
    clock.now = 5.0  # half-open: ranked with the healthy, its probe admitted in its turn
    assert served([await pool.complete(REQ) for _ in range(4)]) == ["a", "b", "a", "b"]


async def test_members_near_their_rate_limit_are_used_last() -> None:
    clock = Clock()
    low = RateLimitState((Budget("tokens", limit=100_000, remaining=2_000, reset=30.0),), observed=0.0)
    a, b = Limited("a", low), Limited("b", None)
    pool = with_pool(a, b, strategy="round_robin", clock=clock)
    assert served([await pool.complete(REQ) for _ in range(3)]) == ["b", "b", "b"]  # 2 % left < 10 %
    clock.now = 30.0  # a's token budget has reset since its headers said so
    assert served([await pool.complete(REQ) for _ in range(2)]) == ["b", "a"]
    # Told to wait beats near the limit: a blocked member goes after one with little room.
    clock.now = 40.0
    a.rate_limit = RateLimitState(retry_after_until=50.0, observed=40.0)
    b.rate_limit = RateLimitState((Budget("requests", limit=100, remaining=1),), observed=40.0)
    assert served([await pool.complete(REQ) for _ in range(2)]) == ["b", "b"]
    clock.now = 50.0
    assert served([await pool.complete(REQ)]) == ["a"]


async def test_header_steering_with_a_real_http_provider() -> None:
    body: dict[str, Any] = {"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}]}
    hits: Counter[str] = Counter()

    def vendor(region: str, remaining: int) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            hits[region] += 1
            reply = dict(body, choices=[dict(body["choices"][0], message={"role": "assistant", "content": region})])
            headers = {"x-ratelimit-limit-tokens": "10000", "x-ratelimit-remaining-tokens": str(remaining),
                       "x-ratelimit-reset-tokens": "1m"}
            return httpx.Response(200, headers=headers, content=json.dumps(reply).encode())

        return httpx.MockTransport(handle)

    eu = OpenAIProvider("m", api_key="sk-eu-0000", http_client=httpx.AsyncClient(transport=vendor("eu", 100)))
    us = OpenAIProvider("m", api_key="sk-us-0000", http_client=httpx.AsyncClient(transport=vendor("us", 9000)))
    pool = with_pool(with_circuit_breaker(eu), with_circuit_breaker(us), strategy="round_robin")
    answers = [(await pool.complete(REQ)).content for _ in range(6)]
    # eu answered once (its turn), said it had 1 % of its tokens left, and was not asked again.
    assert answers == ["eu", "us", "us", "us", "us", "us"]
    assert hits == {"eu": 1, "us": 5}
    await pool.aclose()


async def test_a_request_fault_is_not_handed_on() -> None:
    a, b = member("a", [http_error(400, provider="a")]), member("b")
    pool = with_pool(a, b, strategy="round_robin")
    with pytest.raises(ProviderError) as info:
        await pool.complete(REQ)
    assert info.value.kind is ErrorKind.request
    assert b.requests == []


async def test_all_failing_is_all_providers_failed_and_all_open_is_circuit_open() -> None:
    pool = with_pool(member("a", [http_error(503, provider="a")]), member("b", [http_error(529, provider="b")]))
    with pytest.raises(AllProvidersFailedError) as failed:
        await pool.complete(REQ)
    assert failed.value.kind is ErrorKind.transient and len(failed.value.exceptions) == 2
    clock = Clock()
    a = with_circuit_breaker(member("a", [http_error(503, provider="a")]), consecutive_failures=1,
                             open_duration=7.0, clock=clock)
    b = with_circuit_breaker(member("b", [http_error(503, provider="b")]), consecutive_failures=1,
                             open_duration=3.0, clock=clock)
    pool = with_pool(a, b, clock=clock)
    with pytest.raises(AllProvidersFailedError):
        await pool.complete(REQ)  # both fail once: both breakers open
    clock.now = 1.0
    with pytest.raises(CircuitOpenError) as refused:
        await pool.complete(REQ)
    assert refused.value.provider == "pool(a, b)"
    assert refused.value.retry_after == pytest.approx(2.0)  # the soonest probe: b's, 3 s after it opened


async def test_a_pool_inside_a_fallback_moves_on_when_every_member_is_open() -> None:
    a, b = with_circuit_breaker(member("a")), with_circuit_breaker(member("b"))
    a.force_open()
    b.force_open()
    chain = with_fallback(with_pool(a, b), member("c"))
    with recording() as rec:
        response = await chain.complete(REQ)
    assert response.content == "from c"
    [moved] = rec.of_type("fallback.moved")
    assert moved.reason == ErrorKind.circuit_open


async def test_each_member_calls_its_own_model() -> None:
    a = member("a", model="gpt-4o-eu")
    b = member("b", model="gpt-4o-us")
    pool = with_pool(a, b, strategy="round_robin")
    for _ in range(2):
        await pool.complete(LLMRequest([Message.user("x")], model="gpt-4o"))
    assert [r.model for r in a.requests + b.requests] == ["gpt-4o-eu", "gpt-4o-us"]
    assert pool.default_model == "gpt-4o-eu"


async def test_capabilities_are_the_and_of_the_members() -> None:
    capable, incapable = member("a"), member("b", carries_forced_tool_choice=False)
    pool = with_pool(capable, incapable)
    assert not pool.carries_forced_tool_choice and not pool.supports_forced_tool_choice(None)
    assert pool.carries_tools
    with pytest.raises(UnsupportedToolChoiceError):
        await pool.complete(FORCED)
    assert capable.requests == [] and incapable.requests == []  # refused before anything was sent
    assert with_pool(member("a"), member("b")).supports_forced_tool_choice(None)


async def test_streams_fail_over_before_the_first_event_and_count_while_open() -> None:
    a = member("a", [http_error(503, provider="a")])
    b = member("b", ["streamed from b"])
    pool = with_pool(a, b, strategy="round_robin")
    async with pool.stream(REQ) as events:
        first = await events.__anext__()
        assert isinstance(first, TextDelta)
        assert pool.in_flight == [0, 1]
        rest = [e async for e in events]
    assert isinstance(rest[-1], StreamEnd) and rest[-1].response.content == "streamed from b"
    assert pool.in_flight == [0, 0]


async def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="at least one"):
        with_pool()
    with pytest.raises(ValueError, match="strategy"):
        with_pool(member("a"), strategy="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="weights"):
        with_pool(member("a"), strategy="weighted")
    with pytest.raises(ValueError, match="one weight per member"):
        with_pool(member("a"), member("b"), weights=[1])
    with pytest.raises(ValueError, match="positive"):
        with_pool(member("a"), weights=[0])
    assert isinstance(with_pool(member("a")), PoolProvider)


async def test_closing_the_pool_closes_every_member_once() -> None:
    a, b = member("a"), member("b")
    await with_pool(a, b, a).aclose()
    assert a.closed and b.closed
