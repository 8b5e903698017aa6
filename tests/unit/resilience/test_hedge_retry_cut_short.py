"""Every copy a hedge sent, and every attempt a retried stream abandoned, is charged once (docs/costs.md, "Calls cut
short"); virtual time, both backends.

Two gaps closed here.  A hedge with no retry around it lost a copy its ``with_timeout`` had given up on: the
timeout noted it for the run, and the hedge either overwrote that note with its own (a call cancelled with the
other copy in flight) or left it behind (a call the other copy answered: the run takes notes only from calls that
fail) — a copy sent and billed, never charged.  A retried stream its consumer left before its end without an
exception (it broke out, closed the stream) dropped the attempts abandoned before it: the exception path noted
them for the run, the quiet one did not.
"""

from __future__ import annotations

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
    with_retry,
    with_timeout,
)
from agentactors.messages import StreamEnd, TextDelta
from agentactors.pricing import cut_short_of, take_cut_short
from tests.support.cut_short import ESTIMATE, PROMPT
from tests.support.prices import gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

ANSWER = Usage(10_000, 100)
ANSWERED = 10_000 * 2.5 / 1e6 + 100 * 10.0 / 1e6


def answering(*delays: float, model: str = "gpt-4o") -> ScriptedProvider:
    """Each call answers after the next of ``delays`` seconds (a vendor that hangs: a long one)."""
    return ScriptedProvider(script(*delays, model=model), name="openai", model=model)


def script(*delays: float, model: str = "gpt-4o") -> Any:
    calls = iter(range(len(delays)))

    def item(request: LLMRequest) -> Any:
        n = next(calls)

        async def answer() -> LLMResponse:
            await anyio.sleep(delays[n])
            return LLMResponse(f"answer {n}", usage=ANSWER, provider="openai", model=model)

        return answer()

    return item


def hedged(*delays: float, bound: float = 3.0) -> Any:
    """The first copy sent at 0 s, the hedge at 2 s; each copy bounded at ``bound`` s by its own timeout."""
    return with_hedge(with_timeout(answering(*delays), attempt=bound), after=2.0, max_extra=1.0)


async def _run(provider: Any, budget: CostBudget, via_actor: bool) -> Any:
    if not via_actor:
        return await Agent(provider).run(PROMPT, cost_limit=budget)
    async with Runtime() as rt:
        return await Agent(ProviderActor.shared(rt, provider)).run(PROMPT, cost_limit=budget, runtime=rt)


# --- a hedge with no retry around it -----------------------------------------------------------------------------


@pytest.mark.parametrize("via_actor", [False, True], ids=["direct", "provider-actor"])
async def test_a_hedge_cancelled_after_one_copy_timed_out_charges_both_copies(
    anyio_backend: Any, via_actor: bool
) -> None:
    # The first copy is abandoned by its timeout at 3 s, the hedge (sent at 2 s) is in flight when the run is
    # cancelled at 4 s: both were sent.  Before, the hedge's note of the copy in flight replaced the timeout's note
    # of the other one: one call charged for two sent.
    budget = CostBudget(10.0)
    with anyio.move_on_after(4.0):
        await _run(hedged(30.0, 30.0), budget, via_actor)
    assert budget.calls == 2
    assert budget.spent == pytest.approx(2 * ESTIMATE, rel=0.05) and budget.estimated == budget.spent


@pytest.mark.parametrize("via_actor", [False, True], ids=["direct", "provider-actor"])
async def test_a_copy_that_timed_out_rides_on_the_answer_of_the_other(anyio_backend: Any, via_actor: bool) -> None:
    # The first copy is abandoned at 3 s, the hedge (sent at 2 s) answers at 3.5 s.  Before, the abandoned copy was
    # noted for a run that takes notes only from a call that fails: never charged.
    budget = CostBudget(10.0)
    with anyio.fail_after(100):
        result = await _run(hedged(30.0, 1.5), budget, via_actor)
    assert result.content == "answer 1"
    assert result.usage == ANSWER
    assert budget.calls == 2
    assert budget.estimated == pytest.approx(ESTIMATE, rel=0.05)
    assert budget.spent == pytest.approx(ANSWERED + budget.estimated)


async def test_the_answer_carries_the_copy_that_timed_out_and_leaves_no_note(anyio_backend: Any) -> None:
    request = LLMRequest([Message.user(PROMPT)])
    with anyio.fail_after(100):
        response = await hedged(30.0, 1.5).complete(request)
    (abandoned,) = cut_short_of(response)
    assert abandoned.estimated and abandoned.input_tokens == pytest.approx(10_000, rel=0.05)
    assert take_cut_short(request) == ()  # on the answer, not also left noted


