"""Property: across random interleavings, no request reaches a vendor while a breaker above it is open.

Many concurrent calls with random arrival times, latencies and outcomes (ok,
retryable 503s, 429s with a retry-after, 503s the vendor says not to retry,
request errors), random breaker and retry settings, and an operator who forces
breakers open and resets them, run through each composition of breaker, retry
and fallback — on both backends, on virtual time (trio also shuffles the order
in which ready tasks run).  The vendor itself checks, on every request it
receives, the state of every breaker above it: never open, never forced open;
and, while half-open, never more requests started in the half-open period in
flight than ``half_open_max_calls``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import anyio
from hypothesis import event, given, settings
from hypothesis import strategies as st

from agentactors.errors import ProviderError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import (
    CircuitBreakerProvider,
    CircuitState,
    with_circuit_breaker,
    with_fallback,
    with_retry,
)
from agentactors.testing import virtual_backends
from tests.support.resilience import http_error, recording

OUTCOMES: dict[str, Callable[[], Any]] = {
    "ok": lambda: "ok",
    "503": lambda: http_error(503),
    "down": lambda: http_error(503, {"x-should-retry": "false"}),
    "429": lambda: http_error(429, {"retry-after": "1.5"}),
    "400": lambda: http_error(400),
}
STRUCTURES = (
    "breaker(retry)",
    "retry(breaker)",
    "fallback(breaker(retry), breaker(retry))",
    "breaker(retry(breaker(retry)))",
)

attempt = st.tuples(st.sampled_from([0.0, 0.2, 1.0, 3.0]), st.sampled_from(sorted(OUTCOMES)))
call = st.tuples(st.sampled_from([0.0, 0.0, 0.1, 0.5, 2.0]), st.lists(attempt, min_size=1, max_size=4))
operation = st.tuples(st.floats(0.0, 20.0), st.sampled_from(["force_open", "reset", "disable"]), st.integers(0, 1))


class Watch:
    """The vendors' view: violations found, and per breaker the requests started while it was half-open."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self.half_open_in_flight: dict[int, int] = {}
        self.check_probes = True
        self.half_open_requests = 0
        self.stopped_retries = 0


def vendor(
    name: str,
    model: str,
    scripts: dict[str, list[tuple[float, str]]],
    above: list[CircuitBreakerProvider],
    watch: Watch,
) -> ScriptedProvider:
    """A vendor answering each call's attempts in order (``ok`` once its script runs out), checking the breakers."""

    async def answer(request: LLMRequest) -> Any:
        label = request.messages[-1].content
        probing: list[int] = []
        for n, breaker in enumerate(above):
            state = breaker.state_for(request.model)
            if state in (CircuitState.open, CircuitState.forced_open):
                watch.violations.append(f"{label} sent to {name} at {anyio.current_time():g} with breaker {n} {state}")
            if state is CircuitState.half_open:
                watch.half_open_requests += 1
            if state is CircuitState.half_open and watch.check_probes:
                key = id(breaker)
                watch.half_open_in_flight[key] = watch.half_open_in_flight.get(key, 0) + 1
                probing.append(key)
                if watch.half_open_in_flight[key] > breaker.policy.half_open_max_calls:
                    watch.violations.append(f"{label}: too many half-open requests in flight on breaker {n}")
        script = scripts.setdefault(label, [])
        latency, outcome = script.pop(0) if script else (0.0, "ok")
        try:
            await anyio.sleep(latency)
        finally:
            for key in probing:
                watch.half_open_in_flight[key] -= 1
        made = OUTCOMES[outcome]()
        if isinstance(made, BaseException):
            raise made
        return made

    return ScriptedProvider(answer, name=name, model=model)


