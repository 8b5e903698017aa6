"""MCP at its edges, with real stdio servers: a listing bounded by the run's deadline (and cancellable), a
large listing that does not hold the event loop, and a server tool whose name another source of tools
holds already (a handoff, the output tool) — ``ToolNameClashError`` naming both, when the run starts.
Both backends."""

from __future__ import annotations

import dataclasses
import time

import anyio
import pytest

from agentactors import Agent, Runtime, ScriptedProvider, ToolOutput
from agentactors.tools import ToolNameClashError, ToolsetError
from tests.support.loop_lag import LoopLag
from tests.support.mcp_helpers import stdio_server

pytestmark = pytest.mark.anyio


async def test_a_server_that_never_lists_is_bounded_by_the_runs_deadline() -> None:
    server = stdio_server(name="silent", env={"MCP_TEST_SILENT_LISTING": "1"})
    agent = Agent(ScriptedProvider(["never"]), toolsets=[server])
    async with Runtime():
        started = time.monotonic()
        with pytest.raises(ToolsetError, match=r"not listed within the run's deadline \(2 s left\)"):
            await agent.run("x", deadline=2)
        # Not the server's 60 s: the deadline, plus the time a loaded machine takes to notice.
        assert time.monotonic() - started < 20


async def test_a_listing_is_cancelled_with_its_caller() -> None:
    server = stdio_server(name="silent", env={"MCP_TEST_SILENT_LISTING": "1"})
    agent = Agent(ScriptedProvider(["never"]), toolsets=[server])
    async with Runtime():
        started = time.monotonic()
        with anyio.move_on_after(1.5) as scope:
            await agent.run("x")
        assert scope.cancelled_caught
        assert time.monotonic() - started < 20


async def test_thousands_of_listed_tools_do_not_hold_the_event_loop() -> None:
    server = stdio_server(name="many", env={"MCP_TEST_MANY_TOOLS": "1000"})
    lag = LoopLag()

    async with Runtime() as rt, anyio.create_task_group() as tg:
        tg.start_soon(lag.watch)
        tools = await server.list_tools(rt)
        tg.cancel_scope.cancel()
    assert len([t for t in tools if t.name.startswith("extra_")]) == 1000
    # Checking 1,000 schemas on the loop held it 2.5 s or more; in a worker thread the loop keeps ticking.
    # (The SDK still decodes the listing's JSON on the loop: a bound generous enough for a loaded machine.)
    assert lag.worst < 1.5, f"the event loop was held {lag.worst:.2f} s at once"


@dataclasses.dataclass
class Answer:
    text: str


async def test_a_server_tool_named_like_a_handoff_or_the_output_tool_is_a_clash_naming_both() -> None:
    add = Agent(ScriptedProvider(["never"]), name="add")
    handing = Agent(
        ScriptedProvider(["never"]), handoffs=[add], toolsets=[stdio_server(name="srv", tool_prefix="transfer_to_")]
    )
    typed = Agent(
        ScriptedProvider(["never"]), output_type=ToolOutput(Answer, name="add"), toolsets=[stdio_server(name="srv")]
    )
    async with Runtime():
        with pytest.raises(
            ToolNameClashError,
            match=r"'transfer_to_add': one from the handoff to agent 'add', one from toolset 'srv'",
        ):
            await handing.run("x")
        with pytest.raises(ToolNameClashError, match=r"'add': one from the output tool .*, one from toolset 'srv'"):
            await typed.run("x")