async def test_a_hedge_to_another_member_that_timed_out_rides_on_the_answer(anyio_backend: Any) -> None:
    # The hedge goes to another member (its own model: a request of its own), whose timeout gives up at 3 s; the
    # first copy answers at 5 s.  Before, the timeout noted it against the member's request, which no run takes.
    other = with_timeout(answering(30.0, model="gpt-4o"), attempt=1.0)
    provider = with_hedge(answering(5.0), after=2.0, max_extra=1.0, to=other)
    budget = CostBudget(10.0)
    with anyio.fail_after(100):
        result = await Agent(provider).run(PROMPT, cost_limit=budget)
    assert result.content == "answer 0"
    assert budget.calls == 2
    assert budget.estimated == pytest.approx(ESTIMATE, rel=0.05)


async def test_a_hedge_whose_every_copy_timed_out_charges_each_once(anyio_backend: Any) -> None:
    budget = CostBudget(10.0)
    with anyio.fail_after(100):
        result = await Agent(hedged(30.0, 30.0)).run(PROMPT, cost_limit=budget)
    assert result.error is not None
    assert budget.calls == 2
    assert budget.spent == pytest.approx(2 * ESTIMATE, rel=0.05) and budget.estimated == budget.spent


async def test_a_hedged_stream_carries_a_copy_that_timed_out_on_its_end(anyio_backend: Any) -> None:
    # Streamed: the first copy gives no first event by 3 s and is abandoned; the hedge (sent at 2 s) streams the
    # answer from 3.5 s.  Its StreamEnd carries the abandoned copy, charged with the answer.
    provider = with_hedge(with_timeout(answering(30.0, 1.5), first_event=3.0), after=2.0, max_extra=1.0)
    budget = CostBudget(10.0)
    with budget, anyio.fail_after(100):
        async with Agent(provider).stream(PROMPT) as run:
            result = await run.wait()
    assert result.content == "answer 1"
    assert budget.calls == 2
    assert budget.estimated == pytest.approx(ESTIMATE, rel=0.05)
    assert budget.spent == pytest.approx(ANSWERED + budget.estimated)


async def test_a_hedged_stream_left_before_its_end_charges_the_losing_copy(anyio_backend: Any) -> None:
    # The hedge won at 3 s (sent at 2 s); the first copy was cancelled then, sent and billed.  The consumer breaks
    # out after the first event: the losing copy, which was to ride on the StreamEnd, is noted for the run — with
    # the winner, left in flight (tests/unit/resilience/test_streams_left_early_cost.py).
    provider = with_hedge(answering(30.0, 1.0), after=2.0, max_extra=1.0)
    request = LLMRequest([Message.user(PROMPT)])
    with anyio.fail_after(100):
        async with provider.stream(request) as events:
            async for event in events:
                assert isinstance(event, TextDelta)
                break
    lost, winner = take_cut_short(request)
    assert lost.estimated and lost.input_tokens == pytest.approx(10_000, rel=0.05)
    assert winner.estimated and winner.input_tokens == pytest.approx(10_000, rel=0.05)


# --- with a retry around: still once each -----------------------------------------------------------------------


def retried_hedge(*delays: float) -> Any:
    return with_retry(hedged(*delays), max_attempts=2, base_delay=0.0)


@pytest.mark.parametrize("via_actor", [False, True], ids=["direct", "provider-actor"])
async def test_under_a_retry_a_copy_that_timed_out_is_charged_once(anyio_backend: Any, via_actor: bool) -> None:
    budget = CostBudget(10.0)
    with anyio.fail_after(100):
        result = await _run(retried_hedge(30.0, 1.5), budget, via_actor)
    assert result.content == "answer 1"
    assert budget.calls == 2
    assert budget.estimated == pytest.approx(ESTIMATE, rel=0.05)


async def test_under_a_retry_a_cancelled_hedge_charges_each_copy_once(anyio_backend: Any) -> None:
    budget = CostBudget(10.0)
    with anyio.move_on_after(4.0):
        await Agent(retried_hedge(30.0, 30.0)).run(PROMPT, cost_limit=budget)
    assert budget.calls == 2
    assert budget.spent == pytest.approx(2 * ESTIMATE, rel=0.05)


