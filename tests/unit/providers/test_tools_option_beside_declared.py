"""A ``tools`` vendor option beside the request's declared tools, on the OpenAI wires: appended, never in their place.

Copied over the body, it replaced the declared tools: the model could no longer call the agent's own tools (and a
named tool choice was a 400).  Anthropic refuses it (``extra_tools`` appends), Bedrock refuses its ``toolConfig``;
the OpenAI wires have no other way to add a hosted tool (``web_search``) beside the functions, so there it appends.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.errors import UnsupportedSettingError
from agentactors.messages import LLMRequest, Message, ToolSpec
from agentactors.providers.openai.encode import encode_request as chat_body
from agentactors.providers.responses.encode import encode_request as responses_body

NOW = ToolSpec("now", "The time.", {"type": "object", "properties": {}})
HOSTED = {"type": "web_search"}


def _names(body: dict[str, Any]) -> list[str]:
    return [t.get("name") or t.get("function", {}).get("name") or t["type"] for t in body["tools"]]


def _request(option: Any, *, tools: bool = True, wire: str) -> LLMRequest:
    return LLMRequest((Message.user("hi"),), tools=(NOW,) if tools else (), vendor_options={wire: {"tools": option}})


def test_chat_completions_appends_a_tools_option_to_the_declared_tools() -> None:
    body = chat_body(_request([HOSTED], wire="openai"), "gpt-4o", stream=False)
    assert _names(body) == ["now", "web_search"]


def test_responses_appends_a_tools_option_to_the_declared_tools() -> None:
    body = responses_body(_request([HOSTED], wire="openai-responses"), "gpt-4o", stream=False)
    assert _names(body) == ["now", "web_search"]


@pytest.mark.parametrize(("wire", "encode"), [("openai", chat_body), ("openai-responses", responses_body)])
def test_without_declared_tools_the_option_is_the_whole_list(wire: str, encode: Any) -> None:
    body = encode(_request([HOSTED], tools=False, wire=wire), "gpt-4o", stream=False)
    assert body["tools"] == [HOSTED]


@pytest.mark.parametrize(("wire", "encode"), [("openai", chat_body), ("openai-responses", responses_body)])
@pytest.mark.parametrize("option", [HOSTED, "web_search", [HOSTED, 5]])
def test_a_tools_option_that_is_not_a_list_of_objects_is_refused_naming_the_key(
    wire: str, encode: Any, option: Any
) -> None:
    with pytest.raises(UnsupportedSettingError, match=r"\['tools'\] beside declared tools") as caught:
        encode(_request(option, wire=wire), "gpt-4o", stream=False)
    assert caught.value.setting == "vendor_options"
