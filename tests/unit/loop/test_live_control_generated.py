"""Generated control of live runs (hypothesis): steers, interrupts, cancels and ``rt.run_ref`` look-ups, each sent
from a drawn place at a drawn point of a drawn run, checked against what docs/loop.md ("Live runs") promises.

A run is drawn whole: a scripted model of 1-4 steps (tool steps whose calls take virtual time, think-only steps, a
final answer), streamed (``agent.stream``) or not (``agent.run``, its handle found by ``rt.run_ref``), a tight or a
roomy ``max_steps``.  So is a program of control operations, each from a place — the stream's consumer, another
task of the runtime, another thread's event loop (through the documented crossing: the handle's own methods, which
cross by ``rt.call``; ``cancel`` there is a ``RuntimeError`` naming what to use, so it is sent through ``rt.call``)
— at a point: before the first model call, during model call *k* (the final answer's included), during step *k*'s
tools, at the run's ``run.finished`` event, after the run ended.  The run is held at each point (its model or
its tool waits) until every operation sent there has been handled, so each point is exact; a point the run
never reaches is sent after it ended.

What is checked (docs/loop.md, "Live runs"): every steer accepted is taken exactly once, in the order accepted,
at the next boundary — the next request the provider gets holds it, ``run.steer_received`` / ``run.steered`` say so
— or is reported unread (``run.steers_unread``), never lost; a steer during the final answer makes the run take one
more step (within ``max_steps``); an interrupt ends the run after the step it is in, no later model call, the
calls asked for meanwhile never started, a tool step's results kept; a cancel ends it cancelled with no tool left
running; anything after the end is ``RunFinishedError`` (``RunNotFoundError`` for a look-up; a cancel does
nothing); ``result.messages`` hold the steers taken; nothing hangs.  With a journal (SQLite), a replay of the
recorded run ends the same way (docs/durability.md, "How a run ended").

Virtual time where no thread is involved; the examples with threads or a journal run on the real clock and are
few.  Plain examples of what it found are at the end of the file.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as note
from hypothesis import strategies as st

from agentactors import Agent, InMemoryRecorder, LLMResponse, RunResult, Runtime, tool
from agentactors.agent.run import AgentRun
from agentactors.errors import RunFinishedError, RunInterruptedError, RunNotFoundError
from agentactors.events import Event
from agentactors.journal import ReplayDivergedError, SqliteJournal, replay
from agentactors.messages import LLMRequest, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.testing import virtual_backends
from tests.support.foreign_loop import from_thread

BACKENDS = pytest.mark.parametrize("backend", ["asyncio", "trio"])
# The budget of examples per backend (LIVE_CONTROL_EXAMPLES=5000 for a long hunt); the real-clock ones stay few.
SLOW_OK = [HealthCheck.too_slow]
QUICK = settings(max_examples=int(os.environ.get("LIVE_CONTROL_EXAMPLES", "300")), deadline=None,
                 suppress_health_check=SLOW_OK)
FEW = settings(max_examples=int(os.environ.get("LIVE_CONTROL_FEW", "10")), deadline=None, suppress_health_check=SLOW_OK)

# A point of the run: (what, k) — ordered as the run meets them.
Point = tuple[str, int]
BEFORE: Point = ("before", 0)
FINISHED: Point = ("finished", 0)
AFTER: Point = ("after", 0)


def order(point: Point) -> int:
    what, k = point
    return {"before": 0, "model": 2 * k - 1, "tool": 2 * k, "finished": 1000, "after": 1001}[what]


@dataclass(frozen=True)
class Op:
    kind: str  # steer, interrupt, cancel, lookup
    place: str  # consumer, task, thread
    point: Point
    ref: bool  # through rt.run_ref(run_id) rather than the handle in hand
    text: str = ""  # a steer's: its length is its own, so run.steer_received's ``chars`` names it
    reason: str | None = None  # an interrupt's


@dataclass(frozen=True)
class Plan:
    steps: tuple[str, ...]  # per model call: tool, think (think-only), answer; calls past them answer
    calls: tuple[int, ...]  # parallel tool calls per step
    latency: tuple[float, ...]  # a model call's (virtual) time, per step
    tool_time: tuple[float, ...]  # a tool's (virtual) time, per step
    streamed: bool
    max_steps: int
    ops: tuple[Op, ...]


@st.composite
def plans(draw: st.DrawFn, places: tuple[str, ...], max_ops: int = 6, real: bool = False) -> Plan:
    n = draw(st.integers(1, 4))
    steps = (*(draw(st.sampled_from(["tool", "tool", "think"])) for _ in range(n - 1)), "answer")
    calls = tuple(draw(st.integers(1, 2)) for _ in range(n))
    times = st.just(0.0) if real else st.sampled_from([0.0, 0.5, 2.0])
    latency = tuple(draw(times) for _ in range(n))
    tool_time = tuple(draw(times) for _ in range(n))
    streamed = draw(st.booleans())
    max_steps = draw(st.sampled_from([n, n + 6]))
    points: list[Point] = [BEFORE, FINISHED, AFTER]
    for k in range(1, n + 3):
        points.append(("model", k))
        if k <= n and steps[k - 1] == "tool":
            points.append(("tool", k))
    ops: list[Op] = []
    threads = "thread" in places  # (the first operation then comes from another thread)
    for i in range(draw(st.integers(1 if threads else 0, max_ops))):
        kind = draw(st.sampled_from(["steer", "steer", "steer", "interrupt", "cancel", "lookup"]))
        place = "thread" if threads and i == 0 else draw(
            st.sampled_from(places if streamed else tuple(p for p in places if p != "consumer"))
        )
        point = draw(st.sampled_from(points))
        reason = draw(st.sampled_from([None, "enough", f"stop #{i}"]))
        ops.append(Op(kind, place, point, draw(st.booleans()), f"steer-{i}" + "." * i, reason))
    return Plan(steps, calls, latency, tool_time, streamed, max_steps, tuple(ops))


@dataclass
class Done:
    """What happened to an operation: sent at its point or after the end (``late``), and its outcome."""

    op: Op
    late: bool = False
    error: BaseException | None = None
    returned: Any = None
    started: int = -1  # the model calls made when it was sent, and when it returned
    ended: int = -1


@dataclass
class World:
    """One example's run: its gates (the points it is held at), its model, its tool, what they saw."""

    plan: Plan
    real: bool
    requests: list[list[str]] = field(default_factory=list)  # each model call's user messages
    tools_started: dict[int, int] = field(default_factory=dict)
    tools_finished: dict[int, int] = field(default_factory=dict)
    running: int = 0
    over: bool = False  # the run ended: points not reached yet never will be
    run_id: str | None = None
    done: list[Done] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.fired: dict[Point, anyio.Event] = {}
        self.left: dict[Point, int] = {}
        self.settled: dict[Point, anyio.Event] = {}
        for op in self.plan.ops:
            self.fired.setdefault(op.point, anyio.Event())
            self.settled.setdefault(op.point, anyio.Event())
            self.left[op.point] = self.left.get(op.point, 0) + 1
        self.started = anyio.Event()  # the run's id is known

    def fire(self, point: Point) -> None:
        event = self.fired.get(point)
        if event is not None:
            event.set()

    async def reach(self, point: Point) -> None:
        """The run is at ``point``: it waits there until every operation sent there was handled."""
        if point in self.fired:
            self.fire(point)
            await self.settled[point].wait()

    def settle(self, point: Point) -> None:
        self.left[point] -= 1
        if not self.left[point]:
            self.settled[point].set()

    def end(self) -> None:
        """The run ended: every point it did not reach is sent now (after the end)."""
        self.over = True
        for event in self.fired.values():
            event.set()

    async def model(self, request: LLMRequest) -> Any:
        self.requests.append([m.content for m in request.messages if m.role == "user"])
        k = len(self.requests)
        if k == 1 and BEFORE in self.settled:
            await self.settled[BEFORE].wait()
        await self.reach(("model", k))
        plan = self.plan
        kind = plan.steps[k - 1] if k <= len(plan.steps) else "answer"
        if not self.real:
            await anyio.sleep(plan.latency[(k - 1) % len(plan.latency)])
        if kind == "tool":
            return [ToolCall(f"c{k}_{i}", "work", {"step": k, "i": i}) for i in range(plan.calls[k - 1])]
        if kind == "think":
            return LLMResponse("", reasoning="thinking it over")
        return f"answer {k}"

    async def work(self, step: int, i: int) -> str:
        self.tools_started[step] = self.tools_started.get(step, 0) + 1
        self.running += 1
        try:
            if i == 0:
                await self.reach(("tool", step))
            if not self.real:
                await anyio.sleep(self.plan.tool_time[step - 1])
            self.tools_finished[step] = self.tools_finished.get(step, 0) + 1
            return f"done {step}.{i}"
        finally:
            self.running -= 1


