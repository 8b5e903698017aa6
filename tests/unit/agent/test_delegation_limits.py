"""How many runs one delegation tree may start: ``as_tool(max_runs=)``, shared by the whole tree.

What a user relies on: a model that fans out (many calls per step, at every level) cannot start more than
``max_runs`` delegated runs under one root run — by default :data:`~agentactors.agent.delegation.MAX_RUNS` —,
counted across the root's steps, its children and grandchildren, parallel calls and handoffs; the call past it
is refused before its child starts (status ``denied``, a :class:`DelegationLimitError` the calling model reads,
a ``delegation.refused`` event), and the run goes on; a run that never delegates is not touched; another root
run has its own count.  Virtual time on both backends (scripted models, no thread, no socket).
"""

from __future__ import annotations

import pickle
from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    LLMRequest,
    Runtime,
    ScriptedProvider,
    ToolCall,
    ToolContext,
    ToolDenied,
    ToolStatus,
    handoff,
    tool,
)
from agentactors.agent import AgentTool
from agentactors.agent.delegation import MAX_RUNS, MAX_RUNS_LIMIT
from agentactors.errors import DelegationLimitError

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def _fan_out(width: int, *, tool_name: str = "fan") -> Any:
    """A model that, asked anything, calls ``tool_name`` ``width`` times in one step, then answers."""

    def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return "done"
        return [ToolCall(f"c{i}", tool_name, {"input": f"part {i}"}) for i in range(width)]

    return model


def _self_calling(width: int, **as_tool: Any) -> tuple[Agent[Any], AgentTool]:
    """An agent whose tool delegates to the agent itself: every run fans out ``width`` calls, at every level."""
    holder: dict[str, AgentTool] = {}

    @tool(name="fan")
    async def fan(input: str, ctx: ToolContext) -> Any:
        """Ask the agent itself."""
        await anyio.sleep(0.01)  # the parallel calls interleave
        return await holder["tool"].fn(input, ctx)

    agent = Agent(ScriptedProvider(_fan_out(width), record=False), name="fan", tools=[fan])
    holder["tool"] = agent.as_tool(name="fan", **as_tool)
    return agent, holder["tool"]


def _started_children(rec: InMemoryRecorder) -> list[Any]:
    return [e for e in rec.events if e.type == "run.started" and e.parent_run_id is not None]


def _all_children(result: Any) -> int:
    return sum(1 + _all_children(kid) for kid in result.children)


async def test_a_tree_that_fans_out_at_every_level_starts_at_most_max_runs() -> None:
    # 4 calls a step at each of 5 levels would be 4 + 16 + 64 + 256 + 1024 runs.
    agent, _ = _self_calling(4, max_depth=5, max_runs=30)
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await agent.run("start")
    assert result.ok and result.content == "done"  # the root goes on: a refusal is a tool result
    assert len(_started_children(rec)) == 30 == _all_children(result)
    refused = [e for e in rec.events if e.type == "delegation.refused"]
    assert refused and all(e.limit == "runs" and e.max_runs == 30 and e.started == 30 for e in refused)
    assert all(e.agent == "fan" and e.tool == "fan" and e.call_id for e in refused)
    denied = [e for e in rec.events if e.type == "tools.finished" and e.status is ToolStatus.denied]
    assert len(denied) == len(refused)  # every refused call is a denied result, and nothing else was
    # What the refused call's model read: the limit and what to do instead.
    texts = [m.content for r in _walk(result) for m in r.messages if m.role == "tool" and "refused this" in m.content]
    assert texts and all("30 runs" in t and "answer from what you have" in t for t in texts)


def _walk(result: Any) -> list[Any]:
    return [result, *(r for kid in result.children for r in _walk(kid))]


async def test_by_default_a_runaway_tree_stops_at_max_runs() -> None:
    # 10 calls a step at 8 levels could start 10**8 runs: the default stops it.
    agent, t = _self_calling(10, max_depth=8)
    assert t.max_runs == MAX_RUNS == 256
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await agent.run("start")
    assert result.ok
    assert len(_started_children(rec)) == MAX_RUNS


async def test_the_count_is_the_root_runs_across_its_steps() -> None:
    """Two steps of the root, three calls each, a limit of four: the second step starts one."""
    child = Agent(ScriptedProvider(lambda r: "answer", record=False), name="helper")
    steps = iter(
        [
            [ToolCall(f"a{i}", "helper", {"input": "x"}) for i in range(3)],
            [ToolCall(f"b{i}", "helper", {"input": "y"}) for i in range(3)],
            "done",
        ]
    )
    parent = Agent(ScriptedProvider(lambda r: next(steps)), name="boss", tools=[child.as_tool(max_runs=4)])
    async with Runtime():
        result = await parent.run("go")
    assert result.ok and len(result.children) == 4
    statuses = {m.tool_call_id: "refused this call" in m.content for m in result.messages if m.role == "tool"}
    assert sum(statuses.values()) == 2 and not any(statuses[f"a{i}"] for i in range(3))


async def test_separate_root_runs_each_have_their_own_count_even_at_once() -> None:
    agent, _ = _self_calling(3, max_depth=3, max_runs=5)
    rec = InMemoryRecorder()
    results: list[Any] = []
    async with Runtime(recorders=[rec]):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(lambda: _append(results, agent.run("start")))
        results.append(await agent.run("again"))
    assert [_all_children(r) for r in results] == [5, 5, 5, 5]


async def _append(results: list[Any], run: Any) -> None:
    results.append(await run)


