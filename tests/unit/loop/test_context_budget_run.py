"""The context budget in a run: what the provider receives."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.agent.core import Agent
from agentactors.loop.context_budget import CHARS_PER_TOKEN, message_chars
from agentactors.messages import ToolCall
from agentactors.parts import IMAGE_TOKENS, Image, Text
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 30


async def test_old_screenshots_leave_the_requests_and_stay_in_the_record() -> None:
    @tool
    def screenshot(n: int) -> list[Any]:
        """The screen."""
        return [Text(f"screen {n}"), Image(data=PNG)]

    script: list[Any] = [ToolCall(f"c{i}", "screenshot", {"n": i}) for i in range(7)] + ["done"]
    provider = ScriptedProvider(script)
    budget = 3 * IMAGE_TOKENS * CHARS_PER_TOKEN + 1_000
    agent = Agent(provider, tools=[screenshot], context_budget_chars=budget, system="S", nudges=False)
    result = await agent.run("click through")
    last = provider.requests[-1]
    assert sum(message_chars(m) for m in last.messages) <= budget
    assert 0 < sum(len(m.media) for m in last.messages) <= 3
    first = next(m for m in last.messages if m.role == "tool")
    assert "1 image of this earlier tool result was removed" in first.content
    # The run's own conversation keeps every image.
    assert sum(len(m.media) for m in result.messages if m.role == "tool") == 7


async def test_on_the_json_transport_the_request_sent_keeps_within_the_budget() -> None:
    # Without native tools the calls and results go as text blocks, about three times their native size: the
    # budget measured them natively, so a request "within" it was three times over it.
    @tool
    def lookup(q: str) -> str:
        """Look it up."""
        return "r" * 20

    script: list[Any] = ['{"tool": "lookup", "arguments": {"q": "x"}}'] * 40 + ["done"]
    provider = ScriptedProvider(script, carries_tools=False)
    budget = 3_000
    agent = Agent(provider, tools=[lookup], context_budget_chars=budget, system="S", nudges=False, max_steps=50)
    result = await agent.run("look up 40 things")
    assert result.ok, result.error
    last = provider.requests[-1]
    system = sum(message_chars(m) for m in last.messages if m.role == "system")
    assert sum(message_chars(m) for m in last.messages) - system <= budget
