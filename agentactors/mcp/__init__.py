"""Tools from MCP servers: ``Agent(..., toolsets=[MCPServerStdio(...), MCPServerHTTP(...)])``.

Needs the ``mcp`` extra (``pip install 'agentactors[mcp]'``: the official SDK, ``mcp`` 2.x).  Importing
:mod:`agentactors` never imports this package or the SDK.

An MCP server is a :class:`~agentactors.Toolset`: an agent lists its tools when a run starts (the first
run in a runtime connects; later runs reuse the connection and its listing, until the server says its
tool list changed), and its tools run through the agent's ToolExecutorActor like any tool — argument
validation against the server's JSON Schema, ``tools.started`` / ``tools.finished`` events, the
result ceiling and the operator's cap, ``tool_policy``, timeouts.  A call's result content becomes the
tool result text; an ``isError`` result, a JSON-RPC error, a protocol error or a dead server is status
``error`` with a concise reason (:class:`MCPToolError`'s text), a call past its timeout is status
``timeout`` — never an exception out of the run.  Cancelling a run sends the server
``notifications/cancelled`` for its calls in flight.  An answer the client cannot read (not JSON-RPC,
nested past the parser) ends its call with status ``error`` at once when its id can be read from it.

A tool the server describes badly costs that tool only (left out of the listing, named with a reason in a
WARNING and in the ``mcp.tools_listed`` event): one the SDK's own models refuse (an ``inputSchema`` whose
``type`` is not ``"object"``, a name that is not a string, ...: the connection sieves it out of the answer
before the SDK reads it), on a 2026-07-28 session one whose ``x-mcp-header`` annotations break that version's
rules (sieved out too: the SDK would drop it unreported), an input schema that is not valid JSON Schema, one
over 200,000 characters, one with a ``$ref`` that does not resolve inside the schema itself (nothing is ever
fetched), a name no :class:`~agentactors.ToolSpec` takes, every tool of a name the server gives two tools
that are not alike — one of them left out for any of these reasons included — (a call by name cannot choose
between them), the repeat of a tool listed twice alike (one serves).  The reasons never
quote what the server sent.  A name OpenAI, Anthropic and Bedrock refuse (with a ``.``) is kept and named
(``unportable``).  A page that is wrong as a whole (no list of tools) still fails the listing.  A stdio
server that exits before it answers is a :class:`~agentactors.tools.ToolsetError` quoting the last lines of its stderr.

Modules: ``_server`` (the two public classes and their scopes), ``_link`` (a server in one scope:
connect, restart, list, call), ``_connection`` (the task that owns one session), ``_sieve`` (tools the
SDK refuses, out of a listing), ``_transports`` (stdio with stderr to the log; HTTP with redacted
credentials), ``_results`` (a result as text).

Events: ``mcp.tools_listed`` (``server``, ``tools``, ``skipped`` — ``{"name", "reason"}`` of the tools
left out, the first 100 —, ``skipped_count``, ``unportable``), ``mcp.server_restarted`` (``server``,
``restarts``, ``reason``).  Logs: the ``agentactors.mcp`` logger (a stdio server's stderr at INFO).
"""

from __future__ import annotations

import agentactors._reexport as _reexport
from agentactors._extras import needs_extra

with needs_extra("mcp", "agentactors.mcp"):  # without the SDK: an ImportError that names the extra
    from ._results import MCPToolError
    from ._server import MCPServerHTTP, MCPServerStdio, ToolFilter

__all__ = ["MCPServerHTTP", "MCPServerStdio", "MCPToolError", "ToolFilter"]

# Reprs, tracebacks and pickles name agentactors.mcp.X, where users import X from, not the private module that
# defines it (agentactors._reexport says what that takes to keep type hints resolving).
# ToolFilter is a type alias: it has no module of its own and is left as it is.
_reexport.adopt(globals(), __all__, __name__)
