"""The scenarios of docs/resilience.md §6 (1-16), each on asyncio and trio, on virtual time.

Scenario 17 (the same scenario gives the same trace on both backends) is in
test_resilience_cross_backend.py.
"""

from __future__ import annotations

import random

import anyio
import httpx
import pytest

from agentactors.errors import (
    AllProvidersFailedError,
    CircuitOpenError,
    ErrorKind,
    ProviderError,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from agentactors.messages import StreamEnd, TextDelta
from agentactors.providers.scripted import ScriptedProvider, StreamCut
from agentactors.resilience import CircuitState, with_circuit_breaker, with_fallback, with_retry
from tests.support.resilience import FORCED, REQ, CallLog, Counting, http_error, recording

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def fail_then(n: int, error: Exception, answer: str = "ok") -> list[object]:
    return [*([error] * n), answer]


# -- 1. a forced tool choice the model rejects ------------------------------------------------------


async def test_s01_unsupported_tool_choice_is_raised_before_sending_and_touches_nothing() -> None:
    def rejecting() -> ScriptedProvider:
        return ScriptedProvider(["never"], name="a", model="m-no-force", rejects_forced_tool_choice={"m-no-force"})

    # with_retry: one call, no wait, no event.
    inner = Counting(rejecting())
    with recording() as rec:
        with pytest.raises(UnsupportedToolChoiceError):
            await with_retry(inner).complete(FORCED)
    assert inner.calls == 1
    assert inner.inner.calls == 0  # nothing was "sent"
    assert anyio.current_time() == 0.0
    assert rec.of_type("retry") == []

    # with_fallback: the other side is not called.
    other = ScriptedProvider(["from b"], name="b")
    with pytest.raises(UnsupportedToolChoiceError):
        await with_fallback(rejecting(), other).complete(FORCED)
    assert other.calls == 0

    # The breaker's counters are unchanged.
    breaker = with_circuit_breaker(rejecting())
    before = breaker.stats_for("m-no-force")
    with pytest.raises(UnsupportedToolChoiceError):
        await breaker.complete(FORCED)
    assert breaker.stats_for("m-no-force") == before
    assert before.calls == 0 and before.state is CircuitState.closed


async def test_s01_in_half_open_the_permit_is_released_and_the_next_call_is_the_probe() -> None:
    inner = ScriptedProvider(
        [*[http_error(503)] * 5, "probe answer"],
        name="a",
        model="m",
        rejects_forced_tool_choice={"m"},
    )
    breaker = with_circuit_breaker(inner, consecutive_failures=5)
    for _ in range(5):
        with pytest.raises(ProviderError):
            await breaker.complete(REQ)
    opened = breaker.state  # locals where the state moves on: mypy holds breaker.state to its last check across awaits
    assert opened is CircuitState.open
    await anyio.sleep(30)
    assert breaker.state is CircuitState.half_open
    with recording() as rec:
        with pytest.raises(UnsupportedToolChoiceError):
            await breaker.complete(FORCED)
        assert breaker.state is CircuitState.half_open
        assert [e.kind for e in rec.of_type("breaker.ignored")] == ["request"]
        # The permit went back: this call is admitted as the probe and closes the circuit.
        assert (await breaker.complete(REQ)).content == "probe answer"
    closed: CircuitState = breaker.state
    assert closed is CircuitState.closed


# -- 2. backoff ------------------------------------------------------------------------------------


async def test_s02_503_503_200_three_calls_with_jittered_backoff() -> None:
    log = CallLog()
    p = ScriptedProvider([log.item("a", http_error(503)), log.item("a", http_error(503)), log.item("a", "done")])
    response = await with_retry(p).complete(REQ)
    assert response.content == "done"
    t0, t1, t2 = log.times("a")
    assert t0 == 0.0
    assert 0.375 <= t1 - t0 <= 0.5
    assert 0.75 <= t2 - t1 <= 1.0


# -- 3. Retry-After --------------------------------------------------------------------------------


async def test_s03_retry_after_ms_is_waited_exactly() -> None:
    log = CallLog()
    p = ScriptedProvider([log.item("a", http_error(429, {"retry-after-ms": "1500"})), log.item("a", "ok")])
    assert (await with_retry(p).complete(REQ)).content == "ok"
    assert log.times("a") == [0.0, 1.5]


async def test_s03_retry_after_beyond_the_cap_is_raised_at_once() -> None:
    p = ScriptedProvider([http_error(429, {"retry-after": "300"}), "unused"])
    with recording() as rec:
        with pytest.raises(ProviderError) as info:
            await with_retry(p, max_retry_after=60).complete(REQ)
    assert info.value.status == 429 and info.value.retry_after == 300
    assert p.calls == 1
    assert anyio.current_time() == 0.0
    [exhausted] = rec.of_type("retry.exhausted")
    assert exhausted.attempts == 1 and "max_retry_after" in exhausted.reason


# -- 4. x-should-retry -----------------------------------------------------------------------------


async def test_s04_should_retry_false_on_503_is_one_call() -> None:
    p = ScriptedProvider([http_error(503, {"x-should-retry": "false"}), "unused"])
    with pytest.raises(ProviderError) as info:
        await with_retry(p).complete(REQ)
    assert info.value.kind is ErrorKind.transient and info.value.retryable is False
    assert p.calls == 1


async def test_s04_should_retry_true_on_400_is_transient_retried_counted_and_moved() -> None:
    def forced_400() -> ProviderError:
        return http_error(400, {"x-should-retry": "true"})

    assert forced_400().kind is ErrorKind.transient
    p = ScriptedProvider([forced_400(), "ok"])
    assert (await with_retry(p).complete(REQ)).content == "ok"
    assert p.calls == 2

    breaker = with_circuit_breaker(ScriptedProvider([forced_400()], model="m"))
    with pytest.raises(ProviderError):
        await breaker.complete(REQ)
    stats = breaker.stats_for("m")
    assert (stats.calls, stats.failures) == (1, 1)

    b = ScriptedProvider(["from b"], name="b")
    with recording() as rec:
        response = await with_fallback(ScriptedProvider([forced_400()], name="a"), b).complete(REQ)
    assert response.content == "from b" and response.provider == "b"
    assert [e.reason for e in rec.of_type("fallback.moved")] == [ErrorKind.transient]


# -- 5. the status matrix --------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_s05_request_and_account_statuses_are_called_once(status: int) -> None:
    p = ScriptedProvider([http_error(status), "unused"])
    with pytest.raises(ProviderError) as info:
        await with_retry(p).complete(REQ)
    assert info.value.status == status
    assert p.calls == 1


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503, 529])
async def test_s05_transient_statuses_use_every_attempt(status: int) -> None:
    p = ScriptedProvider([http_error(status)] * 4)
    with pytest.raises(ProviderError) as info:
        await with_retry(p, max_attempts=4).complete(REQ)
    assert info.value.status == status
    assert p.calls == 4


