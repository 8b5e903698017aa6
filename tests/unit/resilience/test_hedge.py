"""``with_hedge``: a second copy of a slow call, the first answer wins, the loser cancelled; on virtual time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from agentactors import InMemoryRecorder, LLMRequest, Message, ScriptedProvider, resilient_chain
from agentactors.errors import ErrorKind, ProviderError, StreamInterruptedError, UnsupportedToolChoiceError
from agentactors.events import EventSink, FanOut, HedgeSent, HedgeWon, use_sink
from agentactors.messages import StreamEnd, TextDelta, ToolChoice
from agentactors.pricing import pop_cut_short
from agentactors.resilience import (
    CircuitState,
    HedgeProvider,
    describe_chain,
    guarded,
    with_circuit_breaker,
    with_hedge,
)
from agentactors.resilience.hedge import MIN_SAMPLES
from tests.support.resilience import LOOKUP, recording

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

REQUEST = LLMRequest([Message.user("hi")])


class Slow:
    """A script item factory: each call answers ``text`` after the next of ``delays`` seconds, and says how it
    ended (answered, or cancelled: its request closed)."""

    def __init__(self, delays: list[float], text: str = "ok") -> None:
        self.delays = list(delays)
        self.text = text
        self.answered: list[float] = []
        self.cancelled: list[float] = []

    def __call__(self, request: LLMRequest) -> Any:
        delay = self.delays.pop(0)

        async def answer() -> str:
            try:
                await anyio.sleep(delay)
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(delay)
                raise
            self.answered.append(delay)
            return f"{self.text} after {delay:g}s"

        return answer()


def recorded() -> tuple[InMemoryRecorder, EventSink]:
    recorder = InMemoryRecorder()
    return recorder, EventSink(FanOut([recorder]), run_id="r")


async def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    start = anyio.current_time()
    value = await call()
    return value, anyio.current_time() - start


# --- the winner and the loser ----------------------------------------------------------------------


async def test_a_slow_call_is_hedged_after_the_delay_and_the_hedge_wins() -> None:
    slow = Slow([30.0, 1.0])
    hedged = with_hedge(ScriptedProvider(slow), after=2.0, max_extra=1.0)
    recorder, sink = recorded()
    with use_sink(sink):
        response, took = await timed(lambda: hedged.complete(REQUEST))
    assert response.content == "ok after 1s"
    assert took == pytest.approx(3.0)  # 2 s waited, then the hedge's 1 s
    assert slow.cancelled == [30.0]  # the first copy's request was closed before the call returned
    sent = [e for e in recorder.events if isinstance(e, HedgeSent)]
    won = [e for e in recorder.events if isinstance(e, HedgeWon)]
    assert len(sent) == 1 and sent[0].after == 2.0 and sent[0].member == "scripted"
    assert len(won) == 1 and won[0].winner == "hedge"
    assert hedged.hedged == 1


async def test_the_first_copy_wins_when_it_answers_before_the_hedge() -> None:
    slow = Slow([3.0, 10.0])
    hedged = with_hedge(ScriptedProvider(slow), after=2.0, max_extra=1.0)
    recorder, sink = recorded()
    with use_sink(sink):
        response, took = await timed(lambda: hedged.complete(REQUEST))
    assert response.content == "ok after 3s" and took == pytest.approx(3.0)
    assert slow.cancelled == [10.0]
    assert [e.winner for e in recorder.events if isinstance(e, HedgeWon)] == ["primary"]


async def test_a_fast_call_sends_no_hedge() -> None:
    slow = Slow([1.0])
    provider = ScriptedProvider(slow)
    hedged = with_hedge(provider, after=2.0, max_extra=1.0)
    recorder, sink = recorded()
    with use_sink(sink):
        response = await hedged.complete(REQUEST)
    assert response.content == "ok after 1s"
    assert provider.calls == 1 and hedged.hedged == 0
    assert not [e for e in recorder.events if e.type.startswith("hedge.")]


async def test_the_hedge_goes_to_the_other_member_with_its_own_model() -> None:
    primary = ScriptedProvider(Slow([30.0]), name="slow")
    other = ScriptedProvider("from the other", name="other", model="other-model")
    hedged = with_hedge(primary, after=1.0, max_extra=1.0, to=other)
    response = await hedged.complete(REQUEST)
    assert response.content == "from the other" and response.provider == "other"
    assert other.requests[0].model == "other-model"


# --- the extra-call budget -------------------------------------------------------------------------


async def test_at_most_max_extra_of_the_calls_are_hedged() -> None:
    slow = Slow([5.0, 0.5] * 100)
    hedged = with_hedge(ScriptedProvider(slow), after=1.0, max_extra=0.1)
    for _ in range(40):
        await hedged.complete(REQUEST)
    # 10 % of 40 calls: 4 hedges, each sent only while hedges stay within 10 % of the calls so far.
    assert hedged.hedged == 4
    assert hedged.calls == 40


async def test_the_budget_is_over_a_rolling_window_of_calls() -> None:
    hedged = with_hedge(ScriptedProvider(Slow([5.0, 0.5] * 100)), after=1.0, max_extra=0.5, window=4)
    for _ in range(12):
        await hedged.complete(REQUEST)
    # at most 2 of any 4 consecutive calls
    assert 3 <= hedged.hedged <= 6


async def test_max_extra_zero_never_hedges() -> None:
    provider = ScriptedProvider(Slow([5.0]))
    hedged = with_hedge(provider, after=1.0, max_extra=0.0)
    response, took = await timed(lambda: hedged.complete(REQUEST))
    assert response.content == "ok after 5s" and took == pytest.approx(5.0) and provider.calls == 1


# --- what is never hedged --------------------------------------------------------------------------


async def test_a_request_error_is_raised_at_once_and_never_hedged() -> None:
    refused = ProviderError("bad request", provider="scripted", kind=ErrorKind.request)
    provider = ScriptedProvider([refused, "never"])
    hedged = with_hedge(provider, after=1.0, max_extra=1.0)
    with pytest.raises(ProviderError) as caught:
        await hedged.complete(REQUEST)
    assert caught.value.kind is ErrorKind.request and provider.calls == 1


async def test_a_request_error_of_the_first_copy_ends_the_hedged_call_at_once() -> None:
    async def late_refusal() -> Any:
        await anyio.sleep(3.0)
        return ProviderError("bad request", provider="scripted", kind=ErrorKind.request)

    slow = Slow([100.0])
    provider = ScriptedProvider([lambda r: late_refusal(), slow])
    hedged = with_hedge(provider, after=1.0, max_extra=1.0)
    start = anyio.current_time()
    with pytest.raises(ProviderError) as caught:
        await hedged.complete(REQUEST)
    assert caught.value.kind is ErrorKind.request and anyio.current_time() - start == pytest.approx(3.0)
    assert slow.cancelled == [100.0]  # the hedge was closed: it would have failed alike


async def test_a_transient_failure_before_the_delay_is_raised_not_hedged() -> None:
    provider = ScriptedProvider([ProviderError("503", provider="scripted", kind=ErrorKind.transient), "never"])
    hedged = with_hedge(provider, after=1.0, max_extra=1.0)
    with pytest.raises(ProviderError):
        await hedged.complete(REQUEST)
    assert provider.calls == 1


async def test_when_one_copy_fails_the_other_still_answers() -> None:
    async def late_failure() -> Any:
        await anyio.sleep(3.0)
        return ProviderError("503", provider="scripted", kind=ErrorKind.transient)

    provider = ScriptedProvider([lambda r: late_failure(), Slow([4.0])])
    hedged = with_hedge(provider, after=1.0, max_extra=1.0)
    response, took = await timed(lambda: hedged.complete(REQUEST))
    assert response.content == "ok after 4s" and took == pytest.approx(5.0)


async def test_a_target_behind_an_open_breaker_is_never_hedged() -> None:
    other = ScriptedProvider("from the other", name="other")
    guarded = with_circuit_breaker(other)
    guarded.force_open()
    provider = ScriptedProvider(Slow([5.0]))
    hedged = with_hedge(provider, after=1.0, max_extra=1.0, to=guarded)
    response, took = await timed(lambda: hedged.complete(REQUEST))
    assert response.content == "ok after 5s" and took == pytest.approx(5.0)
    assert other.calls == 0 and hedged.hedged == 0
    assert guarded.state is CircuitState.forced_open


async def test_the_same_member_behind_an_open_breaker_is_never_hedged() -> None:
    provider = ScriptedProvider(Slow([5.0]))
    breaker = with_circuit_breaker(provider)
    hedged = with_hedge(breaker, after=1.0, max_extra=1.0)
    breaker.force_open()
    with pytest.raises(ProviderError) as caught:  # refused by the breaker itself; no copy sent
        await hedged.complete(REQUEST)
    assert caught.value.kind is ErrorKind.circuit_open and provider.calls == 0 and hedged.hedged == 0



@pytest.mark.parametrize("mode", ["complete", "stream"])
async def test_a_hedge_below_a_half_open_breaker_sends_its_one_probe_once(mode: str) -> None:
    """``guarded(p, hedge_after=...)`` puts the breaker above the hedge: the probe it admits is one vendor request."""
    vendor = {"fail": True, "calls": 0}

    async def item(request: LLMRequest) -> str:
        vendor["calls"] += 1
        if vendor["fail"]:
            raise ProviderError("503", provider="v", kind=ErrorKind.transient)
        await anyio.sleep(3.0)  # a slow, recovering vendor: slower than hedge_after
        return "back"

    chain = guarded(ScriptedProvider(item, name="v", model="m"), max_attempts=1, hedge_after=1.0,
                    hedge_max_extra=1.0, breaker={"consecutive_failures": 1, "open_duration": 30.0})
    with pytest.raises(ProviderError):
        await chain.complete(REQUEST)
    await anyio.sleep(30.0)
    assert chain.state_for("m") is CircuitState.half_open
    vendor.update(fail=False, calls=0)
    if mode == "complete":
        answered = (await chain.complete(REQUEST)).content
    else:
        async with chain.stream(REQUEST) as events:
            answered = "".join([e.text async for e in events if isinstance(e, TextDelta)])
    assert answered == "back" and vendor["calls"] == 1  # one probe, one request: not hedged
    assert chain.state_for("m") is CircuitState.closed


async def test_a_hedge_below_a_closed_breaker_still_hedges() -> None:
    chain = guarded(ScriptedProvider(Slow([30.0, 1.0])), max_attempts=1, hedge_after=2.0, hedge_max_extra=1.0)
    response = await chain.complete(REQUEST)
    assert response.content == "ok after 1s"


async def test_a_primary_that_refuses_the_forced_tool_choice_is_never_hedged_to_another_member() -> None:
    """It refuses before sending: the call raises UnsupportedToolChoiceError, and no copy is sent (nor billed).

    With ``after=0`` the hedge is decided at once; trio runs ready tasks in a random order, so the primary may
    not have refused yet: many runs."""
    for run in range(30):
        for mode in ("complete", "stream", "nested"):
            rejecting = ScriptedProvider(["a"], name="a", model="m", rejects_forced_tool_choice={"m"})
            capable = ScriptedProvider(["b"], name="b", model="m2", latency=0.5)
            primary: Any = with_hedge(rejecting, after=0, max_extra=1.0) if mode == "nested" else rejecting
            hedged = with_hedge(primary, to=capable, after=0, max_extra=1.0)
            request = LLMRequest([Message.user("hi")], tools=[LOOKUP], tool_choice=ToolChoice.required())
            with recording() as rec, pytest.raises(UnsupportedToolChoiceError):
                if mode == "stream":
                    async with hedged.stream(request) as events:
                        async for _ in events:
                            pass
                else:
                    await hedged.complete(request)
            assert capable.calls == 0 and hedged.hedged == 0, (run, mode)
            assert not [e for e in rec.events if e.type.startswith("hedge.")], (run, mode)
            assert not pop_cut_short(request), (run, mode)  # nothing billed for a copy never sent


# --- a percentile ----------------------------------------------------------------------------------


async def test_a_percentile_waits_for_enough_latencies_then_hedges_the_slowest() -> None:
    delays = [1.0] * MIN_SAMPLES + [50.0, 1.0]
    provider = ScriptedProvider(Slow(delays))
    hedged = with_hedge(provider, after="p90", max_extra=1.0)
    assert hedged.delay() is None
    for _ in range(MIN_SAMPLES):
        await hedged.complete(REQUEST)
    assert hedged.hedged == 0 and hedged.delay() == pytest.approx(1.0)
    _, took = await timed(lambda: hedged.complete(REQUEST))
    assert hedged.hedged == 1 and took == pytest.approx(2.0)


def test_after_and_max_extra_are_checked() -> None:
    provider = ScriptedProvider("x")
    for bad in ("p0", "p100", "fast", -1.0, float("nan")):
        with pytest.raises(ValueError):
            with_hedge(provider, after=bad)
    with pytest.raises(ValueError):
        with_hedge(provider, max_extra=1.5)
    with pytest.raises(TypeError):
        with_hedge(provider, to=object())


# --- streams ---------------------------------------------------------------------------------------


async def collect(hedged: HedgeProvider) -> list[Any]:
    async with hedged.stream(REQUEST) as events:
        return [e async for e in events]


async def test_a_stream_slow_to_its_first_event_is_hedged_and_the_winner_relayed() -> None:
    slow = Slow([30.0, 1.0])
    hedged = with_hedge(ScriptedProvider(slow), after=2.0, max_extra=1.0)
    start = anyio.current_time()
    events = await collect(hedged)
    assert anyio.current_time() - start == pytest.approx(3.0)
    assert isinstance(events[-1], StreamEnd) and events[-1].response.content == "ok after 1s"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "ok after 1s"
    assert slow.cancelled == [30.0] and hedged.hedged == 1


async def test_a_stream_that_delivered_its_first_event_is_never_hedged() -> None:
    provider = ScriptedProvider("a long answer, slowly read")
    hedged = with_hedge(provider, after=1.0, max_extra=1.0)
    async with hedged.stream(REQUEST) as events:
        first = await events.__anext__()
        await anyio.sleep(10.0)  # the consumer is slow; the stream had its first event in time
        rest = [e async for e in events]
    assert isinstance(first, TextDelta) and isinstance(rest[-1], StreamEnd)
    assert provider.calls == 1 and hedged.hedged == 0


async def test_a_stream_failure_after_the_first_event_reaches_the_consumer() -> None:
    from agentactors.providers.scripted import StreamCut

    cut = StreamCut("partial answer", ProviderError("reset", provider="scripted", kind=ErrorKind.transient))
    hedged = with_hedge(ScriptedProvider([cut]), after=1.0, max_extra=1.0)
    with pytest.raises(StreamInterruptedError):
        await collect(hedged)


# --- in the preset ----------------------------------------------------------------------------------


async def test_resilient_chain_hedges_only_when_asked() -> None:
    plain = resilient_chain(ScriptedProvider("x"))
    assert "hedge" not in repr(describe_chain(plain)).lower()
    hedged = resilient_chain(ScriptedProvider(Slow([30.0, 1.0])), hedge_after=2.0, hedge_max_extra=1.0)
    assert "HedgeProvider" in repr(describe_chain(hedged))
    response = await hedged.complete(REQUEST)
    assert response.content == "ok after 1s"
