"""Past one machine: one agent over many inputs on a local Ray cluster, with one budget for all workers.

Each Ray worker hosts one agentactors Runtime (a Ray actor is a whole process: never one per agent);
the factory builds the agent once per worker, inside that runtime.  The shared budget bounds the
requests in flight across every worker; the cluster delivers every result once, in input order.

    pip install 'agentactors[ray]'
    python examples/ray_cluster.py          # starts a local Ray instance (2 CPUs, no dashboard)
"""

from __future__ import annotations

import anyio

from agentactors import Agent, LLMRequest, RunResult, ScriptedProvider, ToolCall, ToolContext, tool
from agentactors.ray import RayCluster, SharedBudget, with_shared_budget


@tool
async def lookup(city: str, ctx: ToolContext) -> dict[str, object]:
    """Current weather for a city."""
    # ctx.input_key ("{job}:{index}") is the same on every attempt of one input: a tool with side
    # effects would deduplicate on it (a worker that dies has its inputs run again elsewhere).
    return {"city": city, "celsius": len(city) + 10, "key": ctx.input_key}


def answer(request: LLMRequest) -> str | ToolCall:
    """The stand-in model: look the city up, then answer from the tool's result."""
    last = request.messages[-1]
    if last.role == "tool":
        return f"It is sunny: {last.content}"
    return ToolCall("c1", "lookup", {"city": last.content.removeprefix("Weather in ").rstrip("?")})


def make_agent() -> Agent:
    """Runs once per worker, inside its Runtime: every run of that worker shares this provider."""
    model = ScriptedProvider(answer, record=False)  # record=False: a long-lived worker keeps no request
    return Agent(with_shared_budget(model, "model"), tools=[lookup], system="Be brief.")


async def main(count: int = 200, workers: int = 2) -> list[RunResult]:
    budgets = {"model": SharedBudget(max_concurrency=16, requests_per_minute=60_000)}
    async with RayCluster(
        make_agent,
        workers=workers,
        budgets=budgets,
        worker_options={"num_cpus": 0},
        init={"num_cpus": 2, "include_dashboard": False},  # used only when Ray is not running yet
    ) as cluster:
        results = await cluster.run_many([f"Weather in City{i}?" for i in range(count)])
    ok = sum(r.ok for r in results)
    print(f"{ok}/{len(results)} runs ok; the first: {results[0].content}")
    return results


if __name__ == "__main__":
    anyio.run(main)  # the cluster started Ray (init=...), so it shuts Ray down at its exit
