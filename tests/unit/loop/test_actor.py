"""A run is an actor (agentactors/loop/live.py): steer, interrupt, approve and inspect it while it runs.

Every test runs on asyncio and trio.  A run is held at a known point by a tool or a model that waits for
an event the test sets, so "while the model writes" and "while a tool runs" are exact, not timed.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import Agent, RunState, Runtime
from agentactors.errors import (
    ActorStopped,
    CallNotPendingError,
    RunFinishedError,
    RunInterruptedError,
    RunNotFoundError,
)
from agentactors.events import InMemoryRecorder
from agentactors.messages import LLMRequest, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import ToolContext, tool

pytestmark = pytest.mark.anyio


def _users(request: LLMRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "user"]


class Gate:
    """A tool that waits until the test opens it (``entered`` tells it is running)."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.open = anyio.Event()
        self.finished = 0

    def tool(self) -> Any:
        gate = self

        @tool
        async def lookup(city: str) -> str:
            """Look a city up."""
            gate.entered.set()
            await gate.open.wait()
            gate.finished += 1
            return f"{city}: sunny"

        return lookup


def _one_call_then_answer(seen: list[LLMRequest]) -> ScriptedProvider:
    def model(request: LLMRequest) -> Any:
        seen.append(request)
        if len(seen) == 1:
            return [ToolCall("c1", "lookup", {"city": "Paris"})]
        return "done: " + " | ".join(_users(request))

    return ScriptedProvider(model)


# -- steer ------------------------------------------------------------------------------------------------


async def test_steers_are_taken_at_the_next_boundary_after_the_tool_results_once_and_in_order() -> None:
    seen: list[LLMRequest] = []
    gate, rec = Gate(), InMemoryRecorder()
    async with Runtime():
        agent = Agent(_one_call_then_answer(seen), tools=[gate.tool()], recorders=[rec])
        async with agent.stream("weather?") as run:
            await gate.entered.wait()
            await run.steer("also check Oslo")
            await run.steer("and Bergen")
            gate.open.set()
            result = await run.wait()
    assert result.ok and len(seen) == 2
    roles = [m.role for m in seen[1].messages]
    assert roles == ["user", "assistant", "tool", "user", "user"]  # after the tool result, in order
    assert _users(seen[1]) == ["weather?", "also check Oslo", "and Bergen"]
    assert [m.content for m in result.messages if m.role == "user"] == ["weather?", "also check Oslo", "and Bergen"]
    assert [e.data["text"] for e in rec.of_type("run.steered")] == ["also check Oslo", "and Bergen"]
    assert len(rec.of_type("run.steer_received")) == 2
    assert not rec.of_type("run.steers_unread")  # every steer was taken


async def test_a_steer_while_the_model_writes_its_final_answer_gets_one_more_step() -> None:
    writing, go_on = anyio.Event(), anyio.Event()
    seen: list[LLMRequest] = []

    async def model(request: LLMRequest) -> Any:
        seen.append(request)
        if len(seen) == 1:
            writing.set()
            await go_on.wait()
            return "Paris is sunny."
        return "Paris is sunny, Oslo rainy."

    async with Runtime():
        agent = Agent(ScriptedProvider(model))
        async with agent.stream("weather?") as run:
            await writing.wait()
            await run.steer("also Oslo")
            go_on.set()
            result = await run.wait()
    assert result.ok and result.steps == 2 and result.content == "Paris is sunny, Oslo rainy."
    assert [(m.role, m.content) for m in seen[1].messages] == [
        ("user", "weather?"), ("assistant", "Paris is sunny."), ("user", "also Oslo")
    ]