async def test_a_tool_tighter_than_the_tree_refuses_once_the_tree_reached_its_own_limit() -> None:
    """Each tool checks the tree's count against its own max_runs (as max_depth is checked against the depth)."""
    leaf = Agent(ScriptedProvider(lambda r: "leaf", record=False), name="leaf")
    mid = Agent(
        ScriptedProvider(_fan_out(3, tool_name="leaf"), record=False), name="mid", tools=[leaf.as_tool(max_runs=3)]
    )
    root = Agent(ScriptedProvider(_fan_out(2, tool_name="mid"), record=False), name="root", tools=[mid.as_tool()])
    async with Runtime():
        result = await root.run("go")
    # 2 mids started (the tree at 2), then the 3-limit leaf tool lets the tree reach 3: one leaf in all.
    assert len(result.children) == 2 and sum(len(m.children) for m in result.children) == 1


async def test_runs_after_a_handoff_count_in_the_same_tree() -> None:
    helper = Agent(ScriptedProvider(lambda r: "helped", record=False), name="helper")
    delegating = helper.as_tool(max_runs=3)
    second_steps = iter([[ToolCall(f"b{i}", "helper", {"input": "y"}) for i in range(3)], "done"])
    second = Agent(ScriptedProvider(lambda r: next(second_steps), record=False), name="second", tools=[delegating])
    first_steps = iter(
        [
            [ToolCall("a0", "helper", {"input": "x"}), ToolCall("a1", "helper", {"input": "x"})],
            [ToolCall("h", "transfer_to_second", {})],
        ]
    )
    first = Agent(
        ScriptedProvider(lambda r: next(first_steps), record=False),
        name="first",
        tools=[delegating],
        handoffs=[handoff(second)],
    )
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await first.run("go")
    assert result.ok and result.agent == "second" and result.handoffs == ("second",)
    assert len(result.children) == 3  # two before the handoff, one after it: the tree's limit
    assert len([e for e in rec.events if e.type == "delegation.refused"]) == 2


async def test_a_child_that_hands_off_and_delegates_counts_in_its_parents_tree() -> None:
    leaf = Agent(ScriptedProvider(lambda r: "leaf", record=False), name="leaf")
    worker_steps = iter([[ToolCall(f"l{i}", "leaf", {"input": "y"}) for i in range(5)], "done"])
    worker = Agent(
        ScriptedProvider(lambda r: next(worker_steps), record=False), name="worker", tools=[leaf.as_tool(max_runs=4)]
    )
    steps = iter([[ToolCall("h", "transfer_to_worker", {})]])
    router = Agent(ScriptedProvider(lambda r: next(steps), record=False), name="router", handoffs=[worker])
    root = Agent(
        ScriptedProvider(_fan_out(1, tool_name="router"), record=False), name="root", tools=[router.as_tool(max_runs=4)]
    )
    async with Runtime():
        result = await root.run("go")
    (kid,) = result.children
    assert kid.agent == "worker" and len(kid.children) == 3  # the router's own run, then three leaves: four


async def test_a_tree_cancelled_mid_fan_out_leaves_the_next_root_its_whole_count() -> None:
    agent, _ = _self_calling(3, max_depth=4, max_runs=10)
    async with Runtime():
        with anyio.move_on_after(0.015):  # inside the first fan-out
            await agent.run("start")
        result = await agent.run("again")  # a new root: its own full count
    assert _all_children(result) == 10


async def test_the_depth_refusal_is_a_delegation_limit_error_too() -> None:
    agent, _ = _self_calling(1, max_depth=2)
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await agent.run("start")
    assert result.ok and _all_children(result) == 2
    (refused,) = [e for e in rec.events if e.type == "delegation.refused"]
    assert refused.limit == "depth" and refused.max_depth == 2 and refused.depth == 3


async def test_the_refusal_is_a_typed_tool_denied_raised_inside_the_tool() -> None:
    child = Agent(ScriptedProvider(lambda r: "x", record=False), name="helper")
    t = child.as_tool(max_runs=1)
    seen: list[BaseException] = []

    @tool(name="twice")
    async def twice(ctx: ToolContext) -> str:
        """Delegate twice."""
        await t.fn("first", ctx)
        try:
            await t.fn("second", ctx)
        except ToolDenied as exc:
            seen.append(exc)
            raise
        return "both"

    parent = Agent(ScriptedProvider([[ToolCall("c", "twice", {})], "done"]), name="boss", tools=[twice])
    async with Runtime():
        result = await parent.run("go")
    (exc,) = seen
    assert isinstance(exc, DelegationLimitError)
    assert (exc.agent, exc.limit, exc.max_runs, exc.started) == ("helper", "runs", 1, 1)
    assert len(result.children) == 1
    back = pickle.loads(pickle.dumps(exc))
    assert isinstance(back, DelegationLimitError) and str(back) == str(exc) and back.reason == exc.reason
    assert (back.agent, back.limit, back.max_runs, back.started) == ("helper", "runs", 1, 1)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (0, ValueError),
        (-1, ValueError),
        (MAX_RUNS_LIMIT + 1, ValueError),
        (10**30, ValueError),
        (True, TypeError),
        (False, TypeError),
        (2.0, TypeError),
        ("10", TypeError),
        (None, TypeError),
    ],
)
def test_max_runs_must_be_a_positive_int_within_the_cap(value: Any, error: type[Exception]) -> None:
    agent = Agent(ScriptedProvider([]), name="helper")
    with pytest.raises(error, match="max_runs"):
        agent.as_tool(max_runs=value)
    with pytest.raises(error, match="max_runs"):
        AgentTool(agent, max_runs=value)
    assert agent.as_tool(max_runs=MAX_RUNS_LIMIT).max_runs == MAX_RUNS_LIMIT
    assert agent.as_tool(max_runs=1).max_runs == 1
