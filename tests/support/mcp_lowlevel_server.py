"""A real MCP server that lists tools the SDK's own models refuse, for the MCP client tests.

Written with the SDK's low-level ``Server``.  Its handlers answer with valid results (the SDK checks what a
handler returns); a server middleware — the SDK's public ``Server.middleware`` — then puts raw tool
dictionaries into the wire form of each ``tools/list`` page, which is how a server written with another
SDK, or by hand, can send a tool the client's models refuse.  Run as a program, never imported::

    python tests/support/mcp_lowlevel_server.py stdio MODE
    python tests/support/mcp_lowlevel_server.py http MODE PORT    # streamable HTTP on 127.0.0.1:PORT/mcp

``MODE`` chooses the listing (:data:`MODES`); every call of a listed tool is answered ``name:text`` (in
mode ``twins`` with the structured content ``{"n": 1}`` too; ``die``'s call ends the process), followed by
`` [Mcp-Param-Text=VALUE]`` when the call came over HTTP with that header (a tool's ``x-mcp-header`` rule).
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

#: A secret a hostile server echoes inside a malformed tool: it must show up nowhere on the client's side.
SECRET = "sk-live-9f3b1d7c5a2e4086b1d3f5a7c9e1b3d5"


def _tool(name: str, **more: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    return {"name": name, "description": f"The {name} tool.", "inputSchema": schema, **more}


def _many(count: int) -> list[list[dict[str, Any]]]:
    """``count`` tools on pages of 500, every fiftieth one refused by the SDK's models."""
    tools = [
        _tool(f"t{i}") if i % 50 else _tool(f"t{i}", inputSchema={"type": "array", "items": {}}) for i in range(count)
    ]
    return [tools[i : i + 500] for i in range(0, count, 500)]


#: Two output schemas: a result ``{"n": 1}`` (what a call in mode ``twins`` returns as structured content) fits
#: the first only.
_OUT_N: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
_OUT_S: dict[str, Any] = {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]}


def _headed(name: str, header: Any, **more: Any) -> dict[str, Any]:
    """A tool whose ``text`` argument carries the ``x-mcp-header`` annotation ``header`` (2026-07-28)."""
    text = {"type": "string", "x-mcp-header": header}
    schema = {"type": "object", "properties": {"text": text}, "required": ["text"]}
    return _tool(name, inputSchema=schema, **more)


