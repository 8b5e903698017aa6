"""Stream(request, pull=True): a streamed answer read in its asker's task — the same events, errors and budgets as a
fed ProviderStream, without the actor's feeding task; and the tool loop, which streams this way."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors import Agent
from agentactors.actors import Runtime
from agentactors.errors import (
    ActorStopped,
    AskTimeout,
    MalformedResponseError,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from agentactors.gateway import Complete, ProviderActor, PulledStream, Stream
from agentactors.messages import LLMRequest, LLMResponse, Message, StreamEnd, StreamEvent, TextDelta, Usage
from agentactors.redaction import register_secret
from tests.support.chains import leaks

pytestmark = pytest.mark.anyio

REQUEST = LLMRequest([Message.user("hello")])


class Dripping:
    """Streams ``n`` deltas ``pause`` seconds apart; counts what it produced and whether it was closed early.

    ``fail_after``: raise after that many deltas; ``end=False``: never send the StreamEnd; ``refuse``: raise
    this when the stream is opened (the request "goes out"); ``close_pause``: leaving the block awaits that long
    (a graceful close of the "connection").
    """

    name = "dripping"
    default_model = "m"
    carries_tools = True
    carries_forced_tool_choice = True

    def __init__(
        self, n: int, pause: float = 0.001, *, fail_after: int | None = None, end: bool = True,
        refuse: Exception | None = None, usage: Usage | None = None, close_pause: float = 0.0,
    ) -> None:
        self.n, self.pause, self.fail_after, self.end, self.refuse = n, pause, fail_after, end, refuse
        self.close_pause = close_pause
        self.usage = usage or Usage()
        self.produced = 0
        self.opened = 0
        self.closed_early = False
        self.finished = False

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse("complete")

    def stream(self, request: LLMRequest) -> Any:
        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            if self.refuse is not None:
                raise self.refuse
            self.opened += 1

            async def gen() -> AsyncGenerator[StreamEvent, None]:
                for i in range(self.n):
                    if self.fail_after is not None and i == self.fail_after:
                        raise ConnectionResetError("the vendor hung up")
                    self.produced += 1
                    yield TextDelta(f"{i} ")
                    await anyio.sleep(self.pause)
                self.finished = True  # every delta out: closing it now is not closing it early
                if self.end:
                    yield StreamEnd(LLMResponse("".join(f"{i} " for i in range(self.n)), usage=self.usage))

            events = gen()
            try:
                yield events
            finally:
                if not self.finished:
                    self.closed_early = True  # the "HTTP request" is closed
                await events.aclose()
                if self.close_pause:
                    await anyio.sleep(self.close_pause)

        return cm()

    async def aclose(self) -> None:
        pass


async def test_a_pulled_stream_reads_every_event_in_order_in_the_askers_task() -> None:
    provider = Dripping(5)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)
        stream = await ref.ask(Stream(REQUEST, pull=True))
        assert isinstance(stream, PulledStream) and provider.opened == 0  # opened by the first read
        async with stream:
            first = await stream.receive()
            assert rt.stats().tasks == 0  # no task feeds it
            assert provider.produced == 1  # and nothing reads ahead of the reader
            rest = [e async for e in stream]
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
    assert isinstance(first, TextDelta) and first.text == "0 "
    assert [e.text for e in rest if isinstance(e, TextDelta)] == ["1 ", "2 ", "3 ", "4 "]
    assert isinstance(rest[-1], StreamEnd) and not provider.closed_early


@pytest.mark.virtual_time
async def test_a_pulled_stream_holds_its_slot_until_it_ends() -> None:
    provider = Dripping(50)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=1)
        stream = await ref.ask(Stream(REQUEST, pull=True))
        with pytest.raises(AskTimeout):
            await ref.ask(Complete(REQUEST), timeout=5.0)  # the unfinished stream holds the only slot
        async with stream:
            events = [e async for e in stream]
        assert len(events) == 51
        assert (await ref.ask(Complete(REQUEST), timeout=5.0)).content == "complete"


@pytest.mark.virtual_time
async def test_closing_a_pulled_stream_early_closes_the_request_and_frees_the_slot() -> None:
    provider = Dripping(10_000)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=1)
        stream = await ref.ask(Stream(REQUEST, pull=True))
        async with stream:
            await stream.receive()
            await stream.receive()
        assert provider.closed_early and provider.produced == 2
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
        assert (await ref.ask(Complete(REQUEST), timeout=5.0)).content == "complete"


async def test_a_cancelled_reader_closes_the_request() -> None:
    provider = Dripping(10_000)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=1)

        async def consume() -> None:
            async with await ref.ask(Stream(REQUEST, pull=True)) as stream:
                async for _ in stream:
                    pass

        with anyio.move_on_after(0.05):
            await consume()
        assert provider.closed_early
        with anyio.fail_after(5):
            assert (await ref.ask(Complete(REQUEST))).content == "complete"  # the slot is back


async def test_a_failure_mid_stream_is_interrupted_with_the_text_before_it() -> None:
    provider = Dripping(10, fail_after=3)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=1)
        got: list[str] = []
        with pytest.raises(StreamInterruptedError) as info:
            async with await ref.ask(Stream(REQUEST, pull=True)) as stream:
                async for event in stream:
                    assert isinstance(event, TextDelta)
                    got.append(event.text)
        assert got == ["0 ", "1 ", "2 "] and info.value.partial_text == "0 1 2 "
        with anyio.fail_after(5):
            assert (await ref.ask(Complete(REQUEST))).content == "complete"


class _Leaky(Dripping):
    """Fails after its first delta with a foreign error whose text holds a registered key (a proxy echoed it)."""

    def stream(self, request: LLMRequest) -> Any:
        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            async def gen() -> AsyncGenerator[StreamEvent, None]:
                yield TextDelta("0 ")
                raise ConnectionResetError(f"reset by https://vendor.example/v1?key={LEAKED_KEY}")

            events = gen()
            try:
                yield events
            finally:
                await events.aclose()

        return cm()


LEAKED_KEY = "leaky-KEY-9f8e7d6c5b4a3f2e1d0c"  # not key-shaped: registration alone redacts it


@pytest.mark.parametrize("pull", [True, False])
async def test_a_mid_stream_failure_never_carries_a_registered_key_in_its_chain(pull: bool) -> None:
    register_secret(LEAKED_KEY)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, _Leaky(1), max_concurrency=1)
        with pytest.raises(StreamInterruptedError) as info:
            async with await ref.ask(Stream(REQUEST, pull=pull)) as stream:
                async for _ in stream:
                    pass
    assert info.value.partial_text == "0 "
    found = leaks(info.value, LEAKED_KEY)
    assert not found, found[0][:500]


async def test_a_failure_before_the_first_event_is_raised_as_it_is() -> None:
    refused = UnsupportedToolChoiceError("no forced tool choice here", provider="dripping", model="m")
    provider = Dripping(3, refuse=refused)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=1)
        with pytest.raises(UnsupportedToolChoiceError):
            async with await ref.ask(Stream(REQUEST, pull=True)) as stream:
                await stream.receive()
        with anyio.fail_after(5):
            assert (await ref.ask(Complete(REQUEST))).content == "complete"


async def test_a_stream_without_its_end_is_malformed() -> None:
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, Dripping(2, end=False))
        with pytest.raises(MalformedResponseError, match="without its final StreamEnd"):
            async with await ref.ask(Stream(REQUEST, pull=True)) as stream:
                [e async for e in stream]


@pytest.mark.virtual_time
async def test_a_reported_usage_settles_the_token_budget_as_a_fed_stream_does() -> None:
    request = LLMRequest([Message.user("x" * 196)])  # 50 tokens estimated

    async def three(pull: bool) -> list[float]:
        provider = Dripping(1, pause=0.0, usage=Usage(input_tokens=12, output_tokens=8))  # 20 of the 50
        times: list[float] = []
        async with Runtime() as rt:
            ref = ProviderActor.shared(rt, provider, tokens_per_minute=100)
            start = anyio.current_time()
            for _ in range(4):
                async with await ref.ask(Stream(request, pull=pull)) as stream:
                    times.append(anyio.current_time() - start)
                    [e async for e in stream]
        return times

    assert await three(True) == pytest.approx([0.0, 0.0, 0.0, 6.0])  # 4th: needs 50, has 40
    assert await three(False) == pytest.approx([0.0, 0.0, 0.0, 6.0])


async def test_close_before_the_first_read_gives_the_slot_back_at_once() -> None:
    provider = Dripping(3)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=1)
        stream = await ref.ask(Stream(REQUEST, pull=True))
        stream.close()
        assert provider.opened == 0
        with anyio.fail_after(5):
            assert (await ref.ask(Complete(REQUEST))).content == "complete"
        stream.release_unclaimed()  # idempotent


async def test_close_without_await_frees_the_slot_and_the_next_read_leaves_the_request() -> None:
    provider = Dripping(10_000)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=1)
        stream = await ref.ask(Stream(REQUEST, pull=True))
        await stream.receive()
        stream.close()
        with anyio.fail_after(5):
            assert (await ref.ask(Complete(REQUEST))).content == "complete"  # the slot went back at once
        before = provider.closed_early  # False: the block is the reading task's to leave...
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
        assert (before, provider.closed_early) == (False, True)  # ...which its next read did
        await stream.aclose()  # idempotent


async def test_a_timeout_inside_the_provider_is_its_error_not_a_cancellation() -> None:
    # with_timeout's stream holds a cancel scope of the reading task across reads: its expiry reaches the block
    # as a cancellation, which the block turns into its own error (interrupted: one event was read).
    from agentactors.resilience import with_timeout

    provider = with_timeout(Dripping(5, pause=10.0), idle=1.0)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)
        with pytest.raises(StreamInterruptedError) as info:
            async with await ref.ask(Stream(REQUEST, pull=True)) as stream:
                [e async for e in stream]
    assert "waiting for the next event timed out" in str(info.value) and info.value.partial_text == "0 "


@pytest.mark.virtual_time
async def test_a_cancellation_that_reaches_the_blocks_cleanup_of_a_failure_is_the_one_raised() -> None:
    # The read fails; leaving the provider's block with that failure awaits a graceful close, and the reader's
    # deadline passes meanwhile: what ends the read is the cancellation (its scope absorbs it), not the failure
    # the block was handed — and the slot goes back all the same.
    provider = Dripping(10, fail_after=3, close_pause=10.0)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=1)
        got: list[StreamEvent] = []
        with anyio.move_on_after(2.0) as deadline:
            async with await ref.ask(Stream(REQUEST, pull=True)) as stream:
                async for event in stream:
                    got.append(event)
        assert deadline.cancelled_caught and len(got) == 3 and provider.closed_early
        with anyio.fail_after(5):
            assert (await ref.ask(Complete(REQUEST))).content == "complete"


# -- the tool loop streams this way -------------------------------------------------------------------------


async def test_a_streamed_run_reads_its_answer_without_a_feeding_task() -> None:
    provider = Dripping(6, pause=0.01)
    seen: list[int] = []
    async with Runtime() as rt:
        agent = Agent(provider).bind(rt)

        def on_token(text: str) -> None:
            seen.append(rt.stats().tasks)

        result = await agent.run("go", on_token=on_token)
    assert result.error is None and result.content == " ".join(f"{i}" for i in range(6))
    assert len(seen) == 6 and set(seen) == {0}


@pytest.mark.virtual_time
async def test_a_runtime_exit_drains_a_streaming_run_then_stops_what_is_left() -> None:
    # A drain waits for a stream being read, as for any handler of the provider actor...
    provider = Dripping(5, pause=1.0)
    results: list[Any] = []
    async with anyio.create_task_group() as tg:
        async with Runtime(drain_timeout=60) as rt:
            agent = Agent(provider).bind(rt)

            async def run() -> None:
                results.append(await agent.run("go", on_token=lambda _: None))

            tg.start_soon(run)
            await anyio.sleep(1.5)
    assert results[0].error is None and provider.finished
    # ...and once its drain is over, the halt ends the run (its own actor's, as an ask to it would), the
    # request closed.
    provider = Dripping(100, pause=1.0)
    stopped: list[ActorStopped] = []
    async with anyio.create_task_group() as tg:
        async with Runtime(drain_timeout=2) as rt:
            agent = Agent(provider).bind(rt)

            async def cut() -> None:
                with pytest.raises(ActorStopped, match="was stopped while it ran") as info:
                    await agent.run("go", on_token=lambda _: None)
                stopped.append(info.value)

            tg.start_soon(cut)
            await anyio.sleep(1.5)
    assert stopped and provider.closed_early and 2 < provider.produced < 100


async def test_stopping_the_provider_actor_ends_a_streaming_run_with_actor_stopped() -> None:
    provider = Dripping(10_000, pause=0.001)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)
        agent = Agent(provider).bind(rt)  # the same shared actor as ref
        started = anyio.Event()
        result: list[Any] = []

        async def run() -> None:
            result.append(await agent.run("go", on_token=lambda _: started.set()))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            await rt.stop(ref, drain=False)
    assert "was stopped" in str(result[0].error) and provider.closed_early


async def test_a_pulled_stream_dropped_in_another_thread_gives_its_slot_back_in_the_loop() -> None:
    # Real time: a worker thread.  The finaliser runs where the last reference goes — here a worker thread, where
    # the scheduler must not be touched — so it hands the release to the loop.
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, Dripping(3), max_concurrency=1)
        held = [await ref.ask(Stream(REQUEST, pull=True))]
        await anyio.to_thread.run_sync(held.clear)  # the stream, unread and unclosed, collected in that thread
        assert (await ref.ask(Complete(REQUEST), timeout=5.0)).content
