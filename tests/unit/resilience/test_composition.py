"""The decorators compose in any order and each keeps its guarantees (both backends, virtual time)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, cast

import anyio
import pytest

from agentactors.errors import (
    AllProvidersFailedError,
    CircuitOpenError,
    ErrorKind,
    ProviderError,
    ProviderTimeout,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from agentactors.messages import TextDelta
from agentactors.providers.scripted import ScriptedProvider, StreamCut
from agentactors.resilience import (
    CircuitBreakerProvider,
    CircuitState,
    with_circuit_breaker,
    with_fallback,
    with_retry,
    with_timeout,
)
from tests.support.resilience import FORCED, REQ, CallLog, http_error, recording

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

Wrap = Callable[[Any], Any]
LAYERS: dict[str, Wrap] = {
    "retry": lambda p: with_retry(p),
    "breaker": lambda p: with_circuit_breaker(p, consecutive_failures=2),
    "timeout": lambda p: with_timeout(p, attempt=5),
}


def stack(order: tuple[str, ...], provider: Any) -> tuple[Any, list[CircuitBreakerProvider]]:
    """Wrap ``provider`` with the layers in ``order`` (outermost first); also return the breakers."""
    wrapped = provider
    breakers = []
    for name in reversed(order):
        wrapped = LAYERS[name](wrapped)
        if isinstance(wrapped, CircuitBreakerProvider):
            breakers.append(wrapped)
    return wrapped, breakers


ORDERS = list(itertools.permutations(LAYERS))


@pytest.mark.parametrize("order", ORDERS, ids=["∘".join(o) for o in ORDERS])
async def test_any_order_a_request_error_is_raised_once_untouched_and_uncounted(order: tuple[str, ...]) -> None:
    bad = http_error(422)
    p = ScriptedProvider([bad, "unused"], model="m")
    provider, breakers = stack(order, p)
    with recording() as rec:
        with pytest.raises(ProviderError) as info:
            await provider.complete(REQ)
    assert info.value is bad
    assert not hasattr(bad, "__notes__")
    assert p.calls == 1
    assert anyio.current_time() == 0.0
    assert all(b.stats_for("m").calls == 0 for b in breakers)
    assert rec.of_type("retry") == []


@pytest.mark.parametrize("order", ORDERS, ids=["∘".join(o) for o in ORDERS])
async def test_any_order_an_unsupported_forced_choice_never_reaches_the_vendor(order: tuple[str, ...]) -> None:
    p = ScriptedProvider(["unused"], model="m", rejects_forced_tool_choice={"m"})
    provider, breakers = stack(order, p)
    assert provider.supports_forced_tool_choice("m") is False
    assert provider.supports_forced_tool_choice("other") is True
    with pytest.raises(UnsupportedToolChoiceError):
        await provider.complete(FORCED)
    assert p.calls == 0 and p.remaining == 1
    assert all(b.stats_for("m").calls == 0 and b.state is CircuitState.closed for b in breakers)


@pytest.mark.parametrize("order", ORDERS, ids=["∘".join(o) for o in ORDERS])
async def test_any_order_transient_failures_never_exceed_max_attempts_and_recover(order: tuple[str, ...]) -> None:
    p = ScriptedProvider([http_error(503), "ok"], model="m")
    provider, _ = stack(order, p)
    assert (await provider.complete(REQ)).content == "ok"
    assert p.calls == 2


async def test_breaker_over_retry_sees_one_failure_per_exhausted_retry() -> None:
    p = ScriptedProvider(lambda request: http_error(503), model="m")
    breaker = with_circuit_breaker(with_retry(p), consecutive_failures=3)
    for expected_calls in (3, 6, 9):
        with pytest.raises(ProviderError):
            await breaker.complete(REQ)
        assert p.calls == expected_calls
    assert breaker.state is CircuitState.open
    assert breaker.stats_for().failures == 3
    with pytest.raises(CircuitOpenError):
        await breaker.complete(REQ)
    assert p.calls == 9


async def test_breaker_over_retry_counts_a_recovered_call_as_one_success() -> None:
    p = ScriptedProvider([http_error(503), http_error(503), "ok"], model="m")
    breaker = with_circuit_breaker(with_retry(p))
    assert (await breaker.complete(REQ)).content == "ok"
    stats = breaker.stats_for()
    assert (stats.calls, stats.failures) == (1, 0)


async def test_retry_over_breaker_counts_every_attempt_and_stops_when_it_opens() -> None:
    p = ScriptedProvider(lambda request: http_error(503), model="m")
    breaker = with_circuit_breaker(p, consecutive_failures=10)
    with pytest.raises(ProviderError):
        await with_retry(breaker, max_attempts=4).complete(REQ)
    assert breaker.stats_for().failures == 4
    # With a breaker that opens on the 2nd failure, the 3rd attempt is refused and ends the retry.
    p2 = ScriptedProvider(lambda request: http_error(503), model="m")
    with pytest.raises(CircuitOpenError):
        await with_retry(with_circuit_breaker(p2, consecutive_failures=2), max_attempts=4).complete(REQ)
    assert p2.calls == 2


async def test_timeout_outside_retry_bounds_all_attempts_together() -> None:
    log = CallLog()
    p = ScriptedProvider([log.item("a", http_error(503)) for _ in range(3)])
    with pytest.raises(ProviderTimeout):
        await with_timeout(with_retry(p, max_attempts=3, base_delay=4, jitter=(1.0, 1.0)), attempt=5).complete(REQ)
    assert log.times("a") == [0.0, 4.0]
    assert anyio.current_time() == 5.0


async def test_retry_over_timeout_gives_each_attempt_its_own_bound() -> None:
    async def hang(request: object) -> str:
        await anyio.sleep(100)
        return "never"

    p = ScriptedProvider([hang, hang, "third time"])
    provider = with_retry(with_timeout(p, attempt=2), jitter=(1.0, 1.0))
    assert (await provider.complete(REQ)).content == "third time"
    assert anyio.current_time() == 2 + 0.5 + 2 + 1.0


def recommended(a: Any, b: Any, **breaker: Any) -> Any:
    return with_fallback(
        with_circuit_breaker(with_retry(with_timeout(a, attempt=10)), **breaker),
        with_circuit_breaker(with_retry(with_timeout(b, attempt=10)), **breaker),
    )


async def test_fallback_breaker_retry_fails_over_after_retries_then_skips_the_open_member_at_once() -> None:
    a = ScriptedProvider(lambda request: http_error(503, provider="a"), name="a", model="ma")
    b = ScriptedProvider(lambda request: "from b", name="b", model="mb")
    chain = recommended(a, b, consecutive_failures=2)
    with recording() as rec:
        for _ in range(2):
            assert (await chain.complete(REQ)).provider == "b"
        assert a.calls == 6
        started = anyio.current_time()
        assert (await chain.complete(REQ)).provider == "b"
        assert anyio.current_time() == started  # no waiting on the open member
    assert a.calls == 6
    assert [e.reason for e in rec.of_type("fallback.moved")] == [
        ErrorKind.transient,
        ErrorKind.transient,
        ErrorKind.circuit_open,
    ]
    # b's requests carried b's own model.
    assert {r.model for r in b.requests} == {"mb"}


async def test_fallback_breaker_retry_does_not_move_retry_or_count_a_request_error() -> None:
    bad = http_error(400)
    a = ScriptedProvider([bad], name="a")
    b = ScriptedProvider(["from b"], name="b")
    chain = recommended(a, b)
    with pytest.raises(ProviderError) as info:
        await chain.complete(REQ)
    assert info.value is bad
    assert (a.calls, b.calls) == (1, 0)
    assert all(m.stats_for().calls == 0 for m in chain.members)


async def test_fallback_breaker_retry_all_failing_reports_every_member_in_order() -> None:
    a = ScriptedProvider(lambda request: http_error(503, provider="a"), name="a")
    b = ScriptedProvider(lambda request: http_error(529, provider="b"), name="b")
    with pytest.raises(AllProvidersFailedError) as info:
        await recommended(a, b).complete(REQ)
    errors = cast(tuple[ProviderError, ...], info.value.exceptions)  # what each member raised: http_error()s
    assert [e.provider for e in errors] == ["a", "b"]
    assert [e.status for e in errors] == [503, 529]
    assert (a.calls, b.calls) == (3, 3)
    # Each member's last error carries its retry notes.
    assert all(len(e.__notes__) == 3 for e in info.value.exceptions)


async def test_recommended_stack_streams_with_retry_and_failover_before_the_first_event() -> None:
    a = ScriptedProvider([StreamCut("", http_error(503))] * 3, name="a")
    b = ScriptedProvider([StreamCut("", http_error(502)), "alpha beta gamma"], name="b")
    async with recommended(a, b).stream(REQ) as events:
        text = "".join([e.text async for e in events if isinstance(e, TextDelta)])
    assert text == "alpha beta gamma"
    assert (a.calls, b.calls) == (3, 2)


async def test_recommended_stack_never_replays_a_started_stream() -> None:
    a = ScriptedProvider([StreamCut("alpha beta gamma", http_error(503)), "unused"], name="a")
    b = ScriptedProvider(["unused"], name="b")
    chain = recommended(a, b, count_mid_stream=True)
    with pytest.raises(StreamInterruptedError):
        async with chain.stream(REQ) as events:
            async for _ in events:
                pass
    assert (a.calls, b.calls) == (1, 0)
    # count_mid_stream: a's breaker counted the interrupted stream as a failure.
    assert chain.members[0].stats_for().failures == 1
