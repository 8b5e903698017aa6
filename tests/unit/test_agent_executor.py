"""A run asks its agent's own tool executor in the run's task, with everything an ask through the mailbox gives."""

from __future__ import annotations

import contextvars

import anyio
import pytest

from agentactors.actors.provider import ProviderActor
from agentactors.actors._cell import CURRENT_RUNTIME
from agentactors.actors.runtime import Runtime
from agentactors.agent import Agent
from agentactors.errors import ActorStopped
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
