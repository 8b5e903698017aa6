"""Real MCP servers for the MCP tests: the stdio one as a subprocess, the HTTP one on 127.0.0.1.

Both run ``tests/support/mcp_server.py`` (the SDK's server API).  An HTTP server is a subprocess with a
free port, shared by a test module (its state — the cancellations it saw — is per process, so tests
read it through its tools).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agentactors import InMemoryRecorder, Message, RunResult
from agentactors.mcp import MCPServerHTTP, MCPServerStdio
from tests.support.paths import ROOT

SERVER = ROOT / "tests" / "support" / "mcp_server.py"
#: The bearer token the HTTP test server demands (a secret: it must never show up anywhere).
TOKEN = "mcp-test-token-6f1c9a7e2b5d4803"


def stdio_server(*, state: Path | None = None, env: dict[str, str] | None = None, **options: Any) -> MCPServerStdio:
    """A stdio server running the test server; ``state`` collects one file per process start; ``env``
    adds to its environment (the server's ``MCP_TEST_*`` switches)."""
    env = dict(env or {})
    if state is not None:
        env["MCP_TEST_STATE"] = str(state)
    options.setdefault("name", "test")
    return MCPServerStdio(sys.executable, [str(SERVER), "stdio"], env=env or None, **options)


def starts(state: Path) -> int:
    """How many server processes started with ``state``."""
    return len(list(state.glob("start-*")))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@contextlib.contextmanager
def http_server_process(token: str | None = TOKEN, *, sse: bool = False) -> Iterator[str]:
    """Run the test server over streamable HTTP (or SSE); yields its URL (``http://127.0.0.1:PORT/mcp``,
    ``.../sse``)."""
    with http_server_subprocess(token, sse=sse) as (url, _):
        yield url


@contextlib.contextmanager
def http_server_subprocess(
    token: str | None = TOKEN, *, sse: bool = False
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """:func:`http_server_process`, and its process too (a test that kills it)."""
    port = free_port()
    args = [sys.executable, str(SERVER), "sse" if sse else "http", str(port), *([token] if token else [])]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, process, "the MCP test server")
        yield f"http://127.0.0.1:{port}/{'sse' if sse else 'mcp'}", process
    finally:
        stop_process(process)


def http_server(url: str, *, token: str = TOKEN, **options: Any) -> MCPServerHTTP:
    options.setdefault("name", "web")
    return MCPServerHTTP(url, headers={"Authorization": f"Bearer {token}"}, **options)


def tool_texts(result: RunResult) -> list[str]:
    """The tool messages of a run, in order."""
    return [m.content for m in result.messages if m.role == "tool"]


def statuses(recorder: InMemoryRecorder) -> list[tuple[str, str]]:
    """``(tool name, status)`` of every finished call the recorder saw."""
    return [(e.name, str(e.status)) for e in recorder.events if e.type == "tools.finished"]


def events(recorder: InMemoryRecorder, prefix: str) -> list[Any]:
    return [e for e in recorder.events if e.type.startswith(prefix)]


def offered(requests: Sequence[Any]) -> list[list[str]]:
    """The tool names offered in each request a ScriptedProvider received."""
    return [[spec.name for spec in request.tools] for request in requests]


def user(text: str) -> list[Message]:
    return [Message.user(text)]


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """Stop a test server's ``process``: asked first (SIGTERM), killed if it has not exited within 5 s."""
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def wait_listening(port: int, process: subprocess.Popen[bytes], what: str, within: float = 30.0) -> None:
    """Return once ``process`` listens on 127.0.0.1:``port``.

    :raises RuntimeError: ``what`` exited, or did not listen within ``within`` seconds.
    """
    deadline = time.monotonic() + within
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start") from None
            time.sleep(0.05)
