"""A retry under a circuit breaker sends no attempt once the breaker opened while it was waiting.

``with_circuit_breaker(with_retry(p))`` admits a *call*; the retry inside it may
make several attempts over seconds of backoff.  The race the demo found: call A
fails and backs off, concurrent calls fail and open the breaker, and A's next
attempt went out anyway.  Each test below reproduces it deterministically on
virtual time and counts what the vendor received (with the breaker's state at
the moment it received it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.errors import ErrorKind, ProviderError
from agentactors.gateway.provider import Complete, ProviderActor
from agentactors.messages import LLMRequest, Message, TextDelta
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import (
    CircuitBreakerProvider,
    CircuitState,
    with_circuit_breaker,
    with_fallback,
    with_retry,
)
from tests.support.resilience import http_error, recording

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

Answer = tuple[float, Callable[[], Any]]  # (latency, make the outcome: a text or an error to raise)


def overloaded() -> ProviderError:
    """A 503: transient and retryable."""
    return http_error(503)


def down() -> ProviderError:
    """A 503 the vendor says not to retry: the breaker counts it, the retry gives up on it at once."""
    error = http_error(503, {"x-should-retry": "false"})
    assert error.kind is ErrorKind.transient and not error.retryable
    return error


def ok(text: str) -> Callable[[], str]:
    return lambda: text


def req(label: str) -> LLMRequest:
    return LLMRequest([Message.user(label)])


class Vendor:
    """Answers each label's script in order, after its latency; logs (label, time, breaker state) per request."""

    def __init__(self, answers: dict[str, list[Answer]], *, name: str = "vendor", model: str = "m") -> None:
        self.answers = {label: list(script) for label, script in answers.items()}
        self.log: list[tuple[str, float, CircuitState | None]] = []
        self.breaker: CircuitBreakerProvider | None = None
        self.provider = ScriptedProvider(self._answer, name=name, model=model)

    async def _answer(self, request: LLMRequest) -> Any:
        label = request.messages[-1].content
        state = self.breaker.state_for(request.model) if self.breaker is not None else None
        self.log.append((label, anyio.current_time(), state))
        latency, make = self.answers[label].pop(0)
        await anyio.sleep(latency)
        outcome = make()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def sent(self, label: str) -> list[float]:
        return [t for lb, t, _ in self.log if lb == label]

    def states(self) -> set[CircuitState | None]:
        return {state for _, _, state in self.log}


def guarded(vendor: Vendor, **breaker: Any) -> CircuitBreakerProvider:
    """The member of the recommended stack (no timeout needed here): breaker over retry, 1 s waits."""
    options: dict[str, Any] = {"consecutive_failures": 2, "open_duration": 30.0, **breaker}
    b = with_circuit_breaker(with_retry(vendor.provider, base_delay=1.0, jitter=(1.0, 1.0)), **options)
    vendor.breaker = b
    return b


async def outcome_of(call: Any) -> Any:
    try:
        return await call
    except ProviderError as exc:
        return exc


async def race(provider: Any, plan: list[tuple[float, str]], *, stream: bool = False) -> dict[str, tuple[Any, float]]:
    """Start ``provider`` calls at the planned times; each label's (result or error, time it ended)."""
    results: dict[str, tuple[Any, float]] = {}

    async def one(label: str) -> None:
        if stream:
            try:
                async with provider.stream(req(label)) as events:
                    result: Any = "".join([e.text async for e in events if isinstance(e, TextDelta)])
            except ProviderError as exc:
                result = exc
        else:
            result = await outcome_of(provider.complete(req(label)))
            result = result if isinstance(result, ProviderError) else result.content
        results[label] = (result, anyio.current_time())

    async with anyio.create_task_group() as tg:
        for at, label in plan:
            await anyio.sleep(at - anyio.current_time())
            tg.start_soon(one, label)
    return results


