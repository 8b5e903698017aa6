"""Tools from a real MCP server over stdio (a subprocess written with the SDK's server API), on both backends.

Each test starts its own server process (a second or so): the process's lifecycle is what several of
them check.  The model is a ScriptedProvider: what is under test is the path from a tool call to the
server and back, through the agent's ToolExecutorActor.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    ResultCeiling,
    Runtime,
    ScriptedProvider,
    ToolCall,
    tool,
)
from agentactors.mcp import MCPServerStdio
from agentactors.tools import ToolNameClashError
from agentactors.tools.registry import Tool
from tests.support.mcp_helpers import events, offered, starts, statuses, stdio_server, tool_texts

pytestmark = pytest.mark.anyio


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _tool(server: MCPServerStdio, rt: Runtime, name: str) -> Tool[Any, Any]:
    """The toolset's tool ``name`` as the agent has it (to ask the server things from the test)."""
    return {t.name: t for t in await server.list_tools(rt)}[name]


async def _until(check: Any, *, within: float = 10.0) -> Any:
    """Poll ``check()`` (async) until it returns something truthy; fail past ``within`` seconds."""
    with anyio.fail_after(within):
        # The state is in another process: polling it is the way (no event to wait on).
        while not (value := await check()):  # noqa: ASYNC110
            await anyio.sleep(0.02)
    return value


