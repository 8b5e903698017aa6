"""mcp_server over its two transports, called with the ``mcp`` SDK's own client: stdio (a subprocess) and
streamable HTTP (served on 127.0.0.1 in the test: uvicorn on asyncio, hypercorn on trio).  A client's
cancellation (``notifications/cancelled``) reaches the run over both."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from starlette.applications import Starlette

from agentactors import Agent, LLMRequest, ScriptedProvider, ToolCall, tool
from agentactors.serve import mcp_server
from tests.support.paths import ROOT
from tests.support.services import load_example, serving

pytestmark = pytest.mark.anyio

# The stdio server: an agent that answers, and one that hangs and records its cancellation in a file.
STDIO_SERVER = textwrap.dedent(
    """
    import os, sys
    import anyio
    from mcp.server.stdio import stdio_server
    from agentactors import Agent, ScriptedProvider, tool
    from agentactors.serve import mcp_server

    @tool
    def add(a: int, b: int) -> int:
        "Add two integers."
        return a + b

    async def hang(request):
        open(os.environ["CANCELLED_FILE"] + ".started", "w").close()
        try:
            await anyio.sleep_forever()
        finally:
            with open(os.environ["CANCELLED_FILE"], "w") as f:
                f.write("cancelled")

    async def main():
        echo = Agent(ScriptedProvider(lambda request: "echo: " + request.messages[-1].content), name="echo")
        slow = Agent(ScriptedProvider(hang), name="slow")
        server = mcp_server([echo, slow, add], name="stdio-test")
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    """
)


def stdio_params(cancelled_file: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-c", STDIO_SERVER], cwd=str(ROOT),
        env={"CANCELLED_FILE": str(cancelled_file), "PYTHONPATH": str(ROOT)},
    )


async def cancel_a_call(client: Client, tool_name: str, started: Any) -> None:
    """Call ``tool_name`` and cancel the call once ``started()`` is true (the client sends notifications/cancelled)."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.call_tool, tool_name, {"input": "wait"})
        with anyio.fail_after(20):
            while not started():  # noqa: ASYNC110 - over stdio, the server's process can only tell by a file
                await anyio.sleep(0.02)
        tg.cancel_scope.cancel()


async def test_over_stdio(tmp_path: Path) -> None:
    cancelled = tmp_path / "cancelled"
    async with Client(stdio_params(cancelled)) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["echo", "slow", "add"]
        answer = await client.call_tool("echo", {"input": "hello"})
        assert not answer.is_error and answer.content[0].text == "echo: hello"  # type: ignore[union-attr]
        total = await client.call_tool("add", {"a": 2, "b": 40})
        assert total.content[0].text == "42"  # type: ignore[union-attr]
        await cancel_a_call(client, "slow", (tmp_path / "cancelled.started").exists)
        with anyio.fail_after(20):
            while not cancelled.exists():  # noqa: ASYNC110 - the server's process tells by a file
                await anyio.sleep(0.05)
        # The connection is still good after a cancelled call.
        again = await client.call_tool("echo", {"input": "still here"})
        assert again.content[0].text == "echo: still here"  # type: ignore[union-attr]


@tool
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


async def test_over_streamable_http() -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    async def hang(request: LLMRequest) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"  # pragma: no cover

    helper = Agent(ScriptedProvider([ToolCall("c1", "shout", {"text": "hi"}), "It said HI."]), tools=[shout],
                   name="helper")
    slow = Agent(ScriptedProvider(hang), name="slow")
    server = mcp_server([helper, slow, shout])
    app: Starlette = server.streamable_http_app()
    async with serving(app, load_example("serve_all"), probe="/mcp") as base, Client(base + "/mcp") as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["helper", "slow", "shout"]
        answer = await client.call_tool("helper", {"input": "shout hi"})
        assert not answer.is_error and answer.content[0].text == "It said HI."  # type: ignore[union-attr]
        await cancel_a_call(client, "slow", started.is_set)
        with anyio.fail_after(20):
            await cancelled.wait()
        assert (await client.call_tool("shout", {"text": "ok"})).content[0].text == "OK"  # type: ignore[union-attr]


@attrs.frozen
class Forecast:
    city: str
    sky: str


