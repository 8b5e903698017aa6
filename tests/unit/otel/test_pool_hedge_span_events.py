"""OpenTelemetry: a pool's failover and a hedge are span events on the model call, as a chain's failover is.

The recorder turned only ``retry.``, ``fallback.`` and ``breaker.`` events into span events: a pool that moved
off a failing member, and a hedge sent and won, were invisible in the trace.
"""

from __future__ import annotations

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentactors import Agent, LLMRequest, LLMResponse, ProviderError, Runtime, ScriptedProvider, StopReason, Usage
from agentactors.otel import OTelRecorder
from agentactors.resilience import with_hedge, with_pool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time, pytest.mark.filterwarnings("ignore::RuntimeWarning")]


def _down(request: LLMRequest) -> LLMResponse:
    raise ProviderError("down: key sk-hidden", provider="a", kind="transient", status=503)


def _ok(request: LLMRequest) -> LLMResponse:
    return LLMResponse("ok", (), StopReason.end_turn, Usage(1, 1))


class _Slow:
    name = "slow"
    default_model = "m"
    carries_tools = True

    async def complete(self, request: LLMRequest) -> LLMResponse:
        await anyio.sleep(1)
        return LLMResponse("slow", (), StopReason.end_turn, Usage(1, 1))

    async def aclose(self) -> None:
        pass


def _tracing() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def test_a_pool_failover_is_a_span_event_without_the_error_text() -> None:
    provider, exporter = _tracing()
    pool = with_pool(ScriptedProvider(_down, name="a", model="m"), ScriptedProvider(_ok, name="b", model="m"))
    async with Runtime(recorders=[OTelRecorder(provider)]):
        await Agent(pool, name="pooled").run("x")
    (chat,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    (moved,) = [e for e in chat.events if e.name == "pool.moved"]
    assert moved.attributes is not None
    assert moved.attributes["agentactors.from_member"] == "a" and moved.attributes["agentactors.to_member"] == "b"
    assert moved.attributes["error.type"] == "ProviderError"
    assert moved.attributes["agentactors.error.kind"] == "transient"
    assert moved.attributes["agentactors.error.status"] == 503
    assert not any("sk-hidden" in str(v) or "down" in str(v) for v in moved.attributes.values())


async def test_a_hedge_sent_and_won_are_span_events() -> None:
    provider, exporter = _tracing()
    hedged = with_hedge(_Slow(), after=0.05, max_extra=1.0, to=ScriptedProvider(_ok, name="h2", model="m"))
    async with Runtime(recorders=[OTelRecorder(provider)]):
        await Agent(hedged, name="hedged").run("y")
    (chat,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert [e.name for e in chat.events] == ["hedge.sent", "hedge.won"]
    sent, won = chat.events
    assert sent.attributes is not None and won.attributes is not None
    assert sent.attributes["agentactors.member"] == "h2" and sent.attributes["agentactors.after"] == 0.05
    assert won.attributes["agentactors.winner"] == "hedge" and won.attributes["agentactors.member"] == "h2"
