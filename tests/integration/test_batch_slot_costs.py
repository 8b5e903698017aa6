"""run_many over a BatchProvider, cancelled: each slot carries what its run was billed at the batch price.

The calls of a run cancelled with its batch went through the vendor's batch API, which billed them (at about half
the price); its slot says so, and ``total_cost`` of the slots is what the ``CostBudget`` around the batch counted —
a call whose vendor batch was submitted when the cancellation came included, at its estimate (docs/costs.md, "A
batch's cost").  Real clocks against the FakeVendor (a real server): short windows and poll intervals, conditions
waited for with generous bounds.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import Agent, BatchProvider, CostBudget, OpenAIProvider, Runtime
from agentactors.agent.batch import results_of
from agentactors.loop.result import RunResult
from agentactors.pricing import Price, price_for, set_price, total_cost
from agentactors.testing import FakeReply, FakeToolCall, FakeVendor
from agentactors.tools import tool
from tests.support.prices import gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = pytest.mark.anyio

KEY = "sk-fake-batch-key-0123456789"
RUNS = 3
IN, OUT = 1_000, 100


@pytest.mark.parametrize("where", ["tool", "batch"])
async def test_a_cancelled_run_many_over_a_batch_provider_costs_what_the_budget_counted(
    where: str, anyio_backend: Any
) -> None:
    # Every run makes two batched calls (each a tool call), then waits: in its tool ("tool"), or in a third
    # batched call whose vendor batch was submitted and never ends ("batch").
    set_price("openai", "gpt-4o-mini", Price(1.0, 4.0))
    half = price_for("openai", "gpt-4o-mini", batch=True)
    assert half is not None
    call = (IN * half.input + OUT * half.output) / 1e6
    async with FakeVendor(expected_api_key=KEY) as fv:
        gate = anyio.Event()

        @tool
        async def wait(n: int) -> str:
            """Wait for the job."""
            if n == 1:
                if where == "tool":
                    gate.set()
                    await anyio.sleep(3600)
                fv.batches.plan(polls=1_000_000)  # the third call's batch stays in progress
            return f"waited {n}"

        for n in (0, 1):
            for _ in range(RUNS):
                fv.script(FakeReply(tool_calls=[FakeToolCall("wait", {"n": n})], input_tokens=IN, output_tokens=OUT))
        provider = BatchProvider(
            OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url=fv.openai_base_url),
            window=0.2, max_requests=RUNS, poll_every=0.02,
        )
        agent = Agent(provider, tools=[wait])
        budget = CostBudget()
        found: list[list[RunResult[Any]] | None] = []
        async with Runtime() as rt:
            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:

                    async def batch(scope: anyio.CancelScope) -> None:
                        with scope, budget:
                            try:
                                await agent.run_many([f"job {i}" for i in range(RUNS)], runtime=rt)
                            except anyio.get_cancelled_exc_class() as exc:
                                found.append(results_of(exc))
                                raise

                    scope = anyio.CancelScope()
                    tg.start_soon(batch, scope)
                    if where == "tool":
                        await gate.wait()
                        await anyio.sleep(0.2)  # every run in its tool
                    else:
                        # The third batch submitted and polled: every run's third call is in it, and billed.
                        while fv.batches.count < 3 or fv.batches.submissions[2].polls < 1:  # noqa: ASYNC110 - the server's counts
                            await anyio.sleep(0.02)
                    scope.cancel()
        assert fv.batches.count == (2 if where == "tool" else 3)
    (results,) = found
    assert results is not None and len(results) == RUNS
    for result in results:
        assert result.cancelled and result.usage.input_tokens == 2 * IN and result.usage.output_tokens == 2 * OUT
        assert result.cost is not None
        if where == "tool":
            assert result.cost.total == pytest.approx(2 * call) and result.cost.estimated == 0
        else:  # the third call was billed by the vendor: charged at its estimate, at the batch price
            assert result.cost.total == pytest.approx(2 * call + result.cost.estimated) and result.cost.estimated > 0
    total = total_cost(results)
    assert total is not None and total.total == pytest.approx(budget.spent) and budget.spent > 0
    assert total.estimated == pytest.approx(budget.estimated)
