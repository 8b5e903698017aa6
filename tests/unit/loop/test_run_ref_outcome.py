"""``rt.run_ref(run_id)`` on a run started with ``agent.run``: its handle waits for the run's own outcome.

A run ended by its frame's own cancellation — cancelled through that handle, or past its deadline — returns a
result to ``agent.run`` (``cancelled=True``; ``RunDeadlineExceededError``), but its live run was ended before that
result was made: ``handle.wait()`` and ``handle.result`` raised "the run ended without a result", and steers left
unread by a deadline were reported ``stopped`` (a cancelled run's still are, as a stream's ``cancel()`` reports
them).  A run whose own actor is stopped raises :class:`ActorStopped` to ``agent.run``: its handle says it ended
without a result.  Asyncio and trio, virtual time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from agentactors import Agent, Runtime
from agentactors.errors import ActorStopped, RunDeadlineExceededError
from agentactors.events import InMemoryRecorder
from agentactors.loop.live import live_run, live_runs
from agentactors.messages import ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool
async def slow(x: int) -> str:
    """A tool that takes its time."""
    await anyio.sleep(5)
    return f"slow {x}"


Act = Callable[[Runtime, Any, str], Awaitable[None]]


async def _nothing(rt: Runtime, handle: Any, run_id: str) -> None:
    return None


async def _cancel(rt: Runtime, handle: Any, run_id: str) -> None:
    handle.cancel()


async def _halt(rt: Runtime, handle: Any, run_id: str) -> None:
    live = live_run(rt, run_id)
    assert live is not None and live.ref is not None  # spawned: the steer was sent to it
    await rt.stop(live.ref, drain=False)


async def _run(act: Act, *, deadline: float | None = None, recorded: bool = True, steer: bool = True) -> Any:
    """``agent.run`` in a task, its handle found by ``rt.run_ref`` while its tool runs (a steer sent through it,
    never read), a waiter on the handle, then ``act``: ``(run's outcome, wait's outcome, handle, recorder)``."""
    rec = InMemoryRecorder()
    outcome: dict[str, Any] = {}
    async with Runtime() as rt:
        agent = Agent(
            ScriptedProvider([ToolCall("c1", "slow", {"x": 1}), "final"]),
            tools=[slow],
            recorders=[rec] if recorded else [],
        )

        async def go() -> None:
            try:
                outcome["run"] = await agent.run("hi", deadline=deadline)
            except Exception as exc:
                outcome["run"] = exc

        async def wait(handle: Any) -> None:
            try:
                outcome["wait"] = await handle.wait()
            except Exception as exc:
                outcome["wait"] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await anyio.sleep(0.2)  # in the tool
            (run_id,) = live_runs(rt)
            handle = rt.run_ref(run_id)
            tg.start_soon(wait, handle)
            if steer:
                await handle.steer("also this")
            await anyio.sleep(0.1)
            await act(rt, handle, run_id)
        assert live_runs(rt) == {}, "the run left the registry"
        assert rt.stats().actors == 2, "its actor, if it had one, left with it"
    return outcome["run"], outcome["wait"], handle, rec


def _unread(rec: InMemoryRecorder) -> list[dict[str, Any]]:
    return [dict(e.data) for e in rec.of_type("run.steers_unread")]


@pytest.mark.parametrize("recorded", [True, False], ids=["spawned", "latent"])
@pytest.mark.parametrize("steer", [True, False], ids=["steered", "plain"])
async def test_a_run_cancelled_through_its_run_ref_handle_is_waited_for_as_cancelled(
    recorded: bool, steer: bool
) -> None:
    ran, waited, handle, rec = await _run(_cancel, recorded=recorded, steer=steer)
    assert ran.cancelled and ran.error is None
    assert waited is ran and handle.result is ran and handle.done
    if recorded:
        assert _unread(rec) == ([{"count": 1, "reason": "stopped"}] if steer else [])


@pytest.mark.parametrize("recorded", [True, False], ids=["spawned", "latent"])
@pytest.mark.parametrize("steer", [True, False], ids=["steered", "plain"])
async def test_a_run_past_its_deadline_is_waited_for_with_its_deadline_error(recorded: bool, steer: bool) -> None:
    ran, waited, handle, rec = await _run(_nothing, deadline=1.0, recorded=recorded, steer=steer)
    assert isinstance(ran.error, RunDeadlineExceededError) and not ran.cancelled
    assert waited is ran and handle.result is ran and handle.done
    assert anyio.current_time() == pytest.approx(1.0)
    if recorded:
        assert _unread(rec) == ([{"count": 1, "reason": "deadline"}] if steer else [])
        types = [e.type for e in rec.events]
        assert types.index("run.steers_unread") < types.index("run.finished") if steer else True


@pytest.mark.parametrize("recorded", [True, False], ids=["spawned", "latent"])
async def test_a_run_whose_actor_was_stopped_raises_and_its_handle_says_it_ended_without_a_result(
    recorded: bool,
) -> None:
    ran, waited, handle, rec = await _run(_halt, recorded=recorded)
    assert isinstance(ran, ActorStopped) and "stopped while it ran" in str(ran)
    assert isinstance(waited, RuntimeError) and "ended without a result" in str(waited)
    with pytest.raises(RuntimeError, match="ended without a result"):
        _ = handle.result
    assert handle.done
    if recorded:
        assert _unread(rec) == [{"count": 1, "reason": "stopped"}]


async def test_a_run_that_ends_on_its_answer_is_waited_for_as_before() -> None:
    ran, waited, handle, rec = await _run(_nothing, steer=False)
    assert ran.ok and ran.content == "final" and waited is ran and handle.result is ran
    assert _unread(rec) == []


@pytest.mark.parametrize("recorded", [True, False], ids=["spawned", "latent"])
async def test_a_run_cancelled_through_its_handle_and_by_its_caller_at_once_ends_without_a_result(
    recorded: bool,
) -> None:
    """The caller's cancellation wins (the run raises it): the live run still ends, and its actor retires."""
    rec = InMemoryRecorder()
    outcome: dict[str, Any] = {}
    async with Runtime() as rt:
        agent = Agent(
            ScriptedProvider([ToolCall("c1", "slow", {"x": 1}), "final"]),
            tools=[slow],
            recorders=[rec] if recorded else [],
        )
        caller = anyio.CancelScope()

        async def go() -> None:
            with caller:
                outcome["run"] = await agent.run("hi")

        async def wait(handle: Any) -> None:
            try:
                outcome["wait"] = await handle.wait()
            except Exception as exc:
                outcome["wait"] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await anyio.sleep(0.2)
            (run_id,) = live_runs(rt)
            handle = rt.run_ref(run_id)
            tg.start_soon(wait, handle)
            await handle.steer("also this")
            await anyio.sleep(0.1)
            handle.cancel()
            caller.cancel()
        assert caller.cancelled_caught and "run" not in outcome
        assert isinstance(outcome["wait"], RuntimeError) and "ended without a result" in str(outcome["wait"])
        assert handle.done and live_runs(rt) == {} and rt.stats().actors == 2
    if recorded:
        assert _unread(rec) == [{"count": 1, "reason": "stopped"}]