class Watching(InMemoryRecorder):
    """Keeps the events, and tells the world the run's id (``run.started``) and its ``run.finished``."""

    def __init__(self, world: World) -> None:
        super().__init__()
        self.world = world

    def record(self, event: Event) -> None:
        super().record(event)
        if event.type == "run.started" and self.world.run_id is None:
            self.world.run_id = event.run_id
            self.world.started.set()
        elif event.type == "run.finished" and event.run_id == self.world.run_id and not self.world.plan.streamed:
            self.world.fire(FINISHED)


# -- sending ---------------------------------------------------------------------------------------------------


def _cancel_through(rt: Runtime, handle: AgentRun[Any]) -> Callable[[], Awaitable[None]]:
    async def cancel() -> None:
        handle.cancel()

    async def from_afar() -> None:
        # docs/loop.md: from another thread, cancel() is a RuntimeError saying what to use instead.
        with pytest.raises(RuntimeError, match=r"interrupt.*rt\.call"):
            handle.cancel()
        await rt.call(cancel)

    return from_afar


async def send(world: World, rt: Runtime, run: AgentRun[Any] | None, op: Op, foreign: str) -> None:
    """``op`` from its place (the caller's task is the consumer's or another task's), noted in ``world.done``."""
    done = Done(op, late=world.over, started=len(world.requests))
    world.done.append(done)
    run_id = world.run_id
    assert run_id is not None

    async def find() -> Any:
        return rt.run_ref(run_id)

    async def act() -> Any:
        if op.kind == "lookup":
            return await rt.call(find) if op.place == "thread" else rt.run_ref(run_id)
        handle: AgentRun[Any] = rt.run_ref(run_id) if op.ref or run is None else run
        if op.kind == "steer":
            return await handle.steer(op.text)
        if op.kind == "interrupt":
            return await handle.interrupt(op.reason)
        if op.place == "thread":
            return await _cancel_through(rt, handle)()
        return handle.cancel()

    try:
        if op.place == "thread":
            # A look-up is the runtime loop's: from another thread it is made there, through rt.call.
            through_ref = op.kind != "lookup" and (op.ref or run is None)
            outcome = await (_afar(rt, run_id, op, foreign) if through_ref else from_thread(foreign, act))
            if isinstance(outcome, BaseException):
                raise outcome
            done.returned = outcome
        else:
            done.returned = await act()
    except (RunFinishedError, RunNotFoundError) as exc:
        done.error = exc
    done.ended = len(world.requests)


