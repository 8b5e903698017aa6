"""A conversation that ends with the assistant's turn (a prefill: ``"My pick is: "``) is sent to Claude without the
trailing whitespace its APIs refuse: a 400 "final assistant content cannot end with trailing whitespace" on the
Messages API and on Bedrock's Converse for a Claude model.  Whitespace anywhere else is left as it is, and other
models on Converse get the turn as written.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import Agent, LLMRequest, Message, ToolCall
from agentactors.providers.anthropic.encode import encode_request as anthropic_body
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.bedrock.encode import encode_request as bedrock_body
from agentactors.testing import FakeVendor

KEY = "sk-ant-final-whitespace-123456"
CLAUDE_ON_BEDROCK = "anthropic.claude-3-5-sonnet-20240620-v1:0"
NOVA = "amazon.nova-pro-v1:0"


def _request(*messages: Message) -> LLMRequest:
    return LLMRequest((Message.user("Pick a colour"), *messages))


def _texts(turn: dict[str, Any]) -> list[Any]:
    return [block.get("text") for block in turn["content"]]


@pytest.mark.parametrize("prefill", ["My pick is: ", "<answer>\n", "Sure,\t \n"])
def test_the_messages_api_gets_a_prefill_without_its_trailing_whitespace(prefill: str) -> None:
    body = anthropic_body(_request(Message.assistant(prefill)), "claude-sonnet-4-5", stream=False)
    assert body["messages"][-1]["role"] == "assistant"
    assert _texts(body["messages"][-1]) == [prefill.rstrip()]


def test_a_prefill_of_whitespace_only_is_no_turn() -> None:
    body = anthropic_body(_request(Message.assistant("  \n")), "claude-sonnet-4-5", stream=False)
    assert [m["role"] for m in body["messages"]] == ["user"]


def test_whitespace_before_the_last_turn_and_after_a_tool_call_is_kept() -> None:
    earlier = Message.assistant("Blue, or   \n")
    body = anthropic_body(_request(earlier, Message.user("why?")), "claude-sonnet-4-5", stream=False)
    assert _texts(body["messages"][1]) == ["Blue, or   \n"]  # not the final turn: the model reads it as it was
    calls = Message.assistant("Looking it up ", tool_calls=[ToolCall("c1", "lookup", {"q": "x"})])
    body = anthropic_body(_request(calls, Message.tool("c1", "blue")), "claude-sonnet-4-5", stream=False)
    assert body["messages"][1]["content"][0]["text"] == "Looking it up "


def test_converse_trims_a_claude_prefill_and_leaves_other_models_turn_as_written() -> None:
    claude = bedrock_body(_request(Message.assistant("My pick is: ")), CLAUDE_ON_BEDROCK, stream=False)
    assert claude["messages"][-1]["content"] == [{"text": "My pick is:"}]
    nova = bedrock_body(_request(Message.assistant("My pick is: ")), NOVA, stream=False)
    assert nova["messages"][-1]["content"] == [{"text": "My pick is: "}]


@pytest.mark.anyio
async def test_a_run_continuing_a_prefill_is_answered_not_refused() -> None:
    """End to end: the FakeVendor refuses a final assistant text ending in whitespace, as Anthropic does."""
    async with FakeVendor(expected_api_key=KEY) as fv:
        agent = Agent(AnthropicProvider("claude-sonnet-4-5", api_key=KEY, base_url=fv.base_url), tools=(),
                      nudges=False)
        result = await agent.run([Message.user("Pick a colour"), Message.assistant("My pick is: ")])
        assert result.ok, result.error
        sent = fv.requests[-1].body
        assert sent is not None and sent["messages"][-1]["content"][-1]["text"] == "My pick is:"
