"""Converse rejects a blank text block (a 400 ValidationException "The text field ... is blank"): the
encoder never sends one — not for a tool that returned nothing, not for whitespace-only text."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentactors import BedrockProvider
from agentactors.messages import LLMRequest, Message, ToolCall, ToolSpec
from agentactors.parts import Image, Text
from agentactors.providers.bedrock import encode_request
from agentactors.providers.bedrock.encode import EMPTY_TOOL_RESULT

NOVA = "us.amazon.nova-pro-v1:0"
TOOL = ToolSpec("write_file", "", {"type": "object", "properties": {"p": {"type": "string"}}})
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
CALL = ToolCall("t1", "write_file", {"p": "x"})


def body(*messages: Message) -> dict[str, Any]:
    return encode_request(LLMRequest(list(messages), tools=(TOOL,)), NOVA, stream=False)


def texts(out: dict[str, Any]) -> list[str]:
    """Every text the body sends, tool results' included."""
    found = [b["text"] for b in out.get("system", ()) if "text" in b]
    for m in out["messages"]:
        for b in m["content"]:
            found += [b["text"]] if "text" in b else []
            found += [c["text"] for c in b.get("toolResult", {}).get("content", ()) if "text" in c]
    return found


@pytest.mark.parametrize("result", ["", "   ", "\n\t"])
@pytest.mark.parametrize("is_error", [False, True])
def test_a_blank_tool_result_sends_a_placeholder(result: str, is_error: bool) -> None:
    out = body(Message.user("save it"), Message.assistant("", [CALL]), Message.tool("t1", result, is_error=is_error))
    tool_result = out["messages"][-1]["content"][0]["toolResult"]
    assert tool_result["content"] == [{"text": EMPTY_TOOL_RESULT}]
    assert tool_result["status"] == ("error" if is_error else "success")
    assert EMPTY_TOOL_RESULT.strip()


def test_a_tool_result_with_media_and_blank_text_sends_the_media_only() -> None:
    out = body(Message.user("shoot"), Message.assistant("", [CALL]),
               Message.tool("t1", [Text("  "), Image(PNG, media_type="image/png")]))
    content = out["messages"][-1]["content"][0]["toolResult"]["content"]
    assert [list(b) for b in content] == [["image"]]


def test_a_tool_result_with_text_is_sent_as_is() -> None:
    out = body(Message.user("read it"), Message.assistant("", [CALL]), Message.tool("t1", "  done  "))
    assert out["messages"][-1]["content"][0]["toolResult"]["content"] == [{"text": "  done  "}]


def test_whitespace_only_user_and_assistant_text_is_not_sent() -> None:
    out = body(Message.system("  "), Message.user([Text(" \n "), Image(PNG, media_type="image/png")]),
               Message.assistant(" \n", [CALL]), Message.tool("t1", "ok"), Message.assistant("\t"),
               Message.user("next"))
    assert all(t.strip() for t in texts(out))
    assert "system" not in out
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]
    # The assistant message with blank text still sends its call.
    assert out["messages"][1]["content"] == [{"toolUse": {"toolUseId": "t1", "name": "write_file",
                                                          "input": {"p": "x"}}}]
    # The blank assistant turn is not sent empty: the user turns around it merge.
    assert out["messages"][2]["content"] == [
        {"toolResult": {"toolUseId": "t1", "content": [{"text": "ok"}], "status": "success"}},
        {"text": "next"},
    ]


def test_a_whitespace_user_message_is_not_sent_empty() -> None:
    out = body(Message.user("hi"), Message.assistant("hello"), Message.user("   "))
    assert [m["role"] for m in out["messages"]] == ["user", "assistant"]
    assert all(m["content"] for m in out["messages"])


@pytest.mark.anyio
async def test_a_tool_that_returned_nothing_does_not_end_the_run_with_a_400() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        for m in json.loads(request.content)["messages"]:
            for b in m["content"]:
                for c in b.get("toolResult", {}).get("content", ()):
                    if "text" in c and not c["text"].strip():
                        return httpx.Response(400, json={"message": "The text field in the ToolResultContentBlock "
                                                                    "object is blank."},
                                              headers={"x-amzn-ErrorType": "ValidationException:"})
        return httpx.Response(200, json={"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
                                         "stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        provider = BedrockProvider(NOVA, region="us-east-1", access_key_id="AKIDTEST", secret_access_key="s",
                                   http_client=http)
        response = await provider.complete(LLMRequest(
            [Message.user("save it"), Message.assistant("", [CALL]), Message.tool("t1", "")], tools=(TOOL,)))
    assert response.content == "ok" and len(sent) == 1
