"""A stream its consumer left before its end without an exception (it broke out of ``async for``, called
``aclose()`` or ``close()`` before the ``StreamEnd``) charges its call in flight, once (docs/costs.md, "Calls cut
short"); virtual time, both backends.

The call was sent and the vendor bills it — its prompt, and the output it had generated.  Before, only a cancelled
pulled stream was noted: a quiet early exit noted nothing, and ``with_retry`` around noted only the attempts it had
abandoned before the one in flight.  A stream read to its end, or left after its ``StreamEnd``, is charged by its
answer's usage alone, as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    CostBudget,
    LLMRequest,
    LLMResponse,
    Message,
    ProviderActor,
    Runtime,
    Usage,
    with_retry,
    with_timeout,
)
from agentactors.gateway import PulledStream, Stream
from agentactors.messages import StreamEnd, StreamEvent, TextDelta
from agentactors.pricing import CutShort, cut_short_of, take_cut_short
from tests.support.prices import gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

PROMPT = "x" * 40_000  # ~10,000 prompt tokens: $0.025 at gpt-4o's input price
PIECE = "y" * 400  # ~100 output tokens a delta: $0.001 at gpt-4o's output price
USAGE = Usage(10_000, 300)
ANSWERED = 10_000 * 2.5 / 1e6 + 300 * 10.0 / 1e6


class Vendor:
    """Streams three deltas of :data:`PIECE` one second apart, then its ``StreamEnd`` at :data:`USAGE`.

    ``silent``: that many of its first calls send nothing for a long while (a ``with_timeout`` gives up on them).
    Counts the calls sent, and those whose stream was closed before its end.
    """

    name = "openai"
    default_model = "gpt-4o"
    carries_tools = True
    carries_forced_tool_choice = True

    def __init__(self, silent: int = 0) -> None:
        self.silent = silent
        self.sent = 0
        self.closed_early = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover - streamed only
        raise AssertionError("streamed only")

    def stream(self, request: LLMRequest) -> Any:
        return self._stream()

    @asynccontextmanager
    async def _stream(self) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        self.sent += 1
        hangs = self.sent <= self.silent
        ended = False

        async def events() -> AsyncIterator[StreamEvent]:
            nonlocal ended
            if hangs:
                await anyio.sleep(1000)
            for _ in range(3):
                await anyio.sleep(1.0)
                yield TextDelta(PIECE)
            ended = True
            yield StreamEnd(LLMResponse(PIECE * 3, usage=USAGE, provider="openai", model="gpt-4o"))

        gen = events()
        try:
            yield gen
        finally:
            if not ended:
                self.closed_early += 1
            with anyio.CancelScope(shield=True):
                await gen.aclose()  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        pass


def retried(vendor: Vendor) -> Any:
    """A retry whose timeout gives up on an attempt without a first event by 5 s."""
    return with_retry(with_timeout(vendor, first_event=5.0), base_delay=0.0)


def request() -> LLMRequest:
    return LLMRequest([Message.user(PROMPT)])


async def pulled(rt: Runtime, provider: Any, req: LLMRequest) -> PulledStream:
    stream = await ProviderActor.shared(rt, provider).ask(Stream(req, pull=True))
    assert isinstance(stream, PulledStream)
    return stream


def in_flight(call: CutShort, deltas: int) -> None:
    """``call`` is the call in flight's charge: its prompt and the ``deltas`` it had delivered, estimated."""
    assert call.estimated and call.provider == "openai" and call.model == "gpt-4o"
    assert call.input_tokens == pytest.approx(10_000, rel=0.01)
    assert call.output_tokens == deltas * 100


def abandoned(call: CutShort) -> None:
    """``call`` is an attempt abandoned before its first event: its prompt alone, estimated."""
    assert call.estimated and call.input_tokens == pytest.approx(10_000, rel=0.01) and call.output_tokens == 0


# --- a bare ProviderActor stream ---------------------------------------------------------------------------------


