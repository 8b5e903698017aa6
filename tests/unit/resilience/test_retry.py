"""with_retry: backoff, taxonomy, injection, streams, events and the provider port."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from agentactors.errors import (
    CircuitOpenError,
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    StreamInterruptedError,
)
from agentactors.messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent, TextDelta
from agentactors.providers.port import LLMProvider
from agentactors.providers.scripted import ScriptedProvider, StreamCut
from agentactors.resilience import RetryingProvider, with_retry
from tests.support.resilience import FORCED_TOOL as FORCED
from tests.support.resilience import REQ, http_error, recording

pytestmark = pytest.mark.anyio


class FakeTime:
    """An injected clock and sleep: sleeping moves the clock, nothing else waits."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def fake_retry(p: Any, **kw: Any) -> tuple[RetryingProvider, FakeTime]:
    t = FakeTime()
    return with_retry(p, clock=t.clock, sleep=t.sleep, **kw), t


async def test_injected_clock_and_sleep_replace_real_waiting() -> None:
    p = ScriptedProvider([http_error(503), http_error(503), http_error(503), "ok"])
    retry, t = fake_retry(p, max_attempts=4, base_delay=1.0, multiplier=3.0, jitter=(1.0, 1.0))
    started = anyio.current_time()
    assert (await retry.complete(REQ)).content == "ok"
    assert t.sleeps == [1.0, 3.0, 8.0]  # 9 is capped at max_delay
    assert anyio.current_time() - started < 1.0  # no real wait happened


async def test_backoff_is_capped_then_jittered_within_the_range() -> None:
    retry = with_retry(ScriptedProvider(["x"]), rng=random.Random(3))
    err = http_error(503)
    for attempt, cap in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (9, 8.0)]:
        for _ in range(50):
            assert 0.75 * cap <= retry.delay_for(attempt, err) <= cap


async def test_retry_after_of_zero_falls_back_to_backoff() -> None:
    retry = with_retry(ScriptedProvider(["x"]), jitter=(1.0, 1.0))
    err = http_error(503, {"retry-after": "0"})
    assert err.retry_after == 0
    assert retry.delay_for(1, err) == 0.5


async def test_retry_after_is_honoured_beyond_max_delay() -> None:
    p = ScriptedProvider([http_error(429, {"retry-after": "30"}), "ok"])
    retry, t = fake_retry(p)
    await retry.complete(REQ)
    assert t.sleeps == [30.0]


async def test_deadline_is_measured_on_the_injected_clock() -> None:
    p = ScriptedProvider([http_error(503)] * 5)
    retry, t = fake_retry(p, max_attempts=5, base_delay=2.0, multiplier=2.0, jitter=(1.0, 1.0), deadline=7.0)
    with pytest.raises(ProviderError) as info:
        await retry.complete(REQ)
    # waits 2 (t=2), 4 (t=6); the next (8) would end at 14 > 7: not started.
    assert t.sleeps == [2.0, 4.0]
    assert p.calls == 3
    assert "deadline" in info.value.__notes__[-1]


@pytest.mark.parametrize(
    "error",
    [
        http_error(400),
        http_error(401),
        http_error(400, code="context_length_exceeded"),
        http_error(400, code="content_policy_violation"),
        CircuitOpenError(provider="vendor", retry_after=3.0),
        StreamInterruptedError("cut", provider="vendor", partial_text="abc"),
    ],
    ids=["request", "account", "context", "content_policy", "circuit_open", "stream_interrupted"],
)
async def test_non_retryable_errors_pass_through_untouched(error: ProviderError) -> None:
    p = ScriptedProvider([error, "unused"])
    retry, t = fake_retry(p)
    with recording() as rec:
        with pytest.raises(ProviderError) as info:
            await retry.complete(REQ)
    assert info.value is error
    assert p.calls == 1 and t.sleeps == []
    assert getattr(error, "__notes__", []) == []
    assert rec.events == []


async def test_retry_on_replaces_the_default_but_never_retries_request_errors() -> None:
    # Opt in to retrying an account error (e.g. a key rotation in progress).
    p = ScriptedProvider([http_error(401), "ok"])
    retry, _ = fake_retry(p, retry_on=lambda e: e.kind in (ErrorKind.transient, ErrorKind.account))
    assert (await retry.complete(REQ)).content == "ok"

    # Opt out of retrying 429s.
    p = ScriptedProvider([http_error(429), "unused"])
    retry, _ = fake_retry(p, retry_on=lambda e: e.status != 429)
    with pytest.raises(ProviderError):
        await retry.complete(REQ)
    assert p.calls == 1

    # A predicate that says yes to everything still cannot retry a request error, a breaker's
    # refusal (its retry_after says when) or a stream that had started.
    for never in (
        http_error(422),
        CircuitOpenError(provider="vendor", retry_after=1.0),
        StreamInterruptedError("cut", provider="vendor"),
    ):
        p = ScriptedProvider([never, "unused"])
        retry, _ = fake_retry(p, retry_on=lambda e: True)
        with pytest.raises(ProviderError) as info:
            await retry.complete(REQ)
        assert info.value is never
        assert p.calls == 1


async def test_unknown_exceptions_are_request_errors_and_not_retried() -> None:
    p = ScriptedProvider([ValueError("bug in a callback"), "unused"])
    retry, _ = fake_retry(p)
    with pytest.raises(ProviderError) as info:
        await retry.complete(REQ)
    assert info.value.kind is ErrorKind.request
    assert isinstance(info.value.__cause__, ValueError)
    assert p.calls == 1