async def test_a_typed_agent_over_http_declares_its_output_schema_and_answers_conforming_structured_content() -> None:
    # The SDK's client checks a tool's structured content against its listed outputSchema on every call: a typed
    # agent's answer passes, over the wire, as an object (Forecast) and wrapped as {"result": ...} (a list).
    forecast = Agent(ScriptedProvider(['{"city": "Oslo", "sky": "clear"}']), output_type=Forecast, name="forecast")
    cities = Agent(ScriptedProvider(['["Oslo", "Bergen"]']), output_type=list[str], name="cities")
    app: Starlette = mcp_server([forecast, cities]).streamable_http_app()
    async with serving(app, load_example("serve_all"), probe="/mcp") as base, Client(base + "/mcp") as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        one = await client.call_tool("forecast", {"input": "Oslo?"})
        many = await client.call_tool("cities", {"input": "Which?"})
    assert schemas["forecast"] is not None and schemas["forecast"]["required"] == ["city", "sky"]
    assert schemas["cities"] is not None and schemas["cities"]["properties"]["result"]["type"] == "array"
    assert not one.is_error and one.structured_content == {"city": "Oslo", "sky": "clear"}
    assert not many.is_error and many.structured_content == {"result": ["Oslo", "Bergen"]}
    assert json.loads(many.content[0].text) == ["Oslo", "Bergen"]  # type: ignore[union-attr]


async def test_every_call_is_a_conversation_of_its_own() -> None:
    provider = ScriptedProvider(lambda request: f"turn {len(request.messages)}")
    app: Starlette = mcp_server([Agent(provider, name="chat")]).streamable_http_app()
    async with serving(app, load_example("serve_all"), probe="/mcp") as base, Client(base + "/mcp") as client:
        for _ in range(2):
            answer = await client.call_tool("chat", {"input": "again"})
            assert answer.content[0].text == "turn 1"  # type: ignore[union-attr]


# A stdio server with an in-memory span exporter as the process's global tracer provider (the SDK's own span
# per call uses the global one): the spans are written to a file when the connection closes.
TRACED_SERVER = textwrap.dedent(
    """
    import json, os
    import anyio
    from mcp.server.stdio import stdio_server
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from agentactors import Agent, Runtime, ScriptedProvider
    from agentactors.otel import OTelRecorder
    from agentactors.serve import mcp_server

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    async def main():
        try:
            async with Runtime(recorders=[OTelRecorder()]) as rt:
                agent = Agent(ScriptedProvider(lambda request: "hello"), name="greeter").bind(rt)
                server = mcp_server([agent])
                async with stdio_server() as (read, write):
                    await server.run(read, write, server.create_initialization_options())
        finally:
            spans = [{"name": s.name, "span_id": s.context.span_id, "kind": s.kind.name,
                      "parent": s.parent.span_id if s.parent else None,
                      "attributes": {k: str(v) for k, v in (s.attributes or {}).items()}}
                     for s in exporter.get_finished_spans()]
            with open(os.environ["SPANS_FILE"], "w") as f:
                json.dump(spans, f)

    anyio.run(main)
    """
)


async def test_a_call_is_the_sdks_span_naming_the_agent_and_its_run(tmp_path: Path) -> None:
    import json

    spans_file = tmp_path / "spans.json"
    params = StdioServerParameters(
        command=sys.executable, args=["-c", TRACED_SERVER], cwd=str(ROOT),
        env={"SPANS_FILE": str(spans_file), "PYTHONPATH": str(ROOT)},
    )
    async with Client(params) as client:
        answer = await client.call_tool("greeter", {"input": "hi"})
        assert answer.content[0].text == "hello"  # type: ignore[union-attr]
    with anyio.fail_after(20):
        while not spans_file.exists():  # noqa: ASYNC110 - the server's process tells by a file
            await anyio.sleep(0.05)
    spans = json.loads(spans_file.read_text())
    (call,) = [s for s in spans if s["name"] == "tools/call greeter"]
    assert call["kind"] == "SERVER" and call["attributes"]["gen_ai.agent.name"] == "greeter"
    (run,) = [s for s in spans if s["name"].startswith("invoke_agent")]
    assert run["parent"] == call["span_id"], "the run's span hangs under the call's"
    assert call["attributes"]["agentactors.run_id"] == run["attributes"]["agentactors.run_id"]
