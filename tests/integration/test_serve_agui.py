"""agui_app served on 127.0.0.1 (uvicorn on asyncio, hypercorn on trio): every event it streams is an event of
the ``ag-ui-protocol`` package's models, carrying no field they do not define, in the protocol's order."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import attrs
import httpx
import pytest
from ag_ui.core import Event, EventType, RunAgentInput
from pydantic import TypeAdapter

from agentactors import Agent, LLMRequest, ScriptedProvider, ToolCall, tool
from agentactors.errors import ErrorKind, ProviderError
from agentactors.serve import agui_app
from tests.support.services import load_example, serving

pytestmark = [
    pytest.mark.anyio,
    # httpx's nested async generators, left half-read by a client that goes away (trio reports them).
    pytest.mark.filterwarnings("ignore:Async generator 'httpx:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore:ResourceWarning"),
]
EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


@tool
def lookup(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "sky": "clear"}


@attrs.frozen
class Forecast:
    city: str
    sky: str


def run_input(text: str = "Weather in Oslo?", **extra: Any) -> dict[str, Any]:
    body = {"threadId": "thread-1", "runId": "run-7", "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": "m1", "role": "user", "content": text}], **extra}
    RunAgentInput.model_validate(body)  # what the test sends is a RunAgentInput
    return body


def checked(raw: dict[str, Any]) -> Any:
    """``raw`` as the package's model; it must carry no field the model does not define."""
    event = EVENTS.validate_python(raw)
    known = {field.alias or name for name, field in type(event).model_fields.items()}
    assert set(raw) <= known, f"fields AG-UI does not define: {set(raw) - known}"
    return event


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(app, load_example("serve_all")) as base, httpx.AsyncClient(base_url=base, timeout=20) as c:
        yield c


async def events_of(client: httpx.AsyncClient, body: dict[str, Any]) -> list[Any]:
    async with client.stream("POST", "/", json=body, headers={"accept": "text/event-stream"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return [checked(json.loads(line[6:])) async for line in response.aiter_lines() if line.startswith("data: ")]


async def test_a_run_with_a_tool_call_is_the_protocols_event_sequence() -> None:
    provider = ScriptedProvider([[ToolCall("call-1", "lookup", {"city": "Oslo"})], "Clear skies in Oslo."])
    agent = Agent(provider, tools=[lookup], name="weather")
    async with served(agui_app(agent)) as client:
        events = await events_of(client, run_input())
    types = [e.type for e in events]
    assert types == [
        EventType.RUN_STARTED,
        EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END,
        EventType.TOOL_CALL_RESULT,
        EventType.TEXT_MESSAGE_START, *[EventType.TEXT_MESSAGE_CONTENT] * (len(types) - 8), EventType.TEXT_MESSAGE_END,
        EventType.RUN_FINISHED,
    ]
    started, finished = events[0], events[-1]
    assert (started.thread_id, started.run_id) == ("thread-1", "run-7")
    assert (finished.thread_id, finished.run_id) == ("thread-1", "run-7")
    call_start, args, call_end, result = events[1:5]
    assert (call_start.tool_call_id, call_start.tool_call_name) == ("call-1", "lookup")
    assert json.loads(args.delta) == {"city": "Oslo"} and call_end.tool_call_id == "call-1"
    assert result.tool_call_id == "call-1" and json.loads(result.content) == {"city": "Oslo", "sky": "clear"}
    text_start = events[5]
    contents = [e for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT]
    assert {e.message_id for e in contents} == {text_start.message_id} == {events[-2].message_id}
    assert "".join(e.delta for e in contents) == "Clear skies in Oslo."
    assert len(contents) > 1, "the text streamed as it came"


async def test_the_threads_messages_become_the_conversation() -> None:
    provider = ScriptedProvider(["noted"])
    agent = Agent(provider, system="Be brief.", name="a")
    body = run_input(messages=[
        {"id": "s", "role": "system", "content": "Use metric units."},
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "a1", "role": "assistant", "content": "hello"},
        {"id": "u2", "role": "user", "content": [{"type": "text", "text": "and now?"}]},
    ])
    async with served(agui_app(agent)) as client:
        await events_of(client, body)
    messages = provider.requests[0].messages
    assert [(m.role, m.content) for m in messages] == [
        ("system", "Be brief.\n\nUse metric units."), ("user", "hi"), ("assistant", "hello"), ("user", "and now?")
    ]


async def test_a_typed_answer_is_the_finished_runs_result() -> None:
    provider = ScriptedProvider(['{"city": "Oslo", "sky": "clear"}'])
    agent = Agent(provider, output_type=Forecast, name="typed")
    async with served(agui_app(agent)) as client:
        events = await events_of(client, run_input())
    assert events[-1].type == EventType.RUN_FINISHED
    assert events[-1].result == {"city": "Oslo", "sky": "clear"}


async def test_a_failed_run_ends_with_run_error() -> None:
    failure = ProviderError("the vendor is down", provider="p", kind=ErrorKind.request)
    agent = Agent(ScriptedProvider([failure]), name="down")
    async with served(agui_app(agent)) as client:
        events = await events_of(client, run_input())
    assert [e.type for e in events] == [EventType.RUN_STARTED, EventType.RUN_ERROR]
    assert "the vendor is down" in events[-1].message


async def test_a_bad_input_is_refused_before_any_event() -> None:
    agent = Agent(ScriptedProvider(["never"]), name="a")
    async with served(agui_app(agent)) as client:
        for body in ({"runId": "r", "messages": []}, {"threadId": "t", "runId": "r", "messages": "hi"},
                     {"threadId": "t", "runId": "r", "messages": []}):
            response = await client.post("/", json=body)
            assert response.status_code == 422 and response.json()["detail"]
        assert (await client.post("/", content=b"{nope")).status_code == 400
        assert (await client.get("/")).status_code == 405
        assert (await client.post("/elsewhere", json=run_input())).status_code == 404


async def test_a_client_that_leaves_cancels_the_run() -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    async def hang(request: LLMRequest) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"  # pragma: no cover

    agent = Agent(ScriptedProvider(hang), name="slow")
    async with served(agui_app(agent)) as client:
        async with client.stream("POST", "/", json=run_input()) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    assert json.loads(line[6:])["type"] == "RUN_STARTED"
                    break
            with anyio.fail_after(10):
                await started.wait()
        with anyio.fail_after(10):
            await cancelled.wait()
