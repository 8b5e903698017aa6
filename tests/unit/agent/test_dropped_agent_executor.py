"""An agent dropped while its runtime runs takes its tool executor with it.

A service that makes an agent per request (a per-user prompt, per-request tools or recorders) in one long-lived
runtime must not keep one executor per request — and with it the tools and whatever they close over (a DB handle,
a user object) — until the runtime exits: the runtime holds its agents weakly (docs/actors.md), so the executor
is stopped once the agent is collected.  An agent still held keeps its executor; a run in flight holds its agent.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.messages import ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import Tool, tool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class _User:
    """What a per-request tool closes over (a user object, a DB handle)."""


def _item(request: Any) -> Any:
    return "done" if request.messages[-1].role == "tool" else [ToolCall("c", "whoami", {})]


def _tool_for(user: _User) -> Tool[Any, Any]:
    @tool
    async def whoami() -> str:
        """Who asks."""
        return repr(user)

    return whoami


async def _settle() -> None:
    gc.collect()
    for _ in range(5):
        await anyio.lowlevel.checkpoint()


async def test_agents_made_and_dropped_per_request_leave_no_executor_behind() -> None:
    shared = ScriptedProvider(_item, record=False)
    users: list[weakref.ref[_User]] = []
    async with Runtime() as rt:
        await Agent(shared, tools=[_tool_for(_User())], system="warm").run("q")  # the shared provider's actor
        await _settle()
        baseline = rt.stats().actors
        for i in range(20):
            user = _User()
            users.append(weakref.ref(user))
            result = await Agent(shared, tools=[_tool_for(user)], system=f"You help user {i}.").run("q")
            assert result.content == "done"
            del user
        await _settle()
        assert rt.stats().actors == baseline
        assert [u for u in users if u() is not None] == []  # the tools' closures were freed with their executors


async def test_an_agent_still_held_keeps_its_executor() -> None:
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(_item, record=False), tools=[_tool_for(_User())])
        await agent.run("q")
        count = rt.stats().actors
        await _settle()
        assert rt.stats().actors == count
        assert (await agent.run("again")).content == "done"  # the executor it cached still answers
        del agent
        await _settle()
        assert rt.stats().actors == count - 2  # its executor, and its provider's actor (no other agent ran with it)


async def test_a_run_in_flight_keeps_its_agent_and_executor() -> None:
    entered, release = anyio.Event(), anyio.Event()

    @tool
    async def whoami() -> str:
        """Who asks."""
        entered.set()
        await release.wait()
        return "me"

    results: list[Any] = []

    async def one() -> None:
        # Nobody but the run holds the agent.
        results.append(await Agent(ScriptedProvider(_item, record=False), tools=[whoami]).run("q"))

    async with Runtime() as rt, anyio.create_task_group() as tg:
        tg.start_soon(one)
        await entered.wait()
        count = rt.stats().actors
        await _settle()
        assert rt.stats().actors == count  # not stopped under the run
        release.set()
    assert [r.content for r in results] == ["done"]


async def test_a_dropped_agent_does_not_keep_its_runtime_alive() -> None:
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(_item, record=False), tools=[_tool_for(_User())])
        await agent.run("q")
    held = weakref.ref(rt)
    del rt
    await _settle()
    assert (await agent.run("q", runtime=None)).content == "done"  # a private runtime: the agent still works
    await _settle()
    assert held() is None  # the agent's cache forgot it; its executor's watch is no reference to it