async def test_transport_errors_and_explicit_retryable_attributes_are_retried() -> None:
    class Flaky(Exception):
        retryable = True

    p = ScriptedProvider([httpx.ReadTimeout("slow"), Flaky("try again"), "ok"])
    retry, t = fake_retry(p)
    assert (await retry.complete(REQ)).content == "ok"
    assert len(t.sleeps) == 2


async def test_events_scheduled_and_recovered_reach_the_runs_recorder() -> None:
    p = ScriptedProvider([http_error(503), "ok"])
    retry, _ = fake_retry(p, jitter=(1.0, 1.0))
    with recording("r1") as rec:
        await retry.complete(REQ)
    assert rec.types == ["retry.scheduled", "retry.recovered"]
    scheduled, recovered = rec.events
    assert (scheduled.attempt, scheduled.delay, scheduled.error.status) == (1, 0.5, 503)
    assert (recovered.attempts, recovered.elapsed) == (2, 0.5)
    assert {e.run_id for e in rec.events} == {"r1"}
    assert [e.seq for e in rec.events] == [1, 2]


async def test_a_shared_decorator_reports_to_the_run_that_made_each_call() -> None:
    # Both runs' first attempts fail, their second succeed.
    p = ScriptedProvider(lambda request: http_error(503) if len(p.requests) <= 2 else "ok")
    retry = with_retry(p, base_delay=0.001)
    recs = {}

    async def run(run_id: str) -> None:
        with recording(run_id) as rec:
            await retry.complete(REQ)
            recs[run_id] = rec

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "run-a")
        tg.start_soon(run, "run-b")
    assert set(recs) == {"run-a", "run-b"}
    for run_id, rec in recs.items():
        assert rec.types == ["retry.scheduled", "retry.recovered"]
        assert {e.run_id for e in rec.events} == {run_id}


async def test_cancellation_is_reraised_at_once() -> None:
    entered = anyio.Event()

    async def hang(request: LLMRequest) -> str:
        entered.set()
        await anyio.sleep_forever()
        raise AssertionError

    p = ScriptedProvider([hang, "unused"])
    retry = with_retry(p)
    async with anyio.create_task_group() as tg:
        tg.start_soon(retry.complete, REQ)
        await entered.wait()
        tg.cancel_scope.cancel()
    assert p.calls == 1


async def test_streams_are_retried_before_the_first_event_only() -> None:
    p = ScriptedProvider([StreamCut("", http_error(503)), StreamCut("alpha beta", http_error(503)), "unused"])
    retry, t = fake_retry(p)
    seen: list[StreamEvent] = []
    with pytest.raises(StreamInterruptedError) as info:
        async with retry.stream(REQ) as events:
            async for event in events:
                seen.append(event)
    assert p.calls == 2 and len(t.sleeps) == 1
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == "alpha beta"
    assert info.value.partial_text == "alpha beta"


class EmptyStream:
    """A broken provider whose stream ends without any event (not even StreamEnd)."""

    name = "empty"
    default_model = "m"
    carries_tools = True
    carries_forced_tool_choice = True

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse("x")

    def stream(self, request: LLMRequest) -> Any:
        self.calls += 1

        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            async def gen() -> AsyncIterator[StreamEvent]:
                return
                yield

            yield gen()

        return cm()

    async def aclose(self) -> None:
        pass


async def test_a_stream_with_no_event_is_a_malformed_transient_response() -> None:
    inner = EmptyStream()
    retry, _ = fake_retry(inner)
    with pytest.raises(MalformedResponseError) as info:
        async with retry.stream(REQ):
            pass
    assert info.value.kind is ErrorKind.transient
    assert inner.calls == 3


class CompleteOnly:
    """A provider without stream()."""

    name = "plain"
    default_model = "plain-model"
    carries_tools = False
    carries_forced_tool_choice = False

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse("whole answer", provider="plain")

    async def aclose(self) -> None:
        pass


async def test_a_provider_without_streaming_is_adapted() -> None:
    async with with_retry(CompleteOnly()).stream(REQ) as events:
        got = [e async for e in events]
    assert got[0] == TextDelta("whole answer")
    assert isinstance(got[-1], StreamEnd) and got[-1].response.content == "whole answer"


async def test_the_decorator_is_an_llm_provider_delegating_identity_and_capabilities() -> None:
    p = ScriptedProvider(["x"], name="acme", model="acme-1", carries_tools=False, rejects_forced_tool_choice={"acme-1"})
    retry = with_retry(p)
    assert isinstance(retry, LLMProvider)
    assert (retry.name, retry.default_model, retry.carries_tools) == ("acme", "acme-1", False)
    assert retry.carries_forced_tool_choice is True
    assert retry.supports_forced_tool_choice("acme-1") is False
    assert retry.supports_forced_tool_choice("acme-2") is True
    assert retry.inner is p
    with pytest.raises(ProviderError):
        await retry.complete(FORCED)
    async with retry:
        pass
    assert p.closed


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"base_delay": -1},
        {"multiplier": 0.5},
        {"jitter": (1.0, 0.5)},
        {"deadline": 0},
        {"max_retry_after": -1},
    ],
)
async def test_invalid_settings_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        with_retry(ScriptedProvider(["x"]), **kwargs)


async def test_a_first_attempt_non_retryable_error_gets_no_notes_but_a_later_one_does() -> None:
    p = ScriptedProvider([http_error(503), http_error(400)])
    retry, _ = fake_retry(p)
    with pytest.raises(ProviderError) as info:
        await retry.complete(REQ)
    assert info.value.status == 400
    notes = info.value.__notes__
    assert len(notes) == 2 and "request HTTP 400" in notes[1] and "request error" in notes[1]
