"""Plain-httpx helpers for the FakeVendor's own tests: one request per wire, SSE parsing, a canary key."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from agentactors.testing.fakevendor import FakeVendor
from tests.support.signals import default_sigint

WIRES = ("openai", "anthropic", "gemini")
# A canary credential: it must never show up in anything the FakeVendor records.
CANARY = "sk-canary-7f3c2e91d4b84a0fa6b1c5e8d2f40977"


def auth_headers(wire: str, key: str = CANARY) -> dict[str, str]:
    if wire == "openai":
        return {"authorization": f"Bearer {key}"}
    if wire == "anthropic":
        return {"x-api-key": key, "anthropic-version": "2023-06-01"}
    return {"x-goog-api-key": key}


def url(fv: FakeVendor, wire: str, *, stream: bool = False, model: str = "fake-model") -> str:
    if wire == "openai":
        return f"{fv.openai_base_url}/chat/completions"
    if wire == "anthropic":
        return f"{fv.base_url}/v1/messages"
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    return f"{fv.base_url}/v1beta/models/{model}:{method}"


def body(
    wire: str,
    text: str = "What is the capital of France?",
    *,
    stream: bool = False,
    model: str = "fake-model",
    tools: list[dict[str, Any]] | None = None,
    include_usage: bool = True,
) -> dict[str, Any]:
    """A minimal valid request of ``wire`` with one user message (and JSON-Schema tools, if given)."""
    tools = tools or []
    if wire == "openai":
        out: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": text}]}
        if stream:
            out["stream"] = True
            if include_usage:
                out["stream_options"] = {"include_usage": True}
        if tools:
            out["tools"] = [{"type": "function", "function": t} for t in tools]
        return out
    if wire == "anthropic":
        out = {"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": text}]}
        if stream:
            out["stream"] = True
        if tools:
            out["tools"] = [{"name": t["name"], "description": t.get("description", ""),
                             "input_schema": t["parameters"]} for t in tools]
        return out
    out = {"contents": [{"role": "user", "parts": [{"text": text}]}]}
    if tools:
        out["tools"] = [{"functionDeclarations": [
            {"name": t["name"], "description": t.get("description", ""), "parametersJsonSchema": t["parameters"]}
            for t in tools]}]
    return out


async def post(
    client: httpx.AsyncClient, fv: FakeVendor, wire: str, *, stream: bool = False, model: str = "fake-model",
    payload: dict[str, Any] | None = None, headers: dict[str, str] | None = None, **kw: Any,
) -> httpx.Response:
    return await client.post(
        url(fv, wire, stream=stream, model=model),
        json=payload if payload is not None else body(wire, stream=stream, model=model, **kw),
        headers=headers if headers is not None else auth_headers(wire),
    )


async def sse(
    client: httpx.AsyncClient, fv: FakeVendor, wire: str, *, model: str = "fake-model",
    payload: dict[str, Any] | None = None, **kw: Any,
) -> list[tuple[str, Any]]:
    """The events of a streamed answer as ``(event name, parsed data)`` (``[DONE]`` kept as a string)."""
    events: list[tuple[str, Any]] = []
    async with aconnect_sse(
        client, "POST", url(fv, wire, stream=True, model=model),
        json=payload if payload is not None else body(wire, stream=True, model=model, **kw),
        headers=auth_headers(wire),
    ) as source:
        assert source.response.status_code == 200, source.response.status_code
        async for event in source.aiter_sse():
            events.append((event.event, event.data if event.data == "[DONE]" else json.loads(event.data)))
    return events


def weather_tool() -> dict[str, Any]:
    return {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "enum": ["Paris", "Lisbon"]},
                "days": {"type": "integer", "minimum": 2},
                "units": {"type": "string"},
            },
            "required": ["city", "days"],
        },
    }


def time_tool() -> dict[str, Any]:
    return {
        "name": "get_time",
        "description": "Local time in a city.",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string", "format": "date-time"}}},
    }


@contextmanager
def command_line(*argv: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A FakeVendor command line (``argv``: ``python``'s, e.g. ``-m agentactors fakevendor --port 0``) started.

    Yields the process and the base URL it prints first; SIGINT stops it as Ctrl-C would (it is not
    ignored in the child).  Killed if it still runs when the block ends; its pipes are closed.
    """
    import sys

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=default_sigint)
    try:
        assert proc.stdout is not None
        yield proc, proc.stdout.readline().strip()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