# --- the race ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_a_retry_does_not_send_once_the_breaker_opened_during_its_backoff(stream: bool) -> None:
    vendor = Vendor({"A": [(0, overloaded), (0, ok("never sent"))], "B": [(0, down)], "C": [(0, down)]})
    breaker = guarded(vendor)
    with recording() as rec:
        results = await race(breaker, [(0.0, "A"), (0.1, "B"), (0.2, "C")], stream=stream)
    # B and C opened the breaker at t=0.2; A's second attempt, due at t=1.0, was never sent.
    assert [label for label, _, _ in vendor.log] == ["A", "B", "C"]
    assert vendor.states() == {CircuitState.closed}
    error, ended = results["A"]
    assert isinstance(error, ProviderError) and error.status == 503 and error.kind is ErrorKind.transient
    assert ended == 1.0  # raised as the attempt came due, not after a full retry budget
    assert "opened" in error.__notes__[-1] and "no further attempt sent" in error.__notes__[-1]
    assert breaker.state is CircuitState.open
    # A's failure arrived after the circuit had moved on: not counted (the breaker saw B and C).
    assert breaker.stats_for().failures == 2
    exhausted = [e for e in rec.of_type("retry.exhausted") if e.reason == "circuit_open"]
    assert len(exhausted) == 1 and exhausted[0].attempts == 1 and exhausted[0].error is error
    assert "opened" in exhausted[0].detail


async def test_a_retry_does_not_even_wait_when_the_breaker_opened_while_its_attempt_was_in_flight() -> None:
    vendor = Vendor({"A": [(1.0, overloaded), (0, ok("never sent"))], "B": [(0, down)], "C": [(0, down)]})
    breaker = guarded(vendor)
    with recording() as rec:
        results = await race(breaker, [(0.0, "A"), (0.1, "B"), (0.2, "C")])
    assert vendor.sent("A") == [0.0]
    error, ended = results["A"]
    assert isinstance(error, ProviderError) and ended == 1.0  # at its failure: no 1 s wait for nothing
    assert rec.of_type("retry.scheduled") == []
    assert "not retried" in error.__notes__[-1]


async def test_no_change_while_the_breaker_stays_closed() -> None:
    vendor = Vendor({"A": [(0, overloaded), (0, overloaded), (0, ok("third time"))], "B": [(0, down)]})
    breaker = guarded(vendor, consecutive_failures=3)
    with recording() as rec:
        results = await race(breaker, [(0.0, "A"), (0.1, "B")])
    assert results["A"] == ("third time", 3.0)
    assert vendor.sent("A") == [0.0, 1.0, 3.0]
    assert breaker.state is CircuitState.closed
    assert [e.attempts for e in rec.of_type("retry.recovered")] == [3]
    assert rec.of_type("retry.exhausted") == []  # B's error was not retryable: the retry was not involved


async def test_a_forced_open_breaker_stops_a_retry_and_a_reset_during_the_wait_lets_it_go_on() -> None:
    vendor = Vendor({"A": [(0, overloaded)], "B": [(0, overloaded), (0, ok("after reset"))]})
    breaker = guarded(vendor)

    async def operator() -> None:
        for at, action in (
            (0.5, breaker.force_open),
            (1.5, breaker.reset),
            (2.0, breaker.force_open),
            (2.3, breaker.reset),
        ):
            await anyio.sleep(at - anyio.current_time())
            action()

    async with anyio.create_task_group() as tg:
        tg.start_soon(operator)
        results = await race(breaker, [(0.0, "A"), (1.6, "B")])
    # A waits 0.0-1.0 and finds the breaker forced open: its next attempt does not go out.
    assert isinstance(results["A"][0], ProviderError) and results["A"][1] == 1.0
    assert "forced open" in results["A"][0].__notes__[-1]
    assert vendor.sent("A") == [0.0]
    # B waits 1.6-2.6; forced open and reset again meanwhile, it finds the breaker closed and goes on.
    assert results["B"] == ("after reset", 2.6)
    assert vendor.sent("B") == [1.6, 2.6]


async def test_a_disabled_breaker_never_stops_a_retry() -> None:
    vendor = Vendor({"A": [(0, overloaded), (0, ok("second"))], "B": [(0, down)], "C": [(0, down)]})
    breaker = guarded(vendor)
    breaker.disable()
    results = await race(breaker, [(0.0, "A"), (0.1, "B"), (0.2, "C")])
    assert results["A"] == ("second", 1.0)


# --- failover -------------------------------------------------------------------------------------


