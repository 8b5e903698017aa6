"""Spans never carry what an event's emitter put in its payload unchecked: credentials are masked, text is cut.

``OTelRecorder`` copies the scalar values of a tool's own events (``ctx.emit("tools.progress", ...)``) and of
the resilience decisions onto span events.  Those values are whatever the emitter wrote — a progress note that
quotes a request's ``Authorization`` header, a megabyte of text — and the recorder's promise is that spans
hold "never a message, an error's text or a credential".  Checked on the SDK's in-memory exporter, on both
backends, through a real run; and for payloads that hold themselves.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentactors import Agent, Runtime, ScriptedProvider
from agentactors.events import EventSink
from agentactors.messages import ToolCall
from agentactors.otel import OTelRecorder
from agentactors.tools import ToolContext, tool

pytestmark = pytest.mark.anyio

BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXNlc3Npb24"
API_KEY = "sk-proj-Zx81kQ2mN4pR7sT9vW3yB6dF"
HUGE = "x" * 1_000_000


def _spans() -> tuple[InMemorySpanExporter, TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def _everything(spans: list[ReadableSpan]) -> str:
    """Every name, attribute, span event and status description, as one text to search."""
    out: list[str] = []
    for span in spans:
        out += [span.name, repr(dict(span.attributes or {})), str(span.status.description)]
        for event in span.events:
            out += [event.name, repr(dict(event.attributes or {}))]
    return "\n".join(out)


@tool
async def chatty(ctx: ToolContext) -> str:
    """Reports progress, quoting what it sent."""
    ctx.emit("tools.progress", detail=f"GET /v1/items with Authorization: {BEARER}", done=1)
    ctx.emit("tools.progress", note=f"retrying with api_key={API_KEY}", body=HUGE)
    return "done"


async def test_a_tools_own_event_reaches_its_span_without_credentials() -> None:
    exporter, provider = _spans()
    agent = Agent(ScriptedProvider([[ToolCall("c1", "chatty", {})], "finished"]), tools=[chatty])
    with anyio.fail_after(10):
        async with Runtime(recorders=[OTelRecorder(provider)]):
            result = await agent.run("go")
    assert result.content == "finished"
    spans = list(exporter.get_finished_spans())
    (tool_span,) = [s for s in spans if s.name == "execute_tool chatty"]
    progress = [e for e in tool_span.events if e.name == "tools.progress"]
    assert len(progress) == 2, "the events still reach the span"
    first = dict(progress[0].attributes or {})
    assert first["agentactors.done"] == 1 and "GET /v1/items" in str(first["agentactors.detail"])
    text = _everything(spans)
    assert BEARER.split()[1] not in text and API_KEY not in text
    body = str(dict(progress[1].attributes or {})["agentactors.body"])
    assert len(body) <= 1024 and body.endswith("…"), "a megabyte of payload text is cut"


def _resilience_events(**payload: Any) -> tuple[list[ReadableSpan], str]:
    exporter, provider = _spans()
    recorder = OTelRecorder(provider)
    sink = EventSink([recorder], run_id="r")
    sink.emit("run.started", agent="a")
    sink.emit("fallback.skipped", **payload)
    sink.emit("run.finished", steps=0, usage=None)
    spans = list(exporter.get_finished_spans())
    return spans, _everything(spans)


def test_a_resilience_decisions_text_is_masked_and_lists_too() -> None:
    spans, text = _resilience_events(
        member="primary", reason=f"upstream said: invalid {BEARER}", tried=["primary", f"key={API_KEY}"]
    )
    (run,) = spans
    (skipped,) = [e for e in run.events if e.name == "fallback.skipped"]
    attributes = dict(skipped.attributes or {})
    assert attributes["agentactors.member"] == "primary"
    assert BEARER.split()[1] not in text and API_KEY not in text


def test_a_payload_that_holds_itself_is_still_recorded() -> None:
    loop: list[Any] = ["a"]
    loop.append(loop)
    spans, _ = _resilience_events(member="primary", path=loop)
    (run,) = spans
    assert [e.name for e in run.events] == ["fallback.skipped"]
