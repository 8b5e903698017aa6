"""SSE keep-alive against a real server (uvicorn on asyncio, hypercorn on trio): the comments reach the client
between whole events, the official ``openai`` SDK reads such a stream to its end (it skips comments, as every SSE
reader does), an AG-UI stream's events all parse, and a client that leaves while comments flow cancels its run.
Real clocks, with a short interval and generous bounds."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import anyio
import httpx
import openai
import pytest
from ag_ui.core import EventType

from agentactors import Agent, LLMRequest, ScriptedProvider
from agentactors.serve import agui_app, openai_app
from tests.support.services import load_example, serving

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'openai:ResourceWarning"),
    # A client that stops reading mid-stream leaves httpx's nested generators for the collector on trio: the client's.
    pytest.mark.filterwarnings("ignore:Async generator 'httpx.:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore.:ResourceWarning"),
]
INTERVAL = 0.1
CHAT = {"model": "a", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
AGUI = {"threadId": "t1", "runId": "r1", "state": {}, "tools": [], "context": [], "forwardedProps": {},
        "messages": [{"id": "m1", "role": "user", "content": "hi"}]}


def slow_model(seconds: float, notes: list[str], cancelled: anyio.Event | None = None) -> ScriptedProvider:
    async def answer(request: LLMRequest) -> str:
        notes.append("started")
        try:
            await anyio.sleep(seconds)
        except BaseException:
            notes.append("cancelled")
            if cancelled is not None:
                cancelled.set()
            raise
        return "late but here"

    return ScriptedProvider(answer)


@asynccontextmanager
async def served(app: Any, probe: str) -> AsyncIterator[str]:
    async with serving(app, load_example("serve_all"), probe=probe) as base:
        yield base


async def raw_lines(base: str, path: str, body: dict[str, Any]) -> list[str]:
    async with httpx.AsyncClient(base_url=base, timeout=20) as client, client.stream(
        "POST", path, json=body, headers={"accept": "text/event-stream"}
    ) as response:
        assert response.status_code == 200
        return [line async for line in response.aiter_lines()]


async def test_the_openai_sdk_reads_a_kept_alive_stream_to_its_end() -> None:
    notes: list[str] = []
    app = openai_app({"a": Agent(slow_model(1.0, notes), name="a")}, keepalive=INTERVAL)
    async with served(app, "/v1/models") as base:
        lines = await raw_lines(base, "/v1/chat/completions", CHAT)
        async with openai.AsyncOpenAI(base_url=base + "/v1", api_key="k", max_retries=0, timeout=20) as client:
            stream = await client.chat.completions.create(
                model="a", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            chunks = [chunk async for chunk in stream]
    assert lines.count(": keep-alive") >= 3, lines[:10]
    assert lines[-2:] == ["data: [DONE]", ""], lines[-4:]
    # Every non-blank line is a whole comment or a whole event: the comments never land inside one.
    for line in lines:
        assert line in ("", ": keep-alive") or line.startswith("data: "), line
        if line.startswith("data: ") and line != "data: [DONE]":
            json.loads(line[6:])
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "late but here"
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_without_keepalive_the_stream_has_no_comment() -> None:
    notes: list[str] = []
    app = openai_app({"a": Agent(slow_model(0.5, notes), name="a")}, keepalive=None)
    async with served(app, "/v1/models") as base:
        lines = await raw_lines(base, "/v1/chat/completions", CHAT)
    assert ": keep-alive" not in lines and lines[-2:] == ["data: [DONE]", ""]


async def test_an_agui_stream_kept_alive_parses_event_by_event() -> None:
    notes: list[str] = []
    app = agui_app(Agent(slow_model(1.0, notes), name="a"), keepalive=INTERVAL)
    async with served(app, "/") as base:
        lines = await raw_lines(base, "/", AGUI)
    assert lines.count(": keep-alive") >= 3, lines[:10]
    events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert all(line in ("", ": keep-alive") or line.startswith("data: ") for line in lines)
    kinds = [EventType(e["type"]) for e in events]
    assert kinds[0] is EventType.RUN_STARTED and kinds[-1] is EventType.RUN_FINISHED


@pytest.mark.parametrize("which", ["openai", "agui"])
async def test_a_client_that_leaves_while_comments_flow_cancels_its_run(which: str) -> None:
    notes: list[str] = []
    cancelled = anyio.Event()
    agent = Agent(slow_model(3600, notes, cancelled), name="a")
    app = openai_app({"a": agent}, keepalive=INTERVAL) if which == "openai" else agui_app(agent, keepalive=INTERVAL)
    path, body = ("/v1/chat/completions", CHAT) if which == "openai" else ("/", AGUI)
    async with served(app, "/v1/models" if which == "openai" else "/") as base:
        async with httpx.AsyncClient(base_url=base, timeout=20) as client, client.stream(
            "POST", path, json=body
        ) as response:
            seen = 0
            with anyio.fail_after(10):
                async with aclosing(response.aiter_lines()) as lines:  # type: ignore[type-var]
                    async for line in lines:
                        seen += line == ": keep-alive"
                        if seen == 3:
                            break  # the client goes away during the silence
        with anyio.fail_after(10):
            await cancelled.wait()
        assert notes == ["started", "cancelled"]
