"""Bring your own OpenAI-compatible server: a forced tool choice with enum-only parameters, live.

Skipped unless ``AGENTACTORS_OPENAI_BASE_URL`` is set, e.g.::

    AGENTACTORS_OPENAI_BASE_URL=http://127.0.0.1:8000/v1 AGENTACTORS_OPENAI_MODEL=qwen2.5-7b-instruct \\
        .venv/bin/pytest -q tests/live/test_byo_openai_server.py

``AGENTACTORS_OPENAI_MODEL`` names the model (required with the base URL) and
``AGENTACTORS_OPENAI_API_KEY`` the key, if the server needs one.  The provider is
told the server carries forced tool choices (``carries_forced_tool_choice=True``):
this test is how you check that promise.  Each test sends one small request.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import jsonschema
import pytest

from agentactors.messages import (
    LLMRequest,
    LLMResponse,
    Message,
    StreamEnd,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolChoice,
    ToolSpec,
)
from agentactors.providers.openai.provider import OpenAIProvider

BASE_URL = os.environ.get("AGENTACTORS_OPENAI_BASE_URL", "")
MODEL = os.environ.get("AGENTACTORS_OPENAI_MODEL", "")
API_KEY = os.environ.get("AGENTACTORS_OPENAI_API_KEY") or None

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.live,
    pytest.mark.skipif(not BASE_URL, reason="set AGENTACTORS_OPENAI_BASE_URL to run against your server"),
]

SET_LIGHT = ToolSpec(
    "set_traffic_light",
    "Switch the traffic light to one colour.",
    {
        "type": "object",
        "properties": {
            "colour": {"type": "string", "enum": ["red", "amber", "green"]},
            "blink": {"type": "string", "enum": ["on", "off"]},
        },
        "required": ["colour", "blink"],
        "additionalProperties": False,
    },
)
DISTRACTOR = ToolSpec(
    "report_weather", "Report the weather.", {"type": "object", "properties": {"city": {"type": "string"}}}
)


@pytest.fixture
def anyio_backend() -> str:
    # One backend is enough for a live server: it is the server under test, not the event loop.
    return "asyncio"


@pytest.fixture
async def provider() -> AsyncIterator[OpenAIProvider]:
    if not MODEL:
        pytest.fail("AGENTACTORS_OPENAI_MODEL must name the model when AGENTACTORS_OPENAI_BASE_URL is set")
    async with OpenAIProvider(
        MODEL, api_key=API_KEY, base_url=BASE_URL, carries_forced_tool_choice=True, name="byo"
    ) as p:
        yield p


def forced_request() -> LLMRequest:
    return LLMRequest(
        [
            Message.system("You control a traffic light. Always act through the tool."),
            Message.user("Cars must stop now. Make the light solid (not blinking) and the colour for stop."),
        ],
        tools=[DISTRACTOR, SET_LIGHT],
        tool_choice=ToolChoice.tool("set_traffic_light"),
        max_tokens=512,
        temperature=0.0,
    )


def check_forced_call(response: LLMResponse) -> None:
    assert response.provider == "byo"
    assert response.tool_calls, f"the server ignored the forced tool choice: {response!r}"
    call = response.tool_calls[0]
    assert call.name == "set_traffic_light"
    assert call.arguments_error is None, f"unusable arguments {call.raw_arguments!r}: {call.arguments_error_detail}"
    jsonschema.validate(call.arguments, SET_LIGHT.parameters)
    assert call.id  # synthesised when the server sent none


async def test_forced_enum_tool_call(provider: OpenAIProvider) -> None:
    check_forced_call(await provider.complete(forced_request()))


async def test_forced_enum_tool_call_streamed(provider: OpenAIProvider) -> None:
    starts, deltas, ends, finals = [], [], [], []
    async with provider.stream(forced_request()) as stream:
        async for event in stream:
            if isinstance(event, ToolCallStart):
                starts.append(event)
            elif isinstance(event, ToolCallDelta):
                deltas.append(event)
            elif isinstance(event, ToolCallEnd):
                ends.append(event)
            elif isinstance(event, StreamEnd):
                finals.append(event)
    assert len(finals) == 1
    response = finals[0].response
    check_forced_call(response)
    assert [e.call for e in ends] == list(response.tool_calls)
    assert [s.id for s in starts] == [c.id for c in response.tool_calls]
    first = response.tool_calls[0]
    streamed = "".join(d.arguments_fragment for d in deltas if d.index == starts[0].index)
    assert streamed == (first.raw_arguments or "")
