"""Property tests (hypothesis): breaker probes and ignored errors, and with_retry's attempt bound."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors.errors import ProviderError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import CircuitState, with_circuit_breaker, with_retry
from agentactors.resilience._circuit import BreakerPolicy, Circuit, Outcome, Permit
from agentactors.testing import virtual_backends
from tests.support.resilience import REQ, http_error

SETTINGS = settings(max_examples=150, deadline=None)

# -- the circuit state machine -----------------------------------------------------------------------

ops = st.lists(
    st.one_of(
        st.tuples(st.just("admit")),
        st.tuples(st.just("settle"), st.integers(0, 50), st.sampled_from(list(Outcome))),
        st.tuples(st.just("advance"), st.floats(0.0, 90.0)),
    ),
    max_size=120,
)
policies = st.builds(
    BreakerPolicy,
    window=st.sampled_from([10.0, 60.0]),
    min_calls=st.integers(1, 6),
    failure_rate=st.sampled_from([0.25, 0.5, 1.0]),
    consecutive_failures=st.one_of(st.none(), st.integers(1, 4)),
    open_duration=st.sampled_from([5.0, 30.0]),
    max_open_duration=st.just(300.0),
    half_open_max_calls=st.integers(1, 3),
    half_open_successes=st.integers(1, 2),
    max_half_open_wait=st.sampled_from([10.0, 60.0]),
)


@SETTINGS
@given(policy=policies, script=ops)
def test_a_circuit_never_has_more_live_probes_than_half_open_max_calls(
    policy: BreakerPolicy, script: list[Any]
) -> None:
    circuit = Circuit("k", policy, lambda *a: None)
    now = 0.0
    outstanding: list[Permit] = []
    for op in script:
        if op[0] == "admit":
            got = circuit.admit(now)
            if isinstance(got, Permit):
                outstanding.append(got)
            else:
                assert got >= 0
                assert circuit.state_at(now) in (CircuitState.open, CircuitState.half_open)
        elif op[0] == "settle" and outstanding:
            permit = outstanding.pop(op[1] % len(outstanding))
            before = (circuit.totals(now), circuit.consecutive, circuit.state, circuit.epoch)
            counted = circuit.record(permit, op[2], now)
            if op[2] is Outcome.ignored:
                # Never counted: neither success nor failure, nothing moves.
                assert not counted
                assert (circuit.totals(now), circuit.consecutive, circuit.state, circuit.epoch) == before
        elif op[0] == "advance":
            now += op[1]
        # Probes admitted in any half-open period, not answered and not hung past the wait.
        live_probes = [p for p in outstanding if p.probe and now < p.admitted_at + policy.max_half_open_wait]
        assert len(live_probes) <= policy.half_open_max_calls
        assert len(circuit.probes) <= policy.half_open_max_calls


# -- the breaker decorator: request-kind errors are never counted ------------------------------------

OUTCOME_CODES: dict[str, Callable[[], str | ProviderError]] = {
    "ok": lambda: "ok",
    "503": lambda: http_error(503),
    "429": lambda: http_error(429, {"retry-after": "5"}),
    "400": lambda: http_error(400),
    "401": lambda: http_error(401),
    "422": lambda: http_error(422),
    "forced-400": lambda: http_error(400, {"x-should-retry": "false"}),
}
IGNORED = {"400", "401", "422", "forced-400"}


def run_breaker(steps: list[tuple[str, float]]) -> list[tuple[Any, ...]]:
    """Feed the calls through a fresh breaker (on an injected clock); (code, state, calls, failures) after each.

    Also checks, call by call, that a request-side error leaves the breaker's stats exactly as they were.
    """
    clock = [0.0]
    current = ["ok"]
    breaker = with_circuit_breaker(
        ScriptedProvider(lambda request: OUTCOME_CODES[current[0]](), model="m"),
        min_calls=3,
        consecutive_failures=3,
        open_duration=10.0,
        clock=lambda: clock[0],
    )

    async def go() -> list[tuple[Any, ...]]:
        trace = []
        for code, gap in steps:
            clock[0] += gap
            current[0] = code
            before = breaker.stats_for()
            try:
                await breaker.complete(REQ)
            except ProviderError:
                pass
            after = breaker.stats_for()
            if code in IGNORED:
                assert after == before
            else:
                trace.append((code, after.state, after.calls, after.failures, clock[0]))
        return trace

    return anyio.run(go)


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(st.tuples(st.sampled_from(sorted(OUTCOME_CODES)), st.sampled_from([0.0, 1.0, 20.0])), max_size=25)
)
def test_a_breaker_never_counts_a_request_kind_error(steps: list[tuple[str, float]]) -> None:
    with_ignored = run_breaker(steps)
    # The same calls with the request-side ones removed (their time kept) give the same trace.
    merged: list[tuple[str, float]] = []
    carry = 0.0
    for code, gap in steps:
        carry += gap
        if code not in IGNORED:
            merged.append((code, carry))
            carry = 0.0
    assert with_ignored == run_breaker(merged)


# -- with_retry never calls more than max_attempts ---------------------------------------------------

RETRY_OUTCOMES = st.sampled_from(
    [
        ("503", lambda: http_error(503)),
        ("529", lambda: http_error(529)),
        ("429-ms", lambda: http_error(429, {"retry-after-ms": "1500"})),
        ("429-long", lambda: http_error(429, {"retry-after": "600"})),
        ("400", lambda: http_error(400)),
        ("should-retry-400", lambda: http_error(400, {"x-should-retry": "true"})),
        ("ok", lambda: "ok"),
    ]
)


@SETTINGS
@given(
    outcomes=st.lists(RETRY_OUTCOMES, min_size=1, max_size=10),
    max_attempts=st.integers(1, 6),
    deadline=st.one_of(st.none(), st.floats(0.5, 20.0)),
    seed=st.integers(0, 2**16),
)
def test_with_retry_never_calls_more_than_max_attempts(
    outcomes: list[tuple[str, Any]], max_attempts: int, deadline: float | None, seed: int
) -> None:
    clock = [0.0]

    async def sleep(seconds: float) -> None:
        clock[0] += seconds

    p = ScriptedProvider([make() for _, make in outcomes] + ["ok"] * 10)
    retry = with_retry(
        p, max_attempts=max_attempts, deadline=deadline, clock=lambda: clock[0], sleep=sleep, rng=random.Random(seed)
    )

    async def call() -> Any:
        try:
            return await retry.complete(REQ)
        except ProviderError as exc:
            return exc

    result = anyio.run(call)
    assert 1 <= p.calls <= max_attempts
    labels = [label for label, _ in outcomes] + ["ok"] * 10
    # It stopped on the first answer, the first error it may not retry, or when it ran out of attempts or time.
    served = labels[p.calls - 1]
    if served == "ok":
        assert not isinstance(result, ProviderError)
    else:
        assert isinstance(result, ProviderError)
        assert served in ("400", "429-long") or p.calls == max_attempts or deadline is not None
    for label in labels[: p.calls - 1]:
        assert label in ("503", "529", "429-ms", "should-retry-400")
    if deadline is not None:
        assert clock[0] <= deadline


# -- the breaker decorator under concurrency: live probes never exceed half_open_max_calls ----------

calls = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.5, 3.0, 10.0]),  # pause before starting this call
        st.sampled_from([0.0, 1.0, 4.0, 30.0]),  # how long the vendor takes
        st.sampled_from(["ok", "503", "400"]),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=40, deadline=None)
@given(plan=calls, max_probes=st.integers(1, 3), backend=st.sampled_from(["asyncio", "trio"]))
def test_concurrent_callers_never_get_more_live_probes_than_allowed(
    plan: list[tuple[float, float, str]], max_probes: int, backend: str
) -> None:
    wait = 20.0

    async def scenario() -> int:
        breaker: Any = None
        live: list[float] = []  # start times of probes in flight
        most = 0

        async def vendor(request: Any) -> Any:
            nonlocal most
            latency, code = request.messages[0].content.split("|")
            probe = breaker.state_for("m") is CircuitState.half_open
            now = anyio.current_time()
            if probe:
                live.append(now)
                # A probe hung past max_half_open_wait has given its permit back: not live any more.
                most = max(most, sum(1 for t in live if now < t + wait))
            try:
                await anyio.sleep(float(latency))
            finally:
                if probe:
                    live.remove(now)
            return OUTCOME_CODES[code]()

        breaker = with_circuit_breaker(
            ScriptedProvider(vendor, model="m"),
            consecutive_failures=2,
            min_calls=2,
            open_duration=5.0,
            half_open_max_calls=max_probes,
            max_half_open_wait=wait,
        )

        async def one(latency: float, code: str) -> None:
            request = LLMRequest([Message.user(f"{latency}|{code}")])
            try:
                await breaker.complete(request)
            except ProviderError:
                pass

        async with anyio.create_task_group() as tg:
            for pause, latency, code in plan:
                await anyio.sleep(pause)
                tg.start_soon(one, latency, code)
        return most

    # A fresh virtual clock per run (trio's MockClock is stateful).
    name, options = dict(enumerate(virtual_backends()))[0 if backend == "asyncio" else 1]
    assert anyio.run(scenario, backend=name, backend_options=options) <= max_probes
