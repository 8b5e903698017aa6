"""A run_many slot whose run did not finish carries what the run was billed (docs/costs.md, "A batch's cost").

A run cancelled with its batch, or one that raised, used to get a slot built from its input messages alone —
no usage, no cost — though it had made (and been billed for) model calls before it stopped; ``total_cost`` of the
batch's results was then ``None`` or short of what the ``CostBudget`` around the batch had counted.  Each slot
now holds what its run had counted (its finished calls, and a call cut short by the cancellation at its
estimate), so ``total_cost(results)`` is what the budget counted.  Virtual time, both backends; the
BatchProvider case runs against the FakeVendor on a real clock.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import Agent, CostBudget, LLMRequest, LLMResponse, ProviderError, Runtime, ScriptedProvider, Usage
from agentactors.agent.batch import results_of
from agentactors.errors import ErrorKind, ToolStatusError
from agentactors.loop.result import RunResult
from agentactors.messages import Message, ToolCall
from agentactors.pricing import Cost, total_cost
from agentactors.tools import ToolStatus, tool
from tests.support.prices import (
    STEP,
    USAGE,
    gpt_4o_priced,  # noqa: F401  (an autouse fixture)
)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

FOREVER = 10_000.0


def _user(request: LLMRequest) -> str:
    return next(m.content for m in request.messages if m.role == "user")


def priced(content: str = "", calls: tuple[ToolCall, ...] = ()) -> LLMResponse:
    return LLMResponse(content, tool_calls=calls, usage=USAGE, provider="openai", model="gpt-4o")


async def model(request: LLMRequest) -> LLMResponse:
    """Two tool steps, then the answer; the input names how the run's third call ends.

    ``stuck-model*``: the third call never answers; ``fail*``: it raises a non-retryable provider error.
    """
    key = _user(request)
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < 2:
        return priced(calls=(ToolCall(f"c{done}", "step", {"key": key, "n": done}),))
    if key.startswith("stuck-model"):
        await anyio.sleep(FOREVER)
    if key.startswith("fail"):
        raise ProviderError("the vendor refused this one", provider="openai", kind=ErrorKind.request, retryable=False)
    return priced(f"done {key}")


@tool
async def step(key: str, n: int) -> str:
    """One step of the job.  ``stuck-tool*`` waits for ever in its second step (after two model calls);
    ``raise*`` ends its second step with an error, which ``on_tool_status`` routes to ``"raise"``."""
    if n == 1 and key.startswith("stuck-tool"):
        await anyio.sleep(FOREVER)
    if n == 1 and key.startswith("raise"):
        raise ValueError("this step went wrong")
    return f"step {n} of {key}"


def agent(**kwargs: Any) -> Agent[Any]:
    return Agent(ScriptedProvider(model, name="openai", model="gpt-4o"), tools=[step], **kwargs)


def two_calls(result: RunResult[Any], steps: int = 2) -> None:
    """``result`` holds what two priced model calls spent, and nothing estimated (``steps``: its failed one too)."""
    assert result.steps == steps
    assert result.usage == USAGE + USAGE
    assert result.cost is not None and result.cost.total == pytest.approx(2 * STEP) and result.cost.estimated == 0


async def cancelled_batch(
    inputs: list[str], budget: CostBudget, *, using: Agent[Any] | None = None, **kwargs: Any
) -> list[RunResult[Any]]:
    """``agent().run_many(inputs)`` (or ``using``'s) under ``budget``, cancelled at 5 s (every run not stuck has
    finished): its slots."""
    found: list[list[RunResult[Any]] | None] = []
    async with Runtime() as rt:
        with anyio.move_on_after(5) as scope, budget:
            try:
                await (using or agent()).run_many(inputs, runtime=rt, **kwargs)
            except anyio.get_cancelled_exc_class() as exc:
                found.append(results_of(exc))
                raise
        assert scope.cancelled_caught
        await rt.wait_idle()
    (results,) = found
    assert results is not None and len(results) == len(inputs)
    return results


async def test_a_run_cancelled_in_a_tool_keeps_the_cost_of_its_two_calls() -> None:
    budget = CostBudget()
    inputs = ["a", "stuck-tool 1", "b", "stuck-tool 2"]
    results = await cancelled_batch(inputs, budget)
    for item, result in zip(inputs, results, strict=True):
        assert result.messages[0].content == item
        if item.startswith("stuck"):
            assert result.cancelled and not result.ok and result.error is None
            assert result.messages == (Message.user(item),)  # nothing of the cancelled turn is kept
            two_calls(result)
        else:
            assert result.ok and result.cost is not None and result.cost.total == pytest.approx(3 * STEP)
    total = total_cost(results)
    assert total is not None and total.total == pytest.approx(budget.spent) == pytest.approx(10 * STEP)


async def test_a_run_cancelled_in_its_third_call_keeps_its_two_calls_and_the_cut_short_one() -> None:
    # The third call was sent when the cancellation came: the vendor bills its prompt, which the run charges at
    # its estimate (docs/costs.md, "Calls cut short") — to the budget, and to the slot.
    budget = CostBudget()
    inputs = ["a", "stuck-model 1", "stuck-model 2"]
    results = await cancelled_batch(inputs, budget)
    for result in results[1:]:
        assert result.cancelled and result.steps == 3 and result.usage == USAGE + USAGE  # the third was made
        assert result.cost is not None and result.cost.estimated > 0
        assert result.cost.total == pytest.approx(2 * STEP + result.cost.estimated)
    total = total_cost(results)
    assert total is not None and total.total == pytest.approx(budget.spent)
    assert total.estimated == pytest.approx(budget.estimated) and budget.estimated > 0


async def test_slots_a_cancelled_batch_never_started_cost_nothing_and_leave_the_total_known() -> None:
    budget = CostBudget()
    inputs = ["a", "stuck-tool", "b", "c"]
    results = await cancelled_batch(inputs, budget, concurrency=2)
    # "a" finished, then "b" ran beside the stuck one; "c" started too ("b" took no virtual time)
    started = [r for r in results if r.run_id is not None]
    never = [r for r in results if r.run_id is None]
    assert all(r.cost == Cost() and r.usage == Usage() and r.cancelled for r in never)
    assert started
    total = total_cost(results)
    assert total is not None and total.total == pytest.approx(budget.spent)


async def test_with_concurrency_one_the_slots_behind_the_stuck_run_are_cancelled_at_no_cost() -> None:
    budget = CostBudget()
    inputs = ["a", "stuck-tool", "b", "c"]
    results = await cancelled_batch(inputs, budget, concurrency=1)
    assert [r.cancelled for r in results] == [False, True, True, True]
    two_calls(results[1])
    assert results[2].cost == results[3].cost == Cost()
    total = total_cost(results)
    assert total is not None and total.total == pytest.approx(budget.spent) == pytest.approx(5 * STEP)


async def test_a_failed_third_call_keeps_the_cost_of_the_two_before() -> None:
    # The provider stack gave up at the third step: the run returns its failed result, with its two calls' cost.
    budget = CostBudget()
    inputs = ["a", "fail 1", "b"]
    async with Runtime() as rt:
        with budget:
            results = await agent().run_many(inputs, runtime=rt)
    failed = results[1]
    assert isinstance(failed.error, ProviderError) and failed.generation_failed
    two_calls(failed, steps=3)  # its failed call is a step, and cost nothing
    total = total_cost(results)
    assert total is not None and total.total == pytest.approx(budget.spent) == pytest.approx(8 * STEP)


async def test_a_run_that_raises_keeps_the_cost_of_its_calls_in_its_failed_slot() -> None:
    # A tool status routed to "raise": the run raises ToolStatusError after two model calls, which its slot holds
    # as a failed result — with those calls' usage and cost, as a delegated run's failure hands them to its parent.
    budget = CostBudget()
    inputs = ["a", "raise 1", "b"]
    progress: list[tuple[int, int, int]] = []
    async with Runtime() as rt:
        with budget:
            results = await agent(on_tool_status={ToolStatus.error: "raise"}).run_many(
                inputs, runtime=rt, progress=lambda *a: progress.append(a)
            )
    failed = results[1]
    assert isinstance(failed.error, ToolStatusError) and not failed.ok and not failed.cancelled
    assert failed.messages == (Message.user("raise 1"),)
    assert failed.run_id is not None and failed.tool_calls and failed.tool_calls[0].name == "step"
    two_calls(failed)
    assert progress[-1] == (3, 1, 3)
    total = total_cost(results)
    assert total is not None and total.total == pytest.approx(budget.spent) == pytest.approx(8 * STEP)


async def test_as_completed_yields_a_run_that_raised_with_what_it_spent() -> None:
    inputs = ["a", "raise 1"]
    async with Runtime() as rt:
        stream = agent(on_tool_status={ToolStatus.error: "raise"}).as_completed(inputs, runtime=rt)
        async with stream:
            results = {r.messages[0].content: r async for r in stream}
    assert isinstance(results["raise 1"].error, ToolStatusError)
    two_calls(results["raise 1"])


async def test_a_typed_batchs_unfinished_slots_have_no_output_and_keep_their_cost() -> None:
    typed = Agent(ScriptedProvider(model, name="openai", model="gpt-4o"), tools=[step], output_type=int)
    (result,) = await cancelled_batch(["stuck-tool"], CostBudget(), using=typed)
    assert result.cancelled and result.output is None
    two_calls(result)


async def test_run_batch_driven_directly_keeps_its_unknown_costs_unknown() -> None:
    # A run the batch knows nothing of (a plain coroutine) that raised: what it spent is not known, so its cost is
    # None, as before; a slot never started spent nothing.
    from agentactors.agent.batch import run_batch

    async def run(messages: tuple[Message, ...]) -> RunResult[Any]:
        await anyio.sleep(float(messages[0].content))
        raise ValueError("no")

    results = await run_batch(["1", "1"], lambda item: (Message.user(item),), run, concurrency=1)
    assert [r.cost for r in results] == [None, None]
    cut: list[RunResult[Any]] | None = None
    with anyio.move_on_after(1.5):
        try:
            await run_batch(["1", "1", "1"], lambda item: (Message.user(item),), run, concurrency=1)
        except anyio.get_cancelled_exc_class() as exc:
            cut = results_of(exc)
            raise
    assert cut is not None
    assert [r.cost for r in cut] == [None, None, Cost()]


class Steps:
    """A toolset serving ``step``; with ``hang``, its listing never ends (a run that never gets its state)."""

    name = "steps"

    def __init__(self, hang: bool = False) -> None:
        self.hang = hang
        self.tools = (step,)

    async def list_tools(self, host: Any) -> Any:
        if self.hang:
            await anyio.sleep(FOREVER)
        return self.tools


@pytest.mark.parametrize("hang", [False, True])
async def test_an_agent_with_toolsets_has_its_cancelled_slots_costed_too(hang: bool) -> None:
    # Its run has its state only once its toolsets are listed: cancelled before, it spent nothing.
    budget = CostBudget()
    listed = Agent(ScriptedProvider(model, name="openai", model="gpt-4o"), toolsets=[Steps(hang)])
    results = await cancelled_batch(["stuck-tool"], budget, using=listed)
    (result,) = results
    assert result.cancelled
    if hang:
        assert result.cost == Cost() and budget.spent == 0
    else:
        two_calls(result)
    total = total_cost(results)
    assert total is not None and total.total == pytest.approx(budget.spent)
