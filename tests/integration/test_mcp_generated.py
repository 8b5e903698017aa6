"""Generated programs (hypothesis) for the MCP layer, both directions, on both backends — real clocks, generous bounds.

**Our client** (``agentactors.mcp``): a program draws a set of tools — names, JSON-schema parameters (nested objects
and arrays, enums, optional and nullable fields, ``$defs``/``$ref``), an ``outputSchema`` or none — and what each
answers: text blocks (unicode), structured content with or without its JSON as text, an ``isError`` result, a
JSON-RPC error, an exception in the handler, a large result, an image, an embedded resource, structured content that
breaks its own ``outputSchema``.  A real MCP server (the SDK's low-level ``Server``, streamable HTTP, served in the
test: uvicorn on asyncio, hypercorn on trio) lists and answers them; an :class:`~agentactors.mcp.MCPServerHTTP`
toolset (a ``tool_prefix``, a ``result_ceiling`` and an operator's cap drawn too) offers them to an Agent whose
ScriptedProvider calls them — valid arguments drawn from each schema, and calls missing a required argument, several
in one step.  What is checked is what ``agentactors/mcp/__init__.py``, ``agentactors/mcp/_results.py`` and
docs/loop.md ("Tool results") promise: the listing round-trips each schema; every valid call reaches the server with
its arguments as sent, an invalid one never does; each result comes back as the documented text with the documented
status (the ceiling refuses, the cap truncates); nothing hangs.

**Our server** (``agentactors.serve.mcp_server``): generated ``@tool``s (the same schemas) and agents, called by the
official ``mcp`` client in memory: the listing keeps each tool's schema, each call's result, error and cancellation
is as docs/serve.md ("MCP server") says.

One HTTP server per test function (its tools are the current example's); hypothesis draws in a worker thread and
runs each example on the test's event loop (``anyio.from_thread``), as tests/integration/test_serve_generated.py does.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import attrs
import mcp.types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from agentactors import (
    Agent,
    InMemoryRecorder,
    LLMRequest,
    LLMResponse,
    ResultCeiling,
    Runtime,
    ScriptedProvider,
    ToolCall,
    ToolSpec,
)
from agentactors.errors import ErrorKind, ModelRetry, ProviderError
from agentactors.mcp import MCPServerHTTP
from agentactors.redaction import redact
from agentactors.serve import mcp_server
from agentactors.tools.registry import Tool
from agentactors.tools.results import refusal_text, truncate
from tests.support.services import load_example, serving

pytestmark = pytest.mark.anyio

EXAMPLES = int(os.environ.get("MCP_GENERATED_EXAMPLES", "20"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
BOUND = 30.0  # real seconds an example may take before it counts as a hang

# --- schemas and the values they admit --------------------------------------------------------------------------

#: Text as JSON carries it (no lone surrogates: a server's SDK could not send them).
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
KEYS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=8)
Shape = tuple[dict[str, Any], st.SearchStrategy[Any]]


def _leaf() -> st.SearchStrategy[Shape]:
    return st.one_of(
        st.just(({"type": "string"}, TEXT)),
        st.just(({"type": "boolean"}, st.booleans())),
        st.integers(-(2**40), 2**40).flatmap(
            lambda low: st.just(({"type": "integer", "minimum": low}, st.integers(low, low + 1000)))
        ),
        st.just(({"type": "integer"}, st.integers(-(2**62), 2**62))),
        st.just(({"type": "number"}, st.floats(allow_nan=False, allow_infinity=False) | st.integers(-100, 100))),
        st.lists(TEXT, min_size=1, max_size=4, unique=True).map(lambda vs: ({"enum": vs}, st.sampled_from(vs))),
        st.lists(TEXT, min_size=1, max_size=4, unique=True).map(
            lambda vs: ({"type": "string", "enum": vs}, st.sampled_from(vs))
        ),
    )


def _objects(inner: st.SearchStrategy[Shape]) -> st.SearchStrategy[Shape]:
    @st.composite
    def build(draw: st.DrawFn) -> Shape:
        fields = draw(st.dictionaries(KEYS, inner, max_size=4))
        required = sorted(k for k in fields if draw(st.booleans()))
        closed = draw(st.booleans())
        schema: dict[str, Any] = {"type": "object", "properties": {k: s for k, (s, _) in fields.items()}}
        if required:
            schema["required"] = required
        if closed:
            schema["additionalProperties"] = False
        values = st.fixed_dictionaries(
            {k: fields[k][1] for k in required}, optional={k: v for k, (_, v) in fields.items() if k not in required}
        )
        return schema, values

    return build()


def _nested(inner: st.SearchStrategy[Shape]) -> st.SearchStrategy[Shape]:
    return st.one_of(
        inner.map(lambda s: ({"type": "array", "items": s[0]}, st.lists(s[1], max_size=3))),
        inner.map(lambda s: ({"anyOf": [s[0], {"type": "null"}]}, st.none() | s[1])),
        _objects(inner),
    )


shapes = st.recursive(_leaf(), _nested, max_leaves=8)


@st.composite
def parameters(draw: st.DrawFn) -> Shape:
    """A tool's input schema (an object at the root; sometimes its parts behind ``$defs``/``$ref``)."""
    schema, values = draw(_objects(shapes))
    schema["type"] = "object"
    if draw(st.booleans()) and schema["properties"]:
        # One property's schema moved to $defs and referred to: resolved inside the schema itself.
        key = sorted(schema["properties"])[0]
        schema = {**schema, "$defs": {"moved": schema["properties"][key]},
                  "properties": {**schema["properties"], key: {"$ref": "#/$defs/moved"}}}
    return schema, values


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
STRUCTURED = st.dictionaries(TEXT, JSON_VALUES, max_size=4)

