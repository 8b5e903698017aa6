"""The MCP client against hostile servers — real processes speaking raw JSON-RPC, over stdio and streamable HTTP.

The rule under test: every request ends in a response or a typed error (a tool result with status ``error``
or ``timeout``, a :class:`~agentactors.tools.ToolsetError`) — never a hang, never a result silently dropped,
never a secret shown.  ``STDIO_SERVER`` is a few lines of raw JSON-RPC whose misbehaviour is chosen by its
first argument (for the whole process) or by the ``text`` of an ``echo`` call (for that call);
``HTTP_SERVER`` is a raw ASGI app under uvicorn, chosen by the first segment of its URL's path and by
the ``text`` of a call.  Both backends; the whole file stays well under a minute on two cores.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ScriptedProvider, ToolCall
from agentactors.mcp import MCPServerHTTP, MCPServerStdio, _link
from agentactors.tools import ToolsetError
from tests.support.mcp_helpers import free_port, offered, statuses, tool_texts, wait_listening

pytestmark = pytest.mark.anyio

SECRET = "hostile-env-token-7d3f9a1c5e"

STDIO_SERVER = r"""
import json, os, signal, sys, time

MODE, PORT = sys.argv[1], sys.argv[2]
ECHO = {"name": "echo", "description": "Echo.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}


def obj(properties, **more):
    return dict({"type": "object", "properties": properties}, **more)


def tools():
    if MODE == "schemas":
        node = {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}
        return [
            {"name": "dangling", "inputSchema": obj({"x": {"$ref": "#/$defs/nowhere"}})},
            {"name": "remote", "inputSchema": obj({"x": {"$ref": "http://127.0.0.1:%s/schema.json" % PORT}})},
            {"name": "huge", "inputSchema": obj({"p%d" % i: {"type": "string", "description": "d" * 100}
                                                 for i in range(2500)})},
            {"name": "linked", "inputSchema": obj({"head": {"$ref": "#/$defs/node"}}, **{"$defs": {"node": node}})},
            ECHO,
        ]
    return [ECHO]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


STALLED = []
if MODE == "immortal":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if MODE == "exit_at_start":
    sys.stderr.write("fatal: the server's package is not installed\n")
    sys.exit(3)
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        if MODE == "no_init":
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools()}})
    elif method == "tools/call":
        while STALLED:
            send({"jsonrpc": "2.0", "id": STALLED.pop(), "result": {"content": [{"type": "text", "text": "too late"}]}})
        text = str((msg["params"].get("arguments") or {}).get("text"))
        if text == "exit0":
            os._exit(0)
        elif text == "exit1":
            os._exit(1)
        elif text == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif text.startswith("deep"):  # structured content nested deeper than the SDK's JSON parser goes
            depth = int(text[4:])
            sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":{"v":%s%s%s}}}\n'
                             % (json.dumps(mid), "[" * depth, "1", "]" * depth))
            sys.stdout.flush()
        elif text == "no_result":  # JSON, but neither a result nor an error
            send({"jsonrpc": "2.0", "id": mid})
        elif text == "twice":
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "first"}]}})
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "second"}]}})
        elif text == "flood":
            for i in range(5000):
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "n%d" % i}})
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            send({"jsonrpc": "2.0", "id": 424242, "result": {"content": []}})  # an id nobody asked for
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "after the flood"}]}})
        elif text == "leak":
            sys.stderr.write("my token is %s\n" % os.environ.get("API_TOKEN"))
            sys.stderr.flush()
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32603,
                  "message": "refused %s" % os.environ.get("API_TOKEN")}})
        elif text == "stall":  # ignores notifications/cancelled: answers at the next call, after its caller gave up
            STALLED.append(mid)
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "echo:" + text}]}})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
if MODE == "immortal":  # stdin closed: a polite server would exit now
    while True:
        time.sleep(1)
"""

HTTP_SERVER = r"""
import asyncio, json, sys
import uvicorn

