"""ProviderActor: Complete / Stream, cancellation reaching the provider, concurrency and rate budgets."""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.errors import (
    ActorStopped,
    AskTimeout,
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from agentactors.events import EventSink, InMemoryRecorder, emit, use_sink
from agentactors.gateway import Complete, ProviderActor, ProviderStream, Stream, estimate_tokens
from agentactors.messages import (
    LLMRequest,
    LLMResponse,
    Message,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolChoice,
    ToolSpec,
    Usage,
)
from agentactors.providers.scripted import ScriptedProvider, StreamCut

pytestmark = pytest.mark.anyio

REQUEST = LLMRequest([Message.user("hello")])


def request_of(chars: int) -> LLMRequest:
    return LLMRequest([Message.user("x" * chars)])


class Gate:
    """A script callable that waits on an event, counting calls in flight and noticing cancellation."""

    def __init__(self, *, hold: float | None = None) -> None:
        self.release = anyio.Event()
        self.started = anyio.Event()
        self.in_flight = 0
        self.max_in_flight = 0
        self.cancelled = 0
        self.times: list[float] = []
        self.hold = hold

    async def __call__(self, request: LLMRequest) -> str:
        self.times.append(anyio.current_time())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.started.set()
        try:
            if self.hold is not None:
                await anyio.sleep(self.hold)
            else:
                await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        finally:
            self.in_flight -= 1
        return "done"


async def test_complete_answers_the_providers_response() -> None:
    provider = ScriptedProvider(["first", "second"])
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)
        assert ProviderActor.shared(rt, provider) is ref  # one actor per provider object
        first = await ref.ask(Complete(REQUEST))
        second = await ref.ask(Complete(REQUEST))
    assert isinstance(first, LLMResponse)
    assert (first.content, second.content) == ("first", "second")
    assert provider.closed  # the runtime closes the providers it started actors for


async def test_provider_errors_reach_the_asker_and_the_actor_goes_on() -> None:
    error = ProviderError("overloaded", provider="scripted", kind=ErrorKind.transient, status=529)
    provider = ScriptedProvider([error, "fine"])
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)
        with pytest.raises(ProviderError) as info:
            await ref.ask(Complete(REQUEST))
        assert info.value is error
        assert (await ref.ask(Complete(REQUEST))).content == "fine"


async def test_unknown_messages_are_a_type_error() -> None:
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider([]))
        with pytest.raises(TypeError, match="Complete and Stream"):
            await ref.ask("hello")


async def test_asker_cancellation_cancels_the_provider_call() -> None:
    gate = Gate()
    provider = ScriptedProvider(gate)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, Complete(REQUEST))
            await gate.started.wait()
            tg.cancel_scope.cancel()
        await rt.wait_idle()
        assert gate.cancelled == 1
        assert rt.stats().tasks == 0
        # The actor goes on.
        gate.release.set()
        assert (await ref.ask(Complete(REQUEST))).content == "done"


@pytest.mark.virtual_time
async def test_ask_timeout_cancels_the_provider_call() -> None:
    gate = Gate()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(gate))
        with pytest.raises(AskTimeout):
            await ref.ask(Complete(REQUEST), timeout=0.1)
        assert anyio.current_time() == pytest.approx(0.1)
        await rt.wait_idle()
        assert gate.cancelled == 1


@pytest.mark.virtual_time
async def test_max_concurrency_bounds_requests_in_flight() -> None:
    gate = Gate(hold=1.0)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(gate), max_concurrency=3)
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(ref.ask, Complete(REQUEST))
    assert gate.max_in_flight == 3
    assert len(gate.times) == 20
    assert anyio.current_time() == pytest.approx(7.0)  # ceil(20 / 3) rounds of 1 s


@pytest.mark.virtual_time
async def test_streams_count_against_max_concurrency_until_they_end() -> None:
    provider = CountingStreamProvider(50)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=1, stream_buffer=2)
        stream = await ref.ask(Stream(REQUEST))
        with pytest.raises(AskTimeout):
            await ref.ask(Complete(REQUEST), timeout=5.0)  # the unfinished stream holds the only slot
        async with stream:
            events = [e async for e in stream]
        assert len(events) == 51
        assert (await ref.ask(Complete(REQUEST), timeout=5.0)).content == "complete"


@pytest.mark.virtual_time
async def test_requests_per_minute_spaces_calls_and_emits_throttled_events() -> None:
    rec = InMemoryRecorder()
    gate = Gate(hold=0.0)
    async with Runtime(recorders=[rec]) as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(gate), requests_per_minute=2)
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(ref.ask, Complete(REQUEST))
    # A burst of a minute's budget, then one request every 30 s.
    assert gate.times == pytest.approx([0.0, 0.0, 30.0, 60.0, 90.0])
    throttled = rec.of_type("provider.throttled")
    assert len(throttled) == 3
    assert all(e.budget == "requests" and e.provider == "scripted" for e in throttled)
    assert [e.wait for e in throttled] == pytest.approx([30.0, 30.0, 30.0])


