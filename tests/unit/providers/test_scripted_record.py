"""``ScriptedProvider(record=False)``: a long-lived provider (a Ray worker's) keeps no request it saw."""

from __future__ import annotations

import pytest

from agentactors import LLMRequest, Message, ScriptedProvider, ToolCall
from agentactors.providers.scripted import ScriptExhaustedError

pytestmark = pytest.mark.anyio


async def test_record_false_keeps_no_request_but_counts_them() -> None:
    provider = ScriptedProvider(lambda request: "ok", record=False)
    for i in range(5):
        response = await provider.complete(LLMRequest([Message.user(f"q{i}")]))
        assert response.content == "ok"
    async with provider.stream(LLMRequest([Message.user("streamed")])) as events:
        [event async for event in events]
    assert provider.requests == []
    assert provider.calls == 6
    assert provider.record is False


async def test_record_is_the_default() -> None:
    provider = ScriptedProvider(["a", [ToolCall("c1", "t", {})]])
    await provider.complete(LLMRequest([Message.user("one")]))
    await provider.complete(LLMRequest([Message.user("two")]))
    assert [r.messages[-1].content for r in provider.requests] == ["one", "two"]
    assert provider.calls == 2


async def test_an_exhausted_script_names_the_call_without_records() -> None:
    provider = ScriptedProvider(["only"], record=False)
    await provider.complete(LLMRequest([Message.user("one")]))
    with pytest.raises(ScriptExhaustedError, match="call #2"):
        await provider.complete(LLMRequest([Message.user("two")]))
    assert provider.requests == []
