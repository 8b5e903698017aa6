"""Tools from a real MCP server over streamable HTTP on 127.0.0.1, on both backends.

One server process for the module (it demands a bearer token); the tests read its state through its
tools.  The token is a secret: it must reach the server and nothing else — no event, log line (the
HTTP stack's own, at DEBUG, included), error or repr.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    JsonlRecorder,
    ResultCeiling,
    Runtime,
    ScriptedProvider,
    ToolCall,
    ToolsetError,
)
from tests.support.mcp_helpers import TOKEN, events, http_server, http_server_process, statuses, tool_texts

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with http_server_process() as address:
        yield address


async def test_calls_carry_the_headers_and_the_token_shows_nowhere(
    url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, anyio_backend: Any
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx2's included
    server = http_server(url)
    recorder, jsonl = InMemoryRecorder(), tmp_path / "events.jsonl"
    script = [
        ToolCall("1", "say_secret", {}),
        ToolCall("2", "add", {"a": 1, "b": 2}),
        ToolCall("3", "fail", {"message": "x"}),
        "done",
    ]
    with JsonlRecorder(jsonl) as record:
        agent = Agent(ScriptedProvider(script), toolsets=[server], recorders=[recorder, record])
        async with Runtime():
            result = await agent.run("call it")
    echoed, added, failed = tool_texts(result)
    assert echoed == "[REDACTED]"  # the header reached the server ("none" otherwise); its echo did not reach the model
    assert added == "3" and failed.startswith("Error: MCPToolError:")
    assert [s for _, s in statuses(recorder)] == ["ok", "ok", "error"]
    assert TOKEN not in caplog.text
    assert any(r.name.startswith("httpx2") for r in caplog.records)  # the HTTP stack did log, at DEBUG
    assert TOKEN not in jsonl.read_text()
    assert all(TOKEN not in repr(e) for e in recorder.events)
    assert TOKEN not in repr(server) and "Authorization" in repr(server)


async def test_a_refused_token_is_a_toolset_error_that_does_not_show_it(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "mcp-wrong-token-0a9b8c7d6e5f4321"
    agent = Agent(ScriptedProvider(["never"]), toolsets=[http_server(url, token=wrong, name="guarded")])
    async with Runtime():
        with pytest.raises(ToolsetError, match="MCP server 'guarded' could not be reached") as caught:
            await agent.run("x")
    assert wrong not in str(caught.value) and wrong not in caplog.text


async def test_a_timeout_and_a_cancelled_run_reach_the_server(url: str, anyio_backend: Any) -> None:
    server = http_server(url, timeout=1.0)
    tag = f"http-{anyio_backend}"
    recorder = InMemoryRecorder()
    script = [
        ToolCall("1", "hang", {"tag": f"{tag}-timed-out"}),
        "gave up",
        ToolCall("2", "hang", {"tag": f"{tag}-cancelled"}),
    ]
    agent = Agent(ScriptedProvider(script), toolsets=[server], recorders=[recorder])
    async with Runtime() as rt:
        await agent.run("wait")
        tools = {t.name: t for t in await server.list_tools(rt)}
        async with agent.stream("wait again") as run:
            async for event in run:
                if event.type == "tools.started":
                    with anyio.fail_after(10):
                        while f"{tag}-cancelled" not in str(await tools["running"].invoke({})):  # noqa: ASYNC110
                            await anyio.sleep(0.02)
                    run.cancel()
        with anyio.fail_after(10):
            while f"{tag}-cancelled" not in str(await tools["cancellations"].invoke({})):  # noqa: ASYNC110
                await anyio.sleep(0.02)
        seen = str(await tools["cancellations"].invoke({}))
    assert f"{tag}-timed-out" in seen
    assert statuses(recorder) == [("hang", "timeout"), ("hang", "cancelled")]


async def test_a_10_mb_result_is_refused_by_the_ceiling(url: str) -> None:
    server = http_server(url, result_ceiling=ResultCeiling(1_000_000, narrow_by=("chars",)))
    recorder = InMemoryRecorder()
    agent = Agent(ScriptedProvider([ToolCall("1", "big", {"chars": 10_000_000}), "done"]), toolsets=[server],
                  recorders=[recorder])
    async with Runtime():
        result = await agent.run("everything")
    (refused,) = tool_texts(result)
    assert refused.startswith("Result too large: big returned 10,000,000 chars, over its 1,000,000-char ceiling.")
    assert statuses(recorder) == [("big", "invalid")]
    (event,) = events(recorder, "tools.result_refused")
    assert (event.size, event.max_chars) == (10_000_000, 1_000_000)


async def test_a_tool_added_on_the_server_reaches_the_next_run(url: str, anyio_backend: Any) -> None:
    name = f"added_{anyio_backend}"
    server = http_server(url)
    provider = ScriptedProvider([ToolCall("1", "grow", {"name": name}), "grown", ToolCall("2", name, {}), "used"])
    agent = Agent(provider, toolsets=[server])
    async with Runtime() as rt:
        before = await server.list_tools(rt)
        await agent.run("grow")
        with anyio.fail_after(10):
            while await server.list_tools(rt) is before:  # noqa: ASYNC110 - the notice comes from the server
                await anyio.sleep(0.02)
        used = await agent.run("use")
    assert tool_texts(used) == [f"I am {name}"]