SESSIONS = set()
ECHO = {"name": "echo", "description": "Echo.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}


async def body_of(receive):
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def respond(send, status, body=b"", kind="application/json", headers=()):
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", kind.encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def answer(mid, result):
    return json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}).encode()


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    mode = scope["path"].strip("/").split("/")[0]
    if scope["method"] == "GET":  # no standalone event stream
        return await respond(send, 405)
    if scope["method"] == "DELETE":
        return await respond(send, 200)
    msg = json.loads(await body_of(receive))
    method, mid = msg.get("method"), msg.get("id")
    session = dict(scope["headers"]).get(b"mcp-session-id", b"").decode()
    if method == "initialize":
        if mode.startswith("refuse"):
            return await respond(send, int(mode[6:]), b"go away", "text/plain")
        SESSIONS.add("s%d" % len(SESSIONS))
        new = "s%d" % (len(SESSIONS) - 1)
        return await respond(send, 200, answer(mid, {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "0"}}), headers=[(b"mcp-session-id", new.encode())])
    if session not in SESSIONS:
        return await respond(send, 404, b"", "text/plain")
    if mid is None:
        return await respond(send, 202)
    if method == "tools/list":
        return await respond(send, 200, answer(mid, {"tools": [ECHO]}))
    if method != "tools/call":
        return await respond(send, 200, answer(mid, {}))
    text = msg["params"]["arguments"]["text"]
    if text in ("http500", "http401"):
        return await respond(send, int(text[4:]), b"no", "text/plain")
    if text == "forget":  # the server forgets every session: the next request is a 404
        SESSIONS.clear()
        SESSIONS.add("gone")
        return await respond(send, 404, b"", "text/plain")
    if text in ("drop", "forever"):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b": open\n\n", "more_body": True})
        if text == "drop":
            raise RuntimeError("the connection drops mid-stream")
        for _ in range(100):  # pings, never the response (bounded: the test's server must stop too)
            await asyncio.sleep(0.1)
            await send({"type": "http.response.body", "body": b": ping\n\n", "more_body": True})
        return await send({"type": "http.response.body", "body": b""})
    return await respond(send, 200, answer(mid, {"content": [{"type": "text", "text": "echo:" + text}]}))


uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="critical")
"""


def stdio(tmp_path: Path, mode: str, *, port: int = 9, **options: Any) -> MCPServerStdio:
    program = tmp_path / "hostile_stdio.py"
    program.write_text(STDIO_SERVER)
    options.setdefault("name", "hostile")
    return MCPServerStdio(sys.executable, [str(program), mode, str(port)], **options)


def echo(call_id: str, text: str) -> ToolCall:
    return ToolCall(call_id, "echo", {"text": text})


async def run_calls(server: Any, texts: list[str], *, within: float = 30) -> tuple[list[str], list[str]]:
    """One run calling ``echo`` with each text in turn: the tool messages and the statuses."""
    recorder = InMemoryRecorder()
    script = [echo(str(i), text) for i, text in enumerate(texts)]
    provider = ScriptedProvider([*script, "done"])
    agent = Agent(provider, toolsets=[server], recorders=[recorder], max_steps=len(texts) + 2)
    with anyio.fail_after(within):
        async with Runtime():
            result = await agent.run("go")
    assert result.content == "done"
    return tool_texts(result), [status for _, status in statuses(recorder)]


# -- stdio -------------------------------------------------------------------------------------------


async def test_schemas_that_point_outside_themselves_or_are_huge_cost_their_tool_and_fetch_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="agentactors.mcp")
    with socket.socket() as listener:  # where the remote $ref points: nothing may connect
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        server = stdio(tmp_path, "schemas", port=port)
        calls = [ToolCall("1", "dangling", {"x": 1}), ToolCall("2", "remote", {"x": 1}),
                 ToolCall("3", "linked", {"head": {"next": {"next": {}}}}), echo("4", "still here")]
        provider = ScriptedProvider([*calls, "done"])
        with anyio.fail_after(30):
            async with Runtime():
                result = await Agent(provider, toolsets=[server], max_steps=6).run("go")
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert result.content == "done"  # a call to either bad tool did not crash the run
    assert offered(provider.requests)[0] == ["linked", "echo"]
    dangling, remote, linked, still = tool_texts(result)
    assert "there is no tool named 'dangling'" in dangling and "there is no tool named 'remote'" in remote
    assert (linked, still) == ("echo:None", "echo:still here")  # a recursive $ref inside the schema serves
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "agentactors.mcp")
    assert "tool 'dangling' is skipped" in logged and "$ref '#/$defs/nowhere' does not resolve within" in logged
    assert "tool 'remote' is skipped" in logged
    fetched = f"$ref 'http://127.0.0.1:{port}/schema.json' does not resolve within the schema (nothing is fetched)"
    assert fetched in logged
    assert "tool 'huge' is skipped: its input schema is" in logged and "over 200,000" in logged


async def test_an_answer_nested_past_the_parser_ends_its_call_at_once_not_at_its_timeout(tmp_path: Path) -> None:
    server = stdio(tmp_path, "ok", timeout=30)
    started = time.monotonic()
    texts, states = await run_calls(server, ["deep400", "no_result", "deep50", "after"])
    assert time.monotonic() - started < 15  # not the 30 s timeout
    assert states == ["error", "error", "ok", "ok"]
    assert texts[0].startswith("Error: MCPToolError: MCP server 'hostile' sent an answer that could not be read")
    assert "recursion limit" in texts[0]
    assert texts[1].startswith("Error: MCPToolError: MCP server 'hostile' sent an answer that could not be read")
    assert texts[2].startswith('{"v":[[[') and texts[3] == "echo:after"


async def test_a_server_that_exits_at_start_says_why_in_the_error(tmp_path: Path) -> None:
    agent = Agent(ScriptedProvider(["never"]), toolsets=[stdio(tmp_path, "exit_at_start")])
    with anyio.fail_after(30):
        async with Runtime():
            with pytest.raises(ToolsetError) as caught:
                await agent.run("go")
    assert "could not be reached" in str(caught.value)
    assert "its stderr ended: fatal: the server's package is not installed" in str(caught.value)


async def test_a_missing_command_or_cwd_is_a_toolset_error_naming_it(tmp_path: Path) -> None:
    missing = MCPServerStdio(str(tmp_path / "no-such-server"), name="missing")
    nowhere = stdio(tmp_path, "ok", cwd=tmp_path / "no-such-dir")
    with anyio.fail_after(30):
        for server, named in ((missing, "no-such-server"), (nowhere, "no-such-dir")):
            with pytest.raises(ToolsetError, match=f"could not be reached: FileNotFoundError.*{named}"):
                async with server:
                    pass


async def test_leaving_a_server_that_never_answers_initialize_is_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_link, "LIST_TIMEOUT", 0.5)  # the listing's bound (60 s), shortened for the test
    server = stdio(tmp_path, "no_init")
    started = time.monotonic()
    with anyio.fail_after(30), pytest.raises(ToolsetError, match="did not connect and list its tools"):
        async with server:
            pass
    # The opening is abandoned at once; before, leaving waited out the 10 s bound of a closing as well.
    assert time.monotonic() - started < 6


async def test_a_server_dying_mid_call_in_any_way_is_an_error_and_the_next_call_restarts_it(tmp_path: Path) -> None:
    texts, states = await run_calls(stdio(tmp_path, "ok"), ["exit0", "a", "exit1", "b", "kill", "c"])
    assert states == ["error", "ok"] * 3
    assert all(t.startswith("Error: MCPToolError: MCP server 'hostile' went away during the call") for t in texts[::2])
    assert texts[1::2] == ["echo:a", "echo:b", "echo:c"]


async def test_duplicates_stray_ids_and_a_notification_flood_neither_confuse_nor_stall_a_call(tmp_path: Path) -> None:
    texts, states = await run_calls(stdio(tmp_path, "ok"), ["twice", "between", "flood", "after"])
    assert texts == ["first", "echo:between", "after the flood", "echo:after"]
    assert states == ["ok"] * 4


async def test_a_server_ignoring_cancellation_answers_too_late_and_the_next_call_is_its_own(tmp_path: Path) -> None:
    texts, states = await run_calls(stdio(tmp_path, "ok", timeout=0.5), ["stall", "after"])
    assert states == ["timeout", "ok"]
    assert texts[1] == "echo:after"  # not the stalled call's late "too late"


async def test_a_server_that_will_not_exit_is_killed_within_a_bound_and_reaped(tmp_path: Path) -> None:
    server = stdio(tmp_path, "immortal")
    started = time.monotonic()
    with anyio.fail_after(30):
        async with server:  # entered: connected, initialised, listed
            pids = _hostile_pids(tmp_path)
    # stdin closed, 2 s; SIGTERM (ignored), 2 s; SIGKILL — and the child reaped: a zombie would keep its /proc entry.
    assert time.monotonic() - started < 12
    assert pids and not set(pids) & {int(entry) for entry in os.listdir("/proc") if entry.isdigit()}


def _hostile_pids(tmp_path: Path) -> list[int]:
    """The processes running this test's server script (their command lines name ``tmp_path``)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if entry.isdigit() and str(tmp_path).encode() in cmdline.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


