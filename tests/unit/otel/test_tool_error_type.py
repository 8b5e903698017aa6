"""A tool span's ``error.type`` is what the tool raised (``tools.finished``'s ``error_type``), else its status.

OpenTelemetry's ``error.type`` names the class of error an operation ended with; a tool that raised ``KeyError``
said only ``error`` (its status) before the event carried the exception's type.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agentactors import Agent, LLMRequest, Runtime, ScriptedProvider, ToolCall, tool
from tests.unit.otel.test_recorder import Telemetry

pytestmark = pytest.mark.anyio


@tool
async def lookup(city: str) -> str:
    """Look a city up."""
    return {"Paris": "sunny"}[city]


def model(request: LLMRequest) -> Any:
    if request.messages[-1].role == "tool":
        return "I could not look it up."
    return [ToolCall("c1", "lookup", {"city": "Oslo"})]


@pytest.mark.virtual_time
async def test_a_tool_that_raised_is_a_span_whose_error_type_is_the_exceptions() -> None:
    t = Telemetry()
    async with Runtime(recorders=[t.recorder()]):
        result = await Agent(ScriptedProvider(model), tools=[lookup]).run("weather in Oslo?")
    assert result.content == "I could not look it up."
    (span,) = t.named("execute_tool")
    attributes = span.attributes or {}
    assert attributes["agentactors.tool.status"] == "error"
    assert attributes["error.type"] == "KeyError"
    assert span.status.status_code is StatusCode.ERROR
