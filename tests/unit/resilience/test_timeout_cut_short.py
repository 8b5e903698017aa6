"""An attempt ``with_timeout`` abandoned is charged (docs/costs.md, "Calls cut short"); virtual time, both backends.

When its own bound ends an attempt, the request was sent and the vendor bills it; ``with_retry`` then sends another,
and before only the answer's cost was charged — a slow vendor under retries spent invisibly.  Now the abandoned
attempt is charged conservatively (its prompt as ``estimate_tokens`` counts it; a stream's delivered text), marked
estimated: on the answer a later attempt brings (``provider_data["cut_short"]``), or noted for the run when the call
fails or is cancelled.
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
    with_fallback,
    with_retry,
    with_timeout,
)
from agentactors.errors import ProviderTimeout, StreamInterruptedError
from agentactors.messages import StreamEnd, TextDelta
from agentactors.pricing import CutShort, cut_short_of, take_cut_short
from agentactors.providers.scripted import StreamCut
from tests.support.cut_short import ESTIMATE, PROMPT
from tests.support.prices import gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

ANSWER = Usage(10_000, 100)
ANSWERED = 10_000 * 2.5 / 1e6 + 100 * 10.0 / 1e6


def answering(*delays: float) -> ScriptedProvider:
    """Each call answers after the next of ``delays`` seconds (a vendor that hangs: a long one)."""
    calls = iter(range(len(delays)))

    def item(request: LLMRequest) -> Any:
        n = next(calls)

        async def answer() -> LLMResponse:
            await anyio.sleep(delays[n])
            return LLMResponse(f"answer {n}", usage=ANSWER, provider="openai", model="gpt-4o")

        return answer()

    return ScriptedProvider(item, name="openai", model="gpt-4o")


def retried(*delays: float, attempts: int = 3) -> Any:
    return with_retry(with_timeout(answering(*delays), attempt=1.0), max_attempts=attempts, base_delay=0.0)


async def _run(provider: Any, budget: CostBudget, via_actor: bool, **options: Any) -> Any:
    if not via_actor:
        return await Agent(provider).run(PROMPT, cost_limit=budget, **options)
    async with Runtime() as rt:
        return await Agent(ProviderActor.shared(rt, provider)).run(PROMPT, cost_limit=budget, runtime=rt, **options)


@pytest.mark.parametrize("via_actor", [False, True], ids=["direct", "provider-actor"])
async def test_an_attempt_the_timeout_abandoned_rides_on_the_answer_of_the_retry(
    anyio_backend: Any, via_actor: bool
) -> None:
    # The first attempt hangs and is abandoned at 1 s, the second answers: the budget counts both calls, the first
    # at an estimate.  Before, it counted one — the abandoned attempt, billed by the vendor, was never charged.
    budget = CostBudget(10.0)
    with anyio.fail_after(100):
        result = await _run(retried(30.0, 0.5), budget, via_actor)
    assert result.content == "answer 1"
    assert result.usage == ANSWER  # what the vendor said of the answer: the estimate is never in it
    assert budget.calls == 2
    assert budget.estimated == pytest.approx(ESTIMATE, rel=0.05)
    assert budget.spent == pytest.approx(ANSWERED + budget.estimated)
    assert result.cost is not None and result.cost.estimated == pytest.approx(budget.estimated)


async def test_the_answer_carries_the_abandoned_attempts(anyio_backend: Any) -> None:
    request = LLMRequest([Message.user(PROMPT)])
    with anyio.fail_after(100):
        response = await retried(30.0, 30.0, 0.5).complete(request)
    (first, second) = cut_short_of(response)
    assert first == second and first.provider == "openai" and first.model == "gpt-4o" and first.estimated
    assert first.input_tokens == pytest.approx(10_000, rel=0.05) and first.output_tokens == 0
    assert take_cut_short(request) == ()  # on the answer, not also left noted


@pytest.mark.parametrize("via_actor", [False, True], ids=["direct", "provider-actor"])
async def test_a_call_whose_every_attempt_timed_out_charges_each(anyio_backend: Any, via_actor: bool) -> None:
    budget = CostBudget(10.0)
    with anyio.fail_after(100):
        result = await _run(retried(30.0, 30.0, attempts=2), budget, via_actor)
    assert isinstance(result.error, ProviderTimeout) or isinstance(result.error.__cause__, ProviderTimeout)
    assert budget.calls == 2
    assert budget.spent == pytest.approx(2 * ESTIMATE, rel=0.05) and budget.estimated == budget.spent


async def test_a_timeout_alone_charges_the_call_it_abandoned(anyio_backend: Any) -> None:
    budget = CostBudget(10.0)
    with anyio.fail_after(100):
        result = await Agent(with_timeout(answering(30.0), attempt=1.0)).run(PROMPT, cost_limit=budget)
    assert result.error is not None
    assert budget.calls == 1 and budget.estimated == pytest.approx(ESTIMATE, rel=0.05)


@pytest.mark.parametrize("via_actor", [False, True], ids=["direct", "provider-actor"])
async def test_a_run_cancelled_during_the_retry_charges_the_abandoned_attempt_and_the_one_in_flight(
    anyio_backend: Any, via_actor: bool
) -> None:
    # Attempt 1 abandoned at 1 s, attempt 2 in flight when the run is cancelled at 1.5 s: both were sent.
    budget = CostBudget(10.0)
    with anyio.move_on_after(1.5):
        await _run(retried(30.0, 30.0), budget, via_actor)
    assert budget.calls == 2
    assert budget.spent == pytest.approx(2 * ESTIMATE, rel=0.05) and budget.estimated == budget.spent


async def test_a_stream_whose_first_attempt_timed_out_carries_it_on_its_end(anyio_backend: Any) -> None:
    provider = with_retry(with_timeout(answering(30.0, 0.5), first_event=1.0), base_delay=0.0)
    request = LLMRequest([Message.user(PROMPT)])
    with anyio.fail_after(100):
        async with provider.stream(request) as events:
            got = [event async for event in events]
    end = got[-1]
    assert isinstance(end, StreamEnd) and end.response.content == "answer 1"
    (abandoned,) = cut_short_of(end.response)
    assert abandoned.estimated and abandoned.input_tokens == pytest.approx(10_000, rel=0.05)


async def test_a_stream_abandoned_mid_way_charges_the_text_it_had_delivered(anyio_backend: Any) -> None:
    # The idle bound ends the stream after its first deltas: its prompt and what it had delivered are billed.
    def item(request: LLMRequest) -> Any:
        async def slow() -> Any:
            return StreamCut("y" * 400, ProviderTimeout("never", provider="openai"))
        return slow()

    class Stalling(ScriptedProvider):
        def stream(self, request: LLMRequest) -> Any:
            inner = super().stream(request)

            class Ctx:
                async def __aenter__(self) -> Any:
                    events = await inner.__aenter__()

                    async def gen() -> Any:
                        yield TextDelta("y" * 400)
                        await anyio.sleep(60)
                        async for event in events:
                            yield event

                    return gen()

                async def __aexit__(self, *exc: Any) -> Any:
                    return await inner.__aexit__(*exc)

            return Ctx()

    request = LLMRequest([Message.user(PROMPT)])
    provider = with_timeout(Stalling(item, name="openai", model="gpt-4o"), idle=1.0)
    with anyio.fail_after(100), pytest.raises(StreamInterruptedError):
        async with provider.stream(request) as events:
            async for _ in events:
                pass
    (abandoned,) = take_cut_short(request)
    assert abandoned == CutShort("openai", "gpt-4o", abandoned.input_tokens, 100)
    assert abandoned.input_tokens == pytest.approx(10_000, rel=0.05)


def _fallback(first: ScriptedProvider, second: ScriptedProvider) -> Any:
    return with_fallback(with_timeout(first, attempt=1.0), second)


@pytest.mark.parametrize("via_actor", [False, True], ids=["direct", "provider-actor"])
async def test_an_attempt_abandoned_before_a_fallback_answered_rides_on_its_answer(
    anyio_backend: Any, via_actor: bool
) -> None:
    # The first member hangs and its timeout gives up at 1 s; the second member answers.  The first member's call
    # was sent and is billed: the budget counts both.  Before, its record was left against the member's request,
    # which no run takes: never charged.
    budget = CostBudget(10.0)
    with anyio.fail_after(100):
        result = await _run(_fallback(answering(30.0), answering(0.5)), budget, via_actor)
    assert result.content == "answer 0"
    assert budget.calls == 2
    assert budget.estimated == pytest.approx(ESTIMATE, rel=0.05)
    assert budget.spent == pytest.approx(ANSWERED + budget.estimated)


@pytest.mark.parametrize("via_actor", [False, True], ids=["direct", "provider-actor"])
async def test_every_member_abandoned_in_a_fallback_is_charged_once(anyio_backend: Any, via_actor: bool) -> None:
    # Both members time out: the call fails, and each member's abandoned attempt is charged, once.  Before, the
    # second timeout took the first one's record as its inner layer's: one call charged for two sent.
    budget = CostBudget(10.0)
    provider = with_fallback(with_timeout(answering(30.0), attempt=1.0), with_timeout(answering(30.0), attempt=1.0))
    with anyio.fail_after(100):
        result = await _run(provider, budget, via_actor)
    assert result.error is not None
    assert budget.calls == 2
    assert budget.estimated == budget.spent == pytest.approx(2 * ESTIMATE, rel=0.05)


async def test_a_stream_opened_after_a_member_was_abandoned_carries_it_on_its_end(anyio_backend: Any) -> None:
    # Streamed (the loop pulls its stream): the first member's stream gives no first event within 1 s and is
    # abandoned, the second member streams the answer — the first member's call rides on the answer's StreamEnd.
    budget = CostBudget(10.0)
    provider = with_fallback(with_timeout(answering(30.0), first_event=1.0), answering(0.5))
    with budget, anyio.fail_after(100):
        async with Agent(provider).stream(PROMPT) as run:
            result = await run.wait()
    assert result.content == "answer 0"
    assert budget.calls == 2
    assert budget.estimated == pytest.approx(ESTIMATE, rel=0.05)