@pytest.mark.parametrize("ending", ["max_steps", "failed"])
async def test_a_steer_the_run_never_takes_is_recorded_not_lost_silently(
    ending: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Accepted, then the run ends before a step reads it (no step left, or the model failed): an event and
    a warning say so — the steerer was told nothing else."""
    writing, go_on = anyio.Event(), anyio.Event()
    seen: list[LLMRequest] = []

    async def model(request: LLMRequest) -> Any:
        seen.append(request)
        writing.set()
        await go_on.wait()
        if ending == "failed":
            raise RuntimeError("the vendor fell over")
        return "Paris is sunny."

    rec = InMemoryRecorder()
    async with Runtime():
        agent = Agent(ScriptedProvider(model), recorders=[rec], max_steps=1)
        async with agent.stream("weather?") as run:
            await writing.wait()
            await run.steer("also Oslo")
            go_on.set()
            result = await run.wait()
    assert len(seen) == 1  # no step read the steer
    # No step left: the answer stands (ok, not bounded: it ended on an answer), the steer unread.
    assert (result.ok and not result.bounded) if ending == "max_steps" else result.generation_failed
    (unread,) = rec.of_type("run.steers_unread")
    assert unread.data == {"count": 1, "reason": ending}
    assert [e.type for e in rec.events].index("run.steers_unread") < [e.type for e in rec.events].index("run.finished")
    assert any("1 steer(s) it never took" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


async def test_steering_a_finished_run_is_a_typed_error() -> None:
    async with Runtime():
        agent = Agent(ScriptedProvider("hi"))
        async with agent.stream("q") as run:
            await run.wait()
        with pytest.raises(RunFinishedError):
            await run.steer("late")
        with pytest.raises(RunFinishedError):
            await run.interrupt()
        assert run.state().finished


# -- interrupt --------------------------------------------------------------------------------------------


async def test_an_interrupt_ends_the_run_after_its_tool_step_with_the_conversation_whole() -> None:
    seen: list[LLMRequest] = []
    gate, rec = Gate(), InMemoryRecorder()
    async with Runtime():
        agent = Agent(_one_call_then_answer(seen), tools=[gate.tool()], recorders=[rec])
        async with agent.stream("weather?") as run:
            await gate.entered.wait()
            await run.interrupt("user pressed stop")
            gate.open.set()
            result = await run.wait()
    assert gate.finished == 1 and len(seen) == 1  # the tool finished; no model call after the interrupt
    assert not result.ok and not result.paused and not result.cancelled
    assert isinstance(result.error, RunInterruptedError) and result.error.reason == "user pressed stop"
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]
    assert result.messages[-1].content == "Paris: sunny"  # the tool's real result is kept
    assert len(rec.of_type("run.interrupted")) == 1


async def test_an_interrupt_during_the_model_call_starts_none_of_its_tool_calls() -> None:
    writing, go_on = anyio.Event(), anyio.Event()
    ran: list[str] = []

    @tool
    async def lookup(city: str) -> str:
        """Look a city up."""
        ran.append(city)
        return city

    async def model(request: LLMRequest) -> Any:
        writing.set()
        await go_on.wait()
        return [ToolCall("c1", "lookup", {"city": "Paris"})]

    async with Runtime():
        agent = Agent(ScriptedProvider(model), tools=[lookup])
        async with agent.stream("q") as run:
            await writing.wait()
            await run.interrupt()
            go_on.set()
            result = await run.wait()
    assert ran == [] and isinstance(result.error, RunInterruptedError)
    assert [m.role for m in result.messages] == ["user"]  # no assistant turn whose calls got no results


async def test_cancel_stays_immediate() -> None:
    gate = Gate()
    async with Runtime():
        agent = Agent(_one_call_then_answer([]), tools=[gate.tool()])
        async with agent.stream("q") as run:
            await gate.entered.wait()
            run.cancel()
            result = await run.wait()
    assert result.cancelled and gate.finished == 0


# -- approvals answered in place --------------------------------------------------------------------------


def _approval_agent(recorder: InMemoryRecorder, timeout: float | None = None) -> tuple[Agent[Any], list[str]]:
    sent: list[str] = []

    @tool(requires_approval=True, approval="wait", approval_timeout=timeout)
    async def send_money(amount: int) -> str:
        """Send money."""
        sent.append(str(amount))
        return f"sent {amount}"

    def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return f"result: {last.content}"
        return [ToolCall("pay1", "send_money", {"amount": 5})]

    return Agent(ScriptedProvider(model), tools=[send_money], recorders=[recorder]), sent


async def _until_pending(run: Any) -> RunState:
    """The run's state once its stream says it waits for a decision."""
    async for event in run:
        if event.type == "run.awaiting_approval":
            break
    state: RunState = run.state()
    return state


async def test_an_approval_is_answered_in_place_within_one_run() -> None:
    rec = InMemoryRecorder()
    agent, sent = _approval_agent(rec)
    async with Runtime():
        async with agent.stream("pay") as run:
            state = await _until_pending(run)
            assert [c.id for c in state.pending] == ["pay1"] and state.step == 1
            with pytest.raises(CallNotPendingError):
                await run.approve("nope")
            assert [c.id for c in run.state().pending] == ["pay1"]  # unchanged
            await run.approve("pay1")
            result = await run.wait()
    assert result.ok and not result.paused and sent == ["5"] and result.content == "result: sent 5"
    assert len(rec.of_type("run.started")) == 1 and len(rec.of_type("run.finished")) == 1
    assert {e.run_id for e in rec.events} == {result.run_id}
    assert len(rec.of_type("run.approved")) == 1 and len(rec.of_type("run.awaiting_approval")) == 1


async def test_a_denial_in_place_reaches_the_model_and_the_run_goes_on() -> None:
    rec = InMemoryRecorder()
    agent, sent = _approval_agent(rec)
    async with Runtime():
        async with agent.stream("pay") as run:
            await _until_pending(run)
            await run.deny("pay1", "too much")
            result = await run.wait()
    assert sent == [] and result.ok and "too much" in result.content
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert "too much" in tool_message.content
    assert result.tool_calls[0].id == "pay1"


@pytest.mark.virtual_time
async def test_an_approval_timeout_denies_the_call_and_the_run_goes_on() -> None:
    rec = InMemoryRecorder()
    agent, sent = _approval_agent(rec, timeout=30.0)
    async with Runtime():
        async with agent.stream("pay") as run:
            t0 = anyio.current_time()
            result = await run.wait()
            waited = anyio.current_time() - t0
    assert sent == [] and result.ok and waited == pytest.approx(30.0)
    assert "no decision within 30s" in next(m for m in result.messages if m.role == "tool").content
    assert len(rec.of_type("run.approval_timed_out")) == 1 and len(rec.of_type("run.started")) == 1


async def test_approval_pause_stays_the_default() -> None:
    @tool(requires_approval=True)
    async def risky() -> str:
        """Risky."""
        return "ran"

    agent = Agent(ScriptedProvider([ToolCall("r1", "risky", {}), "ok"]), tools=[risky])
    async with Runtime():
        result = await agent.run("go")
    assert result.paused and result.resume_state is not None and [c.id for c in result.resume_state.pending] == ["r1"]


def test_approval_must_be_pause_or_wait() -> None:
    with pytest.raises(ValueError, match="approval"):
        tool(approval="later")(lambda: None)


# -- addressing: rt.run_ref, the kernel's view ---------------------------------------------------------


async def test_run_ref_reaches_a_run_started_with_agent_run_from_another_task() -> None:
    seen: list[LLMRequest] = []
    gate, rec = Gate(), InMemoryRecorder()
    async with Runtime() as rt:
        agent = Agent(_one_call_then_answer(seen), tools=[gate.tool()], recorders=[rec])
        results: list[Any] = []

        async def start() -> None:
            results.append(await agent.run("weather?"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(start)
            await gate.entered.wait()
            run_id = rec.of_type("run.started")[0].run_id
            assert run_id is not None
            handle = rt.run_ref(run_id)
            assert handle is rt.run_ref(run_id) and handle.run_id == run_id
            stats = rt.stats()
            assert stats.busy >= 1 and stats.actors == 3  # the run's actor beside its provider and executor
            await handle.steer("also Oslo")
            gate.open.set()
            finished = await handle.wait()
        assert results == [finished] and _users(seen[1])[-1] == "also Oslo"
        assert run_id is not None  # again: to mypy, the task group's exit may have swallowed an error before it
        with pytest.raises(RunNotFoundError):
            rt.run_ref(run_id)  # finished
        with pytest.raises(RunNotFoundError):
            rt.run_ref("run-unknown")
        assert rt.stats().actors == 2  # the run's actor is gone with the run


async def test_run_ref_of_a_streamed_run_is_its_own_handle() -> None:
    gate = Gate()
    async with Runtime() as rt:
        agent = Agent(_one_call_then_answer([]), tools=[gate.tool()])
        async with agent.stream("q") as run:
            await gate.entered.wait()
            assert run.run_id is not None and rt.run_ref(run.run_id) is run
            gate.open.set()


async def test_stopping_a_runs_actor_ends_the_run() -> None:
    gate = Gate()
    async with Runtime() as rt:
        agent = Agent(_one_call_then_answer([]), tools=[gate.tool()], recorders=[rec := InMemoryRecorder()])
        with pytest.raises(ActorStopped, match="stopped while it ran"):  # as an ask to a stopped actor
            async with agent.stream("q") as run:
                await gate.entered.wait()
                ref = run._live.ref if run._live is not None else None
                assert ref is not None
                await rt.stop(ref, drain=False)
                await run.wait()
        assert gate.finished == 0 and not rec.of_type("actor.started")  # quiet: the run has its own events


async def test_hundreds_of_concurrent_live_runs_each_see_their_own_steer() -> None:
    n = 300
    opened = anyio.Event()
    entered = 0
    all_in = anyio.Event()

    @tool
    async def lookup(city: str) -> str:
        """Look a city up."""
        nonlocal entered
        entered += 1
        if entered == n:
            all_in.set()
        await opened.wait()
        return city

    def model(request: LLMRequest) -> Any:
        if request.messages[-1].role == "user" and len(request.messages) == 1:
            return [ToolCall("c1", "lookup", {"city": request.messages[0].content})]
        return "|".join(_users(request))

    agent = Agent(ScriptedProvider(model), tools=[lookup])
    results: dict[int, str] = {}
    async with Runtime() as rt:

        async def one(i: int) -> None:
            async with agent.stream(f"city{i}") as run:
                await all_in.wait()
                await run.steer(f"steer{i}")
                results[i] = (await run.wait()).content

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)
            await all_in.wait()
            assert rt.stats().actors == n + 2  # every run an actor, beside the provider and the executor
            await anyio.sleep(0.01)  # every run's steer is in (each sent right after all_in)
            opened.set()
    assert results == {i: f"city{i}|steer{i}" for i in range(n)}


# -- with delegation and handoffs ---------------------------------------------------------------------------


async def test_steering_a_parent_does_not_reach_its_child() -> None:
    gate = Gate()
    child_seen: list[LLMRequest] = []

    def child_model(request: LLMRequest) -> Any:
        child_seen.append(request)
        if len(child_seen) == 1:
            return [ToolCall("k1", "lookup", {"city": "Oslo"})]
        return "child done"

    child = Agent(ScriptedProvider(child_model), tools=[gate.tool()], name="child")
    parent_seen: list[LLMRequest] = []

    def parent_model(request: LLMRequest) -> Any:
        parent_seen.append(request)
        if len(parent_seen) == 1:
            return [ToolCall("p1", "child", {"input": "go"})]
        return "parent: " + " | ".join(_users(request))

    parent = Agent(ScriptedProvider(parent_model), tools=[child.as_tool()], name="parent")
    async with Runtime():
        async with parent.stream("start") as run:
            await gate.entered.wait()
            await run.steer("parent only")
            gate.open.set()
            result = await run.wait()
    assert all("parent only" not in _users(r) for r in child_seen)
    assert result.content == "parent: start | parent only"


async def test_a_run_nobody_listens_to_becomes_an_actor_when_first_addressed() -> None:
    entered, opened, ids = anyio.Event(), anyio.Event(), []
    seen: list[LLMRequest] = []

    @tool
    async def lookup(city: str, ctx: ToolContext) -> str:
        """Look a city up."""
        ids.append(ctx.run_id)
        entered.set()
        await opened.wait()
        return city

    async with Runtime() as rt:
        agent = Agent(_one_call_then_answer(seen), tools=[lookup])  # no recorder, no stream
        results: list[Any] = []

        async def start() -> None:
            results.append(await agent.run("weather?"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(start)
            await entered.wait()
            assert rt.stats().actors == 2  # registered, not spawned: nobody addressed it yet
            run_id = ids[0]
            assert run_id is not None
            handle = rt.run_ref(run_id)
            await handle.steer("also Oslo")
            assert rt.stats().actors == 3 and rt.stats().busy == 2  # now its actor holds the run as a handler
            opened.set()
        assert results[0].ok and _users(seen[1]) == ["weather?", "also Oslo"]
        assert rt.stats().actors == 2


async def test_a_steer_after_a_handoff_reaches_the_new_agent() -> None:
    gate = Gate()
    target_seen: list[LLMRequest] = []

    def target_model(request: LLMRequest) -> Any:
        target_seen.append(request)
        if len(target_seen) == 1:
            return [ToolCall("t1", "lookup", {"city": "Oslo"})]
        return "target: " + " | ".join(_users(request))

    target = Agent(ScriptedProvider(target_model), tools=[gate.tool()], name="target")
    triage = Agent(ScriptedProvider([ToolCall("h1", "transfer_to_target", {})]), handoffs=[target], name="triage")
    async with Runtime():
        async with triage.stream("help") as run:
            await gate.entered.wait()
            assert run.state().agent == "target"
            await run.steer("in Norwegian")
            gate.open.set()
            result = await run.wait()
    assert result.agent == "target" and _users(target_seen[1])[-1] == "in Norwegian"
    assert result.content.endswith("in Norwegian")


async def test_each_runtime_finds_only_its_own_runs_when_two_run_at_once() -> None:
    # The registry of live runs is a service of each runtime (the last one looked up is remembered): runs of
    # two runtimes started one after the other are each found in their own runtime and never in the other.
    entered = {"a": anyio.Event(), "b": anyio.Event()}
    opened = anyio.Event()
    ids: dict[str, str | None] = {}

    @tool
    async def lookup(city: str, ctx: ToolContext) -> str:
        """Look a city up."""
        ids[city] = ctx.run_id
        entered[city].set()
        await opened.wait()
        return city

    def model(request: LLMRequest) -> Any:
        found = [m.content for m in request.messages if m.role == "tool"]
        if found:  # the answer names the run's city and the steers it took
            return f"done: {found[0]} {_users(request)[1:]}"
        return [ToolCall("c1", "lookup", {"city": request.messages[-1].content})]

    agent = Agent(ScriptedProvider(model), tools=[lookup])
    results: list[Any] = []
    async with Runtime() as rt_a, Runtime() as rt_b:

        async def start(rt: Runtime, city: str) -> None:
            results.append(await agent.run(city, runtime=rt))

        async with anyio.create_task_group() as tg:
            tg.start_soon(start, rt_a, "a")
            await entered["a"].wait()
            tg.start_soon(start, rt_b, "b")
            await entered["b"].wait()
            run_a, run_b = ids["a"], ids["b"]
            assert run_a is not None and run_b is not None
            assert rt_b.run_ref(run_b).run_id == run_b and rt_a.run_ref(run_a).run_id == run_a
            with pytest.raises(RunNotFoundError):
                rt_a.run_ref(run_b)
            with pytest.raises(RunNotFoundError):
                rt_b.run_ref(run_a)
            await rt_a.run_ref(run_a).steer("only a")
            opened.set()
        assert run_a is not None  # again: to mypy, the task group's exit may have swallowed an error before it
        with pytest.raises(RunNotFoundError):
            rt_a.run_ref(run_a)  # finished: it left its runtime's registry
    assert sorted(r.content for r in results) == ["done: a ['only a']", "done: b []"]
    assert run_a is not None  # again, past the runtimes' exits
    async with Runtime() as rt_c:  # a runtime opened after those exited knows none of their runs
        with pytest.raises(RunNotFoundError):
            rt_c.run_ref(run_a)