async def test_the_fallback_serves_the_stopped_call_from_the_next_member_at_once() -> None:
    primary = Vendor({"A": [(0, overloaded), (0, ok("never sent"))], "B": [(0, down)], "C": [(0, down)]})
    secondary = Vendor(
        {"A": [(0, ok("A from b"))], "B": [(0, ok("B from b"))], "C": [(0, ok("C from b"))]}, name="b", model="mb"
    )
    chain = with_fallback(guarded(primary), guarded(secondary))
    with recording() as rec:
        results = await race(chain, [(0.0, "A"), (0.1, "B"), (0.2, "C")])
    assert results["A"] == ("A from b", 1.0)
    assert primary.sent("A") == [0.0] and secondary.sent("A") == [1.0]
    moved = rec.of_type("fallback.moved")
    assert [e.reason for e in moved] == [ErrorKind.transient] * 3  # B, C (down) and A (stopped retry)
    assert moved[-1].error.status == 503 and "opened" in moved[-1].error.__notes__[-1]
    # The next call skips the open primary at once.
    secondary.answers["D"] = [(0, ok("D from b"))]
    assert (await chain.complete(req("D"))).provider == "b"
    assert primary.sent("D") == [] and anyio.current_time() == 1.0
    assert primary.states() == {CircuitState.closed}


# --- half-open probes ------------------------------------------------------------------------------


async def open_it(breaker: CircuitBreakerProvider, vendor: Vendor) -> None:
    vendor.answers.update(X=[(0, down), (0, down)])
    for _ in range(2):
        await outcome_of(breaker.complete(req("X")))
    assert breaker.state is CircuitState.open


async def test_a_probe_retries_while_it_holds_its_permit_and_closes_the_circuit() -> None:
    vendor = Vendor({"P": [(0, overloaded), (0, ok("recovered"))]})
    breaker = guarded(vendor, open_duration=5.0)
    await open_it(breaker, vendor)
    await anyio.sleep(5.0)
    assert (await breaker.complete(req("P"))).content == "recovered"
    assert vendor.sent("P") == [5.0, 6.0]
    assert [s for lb, _, s in vendor.log if lb == "P"] == [CircuitState.half_open] * 2
    assert breaker.state is CircuitState.closed


async def test_a_probe_does_not_retry_past_a_reopen() -> None:
    # Two probes allowed: P backs off; Q's failure reopens the circuit; P's next attempt is not sent.
    vendor = Vendor({"P": [(0, overloaded), (0, ok("never sent"))], "Q": [(0, down)]})
    breaker = guarded(vendor, open_duration=5.0, half_open_max_calls=2)
    await open_it(breaker, vendor)
    results = await race(breaker, [(5.0, "P"), (5.1, "Q")])
    assert vendor.sent("P") == [5.0]
    error, ended = results["P"]
    assert isinstance(error, ProviderError) and ended == 6.0
    assert breaker.state is CircuitState.open
    assert vendor.states() == {CircuitState.closed, CircuitState.half_open}  # none found it open


async def test_a_probe_does_not_retry_after_its_permit_expired() -> None:
    # The vendor asks for 3 s; the probe's permit lapses after max_half_open_wait=2 s and Q probes instead.
    def slow() -> ProviderError:
        return http_error(429, {"retry-after": "3"})

    vendor = Vendor({"P": [(0, slow), (0, ok("never sent"))], "Q": [(1.0, ok("the new probe"))]})
    breaker = guarded(vendor, open_duration=5.0, max_half_open_wait=2.0)
    await open_it(breaker, vendor)
    results = await race(breaker, [(5.0, "P"), (7.5, "Q")])
    # At 8.0 the circuit is half-open with Q's probe in flight: P's attempt would be one probe too many.
    assert vendor.sent("P") == [5.0]
    assert isinstance(results["P"][0], ProviderError) and results["P"][1] == 8.0
    assert "half-open" in results["P"][0].__notes__[-1]
    assert results["Q"] == ("the new probe", 8.5)
    assert breaker.state is CircuitState.closed


async def test_a_lapsed_probe_does_not_retry_even_when_no_one_else_probed() -> None:
    def slow() -> ProviderError:
        return http_error(429, {"retry-after": "3"})

    vendor = Vendor({"P": [(0, slow), (0, ok("never sent"))]})
    breaker = guarded(vendor, open_duration=5.0, max_half_open_wait=2.0)
    await open_it(breaker, vendor)
    await anyio.sleep(5.0)
    assert isinstance(await outcome_of(breaker.complete(req("P"))), ProviderError)
    assert vendor.sent("P") == [5.0] and anyio.current_time() == 8.0


# --- composition and isolation ------------------------------------------------------------------------