async def _afar(rt: Runtime, run_id: str, op: Op, foreign: str) -> Any:
    """A control from another thread through a handle found there by ``rt.run_ref`` (crossing with ``rt.call``)."""

    async def find() -> Any:
        return rt.run_ref(run_id)

    async def act() -> Any:
        handle: AgentRun[Any] = await rt.call(find)
        if op.kind == "steer":
            return await handle.steer(op.text)
        if op.kind == "interrupt":
            return await handle.interrupt(op.reason)
        return await _cancel_through(rt, handle)()

    return await from_thread(foreign, act)


async def sender(world: World, rt: Runtime, run: AgentRun[Any] | None, point: Point, ops: list[Op], foreign: str,
                 ) -> None:
    """The operations of one place (another task, or a thread) at ``point``, in the plan's order."""
    if point == BEFORE:
        await world.started.wait()
    else:
        await world.fired[point].wait()
    for op in ops:
        try:
            await send(world, rt, run, op, foreign)
        finally:
            world.settle(point)


async def drive(plan: Plan, foreign: str, journal: Path | None = None) -> None:
    real = journal is not None or any(op.place == "thread" for op in plan.ops)
    world = World(plan, real)
    rec = Watching(world)

    @tool
    async def work(step: int, i: int) -> str:
        """Works a while."""
        return await world.work(step, i)

    agent = Agent(
        ScriptedProvider(world.model), tools=[work], max_steps=plan.max_steps, max_empty_steps=8, recorders=[rec]
    )
    result: RunResult[Any] | None = None
    with anyio.fail_after(20 if real else 10_000):  # a hang fails here
        async with Runtime(journal=SqliteJournal(journal) if journal is not None else None) as rt:
            async with anyio.create_task_group() as tg:
                run: AgentRun[Any] | None = None
                consumer: dict[Point, list[Op]] = {}
                by_place: dict[tuple[Point, str], list[Op]] = {}
                for op in plan.ops:
                    if op.place == "consumer":
                        consumer.setdefault(op.point, []).append(op)
                    else:
                        by_place.setdefault((op.point, op.place), []).append(op)

                async def at(point: Point) -> None:
                    if point == ("model", 1) and point in consumer and BEFORE in world.settled:
                        await world.settled[BEFORE].wait()  # as the model does: "before" comes first
                    for op in consumer.pop(point, []):
                        try:
                            await send(world, rt, run, op, foreign)
                        finally:
                            world.settle(point)

                if plan.streamed:
                    async with agent.stream("go") as run:
                        world.run_id = run.run_id
                        world.started.set()
                        for (point, _), ops in by_place.items():
                            tg.start_soon(sender, world, rt, run, point, ops, foreign)
                        await at(BEFORE)
                        async for event in run:
                            if event.run_id != world.run_id:
                                continue
                            if event.type == "llm.request":
                                await at(("model", event.step or 0))
                            elif event.type == "tools.started":
                                await at(("tool", event.step or 0))
                            elif event.type == "run.finished":
                                world.fire(FINISHED)
                                await at(FINISHED)
                        result = await run.wait()
                        assert world.running == 0, "a tool still runs after the run ended"
                else:
                    for (point, _), ops in by_place.items():
                        tg.start_soon(sender, world, rt, None, point, ops, foreign)
                    result = await agent.run("go")
                    assert world.running == 0, "a tool still runs after the run ended"
                world.end()
                for point in list(consumer):
                    await at(point)
            if journal is not None:
                calls = len(world.requests)
                await check_replay(rt, journal, agent, result)
                assert len(world.requests) == calls, "a replay asked the model"
    assert result is not None
    note("outcome: " + ("cancelled" if result.cancelled else type(result.error).__name__ if result.error else "ok"))
    note(f"steers taken: {sum(e.type == 'run.steered' for e in rec.events)}")
    note(f"sent from a thread to the live run: {sum(d.op.place == 'thread' and not d.late for d in world.done)}")
    check(world, rec.events, result)


