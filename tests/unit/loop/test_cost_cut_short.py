"""Calls cut short after they were sent are charged: a hedge's losing copy, a run cancelled mid-call, a batch call
that left its batch (docs/costs.md, "Calls cut short"); on virtual time, both backends.

The vendor bills such a call (its prompt at least), so a spend ceiling that ignored it under-counted — a hedge
could double spend invisibly.  Each is charged at a conservative estimate (its prompt as ``estimate_tokens``
counts it, at the input price), marked estimated (``Cost.estimated``, ``CostBudget.estimated``), or at its real
usage when its answer came back anyway; ``RunResult.usage`` stays what the vendors said.
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
    ScriptedProvider,
    Usage,
    with_hedge,
)
from agentactors.gateway.provider import estimate_tokens
from agentactors.messages import StreamEvent, TextDelta
from agentactors.pricing import (
    Cost,
    CutShort,
    add_cut_short,
    cut_short_of,
    note_cut_short,
    pop_cut_short,
    take_cut_short,
)
from tests.support.cut_short import PROMPT
from tests.support.prices import gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

WINNER = Usage(10_000, 100)
WON = 10_000 * 2.5 / 1e6 + 100 * 10.0 / 1e6


def answering(delays: list[float], usage: Usage = WINNER, *, anyway: bool = False) -> Any:
    """A script: each call answers after the next of ``delays`` seconds.  ``anyway``: the first call answers even
    when cancelled (a vendor that finished the request though the client left), at ``Usage(123, 45)``."""
    calls = iter(range(len(delays)))

    def item(request: LLMRequest) -> Any:
        n = next(calls)

        async def answer() -> LLMResponse:
            if anyway and n == 0:
                with anyio.CancelScope(shield=True):
                    await anyio.sleep(delays[n])
                return LLMResponse("late", usage=Usage(123, 45), provider="openai", model="gpt-4o")
            await anyio.sleep(delays[n])
            return LLMResponse(f"answer {n}", usage=usage, provider="openai", model="gpt-4o")

        return answer()

    return item


def hedged(script: Any) -> Any:
    return with_hedge(ScriptedProvider(script, name="openai", model="gpt-4o"), after=2.0, max_extra=1.0)


async def test_a_hedges_losing_copy_is_charged_to_the_budget_as_an_estimate(anyio_backend: Any) -> None:
    # The first copy is slow (30 s), the hedge (sent at 2 s) answers at 3 s: the first copy is cancelled — but it
    # was sent, and its prompt is billed.  Before, the budget saw one call: the hedge's spend was invisible.
    budget = CostBudget(10.0)
    with anyio.fail_after(100):
        result = await Agent(hedged(answering([30.0, 1.0]))).run(PROMPT, cost_limit=budget)
    assert result.content == "answer 1"
    assert result.usage == WINNER  # what the vendor said of the answer, the estimate never in it
    assert budget.calls == 2
    assert budget.estimated == pytest.approx(0.025, rel=0.05)
    assert budget.spent == pytest.approx(WON + budget.estimated)
    assert result.cost is not None
    assert result.cost.estimated == pytest.approx(budget.estimated)
    assert result.cost.total == pytest.approx(budget.spent)


async def test_a_losing_copy_that_answered_anyway_is_charged_its_real_usage(anyio_backend: Any) -> None:
    # The first copy's vendor finishes the request though it was cancelled (answered at 5 s, after the hedge won
    # at 3 s): its real usage is charged, not an estimate.
    provider = hedged(answering([5.0, 1.0], anyway=True))
    with anyio.fail_after(100):
        response = await provider.complete(LLMRequest([Message.user(PROMPT)]))
    assert response.content == "answer 1" and response.usage == WINNER
    assert cut_short_of(response) == (CutShort("openai", "gpt-4o", 123, 45, estimated=False),)
    budget = CostBudget()
    with budget:
        result = await Agent(hedged(answering([5.0, 1.0], anyway=True))).run(PROMPT)
    assert budget.calls == 2 and budget.estimated == 0.0
    assert budget.spent == pytest.approx(WON + 123 * 2.5 / 1e6 + 45 * 10.0 / 1e6)
    assert result.cost is not None and result.cost.estimated == 0.0


async def test_a_run_cancelled_mid_hedge_charges_every_copy_it_sent(anyio_backend: Any) -> None:
    # Both copies are in flight (sent at 0 s and 2 s) when the run is cancelled at 5 s: both are billed.
    budget = CostBudget(10.0)
    with anyio.move_on_after(5.0):
        await Agent(hedged(answering([30.0, 30.0]))).run(PROMPT, cost_limit=budget)
    assert budget.calls == 2
    assert budget.spent == pytest.approx(2 * 0.025, rel=0.05)
    assert budget.estimated == budget.spent


async def test_a_run_past_its_deadline_mid_call_reports_the_estimate_in_its_cost(anyio_backend: Any) -> None:
    budget = CostBudget()
    result = await Agent(hedged(answering([30.0]))).run(PROMPT, cost_limit=budget, deadline=1.0)
    assert result.error is not None and result.usage == Usage()
    assert result.cost is not None and result.cost.total == pytest.approx(0.025, rel=0.05)
    assert result.cost.estimated == result.cost.total == budget.spent


async def test_a_plain_call_cancelled_mid_call_is_charged_its_prompt(anyio_backend: Any) -> None:
    # No hedge: the ProviderActor itself notes a call cancelled once admitted (sent, or about to be).  Before, a
    # run cancelled mid-call charged nothing, though the vendor bills the prompt it read.
    budget = CostBudget()
    provider = ScriptedProvider(answering([30.0]), name="openai", model="gpt-4o")
    with anyio.move_on_after(5.0):
        await Agent(provider).run(PROMPT, cost_limit=budget)
    assert budget.calls == 1
    assert budget.spent == pytest.approx(0.025, rel=0.05)
    assert budget.estimated == budget.spent


async def test_a_call_cancelled_while_queued_for_a_slot_is_not_charged(anyio_backend: Any) -> None:
    # The second run waits for the actor's one slot when it is cancelled: its request never left, nothing is
    # billed, and nothing is charged — while the first run, cancelled mid-call later, is charged its prompt.
    first, second = CostBudget(), CostBudget()
    async with Runtime() as rt:
        actor = ProviderActor.shared(rt, ScriptedProvider(answering([30.0, 30.0]), name="openai", model="gpt-4o"),
                                     max_concurrency=1)
        agent = Agent(actor)
        async with anyio.create_task_group() as tg:

            async def run(budget: CostBudget, after: float) -> None:
                with anyio.move_on_after(after):
                    await agent.run(PROMPT, cost_limit=budget)

            tg.start_soon(run, first, 10.0)
            await anyio.sleep(1.0)
            tg.start_soon(run, second, 2.0)
    assert second.calls == 0 and second.spent == 0.0
    assert first.calls == 1 and first.estimated == pytest.approx(0.025, rel=0.05)


class _Trickle(ScriptedProvider):
    """Streams 400 characters (~100 output tokens) at once, then nothing more for a long while."""

    def stream(self, request: LLMRequest) -> Any:
        return self._trickle()

    @asynccontextmanager
    async def _trickle(self) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        async def events() -> AsyncIterator[StreamEvent]:
            yield TextDelta("y" * 400)
            await anyio.sleep(1000)
            yield TextDelta("never")

        gen = events()
        try:
            yield gen
        finally:
            with anyio.CancelScope(shield=True):
                await gen.aclose()  # type: ignore[attr-defined]


async def test_a_stream_cancelled_mid_stream_is_charged_its_prompt_and_what_it_delivered(anyio_backend: Any) -> None:
    budget = CostBudget()
    seen: list[str] = []
    with budget, anyio.move_on_after(5.0):
        async with Agent(_Trickle("unused", name="openai", model="gpt-4o")).stream(PROMPT) as run:
            async for text in run.text_stream():
                seen.append(text)
    assert "".join(seen) == "y" * 400
    assert budget.calls == 1
    expected = 10_001 * 2.5 / 1e6 + 100 * 10.0 / 1e6  # the prompt, and the 100 tokens it had delivered
    assert budget.spent == pytest.approx(expected, rel=0.05)
    assert budget.estimated == budget.spent


def test_a_note_is_taken_once_and_only_by_its_own_request() -> None:
    request = LLMRequest([Message.user(PROMPT)])
    other = LLMRequest([Message.user(PROMPT)])  # equal, but another call
    call = CutShort("openai", "gpt-4o", estimate_tokens(request, max_output=0))
    note_cut_short(request, (call,))
    assert take_cut_short(other) == ()
    assert take_cut_short(request) == (call,)
    assert take_cut_short(request) == ()
    cost = call.cost()
    assert cost is not None and cost.estimated == cost.total == pytest.approx(0.025, rel=0.05)
    assert (Cost(1.0, 0.0) + cost).estimated == cost.estimated


def test_a_note_added_to_keeps_what_was_noted_and_an_empty_one_says_nothing_was_billed() -> None:
    request = LLMRequest([Message.user(PROMPT)])
    first, second = (CutShort("openai", "gpt-4o", 100), CutShort("openai", "gpt-4o", 200))
    add_cut_short(request, ())
    assert pop_cut_short(request) == ()  # "nothing billed", told from silence (None)
    assert pop_cut_short(request) is None
    note_cut_short(request, (first,))
    add_cut_short(request, (second,))
    assert take_cut_short(request) == (first, second)


async def test_a_run_that_leaves_its_submitted_batch_is_charged_its_prompt_at_the_batch_price(
    anyio_backend: Any,
) -> None:
    # The item stays in the vendor's batch, runs and is billed: the run cancelled after the submission (at 1 s,
    # the window) charges its prompt at the batch price (half gpt-4o's input price here).  One cancelled while the
    # batch still collects withdraws its request: nothing is charged.
    import httpx

    from agentactors import BatchProvider, OpenAIProvider
    from tests.unit.resilience.test_batch_submission_retry import KEY, Vendor

    for cancel_at, expected in ((5.0, 0.0125), (0.5, 0.0)):
        vendor = Vendor()
        client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
        inner = OpenAIProvider("gpt-4o", api_key=KEY, base_url="https://api.openai.com/v1", http_client=client)
        batch = BatchProvider(inner, window=1.0, poll_every=10.0)
        budget = CostBudget()
        with anyio.move_on_after(cancel_at):
            await Agent(batch).run(PROMPT, cost_limit=budget)
        assert budget.spent == pytest.approx(expected, rel=0.05), cancel_at
        assert budget.estimated == budget.spent
        assert len(vendor.batches) == (1 if expected else 0)
