"""with_timeout: attempt, first-event and idle bounds; only its own cancellation becomes ProviderTimeout."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.errors import ErrorKind, ProviderTimeout, StreamInterruptedError
from agentactors.gateway.provider import ProviderActor, Stream
from agentactors.messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent, TextDelta
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import with_circuit_breaker, with_fallback, with_retry, with_timeout
from tests.support.resilience import REQ

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Paced:
    """Streams ``TextDelta`` events, each after its delay; then ``StreamEnd``.  Counts streams opened."""

    name = "paced"
    default_model = "paced-1"
    carries_tools = True
    carries_forced_tool_choice = True

    def __init__(
        self, *scripts: Sequence[tuple[float, str]], complete_delay: float = 0.0, open_delay: float = 0.0
    ) -> None:
        self.scripts = list(scripts)
        self.complete_delay = complete_delay
        self.open_delay = open_delay  # sending the request and reading the answer's headers
        self.opened = 0
        self.closed_streams = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        await anyio.sleep(self.complete_delay)
        return LLMResponse("done", provider=self.name)

    def stream(self, request: LLMRequest) -> Any:
        script = self.scripts[self.opened]
        self.opened += 1

        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            async def gen() -> AsyncIterator[StreamEvent]:
                text = ""
                for delay, piece in script:
                    await anyio.sleep(delay)
                    text += piece
                    yield TextDelta(piece)
                yield StreamEnd(LLMResponse(text, provider=self.name))

            await anyio.sleep(self.open_delay)
            events = gen()
            try:
                yield events
            finally:
                self.closed_streams += 1
                await events.aclose()  # type: ignore[attr-defined]  # not left to the collector (trio warns)

        return cm()

    async def aclose(self) -> None:
        pass


async def read_all(provider: Any, *, pause: float = 0.0) -> str:
    text = ""
    async with provider.stream(REQ) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                text += event.text
            await anyio.sleep(pause)
    return text


async def test_attempt_bounds_complete() -> None:
    with pytest.raises(ProviderTimeout) as info:
        await with_timeout(Paced(complete_delay=10), attempt=3).complete(REQ)
    assert anyio.current_time() == 3.0
    assert info.value.kind is ErrorKind.transient and info.value.retryable
    assert "3s" in str(info.value) and info.value.provider == "paced"
    assert (await with_timeout(Paced(complete_delay=2), attempt=3).complete(REQ)).content == "done"


async def test_an_outer_cancellation_at_the_same_instant_is_not_swallowed() -> None:
    p = with_timeout(Paced(complete_delay=10), attempt=3)
    with anyio.move_on_after(3) as outer:
        await p.complete(REQ)
        pytest.fail("the outer scope's cancellation was turned into a return")
    assert outer.cancelled_caught


async def test_an_earlier_outer_cancellation_propagates_unchanged() -> None:
    p = with_timeout(Paced([(10, "late")]), attempt=5, first_event=4, idle=1)
    with anyio.move_on_after(2) as outer:
        await read_all(p)
    assert outer.cancelled_caught
    assert anyio.current_time() == 2.0


async def test_first_event_bounds_the_time_to_first_token() -> None:
    p = Paced([(5, "slow start")])
    with pytest.raises(ProviderTimeout) as info:
        await read_all(with_timeout(p, first_event=2))
    assert anyio.current_time() == 2.0
    assert "first event" in str(info.value)
    assert p.closed_streams == 1
    assert await read_all(with_timeout(Paced([(1, "fast")]), first_event=2)) == "fast"


async def test_idle_after_the_first_event_interrupts_the_stream_with_the_partial_text() -> None:
    p = Paced([(0, "one "), (0.5, "two "), (3, "three")])
    with pytest.raises(StreamInterruptedError) as info:
        await read_all(with_timeout(p, idle=1))
    assert anyio.current_time() == 1.5
    assert info.value.partial_text == "one two "
    assert isinstance(info.value.__cause__, ProviderTimeout)
    assert info.value.retryable is False


async def test_the_consumers_own_time_is_not_idleness() -> None:
    p = Paced([(0, "one "), (0.5, "two "), (0.5, "three")])
    assert await read_all(with_timeout(p, idle=1), pause=10) == "one two three"


async def test_a_slow_consumer_of_a_fast_stream_never_times_out_through_the_recommended_stack() -> None:
    # Every event is ready at once; the consumer takes 10 s over each.  Neither idle nor first_event may fire.
    p = Paced([(0, "one "), (0, "two "), (0, "three")])
    chain = with_fallback(with_circuit_breaker(with_retry(with_timeout(p, first_event=1, idle=1))))
    assert await read_all(chain, pause=10) == "one two three"
    assert anyio.current_time() == 40.0
    assert p.opened == 1


async def test_a_slow_consumer_behind_a_provider_actor_never_times_out_on_idle() -> None:
    # With no buffer the actor's feeding task waits on the consumer for every event: still not idleness.
    p = Paced([(0.2, "one "), (0.2, "two "), (0.2, "three")])
    chain = with_fallback(with_circuit_breaker(with_retry(with_timeout(p, first_event=1, idle=1))))
    text = ""
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, chain, stream_buffer=0)
        async with await ref.ask(Stream(REQ)) as stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    text += event.text
                await anyio.sleep(5)
    assert text == "one two three"
    assert p.opened == 1


async def test_the_consumers_time_before_its_first_read_is_not_the_vendors() -> None:
    p = Paced([(1, "on time")], open_delay=0.5)
    async with with_timeout(p, first_event=2).stream(REQ) as events:
        await anyio.sleep(5)  # busy before reading: neither the vendor's time nor cancelled by its bound
        text = "".join([e.text async for e in events if isinstance(e, TextDelta)])
    assert text == "on time"
    assert anyio.current_time() == 6.5


async def test_the_first_event_bound_resumes_with_what_opening_the_stream_left_of_it() -> None:
    # Opening took 1.5 of the 2 s; the consumer reads at 6.5 and the vendor needs 1 s more: late by 0.5 s.
    p = Paced([(1, "late")], open_delay=1.5)
    with pytest.raises(ProviderTimeout) as info:
        async with with_timeout(p, first_event=2).stream(REQ) as events:
            await anyio.sleep(5)
            async for _ in events:
                pass
    assert anyio.current_time() == 7.0
    assert "first event timed out after 2s" in str(info.value)


async def test_attempt_bounds_the_whole_stream_consumer_included() -> None:
    p = Paced([(0, "one "), (1, "two "), (1, "three")])
    with pytest.raises(StreamInterruptedError) as info:
        await read_all(with_timeout(p, attempt=4), pause=1.5)
    assert anyio.current_time() == 4.0
    assert info.value.partial_text.startswith("one ")


async def test_attempt_wins_when_nearer_than_first_event() -> None:
    with pytest.raises(ProviderTimeout) as info:
        await read_all(with_timeout(Paced([(10, "x")]), attempt=1, first_event=5))
    assert anyio.current_time() == 1.0
    assert "stream" in str(info.value)


async def test_a_stream_finishing_in_time_is_untouched() -> None:
    p = Paced([(0.5, "alpha "), (0.5, "beta")])
    events: list[StreamEvent] = []
    async with with_timeout(p, attempt=5, first_event=1, idle=1).stream(REQ) as stream:
        events = [e async for e in stream]
    assert [type(e).__name__ for e in events] == ["TextDelta", "TextDelta", "StreamEnd"]
    # Leaving the block after the attempt bound passed does not turn a finished stream into an error.
    await anyio.sleep(10)


async def test_retry_retries_a_first_event_timeout_with_a_fresh_bound() -> None:
    p = Paced([(5, "never")], [(0.5, "second try")])
    text = await read_all(with_retry(with_timeout(p, first_event=1), jitter=(1.0, 1.0)))
    assert text == "second try"
    assert p.opened == 2
    assert anyio.current_time() == 1 + 0.5 + 0.5


async def test_no_bounds_means_no_wrapping() -> None:
    p = ScriptedProvider(["hello world"])
    assert await read_all(with_timeout(p)) == "hello world"
    assert (await with_timeout(ScriptedProvider(["x"])).complete(REQ)).content == "x"


@pytest.mark.parametrize("kwargs", [{"attempt": 0}, {"first_event": -1}, {"idle": float("nan")}])
async def test_invalid_bounds_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        with_timeout(Paced(), **kwargs)