def build(
    structure: str,
    scripts: dict[str, list[tuple[float, str]]],
    watch: Watch,
    policy: dict[str, Any],
    retry: dict[str, Any],
) -> tuple[Any, list[CircuitBreakerProvider]]:
    """The composition under test, and its breakers (the operator's targets)."""

    def breaker(p: Any) -> CircuitBreakerProvider:
        return with_circuit_breaker(p, **policy)

    def retrying(p: Any) -> Any:
        return with_retry(p, **retry)

    if structure == "breaker(retry)":
        above: list[CircuitBreakerProvider] = []
        top = breaker(retrying(vendor("a", "m", scripts, above, watch)))
        above.append(top)
        return top, above
    if structure == "retry(breaker)":
        above = []
        b = breaker(vendor("a", "m", scripts, above, watch))
        above.append(b)
        return retrying(b), above
    if structure == "breaker(retry(breaker(retry)))":
        above = []
        inner = breaker(retrying(vendor("a", "m", scripts, above, watch)))
        outer = breaker(retrying(inner))
        above.extend([inner, outer])
        return outer, above
    above_a: list[CircuitBreakerProvider] = []
    above_b: list[CircuitBreakerProvider] = []
    # The secondary answers from the same scripts under its own labels.
    members = [
        breaker(retrying(vendor("a", "m", scripts, above_a, watch))),
        breaker(retrying(vendor("b", "m2", scripts, above_b, watch))),
    ]
    above_a.append(members[0])
    above_b.append(members[1])
    return with_fallback(*members), members


def run(
    structure: str,
    plan: list[tuple[float, list[tuple[float, str]]]],
    ops: list[tuple[float, str, int]],
    policy: dict[str, Any],
    retry: dict[str, Any],
    backend: str,
) -> Watch:
    async def scenario() -> Watch:
        watch = Watch()
        # Manual overrides and lapsed probes free permits by design; the in-flight bound holds without them.
        watch.check_probes = not ops and policy["max_half_open_wait"] > 100
        scripts = {f"call-{i}": list(attempts) for i, (_, attempts) in enumerate(plan)}
        provider, breakers = build(structure, scripts, watch, policy, retry)

        async def one(label: str) -> None:
            try:
                await provider.complete(LLMRequest([Message.user(label)]))
            except ProviderError:
                pass

        async def operator() -> None:
            for at, action, which in sorted(ops):
                await anyio.sleep(max(0.0, at - anyio.current_time()))
                getattr(breakers[which % len(breakers)], action)()

        with recording() as rec:
            async with anyio.create_task_group() as tg:
                tg.start_soon(operator)
                for i, (gap, _) in enumerate(plan):
                    await anyio.sleep(gap)
                    tg.start_soon(one, f"call-{i}")
        watch.stopped_retries = sum(1 for e in rec.of_type("retry.exhausted") if e.reason == "circuit_open")
        return watch

    name, options = dict(enumerate(virtual_backends()))[0 if backend == "asyncio" else 1]
    return anyio.run(scenario, backend=name, backend_options=options)


@settings(max_examples=200, deadline=None)
@given(
    structure=st.sampled_from(STRUCTURES),
    plan=st.lists(call, min_size=1, max_size=25),
    ops=st.one_of(st.just([]), st.lists(operation, max_size=4)),
    consecutive=st.integers(1, 3),
    min_calls=st.sampled_from([2, 4]),
    open_duration=st.sampled_from([0.5, 2.0, 5.0]),
    half_open_max_calls=st.integers(1, 2),
    max_half_open_wait=st.sampled_from([1.0, 1000.0]),
    max_attempts=st.integers(2, 4),
    base_delay=st.sampled_from([0.1, 0.5, 1.0]),
    seed=st.integers(0, 2**16),
    backend=st.sampled_from(["asyncio", "trio"]),
)
def test_no_request_reaches_a_vendor_while_a_breaker_above_it_is_open(
    structure: str,
    plan: list[tuple[float, list[tuple[float, str]]]],
    ops: list[tuple[float, str, int]],
    consecutive: int,
    min_calls: int,
    open_duration: float,
    half_open_max_calls: int,
    max_half_open_wait: float,
    max_attempts: int,
    base_delay: float,
    seed: int,
    backend: str,
) -> None:
    policy = {
        "consecutive_failures": consecutive,
        "min_calls": min_calls,
        "open_duration": open_duration,
        "max_open_duration": 4 * open_duration,
        "half_open_max_calls": half_open_max_calls,
        "max_half_open_wait": max_half_open_wait,
    }
    retry = {"max_attempts": max_attempts, "base_delay": base_delay, "rng": random.Random(seed)}
    watch = run(structure, plan, ops, policy, retry, backend)
    # What the example exercised (shown by --hypothesis-show-statistics).
    event(f"{structure}: retries stopped by a breaker: {'yes' if watch.stopped_retries else 'no'}")
    event(f"requests to a half-open breaker: {'yes' if watch.half_open_requests else 'no'}")
    assert watch.violations == []
