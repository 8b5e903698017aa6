"""MCP servers that misbehave at the protocol level, started for real over stdio, on both backends.

The test server of the other MCP tests is written with the SDK and behaves.  These servers are a few
lines of raw JSON-RPC (``RAW_SERVER``, its misbehaviour chosen by its argument), so they can do what the
SDK would never let a server do: list a tool whose schema is nested too deeply to check beside good ones,
list two tools of one name (and one tool twice), answer a call with a line that is not JSON and a result that is not a
``CallToolResult``, never answer a call (or answer it under another id), exit in the middle of a listing,
flood their stderr.  The standard: one bad tool or answer costs that tool or that call, never the
server's other tools, the session, or the run; nothing hangs.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ScriptedProvider, ToolCall
from agentactors.mcp import MCPServerStdio
from agentactors.tools import ToolsetError
from tests.support.mcp_helpers import offered, statuses, tool_texts

pytestmark = pytest.mark.anyio

RAW_SERVER = r"""
import json, os, sys

MODE = sys.argv[1]
STATE = sys.argv[2]
ECHO = {"name": "echo", "description": "Echo.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}


def deep_schema(depth):
    schema = {"type": "string"}
    for _ in range(depth):
        schema = {"anyOf": [schema, {"type": "null"}]}
    return {"type": "object", "properties": {"a": schema}}


def tools():
    if MODE == "deep_schema":  # under the SDK's JSON nesting limit, past what a schema check can walk
        return [{"name": "deep", "description": "Deep.", "inputSchema": deep_schema(90)}, ECHO]
    if MODE == "duplicates":
        twin = dict(ECHO, name="twin", description="Twin.")
        return [ECHO, twin, dict(twin, description="Another twin."), dict(ECHO)]
    return [ECHO]


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


starts = len([n for n in os.listdir(STATE) if n.startswith("start-")])
open(os.path.join(STATE, "start-%d" % os.getpid()), "w").close()
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if MODE == "flood_stderr":  # 150 kB a message: more than a pipe holds, so a reader that stalls blocks it
        for _ in range(500):
            sys.stderr.write("noise " * 50 + "\n")
        sys.stderr.flush()
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"}}})
    elif method == "tools/list":
        if MODE == "exit_listing" and starts == 0:  # the first process dies listing; its restart behaves
            os._exit(5)
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools()}})
    elif method == "tools/call":
        text = str((msg["params"].get("arguments") or {}).get("text"))
        if text == "garbage":
            sys.stdout.write("this is not JSON-RPC\n")
            sys.stdout.flush()
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": "not a list of blocks"}})
        elif text == "silent":
            pass
        elif text == "wrong_id":
            send({"jsonrpc": "2.0", "id": 987654, "result": {"content": []}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "echo:" + text}]}})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"""


def raw_server(tmp_path: Path, mode: str, **options: Any) -> MCPServerStdio:
    program = tmp_path / "raw_server.py"
    program.write_text(RAW_SERVER)
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    return MCPServerStdio(sys.executable, [str(program), mode, str(state)], name="raw", **options)


def echo(call_id: str, text: str) -> ToolCall:
    return ToolCall(call_id, "echo", {"text": text})


async def test_a_tool_whose_schema_is_nested_too_deeply_is_left_out_and_the_others_serve(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="agentactors.mcp")
    provider = ScriptedProvider([echo("1", "hi"), "done"])
    agent = Agent(provider, toolsets=[raw_server(tmp_path, "deep_schema")], max_steps=4)
    with anyio.fail_after(60):
        async with Runtime():
            result = await agent.run("go")
    assert result.content == "done"
    assert tool_texts(result) == ["echo:hi"]
    assert offered(provider.requests)[0] == ["echo"]
    skipped = [r.getMessage() for r in caplog.records if r.name == "agentactors.mcp"]
    assert any("tool 'deep' is skipped" in line and "nested too deeply" in line for line in skipped)


async def test_two_unlike_tools_of_one_name_serve_neither_and_a_repeated_tool_serves_once(tmp_path: Path) -> None:
    # The SDK checks a call's result against the last tool of a name it listed: an unlike pair cannot serve.
    provider = ScriptedProvider([echo("1", "hi"), "done"])
    agent = Agent(provider, toolsets=[raw_server(tmp_path, "duplicates")], max_steps=4)
    with anyio.fail_after(60):
        async with Runtime():
            result = await agent.run("go")
    assert tool_texts(result) == ["echo:hi"]
    specs = provider.requests[0].tools
    assert [(s.name, s.description) for s in specs] == [("echo", "Echo.")]


async def test_malformed_answers_and_silence_cost_one_call_each_and_the_session_serves_on(tmp_path: Path) -> None:
    recorder = InMemoryRecorder()
    provider = ScriptedProvider(
        [
            echo("1", "garbage"),
            echo("2", "after"),
            echo("3", "silent"),
            echo("4", "wrong_id"),
            echo("5", "last"),
            "done",
        ]
    )
    server = raw_server(tmp_path, "ok", timeout=1.5)
    agent = Agent(provider, toolsets=[server], recorders=[recorder], max_steps=8)
    with anyio.fail_after(60):
        async with Runtime():
            result = await agent.run("go")
    assert result.content == "done"
    texts = tool_texts(result)
    assert texts[0].startswith("Error: MCPToolError: MCP server 'raw' failed the call: ValidationError")
    assert texts[1] == "echo:after"
    assert "timed out after 1.5 s" in texts[2] and "timed out after 1.5 s" in texts[3]
    assert texts[4] == "echo:last"
    assert [status for _, status in statuses(recorder)] == ["error", "ok", "timeout", "timeout", "ok"]
    assert len(list((tmp_path / "state").glob("start-*"))) == 1  # one process: nothing was restarted


async def test_a_server_that_exits_while_listing_fails_that_run_and_the_next_one_restarts_it(tmp_path: Path) -> None:
    provider = ScriptedProvider([echo("1", "back"), "done"])
    agent = Agent(provider, toolsets=[raw_server(tmp_path, "exit_listing")], max_steps=4)
    with anyio.fail_after(60):
        async with Runtime():
            with pytest.raises(ToolsetError, match="could not list its tools"):
                await agent.run("first")
            result = await agent.run("second")
    assert tool_texts(result) == ["echo:back"]
    assert len(list((tmp_path / "state").glob("start-*"))) == 2


async def test_a_server_flooding_its_stderr_neither_stalls_nor_blocks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentactors.mcp")
    provider = ScriptedProvider([echo(str(i), f"n{i}") for i in range(5)] + ["done"])
    agent = Agent(provider, toolsets=[raw_server(tmp_path, "flood_stderr")], max_steps=8)
    with anyio.fail_after(60):
        async with Runtime():
            result = await agent.run("go")
    assert tool_texts(result) == [f"echo:n{i}" for i in range(5)]
    noise = [r for r in caplog.records if r.name == "agentactors.mcp" and "stderr: noise" in r.getMessage()]
    assert len(noise) >= 2000
