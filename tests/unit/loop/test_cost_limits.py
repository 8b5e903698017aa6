"""Cost limits beyond one run's: estimates before a call, budgets shared by runs, runtimes, sessions, delegation.

Prices are set here (``set_price``), so nothing needs the ``[prices]`` table: a step of ``USAGE`` at gpt-4o's
$2.5 / $10 per million costs ``STEP``.
"""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    CostBudget,
    CostLimitExceeded,
    InMemoryRecorder,
    LLMResponse,
    ModelSettings,
    OpenAIProvider,
    Runtime,
    ScriptedProvider,
    ToolCall,
    Usage,
    tool,
)
from agentactors.gateway.cost_budget import runtime_budget
from agentactors.pricing import Cost, Price, set_price, total_cost
from agentactors.testing import FakeReply, FakeVendor
from tests.support.prices import STEP, USAGE, gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = pytest.mark.anyio


@tool
async def lookup(city: str) -> str:  # async: a sync tool runs in a thread, where a virtual clock jumps
    """The weather in a city."""
    return "sunny"


def priced(*items: Any) -> ScriptedProvider:
    return ScriptedProvider(list(items), name="openai", model="gpt-4o")


def call(n: int, usage: Usage = USAGE) -> LLMResponse:
    return LLMResponse(tool_calls=(ToolCall(f"c{n}", "lookup", {"city": "Oslo"}),), usage=usage)


def always(usage: Usage = USAGE, latency: float = 0.0) -> ScriptedProvider:
    return ScriptedProvider(lambda r: LLMResponse("ok", usage=usage), name="openai", model="gpt-4o", latency=latency)


# --- the estimate -------------------------------------------------------------------------------------------


@pytest.mark.virtual_time
async def test_the_estimate_stops_a_run_before_the_call_that_would_pass_its_limit() -> None:
    recorder = InMemoryRecorder()
    provider = priced(call(1), call(2), call(3), LLMResponse("done", usage=USAGE))
    result = await Agent(provider, tools=[lookup], recorders=[recorder]).run("weather?", cost_limit=1.5 * STEP)
    error = result.error
    assert isinstance(error, CostLimitExceeded) and error.scope == "run"
    # The second call's prompt alone (~10,000 tokens, like the first's: $0.025) takes the run past
    # 1.5 * STEP whatever the model answers: it is never sent.
    assert provider.calls == 1 and result.steps == 1 and len(result.tool_calls) == 1
    assert error.estimate == pytest.approx(0.025, rel=0.01) and error.spent == pytest.approx(STEP)
    assert result.cost == Cost(0.025, 0.01)
    assert [e.type for e in recorder.events].count("llm.request") == 1
    (stopped,) = [e for e in recorder.events if e.type == "run.cost_limit_exceeded"]
    assert stopped.data == {"limit": 1.5 * STEP, "spent": pytest.approx(STEP), "scope": "run",
                            "estimate": error.estimate}


@pytest.mark.virtual_time
async def test_the_estimate_counts_the_new_messages_and_no_output() -> None:
    big = "x" * 20_000  # ~5,000 tokens of tool result: the next prompt is ~1.5 times the first
    cheap = Usage(10_000, 10)

    @tool
    async def dump(city: str) -> str:
        """A long report."""
        return big

    def run(settings: ModelSettings | None, limit: float) -> Any:
        provider = priced(LLMResponse(tool_calls=(ToolCall("c1", "dump", {"city": "Oslo"}),), usage=cheap),
                          LLMResponse("done", usage=cheap))
        return Agent(provider, tools=[dump]).run("report?", cost_limit=limit, settings=settings)

    first = 10_000 * 2.5 / 1e6 + 10 * 10.0 / 1e6
    # The second call's prompt is estimated at ~15,000 tokens: $0.0375 in; within first + 0.03 it is stopped...
    result = await run(None, first + 0.03)
    assert isinstance(result.error, CostLimitExceeded) and result.error.estimate == pytest.approx(0.0376, rel=0.01)
    # ...and with room for it, it runs.
    assert (await run(None, first + 0.045)).ok
    # The estimate is a floor: the output is not guessed, so a max_tokens that could take the call past the
    # limit does not stop a run whose answer stays within it.
    result = await run(ModelSettings(max_tokens=4_000), first + 0.045)
    assert result.ok and result.cost is not None and result.cost.total <= first + 0.045