# --- what a tool answers ------------------------------------------------------------------------------------------


@attrs.frozen
class Answer:
    """What the server's handler does for one tool, and what the model must read (``None``: checked otherwise)."""

    kind: str
    texts: tuple[str, ...] = ()
    structured: dict[str, Any] | None = None
    json_text: str | None = None  # "compact", "indented", "other" or None (how the structured content is told as text)
    output_schema: dict[str, Any] | None = None
    size: int = 0

    def result(self) -> types.CallToolResult:
        """The handler's result (or it raises)."""
        if self.kind == "raise":
            raise ValueError("the handler broke")
        if self.kind == "rpc":
            raise MCPError(code=-32001, message=self.texts[0])
        if self.kind == "image":
            data = base64.b64encode(b"\x89PNG" + b"\0" * self.size).decode()
            return types.CallToolResult(content=[types.ImageContent(data=data, mime_type="image/png")])
        if self.kind == "resource":
            resource = types.TextResourceContents(uri="file:///r.txt", text=self.texts[0])
            return types.CallToolResult(content=[types.EmbeddedResource(resource=resource)])
        if self.kind == "large":
            return types.CallToolResult(content=[types.TextContent(text="é" * self.size)])
        content: list[Any] = [types.TextContent(text=t) for t in self.texts]
        if self.structured is not None and self.json_text is not None:
            told = {
                "compact": json.dumps(self.structured),
                "indented": json.dumps(self.structured, indent=2, ensure_ascii=False),
                "other": "see the structure",
            }[self.json_text]
            content.insert(0, types.TextContent(text=told))
        return types.CallToolResult(
            content=content, structured_content=self.structured, is_error=self.kind == "is_error"
        )

    def expected(self) -> tuple[str, str]:
        """``(status, text)`` the model reads, before the ceiling and the cap, as the documents say."""
        if self.kind == "raise":
            return "error", "Error: MCPToolError: Internal server error"
        if self.kind == "rpc":
            return "error", f"Error: MCPToolError: {redact(self.texts[0]).strip()}"
        if self.kind == "image":
            return "ok", f"[image: image/png, {4 + self.size:,} bytes]"
        if self.kind == "resource":
            return "ok", redact(self.texts[0])
        if self.kind == "large":
            return "ok", "é" * self.size
        if self.kind == "bad_structured":
            return "error", ""  # the SDK refuses it: what it says is its own
        parts: list[str] = []
        compact = json.dumps(self.structured, ensure_ascii=False, separators=(",", ":"))
        if self.structured is not None and self.json_text in ("compact", "indented"):
            parts.append(compact)
        elif self.json_text == "other":
            parts.append("see the structure")
        parts.extend(self.texts)
        if self.structured is not None and self.json_text is None and not self.texts:
            parts.insert(0, compact)
        text = redact("\n".join(parts))
        if self.kind == "is_error":
            return "error", "Error: MCPToolError: " + (text.strip() or "the tool reported an error and gave no text")
        return "ok", text


