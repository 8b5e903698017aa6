"""with_circuit_breaker: window, ignored kinds, open durations, probes, keys, manual control, streams."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.errors import CircuitOpenError, ErrorKind, ProviderError, StreamInterruptedError
from agentactors.messages import LLMRequest, Message, TextDelta
from agentactors.providers.port import LLMProvider
from agentactors.providers.scripted import ScriptedProvider, StreamCut
from agentactors.resilience import CircuitState, with_circuit_breaker
from tests.support.resilience import REQ, http_error, recording

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def fail(breaker: Any, n: int = 1, request: LLMRequest = REQ) -> None:
    for _ in range(n):
        with pytest.raises(ProviderError):
            await breaker.complete(request)


def always(outcome: Any, **kw: Any) -> ScriptedProvider:
    return ScriptedProvider(lambda request: outcome, model="m", **kw)


async def test_old_outcomes_leave_the_rolling_window() -> None:
    clock = Clock()
    p = ScriptedProvider(lambda request: http_error(503) if request.messages[0].content == "F" else "ok", model="m")
    breaker = with_circuit_breaker(p, window=60, min_calls=4, consecutive_failures=None, clock=clock)
    bad = LLMRequest([Message.user("F")])
    await fail(breaker, 3, bad)
    assert breaker.stats_for().calls == 3
    clock.now = 61.0  # the failures' bucket has left the window
    assert breaker.stats_for().calls == 0
    await breaker.complete(REQ)
    await fail(breaker, 1, bad)
    await breaker.complete(REQ)
    await breaker.complete(REQ)
    stats = breaker.stats_for()
    assert (stats.calls, stats.failures, stats.state) == (4, 1, CircuitState.closed)
    # Within the window, the same three failures would have opened it (3/4 >= 0.5 at min_calls 4).
    await fail(breaker, 2, bad)
    assert breaker.state is CircuitState.open


async def test_the_rate_rule_needs_min_calls() -> None:
    breaker = with_circuit_breaker(always(http_error(503)), min_calls=10, consecutive_failures=None)
    await fail(breaker, 9)
    state = breaker.state  # a local: mypy would hold breaker.state closed past the failure below
    assert state is CircuitState.closed
    await fail(breaker, 1)
    assert breaker.state is CircuitState.open


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (http_error(400), "request"),
        (http_error(401), "account"),
        (http_error(404), "account"),
        (http_error(400, code="context_length_exceeded"), "context"),
        (http_error(400, code="content_policy_violation"), "content_policy"),
        (CircuitOpenError(provider="inner", retry_after=1.0), "circuit_open"),
        (ValueError("unknown"), "request"),
    ],
)
async def test_ignored_kinds_are_neither_success_nor_failure(error: Exception, kind: str) -> None:
    breaker = with_circuit_breaker(always(error), consecutive_failures=1, min_calls=1)
    with recording() as rec:
        await fail(breaker, 20)
    stats = breaker.stats_for()
    assert (stats.calls, stats.failures, stats.state) == (0, 0, CircuitState.closed)
    assert {e.kind for e in rec.of_type("breaker.ignored")} == {kind}
    assert len(rec.of_type("breaker.ignored")) == 20


async def test_an_ignored_error_does_not_reset_the_consecutive_count() -> None:
    outcomes = iter([http_error(503), http_error(503), http_error(400), http_error(503)])
    breaker = with_circuit_breaker(ScriptedProvider(lambda r: next(outcomes), model="m"), consecutive_failures=3)
    await fail(breaker, 4)
    assert breaker.state is CircuitState.open


async def test_a_success_resets_the_consecutive_count() -> None:
    outcomes = iter([http_error(503), http_error(503), "ok", http_error(503), http_error(503)])
    breaker = with_circuit_breaker(ScriptedProvider(lambda r: next(outcomes), model="m"), consecutive_failures=3)
    for _ in range(5):
        try:
            await breaker.complete(REQ)
        except ProviderError:
            pass
    assert breaker.state is CircuitState.closed
    assert breaker.stats_for().consecutive_failures == 2


async def test_a_429_retry_after_extends_the_open_duration_up_to_the_cap() -> None:
    breaker = with_circuit_breaker(always(http_error(429, {"retry-after": "120"})), consecutive_failures=1)
    await fail(breaker)
    assert breaker.stats_for().open_for == 120
    with pytest.raises(CircuitOpenError) as info:
        await breaker.complete(REQ)
    assert info.value.retry_after == pytest.approx(120)

    capped = with_circuit_breaker(always(http_error(429, {"retry-after": "3600"})), consecutive_failures=1)
    await fail(capped)
    assert capped.stats_for().open_for == 300

    short = with_circuit_breaker(always(http_error(429, {"retry-after": "2"})), consecutive_failures=1)
    await fail(short)
    assert short.stats_for().open_for == 30


async def test_a_successful_probe_resets_the_open_duration() -> None:
    outcomes = iter([http_error(503), http_error(503), "ok", http_error(503)])
    breaker = with_circuit_breaker(ScriptedProvider(lambda r: next(outcomes), model="m"), consecutive_failures=1)
    await fail(breaker)
    await anyio.sleep(30)
    await fail(breaker)  # failed probe: 60 s
    assert breaker.stats_for().open_for == 60
    await anyio.sleep(60)
    await breaker.complete(REQ)  # probe succeeds: closed
    await fail(breaker)
    assert breaker.stats_for().open_for == 30


async def test_half_open_successes_and_concurrent_probes() -> None:
    gate = anyio.Event()

    async def gated(request: LLMRequest) -> str:
        await gate.wait()
        return "ok"

    outcomes: list[Any] = [http_error(503), gated, gated, gated, "ok"]
    breaker = with_circuit_breaker(
        ScriptedProvider(outcomes, model="m"),
        consecutive_failures=1,
        half_open_max_calls=3,
        half_open_successes=4,
    )
    await fail(breaker)
    await anyio.sleep(30)
    results: list[str] = []
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(lambda: _append(breaker, results))
        await anyio.sleep(0.1)
        with pytest.raises(CircuitOpenError):
            await breaker.complete(REQ)  # a 4th concurrent probe is refused
        assert breaker.stats_for().probes_in_flight == 3
        gate.set()
    assert results == ["ok"] * 3
    state = breaker.state  # a local: mypy would hold breaker.state half-open past the call below
    assert state is CircuitState.half_open  # 3 of 4 successes
    await breaker.complete(REQ)
    assert breaker.state is CircuitState.closed


async def _append(breaker: Any, results: list[str]) -> None:
    results.append((await breaker.complete(REQ)).content)


async def test_one_bad_model_does_not_open_its_siblings() -> None:
    p = ScriptedProvider(lambda r: http_error(503) if r.model == "bad" else "ok", name="acme", model="good")
    breaker = with_circuit_breaker(p, consecutive_failures=2)
    bad = LLMRequest([Message.user("x")], model="bad")
    await fail(breaker, 2, bad)
    assert breaker.state_for("bad") is CircuitState.open
    assert breaker.state_for("good") is CircuitState.closed
    assert breaker.state is CircuitState.closed
    assert (await breaker.complete(REQ)).content == "ok"
    assert breaker.key_for("bad") == ("acme", "bad")


async def test_a_key_function_groups_models() -> None:
    p = ScriptedProvider(lambda r: http_error(503) if r.model == "bad" else "ok", name="acme", model="good")
    breaker = with_circuit_breaker(p, consecutive_failures=2, key=lambda provider, model: provider)
    await fail(breaker, 2, LLMRequest([Message.user("x")], model="bad"))
    assert breaker.state_for("good") is CircuitState.open
    with pytest.raises(CircuitOpenError):
        await breaker.complete(REQ)


async def test_force_open_disable_and_reset() -> None:
    p = always("ok")
    breaker = with_circuit_breaker(p, consecutive_failures=1)
    with recording() as rec:
        breaker.force_open()
        state = breaker.state  # locals: mypy would hold breaker.state to one check across the calls that move it
        assert state is CircuitState.forced_open
        with pytest.raises(CircuitOpenError) as info:
            await breaker.complete(REQ)
        assert info.value.retry_after is None
        assert p.calls == 0
        breaker.disable()
        state = breaker.state
        assert state is CircuitState.disabled
        assert breaker.stats_for().state is CircuitState.disabled
        breaker.reset()
        assert breaker.state is CircuitState.closed
    assert [(e.from_state, e.to_state) for e in rec.of_type("breaker.state_changed")] == [
        ("closed", "forced_open"),
        ("forced_open", "disabled"),
        ("disabled", "closed"),
    ]

    # Disabled: admits everything and counts nothing.
    failing = with_circuit_breaker(always(http_error(503)), consecutive_failures=1)
    failing.disable()
    await fail(failing, 5)
    assert failing.stats_for().calls == 0
    # Reset clears an open circuit.
    failing.reset()
    await fail(failing)
    state = failing.state  # a local, as above
    assert state is CircuitState.open
    failing.reset()
    assert failing.state is CircuitState.closed and failing.stats_for().calls == 0


async def test_rejections_are_sampled_once_per_second_with_counts() -> None:
    breaker = with_circuit_breaker(always(http_error(503)), consecutive_failures=1)
    await fail(breaker)
    with recording() as rec:
        for _ in range(10):
            with pytest.raises(CircuitOpenError):
                await breaker.complete(REQ)
            await anyio.sleep(0.25)
    # t = 0 (first), t = 1.0 (4 since), t = 2.0 (4 since); the last 1 is pending.
    assert [e.count for e in rec.of_type("breaker.rejected")] == [1, 4, 4]


async def test_a_late_outcome_from_before_the_circuit_opened_is_ignored() -> None:
    gate = anyio.Event()

    async def late(request: LLMRequest) -> str:
        await gate.wait()
        raise http_error(503)

    p = ScriptedProvider([late, http_error(503), http_error(503)], model="m")
    breaker = with_circuit_breaker(p, consecutive_failures=2)
    async with anyio.create_task_group() as tg:
        tg.start_soon(fail, breaker)
        await anyio.sleep(0.1)
        await fail(breaker, 2)
        assert breaker.state is CircuitState.open
        stats = breaker.stats_for()
        gate.set()
    assert breaker.stats_for() == stats  # the late failure belonged to the closed period


async def test_mid_stream_failures_are_not_counted_by_default() -> None:
    breaker = with_circuit_breaker(always(StreamCut("alpha beta", http_error(503))), consecutive_failures=1)
    for _ in range(3):
        with pytest.raises(StreamInterruptedError):
            async with breaker.stream(REQ) as events:
                async for _ in events:
                    pass
    stats = breaker.stats_for()
    assert (stats.calls, stats.failures, stats.state) == (3, 0, CircuitState.closed)


async def test_mid_stream_failures_count_when_asked() -> None:
    breaker = with_circuit_breaker(
        always(StreamCut("alpha beta", http_error(503))), consecutive_failures=1, count_mid_stream=True
    )
    with pytest.raises(StreamInterruptedError):
        async with breaker.stream(REQ) as events:
            async for _ in events:
                pass
    assert breaker.state is CircuitState.open


async def test_a_stream_failing_before_its_first_event_is_counted_and_a_clean_one_succeeds() -> None:
    p = ScriptedProvider([StreamCut("", http_error(503)), "alpha beta"], model="m")
    breaker = with_circuit_breaker(p, consecutive_failures=5, count_mid_stream=True)
    with pytest.raises(ProviderError):
        async with breaker.stream(REQ):
            pass
    async with breaker.stream(REQ) as events:
        text = "".join([e.text async for e in events if isinstance(e, TextDelta)])
    assert text == "alpha beta"
    stats = breaker.stats_for()
    assert (stats.calls, stats.failures) == (2, 1)


async def test_a_consumer_error_inside_a_stream_is_not_the_vendors_fault() -> None:
    breaker = with_circuit_breaker(always("alpha beta"), consecutive_failures=1, count_mid_stream=True)
    with recording() as rec:
        with pytest.raises(KeyError):
            async with breaker.stream(REQ) as events:
                async for _ in events:
                    raise KeyError("consumer bug")
    assert breaker.stats_for().calls == 0
    assert [e.kind for e in rec.of_type("breaker.ignored")] == ["consumer_error"]


async def test_a_refused_stream_costs_no_inner_call() -> None:
    p = always(http_error(503))
    breaker = with_circuit_breaker(p, consecutive_failures=1)
    await fail(breaker)
    with pytest.raises(CircuitOpenError):
        async with breaker.stream(REQ):
            pass
    assert p.calls == 1


async def test_the_breaker_is_an_llm_provider() -> None:
    p = ScriptedProvider(["x"], name="acme", model="acme-1", rejects_forced_tool_choice={"acme-1"})
    breaker = with_circuit_breaker(p)
    assert isinstance(breaker, LLMProvider)
    assert (breaker.name, breaker.default_model, breaker.carries_tools) == ("acme", "acme-1", True)
    assert breaker.supports_forced_tool_choice("acme-1") is False
    await breaker.aclose()
    assert p.closed


async def test_state_can_be_read_outside_an_event_loop() -> None:
    breaker = with_circuit_breaker(always(http_error(503)), consecutive_failures=1)
    await fail(breaker)
    state = await anyio.to_thread.run_sync(lambda: breaker.state)
    assert state is CircuitState.open


@pytest.mark.parametrize(
    "kwargs",
    [
        {"window": 0},
        {"min_calls": 0},
        {"failure_rate": 0},
        {"failure_rate": 1.5},
        {"consecutive_failures": 0},
        {"open_duration": -1},
        {"max_open_duration": 10},
        {"half_open_max_calls": 0},
        {"max_half_open_wait": 0},
    ],
)
async def test_invalid_settings_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        with_circuit_breaker(always("x"), **kwargs)


async def test_error_kind_of_circuit_open_error() -> None:
    breaker = with_circuit_breaker(always(http_error(503)), consecutive_failures=1)
    await fail(breaker)
    with pytest.raises(CircuitOpenError) as info:
        await breaker.complete(REQ)
    assert info.value.kind is ErrorKind.circuit_open
    assert info.value.provider == "scripted" and info.value.model == "m"
