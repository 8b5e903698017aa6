"""A stream left before its ``StreamEnd`` charges every call it sent, once — under ``with_hedge``, under
``with_fallback``, and fed by a ``ProviderActor`` (``pull=False``) (docs/costs.md, "Calls cut short"); virtual time,
both backends.

Three gaps closed here.  A hedged stream left quietly (read one event, leave) noted only its losing copies: the
pulled stream around keeps an inner layer's note, so the winning copy in flight — sent, billed — was never charged.
A fallback chain dropped the attempt a ``with_timeout`` abandoned in a member before the one that served when the
stream was left, cancelled or failed (it was only to ride on the ``StreamEnd``).  A fed ``ProviderStream`` noted
nothing at all when it was closed or cancelled mid-stream.  A stream read to its end is charged by its answer
alone, as before.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    CostBudget,
    LLMRequest,
    ProviderActor,
    Runtime,
    with_fallback,
    with_hedge,
    with_retry,
    with_timeout,
)
from agentactors.errors import StreamInterruptedError
from agentactors.gateway import ProviderStream, Stream
from agentactors.messages import StreamEnd, TextDelta
from agentactors.pricing import cut_short_of, take_cut_short
from tests.support.cut_short import PIECE, PROMPT, USAGE, Vendor, in_flight, pulled, request, unanswered
from tests.support.prices import gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


# --- with_hedge ----------------------------------------------------------------------------------------------------


def hedged(vendor: Vendor) -> Any:
    """The first copy (silent) at 0 s, the hedge at 2 s: the hedge wins with its first delta at 3 s."""
    return with_hedge(vendor, after=2.0, max_extra=1.0)


async def test_a_hedged_pulled_stream_left_early_charges_the_winner_with_the_loser(anyio_backend: Any) -> None:
    # Before, the hedge noted its losing copy alone, and the pulled stream kept that note (an inner layer's is
    # kept): the winning copy, in flight when the consumer left, was never charged.
    vendor, req = Vendor(silent=1), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await pulled(rt, hedged(vendor), req)
            async with stream:
                assert isinstance(await stream.receive(), TextDelta)
    assert vendor.sent == 2
    loser, winner = take_cut_short(req)
    unanswered(loser)
    in_flight(winner, 1)


async def test_a_bare_hedged_stream_broken_out_of_charges_both_copies(anyio_backend: Any) -> None:
    vendor, req = Vendor(silent=1), request()
    with anyio.fail_after(100):
        async with hedged(vendor).stream(req) as events:
            async for event in events:
                assert isinstance(event, TextDelta)
                break
    loser, winner = take_cut_short(req)
    unanswered(loser)
    in_flight(winner, 1)


async def test_a_hedged_stream_that_sent_one_copy_and_was_left_early_charges_it_once(anyio_backend: Any) -> None:
    # No hedge sent (the first copy answered before `after`): one call, charged once.
    vendor, req = Vendor(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await pulled(rt, hedged(vendor), req)
            async with stream:
                await stream.receive()
                await stream.receive()
    assert vendor.sent == 1
    (call,) = take_cut_short(req)
    in_flight(call, 2)


async def test_a_hedged_stream_whose_winner_failed_charges_the_loser_alone(anyio_backend: Any) -> None:
    # A failure is charged as a failed call is: the losing copy (sent, billed), not the one that failed.
    vendor, req = Vendor(silent=1, fails=True), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await pulled(rt, hedged(vendor), req)
            with pytest.raises(StreamInterruptedError):
                async with stream:
                    async for _ in stream:
                        pass
    (loser,) = take_cut_short(req)
    unanswered(loser)


async def test_a_hedged_stream_read_to_its_end_carries_the_loser_on_its_end_only(anyio_backend: Any) -> None:
    vendor, req = Vendor(silent=1), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await pulled(rt, hedged(vendor), req)
            async with stream:
                events = [event async for event in stream]
    end = events[-1]
    assert isinstance(end, StreamEnd) and end.response.usage == USAGE
    (loser,) = cut_short_of(end.response)
    unanswered(loser)
    assert take_cut_short(req) == ()


async def test_a_hedged_streamed_run_left_early_is_charged_both_copies(anyio_backend: Any) -> None:
    budget = CostBudget()
    with budget, anyio.fail_after(100):
        async with Runtime() as rt:
            agent = Agent(ProviderActor.shared(rt, hedged(Vendor(silent=1))))
            async with agent.stream(PROMPT, runtime=rt) as run:
                async for text in run.text_stream():
                    assert text == PIECE
                    break
    assert budget.calls == 2
    assert budget.spent == pytest.approx(2 * 10_001 * 2.5 / 1e6 + 100 * 10.0 / 1e6, rel=0.01)
    assert budget.estimated == budget.spent


async def test_a_retried_hedged_stream_left_early_charges_each_copy_once(anyio_backend: Any) -> None:
    # The retry has nothing abandoned of its own: the hedge's note (both copies) is the one kept.
    vendor, req = Vendor(silent=1), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await pulled(rt, with_retry(hedged(vendor), base_delay=0.0), req)
            async with stream:
                await stream.receive()
    loser, winner = take_cut_short(req)
    unanswered(loser)
    in_flight(winner, 1)


# --- with_fallback -------------------------------------------------------------------------------------------------


def falling_back(first: Vendor, second: Vendor) -> Any:
    """The first member's attempt is abandoned by its timeout at 5 s (no first event); the second serves."""
    return with_fallback(with_timeout(first, first_event=5.0), second)