async def test_nested_breakers_each_stop_the_retries_below_them() -> None:
    vendor = Vendor({"A": [(0, overloaded), (0, ok("never sent"))]})
    inner = with_circuit_breaker(with_retry(vendor.provider, base_delay=1.0, jitter=(1.0, 1.0)))
    outer = with_circuit_breaker(with_retry(inner, base_delay=1.0, jitter=(1.0, 1.0)))

    async def operator() -> None:
        await anyio.sleep(0.5)
        outer.force_open()

    async with anyio.create_task_group() as tg:
        tg.start_soon(operator)
        error = await outcome_of(outer.complete(req("A")))
    # The inner retry asked both breakers; the outer retry, stopped by its own, did not call the inner one again.
    assert isinstance(error, ProviderError) and error.status == 503
    assert vendor.sent("A") == [0.0]
    assert anyio.current_time() == 1.0
    assert inner.state is CircuitState.closed


async def test_the_gate_belongs_to_the_call_not_to_the_shared_retry() -> None:
    # Two breakers over one shared retry: opening one does not stop a call admitted by the other.
    vendor = Vendor({"A": [(0, overloaded), (0, ok("second"))], "B": [(0, overloaded), (0, ok("never sent"))]})
    shared = with_retry(vendor.provider, base_delay=1.0, jitter=(1.0, 1.0))
    left, right = with_circuit_breaker(shared), with_circuit_breaker(shared)

    async def operator() -> None:
        await anyio.sleep(0.5)
        right.force_open()

    async with anyio.create_task_group() as tg:
        tg.start_soon(operator)
        results = await race(_Either(left, right), [(0.0, "A"), (0.0, "B")])
    assert results["A"] == ("second", 1.0)
    assert isinstance(results["B"][0], ProviderError)
    assert vendor.sent("B") == [0.0]


class _Either:
    """Sends label A through ``left`` and anything else through ``right``."""

    def __init__(self, left: Any, right: Any) -> None:
        self.left, self.right = left, right

    async def complete(self, request: LLMRequest) -> Any:
        side = self.left if request.messages[-1].content == "A" else self.right
        return await side.complete(request)


async def test_a_stream_consumer_does_not_inherit_the_gate() -> None:
    # Inside the consumer's block the breaker's gate is gone: the consumer's own retried calls are its own.
    vendor = Vendor({"S": [(0, ok("streamed"))]})
    other = Vendor({"O": [(0, overloaded), (0, ok("retried"))]}, name="other")
    breaker = guarded(vendor)
    async with breaker.stream(req("S")) as events:
        breaker.force_open()
        answer = await with_retry(other.provider, base_delay=1.0, jitter=(1.0, 1.0)).complete(req("O"))
        text = "".join([e.text async for e in events if isinstance(e, TextDelta)])
    assert (text, answer.content) == ("streamed", "retried")
    assert other.sent("O") == [0.0, 1.0]


async def test_through_a_provider_actor_each_ask_carries_its_own_gate() -> None:
    # ProviderActor handlers run with the asker's context: the race behaves as it does without the actor.
    vendor = Vendor({"A": [(0, overloaded), (0, ok("never sent"))], "B": [(0, down)], "C": [(0, down)]})
    breaker = guarded(vendor)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, breaker, max_concurrency=8)

        class Asker:
            async def complete(self, request: LLMRequest) -> Any:
                return await ref.ask(Complete(request))

        results = await race(Asker(), [(0.0, "A"), (0.1, "B"), (0.2, "C")])
    assert [label for label, _, _ in vendor.log] == ["A", "B", "C"]
    assert isinstance(results["A"][0], ProviderError) and results["A"][1] == 1.0


async def test_retry_outside_the_breaker_already_stops_at_the_refusal() -> None:
    # The other order: each attempt goes through the breaker, which refuses once open; no gate is involved.
    vendor = Vendor({"A": [(0, overloaded), (0, ok("never sent"))], "B": [(0, down)], "C": [(0, down)]})
    breaker = with_circuit_breaker(vendor.provider, consecutive_failures=2)
    vendor.breaker = breaker
    retrying = with_retry(breaker, base_delay=1.0, jitter=(1.0, 1.0))
    results = await race(retrying, [(0.0, "A"), (0.1, "B"), (0.2, "C")])
    assert vendor.sent("A") == [0.0]
    assert type(results["A"][0]).__name__ == "CircuitOpenError" and results["A"][1] == 1.0
    assert vendor.states() == {CircuitState.closed}
