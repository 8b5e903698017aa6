"""A ScriptedProvider that does not carry tools answers a tool-call item as a JSON-transport model does.

Before, its calls went out as native calls, which the loop on the JSON-fallback transport does not read: the
run saw an empty answer and asked again, silently — a test of that transport written with ToolCall items
tested nothing.
"""

from __future__ import annotations

import pytest

from agentactors import Agent, ScriptedProvider, ToolCall, tool

pytestmark = pytest.mark.anyio


async def test_a_tool_call_item_runs_the_tool_on_the_json_transport() -> None:
    ran: list[int] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        ran.append(a + b)
        return a + b

    provider = ScriptedProvider([ToolCall("c1", "add", {"a": 2, "b": 3}), "The answer is 5."], carries_tools=False)
    result = await Agent(provider, tools=[add], nudges=False).run("add 2 and 3")
    assert result.ok and result.content == "The answer is 5."
    assert ran == [5]
    # The model's turn went back to it as it wrote it: the call as a JSON block.
    assert any('"tool": "add"' in m.content for m in provider.requests[-1].messages)