async def test_env_secrets_never_show_in_reprs_logs_results_or_errors(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = stdio(tmp_path, "ok", env={"API_TOKEN": SECRET})
    recorder = InMemoryRecorder()
    agent = Agent(ScriptedProvider([echo("1", "leak"), "done"]), toolsets=[server], recorders=[recorder])
    with anyio.fail_after(30):
        async with Runtime():
            result = await agent.run("go")
    assert tool_texts(result) == ["Error: MCPToolError: refused [REDACTED]"]
    assert "stderr: my token is [REDACTED]" in caplog.text
    assert SECRET not in caplog.text and SECRET not in repr(server)
    assert all(SECRET not in repr(event) for event in recorder.events)


async def test_two_runs_at_once_share_one_server(tmp_path: Path) -> None:
    server = stdio(tmp_path, "ok")
    results: dict[str, list[str]] = {}

    async def run(key: str) -> None:
        calls = [echo(f"{key}{i}", f"{key}{i}") for i in range(5)]
        result = await Agent(ScriptedProvider([calls, "done"]), toolsets=[server]).run("go")
        results[key] = tool_texts(result)

    with anyio.fail_after(30):
        async with Runtime(), anyio.create_task_group() as tg:
            for key in "abc":
                tg.start_soon(run, key)
    assert results == {key: [f"echo:{key}{i}" for i in range(5)] for key in "abc"}


# -- streamable HTTP ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    program = tmp_path_factory.mktemp("hostile_http") / "hostile_http.py"
    program.write_text(HTTP_SERVER)
    port = free_port()
    process = subprocess.Popen([sys.executable, str(program), str(port)], stdout=subprocess.DEVNULL)
    try:
        wait_listening(port, process, "the hostile HTTP server")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()  # uvicorn's graceful stop would wait for the streams that never end
        process.wait(10)


def http(url: str, **options: Any) -> MCPServerHTTP:
    options.setdefault("name", "hostile")
    return MCPServerHTTP(url, headers={"Authorization": f"Bearer {SECRET}"}, **options)


async def test_an_http_server_refusing_to_initialise_is_a_toolset_error(http_base: str) -> None:
    with anyio.fail_after(30):
        for status in (500, 401, 404):
            with pytest.raises(ToolsetError, match="MCP server 'hostile' could not be reached") as caught:
                async with http(f"{http_base}/refuse{status}/mcp"):
                    pass
            assert SECRET not in str(caught.value)


async def test_http_failures_mid_session_each_cost_one_call(http_base: str) -> None:
    server = http(f"{http_base}/ok/mcp", timeout=1.5)
    calls = ["http500", "a", "http401", "b", "drop", "c", "forever", "d", "forget", "e"]
    started = time.monotonic()
    texts, states = await run_calls(server, calls)
    assert states == ["error", "ok", "error", "ok", "error", "ok", "timeout", "ok", "error", "ok"]
    assert texts[1::2] == [f"echo:{letter}" for letter in "abcde"]
    assert texts[4] == "Error: MCPToolError: SSE stream ended without a response"
    assert "timed out after 1.5 s" in texts[6]
    assert texts[8] == "Error: MCPToolError: MCP server 'hostile' ended the session; it is reconnected at the next call"
    assert time.monotonic() - started < 20
    assert all(SECRET not in text for text in texts)

