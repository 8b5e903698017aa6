"""OpenTelemetry: spans and attributes of a run with retries, a failover and tools, on the SDK's in-memory exporter."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentactors import Agent, OpenAIProvider, Runtime
from agentactors.otel import OTelRecorder
from agentactors.redaction import register_secret
from agentactors.testing import FakeVendor
from tests.support.scenario import ANSWER, REFUSED_SIZE, SECRET, scenario_agent

pytestmark = pytest.mark.anyio


class Telemetry:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def recorder(self, **kwargs: Any) -> OTelRecorder:
        return OTelRecorder(self.tracer_provider, meter_provider=self.meter_provider, **kwargs)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def metrics(self) -> dict[str, list[Any]]:
        data = self.reader.get_metrics_data()
        out: dict[str, list[Any]] = {}
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    out.setdefault(metric.name, []).extend(metric.data.data_points)
        return out


@pytest.mark.virtual_time
async def test_a_run_with_retries_a_failover_and_tools_as_spans() -> None:
    t = Telemetry()
    caller = t.tracer_provider.get_tracer("the-service")
    async with Runtime(recorders=[t.recorder()]):
        with caller.start_as_current_span("POST /ask") as request_span:
            result = await scenario_agent(name="weather").run("What is the weather in Lisbon?")
    assert result.content == ANSWER

    (run,) = t.named("invoke_agent")
    assert run.name == "invoke_agent weather" and run.kind is SpanKind.INTERNAL
    assert run.parent is not None and run.parent.span_id == request_span.get_span_context().span_id
    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "weather"
    assert run.attributes["agentactors.served_by"] == "secondary"
    assert run.status.status_code is StatusCode.UNSET

    chats = sorted(t.named("chat"), key=lambda s: s.start_time or 0)
    assert len(chats) == 3, "one chat span per model call"
    for chat in chats:
        assert chat.kind is SpanKind.CLIENT and chat.parent is not None
        assert chat.parent.span_id == run.context.span_id
        attrs = chat.attributes or {}
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.response.model"] == "s-model-2025"
        assert attrs["agentactors.served_by"] == "secondary" and attrs["gen_ai.provider.name"] == "secondary"
    first = chats[0]
    attrs = first.attributes or {}
    assert first.name == "chat p-model" and attrs["gen_ai.request.model"] == "p-model"
    assert attrs["gen_ai.usage.input_tokens"] == 10 and attrs["gen_ai.usage.output_tokens"] == 5
    assert attrs["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert (chats[2].attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    # the retries and the failover are span events on the model call, with the member concerned
    names = [e.name for e in first.events]
    assert names == ["retry.scheduled", "retry.exhausted", "fallback.moved"]
    scheduled, _, moved = first.events
    assert scheduled.attributes is not None and moved.attributes is not None
    assert scheduled.attributes["agentactors.provider"] == "primary"
    assert scheduled.attributes["error.type"] == "ProviderError"
    assert scheduled.attributes["agentactors.error.kind"] == "transient"
    assert scheduled.attributes["agentactors.error.status"] == 503
    assert moved.attributes["agentactors.from_member"] == "primary"
    assert moved.attributes["agentactors.to_member"] == "secondary"
    assert first.end_time is not None and first.start_time is not None
    assert first.end_time - first.start_time >= 100_000_000, "the retry's 0.1 s backoff, on the run's own clock"

    tools = {s.name: s for s in t.named("execute_tool")}
    assert set(tools) == {"execute_tool lookup", "execute_tool dump"}
    lookup, dump = tools["execute_tool lookup"], tools["execute_tool dump"]
    assert lookup.parent is not None and lookup.parent.span_id == run.context.span_id
    assert (lookup.attributes or {})["gen_ai.tool.name"] == "lookup"
    assert (lookup.attributes or {})["gen_ai.tool.call.id"] == "c1"
    assert (lookup.attributes or {})["agentactors.tool.status"] == "ok"
    assert lookup.status.status_code is StatusCode.UNSET
    assert (dump.attributes or {})["agentactors.tool.status"] == "invalid"
    assert dump.status.status_code is StatusCode.ERROR and (dump.attributes or {})["error.type"] == "invalid"
    (refused,) = dump.events
    assert refused.name == "tools.result_refused" and (refused.attributes or {})["agentactors.size"] == REFUSED_SIZE

    metrics = t.metrics()
    tokens = metrics["gen_ai.client.token.usage"]
    by_type = {p.attributes["gen_ai.token.type"]: p.sum for p in tokens}
    assert by_type == {"input": 60, "output": 22}
    assert all(p.attributes["gen_ai.operation.name"] == "chat" for p in tokens)
    durations = metrics["gen_ai.client.operation.duration"]
    assert sum(p.count for p in durations) == 3


@pytest.mark.virtual_time
async def test_no_content_is_captured_by_default_and_no_secret_ever() -> None:
    register_secret(SECRET)
    t = Telemetry()
    async with Runtime(recorders=[t.recorder()]):
        await scenario_agent().run(f"What is the weather in Lisbon? {SECRET}")
    dumped = json.dumps([json.loads(s.to_json()) for s in t.spans()])
    assert "gen_ai.input.messages" not in dumped and "gen_ai.output.messages" not in dumped
    assert "Lisbon: 21" not in dumped and "weather in Lisbon" not in dumped and ANSWER not in dumped
    assert SECRET not in dumped

    captured = Telemetry()
    async with Runtime(recorders=[captured.recorder(capture_content=True)]):
        await scenario_agent().run(f"What is the weather in Lisbon? {SECRET}")
    chats = sorted(captured.named("chat"), key=lambda s: s.start_time or 0)
    sent = json.loads(str((chats[-1].attributes or {})["gen_ai.input.messages"]))
    assert sent[0] == {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]}
    assert sent[2]["parts"][0] == {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"city": "Lisbon"}}
    assert sent[3] == {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",
                                                  "response": "Lisbon: 21 °C, sunny"}]}
    answered = json.loads(str((chats[-1].attributes or {})["gen_ai.output.messages"]))
    assert answered == [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}], "finish_reason": "stop"}]
    assert SECRET not in json.dumps([json.loads(s.to_json()) for s in captured.spans()]), "redacted even then"


async def test_a_vendor_call_names_the_provider_and_server(fake_vendor: FakeVendor) -> None:
    t = Telemetry()
    fake_vendor.script("Paris.")
    provider = OpenAIProvider("gpt-4o-mini", api_key="sk-otel-test-0000000000", base_url=fake_vendor.openai_base_url)
    async with Runtime(recorders=[t.recorder()]):
        async with Agent(provider).stream("Capital of France?") as run:
            assert "".join([x async for x in run.text_stream()]) == "Paris."
    (chat,) = t.named("chat")
    attrs = chat.attributes or {}
    assert chat.name == "chat gpt-4o-mini"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == fake_vendor.port
    assert attrs["gen_ai.request.stream"] is True
    (invoke,) = t.named("invoke_agent")
    assert invoke.parent is None, "no active span where it started: a root span"
    assert "sk-otel-test" not in json.dumps([json.loads(s.to_json()) for s in t.spans()])


async def test_a_failed_run_marks_its_spans_as_errors() -> None:
    from agentactors import ProviderError, ScriptedProvider

    t = Telemetry()
    boom = ProviderError("quota exhausted", provider="p", kind="account", status=403)
    async with Runtime(recorders=[t.recorder()]):
        result = await Agent(ScriptedProvider([boom]), name="failing").run("hi")
    assert result.generation_failed
    (chat,) = t.named("chat")
    (run,) = t.named("invoke_agent")
    assert chat.status.status_code is StatusCode.ERROR and (chat.attributes or {})["error.type"] == "ProviderError"
    assert run.status.status_code is StatusCode.ERROR and (run.attributes or {})["error.type"] == "ProviderError"
    assert "quota exhausted" not in json.dumps([json.loads(s.to_json()) for s in t.spans()])


def test_importing_agentactors_does_not_import_opentelemetry() -> None:
    code = "import sys, agentactors; print(any(m.startswith('opentelemetry') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_the_global_tracer_provider_is_the_default() -> None:
    recorder = OTelRecorder()
    assert recorder.capture_content is False and "OTelRecorder(" in repr(recorder)
    assert trace.get_tracer_provider() is not None


async def test_a_delegated_run_is_a_child_span_of_its_parents_tool_call() -> None:
    from agentactors.events import EventSink

    t = Telemetry()
    recorder = t.recorder()
    parent = EventSink([recorder], run_id="parent")
    child = EventSink([recorder], run_id="child", parent_run_id="parent")
    parent.emit("run.started", agent="boss")
    parent.step = 1
    parent.emit("tools.started", call_id="c0", name="other")
    parent.emit("tools.started", call_id="c1", name="ask_helper")
    child.emit("run.started", agent="helper", parent_call_id="c1")
    child.emit("run.finished", content="done", steps=1)
    parent.emit("tools.finished", call_id="c1", name="ask_helper", status="ok", size=4, duration=0.1)
    parent.emit("tools.finished", call_id="c0", name="other", status="ok", size=4, duration=0.1)
    parent.step = None
    parent.emit("run.finished", content="done", steps=1)
    spans = {s.name: s for s in t.spans()}
    helper, tool_span, boss = spans["invoke_agent helper"], spans["execute_tool ask_helper"], spans["invoke_agent boss"]
    assert helper.parent is not None and helper.parent.span_id == tool_span.context.span_id
    assert tool_span.parent is not None and tool_span.parent.span_id == boss.context.span_id
    assert helper.context.trace_id == boss.context.trace_id


def _plain(attributes: Any) -> dict[str, Any]:
    """A span's (or span event's) attributes, each checked to be of a type OpenTelemetry takes."""
    out = dict(attributes or {})
    for key, value in out.items():
        items = value if isinstance(value, tuple) else (value,)
        assert all(type(v) in (str, bool, int, float) for v in items), f"{key}={value!r} is not a plain value"
    return out


@pytest.mark.virtual_time
async def test_a_breaker_that_opens_during_a_run_is_span_events_with_string_states() -> None:
    from agentactors import (
        LLMResponse,
        ProviderError,
        ScriptedProvider,
        StopReason,
        ToolCall,
        Usage,
        tool,
        with_circuit_breaker,
        with_fallback,
    )

    @tool
    async def lookup(city: str) -> str:
        """The weather in a city."""
        return f"{city}: sunny"

    def down(request: Any) -> ProviderError:
        return ProviderError("service unavailable", provider="primary", kind="transient", status=503)

    primary = with_circuit_breaker(ScriptedProvider(down, name="primary", model="p-model"),
                                   consecutive_failures=2, open_duration=60.0)
    secondary = ScriptedProvider(
        [LLMResponse("", (ToolCall(f"c{i}", "lookup", {"city": "Porto"}),), StopReason.tool_use, Usage(5, 1))
         for i in (1, 2)] + ["Sunny."],
        name="secondary",
        model="s-model",
    )
    t = Telemetry()
    async with Runtime(recorders=[t.recorder()]):
        result = await Agent(with_fallback(primary, secondary), tools=[lookup], name="w").run("Porto?")
    assert result.content == "Sunny."

    first, second, third = sorted(t.named("chat"), key=lambda s: s.start_time or 0)
    assert [e.name for e in first.events] == ["fallback.moved"]  # the first failure: still closed
    # The second failure opens the breaker: a transition on the model call it happened in.
    assert [e.name for e in second.events] == ["breaker.state_changed", "fallback.moved"]
    changed = _plain(second.events[0].attributes)
    assert changed["agentactors.from_state"] == "closed" and changed["agentactors.to_state"] == "open"
    assert changed["agentactors.reason"] == "consecutive_failures"
    assert changed["agentactors.key"] == ("primary", "p-model")  # the circuit's key, as strings
    # The third call is refused by the open breaker without reaching the primary.
    assert [e.name for e in third.events] == ["breaker.rejected", "fallback.moved"]
    rejected = _plain(third.events[0].attributes)
    assert rejected["agentactors.state"] == "open" and rejected["agentactors.count"] == 1
    assert _plain(third.events[1].attributes)["agentactors.reason"] == "circuit_open"
    for span in t.spans():
        _plain(span.attributes)
        for event in span.events:
            _plain(event.attributes)
    # and the exported form says the same: strings, not enum reprs
    exported = json.dumps([json.loads(s.to_json()) for s in t.spans()])
    assert "CircuitState" not in exported


@pytest.mark.virtual_time
async def test_a_delegated_agent_run_is_a_child_span_of_the_parents_tool_call_end_to_end() -> None:
    from agentactors import LLMResponse, ScriptedProvider, ToolCall, Usage

    child = Agent(ScriptedProvider([LLMResponse("Paris", usage=Usage(3, 1))]), name="searcher", model="c-model")
    parent = Agent(
        ScriptedProvider(
            [LLMResponse("", (ToolCall("c1", "searcher", {"input": "capital of France?"}),), usage=Usage(10, 2)),
             "It is Paris."],
        ),
        name="boss",
        model="p-model",
        tools=[child.as_tool()],
    )
    t = Telemetry()
    async with Runtime(recorders=[t.recorder()]):
        result = await parent.run("Where is the Louvre?")
    assert result.content == "It is Paris." and len(result.children) == 1

    (boss,) = t.named("invoke_agent boss")
    (searcher,) = t.named("invoke_agent searcher")
    (call,) = t.named("execute_tool searcher")
    assert call.parent is not None and call.parent.span_id == boss.context.span_id
    assert searcher.parent is not None and searcher.parent.span_id == call.context.span_id
    assert searcher.context.trace_id == call.context.trace_id == boss.context.trace_id
    assert (searcher.attributes or {})["gen_ai.agent.name"] == "searcher"
    assert (searcher.attributes or {})["agentactors.run_id"] == result.children[0].run_id
    # the child's model call hangs under the child's run, the parent's under the parent's
    by_parent = {s.name: s.parent.span_id for s in t.named("chat") if s.parent is not None}
    assert by_parent["chat c-model"] == searcher.context.span_id
    assert by_parent["chat p-model"] == boss.context.span_id
    # nested in time too: the child's run inside the tool call, inside the parent's run
    assert call.start_time is not None and call.end_time is not None
    assert searcher.start_time is not None and searcher.end_time is not None
    assert call.start_time <= searcher.start_time <= searcher.end_time <= call.end_time
    assert len(t.spans()) == 6, "each span once (2 runs, 3 model calls, 1 tool call)"


@pytest.mark.virtual_time
async def test_a_handoff_is_a_span_event_and_the_agent_invoked_keeps_the_span() -> None:
    from agentactors import ScriptedProvider, ToolCall

    billing = Agent(ScriptedProvider(["Your invoice is 40 EUR."]), name="billing", model="b-model")
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", model="t-model",
                   handoffs=[billing])
    t = Telemetry()
    async with Runtime(recorders=[t.recorder()]):
        result = await triage.run("How much is invoice 7?")
    assert result.agent == "billing"

    (run,) = t.named("invoke_agent")
    attrs = _plain(run.attributes)
    # gen_ai.agent.name is the agent invoked (set at span creation, as the span's name); who answered
    # last is an attribute of ours.
    assert run.name == "invoke_agent triage" and attrs["gen_ai.agent.name"] == "triage"
    assert attrs["agentactors.final_agent"] == "billing" and attrs["agentactors.agent.handoffs"] == ("billing",)
    (handoff,) = [e for e in run.events if e.name == "agentactors.handoff"]
    assert _plain(handoff.attributes) == {
        "agentactors.handoff.from_agent": "triage",
        "agentactors.handoff.to_agent": "billing",
        "gen_ai.tool.call.id": "h1",
    }
    chats = sorted(t.named("chat"), key=lambda s: s.start_time or 0)
    assert [c.name for c in chats] == ["chat t-model", "chat b-model"]
    assert chats[0].end_time is not None and handoff.timestamp is not None
    assert chats[0].end_time <= handoff.timestamp <= (chats[1].start_time or 0)
    assert not t.named("execute_tool"), "a handoff is answered by the loop: no tool span"
