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
from opentelemetry.sdk.trace import ReadableSpan

from agentactors import Agent, Runtime, ScriptedProvider
from agentactors.events import EventSink
from agentactors.messages import ToolCall
from agentactors.otel import OTelRecorder
from agentactors.tools import ToolContext, tool
from tests.support.spans import everything, in_memory_spans

pytestmark = pytest.mark.anyio

BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXNlc3Npb24"
API_KEY = "sk-proj-Zx81kQ2mN4pR7sT9vW3yB6dF"
HUGE = "x" * 1_000_000


@tool
async def chatty(ctx: ToolContext) -> str:
    """Reports progress, quoting what it sent."""
    ctx.emit("tools.progress", detail=f"GET /v1/items with Authorization: {BEARER}", done=1)
    ctx.emit("tools.progress", note=f"retrying with api_key={API_KEY}", body=HUGE)
    return "done"


async def test_a_tools_own_event_reaches_its_span_without_credentials() -> None:
    exporter, provider = in_memory_spans()
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
    text = everything(spans)
    assert BEARER.split()[1] not in text and API_KEY not in text
    body = str(dict(progress[1].attributes or {})["agentactors.body"])
    assert len(body) <= 1024 and body.endswith("…"), "a megabyte of payload text is cut"


def _resilience_events(**payload: Any) -> tuple[list[ReadableSpan], str]:
    exporter, provider = in_memory_spans()
    recorder = OTelRecorder(provider)
    sink = EventSink([recorder], run_id="r")
    sink.emit("run.started", agent="a")
    sink.emit("fallback.skipped", **payload)
    sink.emit("run.finished", steps=0, usage=None)
    spans = list(exporter.get_finished_spans())
    return spans, everything(spans)


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