async def test_steers_left_by_a_deadline_after_an_answer_are_unread_for_the_deadline_not_max_steps() -> None:
    """A deadline passed after an answer the run went on from (a steer came) ends the run ``bounded`` with that
    answer and the deadline's error: its unread steers are the deadline's, not ``max_steps``'."""
    writing, go_on, second = anyio.Event(), anyio.Event(), anyio.Event()
    calls: list[int] = []

    async def model(request: Any) -> str:
        calls.append(1)
        if len(calls) == 1:
            writing.set()
            await go_on.wait()
            return "first answer"
        second.set()
        await anyio.sleep(10)
        return "second answer"

    rec = InMemoryRecorder()
    outcome: dict[str, Any] = {}
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model), recorders=[rec])

        async def go() -> None:
            outcome["run"] = await agent.run("hi", deadline=5.0)

        async def wait(handle: Any) -> None:
            outcome["wait"] = await handle.wait()

        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await writing.wait()
            (run_id,) = live_runs(rt)
            handle = rt.run_ref(run_id)
            tg.start_soon(wait, handle)
            await handle.steer("also this")
            go_on.set()
            await second.wait()  # the run went on for the steer
            await handle.steer("and that")
    ran = outcome["run"]
    assert ran.bounded and ran.content == "first answer" and isinstance(ran.error, RunDeadlineExceededError)
    assert outcome["wait"] is ran
    assert _unread(rec) == [{"count": 1, "reason": "deadline"}]
