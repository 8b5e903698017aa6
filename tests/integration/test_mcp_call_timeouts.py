"""An MCP server's ``timeout`` is its calls' own, against a real server over stdio, on both backends.

``timeout=None`` means no limit: the executor's default timeout (60 s in an agent) must not stand in for it.
Real clocks, generous bounds: the server is a subprocess.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from agentactors import Runtime, ToolCall
from agentactors.mcp import MCPServerHTTP
from agentactors.tools import ToolStatus
from agentactors.tools.executor import ToolExecutorActor
from tests.support.mcp_helpers import free_port, stdio_server, stop_process, wait_listening
from tests.support.paths import ROOT

pytestmark = pytest.mark.anyio


async def test_a_server_with_no_timeout_gives_its_calls_no_limit_not_the_executors_default() -> None:
    server = stdio_server(timeout=None)
    assert server.timeout is None
    async with Runtime() as rt:
        tools = await server.list_tools(rt)
        executor = ToolExecutorActor(tools, default_timeout=0.2)  # the default a tool with no timeout of its own gets
        (result,) = await executor.execute([ToolCall("1", "hang", {"tag": "no-limit", "seconds": 0.6})])
    assert result.status is ToolStatus.ok, result.content
    assert result.content == "slept 0.6"


async def test_a_server_with_a_timeout_gives_its_calls_that_timeout_not_the_executors_default() -> None:
    server = stdio_server(timeout=0.5)
    async with Runtime() as rt:
        tools = await server.list_tools(rt)
        executor = ToolExecutorActor(tools, default_timeout=600.0)
        (result,) = await executor.execute([ToolCall("1", "hang", {"tag": "limited", "seconds": 30.0})])
    assert result.status is ToolStatus.timeout
    assert "timed out after 0.5 s" in result.content


async def test_a_legacy_sse_server_gone_silent_mid_call_costs_each_call_its_timeout_not_minutes() -> None:
    # The server never answers the POST carrying the call: before, the SDK's writer waited on it for the
    # SSE transport's 300 s read timeout, every later message queued behind it (each call timed out, then
    # waited 5 s more on its notifications/cancelled), and no call reached the server for five minutes.
    with _silent_sse_server() as url:
        server = MCPServerHTTP(url, transport="sse", timeout=1.0, name="silent")
        async with Runtime() as rt:
            executor = ToolExecutorActor(await server.list_tools(rt))
            for n in range(3):
                started = time.monotonic()
                (result,) = await executor.execute([ToolCall(str(n), "hang", {})])
                took = time.monotonic() - started
                assert result.status in (ToolStatus.timeout, ToolStatus.error), result.content
                assert took < 4.0, f"call {n} took {took:.1f} s: {result.content}"


@contextlib.contextmanager
def _silent_sse_server() -> Iterator[str]:
    """Run ``tests/support/mcp_silent_sse_server.py``; yields its SSE endpoint's URL."""
    port = free_port()
    script = ROOT / "tests" / "support" / "mcp_silent_sse_server.py"
    process = subprocess.Popen([sys.executable, str(script), str(port)])
    try:
        wait_listening(port, process, "the silent SSE server")
        yield f"http://127.0.0.1:{port}/sse"
    finally:
        stop_process(process)