async def test_a_pulled_stream_broken_out_of_charges_its_call_with_what_it_delivered(anyio_backend: Any) -> None:
    vendor, req = Vendor(), request()
    async with Runtime() as rt:
        stream = await pulled(rt, vendor, req)
        async with stream:
            async for event in stream:
                assert isinstance(event, TextDelta)
                break
    assert vendor.closed_early == 1
    (call,) = take_cut_short(req)
    in_flight(call, 1)


async def test_a_pulled_stream_closed_with_aclose_charges_its_call_once(anyio_backend: Any) -> None:
    vendor, req = Vendor(), request()
    async with Runtime() as rt:
        stream = await pulled(rt, vendor, req)
        await stream.receive()
        await stream.receive()
        await stream.aclose()
        await stream.aclose()  # idempotent: not noted twice
        async with stream:  # nor by leaving a block after it
            pass
    (call,) = take_cut_short(req)
    in_flight(call, 2)


async def test_a_pulled_stream_closed_without_await_charges_its_call_when_it_is_left(anyio_backend: Any) -> None:
    # close() gives the slot back at once; the provider's stream is left by the reading task's next read.
    vendor, req = Vendor(), request()
    async with Runtime() as rt:
        stream = await pulled(rt, vendor, req)
        await stream.receive()
        stream.close()
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
        await stream.aclose()
    assert vendor.closed_early == 1
    (call,) = take_cut_short(req)
    in_flight(call, 1)


async def test_a_pulled_stream_closed_before_its_first_read_charges_nothing(anyio_backend: Any) -> None:
    # Opened by the first read: closed before it, the request never went out.
    vendor, req = Vendor(), request()
    async with Runtime() as rt:
        stream = await pulled(rt, vendor, req)
        await stream.aclose()
    assert vendor.sent == 0
    assert take_cut_short(req) == ()


async def test_a_pulled_stream_read_to_its_end_notes_nothing(anyio_backend: Any) -> None:
    # The common path: charged by its StreamEnd's usage; leaving the block after it adds nothing.
    vendor, req = Vendor(), request()
    async with Runtime() as rt:
        stream = await pulled(rt, vendor, req)
        async with stream:
            events = [event async for event in stream]
        await stream.aclose()
    assert isinstance(events[-1], StreamEnd) and events[-1].response.usage == USAGE
    assert vendor.closed_early == 0
    assert take_cut_short(req) == ()


async def test_a_pulled_stream_left_right_after_its_end_notes_nothing(anyio_backend: Any) -> None:
    vendor, req = Vendor(), request()
    async with Runtime() as rt:
        stream = await pulled(rt, vendor, req)
        async with stream:
            async for event in stream:
                if isinstance(event, StreamEnd):
                    break
    assert take_cut_short(req) == ()


# --- under with_retry --------------------------------------------------------------------------------------------


async def test_a_retried_pulled_stream_left_early_charges_its_call_in_flight_once(anyio_backend: Any) -> None:
    # No attempt abandoned: the retry notes nothing of its own, the ProviderActor's stream notes the call.
    vendor, req = Vendor(), request()
    async with Runtime() as rt:
        stream = await pulled(rt, retried(vendor), req)
        async with stream:
            await stream.receive()
    (call,) = take_cut_short(req)
    in_flight(call, 1)


async def test_a_retried_pulled_stream_left_early_charges_the_abandoned_attempt_and_the_one_in_flight(
    anyio_backend: Any,
) -> None:
    # Attempt 1 gives no first event by 5 s and is abandoned; attempt 2 streams, and the consumer leaves after two
    # deltas.  Before, the retry noted attempt 1 alone, and the ProviderActor's stream kept that note (an inner
    # layer's word is kept): attempt 2, sent and billed, was never charged.
    vendor, req = Vendor(silent=1), request()
    async with Runtime() as rt:
        stream = await pulled(rt, retried(vendor), req)
        async with stream:
            await stream.receive()
            await stream.receive()
    assert vendor.sent == 2
    first, second = take_cut_short(req)
    abandoned(first)
    in_flight(second, 2)