async def test_a_fallback_stream_left_early_charges_the_abandoned_attempt_and_the_one_in_flight(
    anyio_backend: Any,
) -> None:
    # Before, the abandoned attempt was only to ride on the StreamEnd: left early, it was dropped, and the pulled
    # stream noted the served member's call alone.
    first, second, req = Vendor(silent=1), Vendor(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await pulled(rt, falling_back(first, second), req)
            async with stream:
                assert isinstance(await stream.receive(), TextDelta)
    assert (first.sent, second.sent) == (1, 1)
    abandoned, call = take_cut_short(req)
    unanswered(abandoned)
    in_flight(call, 1)


async def test_a_bare_fallback_stream_broken_out_of_charges_both_attempts(anyio_backend: Any) -> None:
    req = request()
    with anyio.fail_after(100):
        async with falling_back(Vendor(silent=1), Vendor()).stream(req) as events:
            async for event in events:
                assert isinstance(event, TextDelta)
                break
    abandoned, call = take_cut_short(req)
    unanswered(abandoned)
    in_flight(call, 1)


async def test_a_fallback_stream_cancelled_mid_stream_charges_both_attempts(anyio_backend: Any) -> None:
    req = request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await pulled(rt, falling_back(Vendor(silent=1), Vendor()), req)
            with anyio.CancelScope() as scope:
                async with stream:
                    await stream.receive()
                    await stream.receive()
                    scope.cancel()
                    await stream.receive()
    assert scope.cancelled_caught
    abandoned, call = take_cut_short(req)
    unanswered(abandoned)
    in_flight(call, 2)


async def test_a_fallback_stream_that_failed_mid_stream_charges_the_abandoned_attempt(anyio_backend: Any) -> None:
    # A failure is charged as a failed call is: what was abandoned before it, not the attempt that failed.
    req = request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await pulled(rt, falling_back(Vendor(silent=1), Vendor(fails=True)), req)
            with pytest.raises(StreamInterruptedError):
                async with stream:
                    async for _ in stream:
                        pass
    (abandoned,) = take_cut_short(req)
    unanswered(abandoned)


async def test_a_fallback_stream_read_to_its_end_carries_the_abandoned_attempt_on_its_end_only(
    anyio_backend: Any,
) -> None:
    req = request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await pulled(rt, falling_back(Vendor(silent=1), Vendor()), req)
            async with stream:
                events = [event async for event in stream]
    end = events[-1]
    assert isinstance(end, StreamEnd) and end.response.usage == USAGE
    (abandoned,) = cut_short_of(end.response)
    unanswered(abandoned)
    assert take_cut_short(req) == ()


async def test_a_fallback_stream_left_early_with_nothing_abandoned_charges_its_call_once(anyio_backend: Any) -> None:
    req = request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await pulled(rt, falling_back(Vendor(), Vendor()), req)
            async with stream:
                await stream.receive()
    (call,) = take_cut_short(req)
    in_flight(call, 1, provider="fallback(openai, openai)")  # estimated by the pulled stream, named by the chain


async def test_a_fallback_streamed_run_left_early_is_charged_both_attempts(anyio_backend: Any) -> None:
    budget = CostBudget()
    with budget, anyio.fail_after(100):
        async with Runtime() as rt:
            agent = Agent(ProviderActor.shared(rt, falling_back(Vendor(silent=1), Vendor())))
            async with agent.stream(PROMPT, runtime=rt) as run:
                async for text in run.text_stream():
                    assert text == PIECE
                    break
    assert budget.calls == 2
    assert budget.spent == pytest.approx(2 * 10_001 * 2.5 / 1e6 + 100 * 10.0 / 1e6, rel=0.01)
    assert budget.estimated == budget.spent


# --- a fed ProviderStream (pull=False) -----------------------------------------------------------------------------


async def fed(rt: Runtime, provider: Any, req: LLMRequest) -> ProviderStream:
    stream = await ProviderActor.shared(rt, provider, stream_buffer=0).ask(Stream(req))
    assert isinstance(stream, ProviderStream)
    return stream


async def test_a_fed_stream_closed_early_charges_its_call_with_what_it_delivered(anyio_backend: Any) -> None:
    # Noted by its feeding task once it has left the provider's stream: by the runtime's exit at the latest.
    vendor, req = Vendor(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await fed(rt, vendor, req)
            async with stream:
                assert isinstance(await stream.receive(), TextDelta)
    assert vendor.closed_early == 1
    (call,) = take_cut_short(req)
    in_flight(call, 1)


async def test_a_fed_stream_broken_out_of_charges_its_call_once(anyio_backend: Any) -> None:
    vendor, req = Vendor(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await fed(rt, vendor, req)
            async for event in stream:
                assert isinstance(event, TextDelta)
                break
            await stream.aclose()
            await stream.aclose()
    (call,) = take_cut_short(req)
    assert call.estimated and call.input_tokens == pytest.approx(10_000, rel=0.01)


async def test_a_fed_stream_cancelled_mid_stream_charges_its_call(anyio_backend: Any) -> None:
    vendor, req = Vendor(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await fed(rt, vendor, req)
            with anyio.CancelScope() as scope:
                async with stream:
                    await stream.receive()
                    await stream.receive()
                    scope.cancel()
                    await stream.receive()
    assert scope.cancelled_caught
    (call,) = take_cut_short(req)
    assert call.estimated and call.input_tokens == pytest.approx(10_000, rel=0.01)
    assert call.output_tokens >= 200


async def test_a_fed_stream_keeps_the_note_of_a_hedge_inside(anyio_backend: Any) -> None:
    # The hedge knows more (two copies went): its note is kept, not replaced by one estimate.
    vendor, req = Vendor(silent=1), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await fed(rt, hedged(vendor), req)
            async with stream:
                await stream.receive()
    loser, winner = take_cut_short(req)
    unanswered(loser)
    assert winner.estimated and winner.output_tokens >= 100


async def test_a_fed_stream_read_to_its_end_notes_nothing(anyio_backend: Any) -> None:
    vendor, req = Vendor(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await fed(rt, vendor, req)
            async with stream:
                events = [event async for event in stream]
    assert isinstance(events[-1], StreamEnd) and events[-1].response.usage == USAGE
    assert vendor.closed_early == 0
    assert take_cut_short(req) == ()


async def test_a_fed_stream_that_failed_notes_nothing(anyio_backend: Any) -> None:
    # A failure is charged as a failed call is: not as a call cut short.
    vendor, req = Vendor(fails=True), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await fed(rt, vendor, req)
            with pytest.raises(StreamInterruptedError):
                async with stream:
                    async for _ in stream:
                        pass
    assert take_cut_short(req) == ()


async def test_a_hedged_stream_cancelled_after_its_end_was_read_charges_nothing_more(anyio_backend: Any) -> None:
    # Its end was read (the loser rides on it): a cancellation reaching the hedge as it closes must not bill the
    # copies a second time — before, the loser was estimated again and the winner, whose answer was received, too.
    vendor, req = Vendor(silent=1), request()
    with anyio.fail_after(100):
        with anyio.CancelScope() as scope:
            async with hedged(vendor).stream(req) as events:
                got = [event async for event in events]
                scope.cancel()
    end = got[-1]
    assert isinstance(end, StreamEnd)
    (loser,) = cut_short_of(end.response)
    unanswered(loser)
    assert take_cut_short(req) == ()
