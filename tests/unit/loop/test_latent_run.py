"""A run nobody can address when it starts (no stream, no recorder) holds no actor until something addresses it.

It is registered by id as a :class:`~agentactors.loop.live.LatentRun`; ``rt.run_ref`` — or an approval waited
for in place — makes its :class:`~agentactors.loop.live.RunActor` there and then, mid-run, and from then on the
run is steered, interrupted, cancelled and inspected as one that had it from the start.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors import Agent, Runtime
from agentactors.errors import RunInterruptedError, RunNotFoundError
from agentactors.loop.live import RunActor, each_live_run, live_run, live_runs
from agentactors.messages import LLMRequest, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class _Model:
    """Model -> add -> model; its first call waits on ``open`` (``waiting`` set meanwhile)."""

    def __init__(self) -> None:
        self.waiting = anyio.Event()
        self.open = anyio.Event()
        self.seen: list[LLMRequest] = []

    async def __call__(self, request: LLMRequest) -> Any:
        self.seen.append(request)
        last = request.messages[-1]
        if last.role == "tool":
            return f"The answer is {last.content}."
        self.waiting.set()
        await self.open.wait()
        return [ToolCall("c1", "add", {"a": 2, "b": 3})]


class _Waiting:
    """A plain run (no stream, no recorder) started in a task and waiting on its first model call."""

    def __init__(self, rt: Runtime, model: _Model, run_id: str, results: list[Any]) -> None:
        self.rt, self.model, self.run_id, self.results = rt, model, run_id, results


@asynccontextmanager
async def _waiting_run() -> AsyncIterator[_Waiting]:
    """Yields while the run waits on its model; the block's end waits for the run (open ``model.open`` in it)."""
    model = _Model()
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model, record=False), tools=[add])
        results: list[Any] = []

        async def run() -> None:
            results.append(await agent.run("2 + 3?"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await model.waiting.wait()
            (run_id,) = live_runs(rt)
            yield _Waiting(rt, model, run_id, results)
        assert live_runs(rt) == {}, "the run left the registry"
        assert rt.stats().actors == 2, "its actor, if it had one, left with it"


async def test_a_run_nobody_addresses_never_holds_an_actor_and_leaves_the_registry() -> None:
    async with _waiting_run() as w:
        assert not isinstance(live_runs(w.rt)[w.run_id], RunActor)
        assert w.rt.stats().actors == 2  # its provider and executor: no actor for the run
        w.model.open.set()
    assert w.results[0].content == "The answer is 5."


async def test_run_ref_makes_the_actor_mid_run_and_a_steer_reaches_the_model() -> None:
    async with _waiting_run() as w:
        rt = w.rt
        handle = rt.run_ref(w.run_id)
        assert isinstance(live_runs(rt)[w.run_id], RunActor) and handle is rt.run_ref(w.run_id)
        assert handle.state().step == 1 and handle.state().run_id == w.run_id
        await handle.steer("and then double it")
        assert rt.stats().actors == 3  # spawned by its first control message, as any run's actor
        w.model.open.set()
        finished = await handle.wait()
        with pytest.raises(RunNotFoundError):
            rt.run_ref(w.run_id)
    assert w.results == [finished] and finished.ok
    assert [m.content for m in w.model.seen[1].messages if m.role == "user"][-1] == "and then double it"


async def test_an_interrupt_through_a_handle_made_mid_run_ends_it_at_the_boundary() -> None:
    async with _waiting_run() as w:
        await w.rt.run_ref(w.run_id).interrupt("enough")
        w.model.open.set()
    assert isinstance(w.results[0].error, RunInterruptedError) and len(w.model.seen) == 1


async def test_a_cancel_through_a_handle_made_mid_run_cancels_it() -> None:
    async with _waiting_run() as w:
        w.rt.run_ref(w.run_id).cancel()
    assert w.results[0].cancelled and w.rt.stats().busy == 0


async def test_the_registry_readers_make_each_actor_once() -> None:
    async with _waiting_run() as w:
        rt = w.rt
        (made,) = each_live_run(rt)
        assert live_run(rt, w.run_id) is made and each_live_run(rt) == [made] and made.run_id == w.run_id
        assert live_run(rt, "run-unknown") is None
        w.model.open.set()
    assert w.results[0].ok


async def test_an_approval_waited_for_in_place_makes_the_actor_and_is_decided_through_run_ref() -> None:
    @tool(requires_approval=True, approval="wait")
    async def transfer(amount: int) -> str:
        """Move money."""
        return f"moved {amount}"

    def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        return f"done: {last.content}" if last.role == "tool" else [ToolCall("t1", "transfer", {"amount": 5})]

    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model, record=False), tools=[transfer])
        results: list[Any] = []

        async def run() -> None:
            results.append(await agent.run("pay"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            # Nothing addressed the run: the wait itself made its actor (a latent run could not be decided on).
            while not (made := [e for e in live_runs(rt).values() if isinstance(e, RunActor)]):  # noqa: ASYNC110 - polling what the run registers, on virtual time
                await anyio.sleep(0.01)
            assert [c.id for c in made[0].snapshot().pending] == ["t1"] and made[0].run_id is not None
            await rt.run_ref(made[0].run_id).approve("t1")
        assert results[0].ok and results[0].content == "done: moved 5" and live_runs(rt) == {}