#: Each mode's listing: a list of pages, each a list of raw tool dictionaries.
MODES: dict[str, list[list[dict[str, Any]]]] = {
    "good": [[_tool("echo"), _tool("shout")]],
    # ``die`` ends the process mid-call: its restart must list (and call) as well as the first process did.
    "mortal": [[_tool("echo"), _tool("not_object", inputSchema={"type": "string"}), _tool("die")]],
    # Refused by the SDK's Tool model: an inputSchema whose type is not "object", a name that is no string,
    # no inputSchema at all, annotations of the wrong shape, and a schema type that echoes a secret.
    "mixed": [
        [
            _tool("echo"),
            _tool("not_object", inputSchema={"type": "string"}),
            {"name": 42, "inputSchema": {"type": "object"}},
            {"name": "no_schema", "description": "It has no input schema."},
            _tool("bad_annotations", annotations={"readOnlyHint": "sometimes"}),
            _tool("leaky", inputSchema={"type": SECRET}),
            _tool("shout"),
        ]
    ],
    # The bad tool is on the second page of three: the pages after it still count.
    "paged": [
        [_tool("echo")],
        [_tool("not_object", inputSchema={"type": "string"}), _tool("shout")],
        [_tool("whisper")],
    ],
    # Names: two tools of one name (the first serves), one that some vendors refuse (a dot), one no vendor takes.
    "names": [
        [
            _tool("echo"),
            _tool("echo", description="A second echo."),
            _tool("files.read"),
            _tool("has space"),
            _tool("shout"),
        ]
    ],
    # Names the SDK keys its per-tool state by (the output schema it checks a call's result against): two
    # different tools named ``lookup`` (their output schemas disagree: the SDK keeps the last, by name), one
    # tool listed twice alike, on two pages (``same``), and ``Lookup``, a name of its own.
    "twins": [
        [
            _tool("echo"),
            _tool("lookup", outputSchema=_OUT_N),
            _tool("same", outputSchema=_OUT_N),
            _tool("lookup", description="A second lookup.", outputSchema=_OUT_S),
            _tool("Lookup", outputSchema=_OUT_N),
        ],
        [_tool("same", outputSchema=_OUT_N)],
    ],
    # ``x-mcp-header`` annotations (2026-07-28): ``echo``'s is valid (its calls carry ``Mcp-Param-Text``); the
    # others break the rules a client MUST leave such a tool out for — a header name that is no token (it
    # echoes the secret), one on an object property, one that is not a string, two of one name — but
    # ``not_object``, which the SDK's models refuse (the page is asked for again, sieved for both).
    "headers": [
        [
            _headed("echo", "Text"),
            _headed("leaky_header", f"{SECRET} x"),
            _tool("not_object", inputSchema={"type": "string"}),
            _tool(
                "on_object",
                inputSchema={"type": "object", "properties": {"o": {"type": "object", "x-mcp-header": "O"}}},
            ),
            _headed("numbered", 7),
            _tool(
                "twice",
                inputSchema={
                    "type": "object",
                    "properties": {
                        "a": {"type": "string", "x-mcp-header": "Same"},
                        "b": {"type": "string", "x-mcp-header": "same"},
                    },
                },
            ),
            _tool("shout"),
        ]
    ],
    # ``echo`` twice: with a valid header rule, then an invalid one (the SDK would drop the second and forget
    # the first's rules); ``shout`` once.
    "header_twins": [[_headed("echo", "Text"), _headed("echo", "Bad Header"), _tool("shout")]],
    # ``echo`` twice: as it should be, then with an input schema the SDK's models refuse.
    "refused_twin": [[_tool("echo"), _tool("echo", inputSchema={"type": "string"}), _tool("shout")]],
    "many": _many(2000),
    # Not even a list of tools: the page itself is refused.
    "no_list": [[]],
}


def main(argv: list[str]) -> None:
    kind, mode = argv[0], argv[1]
    pages = MODES[mode]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        text = str((params.arguments or {}).get("text"))
        if params.name == "die":
            os._exit(3)
        structured = {"n": 1} if mode == "twins" else None
        said = f"{params.name}:{text}"
        headers = getattr(ctx.request, "headers", None)  # an HTTP request's (None over stdio)
        if headers is not None and "mcp-param-text" in headers:
            said += f" [Mcp-Param-Text={headers['mcp-param-text']}]"
        return types.CallToolResult(content=[types.TextContent(type="text", text=said)], structured_content=structured)

    async def malformed_listing(ctx: ServerRequestContext[Any], call_next: CallNext) -> Any:
        """The wire form of a tools/list page, its tools replaced by the mode's raw dictionaries."""
        if ctx.method != "tools/list":
            return await call_next(ctx)
        cursor = (ctx.params or {}).get("cursor")
        index = int(cursor) if cursor else 0
        params = {k: v for k, v in (ctx.params or {}).items() if k != "cursor"}
        result: Any = await call_next(replace(ctx, params=params))
        result = dict(result)
        result["tools"] = "not a list" if mode == "no_list" else pages[index]
        result.pop("nextCursor", None)
        if index + 1 < len(pages):
            result["nextCursor"] = str(index + 1)
        return result

    server: Server[Any] = Server("lowlevel-test", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.append(malformed_listing)
    print(f"lowlevel MCP test server starting ({mode})", file=sys.stderr, flush=True)
    if kind == "http":
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(argv[2]), log_level="warning")
        return

    async def serve_stdio() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve_stdio)


if __name__ == "__main__":
    main(sys.argv[1:])
