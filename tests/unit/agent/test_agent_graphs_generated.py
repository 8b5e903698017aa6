"""Generated agent graphs (hypothesis): 2-5 agents handing runs to each other and delegating to each other.

A graph is drawn whole: each agent's output type (text, or one of two classes), its tools (a quick one, a slow
one that notes whether it was cancelled, and ``ask``, a plain tool that runs any agent of the graph by name), its
handoffs (to agents built before it, as objects, or to any agent, by name: the way back in a cycle), its
delegations (``as_tool`` of agents built before it, with a drawn ``max_depth`` and ``max_runs``), its
``max_steps`` and what its model does at each step of a run (answer; call a tool; hand off, maybe beside a
tool call; delegate, once or twice in parallel, with a child that answers, fails, takes long or follows its own
script; call ``ask``; fail with a provider error; take long).  Then a run is driven from one agent — ``agent.run``,
``agent.stream`` (maybe cancelled through its handle at some event), ``run_many`` of a few, or a cancel from
outside after some virtual delay — with or without a deadline, in a runtime of the caller's or a private one.

What is checked is what docs/agents.md and docs/costs.md promise: the run ends in a ``RunResult`` (or the
documented ``ValueError`` for a handoff that names an agent the run cannot reach), never a hang or another
exception; ``result.agent`` is the agent that answered, its output of that agent's type; every run's usage and
cost are its own calls' plus its children's, a failed or cancelled child's included, and the root's is every
call the graph's models answered; no run nests deeper than its limits, refusals say so; every child's events
name their parent and its ``run.started`` the depth; nothing is left running once the run is over.
Plain examples of what it found are at the end of the file.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentactors import Agent, InMemoryRecorder, LLMResponse, RunResult, Runtime, ScriptedProvider, ToolContext, tool
from agentactors.agent import handoff
from agentactors.errors import ProviderError, RunNotFoundError
from agentactors.events import Event
from agentactors.loop.lineage import MAX_DEPTH
from agentactors.loop.live import live_runs
from agentactors.messages import LLMRequest, Message, ToolCall, Usage
from agentactors.pricing import Price, clear_prices, response_cost, set_price
from agentactors.testing import virtual_backends

SETTINGS = settings(
    max_examples=int(os.environ.get("GENERATED_GRAPHS_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: How many runs in "script" mode (children that follow their own script, delegating again) one drive may start:
#: beyond, a child asked to follow its script answers at once, so a cycle of ``ask`` calls stays small.
SCRIPTED_CHILDREN = 10
SLOW_TOOL = 5.0  # virtual seconds the slow tool sleeps
SLOW_CHILD = 8.0  # virtual seconds a child in "slow" mode takes to answer


@dataclass
class Point:
    x: int
    y: int


@dataclass
class Tag:
    label: str


OUTPUT_TYPES: dict[str, Any] = {"text": str, "point": Point, "tag": Tag}


# -- the plan --------------------------------------------------------------------------------------------


@dataclass
class AgentSpec:
    kind: str  # "text" | "point" | "tag"
    handoffs: list[tuple[int, bool, bool]]  # (target, by name, with an input filter that keeps the user's messages)
    delegates: list[tuple[int, int, int]]  # (target, max_depth, max_runs)
    script: list[tuple[Any, ...]]
    max_steps: int


@dataclass
class Plan:
    agents: list[AgentSpec]
    start: int
    drive: tuple[Any, ...]
    deadline: float | None
    runtime: bool
    cost_limit: float | None = None


MODES = ["answer", "fail", "slow", "script"]
# What a model does at a step (a handoff or a delegation its agent cannot make is an ``ask`` of the same agent).
handing_off = st.tuples(st.just("handoff"), st.integers(0, 4), st.booleans())
delegating = st.tuples(st.just("delegate"), st.integers(0, 4), st.sampled_from(MODES), st.integers(1, 2))
actions = st.one_of(
    handing_off,
    delegating,
    st.tuples(st.just("ask"), st.integers(0, 4), st.sampled_from(MODES)),
    handing_off,
    delegating,
    st.tuples(st.just("tool"), st.sampled_from(["note", "sleepy", "pay"])),
    st.tuples(st.just("slow"), st.sampled_from([1.0, 6.0])),
    st.tuples(st.just("fail"), st.sampled_from(["transient", "request"])),
    st.tuples(st.just("answer")),
)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    n = draw(st.integers(2, 5))
    agents: list[AgentSpec] = []
    for i in range(n):
        later = list(range(i + 1, n))
        # An agent is made after the agents it holds (agents are immutable): agent i holds agents j > i, and
        # names the others — the way back in a cycle, valid in a run that reaches them (else a ValueError).
        targets = draw(st.lists(st.sampled_from(later), unique=True, max_size=2)) if later else []
        handoffs = [(j, False, draw(st.booleans())) for j in targets]
        if i and draw(st.integers(0, 2)) == 0:
            # (Mostly to the first agent, where most runs start: a run from anywhere else cannot reach it.)
            back = draw(st.sampled_from([0, 0, 0, 0, 0, draw(st.integers(0, i - 1))]))
            handoffs.append((back, True, draw(st.booleans())))
        delegates = []
        if later:
            for j in draw(st.lists(st.sampled_from(later), unique=True, max_size=2)):
                delegates.append((j, draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([1, 3, 256]))))
        agents.append(
            AgentSpec(
                kind=draw(st.sampled_from(["text", "text", "point", "tag"])),
                handoffs=handoffs,
                delegates=delegates,
                script=draw(st.lists(actions, min_size=1, max_size=5)),
                max_steps=draw(st.integers(2, 8)),
            )
        )
    drive = draw(
        st.one_of(
            st.just(("run",)),
            st.tuples(st.just("stream"), st.sampled_from([None, 3, 12, 30])),
            st.tuples(st.just("many"), st.integers(2, 3)),
            st.tuples(st.just("outside"), st.sampled_from([0.5, 4.0, 10.0, 30.0])),
            # A stream whose n-th child run is cancelled through its own handle (rt.run_ref(child).cancel()).
            st.tuples(st.just("cancel child"), st.integers(1, 3)),
        )
    )
    return Plan(
        agents=agents,
        start=draw(st.sampled_from([0, 0, 0, *range(n)])),
        drive=drive,
        deadline=draw(st.sampled_from([None, None, 3.0, 12.0])),
        runtime=draw(st.booleans()) or drive[0] == "cancel child",
        cost_limit=draw(st.sampled_from([None, None, None, 0.002, 0.01])),
    )


# -- the graph -------------------------------------------------------------------------------------------


def name_of(i: int) -> str:
    return f"a{i}"


@dataclass
class World:
    """One drive's graph and what happened in it (the tools' ``deps``: children get them too)."""

    plan: Plan
    agents: dict[str, Agent[Any]] = field(default_factory=dict)
    billed: list[Usage] = field(default_factory=list)  # every response a model gave
    running: int = 0  # slow tools running now
    scripted: int = 0  # children asked to follow their script
    ids: int = 0

    def call_id(self) -> str:
        self.ids += 1
        return f"c{self.ids}"

    def child_mode(self, mode: str) -> str:
        if mode == "script":
            if self.scripted >= SCRIPTED_CHILDREN:
                return "answer"
            self.scripted += 1
        return mode


#: The world of the drive under way (run_many passes no deps: its tools find it here).
CURRENT: list[World] = []


def world_of(ctx: ToolContext) -> World:
    """The drive's world: the ``deps`` every run of the tree was given (a child's tools get its parent's)."""
    world = CURRENT[0]
    if world.plan.drive[0] != "many":
        assert ctx.deps is world, f"a tool got deps {ctx.deps!r}"
    return world