answers = st.one_of(
    st.builds(Answer, kind=st.just("text"), texts=st.lists(TEXT, max_size=3).map(tuple)),
    st.builds(
        Answer,
        kind=st.just("structured"),
        texts=st.lists(TEXT, max_size=1).map(tuple),
        structured=STRUCTURED,
        json_text=st.sampled_from([None, "compact", "indented", "other"]),
    ),
    st.builds(Answer, kind=st.just("is_error"), texts=st.lists(TEXT, max_size=2).map(tuple)),
    st.builds(Answer, kind=st.just("rpc"), texts=st.tuples(TEXT.filter(str.strip))),
    st.just(Answer("raise")),
    st.builds(Answer, kind=st.just("large"), size=st.integers(1_000, 300_000)),
    st.builds(Answer, kind=st.just("image"), size=st.integers(0, 5000)),
    st.builds(Answer, kind=st.just("resource"), texts=st.tuples(TEXT)),
)


@attrs.frozen
class GenTool:
    name: str
    description: str
    schema: dict[str, Any]
    values: st.SearchStrategy[Any]
    answer: Answer

    def listed(self) -> types.Tool:
        return types.Tool(name=self.name, description=self.description or None, input_schema=self.schema,
                          output_schema=self.answer.output_schema)


NAMES = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,20}", fullmatch=True)


@st.composite
def toolsets(draw: st.DrawFn) -> list[GenTool]:
    names = draw(st.lists(NAMES, min_size=1, max_size=5, unique_by=str.lower))
    tools = []
    for name in names:
        schema, values = draw(parameters())
        answer = draw(answers)
        if answer.kind == "structured" and draw(st.booleans()):
            # Declared: the structure conforms (the SDK's client checks it), or — drawn — it does not.
            if draw(st.booleans()):
                answer = attrs.evolve(answer, output_schema={"type": "object"})
            else:
                answer = attrs.evolve(
                    answer,
                    kind="bad_structured",
                    output_schema={"type": "object", "required": ["__absent__"]},
                )
        tools.append(GenTool(name, draw(TEXT), schema, values, answer))
    return tools


# --- the server, whose tools are the current example's -----------------------------------------------------------


@attrs.define
class Scene:
    tools: dict[str, GenTool] = attrs.Factory(dict)
    received: list[tuple[str, dict[str, Any]]] = attrs.Factory(list)

    def server(self) -> Server[Any]:
        async def list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=[t.listed() for t in self.tools.values()])

        async def call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            self.received.append((params.name, params.arguments or {}))
            return self.tools[params.name].answer.result()

        return Server("generated", on_list_tools=list_tools, on_call_tool=call_tool)


def run_in_thread(test: Callable[[], None]) -> Any:
    """Hypothesis' loop in a worker thread (its examples call back into the event loop)."""
    return anyio.to_thread.run_sync(test)


def _drop_required(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any] | None:
    required = schema.get("required") or []
    if not required:
        return None
    return {k: v for k, v in arguments.items() if k != required[0]}