# -- checking --------------------------------------------------------------------------------------------------


def first_request_with(world: World, text: str) -> int | None:
    for k, users in enumerate(world.requests, 1):
        if text in users:
            return k
    return None


def check(world: World, events: list[Event], result: RunResult[Any]) -> None:
    plan = world.plan
    mine = [e for e in events if e.run_id == result.run_id]
    made = len(world.requests)
    ended = [d for d in world.done if d.op.kind in ("interrupt", "cancel") and not d.late and d.op.point != FINISHED
             and d.error is None]
    # Points where the run may end before every operation sent there reached it: a cancel's, and the start (an
    # interrupt before the first model call ends the run at its first boundary: no model call holds it there).
    # (A cancel sent "before" may reach a run already in model call 1: its point is that call's too.)
    cancels_there = {d.op.point for d in world.done if d.op.kind == "cancel" and not d.late} | {
        BEFORE for d in world.done if d.op.kind == "interrupt" and d.op.point == BEFORE
    }
    if BEFORE in cancels_there:
        cancels_there.add(("model", 1))

    # Every operation's answer.
    for d in world.done:
        op = d.op
        if d.late or op.point == AFTER:
            if op.kind == "lookup" or op.ref or not plan.streamed:  # a handle looked up after the end: none
                assert isinstance(d.error, RunNotFoundError), d
            elif op.kind == "cancel":
                assert d.error is None, d  # idempotent: nothing to cancel
            else:
                assert isinstance(d.error, RunFinishedError), d
        elif op.point == FINISHED:
            pass  # the run is ending: either answer (a steer accepted there is reported unread, below)
        elif d.error is not None:
            # Only a run cancelled at that very point may have ended before the operation reached it.
            assert op.point in cancels_there, d
        if op.kind == "lookup" and d.error is None:
            assert isinstance(d.returned, AgentRun) and d.returned.run_id == result.run_id, d

    # The outcome.  A control sent "before" that returned once model call 1 was under way acts as one during it.
    def point_of(d: Done) -> Point:
        return ("model", 1) if d.op.point == BEFORE and d.ended >= 1 else d.op.point

    def call_of(point: Point) -> int:
        return point[1] if point[0] != "before" else 1

    steps_kinds = plan.steps + ("answer",) * 10
    cancels = [d for d in ended if d.op.kind == "cancel"]
    interrupts = sorted((d for d in ended if d.op.kind == "interrupt"), key=lambda d: order(point_of(d)))
    if not ended:
        assert result.ok and not result.cancelled and result.error is None, result
        assert result.content == f"answer {made}", (result.content, made)
    elif result.cancelled:
        assert any(made <= call_of(point_of(d)) for d in cancels), (made, cancels)  # no model call after it
    else:
        assert interrupts, result
        point = point_of(interrupts[0])
        assert all(order(point_of(d)) >= order(point) for d in cancels), "an earlier cancel did not cancel"
        call = call_of(point)
        assert made <= call, (made, point)  # no model call after the step the interrupt came in
        if point[0] == "tool":
            assert world.tools_finished.get(call) == plan.calls[call - 1], "a tool step's results are kept"
            assert isinstance(result.error, RunInterruptedError), result
        elif made and steps_kinds[made - 1] == "answer":
            # An answer finished while the interrupt waited ends the run as usual.
            assert result.ok and result.content == f"answer {made}", result
        else:
            assert isinstance(result.error, RunInterruptedError) and not result.paused, result
            if point[0] == "model":
                assert call not in world.tools_started, "a call asked for during an interrupt started"
        if isinstance(result.error, RunInterruptedError):
            received = [e.data["reason"] for e in mine if e.type == "run.interrupt_received"]
            assert received and result.error.reason == received[0], (result.error.reason, received)
            assert any(e.type == "run.interrupted" for e in mine)
    assert world.running == 0
    # What run.finished said is the result: a control sent at that event (a cancel included) changes nothing.
    finished = [e for e in mine if e.type == "run.finished"]
    if finished:
        said = finished[-1].data
        assert bool(said.get("cancelled")) == result.cancelled and said.get("steps") == result.steps, (said, result)
        if not result.cancelled:  # (a cancelled run's event says only that, its steps and usage)
            assert said["content"] == result.content and type(said["error"]) is type(result.error), (said, result)

    # Steers: each accepted one taken once, in order, at the next boundary — or reported unread.
    by_chars = {len(d.op.text): d for d in world.done if d.op.kind == "steer"}
    accepted = [by_chars[e.data["chars"]].op.text for e in mine if e.type == "run.steer_received"]
    taken = [e.data["text"] for e in mine if e.type == "run.steered"]
    unread = sum(e.data["count"] for e in mine if e.type == "run.steers_unread")
    answered = [d.op.text for d in world.done if d.op.kind == "steer" and d.error is None]
    assert sorted(accepted) == sorted(answered), (accepted, answered)
    assert len(set(taken)) == len(taken) and taken == [t for t in accepted if t in taken], (taken, accepted)
    assert len(taken) + unread == len(accepted), (taken, unread, accepted)
    assert taken == accepted[: len(taken)], "a steer taken while one accepted before it was not"
    for k, users in enumerate(world.requests, 1):
        assert len(set(users)) == len(users), f"request {k} holds a steer twice: {users}"
    for d in world.done:
        if d.op.kind != "steer" or d.error is not None:
            continue
        text, point = d.op.text, d.op.point
        seen = first_request_with(world, text)
        if text in taken:
            assert seen is not None, f"{text} taken but never sent"
            if point[0] in ("model", "tool"):
                assert seen == point[1] + 1, (text, point, seen)
            elif point == BEFORE:
                assert seen == 1 or (seen == 2 and d.ended >= 1), (text, seen, d)
            if not result.cancelled:
                assert [m.content for m in result.messages].count(text) == 1, text
        else:
            assert seen is None, f"{text} reported unread, yet request {seen} holds it"
    # A steer during the final answer: one more step, within max_steps.
    for d in world.done:
        if d.op.kind == "steer" and d.error is None and d.op.point[0] == "model" and not ended:
            k = d.op.point[1]
            assert made > k or k >= plan.max_steps, (d, made)
    if unread:
        reasons = {e.data["reason"] for e in mine if e.type == "run.steers_unread"}
        allowed = {"stopped"} if result.cancelled else {"interrupted", "max_steps", "ended"}
        assert reasons <= allowed, (reasons, result)


