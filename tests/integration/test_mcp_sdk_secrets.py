"""Secrets a server echoes where the MCP SDK quotes it: its error logs and its parse errors, on both backends.

The SDK logs what it cannot parse with the pydantic error as traceback, and pydantic quotes the input —
shortened in the middle (``'Connected with...K6pQ0sU'``), so the exact-match redaction of a registered secret
misses the part it shows.  Neither the logs (the SDK's stdio and HTTP loggers) nor the error the model reads
may hold any of it; the error still says what was wrong.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ScriptedProvider, ToolCall
from agentactors.mcp import MCPServerHTTP, MCPServerStdio
from tests.support.mcp_helpers import SERVER, free_port, statuses, stop_process, tool_texts, wait_listening

pytestmark = pytest.mark.anyio

ENV_SECRET = "ghp_Zq8vN3xLmT5rW1yB7cD9eF2gH4jK6pQ0sU"
TOKEN = "tok_9f8e7d6c5b4a39281706aa55"

PRINTING_SERVER = """
import os, runpy, sys
print("Connected to GitHub with token " + os.environ["GITHUB_TOKEN"], flush=True)
sys.argv = [sys.argv[1], "stdio"]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

BAD_JSON_SERVER = r"""
import json, sys
import uvicorn

ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break

    async def reply(status, data=b""):
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1")]})
        await send({"type": "http.response.body", "body": data})

    if scope["method"] != "POST":
        return await reply(405)
    msg = json.loads(body)
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        return await reply(202)
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "bad-json", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": [ECHO]}
    elif method == "tools/call":
        auth = dict(scope["headers"]).get(b"authorization", b"").decode()
        if msg["params"]["arguments"]["text"] == "bare":  # the token alone: not JSON
            return await reply(200, auth.split(" ")[1].encode())
        return await reply(200, ('{"debug": "you sent %s"' % auth).encode())  # JSON cut short
    else:
        result = {}
    await reply(200, json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}).encode())


uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="critical")
"""


def _no_part_of(secret: str, text: str) -> None:
    for piece in (secret, secret[:10], secret[-10:]):
        assert piece not in text, f"{piece!r} shows in:\n{text}"


async def test_a_stdio_server_printing_an_env_secret_on_stdout_leaves_none_of_it_in_the_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    program = tmp_path / "printing_server.py"
    program.write_text(PRINTING_SERVER)
    server = MCPServerStdio(sys.executable, [str(program), str(SERVER)], env={"GITHUB_TOKEN": ENV_SECRET}, name="gh")
    agent = Agent(ScriptedProvider([ToolCall("1", "add", {"a": 1, "b": 2}), "done"]), toolsets=[server])
    with anyio.fail_after(30):
        async with Runtime():
            result = await agent.run("go")
    assert tool_texts(result) == ["3"]
    sdk = [r for r in caplog.records if r.name == "mcp.client.stdio"]
    assert sdk, "the SDK logs the line it could not parse"
    assert "Failed to parse JSONRPC message" in caplog.text and "Invalid JSON" in caplog.text  # still says what
    _no_part_of(ENV_SECRET, caplog.text)


@pytest.fixture(scope="module")
def bad_json_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    program = tmp_path_factory.mktemp("bad_json") / "bad_json_server.py"
    program.write_text(BAD_JSON_SERVER)
    port = free_port()
    process = subprocess.Popen([sys.executable, str(program), str(port)], stdout=subprocess.DEVNULL)
    try:
        wait_listening(port, process, "the bad-JSON MCP server")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


async def test_an_http_server_echoing_the_token_in_bad_json_shows_none_of_it_in_logs_or_errors(
    bad_json_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    server = MCPServerHTTP(bad_json_url, headers={"Authorization": f"Bearer {TOKEN}"}, name="web")
    recorder = InMemoryRecorder()
    calls = [ToolCall("1", "echo", {"text": "bare"}), ToolCall("2", "echo", {"text": "debug"}), "done"]
    agent = Agent(ScriptedProvider(calls), toolsets=[server], recorders=[recorder])
    with anyio.fail_after(30):
        async with Runtime():
            result = await agent.run("go")
    assert statuses(recorder) == [("echo", "error"), ("echo", "error")]
    assert any(r.name == "mcp.client.streamable_http" and r.exc_info for r in caplog.records)
    _no_part_of(TOKEN, caplog.text)
    for text in tool_texts(result):
        _no_part_of(TOKEN, text)
        assert text.startswith("Error: MCPToolError: Failed to parse JSON response: ")
        assert "Invalid JSON" in text  # what was wrong is kept
        assert "input_value" not in text and "For further information" not in text
    assert all(TOKEN[-10:] not in repr(event) for event in recorder.events)