@pytest.mark.virtual_time
async def test_estimates_are_off_for_a_budget_that_says_so() -> None:
    provider = priced(call(1), call(2), LLMResponse("done", usage=USAGE))
    budget = CostBudget(1.5 * STEP, estimate=False)
    result = await Agent(provider, tools=[lookup]).run("weather?", cost_limit=budget)
    assert isinstance(result.error, CostLimitExceeded) and result.error.estimate is None
    assert provider.calls == 2 and budget.spent == pytest.approx(2 * STEP) and budget.calls == 2


async def test_the_first_call_is_estimated_when_the_provider_names_its_model(fake_vendor: FakeVendor) -> None:
    set_price("openai", "gpt-4o", Price(1_000.0, 1_000.0))  # $0.001 a token
    fake_vendor.script(FakeReply("hi", input_tokens=10, output_tokens=2))
    provider = OpenAIProvider("gpt-4o", api_key="sk-cost-test-0000000000", base_url=fake_vendor.openai_base_url)
    async with provider:
        agent = Agent(provider)
        result = await agent.run("x" * 4_000, cost_limit=0.5)  # ~1,000 tokens: ~$1
        assert isinstance(result.error, CostLimitExceeded) and result.error.estimate == pytest.approx(1.0, rel=0.05)
        assert fake_vendor.requests == () and result.steps == 0 and result.cost == Cost()
        result = await agent.run("hello", cost_limit=0.5)  # ~2 tokens: sent
        assert result.ok and len(fake_vendor.requests) == 1


# --- budgets shared by runs ------------------------------------------------------------------------------


@pytest.mark.virtual_time
async def test_a_budget_entered_around_a_batch_is_its_total_and_its_limit() -> None:
    provider = always()
    batch = CostBudget(2.5 * STEP)
    with batch:
        results = await Agent(provider).run_many([f"q{i}" for i in range(10)], concurrency=1)
    # Runs 1 and 2 fit; run 3 passes it (its one call is not estimated: a scripted provider names no model);
    # the rest stop before sending anything.
    assert provider.calls == 3 and [r.ok for r in results] == [True, True] + [False] * 8
    assert all(isinstance(r.error, CostLimitExceeded) and r.error.scope == "budget" for r in results[2:])
    assert [r.steps for r in results[3:]] == [0] * 7
    assert batch.spent == pytest.approx(3 * STEP) and batch.calls == 3
    assert batch.cost is not None and batch.cost.total == pytest.approx(3 * STEP)
    assert total_cost(results) == batch.cost
    # Outside the block, runs are not under it.
    assert (await Agent(provider).run("after")).ok and batch.calls == 3


@pytest.mark.virtual_time
async def test_concurrent_runs_overspend_a_shared_limit_by_at_most_the_calls_in_flight() -> None:
    provider = always(latency=1.0)
    budget = CostBudget(2.5 * STEP, estimate=False)
    with budget:
        results = await Agent(provider).run_many([f"q{i}" for i in range(20)], concurrency=4)
    # The limit is reached by the third call to end; the calls in flight then (at most 4, the concurrency) are
    # paid for, and no run sends anything after: the overspend is bounded by the calls in flight.
    limit = budget.limit
    assert limit is not None and limit < budget.spent <= limit + 4 * STEP
    assert budget.calls == provider.calls <= 2 + 4
    ran = [r for r in results if r.steps]
    assert len(ran) == provider.calls and all(r.steps == 0 for r in results[provider.calls :])
    assert sum(r.ok for r in results) == 2  # the two that ended within the limit
    assert all(isinstance(r.error, CostLimitExceeded) for r in results if not r.ok)


@pytest.mark.virtual_time
async def test_as_completed_runs_charge_the_budget_entered_around_them() -> None:
    budget = CostBudget()
    with budget:
        async with Runtime() as rt, Agent(always()).bind(rt).as_completed(["a", "b", "c"]) as results:
            assert [r.ok async for r in results] == [True] * 3
    assert budget.cost == Cost(3 * 0.025, 3 * 0.01) and budget.limit is None and budget.remaining is None


