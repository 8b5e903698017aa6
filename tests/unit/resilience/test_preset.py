"""resilient_chain: what it builds, in what order, with what defaults — and that it behaves as the stack it is."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import pytest

from agentactors import resilient_chain
from agentactors.errors import ProviderTimeout
from agentactors.messages import LLMRequest
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import (
    CircuitBreakerProvider,
    FallbackProvider,
    PoolProvider,
    RetryingProvider,
    TimeoutProvider,
    guarded,
    with_circuit_breaker,
)
from tests.support.resilience import REQ, http_error, recording

pytestmark = pytest.mark.anyio


def layers(provider: Any) -> list[type]:
    """The decorator types from ``provider`` down to the member it wraps."""
    out = []
    while hasattr(provider, "inner"):
        out.append(type(provider))
        provider = provider.inner
    return [*out, type(provider)]


def test_each_member_is_timeout_then_retry_then_breaker_and_the_members_a_fallback() -> None:
    a, b = ScriptedProvider([], name="a"), ScriptedProvider([], name="b")
    chain = resilient_chain(a, b)
    assert isinstance(chain, FallbackProvider)
    assert [m.inner.inner.inner for m in chain.members] == [a, b]  # in the order given
    for member in chain.members:
        assert layers(member) == [CircuitBreakerProvider, RetryingProvider, TimeoutProvider, ScriptedProvider]


def test_the_defaults() -> None:
    chain = resilient_chain(ScriptedProvider([], name="a"), ScriptedProvider([], name="b"))
    assert isinstance(chain, FallbackProvider)
    breaker = chain.members[0]
    retry, timeout = breaker.inner, breaker.inner.inner
    assert (timeout.attempt, timeout.first_event, timeout.idle) == (60.0, 20.0, None)
    assert (retry.max_attempts, retry.base_delay, retry.max_delay, retry.max_retry_after) == (3, 0.5, 8.0, 60.0)
    defaults = inspect.signature(with_circuit_breaker).parameters
    policy = breaker.policy
    for field in ("window", "min_calls", "failure_rate", "consecutive_failures", "open_duration"):
        assert getattr(policy, field) == defaults[field].default, field
    signature = inspect.signature(resilient_chain).parameters
    assert signature["attempt_timeout"].default == 60.0
    assert signature["first_event_timeout"].default == 20.0


def test_settings_reach_their_layer() -> None:
    chain = resilient_chain(
        ScriptedProvider([], name="a"),
        attempt_timeout=5.0,
        first_event_timeout=None,
        idle_timeout=2.0,
        max_attempts=5,
        retry={"base_delay": 0.1},
        breaker={"open_duration": 4.0, "consecutive_failures": 2},
    )
    assert isinstance(chain, CircuitBreakerProvider)  # one member: no fallback around it
    retry = chain.inner  # typed LLMProvider: the layers' classes, as layers() below checks them
    assert isinstance(retry, RetryingProvider) and isinstance(retry.inner, TimeoutProvider)
    timeout = retry.inner
    assert (timeout.attempt, timeout.first_event, timeout.idle) == (5.0, None, 2.0)
    assert (retry.max_attempts, retry.base_delay) == (5, 0.1)
    assert (chain.policy.open_duration, chain.policy.consecutive_failures) == (4.0, 2)
    untimed = guarded(ScriptedProvider([]), attempt_timeout=None, first_event_timeout=None)
    assert layers(untimed) == [CircuitBreakerProvider, RetryingProvider, ScriptedProvider]


def test_max_attempts_inside_retry_options_is_refused_naming_its_own_parameter() -> None:
    # It was "with_retry() got multiple values for keyword argument 'max_attempts'": the chain passes its own.
    with pytest.raises(ValueError, match="max_attempts=5, not inside retry="):
        resilient_chain(ScriptedProvider([], name="a"), retry={"max_attempts": 5})
    with pytest.raises(ValueError, match="not inside retry="):
        guarded(ScriptedProvider([]), retry={"max_attempts": 2, "base_delay": 0.1})


def test_a_list_is_a_pool_of_guarded_deployments() -> None:
    eu, us, other = (ScriptedProvider([], name=n) for n in ("eu", "us", "other"))
    chain = resilient_chain([eu, us], other, pool_strategy="round_robin", fallback_on={"transient", "context"})
    assert isinstance(chain, FallbackProvider)
    pool, rest = chain.members
    assert isinstance(pool, PoolProvider) and pool.strategy == "round_robin"
    for member in pool.members:
        assert layers(member) == [CircuitBreakerProvider, RetryingProvider, TimeoutProvider, ScriptedProvider]
    assert layers(rest)[0] is CircuitBreakerProvider
    with pytest.raises(ValueError):
        resilient_chain()
    with pytest.raises(ValueError):
        resilient_chain([])


@pytest.mark.virtual_time
async def test_a_hung_vendor_costs_one_bounded_attempt_then_the_fallback_serves() -> None:
    async def hang(request: LLMRequest) -> str:
        await anyio.sleep(3600)
        return "never"

    primary = ScriptedProvider(hang, name="primary")
    secondary = ScriptedProvider(["from the secondary"], name="secondary")
    chain = resilient_chain(primary, secondary, max_attempts=1)
    start = anyio.current_time()
    with recording() as rec:
        response = await chain.complete(REQ)
    assert response.content == "from the secondary"
    assert anyio.current_time() - start == pytest.approx(60.0)  # the default attempt timeout
    [moved] = rec.of_type("fallback.moved")
    assert isinstance(moved.error, ProviderTimeout)


@pytest.mark.virtual_time
async def test_it_retries_then_fails_over() -> None:
    primary = ScriptedProvider([http_error(503), http_error(503), http_error(503)], name="primary")
    chain = resilient_chain(primary, ScriptedProvider(["ok"], name="b"), retry={"jitter": (1.0, 1.0)})
    start = anyio.current_time()
    response = await chain.complete(REQ)
    assert response.content == "ok" and len(primary.requests) == 3
    assert anyio.current_time() - start == pytest.approx(0.5 + 1.0)
