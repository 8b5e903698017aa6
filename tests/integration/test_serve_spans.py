"""Each request the serving apps answer is an OpenTelemetry span — route, agent, model, run id, status, error
type — the parent of its run's spans, and none carries a secret.  Served on 127.0.0.1 (uvicorn on asyncio,
hypercorn on trio), recorded with the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentactors import Agent, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.errors import ErrorKind, ProviderError
from agentactors.otel import OTelRecorder
from agentactors.serve import agui_app, openai_app
from tests.support.services import load_example, serving

pytestmark = pytest.mark.anyio
KEY = "sk-span-secret-7c1e90aa"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def traced() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


@asynccontextmanager
async def served(app: Any, probe: str = "/") -> AsyncIterator[httpx.AsyncClient]:
    async with serving(app, load_example("serve_all"), probe=probe) as base, httpx.AsyncClient(
        base_url=base, timeout=20
    ) as client:
        yield client


def requests_of(exporter: InMemorySpanExporter, since: int) -> list[ReadableSpan]:
    """The request spans started after ``since`` (the server's readiness probe's may end later), in order."""
    spans = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER and (s.start_time or 0) >= since]
    return sorted(spans, key=lambda s: s.start_time or 0)


def assert_no_secret(exporter: InMemorySpanExporter) -> None:
    for span in exporter.get_finished_spans():
        text = json.dumps({k: str(v) for k, v in (span.attributes or {}).items()}) + span.name
        assert KEY not in text and "Bearer" not in text, f"a secret in span {span.name}"


async def test_openai_requests_are_spans_parenting_their_runs(traced: Any) -> None:
    tracer_provider, exporter = traced
    agent = Agent(ScriptedProvider([[ToolCall("c1", "add", {"a": 2, "b": 3})], "5"]), tools=[add], name="calc")
    async with Runtime(recorders=[OTelRecorder(tracer_provider)]) as rt:
        app = openai_app({"calc": agent}, runtime=rt, api_keys=[KEY], tracer_provider=tracer_provider)
        auth = {"authorization": f"Bearer {KEY}"}
        async with served(app, probe="/v1/models") as client:
            since = time.time_ns()
            answer = await client.post("/v1/chat/completions", headers=auth, json={
                "model": "calc", "messages": [{"role": "user", "content": "2+3?"}]})
            assert answer.status_code == 200
            assert (await client.get("/v1/models")).status_code == 401
            assert (await client.get("/v1/models/nope", headers=auth)).status_code == 404
    chat, refused, missing = requests_of(exporter, since)
    attributes = dict(chat.attributes or {})
    assert chat.name == "POST /v1/chat/completions"
    assert attributes["http.request.method"] == "POST" and attributes["http.route"] == "/v1/chat/completions"
    assert attributes["http.response.status_code"] == 200
    assert attributes["gen_ai.agent.name"] == "calc" and attributes["gen_ai.request.model"] == "calc"
    assert "error.type" not in attributes and chat.status.status_code != StatusCode.ERROR
    # the run's spans (OTelRecorder on the runtime) hang under the request's, in its trace
    run = next(s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent"))
    assert run.parent is not None and run.parent.span_id == chat.context.span_id
    assert dict(run.attributes or {})["gen_ai.agent.name"] == "calc"
    assert run.context.trace_id == chat.context.trace_id
    assert dict(run.attributes or {})["agentactors.run_id"] == attributes["agentactors.run_id"], "the request's run"
    # refusals: the status and the error type, not a server fault
    assert dict(refused.attributes or {})["http.response.status_code"] == 401
    assert dict(refused.attributes or {})["error.type"] == "401" and refused.status.status_code != StatusCode.ERROR
    assert missing.name == "GET /v1/models/{model}", "the route is a template: the model is not in the name"
    assert dict(missing.attributes or {})["http.response.status_code"] == 404
    assert_no_secret(exporter)


async def test_a_failed_run_is_an_error_span_with_its_type(traced: Any) -> None:
    tracer_provider, exporter = traced
    failure = ProviderError(f"upstream refused key {KEY}", provider="p", kind=ErrorKind.request)
    agent = Agent(ScriptedProvider([failure, failure]), name="down")
    app = openai_app({"down": agent}, tracer_provider=tracer_provider)
    async with served(app, probe="/v1/models") as client:
        since = time.time_ns()
        for stream in (False, True):
            response = await client.post("/v1/chat/completions", json={
                "model": "down", "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
            assert response.status_code == 502
    for span in requests_of(exporter, since):
        attributes = dict(span.attributes or {})
        assert attributes["error.type"] == "ProviderError" and span.status.status_code == StatusCode.ERROR
        assert attributes["http.response.status_code"] == 502 and attributes["agentactors.run_id"]
    assert len(requests_of(exporter, since)) == 2
    assert_no_secret(exporter)


async def test_agui_requests_are_spans_with_their_run(traced: Any) -> None:
    tracer_provider, exporter = traced
    agent = Agent(ScriptedProvider(["hello"]), name="greeter")
    async with Runtime(recorders=[OTelRecorder(tracer_provider)]) as rt:
        app = agui_app(agent, runtime=rt, tracer_provider=tracer_provider)
        body = {"threadId": "t", "runId": "r", "state": {}, "tools": [], "context": [], "forwardedProps": {},
                "messages": [{"id": "m", "role": "user", "content": "hi"}]}
        async with served(app) as client:
            since = time.time_ns()
            response = await client.post("/", json=body, headers={"authorization": f"Bearer {KEY}"})
            assert "RUN_FINISHED" in response.text
    (span,) = requests_of(exporter, since)
    attributes = dict(span.attributes or {})
    assert span.name == "POST /" and attributes["http.response.status_code"] == 200
    assert attributes["gen_ai.agent.name"] == "greeter" and attributes["agentactors.run_id"]
    run = next(s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent"))
    assert run.parent is not None and run.parent.span_id == span.context.span_id
    assert dict(run.attributes or {})["agentactors.run_id"] == attributes["agentactors.run_id"]
    assert_no_secret(exporter)