@pytest.mark.virtual_time
async def test_a_budget_counts_unpriced_calls_apart_and_has_no_cost_then() -> None:
    budget = CostBudget(1.0)
    unpriced = ScriptedProvider(lambda r: LLMResponse("ok", usage=USAGE), name="mine", model="m")
    with budget:
        assert (await Agent(always()).run("a")).ok and (await Agent(unpriced).run("b")).ok
    assert budget.calls == 2 and budget.unpriced == 1 and budget.cost is None
    assert budget.spent == pytest.approx(STEP) and budget.remaining == pytest.approx(1.0 - STEP)
    set_price("eu", "m", Price(1.0, 1.0, currency="EUR"))
    euros = ScriptedProvider(lambda r: LLMResponse("ok", usage=USAGE), name="eu", model="m")
    with budget:
        assert (await Agent(euros).run("c")).cost == Cost(0.01, 0.001, currency="EUR")
    assert budget.unpriced == 2 and budget.currency == "USD"  # another currency is not counted as dollars


def test_a_budget_refuses_a_bad_limit_and_says_what_it_holds() -> None:
    for bad in (-1.0, math.nan, math.inf, "1", True):
        with pytest.raises(ValueError):
            CostBudget(bad)  # type: ignore[arg-type]
    budget = CostBudget(1.0)
    with pytest.raises(ValueError, match="None"):  # an infinite limit is no limit: None says that
        budget.limit = math.inf
    assert budget.limit == 1.0
    assert "limit=2" in repr(CostBudget(2.0, name="team")) and "'team'" in repr(CostBudget(2.0, name="team"))


# --- a runtime's limit --------------------------------------------------------------------------------------


@pytest.mark.virtual_time
async def test_a_runtimes_limit_is_shared_by_its_runs() -> None:
    provider = always()
    async with Runtime(cost_limit=1.5 * STEP) as rt:
        agent = Agent(provider).bind(rt)
        first, second, third = [await agent.run(q) for q in ("a", "b", "c")]
        budget = runtime_budget(rt)
        assert budget is not None and budget is runtime_budget(rt) and budget.name == "runtime"
    assert budget is not None
    assert first.ok and isinstance(second.error, CostLimitExceeded) and second.error.scope == "runtime"
    assert isinstance(third.error, CostLimitExceeded) and third.steps == 0  # nothing left: never sent
    assert provider.calls == 2 and budget.spent == pytest.approx(2 * STEP)
    # Runs outside it are not counted.
    assert (await Agent(provider).run("elsewhere")).ok and budget.calls == 2


@pytest.mark.virtual_time
async def test_a_runtime_may_share_a_budget_of_yours() -> None:
    shared = CostBudget(10.0, name="team")
    async with Runtime(cost_limit=shared) as one, Runtime(cost_limit=shared) as two:
        await Agent(always()).run("a", runtime=one)
        await Agent(always()).run("b", runtime=two)
        assert runtime_budget(one) is shared
    assert shared.calls == 2 and runtime_budget(Runtime()) is None
    for bad in (-1, "1", math.nan, math.inf, True):
        with pytest.raises(ValueError):
            Runtime(cost_limit=bad)


# --- delegation --------------------------------------------------------------------------------------------


@pytest.mark.virtual_time
async def test_a_child_spends_its_parents_budget_and_is_stopped_by_it() -> None:
    child_provider = priced(*(call(i) for i in range(10)), LLMResponse("found", usage=USAGE))
    child = Agent(child_provider, tools=[lookup], name="researcher")
    delegate = LLMResponse(tool_calls=(ToolCall("d1", "researcher", {"input": "look"}),), usage=USAGE)
    parent_provider = priced(delegate, LLMResponse("done", usage=USAGE))
    parent = Agent(parent_provider, tools=[child.as_tool()])
    result = await parent.run("go", cost_limit=3.5 * STEP)
    (kid,) = result.children
    # Parent 1 step + the child's 2 = 3 steps spent; the child's third call would pass the parent's limit.
    assert isinstance(kid.error, CostLimitExceeded) and kid.error.scope == "parent run" and child_provider.calls == 2
    # The parent's own next call would too: it stops before it.
    assert isinstance(result.error, CostLimitExceeded) and result.error.scope == "run" and parent_provider.calls == 1
    assert result.cost is not None and result.cost.total == pytest.approx(3 * STEP)
    assert kid.cost is not None and kid.cost.total == pytest.approx(2 * STEP)


# --- sessions ----------------------------------------------------------------------------------------------