@pytest.mark.virtual_time
async def test_throttled_events_reach_the_askers_run() -> None:
    run = InMemoryRecorder()
    gate = Gate(hold=0.0)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(gate), requests_per_minute=1)
        with use_sink(EventSink([run], run_id="run-7")):
            await ref.ask(Complete(REQUEST))
            await ref.ask(Complete(REQUEST))
    [event] = run.of_type("provider.throttled")
    assert event.run_id == "run-7"
    assert event.wait == pytest.approx(60.0)


@pytest.mark.virtual_time
async def test_tokens_per_minute_uses_the_estimate_corrected_by_reported_usage() -> None:
    request = request_of(196)  # 196 // 4 + 1 = 50 tokens estimated
    assert estimate_tokens(request) == 50

    async def run(reported: Usage) -> tuple[list[float], list[Any]]:
        rec = InMemoryRecorder()
        times: list[float] = []
        start = anyio.current_time()

        async def answer(req: LLMRequest) -> LLMResponse:
            times.append(anyio.current_time() - start)
            return LLMResponse("ok", usage=reported)

        async with Runtime(recorders=[rec]) as rt:
            ref = ProviderActor.shared(rt, ScriptedProvider(answer), tokens_per_minute=100)
            for _ in range(4):
                await ref.ask(Complete(request))
        return times, rec.of_type("provider.throttled")

    # Usage reported (20 tokens each): 30 of each 50 come back, so the budget lasts longer.
    times, throttled = await run(Usage(input_tokens=12, output_tokens=8))
    assert times == pytest.approx([0.0, 0.0, 0.0, 6.0])  # 4th: needs 50, has 40, refills 100/60 a second
    assert [e.budget for e in throttled] == ["tokens"]
    # No usage reported: the estimate stands.
    times, throttled = await run(Usage())
    assert times == pytest.approx([0.0, 0.0, 30.0, 60.0])
    assert len(throttled) == 2


@pytest.mark.virtual_time
async def test_a_request_larger_than_the_token_budget_waits_for_a_full_bucket_then_goes() -> None:
    gate = Gate(hold=0.0)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(gate), tokens_per_minute=10)
        await ref.ask(Complete(request_of(400)))  # ~101 tokens > 10: goes on a full bucket
        await ref.ask(Complete(request_of(4)))  # bucket is deeply negative now: waits, but not forever
    assert gate.times[0] == 0.0
    assert gate.times[1] == pytest.approx(60.0 * 93 / 10)  # from -91 back up to 2


async def test_budget_arguments_are_validated_and_conflicting_budgets_refused() -> None:
    with pytest.raises(ValueError):
        ProviderActor(ScriptedProvider([]), max_concurrency=0)
    with pytest.raises(ValueError):
        ProviderActor(ScriptedProvider([]), requests_per_minute=0)
    provider = ScriptedProvider([])
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=4)
        assert ProviderActor.shared(rt, provider) is ref
        with pytest.raises(ValueError, match="already has a ProviderActor"):
            ProviderActor.shared(rt, provider, max_concurrency=8)


async def test_the_provider_sees_the_askers_contextvars() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("provider_test_var", default="unset")
    seen: list[str] = []
    run = InMemoryRecorder()

    async def answer(request: LLMRequest) -> str:
        seen.append(var.get())
        emit("decorator.saw", value=var.get())  # what a resilience decorator does
        return "ok"

    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(answer))
        var.set("from the asker")
        with use_sink(EventSink([run], run_id="r1")):
            await ref.ask(Complete(REQUEST))
            stream = await ref.ask(Stream(REQUEST))
            async with stream:
                [e async for e in stream]
    assert seen == ["from the asker", "from the asker"]
    assert [(e.run_id, e.value) for e in run.of_type("decorator.saw")] == [("r1", "from the asker")] * 2


async def test_stream_delivers_the_events_in_order() -> None:
    provider = ScriptedProvider(["the quick brown fox jumps over"])
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)
        stream = await ref.ask(Stream(REQUEST))
        assert isinstance(stream, ProviderStream)
        async with stream:
            events = [e async for e in stream]
        await rt.wait_idle()
        assert rt.stats().tasks == 0
    assert all(isinstance(e, TextDelta) for e in events[:-1])
    assert "".join(e.text for e in events[:-1] if isinstance(e, TextDelta)) == "the quick brown fox jumps over"
    assert isinstance(events[-1], StreamEnd)
    assert events[-1].response.content == "the quick brown fox jumps over"