@tool
async def note(text: str) -> str:
    """Notes something."""
    return f"noted {text}"


@tool
async def sleepy(ctx: ToolContext) -> str:
    """Takes a while (virtual time)."""
    world = world_of(ctx)
    world.running += 1
    try:
        await anyio.sleep(SLOW_TOOL)
    finally:
        world.running -= 1
    return "slept"


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pays, once a person approves (a run that calls it pauses; a delegated one cannot)."""
    return f"paid {amount}"


@tool
async def ask(agent: str, input: str, ctx: ToolContext) -> str:
    """Runs an agent of the graph (a plain tool awaiting agent.run: bounded by the nesting limit alone)."""
    world = world_of(ctx)
    result = await world.agents[agent].run(input, deps=world)
    return result.content or "(nothing)"


def keep_user_messages(messages: Any) -> list[Message]:
    return [m for m in messages if m.role == "user"]


def answer_of(i: int, spec: AgentSpec, k: int, usage: Usage, world: World) -> LLMResponse:
    if spec.kind == "text":
        return priced(f"answer from {name_of(i)}", (), usage)
    args: dict[str, Any] = {"x": i, "y": k} if spec.kind == "point" else {"label": name_of(i)}
    return priced("", (ToolCall(world.call_id(), "final_result", args),), usage)


def priced(text: str, calls: tuple[ToolCall, ...], usage: Usage) -> LLMResponse:
    return LLMResponse(text, tool_calls=calls, usage=usage, provider="openai", model="gpt-4o")


def model_of(i: int, world: World) -> Callable[[LLMRequest], Any]:
    spec = world.plan.agents[i]

    async def model(request: LLMRequest) -> LLMResponse:
        first = next((m.content for m in request.messages if m.role == "user"), "")
        mode = first.removeprefix("mode:") if first.startswith("mode:") else "script"
        k = sum(1 for m in request.messages if m.role == "assistant")
        usage = Usage(100 * (i + 1) + k, 10 + i)
        action: tuple[Any, ...] = ("answer",)
        if mode == "fail":
            action = ("fail", "request")
        elif mode == "slow":
            action = ("slow", SLOW_CHILD)
        elif mode == "script" and k < len(spec.script):
            action = spec.script[k]
        kind = action[0]
        if kind == "fail":
            raise ProviderError(f"{name_of(i)} failed", provider="openai", kind=action[1], retryable=False)
        if kind == "slow":
            await anyio.sleep(action[1])
            response = answer_of(i, spec, k, usage, world)
        elif kind == "tool":
            args = {"text": "x"} if action[1] == "note" else {"amount": 5} if action[1] == "pay" else {}
            response = priced("", (ToolCall(world.call_id(), action[1], args),), usage)
        elif kind == "handoff" and spec.handoffs:
            target = spec.handoffs[action[1] % len(spec.handoffs)][0]
            calls = [ToolCall(world.call_id(), f"transfer_to_{name_of(target)}", {})]
            if action[2]:
                calls.insert(0, ToolCall(world.call_id(), "note", {"text": "before the handoff"}))
            response = priced("", tuple(calls), usage)
        elif kind == "delegate" and spec.delegates:
            target = spec.delegates[action[1] % len(spec.delegates)][0]
            calls = [
                ToolCall(world.call_id(), name_of(target), {"input": f"mode:{world.child_mode(action[2])}"})
                for _ in range(action[3])
            ]
            response = priced("", tuple(calls), usage)
        elif kind in ("ask", "handoff", "delegate"):
            target = action[1] % len(world.plan.agents)
            mode = world.child_mode(action[2] if kind != "handoff" else "answer")
            args = {"agent": name_of(target), "input": f"mode:{mode}"}
            response = priced("", (ToolCall(world.call_id(), "ask", args),), usage)
        else:
            response = answer_of(i, spec, k, usage, world)
        world.billed.append(usage)
        return response

    return model


def build(world: World, rec: InMemoryRecorder | None) -> None:
    """The agents, the last first: each holds the agents built before it (higher indices) and names the rest."""
    plan = world.plan
    for i in reversed(range(len(plan.agents))):
        spec = plan.agents[i]
        handoffs: list[Any] = []
        for j, by_name, filtered in spec.handoffs:
            target: Any = name_of(j) if by_name else world.agents[name_of(j)]
            handoffs.append(handoff(target, input_filter=keep_user_messages) if filtered else target)
        tools: list[Any] = [note, sleepy, pay, ask]
        for j, max_depth, max_runs in spec.delegates:
            tools.append(world.agents[name_of(j)].as_tool(max_depth=max_depth, max_runs=max_runs))
        world.agents[name_of(i)] = Agent(
            ScriptedProvider(model_of(i, world), name="openai", model="gpt-4o"),
            name=name_of(i),
            tools=tools,
            handoffs=handoffs,
            output_type=OUTPUT_TYPES[spec.kind],
            max_steps=spec.max_steps,
            recorders=[rec] if rec is not None and i == plan.start else [],
        )


def unreachable(plan: Plan, start: int) -> set[str]:
    """The names a run from ``start`` cannot resolve (docs/agents.md: a ``ValueError`` at the first run)."""
    found: set[int] = set()
    todo = [start]
    while todo:
        i = todo.pop()
        if i in found:
            continue
        found.add(i)
        todo.extend(j for j, by_name, _ in plan.agents[i].handoffs if not by_name)
    named = {j for i in found for j, _, _ in plan.agents[i].handoffs}
    return {name_of(j) for j in named - found}


# -- the invariants --------------------------------------------------------------------------------------


def walk(result: RunResult[Any]) -> list[RunResult[Any]]:
    out = [result]
    for child in result.children:
        out.extend(walk(child))
    return out


def own_calls(events: list[Event], run_ids: set[str | None]) -> tuple[Usage, float]:
    """What the model calls of these runs (not their children's) returned, and what that cost."""
    usage = Usage()
    total = 0.0
    for e in events:
        if e.type == "llm.response" and e.run_id in run_ids:
            usage = usage + e.usage
            cost = response_cost(e.response)
            assert cost is not None, e
            total += cost.total
    return usage, total


def unanswered(result: RunResult[Any]) -> bool:
    """docs/agents.md "Failures": a child that is no answer for its caller's model."""
    if result.generation_failed or result.error is not None or result.cancelled or result.paused:
        return True
    return result.bounded and (result.output is None or (isinstance(result.output, str) and not result.output.strip()))


def check_tree(
    plan: Plan, root: RunResult[Any], events: list[Event], *, start: int, paused: tuple[str, ...] = ()
) -> None:
    """The promises a finished tree keeps.  ``paused``: the ids of the paused runs ``root`` was resumed from."""
    by_run: dict[str | None, list[Event]] = {}
    for e in events:
        by_run.setdefault(e.run_id, []).append(e)
    started = {e.run_id: e for e in events if e.type == "run.started"}
    depth_of: dict[str | None, int] = {root.run_id: 0}
    calls = {e.call_id: e for e in events if e.type == "tools.finished"}
    # Delegation trees (docs/agents.md "One count of runs"): the runs as_tool tools started under each run no
    # delegation started (the root, or a run a plain tool started), and the tightest limits they could meet.
    owner: dict[str | None, str | None] = {root.run_id: root.run_id}
    counted: dict[str | None, int] = {}
    limits = {  # per delegated agent: the largest max_depth and max_runs of any tool delegating to it
        name_of(j): (max(d for a in plan.agents for t, d, _ in a.delegates if t == j),
                     max(r for a in plan.agents for t, _, r in a.delegates if t == j))
        for j in {t for a in plan.agents for t, _, _ in a.delegates}
    }
    for run in walk(root):
        mine = by_run.get(run.run_id, [])
        assert mine, f"no event of run {run.run_id}"
        own_ids = {run.run_id, *paused} if run is root else {run.run_id}
        # Usage: the run's own calls and its children's (docs/agents.md "Results"; a failed or cancelled child
        # too; a resumed run's, the paused run's calls and children too: docs/agents.md "Approvals that pause").
        own, _ = own_calls(events, own_ids)
        total = own
        for child in run.children:
            total = total + child.usage
        assert run.usage == total, (run.run_id, run.usage, own, [c.usage for c in run.children])
        # Cost: every call is priced, so every run's cost is known, and is its own calls' plus its children's
        # (and, for a call a cancellation cut short, its estimate: docs/costs.md "Calls cut short").  A resumed
        # run's counts from the resume (docs/costs.md), its children before the pause left out.
        assert run.cost is not None, run
        assert all(c.cost is not None for c in run.children)
        _, own_cost = own_calls(events, {run.run_id})
        children_cost = sum(
            (c.cost.total for c in run.children if c.cost and started[c.run_id].parent_run_id == run.run_id),
            0.0,
        )
        assert run.cost.total >= own_cost + children_cost - 1e-9, (run.cost, own_cost, children_cost)
        if not any(r.cancelled or r.error is not None for r in walk(run)):
            assert math.isclose(run.cost.total, own_cost + children_cost, rel_tol=1e-9), (run.cost, own_cost)
        # The children named in the result are the runs whose events name this one as their parent.
        kids = {e.run_id for e in events if e.type == "run.started" and e.parent_run_id in own_ids}
        assert kids == {c.run_id for c in run.children}, (kids, [c.run_id for c in run.children])
        for child in run.children:
            depth_of[child.run_id] = depth_of[run.run_id] + 1
            head = started[child.run_id]
            assert head.data["depth"] == depth_of[child.run_id] <= MAX_DEPTH, head.data
            assert all(e.parent_run_id == head.parent_run_id for e in by_run[child.run_id])
            call = calls.get(head.data.get("parent_call_id"))
            delegated = call is not None and call.data.get("name") == head.data["agent"]
            owner[child.run_id] = owner[run.run_id] if delegated else child.run_id
            if delegated:
                max_depth = limits[head.data["agent"]][0]
                assert head.data["depth"] <= max_depth, (head.data, max_depth)
            if call is not None and delegated:
                # An as_tool call: the child's answer is its result; a child without one is an error result.
                if unanswered(child):
                    # (A child the parent's deadline or cancellation cut short: the call was cancelled with it.)
                    cut = call.status == "cancelled" and child.cancelled
                    assert call.status == "error" or cut, (call.data, child)
                    message = next(
                        (m for m in run.messages if m.role == "tool" and m.tool_call_id == call.call_id), None
                    )
                    if message is not None:
                        assert "DelegationError" in message.content, message
                        if child.handoffs and not child.paused:
                            assert f"(after a handoff to agent {child.agent!r})" in message.content, message
                elif call.status == "ok" and isinstance(child.output, str):
                    message = next(
                        (m for m in run.messages if m.role == "tool" and m.tool_call_id == call.call_id), None
                    )
                    # (A nudge may follow it: a repeated call is told so, docs/loop.md.)
                    assert message is None or message.content.startswith(child.output), (message, child.output)
        # The agent that answered: the last handoff's target (the run's first agent without one).
        hand = [e for e in mine if e.type == "agent.handoff"]
        handed = [e.to_agent for e in hand]
        first = name_of(start) if run is root else started[run.run_id].data["agent"]
        if run is not root or not paused:
            assert list(run.handoffs) == handed, (run.handoffs, handed)
            assert [e.from_agent for e in hand] == [first, *handed][: len(hand)], [e.data for e in hand]
            assert run.agent == (handed[-1] if handed else first), (run.agent, handed, first)
        if run.ok:
            kind = plan.agents[int(str(run.agent)[1:])].kind
            assert isinstance(run.output, OUTPUT_TYPES[kind]), (run.agent, kind, run.output)
            if kind == "text":
                assert run.output == f"answer from {run.agent}"
            elif kind == "tag":
                assert run.output == Tag(str(run.agent))
        # One max_steps for the whole run, handoffs included: the first agent's.
        assert run.steps <= plan.agents[int(first[1:])].max_steps, (run.steps, first)
    # A call refused for the tree's count was refused by a tree that had started that many runs: the runs as_tool
    # started under the same run no delegation started (a run a plain tool started counts for itself).
    # (Counted: every as_tool call not refused, a child that raised before it started included.)
    for e in events:
        if e.type == "tools.finished" and e.name in limits and e.status != "denied" and e.run_id in owner:
            counted[owner[e.run_id]] = counted.get(owner[e.run_id], 0) + 1
    if not paused:
        assert all(n <= max(r for _, r in limits.values()) for n in counted.values()), (counted, limits)
    for e in events:
        if e.type == "delegation.refused" and e.limit == "runs" and e.run_id in owner and not paused:
            assert counted.get(owner[e.run_id], 0) >= e.max_runs, (e.data, counted.get(owner[e.run_id], 0))


def check_events(events: list[Event]) -> None:
    """Every run that started finished once; every refusal is typed, past its tool's limit, and a ``denied``."""
    seen = [(e.run_id, e.seq) for e in events]
    assert len(set(seen)) == len(seen), "a recorder got an event twice"
    started = [e.run_id for e in events if e.type == "run.started"]
    finished = [e.run_id for e in events if e.type == "run.finished"]
    assert len(set(started)) == len(started) and sorted(map(str, started)) == sorted(map(str, finished)), (
        started,
        finished,
    )
    status = {e.call_id: e.status for e in events if e.type == "tools.finished"}
    for e in events:
        if e.type == "run.started" and e.parent_run_id is not None:
            assert 1 <= e.data["depth"] <= MAX_DEPTH, e.data
        if e.type == "delegation.refused":
            if e.limit == "depth":
                assert e.depth > e.max_depth, e.data
            else:
                assert e.limit == "runs" and e.started >= e.max_runs, e.data
            assert status.get(e.call_id, "denied") == "denied", (e.data, status.get(e.call_id))


# -- driving ---------------------------------------------------------------------------------------------


async def drive(plan: Plan, rt: Runtime | None, rec: InMemoryRecorder) -> None:
    world = World(plan)
    CURRENT[:] = [world]
    build(world, None if rt is not None else rec)
    agent = world.agents[name_of(plan.start)]
    missing = unreachable(plan, plan.start)
    kind = plan.drive[0]
    results: list[RunResult[Any]] = []
    streamed: list[Event] = []
    with anyio.fail_after(100_000):  # virtual: a hang fails here
        try:
            if kind == "run":
                results.append(
                    await agent.run("go", deps=world, deadline=plan.deadline, cost_limit=plan.cost_limit)
                )
            elif kind == "cancel child":
                assert rt is not None
                async with agent.stream("go", deps=world, deadline=plan.deadline) as run:
                    children = 0
                    async for e in run:
                        streamed.append(e)
                        if e.type == "run.started" and e.parent_run_id is not None:
                            children += 1
                            if children == plan.drive[1]:
                                with contextlib.suppress(RunNotFoundError):  # (it finished already)
                                    rt.run_ref(str(e.run_id)).cancel()
                    results.append(await run.wait())
            elif kind == "stream":
                async with agent.stream("go", deps=world, deadline=plan.deadline) as run:
                    async for e in run:
                        streamed.append(e)
                        if len(streamed) == plan.drive[1]:
                            run.cancel()
                    results.append(await run.wait())
            elif kind == "many":
                # (run_many takes no deps: the drive's tools find the world through CURRENT.)
                results.extend(await agent.run_many(["go"] * plan.drive[1]))
            else:
                with anyio.move_on_after(plan.drive[1]):
                    results.append(
                        await agent.run("go", deps=world, deadline=plan.deadline, cost_limit=plan.cost_limit)
                    )
        except ValueError as exc:
            raised: ValueError | None = exc
        else:
            raised = None
    if raised is not None:  # docs/agents.md: a handoff naming an agent nobody reaches is a ValueError at the first run
        assert missing, f"ValueError with every handoff reachable: {raised!r}"
        assert "cannot reach" in str(raised), raised
        event("outcome: ValueError")
        assert world.running == 0
        return
    if missing and kind != "outside":
        if kind == "many":
            assert all(isinstance(r.error, ValueError) for r in results), results
            event("outcome: ValueError in slots")
            return
        raise AssertionError(f"handoffs name unreachable agents {missing}, yet the run went on: {results}")
    # Nothing of the run is left running once it is over: no tool, no child run.
    assert world.running == 0, "a slow tool is still running after its run ended"
    if rt is not None:
        assert not live_runs(rt), live_runs(rt)
    events = list(rec.events)
    check_events(events)
    if streamed and plan.drive[1] is None:
        # A parent's stream carries its children's events too (docs/agents.md "Linked record").
        ran = {e.run_id for e in events if e.type == "run.started"}
        assert ran <= {e.run_id for e in streamed}, ("a run's events missing from its stream", ran, streamed)
    for result in results:
        event(f"outcome: {outcome_of(result)}")
        check_tree(plan, result, events, start=plan.start)
    if plan.cost_limit is not None and kind in ("run", "outside"):
        check_cost_limit(plan.cost_limit, events)
    uncut = plan.deadline is None and (kind in ("run", "many") or (kind == "stream" and plan.drive[1] is None))
    if uncut:
        # Every response a model gave is counted once, by the run that asked for it (a tree's root counts them all).
        # (A call a cancellation cut short is charged at its estimate, in cost alone: docs/costs.md.)
        check_billed(world, results)
    # A paused root goes on once approved (docs/agents.md "Approvals that pause"), a few times over.
    for i, result in enumerate(results):
        paused: tuple[str, ...] = ()
        rounds = 0
        while result.paused and rounds < 3 and kind != "many":
            rounds += 1
            assert result.run_id is not None
            paused = (*paused, result.run_id)
            rec.clear()
            with anyio.fail_after(100_000):
                result = await agent.resume(result, {c.id: True for c in result.pending_approvals}, deps=world)
            results[i] = result
            assert world.running == 0
            events = [*events, *rec.events]
            check_events(list(rec.events))
            event(f"outcome: resumed {outcome_of(result)}")
            check_tree(plan, result, events, start=plan.start, paused=paused)
    if uncut:
        check_billed(world, results)


def check_cost_limit(limit: float, events: list[Event]) -> None:
    """docs/costs.md "Limits": a tree stops no later than right after the call that passed its root's limit — its
    children too (they charge their parent's budget) — so once passed, at most the calls already on their way
    come back (one per run of the tree at most), and every run that ends on it says so."""
    spent = 0.0
    after = 0
    for e in events:
        if e.type == "llm.response":
            cost = response_cost(e.response)
            assert cost is not None
            if spent > limit:
                after += 1
            spent += cost.total
    runs = sum(e.type == "run.started" for e in events)
    assert after <= runs, (after, runs, spent, limit)
    for e in events:
        if e.type == "run.cost_limit_exceeded":
            assert e.scope in ("run", "parent run"), e.data
            assert (e.scope == "run") == (e.parent_run_id is None), e


def check_billed(world: World, results: list[RunResult[Any]]) -> None:
    billed = Usage()
    for usage in world.billed:
        billed = billed + usage
    counted = Usage()
    for result in results:
        counted = counted + result.usage
    assert counted == billed, (counted, billed)


def outcome_of(result: RunResult[Any]) -> str:
    flags = [f for f in ("paused", "cancelled", "bounded", "generation_failed", "ok") if getattr(result, f)]
    err = f" ({type(result.error).__name__})" if result.error is not None else ""
    tail = (" handed off" if result.handoffs else "") + (" delegated" if result.children else "")
    return "+".join(flags) + err + tail


async def main(plan: Plan) -> None:
    rec = InMemoryRecorder()
    if plan.runtime:
        async with Runtime(recorders=[rec]) as rt:
            await drive(plan, rt, rec)
    else:
        await drive(plan, None, rec)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@SETTINGS
@given(plan=plans())
def test_a_generated_agent_graph_keeps_the_documented_promises(backend: str, plan: Plan) -> None:
    clear_prices()
    set_price("openai", "gpt-4o", Price(2.5, 10.0))
    try:
        name, options = dict(enumerate(virtual_backends()))[0 if backend == "asyncio" else 1]
        anyio.run(main, plan, backend=name, backend_options=options)
    finally:
        clear_prices()


# -- what it found ---------------------------------------------------------------------------------------


def _calls_then(calls: list[ToolCall], answer: str) -> Callable[[LLMRequest], LLMResponse]:
    """A model that makes ``calls`` in its first step and then answers."""

    def model(request: LLMRequest) -> LLMResponse:
        if any(m.role == "tool" for m in request.messages):
            return LLMResponse(answer)
        return LLMResponse("", tool_calls=calls)

    return model


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_run_a_plain_tool_starts_under_a_delegated_run_counts_its_delegations_for_itself() -> None:
    # docs/agents.md: "a plain tool that awaits agent.run(...) is bounded by the depth limit alone (its run's own
    # as_tool calls start a count of their own)".  Under a root it did; under a delegated run its calls were counted
    # in the delegated run's tree — here the second of two calls refused, at 2 of max_runs=2, by a count of 1.
    helper = Agent(ScriptedProvider(lambda request: LLMResponse("helped")), name="helper")
    worker = Agent(
        ScriptedProvider(_calls_then([ToolCall(f"w{i}", "helper", {"input": "q"}) for i in (1, 2)], "worked")),
        name="worker",
        tools=[helper.as_tool(max_runs=2)],
    )

    @tool
    async def run_worker(input: str) -> str:
        """Runs the worker agent (a plain tool awaiting agent.run)."""
        return (await worker.run(input)).content

    manager = Agent(
        ScriptedProvider(_calls_then([ToolCall("m1", "run_worker", {"input": "go"})], "managed")),
        name="manager",
        tools=[run_worker],
    )
    boss = Agent(
        ScriptedProvider(_calls_then([ToolCall("b1", "manager", {"input": "go"})], "done")),
        name="boss",
        tools=[manager.as_tool(max_runs=2)],
    )
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await boss.run("go")
    assert result.ok
    assert [e.data for e in rec.events if e.type == "delegation.refused"] == []
    status = {e.call_id: e.status for e in rec.events if e.type == "tools.finished"}
    assert status["w1"] == status["w2"] == "ok", status
