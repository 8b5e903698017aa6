"""The resilience decorators under hostile settings, errors and clocks: on virtual time, both backends.

Each test pins a failure found by an adversarial review: a retry setting that made a retry endless or its
wait infinite, a backoff that overflowed into an ``OverflowError`` instead of the vendor's error, a
``Retry-After: inf`` waited for, a vendor error wrapped in a task group's ``ExceptionGroup`` classified as a
request fault (never retried nor moved), and a breaker stuck open when its clock went back (a second
``trio.run``: each trio clock starts at a random offset).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
import trio.testing

from agentactors.errors import (
    CircuitOpenError,
    ErrorKind,
    ProviderError,
    ProviderTimeout,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from agentactors.messages import LLMRequest, StreamEvent, TextDelta
from agentactors.providers.scripted import ScriptedProvider
from agentactors.redaction import register_secret
from agentactors.resilience import (
    CircuitState,
    with_circuit_breaker,
    with_fallback,
    with_hedge,
    with_pool,
    with_retry,
    with_timeout,
)
from tests.support.chains import leaks
from tests.support.resilience import REQ, http_error

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


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


# --- retry: settings that would never stop, or wait for ever ---------------------------------------


@pytest.mark.parametrize("value", [math.nan, math.inf, 2.5, True, "3"])
def test_max_attempts_must_be_a_whole_number(value: Any) -> None:
    # NaN compared false with every attempt number: the retry never stopped on a vendor that kept failing.
    with pytest.raises(ValueError, match="max_attempts"):
        with_retry(ScriptedProvider(["x"]), max_attempts=value)


@pytest.mark.parametrize(
    "options",
    [
        {"base_delay": math.inf},
        {"max_delay": math.inf},
        {"multiplier": math.inf},
        {"jitter": (1.0, math.inf)},
        {"jitter": (math.nan, 1.0)},
        {"base_delay": True},
        {"max_retry_after": True},
    ],
)
def test_an_infinite_or_non_numeric_wait_setting_is_refused(options: dict[str, Any]) -> None:
    # jitter=(1, inf) made every wait infinite: the first retry slept for ever.
    with pytest.raises(ValueError):
        with_retry(ScriptedProvider(["x"]), **options)


async def test_a_long_retry_never_overflows_its_backoff() -> None:
    # 2.0 ** 1024 overflows a float: attempt 1026 raised OverflowError out of the retry instead of a wait
    # (and the vendor's error was lost).  The backoff stays capped at max_delay however long it runs.
    t = FakeTime()
    retry = with_retry(
        ScriptedProvider(lambda request: http_error(503), model="m"),
        max_attempts=1100,
        clock=t.clock,
        sleep=t.sleep,
        jitter=(1.0, 1.0),
    )
    with pytest.raises(ProviderError) as info:
        await retry.complete(REQ)
    assert info.value.status == 503
    assert len(t.sleeps) == 1099 and max(t.sleeps) == 8.0


async def test_a_zero_base_delay_stays_zero_however_many_attempts() -> None:
    t = FakeTime()
    retry = with_retry(
        ScriptedProvider(lambda request: http_error(503), model="m"),
        max_attempts=1100,
        base_delay=0.0,
        clock=t.clock,
        sleep=t.sleep,
    )
    with pytest.raises(ProviderError):
        await retry.complete(REQ)
    assert set(t.sleeps) == {0.0}


def _infinitely_busy() -> ProviderError:
    # A custom adapter's own error: the wires' parse_retry_after reads an infinite header as no value.
    return ProviderError("busy", provider="v", kind=ErrorKind.transient, status=429, retry_after=math.inf)


async def test_an_infinite_retry_after_is_never_waited_for_even_without_a_cap() -> None:
    # With max_retry_after=inf ("always honour the vendor"), a Retry-After of inf slept for ever: the call
    # hung.  An infinite wait is a refusal: the error is raised at once, so a fallback can serve.
    calls: list[float] = []

    def answer(request: LLMRequest) -> Any:
        calls.append(anyio.current_time())
        if len(calls) == 1:
            raise _infinitely_busy()
        return "ok"

    retry = with_retry(ScriptedProvider(answer, model="m"), max_retry_after=math.inf)
    with anyio.fail_after(3600):
        with pytest.raises(ProviderError) as info:
            await retry.complete(REQ)
    assert info.value.status == 429 and info.value.retry_after == math.inf
    assert len(calls) == 1
    assert "retry-after inf" in info.value.__notes__[-1]

    def busy(request: LLMRequest) -> Any:
        raise _infinitely_busy()

    # A backup serves at once.
    chain = with_fallback(
        with_retry(ScriptedProvider(busy, model="a"), max_retry_after=math.inf),
        ScriptedProvider(["backup"], model="b"),
    )
    with anyio.fail_after(3600):
        assert (await chain.complete(REQ)).content == "backup"


@pytest.mark.parametrize("header", [{"retry-after": "inf"}, {"retry-after-ms": "1e999"}, {"retry-after": "nan"}])
async def test_an_infinite_or_nan_retry_after_header_is_no_value_and_the_backoff_applies(
    header: dict[str, str],
) -> None:
    # The header is the server's text, not a delay it can mean: no retry_after, the ordinary backoff.
    t = FakeTime()
    retry = with_retry(
        ScriptedProvider([http_error(429, header), "ok"], model="m"),
        max_retry_after=math.inf,
        clock=t.clock,
        sleep=t.sleep,
        jitter=(1.0, 1.0),
    )
    assert (await retry.complete(REQ)).content == "ok"
    assert t.sleeps == [0.5]


# --- errors wrapped in an exception group (a provider that runs a task group) ------------------------


def _grouped(*errors: Exception) -> Any:
    def answer(request: LLMRequest) -> Any:
        raise ExceptionGroup("unhandled errors in a TaskGroup", list(errors))

    return answer


async def test_a_vendor_error_inside_a_task_groups_exception_group_is_retried_as_itself() -> None:
    # anyio's task groups always wrap: a provider that sends its request from a task group raised
    # ExceptionGroup([ProviderTimeout]), classified as an unknown (request) fault: never retried, never
    # moved to a fallback, never counted by a breaker.
    t = FakeTime()
    p = ScriptedProvider([_grouped(ProviderTimeout("slow", provider="v")), "ok"], model="m")
    retry = with_retry(p, clock=t.clock, sleep=t.sleep)
    assert (await retry.complete(REQ)).content == "ok"
    assert len(t.sleeps) == 1

    chain = with_fallback(
        ScriptedProvider([_grouped(OSError("connection reset"))], model="a"), ScriptedProvider(["b"], model="b")
    )
    assert (await chain.complete(REQ)).content == "b"

    breaker = with_circuit_breaker(
        ScriptedProvider(_grouped(ProviderTimeout("slow", provider="v")), model="m"),
        consecutive_failures=2,
    )
    for _ in range(2):
        with pytest.raises(ProviderTimeout):
            await breaker.complete(REQ)
    assert breaker.state is CircuitState.open


async def test_an_unsupported_tool_choice_inside_an_exception_group_keeps_its_type_and_never_moves() -> None:
    refused = UnsupportedToolChoiceError(provider="v", model="m")
    t = FakeTime()
    primary = ScriptedProvider([_grouped(refused)], model="m")
    backup = ScriptedProvider(["b"], model="b")
    breaker = with_circuit_breaker(with_retry(primary, clock=t.clock, sleep=t.sleep), consecutive_failures=1)
    chain = with_fallback(breaker, backup)
    with pytest.raises(UnsupportedToolChoiceError) as info:
        await chain.complete(REQ)
    assert info.value is refused
    assert t.sleeps == [] and backup.calls == 0 and breaker.state is CircuitState.closed


async def test_a_group_with_a_request_fault_among_vendor_faults_is_never_retried() -> None:
    t = FakeTime()
    p = ScriptedProvider(
        [_grouped(ProviderTimeout("slow", provider="v"), UnsupportedToolChoiceError(provider="v")), "ok"], model="m"
    )
    retry = with_retry(p, clock=t.clock, sleep=t.sleep)
    with pytest.raises(ProviderError) as info:
        await retry.complete(REQ)
    assert info.value.kind is ErrorKind.request and t.sleeps == []


# --- a breaker whose clock goes back ----------------------------------------------------------------


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_a_breaker_whose_clock_goes_back_stays_open_for_its_open_duration_not_for_the_jump() -> None:
    # A breaker shared by two trio.run()s (a module-level provider, a script that runs twice) sees the
    # second loop's clock start anywhere: 5,000 s back, it stayed open 5,000 s instead of 5.  Time that
    # goes back is taken as standing still: the circuit keeps the open time it had left.
    clock = Clock(150_000.0)
    breaker = with_circuit_breaker(
        ScriptedProvider([http_error(503), "ok"], model="m"), consecutive_failures=1, open_duration=5.0, clock=clock
    )
    with pytest.raises(ProviderError):
        await breaker.complete(REQ)
    clock.now = 150_002.0
    assert breaker.stats_for().retry_after == 3.0
    clock.now = 145_000.0  # the next event loop's clock
    assert breaker.stats_for().state is CircuitState.open and breaker.stats_for().retry_after == 3.0
    clock.now = 145_003.0
    assert breaker.stats_for().state is CircuitState.half_open
    assert (await breaker.complete(REQ)).content == "ok"
    assert breaker.stats_for().state is CircuitState.closed


def test_a_breaker_shared_by_two_trio_runs_is_not_stuck_open() -> None:
    # The real thing on trio: two runs, two clocks (on asyncio both read the monotonic clock).  The first
    # runs on trio's own clock (its offset is random, at least 10,000 s), the second on a virtual clock
    # that starts at 0: the circuit opened in the first run refuses a call of the second, then half-opens
    # when its open duration is over (it used to stay open until the second clock caught up: hours).
    breaker = with_circuit_breaker(
        ScriptedProvider(lambda request: http_error(503), model="m"), consecutive_failures=1, open_duration=5.0
    )

    async def trip() -> float:
        with pytest.raises(ProviderError):
            await breaker.complete(REQ)
        return anyio.current_time()

    async def later() -> tuple[float, CircuitState]:
        with pytest.raises(CircuitOpenError) as refused:  # still open: no time is known to have passed
            await breaker.complete(REQ)
        assert refused.value.retry_after is not None and 0 < refused.value.retry_after <= 5.0
        await anyio.sleep(refused.value.retry_after)
        return anyio.current_time(), breaker.state

    opened_at = anyio.run(trip, backend="trio")
    virtual = {"clock": trio.testing.MockClock(autojump_threshold=0)}
    now, state = anyio.run(later, backend="trio", backend_options=virtual)
    assert now < opened_at  # the second clock is behind the first
    assert state is CircuitState.half_open


# --- a foreign exception holding a credential: the classified error must not keep it as its context ----

CANARY = "canary-REVIEW-5e4d3c2b1a09f8e7"  # not key-shaped: only registration redacts it


def _connect_error(request: LLMRequest) -> Any:
    # A custom provider that lets httpx's error through, its URL holding the key (a `?key=` query): transient.
    raise httpx.ConnectError(f"connection refused: https://vendor.example/v1?key={CANARY}")


def _unknown_error(request: LLMRequest) -> Any:
    # An error of its own naming the key: an unknown, request fault (raised by a fallback, not moved).
    raise RuntimeError(f"the vendor refused key {CANARY}")


@pytest.mark.parametrize(
    "decorate",
    [
        lambda p: with_circuit_breaker(p),
        lambda p: with_fallback(p, ScriptedProvider(lambda request: http_error(503), model="b")),
        lambda p: with_pool(p),
        lambda p: with_fallback(with_circuit_breaker(p), ScriptedProvider(lambda request: http_error(400))),
    ],
    ids=["breaker", "fallback", "pool", "fallback-over-breaker"],
)
@pytest.mark.parametrize("failing", [_connect_error, _unknown_error], ids=["transport", "unknown"])
@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_a_wrapped_foreign_error_never_keeps_the_original_as_its_context(
    decorate: Any, failing: Any, streaming: bool
) -> None:
    # The decorators classified the foreign error (its text redacted, its cause scrubbed) but raised the
    # result inside their `except` block: the original — the key in its message — rode along as the new
    # error's __context__, where tools that walk the chain read it.
    register_secret(CANARY)
    provider = decorate(ScriptedProvider(failing, model="m"))
    with pytest.raises(ProviderError) as info:
        if streaming:
            async with provider.stream(REQ) as events:
                async for _ in events:
                    pass
        else:
            await provider.complete(REQ)
    assert not leaks(info.value, CANARY)


class _CutWithForeignError:
    """A custom provider whose stream delivers a delta, then lets httpx's error through, the key in its text."""

    name = "custom"
    default_model = "m"

    async def complete(self, request: LLMRequest) -> Any:  # pragma: no cover - only streamed here
        raise NotImplementedError

    @asynccontextmanager
    async def _events(self) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        async def events() -> AsyncIterator[StreamEvent]:
            yield TextDelta("partial ")
            raise httpx.ReadError(f"connection reset: https://vendor.example/v1?key={CANARY}")

        yield events()

    def stream(self, request: LLMRequest) -> Any:
        return self._events()

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize(
    "decorate",
    [
        lambda p: with_retry(p),
        lambda p: with_circuit_breaker(p, count_mid_stream=True),
        lambda p: with_fallback(p, ScriptedProvider(["b"], model="b")),
        lambda p: with_pool(p),
        lambda p: with_hedge(p, after=5.0),
        lambda p: with_timeout(p, idle=5.0),
    ],
    ids=["retry", "breaker", "fallback", "pool", "hedge", "timeout"],
)
async def test_a_foreign_error_after_the_first_event_is_interrupted_without_the_credential(decorate: Any) -> None:
    # The StreamInterruptedError kept the foreign exception as its cause (and its context) as it was: the
    # key in its message reached anything that walks the chain.  It is classified first (redacted, its
    # cause scrubbed), as every failure before the first event is.
    register_secret(CANARY)
    seen: list[str] = []
    with pytest.raises(StreamInterruptedError) as info:
        async with decorate(_CutWithForeignError()).stream(REQ) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    seen.append(event.text)
    assert seen == ["partial "] and info.value.partial_text == "partial "
    assert info.value.kind is ErrorKind.transient
    assert not leaks(info.value, CANARY)