async def check_replay(rt: Runtime, path: Path, agent: Agent[Any], result: RunResult[Any] | None) -> None:
    """docs/durability.md, "How a run ended": a replay ends the run as it ended, and asks no model."""
    assert result is not None and result.run_id is not None
    journal = rt.journal
    assert journal is not None
    try:
        again = await replay(journal, result.run_id, agent=attrs.evolve(agent, recorders=()))
    except ReplayDivergedError:
        # Documented: an interrupt, or a steer, before the first model call answered has no response to carry it.
        assert result.steps <= 1 and not result.ok, result
        return
    assert again.cancelled == result.cancelled and again.ok == result.ok, (again, result)
    if result.cancelled and result.steps == 0:
        # Cancelled before its first model call answered: no response carries the mark, and the replay is
        # cancelled inside step 1's model call (documented).
        assert again.steps <= 1 and again.messages == result.messages, (again, result)
        return
    assert type(again.error) is type(result.error), (again.error, result.error)
    assert again.steps == result.steps and again.content == result.content, (again, result)
    assert again.messages == result.messages, (again.messages, result.messages)


# -- the tests -------------------------------------------------------------------------------------------------


def run_on(backend: str, plan: Plan, *, virtual: bool, foreign: str = "asyncio", journal: Path | None = None) -> None:
    if virtual:
        name, options = dict(enumerate(virtual_backends()))[0 if backend == "asyncio" else 1]
        anyio.run(drive, plan, foreign, journal, backend=name, backend_options=options)
    else:
        anyio.run(drive, plan, foreign, journal, backend=backend)


