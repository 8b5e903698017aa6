"""Bedrock models that take no tools through Converse: DeepSeek-R1, Titan, Claude 2 and earlier.

AWS's "Supported models and model features" table of the Converse API
(https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-supported-models-features.html)
gives them no tool use; Converse answers a ``toolConfig`` for DeepSeek-R1 with "This model doesn't support tool
use".  A request with tools for one of them is refused before sending (:class:`UnsupportedSettingError`, setting
``tools``), and the provider says ``native_tools=False`` for them so an agent picks the JSON-fallback transport.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentactors import Agent, BedrockProvider
from agentactors.errors import UnsupportedSettingError
from agentactors.messages import LLMRequest, Message, ToolCall, ToolChoice, ToolSpec
from agentactors.providers.bedrock.encode import encode_request
from agentactors.providers.bedrock.models import model_row
from agentactors.providers.port import native_tools_for

pytestmark = pytest.mark.anyio

TOOL = ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {"word": {"type": "string"}}})
R1 = "us.deepseek.r1-v1:0"
NO_TOOLS = [R1, "deepseek.r1-v1:0", "arn:aws:bedrock:us-east-1::foundation-model/deepseek.r1-v1:0",
            "amazon.titan-text-premier-v1:0", "anthropic.claude-v2:1", "anthropic.claude-instant-v1"]
CREDS: dict[str, Any] = {"region": "us-east-1", "access_key_id": "AKIDTEST", "secret_access_key": "s"}


def test_deepseek_r1_takes_no_tools_and_kimi_k2_thinking_still_does() -> None:
    r1 = model_row(R1)
    assert r1 is not None and r1.tools is False and r1.reasoning == "always"
    kimi = model_row("moonshot.kimi-k2-thinking")
    assert kimi is not None and kimi.tools is True and kimi.reasoning == "always"


@pytest.mark.parametrize("model", NO_TOOLS)
def test_a_request_with_tools_is_refused_before_sending(model: str) -> None:
    with pytest.raises(UnsupportedSettingError) as caught:
        encode_request(LLMRequest([Message.user("look up a")], tools=[TOOL]), model, stream=False)
    assert caught.value.setting == "tools" and caught.value.model == model
    assert "tool" in caught.value.message and caught.value.retryable is False


@pytest.mark.parametrize("model", NO_TOOLS)
def test_without_tools_the_request_goes_as_before(model: str) -> None:
    body = encode_request(LLMRequest([Message.user("hi")]), model, stream=False)
    assert "toolConfig" not in body and body["messages"][0]["content"] == [{"text": "hi"}]


def test_tools_with_choice_none_are_not_sent_so_nothing_is_refused() -> None:
    body = encode_request(LLMRequest([Message.user("hi")], tools=[TOOL], tool_choice=ToolChoice.none()), R1,
                          stream=False)
    assert "toolConfig" not in body


def test_a_model_that_takes_tools_is_unchanged() -> None:
    body = encode_request(LLMRequest([Message.user("hi")], tools=[TOOL]), "us.amazon.nova-pro-v1:0", stream=False)
    assert body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "lookup"


def test_capabilities_say_no_native_tools_for_these_models() -> None:
    p = BedrockProvider(R1, **CREDS)
    assert p.capabilities(None).native_tools is False and native_tools_for(p) is False
    assert p.capabilities("us.amazon.nova-pro-v1:0").native_tools is True
    nova = BedrockProvider("us.amazon.nova-pro-v1:0", **CREDS)
    assert nova.capabilities(None).native_tools is True and nova.capabilities(R1).native_tools is False
    assert nova.capabilities("an-application-profile").native_tools is True  # unknown: Bedrock judges


async def test_the_provider_refuses_before_anything_is_sent() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(400, json={"message": "This model doesn't support tool use."},
                              headers={"x-amzn-ErrorType": "ValidationException:"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        p = BedrockProvider(R1, http_client=http, **CREDS)
        request = LLMRequest([Message.user("look up a"), Message.assistant("", [ToolCall("t1", "lookup", {})]),
                              Message.tool("t1", "a: a letter")], tools=[TOOL])
        with pytest.raises(UnsupportedSettingError):
            await p.complete(request)
        with pytest.raises(UnsupportedSettingError):
            async with p.stream(request) as events:
                async for _ in events:
                    pass
    assert sent == []


async def test_an_agent_on_such_a_model_describes_its_tools_in_the_prompt() -> None:
    bodies: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"output": {"message": {"role": "assistant", "content": [{"text": "a"}]}},
                                         "stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1}})

    def lookup(word: str) -> str:
        """Look a word up."""
        return word

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        agent = Agent(BedrockProvider(R1, http_client=http, **CREDS), tools=[lookup])
        assert (await agent.run("look up a")).content == "a"
    (body,) = bodies
    assert "toolConfig" not in body and "lookup" in json.dumps(body["system"])
