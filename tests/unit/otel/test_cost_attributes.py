"""OpenTelemetry: what a model call and a run cost, as namespaced span attributes (left out when unpriced)."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentactors import Agent, LLMResponse, Runtime, ScriptedProvider, ToolCall
from agentactors.otel import OTelRecorder
from tests.support.prices import USAGE, gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def spans(model: str, child_model: str = "gpt-4o") -> tuple[InMemorySpanExporter, Agent]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    child = Agent(ScriptedProvider([LLMResponse("found", usage=USAGE)], name="openai", model=child_model),
                  name="researcher")
    delegate = LLMResponse(tool_calls=(ToolCall("d1", "researcher", {"input": "look"}),), usage=USAGE)
    parent = Agent(ScriptedProvider([delegate, LLMResponse("done", usage=USAGE)], name="openai", model=model),
                   tools=[child.as_tool()], name="lead", recorders=[OTelRecorder(tracer_provider)])
    return exporter, parent


async def test_chat_spans_carry_their_call_cost_and_the_run_its_total() -> None:
    exporter, parent = spans("gpt-4o")
    async with Runtime():
        result = await parent.run("go")
    assert result.cost is not None and result.cost.total == pytest.approx(0.105)
    finished = exporter.get_finished_spans()
    chats = [s for s in finished if s.name.startswith("chat")]
    assert len(chats) == 3
    for chat in chats:
        attrs = chat.attributes or {}
        assert attrs["agentactors.cost.total"] == pytest.approx(0.035)
        assert attrs["agentactors.cost.input"] == pytest.approx(0.025)
        assert attrs["agentactors.cost.output"] == pytest.approx(0.01)
        assert attrs["agentactors.cost.currency"] == "USD"
    runs = {s.name: s.attributes or {} for s in finished if s.name.startswith("invoke_agent")}
    assert runs["invoke_agent lead"]["agentactors.cost.total"] == pytest.approx(0.105)  # the child's included
    assert runs["invoke_agent researcher"]["agentactors.cost.total"] == pytest.approx(0.035)


async def test_an_unpriced_call_has_no_cost_attribute_never_a_zero() -> None:
    exporter, parent = spans("gpt-4o", child_model="no-price-model")
    async with Runtime():
        result = await parent.run("go")
    assert result.cost is None
    finished = exporter.get_finished_spans()
    runs = {s.name: s.attributes or {} for s in finished if s.name.startswith("invoke_agent")}
    assert not any(k.startswith("agentactors.cost") for k in runs["invoke_agent lead"])
    assert not any(k.startswith("agentactors.cost") for k in runs["invoke_agent researcher"])
    priced = [s for s in finished if s.name.startswith("chat") and "agentactors.cost.total" in (s.attributes or {})]
    assert len(priced) == 2  # the parent's two calls; the child's call has none
    assert "sk-" not in json.dumps([json.loads(s.to_json()) for s in finished])
