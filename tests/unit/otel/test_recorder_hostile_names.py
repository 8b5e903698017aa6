"""Span names and name attributes come from what the model or a provider said: they are cut and redacted.

A tool call's name is the model's — a hostile or confused model may ask for a tool named with 100,000
characters, or with a credential it read in its context — and the run still records ``execute_tool {name}``
and ``gen_ai.tool.name`` for it.  The SDK bounds neither span names nor (by default) attribute lengths, so
the recorder has to: names are :func:`~agentactors.redaction.excerpt`-ed like the payload strings it copies.
"""

from __future__ import annotations

import anyio
import pytest

from agentactors import Agent, Runtime, ScriptedProvider
from agentactors.events import EventSink
from agentactors.messages import ToolCall
from agentactors.otel import OTelRecorder
from agentactors.tools import tool
from tests.support.spans import everything, in_memory_spans

pytestmark = pytest.mark.anyio

API_KEY = "sk-proj-Zx81kQ2mN4pR7sT9vW3yB6dF"


@tool
async def lookup() -> str:
    """Looks something up."""
    return "found"


async def test_a_model_chosen_tool_name_is_cut_and_redacted_in_the_span() -> None:
    exporter, provider = in_memory_spans()
    hostile = f"use {API_KEY} " + "y" * 100_000
    agent = Agent(ScriptedProvider([[ToolCall("c1", hostile, {})], "done"]), tools=[lookup])
    with anyio.fail_after(10):
        async with Runtime(recorders=[OTelRecorder(provider)]):
            result = await agent.run("go")
    assert result.content == "done", "the run is unaffected"
    spans = list(exporter.get_finished_spans())
    (tool_span,) = [s for s in spans if s.name.startswith("execute_tool")]
    assert len(tool_span.name) <= 256, "a span name is bounded"
    assert len(str((tool_span.attributes or {})["gen_ai.tool.name"])) <= 1024
    assert API_KEY not in everything(spans)


async def test_names_from_providers_and_agents_are_cut_and_redacted() -> None:
    exporter, provider = in_memory_spans()
    recorder = OTelRecorder(provider)
    sink = EventSink([recorder], run_id="r")
    long_name = f"agent {API_KEY} " + "a" * 50_000
    sink.emit("run.started", agent=long_name, model="m" * 50_000 + API_KEY)
    sink.emit("llm.request", request={"model": "m" * 50_000 + API_KEY, "stop": "END"})
    sink.emit(
        "llm.response",
        provider="p" * 5_000,
        response={"model": "r" * 50_000 + API_KEY, "response_id": "i" * 50_000 + API_KEY, "stop_reason": "end_turn"},
    )
    sink.emit("agent.handoff", from_agent=long_name, to_agent=long_name, call_id="c" * 5_000)
    sink.emit("run.finished", final_agent=long_name, handoffs=[long_name, long_name])
    spans = list(exporter.get_finished_spans())
    assert {s.name.split()[0] for s in spans} == {"invoke_agent", "chat"}
    assert API_KEY not in everything(spans)
    for span in spans:
        assert len(span.name) <= 256
        for value in (span.attributes or {}).values():
            for item in value if isinstance(value, tuple) else (value,):
                assert len(str(item)) <= 1024
        for event in span.events:
            assert all(len(str(v)) <= 1024 for v in (event.attributes or {}).values())
    (chat,) = [s for s in spans if s.name.startswith("chat")]
    stop = tuple((chat.attributes or {})["gen_ai.request.stop_sequences"])  # type: ignore[arg-type]
    assert stop == ("END",), "one stop string, not its letters"
