"""``mcp_server``: agents and tools offered as MCP tools, to Claude Desktop, IDEs and other agents.

Built on the official ``mcp`` SDK's low-level :class:`mcp.server.lowlevel.Server` (the ``[mcp]`` extra):
its tools are listed and called from this module's two handlers, so an agent's tool and a ``@tool``'s
keep exactly the schemas they have here.  Each agent is a tool taking ``input`` (a non-empty string) and nothing
else — an argument it would not read, or an empty ``input``, is an ``isError`` result saying so, as a ``@tool``'s is
— whose result is the answer as text content.  An agent with a typed output (``output_type``) also declares an
``outputSchema`` — the output type's schema when that is an object, else ``{"result": <its schema>}`` (MCP 2025-06-18
asks for an object at the root, and recommends that wrapper) — and answers the value as structured content
conforming to it (a client checks it: the SDK's does), and as JSON text (the bare value, for clients that read text
only).
Each ``@tool`` (or plain function) keeps its name, description and parameters schema.

A failing call is an ``isError`` result whose text says briefly what failed: a tool's error by its class and
message (redacted); an agent's failed run by its error's class — a provider's failure by its kind, never by the
vendor's text, which may carry its endpoint's URL or an account (the server's log has it).  A call cancelled by
the client (``notifications/cancelled``) cancels the run or the tool.  Serve it over stdio::

    from mcp.server.stdio import stdio_server

    server = mcp_server([agent])
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

or over streamable HTTP, as an ASGI app (uvicorn, hypercorn) at ``/mcp``: ``server.streamable_http_app()``.
The agents' runs use ``runtime=`` when given, else an agent's bound runtime, else one the server opens
for its lifetime (its lifespan, entered once per stdio connection or HTTP app).

No sessions: each call is a conversation of its own.  The handlers see no connection identity, whatever the
transport does — the SDK's streamable HTTP transport hands an ``Mcp-Session-Id`` to a client that initializes at
a revision that has them (2025-06-18, for one), but that id is the transport's and reaches no handler — so
there is no conversation key to keep a history under (docs/serve.md, "Sessions").

Approval: a ``@tool(requires_approval=True)`` is refused when offered directly (a ``ValueError`` naming it): an
MCP call of it would run with nobody approving.  Offered inside an agent, its call pauses the run, and the
agent's tool answers an ``isError`` result saying which calls await a person's approval, in which run.

Spans: the SDK makes each call a ``tools/call {name}`` SERVER span (its own middleware, the global tracer
provider); a call to an agent adds ``gen_ai.agent.name`` and ``agentactors.run_id`` to it, and the run's own
spans (:class:`~agentactors.otel.OTelRecorder`) hang under it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio

from .._extras import needs_extra

with needs_extra("mcp", "agentactors.serve.mcp_server"):  # without the SDK: an ImportError that names the extra
    import mcp_types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

from .._version import __version__
from ..actors.runtime import Runtime
from ..agent.core import Agent
from ..errors import ModelRetry, ProviderError, ToolDenied, redact
from ..loop.result import RunResult
from ..output.config import OutputConfig
from ..output.target import WRAPPER, Member
from ..tools.registry import Tool, ToolContext, tool
from ..tools.results import render_result
from ..tools.validation import ArgumentValidator
from ._http import CANCELLED_TEXT, client_text, paused_text, runtime_to_enter

__all__ = ["mcp_server"]

#: The one parameter of an agent's tool (no other: one the run would not read is refused, not dropped); never empty (a
#: run needs a prompt).
AGENT_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "minLength": 1, "description": "What to ask the agent."}},
    "required": ["input"],
    "additionalProperties": False,
}

_MAX_ERROR = 500

#: What :func:`mcp_server` offers: agents and tools, as a list or as ``{tool name: agent or tool}``.
Offered = Mapping[str, "Agent[Any] | Tool[Any, Any]"] | Iterable["Agent[Any] | Tool[Any, Any] | Callable[..., Any]"]


def mcp_server(
    agents_or_tools: Offered,
    *,
    name: str = "agentactors",
    runtime: Runtime | None = None,
) -> Server[dict[str, Any]]:
    """An MCP server (the SDK's low-level ``Server``) offering ``agents_or_tools`` as its tools.

    ``agents_or_tools``: agents (each needs a ``name``: its tool's name) and ``@tool``s or plain functions,
    or a mapping ``{tool name: agent or tool}``.  ``name``: the server's name in the MCP handshake.

    :raises TypeError: an entry that is neither an Agent nor a tool.
    :raises ValueError: an agent without a name, two tools of one name, or a tool with ``requires_approval``
        (offered directly, its calls would run unapproved: offer an agent that has it among its tools).
    """
    entries = _entries(agents_or_tools)
    outputs = {
        tool_name: output
        for tool_name, entry in entries.items()
        if isinstance(entry, Agent) and (output := _Output.of(entry, tool_name)) is not None
    }
    listing = [_listed(tool_name, entry, outputs.get(tool_name)) for tool_name, entry in entries.items()]
    holder = _Runtimes(runtime, [e for e in entries.values() if isinstance(e, Agent)])

    async def list_tools(
        ctx: ServerRequestContext[dict[str, Any]], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(
        ctx: ServerRequestContext[dict[str, Any]], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        entry = entries.get(params.name)
        if entry is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        arguments = params.arguments or {}
        if isinstance(entry, Agent):
            return await _ask(entry, arguments, holder.for_agent(entry), outputs.get(params.name))
        return await _call(entry, arguments)

    return Server(name, version=__version__, lifespan=holder.lifespan, on_list_tools=list_tools, on_call_tool=call_tool)


def _entries(given: Any) -> dict[str, Agent[Any] | Tool[Any, Any]]:
    if isinstance(given, Agent | Tool) or (callable(given) and not isinstance(given, Mapping)):
        given = [given]
    items = given.items() if isinstance(given, Mapping) else ((None, e) for e in given)
    entries: dict[str, Agent[Any] | Tool[Any, Any]] = {}
    for key, entry in items:
        if not isinstance(entry, Agent | Tool):
            if not callable(entry):
                raise TypeError(f"mcp_server offers Agents and tools, not {type(entry).__name__}")
            entry = tool(entry)
        tool_name = key or entry.name
        if not tool_name:
            raise ValueError("an agent offered over MCP needs a name: Agent(..., name=...) or {name: agent}")
        if tool_name in entries:
            raise ValueError(f"two tools named {tool_name!r}")
        if isinstance(entry, Tool) and entry.requires_approval:
            # Called directly, the call would run on the client's word alone: an MCP call has no pause, and
            # nobody in the server to decide.  Inside an agent, the run pauses (or waits) for a person.
            named = repr(tool_name) if tool_name == entry.name else f"{tool_name!r} ({entry.name!r})"
            raise ValueError(
                f"the tool {named} has requires_approval=True: an MCP client's call of it would run with nobody "
                "approving it; serve it inside an agent, whose run pauses for a person's approval"
            )
        entries[tool_name] = entry
    if not entries:
        raise ValueError("mcp_server needs at least one agent or tool")
    return entries


def _listed(tool_name: str, entry: Agent[Any] | Tool[Any, Any], output: _Output | None) -> types.Tool:
    if isinstance(entry, Tool):
        return types.Tool(name=tool_name, description=entry.description or None, input_schema=entry.parameters)
    description = f"Ask the {tool_name} agent: it answers `input`, using its own tools."
    return types.Tool(
        name=tool_name,
        description=description,
        input_schema=AGENT_INPUT_SCHEMA,
        output_schema=output.schema if output is not None else None,
    )


#: The property a non-object output is wrapped in, in the structured content and the ``outputSchema`` (MCP's advice).
RESULT = "result"


class _Output:
    """A typed agent's output as its MCP tool declares it (``outputSchema``) and answers it (structured content).

    MCP asks that a tool's structured content conform to its ``outputSchema``, an object at the root (through
    2025-11-25; clients check it).  The schema is the output type's, as the agent's runs ask the model for it
    (:class:`~agentactors.output.target.OutputTarget`): an object type's schema as it is — a union of object types
    as ``anyOf`` its members' under ``"type": "object"`` — and any other type's (a scalar, a list, an optional
    class, a pick) wrapped as ``{"result": ...}``, which the value is wrapped in too.  Decided from the type, not
    from each value: an ``A | None`` answers ``{"result": {...}}`` and ``{"result": null}`` alike, as declared.
    """

    __slots__ = ("schema", "validator", "wrapped")

    def __init__(self, schema: dict[str, Any], wrapped: bool, tool_name: str) -> None:
        self.schema = schema
        self.wrapped = wrapped
        self.validator = ArgumentValidator(schema, tool_name=tool_name)

    @classmethod
    def of(cls, agent: Agent[Any], tool_name: str) -> _Output | None:
        """``agent``'s declared output, or ``None`` for a text answer (``output_type`` ``str``)."""
        if agent.output_type is str:
            return None
        config = OutputConfig.build(agent.output_type, retries=0, validator=None)
        target = config.target if config is not None else None
        if target is None:
            return None
        inner = _bare(target.members[0]) if not target.is_union else {"anyOf": [_bare(m) for m in target.members]}
        if _is_object(inner):
            return cls({**inner, "type": "object"}, False, tool_name)
        wrapped = {"type": "object", "properties": {RESULT: inner}, "required": [RESULT], "additionalProperties": False}
        return cls(wrapped, True, tool_name)

    def structured(self, output: Any) -> tuple[str, dict[str, Any] | None]:
        """The text content (the value's JSON) and the structured content of ``output``; ``None`` for the latter
        when the value does not fit the declared schema (:func:`_ask` answers an error then: a client would
        refuse it)."""
        # (render_result dumps a pydantic model by its aliases, as its schema names the fields, at any depth.)
        text = json.dumps(output, ensure_ascii=False) if isinstance(output, str) else render_result(output)
        value = json.loads(text)
        structured = {RESULT: value} if self.wrapped else value
        if not isinstance(structured, dict) or self.validator.issues(structured):
            return text, None
        return text, structured


def _bare(member: Member) -> dict[str, Any]:
    """The schema of ``member``'s values themselves: its object schema, unwrapped when the runs wrap it for the
    model (``{"response": ...}``: every output strategy needs an object at the root, as MCP does)."""
    schema: dict[str, Any] = member.schema["properties"][WRAPPER] if member.wrapped else member.schema
    return schema


def _is_object(schema: Mapping[str, Any]) -> bool:
    """Whether every value ``schema`` admits is a JSON object (its own ``type``, or each of its alternatives')."""
    if schema.get("type") == "object":
        return True
    alternatives = schema.get("anyOf", schema.get("oneOf"))
    return isinstance(alternatives, list) and bool(alternatives) and all(
        isinstance(a, Mapping) and _is_object(a) for a in alternatives
    )


class _Runtimes:
    """The runtime each agent's runs use; the server's lifespan opens one when no agent has its own."""

    def __init__(self, runtime: Runtime | None, agents: list[Agent[Any]]) -> None:
        if runtime is not None and not isinstance(runtime, Runtime):
            raise TypeError(f"runtime must be a Runtime or None, not {type(runtime).__name__}")
        self.explicit = runtime
        self.needs_own = runtime is None and any(a.runtime is None for a in agents)
        self.opened: Runtime | None = None

    def for_agent(self, agent: Agent[Any]) -> Runtime | None:
        return self.explicit or agent.runtime or self.opened

    @asynccontextmanager
    async def lifespan(self, server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        owned = runtime_to_enter(self.explicit, "server")
        if owned is not None:
            async with owned:  # nobody entered it: the server runs it for its lifetime, as the HTTP apps do
                yield {}
            return
        if not self.needs_own or self.opened is not None:
            yield {}
            return
        async with Runtime() as rt:
            self.opened = rt
            try:
                yield {}
            finally:
                self.opened = None


async def _ask(
    agent: Agent[Any], arguments: Mapping[str, Any], runtime: Runtime | None, output: _Output | None
) -> types.CallToolResult:
    prompt = arguments.get("input")
    if not isinstance(prompt, str):
        return _error("the argument 'input' (a string) is required")
    if not prompt:  # the run would refuse it, and the client read "failed in the server": it is the client's to fix
        return _error("the argument 'input' must not be empty: say what to ask the agent")
    others = sorted(str(name)[:100] for name in arguments if name != "input")
    if others:
        return _error(f"the agent takes 'input' alone, not {', '.join(map(repr, others[:5]))}: put it in 'input'")
    _annotate("gen_ai.agent.name", agent.name)
    try:
        result = await agent.run(prompt, runtime=runtime)
    except Exception as exc:
        return _error(client_text(exc))
    _annotate("agentactors.run_id", result.run_id)
    if not result.ok:
        return _error(_failure(result))
    if output is None:
        return types.CallToolResult(content=[types.TextContent(text=result.content)])
    # The value's JSON is the text too: under the output-tool strategy the run's text is empty, and MCP asks a tool
    # with structured content to give it as text as well, for clients that read text only.
    text, structured = output.structured(result.output)
    if structured is None:  # a value rendered other than its schema says: a client would refuse it, unexplained
        return _error("the agent's answer does not fit its tool's outputSchema")
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def _failure(result: RunResult[Any]) -> str:
    # A paused or cancelled run has no error and no answer: said as what it is, not as "no answer" — a client
    # (a model) that reads that retries the call, and each retry pauses another run at the same tool call.
    if result.paused:
        return paused_text(result.pending_approvals, result.run_id)
    if result.cancelled:
        return CANCELLED_TEXT
    if result.error is not None:  # never the provider's own text: what it may carry is the server's to read
        return client_text(result.error)
    if result.bounded:
        return "the agent stopped at its step limit before a final answer"
    return "the agent produced no answer"


async def _call(entry: Tool[Any, Any], arguments: Mapping[str, Any]) -> types.CallToolResult:
    issues = entry.validate(arguments)
    if issues:
        return _error(entry.invalid_text(issues))
    context = ToolContext(call_id=f"mcp-{uuid.uuid4().hex[:12]}", tool_name=entry.name)
    try:
        with anyio.fail_after(entry.timeout):
            value = await entry.invoke(arguments, context)
        text = render_result(value)
    except (ModelRetry, ToolDenied) as signal:
        return _error(redact(str(signal))[:_MAX_ERROR])
    except Exception as exc:
        return _error(_described(exc))
    structured = None
    if not isinstance(value, str):
        parsed = json.loads(text)
        structured = parsed if isinstance(parsed, dict) else {"result": parsed}
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def _described(exc: BaseException) -> str:
    """A tool's exception as the client reads it: its class and message (a tool's own words, for the model
    calling it to act on) — but a provider's failure inside it only by its kind (:func:`~._http.client_text`)."""
    if isinstance(exc, ProviderError):
        return client_text(exc)
    message = redact(str(exc)).strip()
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text if len(text) <= _MAX_ERROR else text[: _MAX_ERROR - 1] + "…"


def _annotate(key: str, value: str | None) -> None:
    """An attribute on the span of the call (the SDK's ``tools/call`` span), when there is one."""
    if value is None:
        return
    from opentelemetry import trace  # the mcp SDK depends on opentelemetry-api

    trace.get_current_span().set_attribute(key, value)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)