async def test_an_agent_lists_and_calls_the_server_through_its_executor(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentactors.mcp")
    server = stdio_server(state=tmp_path, tool_prefix="t_", tool_filter=lambda name: name != "die")
    recorder = InMemoryRecorder()
    provider = ScriptedProvider(
        [
            [
                ToolCall("1", "t_search", {"query": "mcp", "filters": {"language": "py", "min_stars": 5}, "limit": 2}),
                ToolCall("2", "t_add", {"a": 2, "b": 3}),
            ],
            ToolCall("3", "t_fail", {"message": "no such repository"}),
            ToolCall("4", "t_rpc_error", {"message": "rate limited"}),
            ToolCall("5", "t_add", {"a": "two", "b": 3}),
            ToolCall("6", "t_picture", {}),
            ToolCall("7", "t_pid", {}),
            "done",
            ToolCall("8", "t_add", {"a": 40, "b": 2}),
            "again",
        ]
    )
    agent = Agent(
        provider,
        toolsets=[server],
        recorders=[recorder],
        max_steps=10,
        tool_policy=lambda call, ctx: "no process ids today" if call.name == "t_pid" else None,
    )
    async with Runtime():
        first = await agent.run("go")
        second = await agent.run("again")

    assert first.content == "done" and second.content == "again"
    texts = tool_texts(first)
    assert texts[0] == '{"query":"mcp","min_stars":5,"hits":["mcp-py-0","mcp-py-1"]}'  # structured, once
    assert texts[1] == "5"
    assert texts[2] == "Error: MCPToolError: Error executing tool fail: no such repository"  # isError
    assert texts[3] == "Error: MCPToolError: rate limited"  # a JSON-RPC error
    assert texts[4].startswith("Invalid arguments for tool 't_add'")  # validated here: never sent
    assert texts[5] == "[image: image/png, 24 bytes]"
    assert "denied by this agent's tool policy" in texts[6] and "no process ids today" in texts[6]
    assert tool_texts(second) == ["42"]
    finished = statuses(recorder)
    assert sorted(finished[:2]) == [("t_add", "ok"), ("t_search", "ok")]  # one step: they ran side by side
    assert finished[2:] == [
        ("t_fail", "error"),
        ("t_rpc_error", "error"),
        ("t_add", "invalid"),
        ("t_picture", "ok"),
        ("t_pid", "denied"),
        ("t_add", "ok"),
    ]
    # Offered to the model: prefixed, filtered, with the server's own JSON Schema.
    names = offered(provider.requests)[0]
    assert {"t_add", "t_search", "t_hang", "t_grow"} <= set(names) and "t_die" not in names
    assert all(name.startswith("t_") for name in names)
    search = next(spec for spec in provider.requests[0].tools if spec.name == "t_search")
    assert search.parameters["required"] == ["query", "filters"]
    assert search.parameters["properties"]["filters"] == {"$ref": "#/$defs/Filters"}
    assert search.description.startswith("Search repositories")
    # One connection for both runs: one process, one listing.
    assert starts(tmp_path) == 1
    assert len(events(recorder, "mcp.tools_listed")) == 1
    # The server's stderr went to the agentactors.mcp logger.
    logged = [r.getMessage() for r in caplog.records if r.name == "agentactors.mcp"]
    assert any("MCP server 'test' stderr: agentactors-test MCP server starting" in line for line in logged)


async def test_a_call_past_its_timeout_and_a_cancelled_run_cancel_the_call_on_the_server() -> None:
    server = stdio_server(timeout=1.0)
    recorder = InMemoryRecorder()
    script = [ToolCall("1", "hang", {"tag": "timed-out"}), "gave up", ToolCall("2", "hang", {"tag": "cancelled"})]
    provider = ScriptedProvider(script)
    agent = Agent(provider, toolsets=[server], recorders=[recorder])
    async with Runtime() as rt:
        result = await agent.run("wait for it")
        assert statuses(recorder) == [("hang", "timeout")]
        assert tool_texts(result) == ["Tool 'hang' timed out after 1 s and returned no result. "
                                      "Try narrower parameters or a smaller request."]
        running, cancellations = await _tool(server, rt, "running"), await _tool(server, rt, "cancellations")

        async with agent.stream("wait again") as run:
            async for event in run:
                if event.type == "tools.started":
                    await _until(lambda: _has(running, "cancelled"))  # the server is in the call now
                    run.cancel()
        assert run.result.cancelled
        assert statuses(recorder)[-1] == ("hang", "cancelled")
        # Both calls were cancelled on the server: the SDK sent notifications/cancelled.
        await _until(lambda: _has(cancellations, "cancelled"))
        assert await _has(cancellations, "timed-out")


async def _has(probe: Tool[Any, Any], tag: str) -> bool:
    return tag in str(await probe.invoke({}))


async def test_a_server_killed_mid_call_is_restarted_at_the_next_call_up_to_a_bound(tmp_path: Path) -> None:
    server = stdio_server(state=tmp_path, max_restarts=1)
    recorder = InMemoryRecorder()
    script = [ToolCall("1", "pid", {}), ToolCall("2", "die", {}), ToolCall("3", "pid", {}), ToolCall("4", "die", {}),
              ToolCall("5", "pid", {}), "done"]
    agent = Agent(ScriptedProvider(script), toolsets=[server], recorders=[recorder], max_steps=8)
    async with Runtime():
        result = await agent.run("survive")

    assert result.content == "done" and result.error is None  # never an exception out of the run
    first, died, second, died_again, refused = tool_texts(result)
    assert first.isdigit() and second.isdigit() and first != second  # a new process
    assert died.startswith("Error: MCPToolError: MCP server 'test' went away during the call")
    assert died.endswith("it is started again at the next call")
    assert died_again.startswith("Error: MCPToolError: MCP server 'test' went away")
    assert refused == (
        "Error: MCPToolError: MCP server 'test' is not available: MCP server 'test' is gone "
        "(the server closed the connection) and was restarted 1 time already (max_restarts=1)"
    )
    assert [s for _, s in statuses(recorder)] == ["ok", "error", "ok", "error", "error"]
    (restarted,) = events(recorder, "mcp.server_restarted")
    assert (restarted.server, restarted.restarts) == ("test", 1)
    assert restarted.reason == "the server closed the connection"
    assert restarted.run_id == result.run_id  # recorded in the run that restarted it
    assert starts(tmp_path) == 2


async def test_the_next_run_sees_the_tools_a_server_says_it_added() -> None:
    server = stdio_server()
    provider = ScriptedProvider([ToolCall("1", "grow", {"name": "fresh"}), "grown", ToolCall("2", "fresh", {}), "used"])
    agent = Agent(provider, toolsets=[server])
    async with Runtime() as rt:
        before = await server.list_tools(rt)
        await agent.run("grow a tool")
        # The list-changed notice arrives on its own: the toolset answers with a new listing then.
        after = await _until(lambda: _changed(server, rt, before))
        used = await agent.run("use it")
    assert "fresh" not in offered(provider.requests)[0]
    assert "fresh" in [t.name for t in after] and "fresh" in offered(provider.requests)[-1]
    assert tool_texts(used) == ["I am fresh"]


async def _changed(server: Any, rt: Runtime, before: Any) -> Any:
    tools = await server.list_tools(rt)
    return tools if tools is not before else None


async def test_a_large_result_is_refused_by_the_ceiling_and_the_operator_cap_truncates() -> None:
    # Twice the ceiling: the refusal does not depend on how far over it a result is.  Not the 10 MB
    # (test_mcp_http.py sends those): the SDK's stdio client re-joins and re-splits its buffer per chunk, so
    # its time grows with the square of the line — 10 MB took 10-20 s of a loaded two-core machine, 2 MB < 1 s.
    server = stdio_server(result_ceiling=ResultCeiling(1_000_000, narrow_by="chars"))
    recorder = InMemoryRecorder()
    script = [ToolCall("1", "big", {"chars": 2_000_000}), ToolCall("2", "big", {"chars": 5000}), "done"]
    agent = Agent(ScriptedProvider(script), toolsets=[server], recorders=[recorder], max_tool_result_chars=1000)
    async with Runtime():
        result = await agent.run("get it all")
    refused, truncated = tool_texts(result)
    assert refused.startswith("Result too large: big returned 2,000,000 chars, over its 1,000,000-char ceiling.")
    assert "'chars'" in refused
    assert truncated.startswith("[truncated: big returned 5,000 chars") and len(truncated) <= 1000
    assert statuses(recorder) == [("big", "invalid"), ("big", "ok")]
    (event,) = events(recorder, "tools.result_refused")
    assert (event.size, event.max_chars) == (2_000_000, 1_000_000)


async def test_a_tool_name_clash_is_an_error_naming_both_and_a_prefix_avoids_it() -> None:
    first, second = stdio_server(name="first"), stdio_server(name="second")

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    async with Runtime():
        with pytest.raises(ToolNameClashError, match=r"'add': one from toolset 'first', one from toolset 'second'"):
            await Agent(ScriptedProvider(["never"]), toolsets=[first, second]).run("x")
        plain_first = r"'add': one from a plain tool of the agent, one from toolset 'first'"
        with pytest.raises(ToolNameClashError, match=plain_first):
            await Agent(ScriptedProvider(["never"]), tools=[add], toolsets=[first]).run("x")
        prefixed = stdio_server(name="third", tool_prefix="third_")
        script = [[ToolCall("1", "third_add", {"a": 1, "b": 2}), ToolCall("2", "add", {"a": 2, "b": 2})], "done"]
        with_plain = await Agent(ScriptedProvider(script), tools=[add], toolsets=[prefixed]).run("x")
        with_first = await Agent(ScriptedProvider(script), toolsets=[first, prefixed]).run("x")
    assert tool_texts(with_plain) == tool_texts(with_first) == ["3", "4"]


async def test_the_runtime_closes_its_server_and_async_with_scopes_one_across_runtimes(tmp_path: Path) -> None:
    in_runtime = stdio_server()
    agent = Agent(ScriptedProvider([ToolCall("1", "pid", {}), "done"]), toolsets=[in_runtime])
    async with Runtime() as rt:
        pid = int(tool_texts(await agent.run("pid?"))[0])
        assert _alive(pid)
        assert rt.stats().tasks >= 1  # the connection's background task
    assert not _alive(pid)  # closed with the runtime (it did not hold up the exit's drain either)

    async with stdio_server(state=tmp_path) as scoped:
        for _ in range(2):
            agent = Agent(ScriptedProvider([ToolCall("1", "pid", {}), "done"]), toolsets=[scoped])
            async with Runtime():
                pid = int(tool_texts(await agent.run("pid?"))[0])
            assert _alive(pid)  # the block's connection outlives each runtime
    assert not _alive(pid)
    assert starts(tmp_path) == 1