async def test_s05_connect_errors_use_every_attempt() -> None:
    p = ScriptedProvider([httpx.ConnectError("connection refused")] * 3)
    with pytest.raises(ProviderError) as info:
        await with_retry(p).complete(REQ)
    assert info.value.kind is ErrorKind.transient
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert p.calls == 3


# -- 6. exhaustion ---------------------------------------------------------------------------------


async def test_s06_exhaustion_reraises_the_last_error_unwrapped_with_a_note_per_attempt() -> None:
    errors = [http_error(503), http_error(502), http_error(529)]
    p = ScriptedProvider(list(errors))
    with recording() as rec:
        with pytest.raises(ProviderError) as info:
            await with_retry(p).complete(REQ)
    assert info.value is errors[-1]
    notes = info.value.__notes__
    assert len(notes) == 3
    assert "transient HTTP 503" in notes[0] and "waited" in notes[0]
    assert "transient HTTP 502" in notes[1] and "waited" in notes[1]
    assert "transient HTTP 529" in notes[2] and "3 attempts" in notes[2]
    [exhausted] = rec.of_type("retry.exhausted")
    assert exhausted.attempts == 3 and exhausted.error is errors[-1]
    assert [e.attempt for e in rec.of_type("retry.scheduled")] == [1, 2]


# -- 7. deadline -----------------------------------------------------------------------------------


async def test_s07_a_wait_that_would_cross_the_deadline_is_not_started() -> None:
    log = CallLog()
    p = ScriptedProvider([log.item("a", http_error(503, {"retry-after": "8"})) for _ in range(3)])
    with pytest.raises(ProviderError) as info:
        await with_retry(p, deadline=10).complete(REQ)
    assert log.times("a") == [0.0, 8.0]
    assert anyio.current_time() == 8.0
    assert "deadline" in info.value.__notes__[-1]