class CountingStreamProvider:
    """Streams ``n`` deltas, counting how many it produced and whether it was closed early."""

    name = "counting"
    default_model = "m"
    carries_tools = True
    carries_forced_tool_choice = True

    def __init__(self, n: int) -> None:
        self.n = n
        self.produced = 0
        self.closed_early = False
        self.finished = False

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse("complete")

    def stream(self, request: LLMRequest) -> Any:
        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            async def gen() -> AsyncGenerator[StreamEvent, None]:
                for i in range(self.n):
                    self.produced += 1
                    yield TextDelta(f"{i} ")
                    await anyio.sleep(0.001)
                yield StreamEnd(LLMResponse("".join(f"{i} " for i in range(self.n))))
                self.finished = True

            events = gen()
            try:
                yield events
            finally:
                if not self.finished:
                    self.closed_early = True  # the "HTTP request" is closed
                await events.aclose()

        return cm()

    async def aclose(self) -> None:
        pass


@pytest.mark.virtual_time
async def test_a_stream_has_backpressure() -> None:
    provider = CountingStreamProvider(40)
    async with Runtime() as rt:
        ref = rt.spawn(ProviderActor(provider, stream_buffer=2), concurrency=4)
        stream = await ref.ask(Stream(REQUEST))
        async with stream:
            first = await stream.receive()
            await anyio.sleep(1.0)  # a slow consumer: the producer may run ahead only by the buffer
            assert provider.produced <= 1 + 2 + 1  # received + buffered + one blocked in send
            rest = [e async for e in stream]
    texts = [first.text] + [e.text for e in rest if isinstance(e, TextDelta)]
    assert texts == [f"{i} " for i in range(40)]
    assert isinstance(rest[-1], StreamEnd)


async def test_an_error_mid_stream_reaches_the_consumer_after_the_events_before_it() -> None:
    cut = ProviderError("connection reset", provider="scripted", kind=ErrorKind.transient)
    provider = ScriptedProvider([StreamCut("partial answer text", cut)])
    got: list[str] = []
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)
        stream = await ref.ask(Stream(REQUEST))
        with pytest.raises(StreamInterruptedError) as info:
            async with stream:
                async for event in stream:
                    assert isinstance(event, TextDelta)
                    got.append(event.text)
        await rt.wait_idle()
        assert rt.stats().tasks == 0
    assert "".join(got) == "partial answer text"
    assert info.value.partial_text == "partial answer text"


async def test_an_error_before_the_first_event_is_raised_as_is() -> None:
    provider = ScriptedProvider(["unused"], carries_forced_tool_choice=False)
    tool = ToolSpec("t", "a tool", {"type": "object", "properties": {}})
    forced = LLMRequest([Message.user("x")], tools=[tool], tool_choice=ToolChoice.required())
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)
        stream = await ref.ask(Stream(forced))
        with pytest.raises(UnsupportedToolChoiceError):
            async with stream:
                await stream.receive()


async def test_a_provider_that_breaks_the_contract_mid_stream_still_gives_a_typed_error() -> None:
    class Bad(CountingStreamProvider):
        def stream(self, request: LLMRequest) -> Any:
            @asynccontextmanager
            async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
                async def gen() -> AsyncIterator[StreamEvent]:
                    yield TextDelta("half ")
                    raise KeyError("a bug")

                yield gen()

            return cm()

    class NoEnd(CountingStreamProvider):
        def stream(self, request: LLMRequest) -> Any:
            @asynccontextmanager
            async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
                async def gen() -> AsyncIterator[StreamEvent]:
                    yield TextDelta("no end")

                yield gen()

            return cm()

    async with Runtime() as rt:
        stream = await ProviderActor.shared(rt, Bad(1)).ask(Stream(REQUEST))
        with pytest.raises(StreamInterruptedError) as info:
            async with stream:
                [e async for e in stream]
        assert info.value.partial_text == "half "
        stream = await ProviderActor.shared(rt, NoEnd(1)).ask(Stream(REQUEST))
        with pytest.raises(MalformedResponseError):
            async with stream:
                [e async for e in stream]


async def test_closing_the_stream_early_cancels_the_feeder_and_the_request() -> None:
    provider = CountingStreamProvider(10_000)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)
        stream = await ref.ask(Stream(REQUEST))
        async with stream:
            await stream.receive()
            await stream.receive()
        with anyio.fail_after(5):
            await rt.wait_idle()
        assert provider.closed_early
        assert provider.produced < 100
        assert rt.stats().tasks == 0
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()


async def test_an_asker_cancelled_while_consuming_cancels_the_request() -> None:
    provider = CountingStreamProvider(10_000)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)

        async def consume() -> None:
            stream = await ref.ask(Stream(REQUEST))
            async with stream:
                async for _ in stream:
                    pass

        with anyio.move_on_after(0.05):
            await consume()
        with anyio.fail_after(5):
            await rt.wait_idle()
        assert provider.closed_early
        assert rt.stats().tasks == 0


async def test_a_stream_whose_runtime_closes_ends_with_actor_stopped() -> None:
    provider = CountingStreamProvider(10_000)
    async with Runtime(drain_timeout=0.01) as rt:
        stream: ProviderStream = await ProviderActor.shared(rt, provider).ask(Stream(REQUEST))
        await stream.receive()
    assert provider.closed_early
    with pytest.raises(ActorStopped):
        while True:
            await stream.receive()