async def test_generated_tools_of_a_real_mcp_server_reach_an_agent_as_documented() -> None:
    scene = Scene()
    app = scene.server().streamable_http_app()
    async with serving(app, load_example("serve_all"), probe="/mcp") as base:
        url = base + "/mcp"

        async def example(
            tools: list[GenTool], steps: list[list[tuple[str, dict[str, Any], bool]]], prefix: str | None,
            ceiling: int | None, cap: int | None,
        ) -> None:
            scene.tools = {t.name: t for t in tools}
            scene.received = []
            script: list[Any] = []
            expected: list[tuple[str, str, str, dict[str, Any], bool]] = []
            n = 0
            for step in steps:
                calls = []
                for name, arguments, valid in step:
                    n += 1
                    calls.append(ToolCall(f"c{n}", (prefix or "") + name, arguments))
                    expected.append((f"c{n}", name, (prefix or "") + name, arguments, valid))
                script.append(LLMResponse(tool_calls=calls))
            script.append("done")
            recorder = InMemoryRecorder()
            server = MCPServerHTTP(
                url, name="gen", tool_prefix=prefix, timeout=BOUND,
                result_ceiling=ResultCeiling(max_chars=ceiling) if ceiling is not None else None,
            )
            with anyio.fail_after(BOUND):
                async with Runtime(recorders=[recorder]):  # the connection is the runtime's: closed as it exits
                    agent = Agent(ScriptedProvider(script), toolsets=[server], max_tool_result_chars=cap,
                                  max_steps=len(steps) + 1)
                    result = await agent.run("go")
            assert result.ok, result.error
            # The listing round-trips each schema.
            (listed,) = [e for e in recorder.events if e.type == "mcp.tools_listed"]
            assert sorted(listed.tools) == sorted((prefix or "") + t.name for t in tools), listed
            assert listed.skipped_count == 0, listed.skipped
            first = agent_request_tools(script_provider(agent))
            for t in tools:
                spec = first[(prefix or "") + t.name]
                assert spec.parameters == t.schema
                assert spec.description == t.description
            # Each valid call reached the server with its arguments as sent; an invalid one never did.
            sent = [(name, arguments) for _, name, _, arguments, valid in expected if valid]
            assert sorted(scene.received, key=repr) == sorted(sent, key=repr)
            finished = {e.call_id: e for e in recorder.events if e.type == "tools.finished"}
            said = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
            for call_id, name, model_name, _, valid in expected:
                status = str(finished[call_id].status)
                text = said[call_id]
                if not valid:
                    assert status == "invalid", (status, text)
                    assert text.startswith(f"Invalid arguments for tool '{model_name}'"), text
                    continue
                answer = scene.tools[name].answer
                want_status, want = answer.expected()
                if want_status == "ok" and ceiling is not None and len(want) > ceiling:
                    want_status, want = "invalid", refusal_text(model_name, len(want), ResultCeiling(max_chars=ceiling))
                elif cap is not None and want_status in ("ok", "error"):
                    want = truncate(model_name, want, cap)
                assert status == want_status, (answer, status, text)
                if answer.kind == "bad_structured":  # the SDK's reason, concise (the client's own bound)
                    assert text.startswith("Error: MCPToolError: MCP server 'gen' failed the call: "), text
                    assert len(text) <= (cap or 400), text
                else:
                    assert text == want, (answer, text[:300], want[:300])

        @SETTINGS
        @given(tools=toolsets(), data=st.data(),
               prefix=st.none() | st.sampled_from(["p_", "srv-"]),
               ceiling=st.none() | st.integers(1, 200_000), cap=st.none() | st.integers(1, 200_000))
        def program(tools: list[GenTool], data: st.DataObject, prefix: str | None, ceiling: int | None,
                    cap: int | None) -> None:
            steps = []
            made: set[str] = set()  # no call twice: the loop notes a repeated call's result (docs/loop.md, Nudges)
            for _ in range(data.draw(st.integers(1, 3))):
                step = []
                for t in data.draw(st.lists(st.sampled_from(tools), min_size=1, max_size=4)):
                    arguments = data.draw(t.values)
                    broken = _drop_required(t.schema, arguments) if data.draw(st.integers(0, 5)) == 0 else None
                    call = (t.name, broken, False) if broken is not None else (t.name, arguments, True)
                    key = json.dumps(call[:2], sort_keys=True)
                    if key not in made:
                        made.add(key)
                        step.append(call)
                if step:
                    steps.append(step)
            anyio.from_thread.run(example, tools, steps, prefix, ceiling, cap)

        await run_in_thread(program)


def script_provider(agent: Agent[Any]) -> ScriptedProvider:
    provider = agent.provider
    assert isinstance(provider, ScriptedProvider)
    return provider


def agent_request_tools(provider: ScriptedProvider) -> dict[str, Any]:
    return {spec.name: spec for spec in provider.requests[0].tools}