# -- 8. cancellation during a backoff --------------------------------------------------------------


async def test_s08_cancelled_during_backoff_no_further_attempt_breaker_unchanged() -> None:
    p = ScriptedProvider([http_error(503), "never reached"])
    breaker = with_circuit_breaker(with_retry(p), consecutive_failures=1, min_calls=1)
    with recording() as rec:
        with anyio.move_on_after(0.2) as scope:
            await breaker.complete(REQ)
        assert scope.cancelled_caught
        await anyio.sleep(5)  # long past the backoff: nothing else happens
    assert p.calls == 1
    stats = breaker.stats_for()
    assert stats.state is CircuitState.closed
    assert (stats.calls, stats.failures, stats.consecutive_failures) == (0, 0, 0)
    assert [e.kind for e in rec.of_type("breaker.ignored")] == ["cancelled"]
    assert rec.of_type("retry.exhausted") == []


# -- 9. the trip rules -----------------------------------------------------------------------------


async def drive(breaker: object, outcomes: str) -> list[CircuitState]:
    """Run one call per outcome letter (F = 503, S = success); the state after each."""
    states = []
    for letter in outcomes:
        try:
            await breaker.complete(REQ)  # type: ignore[attr-defined]
        except ProviderError:
            assert letter == "F"
        states.append(breaker.state)  # type: ignore[attr-defined]
    return states


def script_for(outcomes: str) -> ScriptedProvider:
    return ScriptedProvider([http_error(503) if c == "F" else "ok" for c in outcomes], model="m")


async def test_s09_alternating_failures_open_on_the_rate_at_the_tenth_call() -> None:
    outcomes = "FS" * 5
    breaker = with_circuit_breaker(script_for(outcomes))
    with recording() as rec:
        states = await drive(breaker, outcomes)
    assert states[:9] == [CircuitState.closed] * 9
    assert states[9] is CircuitState.open
    [change] = rec.of_type("breaker.state_changed")
    assert (change.from_state, change.to_state, change.reason) == ("closed", "open", "failure_rate")


async def test_s09_four_failures_six_successes_stay_closed() -> None:
    outcomes = "FFFFSSSSSS"
    breaker = with_circuit_breaker(script_for(outcomes))
    assert (await drive(breaker, outcomes))[-1] is CircuitState.closed
    stats = breaker.stats_for()
    assert (stats.calls, stats.failures) == (10, 4)


async def test_s09_five_consecutive_failures_below_min_calls_open() -> None:
    outcomes = "FFFFF"
    breaker = with_circuit_breaker(script_for(outcomes))
    states = await drive(breaker, outcomes)
    assert states == [CircuitState.closed] * 4 + [CircuitState.open]
    assert breaker.stats_for().calls == 5  # below min_calls=10: the consecutive rule tripped it


# -- 10. open: rejection, then exactly one probe -----------------------------------------------------


async def test_s10_open_rejects_cheaply_then_admits_exactly_one_probe() -> None:
    release = anyio.Event()

    async def slow_probe(request: object) -> str:
        await release.wait()
        return "probe ok"

    inner = ScriptedProvider([*[http_error(503)] * 5, slow_probe], model="m")
    breaker = with_circuit_breaker(inner)
    for _ in range(5):
        with pytest.raises(ProviderError):
            await breaker.complete(REQ)
    opened = breaker.state  # a local: mypy would hold breaker.state open to the end, across the awaits below
    assert opened is CircuitState.open
    await anyio.sleep(12)
    with pytest.raises(CircuitOpenError) as info:
        await breaker.complete(REQ)
    assert info.value.retry_after == pytest.approx(18)
    assert info.value.kind is ErrorKind.circuit_open and info.value.retryable is False
    assert isinstance(info.value.last_error, ProviderError) and info.value.last_error.status == 503
    assert inner.calls == 5

    await anyio.sleep(18)  # exactly open_duration after opening
    admitted: list[str] = []
    rejected: list[CircuitOpenError] = []

    async def one_call() -> None:
        try:
            admitted.append((await breaker.complete(REQ)).content)
        except CircuitOpenError as exc:
            rejected.append(exc)

    with recording() as rec:
        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(one_call)
            await anyio.sleep(1)
            assert len(rejected) == 49
            release.set()
    assert admitted == ["probe ok"]
    assert inner.calls == 6
    assert breaker.state is CircuitState.closed
    # Sampled: the first rejection is reported at once; the other 48 in one event when the state changes.
    sampled = rec.of_type("breaker.rejected")
    assert [e.count for e in sampled] == [1, 48]


