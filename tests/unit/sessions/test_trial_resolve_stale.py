"""A resolve in a runtime whose copy of the session holds an older pause reads the store before it refuses.

Two runtimes share a store: the first pauses, the second reads that pause (``refresh``), then the first resolves it
and pauses again on a new call.  The second runtime's copy still shows the first pause; decisions for the pause the
store holds must not be refused against that stale copy (they were: a ``ValueError`` naming the old calls, for
every retry, until the session deactivated) — as a turn reads the store again before it refuses one.

Virtual time on both backends (``MemoryStore``: no threads, no sockets).
"""

from __future__ import annotations

import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.messages import LLMRequest, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore
from agentactors.tools.registry import tool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool(requires_approval=True)
async def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def model(request: LLMRequest) -> str | ToolCall:
    last = request.messages[-1]
    if last.role == "user" and last.content.startswith("refund"):
        return ToolCall(f"call-{len(request.messages)}", "refund", {"order": "42"})
    return f"done: {last.content}"


async def test_a_stale_pause_in_this_runtime_does_not_refuse_the_decisions_of_the_stored_one() -> None:
    store = MemoryStore()
    agent = Agent(ScriptedProvider(model), tools=[refund], name="support")
    async with Runtime() as here, Runtime() as there:
        mine, theirs = here.session(agent, "user-1", store=store), there.session(agent, "user-1", store=store)
        await mine.send("refund order 42")
        await theirs.refresh()
        (old,) = theirs.pending_approvals
        await mine.resolve({old.id: True})
        await mine.send("refund it again")
        (new,) = mine.pending_approvals
        assert new.id != old.id and theirs.pending_approvals == (old,)  # the other runtime's copy is stale
        result = await theirs.resolve({new.id: True})
        assert result.content == "done: refunded 42" and not theirs.paused
        assert (await store.load("user-1")).paused is None  # type: ignore[union-attr]


async def test_decisions_that_fit_no_stored_pause_are_still_refused_and_nothing_is_claimed() -> None:
    store = MemoryStore()
    agent = Agent(ScriptedProvider(model), tools=[refund], name="support")
    async with Runtime() as rt:
        session = rt.session(agent, "user-1", store=store)
        await session.send("refund order 42")
        version = session.version
        with pytest.raises(ValueError, match="not pending"):
            await session.resolve({"call-unknown": True})
        with pytest.raises(TypeError, match="True, False or a reason"):
            await session.resolve({session.pending_approvals[0].id: 1})  # type: ignore[dict-item]
        assert session.paused and session.version == version  # nothing claimed