async def test_a_null_the_schema_accepts_through_a_ref_reaches_the_server() -> None:
    # Found by the program above: ``{"x": null}`` for a property whose schema is a ``$ref`` to a nullable one was read
    # as "left out" (tools/json_nulls did not follow the reference) and the server received ``{}``.
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/maybe"}},
              "$defs": {"maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
    scene = Scene(tools={"t": GenTool("t", "", schema, st.nothing(), Answer("text", texts=("ok",)))})
    async with serving(scene.server().streamable_http_app(), load_example("serve_all"), probe="/mcp") as base:
        server = MCPServerHTTP(base + "/mcp", name="gen", timeout=BOUND)
        async with Runtime():
            agent = Agent(ScriptedProvider([ToolCall("c1", "t", {"x": None}), "done"]), toolsets=[server])
            with anyio.fail_after(BOUND):
                result = await agent.run("go")
    assert result.ok and [m.content for m in result.messages if m.role == "tool"] == ["ok"]
    assert scene.received == [("t", {"x": None})]


# --- our served endpoint, called by the SDK's client ---------------------------------------------------------------

#: What a served ``@tool`` does: returns a value (a str as text; anything else as JSON text and structured content),
#: or raises.
served_outcomes = st.one_of(
    st.tuples(st.just("return"), TEXT | JSON_VALUES),
    st.tuples(st.just("raise"), TEXT),
    st.tuples(st.just("retry"), TEXT),
)


@attrs.define
class ServedScene:
    received: list[tuple[str, dict[str, Any]]] = attrs.Factory(list)
    outcomes: dict[str, tuple[str, Any]] = attrs.Factory(dict)
    started: int = 0
    cancelled: int = 0

    def tool(self, name: str, description: str, schema: dict[str, Any], outcome: tuple[str, Any]) -> Tool[Any, Any]:
        kind, value = self.outcomes[name] = outcome

        async def body(**arguments: Any) -> Any:
            self.received.append((name, arguments))
            if kind == "raise":
                raise ValueError(value)
            if kind == "retry":
                raise ModelRetry(value)
            return value

        return Tool.from_spec(ToolSpec(name, description, schema), body)

    def agent(self, name: str, behaviour: str) -> Agent[Any]:
        async def answer(request: LLMRequest) -> Any:
            self.started += 1
            if behaviour == "hang":
                try:
                    await anyio.sleep_forever()
                finally:
                    self.cancelled += 1
            if behaviour == "fail":
                return ProviderError("vendor says no at https://vendor.example/v1", kind=ErrorKind.request,
                                     provider="scripted")
            return f"{name} heard: {request.messages[-1].content}"

        return Agent(ScriptedProvider(answer), name=name)


def _text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_generated_tools_and_agents_served_over_mcp_answer_the_sdk_client_as_documented() -> None:
    async def example(scene: ServedScene, offered: list[Any], calls: list[tuple[Any, dict[str, Any], bool]],
                      hang: str | None) -> None:
        server = mcp_server(offered, name="generated")
        with anyio.fail_after(BOUND):
            async with Client(server) as client:
                listed = (await client.list_tools()).tools
                assert [t.name for t in listed] == [e.name for e in offered]
                for t, entry in zip(listed, offered, strict=True):
                    if isinstance(entry, Tool):
                        assert t.input_schema == entry.parameters and (t.description or "") == entry.description
                for entry, arguments, valid in calls:
                    before = len(scene.received)
                    answer = await client.call_tool(entry.name, arguments)
                    check_served(scene, entry, arguments, valid, answer, before)
                if hang is not None:
                    # The client cancels a call (notifications/cancelled): the run is cancelled, in the server.
                    started, cancelled = scene.started, scene.cancelled
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(client.call_tool, hang, {"input": "wait"})
                        while scene.started == started:  # noqa: ASYNC110 - the server's task changes it
                            await anyio.sleep(0.01)
                        tg.cancel_scope.cancel()
                    while scene.cancelled == cancelled:  # noqa: ASYNC110 - the server's task changes it
                        await anyio.sleep(0.01)
                    # The connection serves the next call after a cancelled one.
                    if calls:
                        entry, arguments, valid = calls[0]
                        before = len(scene.received)
                        check_served(scene, entry, arguments, valid, await client.call_tool(entry.name, arguments),
                                     before)

    def check_served(scene: ServedScene, entry: Any, arguments: dict[str, Any], valid: bool,
                     answer: types.CallToolResult, before: int) -> None:
        text = _text(answer)
        if isinstance(entry, Agent):
            behaviour = str(entry.name).split("_")[0]
            if not valid:
                assert answer.is_error and "'input'" in text, text
            elif behaviour == "fail":
                assert answer.is_error and "vendor" not in text, text
            else:
                assert not answer.is_error and text == f"{entry.name} heard: {arguments['input']}"
            return
        if not valid:
            assert answer.is_error and text.startswith(f"Invalid arguments for tool '{entry.name}'"), text
            assert len(scene.received) == before, "an invalid call never runs"
            return
        assert scene.received[before:] == [(entry.name, arguments)], "the arguments arrive as sent"
        kind, value = scene.outcomes[entry.name]
        if kind == "raise":
            message = redact(value).strip()
            want = f"ValueError: {message}" if message else "ValueError"
            assert answer.is_error and text == want, (text, want)
        elif kind == "retry":
            assert answer.is_error and text == redact(value)[:500], (text, value)
        elif isinstance(value, str):
            assert not answer.is_error and text == value and answer.structured_content is None
        else:
            assert not answer.is_error and json.loads(text) == value, (text, value)
            assert answer.structured_content == (value if isinstance(value, dict) else {"result": value})

    @SETTINGS
    @given(data=st.data(), names=st.lists(NAMES, min_size=1, max_size=4, unique_by=str.lower),
           agents=st.lists(st.sampled_from(["text", "fail", "hang"]), max_size=3))
    def program(data: st.DataObject, names: list[str], agents: list[str]) -> None:
        scene = ServedScene()
        offered: list[Any] = []
        strategies: dict[str, st.SearchStrategy[Any]] = {}
        for name in names:
            schema, values = data.draw(parameters())
            offered.append(scene.tool(name, data.draw(TEXT), schema, data.draw(served_outcomes)))
            strategies[name] = values
        for i, behaviour in enumerate(agents):
            offered.append(scene.agent(f"{behaviour}_{i}", behaviour))
        calls: list[tuple[Any, dict[str, Any], bool]] = []
        for entry in data.draw(st.lists(st.sampled_from([e for e in offered if e.name.split("_")[0] != "hang"]),
                                        max_size=6)):
            if isinstance(entry, Agent):
                valid = data.draw(st.integers(0, 4)) > 0
                wrong: list[dict[str, Any]] = [{}, {"input": 3}, {"input": "x", "more": 1}]
                arguments = {"input": data.draw(TEXT)} if valid else data.draw(st.sampled_from(wrong))
                valid = valid and arguments["input"] != ""
            else:
                arguments = data.draw(strategies[entry.name])
                broken = _drop_required(entry.parameters, arguments) if data.draw(st.integers(0, 4)) == 0 else None
                valid = broken is None
                arguments = arguments if broken is None else broken
            calls.append((entry, arguments, valid))
        hangs = [e.name for e in offered if e.name.startswith("hang")]
        anyio.from_thread.run(example, scene, offered, calls, hangs[0] if hangs else None)

    await run_in_thread(program)


async def test_an_agent_asked_with_an_empty_input_is_told_so() -> None:
    # Found by the program above: ``{"input": ""}`` fits the agent's tool schema, and the run's own refusal came back
    # as "the agent failed in the server (ValueError)" — a client could not tell it had sent something wrong.
    server = mcp_server([Agent(ScriptedProvider(["never"]), name="echo")])
    with anyio.fail_after(BOUND):
        async with Client(server) as client:
            (listed,) = (await client.list_tools()).tools
            answer = await client.call_tool("echo", {"input": ""})
    assert listed.input_schema["properties"]["input"]["minLength"] == 1
    assert answer.is_error and _text(answer) == "the argument 'input' must not be empty: say what to ask the agent"
