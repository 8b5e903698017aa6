"""Plain examples of what the generated conversations of ``test_wire_encoding_properties`` found: requests the
vendors answer with a 400, now sent in a form they take (or refused before sending with a typed error)."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import LLMRequest, Message, ToolCall
from agentactors.errors import ErrorKind, ProviderError
from agentactors.providers.anthropic.provider import AnthropicWire
from agentactors.providers.bedrock.provider import BedrockWire

CLAUDE = "claude-sonnet-4-5"
BEDROCK = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def _anthropic(*messages: Message) -> dict[str, Any]:
    return AnthropicWire().encode_request(LLMRequest(messages), CLAUDE, stream=False)


def _bedrock(*messages: Message) -> dict[str, Any]:
    return BedrockWire().encode_request(LLMRequest(messages), BEDROCK, stream=False)


def _call(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="get_weather", arguments={"city": "Oslo"})


# --- Anthropic ------------------------------------------------------------------------------------------------


def test_anthropic_sends_no_whitespace_only_text_block() -> None:
    # "messages: text content blocks must contain non-whitespace text" (a 400).
    body = _anthropic(Message.user("Hi"), Message.assistant("\n\n", [_call("call_1")]), Message.tool("call_1", "4°C"),
                      Message.user(" "))
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}}]
    assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result"]


def test_anthropic_sends_an_empty_error_result_with_content() -> None:
    # "tool_result: content cannot be empty if `is_error` is true" (a 400).
    body = _anthropic(Message.user("Hi"), Message.assistant("", [_call("call_1")]),
                      Message.tool("call_1", "", is_error=True))
    result = body["messages"][2]["content"][0]
    assert result["is_error"] is True and result["content"] == "(no output)"


@pytest.mark.parametrize("call_id", ["functions.get_weather:0", "call 7", "a/b"])
def test_anthropic_sends_a_call_id_it_takes(call_id: str) -> None:
    # tool_use.id must match ^[a-zA-Z0-9_-]+$: another vendor's id (Kimi's functions.name:0) is a 400 there.
    body = _anthropic(Message.user("Hi"), Message.assistant("", [_call(call_id), _call("call_2")]),
                      Message.tool(call_id, "4°C"), Message.tool("call_2", "5°C"))
    uses = [b["id"] for b in body["messages"][1]["content"]]
    results = [b["tool_use_id"] for b in body["messages"][2]["content"]]
    assert uses == results and uses[1] == "call_2"
    assert all(c.isalnum() or c in "_-" for c in uses[0])
    again = _anthropic(Message.user("Hi"), Message.assistant("", [_call(call_id), _call("call_2")]),
                       Message.tool(call_id, "4°C"), Message.tool("call_2", "5°C"))
    assert again == body  # the same id every time: the prompt cache holds


def test_anthropic_sends_a_conversation_opening_with_the_assistant_as_it_is() -> None:
    # Not refused here: a 400 the API may give is a request-kind error anyway (docs/wire.md).
    body = _anthropic(Message.system("Be brief."), Message.assistant("Hi! How can I help?"), Message.user("Weather?"))
    assert [m["role"] for m in body["messages"]] == ["assistant", "user"]


def test_anthropic_refuses_a_conversation_with_nothing_to_send() -> None:
    with pytest.raises(ProviderError, match="nothing to send") as caught:
        _anthropic(Message.system("Be brief."), Message.user(""))
    assert caught.value.kind is ErrorKind.request


# --- Bedrock --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("call_id", ["functions.get_weather:0", "call 7"])
def test_bedrock_sends_a_tool_use_id_it_takes(call_id: str) -> None:
    # Converse's toolUseId: [a-zA-Z0-9_-]+, 1 to 64 characters.
    body = _bedrock(Message.user("Hi"), Message.assistant("", [_call(call_id)]), Message.tool(call_id, "4°C"))
    use = body["messages"][1]["content"][0]["toolUse"]["toolUseId"]
    assert body["messages"][2]["content"][0]["toolResult"]["toolUseId"] == use
    assert all(c.isalnum() or c in "_-" for c in use) and len(use) <= 64


def test_bedrock_sends_a_conversation_opening_with_the_assistant_as_it_is() -> None:
    body = _bedrock(Message.assistant("Hi! How can I help?"), Message.user("Weather?"))
    assert [m["role"] for m in body["messages"]] == ["assistant", "user"]


def test_bedrock_refuses_a_conversation_with_nothing_to_send() -> None:
    with pytest.raises(ProviderError, match="nothing to send") as caught:
        _bedrock(Message.user("  "))
    assert caught.value.kind is ErrorKind.request
