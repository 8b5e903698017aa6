"""A real MCP server for the MCP tests, written with the SDK's server API (``MCPServer``, once FastMCP).

Run as a program, never imported by the package::

    python tests/support/mcp_server.py stdio
    python tests/support/mcp_server.py http PORT          # streamable HTTP on 127.0.0.1:PORT at /mcp
    python tests/support/mcp_server.py http PORT TOKEN    # ... answering only requests with that bearer token
    python tests/support/mcp_server.py sse PORT [TOKEN]   # the older SSE transport: /sse and /messages/

Its tools cover what the client must handle: structured arguments and results, an ``isError`` result, a
JSON-RPC error, a call that hangs (and records the cancellation that reaches it), a 10 MB result, a
server that dies mid-call, a tool list that changes, an image.  It writes a line to stderr at start (the
client logs a stdio server's stderr) and, when ``MCP_TEST_STATE`` names a directory, a file there per
start (so a test can count restarts across processes).  ``MCP_TEST_SILENT_LISTING=1`` makes it never answer
its tool listing; ``MCP_TEST_MANY_TOOLS=N`` lists N more tools, each with a schema of its own.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

server = MCPServer("agentactors-test")

#: Calls whose handler saw a cancellation (the client's ``notifications/cancelled``), by tag.
CANCELLED: list[str] = []
#: Tags of hang calls that are running now.
RUNNING: list[str] = []


class Filters(BaseModel):
    """Search filters."""

    language: str
    min_stars: int


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def search(query: str, filters: Filters, limit: int = 3) -> dict[str, Any]:
    """Search repositories (structured arguments in, structured content out)."""
    hits = [f"{query}-{filters.language}-{i}" for i in range(limit)]
    return {"query": query, "min_stars": filters.min_stars, "hits": hits}


@server.tool()
def fail(message: str) -> str:
    """Always fails with an isError result carrying ``message``."""
    raise ToolError(message)


@server.tool()
def rpc_error(message: str) -> str:
    """Always fails with a JSON-RPC error carrying ``message``."""
    raise MCPError(code=-32000, message=message)


@server.tool()
async def hang(tag: str, seconds: float = 3600.0) -> str:
    """Sleeps (an hour by default), recording whether it was cancelled."""
    RUNNING.append(tag)
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        CANCELLED.append(tag)
        raise
    finally:
        RUNNING.remove(tag)
    return f"slept {seconds}"


@server.tool()
def cancellations() -> list[str]:
    """The tags of the hang calls that were cancelled so far."""
    return list(CANCELLED)


@server.tool()
def running() -> list[str]:
    """The tags of the hang calls running now."""
    return list(RUNNING)


@server.tool()
def big(chars: int) -> str:
    """Returns ``chars`` characters of text."""
    return "x" * chars


@server.tool()
def die(code: int = 3) -> str:
    """The server process exits in the middle of the call."""
    sys.stderr.flush()
    os._exit(code)


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def picture() -> Image:
    """A tiny PNG."""
    return Image(data=b"\x89PNG\r\n\x1a\n" + b"\x00" * 16, format="png")


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool called ``name`` and tells the client that the tool list changed."""

    def added() -> str:
        return f"I am {name}"

    server.add_tool(added, name=name, description=f"A tool added at run time: {name}.")
    # Both eras: a subscriptions/listen stream (2026-07-28) and the session's notification (earlier).
    await ctx.notify_tools_changed()
    await ctx.request_context.session.send_tool_list_changed()
    return f"added {name}"


@server.tool(name="say_secret")
def say_secret(ctx: Context) -> str:
    """Echoes the Authorization header the request arrived with (HTTP only)."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None) or {}
    return str(headers.get("authorization", "none"))


def _mark_start() -> None:
    state = os.environ.get("MCP_TEST_STATE")
    if state:
        Path(state, f"start-{os.getpid()}-{time.monotonic_ns()}").touch()


async def _never_lists() -> list[Any]:
    """``MCP_TEST_SILENT_LISTING``: a server that takes its listing request and never answers it."""
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


async def _many_tools() -> list[Any]:
    """``MCP_TEST_MANY_TOOLS=N``: the tools, and N more with schemas of their own (a large listing)."""
    from mcp.types import Tool as MCPTool

    extra = [
        MCPTool(
            name=f"extra_{i}",
            description=f"Extra tool {i}.",
            input_schema={
                "type": "object",
                "properties": {f"field_{i}": {"type": "string", "maxLength": 10 + i}, "n": {"type": "integer"}},
                "required": [f"field_{i}"],
            },
        )
        for i in range(int(os.environ["MCP_TEST_MANY_TOOLS"]))
    ]
    return [*await MCPServer.list_tools(server), *extra]


def main(argv: list[str]) -> None:
    _mark_start()
    if os.environ.get("MCP_TEST_SILENT_LISTING"):
        server.list_tools = _never_lists  # type: ignore[method-assign]
    elif os.environ.get("MCP_TEST_MANY_TOOLS"):
        server.list_tools = _many_tools  # type: ignore[method-assign]
    print(f"agentactors-test MCP server starting (pid {os.getpid()})", file=sys.stderr, flush=True)
    if argv[:1] in (["http"], ["sse"]):
        port = int(argv[1])
        token = argv[2] if len(argv) > 2 else None
        _serve_http(port, token, sse=argv[0] == "sse")
    else:
        server.run("stdio")


def _serve_http(port: int, token: str | None, *, sse: bool = False) -> None:
    import uvicorn
    from starlette.responses import PlainTextResponse
    from starlette.types import ASGIApp, Receive, Scope, Send

    app: ASGIApp = server.sse_app() if sse else server.streamable_http_app()

    if token is not None:
        inner = app

        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                sent = dict(scope.get("headers") or []).get(b"authorization", b"").decode()
                if sent != f"Bearer {token}":
                    await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
                    return
            await inner(scope, receive, send)

        app = guarded

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
