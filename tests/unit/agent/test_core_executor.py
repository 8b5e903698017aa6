"""A run asks its agent's own tool executor with an ordinary ask, which runs the step in the run's task.

Everything an ask gives comes with it: contextvar isolation, the actor's runtime as ``Runtime.current()``,
``ActorStopped`` from a stopped actor — and a tool step that ``rt.stats()``, ``rt.stop()`` and the runtime's
exit see like any running handler.
"""

from __future__ import annotations

import contextvars
from typing import Any

import anyio
import pytest

from agentactors.actors._cell import CURRENT_RUNTIME
from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.errors import ActorStopped
from agentactors.gateway.provider import ProviderActor
from agentactors.messages import ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool

pytestmark = pytest.mark.anyio

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


def _script() -> ScriptedProvider:
    return ScriptedProvider(
        lambda request: "done" if request.messages[-1].role == "tool" else [ToolCall("c", "probe", {})]
    )


async def test_a_tools_contextvar_changes_stay_its_own_and_it_sees_its_runtime() -> None:
    seen: list[object] = []

    @tool
    async def probe() -> str:
        seen.append(MARK.get())
        MARK.set("set by the tool")
        seen.append(Runtime.current())
        return "ok"

    MARK.set("the caller's")
    async with Runtime() as rt:
        agent = Agent(_script(), tools=[probe])
        assert (await agent.run("q")).content == "done"
        assert (await agent.run("q")).content == "done"
        assert MARK.get() == "the caller's"
        assert seen == ["the caller's", rt, "the caller's", rt]


async def test_a_stopped_tools_actor_answers_as_an_ask_would() -> None:
    @tool
    async def probe() -> str:
        return "ok"

    async with Runtime() as rt:
        agent = Agent(_script(), tools=[probe])
        assert (await agent.run("q")).content == "done"
        bound = agent._bind(rt)
        assert bound.tools is not None
        await rt.stop(bound.tools)
        with pytest.raises(ActorStopped):
            await agent.run("q")


async def test_a_run_hosted_by_the_providers_runtime_asks_through_the_mailbox() -> None:
    seen: list[object] = []

    @tool
    async def probe() -> str:
        seen.append(Runtime.current())
        return "ok"

    async with Runtime() as rt:
        ref = rt.spawn(ProviderActor(_script()))
        agent = Agent(ref, tools=[probe])

        async def outside() -> None:
            # This task's own context, where no runtime is current: the provider's runtime hosts the run.
            CURRENT_RUNTIME.set(None)
            assert Runtime.current() is None
            assert (await agent.run("q")).content == "done"

        async with anyio.create_task_group() as tg:
            tg.start_soon(outside)
        assert seen == [rt]


# -- the tool step is a handler like any other: stats(), stop() and the runtime's exit see it ----------


def _slow_tool(started: anyio.Event, cancelled: list[str], release: anyio.Event | None = None) -> Any:
    @tool
    async def probe() -> str:
        started.set()
        try:
            if release is None:
                await anyio.sleep_forever()
            else:
                await release.wait()
        except anyio.get_cancelled_exc_class():
            cancelled.append("probe")
            raise
        return "ok"

    return probe


async def test_stats_see_a_running_tool_step_run_in_the_runs_own_task() -> None:
    cancelled: list[str] = []
    started, release = anyio.Event(), anyio.Event()
    async with Runtime() as rt:
        agent = Agent(_script(), tools=[_slow_tool(started, cancelled, release)])
        results: list[str] = []

        async def run() -> None:
            results.append((await agent.run("q")).content)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            stats = rt.stats()
            assert (stats.busy, stats.tasks, stats.queued) == (1, 0, 0)  # busy, and no worker task: direct
            release.set()
        assert results == ["done"] and rt.stats().busy == 0


async def test_stop_cancels_a_running_tool_step_and_the_run_raises_actor_stopped() -> None:
    started = anyio.Event()
    cancelled: list[str] = []
    async with Runtime() as rt:
        agent = Agent(_script(), tools=[_slow_tool(started, cancelled)])
        errors: list[BaseException] = []

        async def run() -> None:
            try:
                await agent.run("q")
            except ActorStopped as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            tools = agent._bind(rt).tools
            assert tools is not None
            await rt.stop(tools, drain=False)
        assert cancelled == ["probe"] and len(errors) == 1
        assert rt.stats().busy == 0


async def test_a_draining_stop_waits_for_the_running_tool_step() -> None:
    cancelled: list[str] = []
    started, release = anyio.Event(), anyio.Event()
    async with Runtime() as rt:
        agent = Agent(_script(), tools=[_slow_tool(started, cancelled, release)])
        results: list[str] = []
        stopped = anyio.Event()

        async def run() -> None:
            results.append((await agent.run("q")).content)

        async def stop() -> None:
            tools = agent._bind(rt).tools
            assert tools is not None
            await rt.stop(tools)
            stopped.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            tg.start_soon(stop)
            await anyio.wait_all_tasks_blocked()
            assert not stopped.is_set()  # the tool step holds the executor's slot
            release.set()
        assert stopped.is_set() and results == ["done"] and cancelled == []


