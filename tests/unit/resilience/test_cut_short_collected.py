"""Calls cut short are charged once, whatever happens next, under a pool, a retry in a fallback, a hedge whose losing
copy's answer carried some, and a fed stream whose ``StreamEnd`` sat unread in its buffer (docs/costs.md, "Calls cut
short"); virtual time, both backends.

Four gaps closed here.  ``with_pool`` did not collect what the ``with_timeout`` in a member abandoned (left for the
run, charged only if it later failed), and a member of another model was sent a ``with_model`` copy whose notes
never reached the caller's request.  A ``with_retry`` that failed after abandoned attempts noted them for the run
instead of handing them to the ``with_fallback`` around it: charged only if the run failed.  A hedge dropped the
records a losing copy's answer carried.  A fed ``ProviderStream`` closed with its ``StreamEnd`` unread in its buffer
charged nothing, though the vendor bills the whole call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors import (
    LLMRequest,
    LLMResponse,
    Message,
    ProviderActor,
    Runtime,
    ScriptedProvider,
    Usage,
    with_fallback,
    with_hedge,
    with_pool,
    with_retry,
    with_timeout,
)
from agentactors.gateway import ProviderStream, Stream
from agentactors.messages import StreamEnd, StreamEvent, TextDelta
from agentactors.pricing import CutShort, cut_short_of, take_cut_short, with_cut_short
from agentactors.providers.port import LLMProvider
from tests.support.cut_short import (
    PIECE,
    PROMPT,
    USAGE,
    Vendor,
    answering,
    failing,
    in_flight,
    pulled,
    request,
    unanswered,
)
from tests.support.prices import gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


async def _cancelled_at(seconds: float, provider: LLMProvider, req: LLMRequest) -> None:
    with anyio.move_on_after(seconds):
        await provider.complete(req)
        raise AssertionError("not cancelled")


async def _read_all(provider: LLMProvider, req: LLMRequest) -> StreamEnd:
    async with provider.stream(req) as events:
        items = [event async for event in events]
    end = items[-1]
    assert isinstance(end, StreamEnd)
    return end


# --- with_pool ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-mini"], ids=["same-model", "other-model"])
async def test_a_pool_puts_the_attempt_a_members_timeout_abandoned_on_the_answer(
    anyio_backend: Any, model: str
) -> None:
    # The first member (round robin: member 0 first) times out at 1 s, the second answers: the abandoned call rides on
    # the answer, and nothing is left against the request.  Before, it was noted for the run (charged only if the run
    # failed later) — or, for a member of another model, against its with_model copy, which nobody takes.
    req = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    pool = with_pool(with_timeout(answering(60.0, model), attempt=1.0), answering(0.5), strategy="round_robin")
    with anyio.fail_after(100):
        answer = await pool.complete(req)
    (abandoned,) = cut_short_of(answer)
    unanswered(abandoned)
    assert abandoned.model == model
    assert take_cut_short(req) == ()


async def test_a_pool_hands_every_copy_of_a_member_of_another_model_to_the_callers_request(
    anyio_backend: Any,
) -> None:
    # The first member fails at once; the second (its own model: a with_model copy) hedges at 2 s and is cancelled at
    # 4 s with both copies in flight.  Before, the hedge noted them against the copy, which nobody takes.
    req = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    pool = with_pool(failing(), with_hedge(answering(60.0, "gpt-4o-mini"), after=2.0, max_extra=1.0),
                     strategy="round_robin")
    await _cancelled_at(4.0, pool, req)
    assert [record.model for record in take_cut_short(req)] == ["gpt-4o-mini", "gpt-4o-mini"]


async def test_a_pool_that_fails_after_a_timeout_hands_the_abandoned_attempt_to_the_fallback_around(
    anyio_backend: Any,
) -> None:
    # Every pool member fails (one by its timeout): the fallback around serves, the abandoned attempt on its answer.
    req = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    pool = with_pool(with_timeout(answering(60.0), attempt=1.0), failing(), strategy="round_robin")
    with anyio.fail_after(100):
        answer = await with_fallback(pool, answering(0.5)).complete(req)
    (abandoned,) = cut_short_of(answer)
    unanswered(abandoned)
    assert take_cut_short(req) == ()


def _pooled_streams(vendor: Vendor) -> Any:
    """A pool whose first member never sends its first event (given up at 1.5 s), its second ``vendor``."""
    return with_pool(with_timeout(Vendor(silent=1), first_event=1.5), vendor, strategy="round_robin")


async def test_a_pool_stream_carries_the_abandoned_attempt_on_its_end(anyio_backend: Any) -> None:
    vendor, req = Vendor(), request()
    with anyio.fail_after(100):
        end = await _read_all(_pooled_streams(vendor), req)
    assert end.response.usage == USAGE
    (abandoned,) = cut_short_of(end.response)
    unanswered(abandoned)
    assert take_cut_short(req) == ()


async def test_a_pool_stream_left_early_charges_the_abandoned_attempt_and_the_one_in_flight(
    anyio_backend: Any,
) -> None:
    vendor, req = Vendor(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await pulled(rt, _pooled_streams(vendor), req)
            async with stream:
                assert isinstance(await stream.receive(), TextDelta)
    abandoned, call = take_cut_short(req)
    unanswered(abandoned)
    in_flight(call, 1)


# --- with_retry inside a with_fallback ------------------------------------------------------------------------------


async def test_a_retry_that_failed_after_abandoned_attempts_hands_them_to_the_fallback_around(
    anyio_backend: Any,
) -> None:
    # Both attempts of the first member are abandoned by its timeout (at 1 s and 2 s): the retry fails, the fallback
    # member answers — with both abandoned attempts on its answer.  Before, they were noted for the run, charged only
    # if the run failed later.
    req = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    first = with_retry(with_timeout(answering(60.0), attempt=1.0), max_attempts=2, base_delay=0.0)
    with anyio.fail_after(100):
        answer = await with_fallback(first, answering(0.5)).complete(req)
    records = cut_short_of(answer)
    assert len(records) == 2
    for record in records:
        unanswered(record)
    assert take_cut_short(req) == ()


async def test_a_retried_stream_that_failed_after_abandoned_attempts_hands_them_to_the_fallback_around(
    anyio_backend: Any,
) -> None:
    vendor, req = Vendor(), request()
    first = with_retry(with_timeout(Vendor(silent=2), first_event=1.5), max_attempts=2, base_delay=0.0)
    with anyio.fail_after(100):
        end = await _read_all(with_fallback(first, vendor), req)
    records = cut_short_of(end.response)
    assert len(records) == 2
    for record in records:
        unanswered(record)
    assert take_cut_short(req) == ()


async def test_a_cancelled_retry_in_a_fallback_still_charges_each_attempt_once(anyio_backend: Any) -> None:
    # Cancelled at 1.5 s: one attempt abandoned at 1 s, the second in flight — both charged, once.
    req = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    first = with_retry(with_timeout(answering(60.0), attempt=1.0), max_attempts=3, base_delay=0.0)
    await _cancelled_at(1.5, with_fallback(first, answering(0.5)), req)
    noted = take_cut_short(req)
    assert len(noted) == 2
    for record in noted:
        unanswered(record)


# --- with_hedge: a losing copy's answer carrying calls cut short ------------------------------------------------------


EARLIER = CutShort("openai", "gpt-4o", 5_000, 0)  # a call the losing copy's own layers abandoned on its way


def _late_answer(seconds: float) -> ScriptedProvider:
    """Answers after ``seconds`` even when cancelled meanwhile (it lost by an instant), carrying :data:`EARLIER`."""

    def item(request: LLMRequest) -> Any:
        async def answer() -> LLMResponse:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(seconds)
            response = LLMResponse("late", usage=Usage(10_000, 7), provider="openai", model="gpt-4o")
            return with_cut_short(response, (EARLIER,))

        return answer()

    return ScriptedProvider(item, name="openai", model="gpt-4o")


async def test_a_losing_copys_answer_keeps_the_calls_it_carried(anyio_backend: Any) -> None:
    # The primary answers at 3 s (shielded: its answer comes back though it lost), carrying a call its own layers cut
    # short; the hedge, sent at 2 s, wins at 2.5 s.  The loser's usage and the call it carried ride on the winner's
    # answer.  Before, the call it carried was dropped.
    req = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    hedged = with_hedge(_late_answer(3.0), after=2.0, max_extra=1.0, to=answering(0.5))
    with anyio.fail_after(100):
        answer = await hedged.complete(req)
    assert answer.content == "answer"
    records = cut_short_of(answer)
    assert sorted(records, key=lambda r: r.input_tokens) == [
        EARLIER, CutShort("openai", "gpt-4o", 10_000, 7, estimated=False)
    ]
    assert take_cut_short(req) == ()


async def test_a_cancelled_hedge_keeps_the_calls_a_won_answer_carried(anyio_backend: Any) -> None:
    # The primary's answer (at 3 s, shielded) claims the race; the caller was cancelled at 2.5 s meanwhile: its answer,
    # never received, is billed — and so is the call it carried.
    req = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    hedged = with_hedge(_late_answer(3.0), after=10.0, max_extra=1.0)
    await _cancelled_at(2.5, hedged, req)
    records = take_cut_short(req)
    assert sorted(records, key=lambda r: r.input_tokens) == [
        EARLIER, CutShort("openai", "gpt-4o", 10_000, 7, estimated=False)
    ]


# --- a fed ProviderStream whose StreamEnd sat unread in its buffer ----------------------------------------------------


async def _fed(rt: Runtime, provider: Any, req: LLMRequest, buffer: int) -> ProviderStream:
    stream = await ProviderActor.shared(rt, provider, stream_buffer=buffer).ask(Stream(req))
    assert isinstance(stream, ProviderStream)
    return stream


async def test_a_fed_stream_closed_with_its_end_unread_in_the_buffer_charges_its_usage_once(
    anyio_backend: Any,
) -> None:
    # The feeder runs ahead: by 10 s every event, the StreamEnd too, waits in the buffer; the reader took one delta and
    # closes.  The vendor billed the whole call: it is charged at the StreamEnd's usage, as a read one would be.
    vendor, req = Vendor(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await _fed(rt, vendor, req, 16)
            async with stream:
                assert isinstance(await stream.receive(), TextDelta)
                await anyio.sleep(10.0)
            await stream.aclose()
    assert vendor.closed_early == 0
    assert take_cut_short(req) == (CutShort("openai", "gpt-4o", USAGE.input_tokens, USAGE.output_tokens,
                                            estimated=False),)


async def test_a_fed_stream_closed_while_its_feeder_waited_to_hand_over_its_end_charges_it_once(
    anyio_backend: Any,
) -> None:
    # No buffer: the feeder puts the StreamEnd (at 3 s) where the reader would take it and waits; the reader, done with
    # the deltas, closes at 4 s.  Charged once, by the close (the feeder, told the reader left, adds nothing).
    vendor, req = Vendor(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await _fed(rt, vendor, req, 0)
            async with stream:
                for _ in range(3):
                    assert isinstance(await stream.receive(), TextDelta)
                await anyio.sleep(1.0)
            await anyio.sleep(5.0)
    assert vendor.closed_early == 0
    assert take_cut_short(req) == (CutShort("openai", "gpt-4o", USAGE.input_tokens, USAGE.output_tokens,
                                            estimated=False),)


class _EndAfterClose(Vendor):
    """Streams one delta, then its StreamEnd two seconds later — even when the reader has closed meanwhile (the
    vendor's last bytes were already read: no checkpoint between them), carrying a call cut short on its way."""

    @asynccontextmanager
    async def _stream(self) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        self.sent += 1

        async def events() -> AsyncIterator[StreamEvent]:
            yield TextDelta(PIECE)
            with anyio.CancelScope(shield=True):
                await anyio.sleep(2.0)
            response = LLMResponse(PIECE, usage=USAGE, provider="openai", model="gpt-4o")
            yield StreamEnd(with_cut_short(response, (EARLIER,)))

        gen = events()
        try:
            yield gen
        finally:
            with anyio.CancelScope(shield=True):
                await gen.aclose()  # type: ignore[attr-defined]


@pytest.mark.parametrize("buffer", [0, 16])
async def test_a_fed_stream_whose_end_came_after_its_reader_left_charges_it_once(
    anyio_backend: Any, buffer: int
) -> None:
    # The reader closes at 1 s; the feeder gets the StreamEnd at 2 s, with nobody to hand it to: charged at its usage,
    # with the call it carried.  Before, nothing was charged (the feeder had seen the end: not "left early").
    vendor, req = _EndAfterClose(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await _fed(rt, vendor, req, buffer)
            async with stream:
                assert isinstance(await stream.receive(), TextDelta)
                await anyio.sleep(1.0)
            await anyio.sleep(5.0)
    assert sorted(take_cut_short(req), key=lambda r: r.input_tokens) == [
        EARLIER, CutShort("openai", "gpt-4o", USAGE.input_tokens, USAGE.output_tokens, estimated=False)
    ]


async def test_a_fed_stream_with_a_buffer_closed_before_its_end_is_estimated_once(anyio_backend: Any) -> None:
    # Closed at 1.5 s, the StreamEnd not come yet: the feeder notes it at an estimate, as with no buffer.
    vendor, req = Vendor(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await _fed(rt, vendor, req, 16)
            async with stream:
                assert isinstance(await stream.receive(), TextDelta)
                await anyio.sleep(0.5)
    assert vendor.closed_early == 1
    (call,) = take_cut_short(req)
    in_flight(call, 1)


async def test_a_fed_stream_with_a_buffer_read_to_its_end_notes_nothing(anyio_backend: Any) -> None:
    vendor, req = Vendor(), request()
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await _fed(rt, vendor, req, 16)
            await anyio.sleep(10.0)
            async with stream:
                events = [event async for event in stream]
    assert isinstance(events[-1], StreamEnd) and events[-1].response.usage == USAGE
    assert take_cut_short(req) == ()
