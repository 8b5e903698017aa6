"""Each call a hedge, a fallback or a retry sent and then cut short is charged once, as the layers inside it noted
it, also when calls share one request object (docs/costs.md, "Calls cut short"); virtual time, both backends.

Calls cut short are noted against the request *object*.  A hedge sent both copies the caller's request (or the
hedge member's, when of another model) and charged a cancelled copy at a live-price estimate, overwriting or leaving
behind what the layers inside had noted (a batch copy's batch price, or that nothing was billed); a copy cancelled
because the other hit a request error was not charged at all.  A fallback member of another model was sent a request
of its own, and what was noted against it never reached the caller's.  A retry took whatever was noted against its
request for its own attempt's note: two retries sharing one request swallowed each other's records.  Each layer now
sends the layers inside a request of their own (:func:`~agentactors.resilience.timeout.own_request`), reads what was
noted against it as theirs, and hands it on (:func:`~agentactors.resilience.timeout.hand_on`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors import (
    BatchProvider,
    LLMRequest,
    LLMResponse,
    Message,
    ProviderActor,
    Runtime,
    ScriptedProvider,
    Usage,
    with_fallback,
    with_hedge,
    with_retry,
    with_timeout,
)
from agentactors.errors import ErrorKind, ProviderError
from agentactors.gateway import PulledStream, Stream
from agentactors.messages import StreamEnd, StreamEvent, TextDelta
from agentactors.pricing import CutShort, cut_short_of, note_cut_short, take_cut_short
from agentactors.providers.port import LLMProvider
from tests.support.cut_short import PROMPT, answering, failing
from tests.support.cut_short import never_ending_batches as _never_ending_batches

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def _batch_hedged(primary: LLMProvider) -> LLMProvider:
    """``primary`` hedged at 2 s to a batch provider of the same model (submitted at 3 s, never ending)."""
    batch = BatchProvider(_never_ending_batches(), window=1.0, poll_every=10.0)
    return with_hedge(primary, after=2.0, max_extra=1.0, to=batch)


async def _cancelled_at(seconds: float, provider: LLMProvider, request: LLMRequest) -> None:
    with anyio.move_on_after(seconds):
        await provider.complete(request)
        raise AssertionError("not cancelled")


# --- with_hedge ---------------------------------------------------------------------------------------------------


async def test_a_cancelled_hedge_charges_a_submitted_batch_copy_at_the_batch_price(anyio_backend: Any) -> None:
    # Cancelled at 4 s: the primary is in flight, the batch copy was submitted at 3 s.  Both are billed — the batch
    # copy at the batch price its provider noted.  Before, the hedge replaced that note with a live-price estimate.
    request = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    await _cancelled_at(4.0, _batch_hedged(answering(60.0)), request)
    noted = take_cut_short(request)
    assert sorted(record.batch for record in noted) == [False, True]
    assert all(record.model == "gpt-4o" and record.input_tokens > 9_000 for record in noted)


async def test_a_cancelled_hedge_charges_nothing_for_a_batch_copy_withdrawn_before_submission(
    anyio_backend: Any,
) -> None:
    # Cancelled at 2.5 s: the batch copy (sent at 2 s) was withdrawn before its batch was submitted (at 3 s): not
    # billed, as its provider noted.  Before, it was charged at a live-price estimate: two calls for one sent.
    request = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    await _cancelled_at(2.5, _batch_hedged(answering(60.0)), request)
    (primary,) = take_cut_short(request)
    assert not primary.batch and primary.input_tokens > 9_000


async def test_a_copy_cancelled_by_the_others_request_error_is_charged(anyio_backend: Any) -> None:
    # The hedge is sent at 2 s; the primary is refused at 3 s with a request error, which ends the call at once and
    # cancels the hedge in flight: it was sent, and is billed.  Before, nothing was charged for it.
    calls = iter([answering(3.0, refuse=True), answering(60.0)])
    provider = ScriptedProvider(lambda request: next(calls).complete(request), name="openai", model="gpt-4o")
    request = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    with anyio.fail_after(100), pytest.raises(ProviderError) as raised:
        await with_hedge(provider, after=2.0, max_extra=1.0).complete(request)
    assert raised.value.kind is ErrorKind.request
    (hedge,) = take_cut_short(request)
    assert hedge.model == "gpt-4o" and hedge.input_tokens > 9_000 and hedge.estimated


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
async def test_two_hedges_sharing_a_request_cancelled_charge_all_four_copies(
    anyio_backend: Any, streamed: bool
) -> None:
    # A fan-out of the caller's own sends one request to two hedged members; both send their hedge at 2 s and are
    # cancelled at 4 s: four copies sent, four charged.  Before, the second hedge's note replaced the first's.
    request = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    first = with_hedge(answering(60.0), after=2.0, max_extra=1.0)
    second = with_hedge(answering(60.0, "gpt-4o-mini"), after=2.0, max_extra=1.0)

    async def call(provider: LLMProvider) -> None:
        if streamed:
            async with provider.stream(request) as events:
                async for _ in events:
                    pass
        else:
            await provider.complete(request)

    with anyio.move_on_after(4.0):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, first)
            tg.start_soon(call, second)
    assert len(take_cut_short(request)) == 4


# --- with_fallback ------------------------------------------------------------------------------------------------


async def test_a_fallback_member_of_another_model_cancelled_mid_call_charges_every_copy(anyio_backend: Any) -> None:
    # The primary fails at once; the fallback member (its own model: a request of its own) hedges at 2 s and is
    # cancelled at 4 s with both copies in flight.  Before, the hedge noted them against the member's request, which
    # nobody takes: nothing reached the caller's request (a ProviderActor around estimated a single call).
    request = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    chain = with_fallback(failing(), with_hedge(answering(60.0, "gpt-4o-mini"), after=2.0, max_extra=1.0))
    await _cancelled_at(4.0, chain, request)
    noted = take_cut_short(request)
    assert [record.model for record in noted] == ["gpt-4o-mini", "gpt-4o-mini"]


async def test_a_fallback_member_of_another_model_hands_on_a_batch_note(anyio_backend: Any) -> None:
    # The fallback member is a batch provider of another model, cancelled at 4 s after its batch was submitted at
    # 1 s: its item is billed at the batch price.  Before, that note stayed against the member's request.
    batch = BatchProvider(_never_ending_batches(), window=1.0, poll_every=10.0)
    request = LLMRequest([Message.user(PROMPT)], model="gpt-4o-mini")
    await _cancelled_at(4.0, with_fallback(failing("gpt-4o-mini"), batch), request)
    (item,) = take_cut_short(request)
    assert item.batch and item.model == "gpt-4o"


# --- with_retry ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
async def test_two_retries_sharing_a_request_each_charge_their_own_attempts(
    anyio_backend: Any, streamed: bool
) -> None:
    # A fan-out of the caller's own sends one request to two retried, bounded members.  Each abandons its first
    # attempt (at 1 s and 2 s) and is cancelled with its second in flight: four calls sent, four charged.  Before,
    # the second retry took the first one's note for its own attempt's: its attempt in flight went uncharged.
    request = LLMRequest([Message.user(PROMPT)])  # (each member calls its own model)
    first = with_retry(with_timeout(answering(60.0), attempt=1.0, first_event=1.0), base_delay=0.0)
    second = with_retry(with_timeout(answering(60.0, "gpt-4o-mini"), attempt=2.0, first_event=2.0), base_delay=0.0)

    async def call(provider: LLMProvider, seconds: float) -> None:
        with anyio.move_on_after(seconds):
            if streamed:
                async with provider.stream(request) as events:
                    async for _ in events:
                        pass
            else:
                await provider.complete(request)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, first, 1.5)
        tg.start_soon(call, second, 3.0)
    noted = take_cut_short(request)
    assert sorted(record.model or "" for record in noted) == ["gpt-4o", "gpt-4o", "gpt-4o-mini", "gpt-4o-mini"]


async def test_a_retry_keeps_a_note_left_against_the_request_before_it(anyio_backend: Any) -> None:
    # An earlier call's note, not taken yet, is left against the request: the retry abandons an attempt and is
    # cancelled with its second in flight — the earlier record stays, and both of this call's are added.
    request = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    earlier = CutShort("anthropic", "claude-sonnet-4", 123, 0)
    note_cut_short(request, (earlier,))
    await _cancelled_at(1.5, with_retry(with_timeout(answering(60.0), attempt=1.0), base_delay=0.0), request)
    noted = take_cut_short(request)
    assert earlier in noted and len(noted) == 3


async def test_a_batch_copy_that_lost_rides_on_the_answer_at_the_batch_price(anyio_backend: Any) -> None:
    # The primary answers at 5 s; the batch copy, submitted at 3 s, lost: it is charged on the answer as its
    # provider noted it (the batch price), not at a live-price estimate.
    request = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    with anyio.fail_after(100):
        answer = await _batch_hedged(answering(5.0)).complete(request)
    (lost,) = cut_short_of(answer)
    assert lost.batch and lost.model == "gpt-4o" and lost.input_tokens > 9_000
    assert take_cut_short(request) == ()


class Streaming:
    """A vendor of ``model`` that streams three deltas one second apart, then its end."""

    name = "openai"

    def __init__(self, model: str) -> None:
        self.default_model = model

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover - streamed only
        raise AssertionError("streamed only")

    def stream(self, request: LLMRequest) -> Any:
        return self._stream()

    @asynccontextmanager
    async def _stream(self) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        async def events() -> AsyncIterator[StreamEvent]:
            for _ in range(3):
                await anyio.sleep(1.0)
                yield TextDelta("y" * 400)
            yield StreamEnd(LLMResponse("y" * 1200, usage=Usage(10_000, 300), provider="openai",
                                        model=self.default_model))

        yield events()

    async def aclose(self) -> None:
        pass


async def test_a_fallback_stream_served_by_a_later_member_left_early_is_charged_as_that_members(
    anyio_backend: Any,
) -> None:
    # The primary fails; the fallback member (gpt-4o-mini) streams, and the pulled stream is left after one delta.
    # Its call is charged as its own: its name, its model, what it delivered.  Before, the pulled stream estimated
    # it as the chain's ("fallback(...)") at the caller's model (gpt-4o: another price).
    request = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    chain = with_fallback(failing(), Streaming("gpt-4o-mini"))
    with anyio.fail_after(100):
        async with Runtime() as rt:
            stream = await ProviderActor.shared(rt, chain).ask(Stream(request, pull=True))
            assert isinstance(stream, PulledStream)
            async with stream:
                assert isinstance(await stream.receive(), TextDelta)
    (call,) = take_cut_short(request)
    assert (call.provider, call.model, call.output_tokens) == ("openai", "gpt-4o-mini", 100)
