"""Each call ``with_timeout`` abandons is charged once, when calls share one request object (docs/costs.md, "Calls
cut short"); virtual time, both backends.

Calls cut short are noted against the request *object*.  A timeout with no ``with_retry`` or ``with_fallback``
around took whatever was noted against its request, when its bound expired, for what a layer inside it had noted —
so a sibling sharing the request (two timeouts under a fan-out of the caller's own, or the same request sent to two
timeouts at once), or an earlier call's note left against it, was taken for its own call: one abandoned call went
uncharged, or a charge was put on the wrong call.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import (
    BatchProvider,
    LLMRequest,
    LLMResponse,
    Message,
    ScriptedProvider,
    Usage,
    with_hedge,
    with_retry,
    with_timeout,
)
from agentactors.errors import ProviderTimeout
from agentactors.pricing import CutShort, cut_short_of, note_cut_short, take_cut_short
from agentactors.providers.port import LLMProvider
from tests.support.cut_short import PROMPT
from tests.support.cut_short import never_ending_batches as _never_ending_batches

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def hanging(model: str) -> ScriptedProvider:
    """A vendor whose every call hangs (a minute): each call to it is sent, and abandoned by its timeout."""

    def item(request: LLMRequest) -> Any:
        async def answer() -> LLMResponse:
            await anyio.sleep(60)
            return LLMResponse("late", usage=Usage(1, 1), provider="openai", model=model)

        return answer()

    return ScriptedProvider(item, name="openai", model=model)


async def _timed_out(provider: LLMProvider, request: LLMRequest) -> None:
    with pytest.raises(ProviderTimeout):
        await provider.complete(request)


async def _streamed_timed_out(provider: LLMProvider, request: LLMRequest) -> None:
    with pytest.raises(ProviderTimeout):
        async with provider.stream(request) as events:
            async for _ in events:
                pass


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
async def test_two_sibling_timeouts_sharing_a_request_each_charge_their_own_call(
    anyio_backend: Any, streamed: bool
) -> None:
    # A fan-out of the caller's own sends one request to two models, each bounded: both hang and are abandoned,
    # at 1 s and 2 s.  Both calls were sent and are billed: two records, each naming its own model.  Before, the
    # second timeout took the first one's record for its inner layer's note and kept it instead of its own: one
    # call charged (and the gpt-4o-mini one never).
    request = LLMRequest([Message.user(PROMPT)])
    first = with_timeout(hanging("gpt-4o"), attempt=1.0, first_event=1.0)
    second = with_timeout(hanging("gpt-4o-mini"), attempt=2.0, first_event=2.0)
    call = _streamed_timed_out if streamed else _timed_out
    with anyio.fail_after(100):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, first, request)
            tg.start_soon(call, second, request)
    noted = take_cut_short(request)
    assert sorted(record.model or "" for record in noted) == ["gpt-4o", "gpt-4o-mini"]
    assert all(record.estimated and record.input_tokens > 9_000 for record in noted)


async def test_the_same_timeout_given_the_request_twice_at_once_charges_both_calls(anyio_backend: Any) -> None:
    # The same request sent to one timeout twice concurrently: two calls sent, two abandoned, two charged.
    request = LLMRequest([Message.user(PROMPT)])
    bounded = with_timeout(hanging("gpt-4o"), attempt=1.0)
    with anyio.fail_after(100):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_timed_out, bounded, request)
            tg.start_soon(_timed_out, bounded, request)
    assert len(take_cut_short(request)) == 2


async def test_a_note_left_against_the_request_is_not_taken_for_the_inner_layers(anyio_backend: Any) -> None:
    # A call cut short earlier with the same request object, its note not taken yet (a call outside any run): the
    # timeout abandons its own call — both are billed, and both stay charged.  Before, the old record was taken
    # for the timeout's inner layer's word, and the call just abandoned was charged nothing.
    request = LLMRequest([Message.user(PROMPT)])
    earlier = CutShort("anthropic", "claude-sonnet-4", 123, 0)
    note_cut_short(request, (earlier,))
    with anyio.fail_after(100):
        await _timed_out(with_timeout(hanging("gpt-4o"), attempt=1.0), request)
    (kept, abandoned) = take_cut_short(request)
    assert kept == earlier
    assert abandoned.model == "gpt-4o" and abandoned.estimated and abandoned.input_tokens > 9_000


class Noting(ScriptedProvider):
    """A layer that knows what its call cost when it is cut short (as a hedge or a batch provider does), and notes
    it against the request it was given as the cancellation passes through it."""

    def __init__(self, billed: tuple[CutShort, ...]) -> None:
        super().__init__(["unused"], name="openai", model="gpt-4o")
        self.billed = billed

    async def complete(self, request: LLMRequest) -> LLMResponse:
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            note_cut_short(request, self.billed)
            raise
        raise AssertionError("not reached")


@pytest.mark.parametrize("billed", [(), (CutShort("openai", "gpt-4o", 7, 0, batch=True),)], ids=["nothing", "one"])
async def test_what_a_layer_inside_noted_is_still_kept(anyio_backend: Any, billed: tuple[CutShort, ...]) -> None:
    # The inner layer's word wins over the estimate, even when it says nothing was billed.
    request = LLMRequest([Message.user(PROMPT)])
    with anyio.fail_after(100):
        await _timed_out(with_timeout(Noting(billed), attempt=1.0), request)
    assert take_cut_short(request) == billed


async def test_an_outer_cancellation_hands_the_inner_note_to_the_callers_request(anyio_backend: Any) -> None:
    # The caller is cancelled (not the timeout's bound): what the layer inside noted reaches the caller's request,
    # where the ProviderActor, the retry and the run look for it — the timeout's own copy of the request is not
    # where anyone looks.
    request = LLMRequest([Message.user(PROMPT)])
    billed = (CutShort("openai", "gpt-4o", 7, 0, batch=True),)
    with anyio.move_on_after(1.0):
        await with_timeout(Noting(billed), attempt=30.0).complete(request)
    assert take_cut_short(request) == billed


async def test_an_outer_cancellation_through_a_retry_keeps_the_inner_note(anyio_backend: Any) -> None:
    # with_retry(with_timeout(...)) cancelled mid-attempt: the retry notes the attempt in flight as the layer
    # inside noted it (its batch price), not at its own estimate.
    request = LLMRequest([Message.user(PROMPT)])
    billed = (CutShort("openai", "gpt-4o", 7, 0, batch=True),)
    with anyio.move_on_after(1.0):
        await with_retry(with_timeout(Noting(billed), attempt=30.0), base_delay=0.0).complete(request)
    assert take_cut_short(request) == billed


async def test_a_batch_item_left_by_a_timeout_is_charged_at_the_batch_price_once(anyio_backend: Any) -> None:
    # A timeout (10 s) around a batch provider: the batch is submitted at 1 s and never ends; the timeout abandons
    # the call, whose item stays in the batch: charged once, at the batch price the batch provider noted.
    batch = BatchProvider(_never_ending_batches(), window=1.0, poll_every=2.0)
    request = LLMRequest([Message.user(PROMPT)])
    with anyio.fail_after(100):
        await _timed_out(with_timeout(batch, attempt=10.0), request)
    (charged,) = take_cut_short(request)
    assert charged.batch and charged.model == "gpt-4o" and charged.input_tokens > 9_000


async def test_a_batch_copy_that_lost_a_hedge_leaves_nothing_against_the_request(anyio_backend: Any) -> None:
    # The primary answers at 5 s; the hedge, sent at 2 s to a batch provider (same model: the same request object),
    # was submitted at 3 s and is cancelled when the primary wins.  The hedge charges it on the answer — and the
    # batch provider noted it against the request too, where nobody takes it: a later failure with the same request
    # object through a layer that collects notes charged it a second time.
    def item(request: LLMRequest) -> Any:
        async def answer() -> LLMResponse:
            await anyio.sleep(5)
            return LLMResponse("primary", usage=Usage(1, 1), provider="openai", model="gpt-4o")

        return answer()

    batch = BatchProvider(_never_ending_batches(), window=1.0, poll_every=10.0)
    hedged = with_hedge(ScriptedProvider(item, name="openai", model="gpt-4o"), after=2.0, max_extra=1.0, to=batch)
    request = LLMRequest([Message.user(PROMPT)], model="gpt-4o")
    with anyio.fail_after(100):
        answer = await hedged.complete(request)
    assert answer.content == "primary"
    assert len(cut_short_of(answer)) == 1  # the losing batch copy, charged on the answer
    with anyio.fail_after(100):
        await _timed_out(with_timeout(hanging("gpt-4o"), attempt=1.0), request)
    (abandoned,) = take_cut_short(request)  # the timed-out call alone, not the batch copy again
    assert not abandoned.batch