@pytest.mark.virtual_time
async def test_leaving_the_runtime_drains_then_cancels_a_tool_step_running_in_a_task_of_its_own() -> None:
    started = anyio.Event()
    cancelled: list[str] = []
    outcome: list[str] = []
    async with anyio.create_task_group() as tg:  # the run's task is not the runtime's
        async with Runtime(drain_timeout=2.0):
            agent = Agent(_script(), tools=[_slow_tool(started, cancelled)])

            async def run() -> None:
                try:
                    await agent.run("q")
                except ActorStopped:
                    outcome.append("stopped")

            tg.start_soon(run)
            await started.wait()
            left = anyio.current_time()
        assert anyio.current_time() - left == pytest.approx(2.0)  # drained for its timeout, then cancelled
    assert cancelled == ["probe"] and outcome == ["stopped"]


# -- once the actors started, a run's asks go through its frame (actors/frame.py): a halt still reaches them --


async def test_stop_cancels_the_tool_step_of_a_run_whose_actors_had_started() -> None:
    started, cancelled = anyio.Event(), []
    calls: list[int] = []

    @tool
    async def probe() -> str:
        calls.append(1)
        if len(calls) > 1:
            started.set()
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                cancelled.append("probe")
                raise
        return "ok"

    async with Runtime() as rt:
        agent = Agent(_script(), tools=[probe])
        assert (await agent.run("q")).content == "done"  # starts both actors
        errors: list[str] = []

        async def run() -> None:
            try:
                await agent.run("q")
            except ActorStopped as exc:
                errors.append(str(exc))

        with anyio.fail_after(5):  # a halt that missed the tool would leave the run waiting forever
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await started.wait()
                tools = agent._bind(rt).tools
                assert tools is not None
                await rt.stop(tools, drain=False)
        assert tools is not None  # again: to mypy, the task group's exit may have swallowed an error before it
        assert cancelled == ["probe"] and errors == [f"actor {tools.name!r} was stopped while handling the message"]
        assert rt.stats().busy == 0


async def test_stop_cancels_the_model_call_of_a_run_whose_actors_had_started() -> None:
    waiting = anyio.Event()
    calls: list[int] = []

    async def model(request: Any) -> str:
        calls.append(1)
        if len(calls) > 1:
            waiting.set()
            await anyio.sleep_forever()
        return "hi"

    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model))
        assert (await agent.run("q")).content == "hi"
        results: list[Any] = []

        async def run() -> None:
            results.append(await agent.run("q"))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await waiting.wait()
                await rt.stop(agent._bind(rt).provider, drain=False)
        (result,) = results
        # As any provider failure: the run's failed result, the ActorStopped classified.
        assert result.generation_failed and result.error is not None
        stopped = "ActorStoppedError: actor 'provider:scripted' was stopped while handling the message"
        assert stopped in str(result.error)
        assert rt.stats().busy == 0


async def test_a_run_cancelled_between_its_steps_starts_no_further_step() -> None:
    # A frame's asks are no cancellation points: the loop checks before each step instead.  Here nothing
    # waits (a zero-latency model, a tool that returns at once), so only that check can stop the run.
    calls: list[int] = []
    armed: list[anyio.CancelScope] = []

    @tool
    async def probe() -> str:
        if armed:
            armed[0].cancel()
        return "ok"

    def model(request: Any) -> Any:
        calls.append(1)
        return "done" if request.messages[-1].role == "tool" else [ToolCall("c", "probe", {})]

    async with Runtime():
        agent = Agent(ScriptedProvider(model), tools=[probe])
        assert (await agent.run("warm")).content == "done"
        calls.clear()
        with anyio.CancelScope() as scope:
            armed.append(scope)
            await agent.run("q")
        assert scope.cancelled_caught and calls == [1]  # the step after the tool step never started
        with anyio.CancelScope() as scope:
            scope.cancel()
            await agent.run("q")
        assert scope.cancelled_caught and calls == [1]  # a run started cancelled asks nothing


async def test_a_halt_that_a_model_call_swallowed_still_ends_the_run_at_its_next_step() -> None:
    # The provider's handler catches the halt's cancellation and answers anyway: the ask cannot say
    # ActorStopped, but the run's frame stays cancelled, so the check before the next step ends the run
    # there — with the same failure a halt gives a model call.
    waiting = anyio.Event()
    calls: list[int] = []

    @tool
    async def probe() -> str:
        return "ok"

    async def model(request: Any) -> Any:
        calls.append(1)
        if request.messages[-1].role == "tool":
            return "done"
        if len(calls) > 2:
            waiting.set()
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                return [ToolCall("c", "probe", {})]  # a handler that will not be stopped
        return [ToolCall("c", "probe", {})]

    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model), tools=[probe])
        assert (await agent.run("warm")).content == "done"
        results: list[Any] = []

        async def run() -> None:
            results.append(await agent.run("q"))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await waiting.wait()
                await rt.stop(agent._bind(rt).provider, drain=False)
        (result,) = results
        assert result.generation_failed and "ActorStopped" in str(result.error)
        assert len(calls) == 3  # the step after the swallowed halt never asked the model
