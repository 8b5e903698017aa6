"""The span processors behind an ``OTelRecorder``: one that exports on the event loop, one that raises.

Recording is synchronous: every span the recorder ends goes through the tracer provider's processors in the run's
own task.  A ``SimpleSpanProcessor`` exports each span right there — an exporter that talks to a collector blocks
the event loop on every span end — so the recorder warns, once, when it finds one (``BatchSpanProcessor`` exports
from a thread of its own).  And a processor whose ``on_end`` raises must not make the recorder end a span twice,
leave its run's other spans open, or count a call that succeeded as failed: each span is ended exactly once and
the recorder goes on with the next run.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentactors import Agent, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.events import EventSink
from agentactors.otel import OTelRecorder

pytestmark = pytest.mark.anyio


class Collector(SpanExporter):
    """An exporter that would talk to a collector (here it only keeps the spans): not the SDK's in-memory one."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


class RaisingOnEnd(SpanProcessor):
    """A processor whose ``on_end`` raises for the spans whose name starts with ``prefix``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.raised = 0

    def on_end(self, span: ReadableSpan) -> None:
        if span.name.startswith(self.prefix):
            self.raised += 1
            raise RuntimeError("the processor failed")


def _blocking_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "SimpleSpanProcessor" in str(w.message)]


async def _two_runs(recorder: OTelRecorder) -> None:
    agent = Agent(ScriptedProvider(["one", "two"]), name="a", recorders=[recorder])
    with anyio.fail_after(10):
        async with Runtime():
            assert (await agent.run("hi")).content == "one"
            assert (await agent.run("hi")).content == "two"


async def test_a_simple_span_processor_on_the_provider_given_is_warned_about_once() -> None:
    collector = Collector()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(collector))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await _two_runs(OTelRecorder(provider))
    (message,) = _blocking_warnings(caught)
    assert "BatchSpanProcessor" in message and "Collector" in message
    assert [w.category for w in caught if str(w.message) == message] == [RuntimeWarning]
    assert len([s for s in collector.spans if s.name == "invoke_agent a"]) == 2, "the spans are still exported"


async def test_a_batch_span_processor_or_the_in_memory_exporter_is_not_warned_about() -> None:
    batch = TracerProvider()
    batch.add_span_processor(BatchSpanProcessor(Collector()))
    memory = TracerProvider()
    memory.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            await _two_runs(OTelRecorder(batch))
            await _two_runs(OTelRecorder(memory))
    finally:
        batch.shutdown()
    assert _blocking_warnings(caught) == []


def _telemetry(prefix: str) -> tuple[InMemorySpanExporter, RaisingOnEnd, InMemoryMetricReader, OTelRecorder]:
    exporter = InMemorySpanExporter()
    raising = RaisingOnEnd(prefix)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # first: it sees every span end
    provider.add_span_processor(raising)
    reader = InMemoryMetricReader()
    return exporter, raising, reader, OTelRecorder(provider, meter_provider=MeterProvider(metric_readers=[reader]))


def _durations(reader: InMemoryMetricReader) -> list[dict[str, Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    return [
        dict(point.attributes or {})
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "gen_ai.client.operation.duration"
        for point in metric.data.data_points
    ]


def test_a_chat_span_whose_processor_raises_is_ended_once(caplog: pytest.LogCaptureFixture) -> None:
    exporter, raising, reader, recorder = _telemetry("chat")
    sink = EventSink([recorder], run_id="r")
    sink.emit("run.started", agent="a")
    sink.step = 1
    sink.emit("llm.request", request={"model": "m"})
    sink.emit("llm.response", response={"model": "m", "stop_reason": "end_turn"}, provider="p")
    sink.step = 2
    sink.emit("llm.request", request={"model": "m"})
    sink.emit("llm.response", response={"model": "m", "stop_reason": "end_turn"}, provider="p")
    sink.step = None
    with caplog.at_level(logging.WARNING):
        sink.emit("run.finished", content="done", steps=2)
    assert raising.raised == 2
    ended_twice = [r.getMessage() for r in caplog.records if "ended span" in r.getMessage()]
    assert ended_twice == [], "a span the recorder had ended was ended (or changed) again"
    assert [d.get("error.type") for d in _durations(reader)] == [None], "both calls succeeded: no error duration"
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == ["chat m", "chat m", "invoke_agent a"]
    assert all(s.status.is_unset for s in exporter.get_finished_spans())


def test_a_run_whose_tool_span_processor_raises_still_ends_every_span() -> None:
    exporter, raising, _, recorder = _telemetry("execute_tool")
    sink = EventSink([recorder], run_id="r")
    sink.emit("run.started", agent="a")
    sink.step = 1
    sink.emit("llm.request", request={"model": "m"})
    sink.emit("tools.started", call_id="c1", name="slow")
    sink.emit("tools.started", call_id="c2", name="slower")
    sink.step = None
    sink.emit("run.finished", cancelled=True, steps=1)  # the tools and the model call are cut short
    assert raising.raised == 2
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == ["chat m", "execute_tool slow", "execute_tool slower", "invoke_agent a"]
    assert repr(recorder) == "OTelRecorder(capture_content=False, open_runs=0)"


@tool
async def lookup(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


async def test_the_recorder_goes_on_after_a_processor_raised(caplog: pytest.LogCaptureFixture) -> None:
    exporter, raising, reader, recorder = _telemetry("")  # every span's end raises in the second processor
    script = [
        [ToolCall("c1", "lookup", {"city": "Lisbon"})],
        "sunny",
        [ToolCall("c2", "lookup", {"city": "Porto"})],
        "sunny too",
    ]
    agent = Agent(ScriptedProvider(script), tools=[lookup], name="a", recorders=[recorder])
    with anyio.fail_after(10), caplog.at_level(logging.WARNING):
        async with Runtime():
            assert (await agent.run("Lisbon?")).content == "sunny"
            assert (await agent.run("Porto?")).content == "sunny too"
    finished = exporter.get_finished_spans()
    assert sorted(s.name for s in finished) == sorted(["invoke_agent a", "chat", "chat", "execute_tool lookup"] * 2)
    assert raising.raised == len(finished) == 8, "each span ended once"
    assert all(s.status.is_unset for s in finished), "no span is marked failed: the runs, calls and tools succeeded"
    assert not any("ended span" in r.getMessage() for r in caplog.records)
    assert all(d.get("error.type") is None for d in _durations(reader))
    warned = [r for r in caplog.records if "span processor" in r.getMessage()]
    assert len(warned) == 1 and "RuntimeError" in warned[0].getMessage(), "said once, with the error's type"
