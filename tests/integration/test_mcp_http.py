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
    tool,
)
from agentactors.tools import ToolNameClashError, ToolsetError
from tests.support.mcp_helpers import (
    TOKEN,
    events,
    http_server,
    http_server_process,
    http_server_subprocess,
    offered,
    statuses,
    tool_texts,
)

pytestmark = pytest.mark.anyio

SEARCH = {"query": "mcp", "filters": {"language": "py", "min_stars": 5}, "limit": 2}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with http_server_process() as address:
        yield address


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    """The same server over the older SSE transport (``GET /sse`` + ``POST /messages/``)."""
    with http_server_process(sse=True) as address:
        yield address


async def _until(check: Any, *, within: float = 10.0) -> Any:
    """Poll ``check()`` (async) until it returns something truthy; fail past ``within`` seconds."""
    with anyio.fail_after(within):
        # The state is in another process: polling it is the way (no event to wait on).
        while not (value := await check()):  # noqa: ASYNC110
            await anyio.sleep(0.02)
    return value


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


async def test_structured_arguments_reach_the_server_validated_and_its_structured_result_comes_back(url: str) -> None:
    server = http_server(url, tool_prefix="w_")
    recorder = InMemoryRecorder()
    script = [
        ToolCall("1", "w_search", SEARCH),
        ToolCall("2", "w_search", {"query": "mcp", "filters": {"language": "py"}}),  # min_stars missing
        "done",
    ]
    provider = ScriptedProvider(script)
    async with Runtime():
        result = await Agent(provider, toolsets=[server], recorders=[recorder]).run("search")
    found, invalid = tool_texts(result)
    assert found == '{"query":"mcp","min_stars":5,"hits":["mcp-py-0","mcp-py-1"]}'  # structured content, once
    assert invalid.startswith("Invalid arguments for tool 'w_search'") and "min_stars" in invalid  # never sent
    assert statuses(recorder) == [("w_search", "ok"), ("w_search", "invalid")]
    search = next(spec for spec in provider.requests[0].tools if spec.name == "w_search")
    assert search.parameters["required"] == ["query", "filters"]  # the server's own JSON Schema
    assert all(name.startswith("w_") for name in offered(provider.requests)[0])


async def test_a_server_killed_mid_call_is_an_error_result_and_the_run_goes_on(anyio_backend: Any) -> None:
    recorder = InMemoryRecorder()
    tag = f"killed-{anyio_backend}"
    script = [ToolCall("1", "hang", {"tag": tag}), ToolCall("2", "add", {"a": 1, "b": 2}), "done"]
    with http_server_subprocess() as (address, process):
        server = http_server(address, name="doomed", timeout=30.0)
        agent = Agent(ScriptedProvider(script), toolsets=[server], recorders=[recorder])
        async with Runtime() as rt:
            running = {t.name: t for t in await server.list_tools(rt)}["running"]
            with anyio.fail_after(20):  # far below the call's 30 s timeout: the death is noticed, not waited out
                async with agent.stream("wait") as run:
                    async for event in run:
                        if event.type == "tools.started" and event.name == "hang":
                            await _until(lambda: _has(running, tag))  # the server is in the call now
                            process.kill()
            result = run.result
    assert result.content == "done" and result.error is None and not result.cancelled  # no exception out of the run
    died, unreachable = tool_texts(result)
    assert died.startswith("Error: MCPToolError: MCP server 'doomed' went away during the call")
    # a server elsewhere is connected to again, not "started again" (what a stdio server is)
    assert died.endswith("the connection is opened again at the next call"), died
    # Refused, or — reaching the port while the killed process's sockets are still being torn down — accepted
    # and dropped: either way the server is not available, said in one line.
    assert unreachable.startswith("Error: MCPToolError: MCP server 'doomed' is not available: ")
    assert "ConnectError" in unreachable or "Server disconnected without sending a response" in unreachable
    assert len(died) < 200 and len(unreachable) < 200  # concise: no traceback, no HTML page
    assert statuses(recorder) == [("hang", "error"), ("add", "error")]
    (restarted,) = events(recorder, "mcp.server_restarted")
    assert restarted.server == "doomed" and restarted.run_id == result.run_id


async def _has(probe: Any, tag: str) -> bool:
    return tag in str(await probe.invoke({}))


async def test_a_tool_name_clash_is_an_error_naming_both_and_a_prefix_avoids_it(url: str) -> None:
    first, second = http_server(url, name="first"), http_server(url, name="second")

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    async with Runtime():
        with pytest.raises(ToolNameClashError, match=r"'add': one from toolset 'first', one from toolset 'second'"):
            await Agent(ScriptedProvider(["never"]), toolsets=[first, second]).run("x")
        with pytest.raises(ToolNameClashError, match=r"'add': one from a plain tool of the agent, one from toolset"):
            await Agent(ScriptedProvider(["never"]), tools=[add], toolsets=[first]).run("x")
        prefixed = http_server(url, name="third", tool_prefix="third_")
        script = [[ToolCall("1", "third_add", {"a": 1, "b": 2}), ToolCall("2", "add", {"a": 2, "b": 2})], "done"]
        with_plain = await Agent(ScriptedProvider(script), tools=[add], toolsets=[prefixed]).run("x")
        with_first = await Agent(ScriptedProvider(script), toolsets=[first, prefixed]).run("x")
    assert tool_texts(with_plain) == tool_texts(with_first) == ["3", "4"]


async def test_the_sse_transport_lists_and_calls_with_the_headers(
    sse_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = http_server(sse_url, name="legacy", transport="sse", timeout=1.0)
    recorder = InMemoryRecorder()
    script = [
        [ToolCall("1", "search", SEARCH), ToolCall("2", "say_secret", {})],
        ToolCall("3", "fail", {"message": "no such repository"}),
        ToolCall("4", "hang", {"tag": "sse", "seconds": 30}),
        "done",
    ]
    provider = ScriptedProvider(script)
    async with Runtime() as rt:
        listed = {t.name for t in await server.list_tools(rt)}
        result = await Agent(provider, toolsets=[server], recorders=[recorder]).run("go")
    assert {"add", "search", "hang", "fail", "say_secret"} <= listed
    assert listed == set(offered(provider.requests)[0])
    found, echoed, failed, timed_out = tool_texts(result)
    assert found == '{"query":"mcp","min_stars":5,"hits":["mcp-py-0","mcp-py-1"]}'
    assert echoed == "[REDACTED]"  # the bearer token reached the server (it answers 401 otherwise)
    assert failed == "Error: MCPToolError: Error executing tool fail: no such repository"
    assert timed_out.startswith("Tool 'hang' timed out after 1 s")
    assert sorted(statuses(recorder)[:2]) == [("say_secret", "ok"), ("search", "ok")]
    assert statuses(recorder)[2:] == [("fail", "error"), ("hang", "timeout")]
    assert TOKEN not in caplog.text and all(TOKEN not in repr(e) for e in recorder.events)