@pytest.mark.virtual_time
async def test_a_sessions_turns_share_its_limit_and_its_cost_outlives_its_deactivation() -> None:
    provider = always()
    async with Runtime() as rt:
        agent = Agent(provider)
        session = rt.session(agent, "user-7", cost_limit=2.5 * STEP, idle_timeout=5.0)
        assert session.cost == Cost() and session.budget.limit == 2.5 * STEP
        assert (await session.send("one")).ok and (await session.send("two")).ok
        await anyio.sleep(10)  # idle: deactivated
        assert not session.active
        again = rt.session(agent, "user-7")  # another handle, the same session: the same budget
        assert again.budget is session.budget and again.cost == Cost(0.05, 0.02)
        third = await again.send("three")
        assert isinstance(third.error, CostLimitExceeded) and third.error.scope == "session 'user-7'"
        assert len(again.history) == 4  # not committed: the history is the two turns'
        fourth = await again.send("four")
        assert isinstance(fourth.error, CostLimitExceeded) and fourth.steps == 0
        assert provider.calls == 3 and session.cost is not None and session.cost.total == pytest.approx(3 * STEP)
        other = rt.session(agent, "user-8")
        assert (await other.send("hi")).ok and other.cost == Cost(0.025, 0.01) and other.budget.limit is None


@pytest.mark.virtual_time
async def test_a_turn_may_have_its_own_limit_and_a_session_its_own_budget() -> None:
    provider = priced(call(1), call(2), call(3), LLMResponse("done", usage=USAGE))
    mine = CostBudget(name="user 7 this month")
    async with Runtime() as rt:
        session = Agent(provider, tools=[lookup]).session("k", runtime=rt, cost_limit=mine)
        result = await session.send("weather?", cost_limit=1.5 * STEP)
        assert isinstance(result.error, CostLimitExceeded) and result.error.scope == "turn"
        assert session.budget is mine and mine.spent == pytest.approx(STEP) and mine.calls == 1
        with pytest.raises(ValueError):
            await session.send("again", cost_limit=-1.0)
        with pytest.raises(ValueError):
            rt.session(Agent(provider), "bad", cost_limit="1")


@pytest.mark.virtual_time
async def test_an_unpriced_session_has_no_cost_never_zero() -> None:
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(lambda r: LLMResponse("ok", usage=USAGE))), "k")
        assert (await session.send("hi")).ok
        assert session.cost is None and session.budget.unpriced == 1


def test_the_error_keeps_whose_limit_it_was_and_the_estimate_through_a_pickle() -> None:
    import pickle

    error = CostLimitExceeded("stopped", limit=1.0, spent=0.9, scope="session 'k'", estimate=0.2)
    again = pickle.loads(pickle.dumps(error))
    assert (again.limit, again.spent, again.scope, again.estimate) == (1.0, 0.9, "session 'k'", 0.2)
    assert str(again) == "stopped"


# --- a model without a price under a limit ---------------------------------------------------------------------


async def test_a_model_without_a_price_under_a_limit_is_warned_of_once(caplog: pytest.LogCaptureFixture) -> None:
    """Its calls are not counted against the limit (docs/costs.md): that is said once per model, as a WARNING,
    rather than only in ``CostBudget.unpriced`` — a fine-tune under a $0.01 limit otherwise spends on unseen."""
    import uuid

    model = f"ft:unpriced-{uuid.uuid4().hex[:8]}"
    unpriced = ScriptedProvider(lambda r: LLMResponse("ok", usage=USAGE), name="openai", model=model)
    agent = Agent(unpriced)
    with caplog.at_level("WARNING", logger="agentactors.pricing"):
        await agent.run("no limit")  # counted by nobody's limit: nothing to say
        assert not [r for r in caplog.records if model in r.getMessage()]
        for _ in range(3):
            result = await agent.run("hi", cost_limit=0.01)
            assert result.ok and result.cost is None
        with CostBudget(1.0, name="team") as budget:
            await agent.run("hi")
    warned = [r.getMessage() for r in caplog.records if model in r.getMessage()]
    assert len(warned) == 1, warned
    assert "has no price" in warned[0] and "set_price('openai'" in warned[0], warned[0]
    assert budget.unpriced == 1
    caplog.clear()
    with caplog.at_level("WARNING", logger="agentactors.pricing"):
        await Agent(always()).run("priced", cost_limit=1.0)
    assert not caplog.records
