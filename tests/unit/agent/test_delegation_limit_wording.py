"""The refusal the calling model reads when a delegation tree is at its ``max_runs`` counts its runs in good
English: "has started 1 run; the limit is 1 run", not "1 runs" (the model reads it, and so does whoever debugs)."""

from __future__ import annotations

import pytest

from agentactors import Agent, Runtime, ScriptedProvider, ToolCall, ToolContext, ToolDenied, tool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@pytest.mark.parametrize(("max_runs", "counted"), [(1, "1 run"), (2, "2 runs")])
async def test_the_max_runs_refusal_counts_its_runs_in_the_singular_and_the_plural(max_runs: int, counted: str) -> None:
    child = Agent(ScriptedProvider(lambda r: "x", record=False), name="helper")
    t = child.as_tool(max_runs=max_runs)
    seen: list[ToolDenied] = []

    @tool(name="many")
    async def many(ctx: ToolContext) -> str:
        """Delegate one more time than allowed."""
        for i in range(max_runs + 1):
            try:
                await t.fn(f"call {i}", ctx)
            except ToolDenied as exc:
                seen.append(exc)
        return "done"

    parent = Agent(ScriptedProvider([[ToolCall("c", "many", {})], "done"]), name="boss", tools=[many])
    async with Runtime():
        await parent.run("go")
    (exc,) = seen
    assert f"a delegation tree that has started {counted}; the limit is {counted}:" in exc.reason
