"""The HTTP read timeout under a streamable-HTTP server that answers calls with plain JSON, on both backends.

Such a server (``streamable_http_app(json_response=True)``, stateless servers) sends nothing at all until the
call's result is ready, so the transport's read timeout bounds the call itself.  It must never be shorter than
the call's own ``timeout`` (``None``: no read limit): a long call ends when its timeout says (status
``timeout``), not when the transport gives up — which tore the whole connection down, failed the other calls
in flight and used up a restart.  The floor of the read timeout (300 s) is lowered here to make it testable.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ScriptedProvider, ToolCall
from agentactors.mcp import MCPServerHTTP, _transports
from tests.support.mcp_helpers import events, free_port, statuses, tool_texts, wait_listening

pytestmark = pytest.mark.anyio

JSON_SERVER = r"""
import sys
import anyio, uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("json-answers")


@server.tool()
async def slow(seconds: float) -> str:
    '''Sleeps, then says so.'''
    await anyio.sleep(seconds)
    return "slept %g" % seconds


@server.tool()
def echo(text: str) -> str:
    '''Echo.'''
    return text


uvicorn.run(server.streamable_http_app(json_response=True), host="127.0.0.1", port=int(sys.argv[1]),
            log_level="critical")
"""


@pytest.fixture(scope="module")
def json_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    program = tmp_path_factory.mktemp("json_mcp") / "json_server.py"
    program.write_text(JSON_SERVER)
    port = free_port()
    process = subprocess.Popen([sys.executable, str(program), str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, process, "the JSON-answering MCP server")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()  # uvicorn's graceful stop would wait out the calls still sleeping, which nobody awaits
        process.wait(10)


async def _long_and_short(server: MCPServerHTTP, seconds: float) -> tuple[dict[str, list[str]], InMemoryRecorder]:
    """A run calling ``slow(seconds)`` and, while it runs, another run calling ``echo``; then a third run's echo."""
    recorder = InMemoryRecorder()
    texts: dict[str, list[str]] = {}

    async def run(key: str, call: ToolCall, delay: float) -> None:
        await anyio.sleep(delay)
        agent = Agent(ScriptedProvider([call, "done"]), toolsets=[server], recorders=[recorder])
        texts[key] = tool_texts(await agent.run("go"))

    with anyio.fail_after(60):
        async with Runtime():
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "long", ToolCall("1", "slow", {"seconds": seconds}), 0)
                tg.start_soon(run, "short", ToolCall("2", "slow", {"seconds": 0.8}), 0.3)
            await run("after", ToolCall("3", "echo", {"text": "still there"}), 0)
    return texts, recorder


async def test_a_call_with_no_timeout_outlives_the_read_timeout_floor(
    json_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_transports, "MIN_READ_TIMEOUT", 0.5)  # the 300 s floor, shortened for the test
    server = MCPServerHTTP(json_url, name="json", timeout=None)
    texts, recorder = await _long_and_short(server, 1.4)
    assert texts == {"long": ["slept 1.4"], "short": ["slept 0.8"], "after": ["still there"]}
    assert [status for _, status in statuses(recorder)] == ["ok", "ok", "ok"]
    assert events(recorder, "mcp.server_restarted") == []


async def test_a_call_past_its_timeout_is_a_timeout_and_costs_nothing_else(
    json_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_transports, "MIN_READ_TIMEOUT", 0.3)
    server = MCPServerHTTP(json_url, name="json", timeout=1.5)
    texts, recorder = await _long_and_short(server, 3.0)
    assert sorted(statuses(recorder)) == [("echo", "ok"), ("slow", "ok"), ("slow", "timeout")]
    assert texts["short"] == ["slept 0.8"] and texts["after"] == ["still there"]
    assert "timed out after 1.5 s" in texts["long"][0]
    assert events(recorder, "mcp.server_restarted") == []  # the connection lived on


async def test_a_transport_read_timeout_is_named_as_such_not_as_a_server_gone(
    json_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read timeout shorter than the call (what an HTTP stack may still impose): the connection is lost, but the
    # error says why rather than that the server went away.
    monkeypatch.setattr(_transports, "read_timeout_for", lambda call_timeout: 0.5)
    server = MCPServerHTTP(json_url, name="json", timeout=30)
    recorder = InMemoryRecorder()
    script: list[Any] = [ToolCall("1", "slow", {"seconds": 2}), ToolCall("2", "echo", {"text": "again"}), "done"]
    agent = Agent(ScriptedProvider(script), toolsets=[server], recorders=[recorder])
    with anyio.fail_after(60):
        async with Runtime():
            result = await agent.run("go")
    first, second = tool_texts(result)
    assert "went away" not in first
    assert first == (
        "Error: MCPToolError: MCP server 'json' sent no answer within the HTTP read timeout (0.5 s); "
        "the connection is opened again at the next call"
    )
    assert second == "again"

