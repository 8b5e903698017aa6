"""A full agent run over the FakeVendor (each wire, real HTTP) that calls an MCP tool and answers with its result.

The model is the FakeVendor: it asks for the MCP server's ``add`` tool, then answers with what the tool
returned.  The server's schemas (one with ``$defs``/``$ref``) are offered on every wire, fit by that
wire's schema rules.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import Agent, InMemoryRecorder, Runtime
from agentactors.testing.fakevendor import FakeToolCall, FakeVendor
from tests.support.mcp_helpers import statuses, stdio_server
from tests.support.providers import WIRES, provider

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("wire", WIRES)]


def _model(record: Any) -> Any:
    conversation = record.conversation
    if conversation is None or not conversation.tool_results:
        return FakeToolCall("add", {"a": 20, "b": 22})
    return f"The sum is {conversation.tool_results[-1].content}."


async def test_an_agent_over_the_fake_vendor_answers_with_an_mcp_tool_result(
    fake_vendor: FakeVendor, wire: str
) -> None:
    fake_vendor.on(_model)
    recorder = InMemoryRecorder()
    async with Runtime():
        agent = Agent(provider(wire, fake_vendor), toolsets=[stdio_server()], recorders=[recorder])
        result = await agent.run("What is 20 + 22?")
    assert result.content == "The sum is 42."
    assert [c.name for c in result.tool_calls] == ["add"]
    assert statuses(recorder) == [("add", "ok")]
    first, second = fake_vendor.requests
    assert first.conversation is not None and second.conversation is not None
    offered = {t.name for t in first.conversation.tools}
    assert {"add", "search", "hang"} <= offered
    assert second.conversation.tool_results[-1].content == "42"
    assert all(r.outcome == "ok" and r.key_leaks == () for r in fake_vendor.requests)
