"""Fields another server of the Chat Completions wire answered with are not sent to OpenAI's own endpoint.

OpenRouter's ``reasoning_details`` and Gemini's OpenAI-compatible ``extra_content`` / ``thought_signature`` come
back on messages and calls and are replayed (``provider_data["openai"]``).  A fallback from such a server to
api.openai.com sent them there, which refuses message fields it does not know: every request of the run a 400.
"""

from __future__ import annotations

from typing import Any

from agentactors.messages import LLMRequest, Message, ToolCall, ToolSpec
from agentactors.providers.openai.encode import encode_request

NOW = ToolSpec("now", "The time.", {"type": "object", "properties": {}})
GEMINI = {"extra_content": {"google": {"thought_signature": "sig"}}}


def _request() -> LLMRequest:
    call = ToolCall("c1", "now", {}, provider_data={"openai": GEMINI})
    turn = Message.assistant("", [call], provider_data={
        "openai": {"reasoning_details": [{"type": "reasoning.text", "text": "hm"}], **GEMINI}
    })
    return LLMRequest((Message.user("time?"), turn, Message.tool("c1", "noon", "now")), tools=(NOW,))


def _assistant(body: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in body["messages"] if m["role"] == "assistant")


def test_openais_own_endpoint_gets_none_of_another_servers_fields() -> None:
    sent = _assistant(encode_request(_request(), "gpt-4o", stream=False, official=True))
    assert "reasoning_details" not in sent and "extra_content" not in sent
    assert "extra_content" not in sent["tool_calls"][0]
    assert sent["tool_calls"][0]["function"]["name"] == "now"


def test_a_compatible_server_gets_them_back_as_before() -> None:
    sent = _assistant(encode_request(_request(), "google/gemini-2.5-pro", stream=False))
    assert sent["reasoning_details"] == [{"type": "reasoning.text", "text": "hm"}]
    assert sent["extra_content"] == GEMINI["extra_content"]
    assert sent["tool_calls"][0]["extra_content"] == GEMINI["extra_content"]