async def test_under_a_retry_every_copy_of_every_attempt_is_charged_once(anyio_backend: Any) -> None:
    # Attempt 1: both copies time out (3 s and 5 s); attempt 2: its first copy answers at once.
    budget = CostBudget(10.0)
    with anyio.fail_after(100):
        result = await Agent(retried_hedge(30.0, 30.0, 0.5)).run(PROMPT, cost_limit=budget)
    assert result.content == "answer 2"
    assert budget.calls == 3
    assert budget.estimated == pytest.approx(2 * ESTIMATE, rel=0.05)
    assert budget.spent == pytest.approx(ANSWERED + budget.estimated)


async def test_a_hedge_that_answered_at_once_charges_only_its_answer(anyio_backend: Any) -> None:
    # The common path: no hedge sent, nothing abandoned — the answer alone, as before.
    budget = CostBudget(10.0)
    with anyio.fail_after(100):
        result = await Agent(retried_hedge(0.5)).run(PROMPT, cost_limit=budget)
    assert result.content == "answer 0"
    assert budget.calls == 1 and budget.estimated == 0.0
    assert budget.spent == pytest.approx(ANSWERED)


# --- a retried stream its consumer left before its end ---------------------------------------------------------


def retried_stream(*delays: float) -> Any:
    return with_retry(with_timeout(answering(*delays), first_event=1.0), base_delay=0.0)


async def test_a_retried_stream_left_early_notes_the_attempts_abandoned_before_it(anyio_backend: Any) -> None:
    # Attempt 1 gives no first event by 1 s and is abandoned; attempt 2 streams.  The consumer breaks out after the
    # first event: the abandoned attempt, which was to ride on the StreamEnd, is noted for the run.  Before, it was
    # dropped (only a consumer that left with an exception had it noted).  With it the attempt in flight, left
    # alive (tests/unit/gateway/test_stream_closed_early_cost.py).
    request = LLMRequest([Message.user(PROMPT)])
    with anyio.fail_after(100):
        async with retried_stream(30.0, 0.5).stream(request) as events:
            async for event in events:
                assert isinstance(event, TextDelta)
                break
    abandoned, in_flight = take_cut_short(request)
    assert abandoned.estimated and abandoned.input_tokens == pytest.approx(10_000, rel=0.05)
    assert in_flight.estimated and in_flight.input_tokens == pytest.approx(10_000, rel=0.05)


async def test_a_retried_stream_closed_early_notes_every_attempt_abandoned_before_it(anyio_backend: Any) -> None:
    request = LLMRequest([Message.user(PROMPT)])
    with anyio.fail_after(100):
        async with retried_stream(30.0, 30.0, 0.5).stream(request) as events:
            await events.__anext__()
            await events.aclose()
    assert len(take_cut_short(request)) == 3  # the two abandoned, and the one in flight


async def test_a_retried_stream_read_to_its_end_leaves_no_note(anyio_backend: Any) -> None:
    # Read to its end, the abandoned attempt rides on the StreamEnd only: charged once.
    request = LLMRequest([Message.user(PROMPT)])
    with anyio.fail_after(100):
        async with retried_stream(30.0, 0.5).stream(request) as events:
            got = [event async for event in events]
    end = got[-1]
    assert isinstance(end, StreamEnd) and len(cut_short_of(end.response)) == 1
    assert take_cut_short(request) == ()


async def test_a_retried_run_whose_stream_ended_without_its_end_charges_the_abandoned_attempt(
    anyio_backend: Any,
) -> None:
    # The run's own view: attempt 1 abandoned at 1 s, attempt 2's stream stops after its first event without a
    # StreamEnd (the stream was closed under the run).  The run fails, and takes the note: the attempt is charged.
    class Truncated(ScriptedProvider):
        def stream(self, request: LLMRequest) -> Any:
            inner = super().stream(request)

            class Ctx:
                async def __aenter__(self) -> Any:
                    events = await inner.__aenter__()

                    async def gen() -> Any:
                        async for event in events:
                            yield event
                            return  # the first event only: no StreamEnd

                    return gen()

                async def __aexit__(self, *exc: Any) -> Any:
                    return await inner.__aexit__(*exc)

            return Ctx()

    provider = with_retry(
        with_timeout(Truncated(script(30.0, 0.5), name="openai", model="gpt-4o"), first_event=1.0), base_delay=0.0
    )
    budget = CostBudget(10.0)
    with budget, anyio.fail_after(100):
        async with Agent(provider).stream(PROMPT) as run:
            result = await run.wait()
    assert result.error is not None
    assert budget.calls == 1 and budget.estimated == pytest.approx(ESTIMATE, rel=0.05)