async def test_a_bare_retried_stream_left_early_notes_the_attempt_in_flight_too(anyio_backend: Any) -> None:
    vendor, req = Vendor(silent=2), request()
    async with retried(vendor).stream(req) as events:
        async for event in events:
            assert isinstance(event, TextDelta)
            break
    first, second, third = take_cut_short(req)
    abandoned(first)
    abandoned(second)
    in_flight(third, 1)


async def test_a_retried_stream_read_to_its_end_charges_the_abandoned_attempt_on_its_end_only(
    anyio_backend: Any,
) -> None:
    vendor, req = Vendor(silent=1), request()
    async with Runtime() as rt:
        stream = await pulled(rt, retried(vendor), req)
        async with stream:
            events = [event async for event in stream]
    end = events[-1]
    assert isinstance(end, StreamEnd)
    (carried,) = cut_short_of(end.response)
    abandoned(carried)
    assert take_cut_short(req) == ()


# --- a run ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wrap", [False, True], ids=["plain", "retried"])
async def test_a_streamed_run_its_consumer_left_early_is_charged_its_call_in_flight_once(
    anyio_backend: Any, wrap: bool
) -> None:
    vendor = Vendor(silent=1 if wrap else 0)
    provider = retried(vendor) if wrap else vendor
    budget = CostBudget()
    with budget, anyio.fail_after(100):
        async with Runtime() as rt:
            agent = Agent(ProviderActor.shared(rt, provider))
            async with agent.stream(PROMPT, runtime=rt) as run:
                async for text in run.text_stream():
                    assert text == PIECE
                    break
    attempts = 2 if wrap else 1
    assert budget.calls == attempts
    expected = attempts * 10_001 * 2.5 / 1e6 + 100 * 10.0 / 1e6  # every prompt sent, and one delta delivered
    assert budget.spent == pytest.approx(expected, rel=0.01)
    assert budget.estimated == budget.spent


@pytest.mark.parametrize("wrap", [False, True], ids=["plain", "retried"])
async def test_a_run_whose_on_token_consumer_stops_it_is_charged_its_call_in_flight_once(
    anyio_backend: Any, wrap: bool
) -> None:
    vendor = Vendor(silent=1 if wrap else 0)
    provider = retried(vendor) if wrap else vendor
    budget = CostBudget()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            agent = Agent(ProviderActor.shared(rt, provider))
            with anyio.CancelScope() as scope:
                await agent.run(PROMPT, runtime=rt, cost_limit=budget, on_token=lambda _: scope.cancel())
    assert scope.cancelled_caught
    attempts = 2 if wrap else 1
    assert budget.calls == attempts
    expected = attempts * 10_001 * 2.5 / 1e6 + 100 * 10.0 / 1e6
    assert budget.spent == pytest.approx(expected, rel=0.01)
    assert budget.estimated == budget.spent


@pytest.mark.parametrize("wrap", [False, True], ids=["plain", "retried"])
async def test_a_streamed_run_read_to_its_end_costs_its_answer_as_before(anyio_backend: Any, wrap: bool) -> None:
    vendor = Vendor(silent=1 if wrap else 0)
    provider = retried(vendor) if wrap else vendor
    budget = CostBudget()
    with budget, anyio.fail_after(100):
        async with Runtime() as rt:
            agent = Agent(ProviderActor.shared(rt, provider))
            async with agent.stream(PROMPT, runtime=rt) as run:
                result = await run.wait()
    assert result.content == PIECE * 3 and result.usage == USAGE
    assert result.cost is not None and result.cost.total == pytest.approx(budget.spent)
    assert budget.calls == (2 if wrap else 1)
    assert budget.estimated == (pytest.approx(0.025, rel=0.01) if wrap else 0.0)
    assert budget.spent == pytest.approx(ANSWERED + budget.estimated)
