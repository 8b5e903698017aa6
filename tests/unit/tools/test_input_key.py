"""``ToolContext.input_key``: the caller's stable name for a run's input, the same on every attempt.

``run_id`` is new for every run; ``input_key`` (``agent.run(..., input_key=...)``) stays the same when
the same input runs again (a Ray worker died and the driver re-sent it), so a tool with side effects
can deduplicate on it.
"""

from __future__ import annotations

import pytest

from agentactors import Agent, Runtime, ScriptedProvider, ToolCall, ToolContext, tool

pytestmark = pytest.mark.anyio


def _agent(seen: list[tuple[str | None, str | None]], policy_seen: list[str | None] | None = None) -> Agent:
    @tool
    async def charge(amount: int, ctx: ToolContext) -> str:
        """Charge the card."""
        seen.append((ctx.input_key, ctx.run_id))
        return "charged"

    def policy(call: ToolCall, ctx: ToolContext) -> None:
        if policy_seen is not None:
            policy_seen.append(ctx.input_key)

    script = ScriptedProvider(
        lambda request: "done" if request.messages[-1].role == "tool" else [ToolCall("c1", "charge", {"amount": 5})]
    )
    return Agent(script, tools=[charge], tool_policy=policy)


async def test_the_key_reaches_the_tool_and_the_policy_and_survives_a_second_attempt() -> None:
    seen: list[tuple[str | None, str | None]] = []
    policy_seen: list[str | None] = []
    agent = _agent(seen, policy_seen)
    async with Runtime():
        first = await agent.run("pay", input_key="job7:3")
        second = await agent.run("pay", input_key="job7:3")
    assert first.content == second.content == "done"
    assert [key for key, _ in seen] == ["job7:3", "job7:3"]
    assert seen[0][1] != seen[1][1]  # two runs, two run ids, one input key
    assert policy_seen == ["job7:3", "job7:3"]


async def test_without_a_key_it_is_none() -> None:
    seen: list[tuple[str | None, str | None]] = []
    await _agent(seen).run("pay")
    assert seen[0][0] is None


async def test_a_stream_carries_the_key_too() -> None:
    seen: list[tuple[str | None, str | None]] = []
    agent = _agent(seen)
    async with agent.stream("pay", input_key="k-1") as run:
        async for _ in run:
            pass
    assert run.result.content == "done"
    assert seen[0][0] == "k-1"


def test_the_context_shows_the_key_in_its_repr_but_never_deps() -> None:
    ctx = ToolContext(call_id="c1", tool_name="t", deps={"secret": "x"}, input_key="j:1")
    assert "input_key='j:1'" in repr(ctx)
    assert "secret" not in repr(ctx)


async def test_a_delegated_run_carries_its_parents_key() -> None:
    """``as_tool``: the child's tools see the parent's key, so docs/ray.md's dedupe pattern tells inputs apart."""
    seen: list[tuple[str | None, str | None]] = []
    charged: set[str] = set()

    @tool
    async def charge(customer: str, amount: int, ctx: ToolContext) -> str:
        """Charge a customer once per input."""
        seen.append((ctx.input_key, ctx.run_id))
        key = f"{ctx.input_key}:charge:{customer}:{amount}"
        if key in charged:
            return "already charged"
        charged.add(key)
        return "charged"

    child = Agent(
        ScriptedProvider(
            lambda request: request.messages[-1].content
            if request.messages[-1].role == "tool"
            else [ToolCall("k1", "charge", {"customer": "alice", "amount": 10})]
        ),
        tools=[charge],
        name="billing",
    )
    parent = Agent(
        ScriptedProvider(
            lambda request: "parent saw: " + request.messages[-1].content
            if request.messages[-1].role == "tool"
            else [ToolCall("p1", "billing", {"input": "charge alice 10"})]
        ),
        tools=[child.as_tool()],
        name="front",
    )
    async with Runtime():
        first = await parent.run("go", input_key="job:1")
        second = await parent.run("go", input_key="job:2")
        again = await parent.run("go", input_key="job:1")  # the same input run again: the effect is not repeated
        unkeyed = await parent.run("go")
    assert [key for key, _ in seen] == ["job:1", "job:2", "job:1", None]
    assert (first.content, second.content, again.content) == (
        "parent saw: charged",
        "parent saw: charged",
        "parent saw: already charged",
    )
    assert unkeyed.content == "parent saw: charged"