# -- 11. open-duration doubling and hung probes ------------------------------------------------------


async def test_s11_failed_probes_double_the_open_duration_up_to_the_cap() -> None:
    inner = ScriptedProvider(lambda request: http_error(503), model="m")
    breaker = with_circuit_breaker(inner)
    for _ in range(5):
        with pytest.raises(ProviderError):
            await breaker.complete(REQ)
    durations = [breaker.stats_for().open_for]
    for _ in range(5):
        wait = durations[-1]
        assert wait is not None  # open
        await anyio.sleep(wait)
        with pytest.raises(ProviderError) as info:
            await breaker.complete(REQ)  # the probe fails
        assert not isinstance(info.value, CircuitOpenError)
        durations.append(breaker.stats_for().open_for)
    assert durations == [30, 60, 120, 240, 300, 300]


async def test_s11_a_hung_probe_frees_its_permit_after_max_half_open_wait() -> None:
    async def hangs(request: object) -> str:
        await anyio.sleep(1000)
        return "too late"

    inner = ScriptedProvider([*[http_error(503)] * 5, hangs, "second probe"], model="m")
    breaker = with_circuit_breaker(inner)
    for _ in range(5):
        with pytest.raises(ProviderError):
            await breaker.complete(REQ)
    await anyio.sleep(30)
    results: list[str] = []
    async with anyio.create_task_group() as tg:

        async def first_probe() -> None:
            results.append((await breaker.complete(REQ)).content)

        tg.start_soon(first_probe)
        await anyio.sleep(59)
        with pytest.raises(CircuitOpenError) as info:
            await breaker.complete(REQ)
        assert info.value.retry_after == pytest.approx(1)
        await anyio.sleep(1)  # max_half_open_wait reached: the hung probe's permit is free
        results.append((await breaker.complete(REQ)).content)
        assert breaker.state is CircuitState.closed
    # The hung probe answered long after its permit was freed: ignored, the circuit stays as it was.
    assert results == ["second probe", "too late"]
    assert breaker.state is CircuitState.closed
    assert breaker.stats_for().calls == 0


# -- 12. retry over an opening breaker ---------------------------------------------------------------


async def test_s12_retry_stops_on_circuit_open_without_spinning() -> None:
    inner = ScriptedProvider(lambda request: http_error(503), model="m")
    stack = with_retry(with_circuit_breaker(inner, consecutive_failures=2), max_attempts=10)
    with recording() as rec:
        with pytest.raises(CircuitOpenError):
            await stack.complete(REQ)
    assert inner.calls == 2
    assert len(rec.of_type("retry.scheduled")) == 2
    assert rec.of_type("retry.exhausted") == []  # circuit_open is not retryable: nothing was exhausted
    assert anyio.current_time() <= 0.5 + 1.0


# -- 13. fallback past an open breaker ---------------------------------------------------------------


async def test_s13_fallback_with_the_primary_breaker_open_goes_straight_to_the_secondary() -> None:
    primary = ScriptedProvider(lambda request: http_error(503), name="a", model="m")
    guarded = with_circuit_breaker(primary, consecutive_failures=1)
    with pytest.raises(ProviderError):
        await guarded.complete(REQ)
    assert guarded.state is CircuitState.open
    calls_before = primary.calls
    secondary = ScriptedProvider(["from b"], name="b")
    with recording() as rec:
        response = await with_fallback(guarded, secondary).complete(REQ)
    assert response.content == "from b" and response.provider == "b"
    assert primary.calls == calls_before
    [moved] = rec.of_type("fallback.moved")
    assert (moved.from_member, moved.to_member, moved.reason) == ("a", "b", ErrorKind.circuit_open)
    assert isinstance(moved.error, CircuitOpenError)


# -- 14. everything fails ----------------------------------------------------------------------------


