"""A stream its consumer left before its end without an exception (it broke out of ``async for``, called
``aclose()`` or ``close()`` before the ``StreamEnd``) charges its call in flight, once (docs/costs.md, "Calls cut
short"); virtual time, both backends.

The call was sent and the vendor bills it — its prompt, and the output it had generated.  Before, only a cancelled
pulled stream was noted: a quiet early exit noted nothing, and ``with_retry`` around noted only the attempts it had
abandoned before the one in flight.  A stream read to its end, or left after its ``StreamEnd``, is charged by its
answer's usage alone, as before.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    CostBudget,
    ProviderActor,
    Runtime,
    with_retry,
    with_timeout,
)
from agentactors.messages import StreamEnd, TextDelta
from agentactors.pricing import cut_short_of, take_cut_short
from tests.support.cut_short import PIECE, PROMPT, USAGE, Vendor, in_flight, pulled, request
from tests.support.cut_short import unanswered as abandoned
from tests.support.prices import gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

ANSWERED = 10_000 * 2.5 / 1e6 + 300 * 10.0 / 1e6


def retried(vendor: Vendor) -> Any:
    """A retry whose timeout gives up on an attempt without a first event by 5 s."""
    return with_retry(with_timeout(vendor, first_event=5.0), base_delay=0.0)


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