@BACKENDS
@QUICK
@given(plan=plans(("consumer", "task")))
def test_controls_from_the_consumer_and_other_tasks_keep_the_documented_promises(backend: str, plan: Plan) -> None:
    run_on(backend, plan, virtual=True)


@BACKENDS
@FEW
@given(plan=plans(("consumer", "task", "thread"), max_ops=3, real=True), foreign=st.sampled_from(["asyncio", "trio"]))
def test_controls_from_other_threads_keep_the_documented_promises(backend: str, plan: Plan, foreign: str) -> None:
    run_on(backend, plan, virtual=False, foreign=foreign)


@BACKENDS
@FEW
@given(plan=plans(("consumer", "task"), max_ops=4, real=True))
def test_a_controlled_journaled_run_replays_as_it_ended(backend: str, plan: Plan, tmp_path_factory: Any) -> None:
    run_on(backend, plan, virtual=False, journal=tmp_path_factory.mktemp("j") / "runs.db")



# -- what it found ---------------------------------------------------------------------------------------------


@pytest.mark.virtual_time
@pytest.mark.anyio
async def test_a_streamed_run_is_found_by_its_id_as_soon_as_its_handle_has_it() -> None:
    """``run.run_id`` is known once ``agent.stream(...)`` is entered, and the handle takes steers at once; yet
    ``rt.run_ref(run.run_id)`` said "no live run" until the run's task first ran — a server handing the id to a
    client that steers through another request failed at random."""
    seen: list[list[str]] = []

    async def model(request: LLMRequest) -> str:
        seen.append([m.content for m in request.messages if m.role == "user"])
        return "answer"

    async with Runtime() as rt:
        async with Agent(ScriptedProvider(model)).stream("go") as run:
            assert run.run_id is not None
            assert rt.run_ref(run.run_id) is run
            await rt.run_ref(run.run_id).steer("also this")
            result = await run.wait()
        with pytest.raises(RunNotFoundError):
            rt.run_ref(run.run_id)
    assert result.ok and seen == [["go", "also this"]]