async def test_s14_all_fail_is_both_a_provider_error_and_an_exception_group_in_order() -> None:
    errors = [http_error(503, provider="a"), http_error(529, provider="b"), http_error(500, provider="c")]
    members = [ScriptedProvider([e], name=n) for e, n in zip(errors, "abc", strict=True)]
    chain = with_fallback(*members)
    with recording() as rec:
        with pytest.raises(ProviderError) as info:
            await chain.complete(REQ)
    assert isinstance(info.value, AllProvidersFailedError)
    assert list(info.value.exceptions) == errors
    [exhausted] = rec.of_type("fallback.exhausted")
    assert list(exhausted.errors) == errors

    members = [ScriptedProvider([e], name=n) for e, n in zip(errors, "abc", strict=True)]
    caught: list[Exception] = []
    try:
        await with_fallback(*members).complete(REQ)
    except* ProviderError as group:
        caught.extend(group.exceptions)
    assert caught == errors


# -- 15. account and content-policy errors are not routed by default ---------------------------------


async def test_s15_account_errors_move_only_when_opted_in() -> None:
    b = ScriptedProvider(["from b"], name="b")
    with pytest.raises(ProviderError) as info:
        await with_fallback(ScriptedProvider([http_error(401)], name="a"), b).complete(REQ)
    assert info.value.status == 401 and info.value.kind is ErrorKind.account
    assert b.calls == 0

    b = ScriptedProvider(["from b"], name="b")
    chain = with_fallback(ScriptedProvider([http_error(401)], name="a"), b, fallback_on={"transient", "account"})
    assert (await chain.complete(REQ)).provider == "b"
    assert b.calls == 1


async def test_s15_a_content_policy_refusal_is_not_routed_by_default() -> None:
    refusal = http_error(400, code="content_policy_violation")
    assert refusal.kind is ErrorKind.content_policy
    b = ScriptedProvider(["from b"], name="b")
    with pytest.raises(ProviderError) as info:
        await with_fallback(ScriptedProvider([refusal], name="a"), b).complete(REQ)
    assert info.value is refusal
    assert b.calls == 0

    chain = with_fallback(
        ScriptedProvider([http_error(400, code="content_policy_violation")], name="a"),
        b,
        fallback_on=[ErrorKind.transient, ErrorKind.content_policy],
    )
    assert (await chain.complete(REQ)).content == "from b"


# -- 16. streams -----------------------------------------------------------------------------------


async def collect(provider: object) -> list[object]:
    async with provider.stream(REQ) as events:  # type: ignore[attr-defined]
        return [e async for e in events]


async def test_s16_a_stream_failing_before_its_first_event_is_retried_cleanly() -> None:
    clean = await collect(ScriptedProvider(["one two three"]))
    p = ScriptedProvider([StreamCut("", http_error(503)), "one two three"])
    events = await collect(with_retry(p))
    assert events == clean
    assert sum(isinstance(e, StreamEnd) for e in events) == 1
    assert p.calls == 2


async def test_s16_a_stream_failing_before_its_first_event_fails_over_cleanly() -> None:
    a = ScriptedProvider([StreamCut("", http_error(503))], name="a")
    b = ScriptedProvider(["one two three"], name="b")
    events = await collect(with_fallback(a, b))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "one two three"
    end = events[-1]
    assert isinstance(end, StreamEnd) and end.response.provider == "b"


async def test_s16_a_stream_failing_after_three_events_is_interrupted_never_replayed() -> None:
    a = ScriptedProvider([StreamCut("one two three", http_error(503)), "replayed?"], name="a")
    b = ScriptedProvider(["from b"], name="b")
    chain = with_fallback(with_circuit_breaker(with_retry(a)), b)
    seen: list[object] = []
    with recording() as rec:
        with pytest.raises(StreamInterruptedError) as info:
            async with chain.stream(REQ) as events:
                async for event in events:
                    seen.append(event)
    assert [e.text for e in seen if isinstance(e, TextDelta)] == ["one ", "two ", "three"]
    assert len(seen) == 3
    assert info.value.partial_text == "one two three"
    assert info.value.retryable is False
    assert a.calls == 1 and b.calls == 0
    assert rec.of_type("retry") == [] and rec.of_type("fallback") == []


async def test_s16_jitter_uses_the_injected_rng() -> None:
    # Same seed, same waits: what makes scenario 17 reproducible.
    waits = []
    for _ in range(2):
        log = CallLog()
        p = ScriptedProvider([log.item("a", http_error(503)), log.item("a", "ok")])
        start = anyio.current_time()
        await with_retry(p, rng=random.Random(7)).complete(REQ)
        waits.append(log.times("a")[1] - start)
    assert waits[0] == waits[1]
