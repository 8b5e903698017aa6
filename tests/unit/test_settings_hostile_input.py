"""Settings a hostile caller writes: a token count no server can parse, a stop value that is not a list of strings,
and vendor options naming a field the codec owns, on every wire."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import LLMRequest, Message, ModelSettings, ToolSpec, UnsupportedSettingError
from agentactors.providers.anthropic.encode import encode_request as anthropic_body
from agentactors.providers.bedrock.encode import encode_request as bedrock_body
from agentactors.providers.gemini.encode import encode_request as gemini_body

INT64 = 2**63 - 1


@pytest.mark.parametrize("field", ["max_tokens", "thinking_budget"])
def test_a_token_count_past_64_bits_is_refused_in_settings(field: str) -> None:
    # max_tokens=10**30 reached OpenAI's, Anthropic's and Bedrock's bodies (no server parses it), while the same value
    # under vendor_options was refused: a token count is bounded like the seed.
    too_many: dict[str, Any] = {field: INT64 + 1}
    with pytest.raises(ValueError, match="64-bit"):
        ModelSettings(**too_many)
    widest: dict[str, Any] = {field: INT64}
    assert getattr(ModelSettings(**widest), field) == INT64


@pytest.mark.parametrize("stop", [5, 2.5, object()])
def test_a_stop_that_is_not_a_string_or_a_list_is_a_clear_type_error(stop: Any) -> None:
    # Was "'int' object is not iterable", raised by tuple() inside the converter.
    with pytest.raises(TypeError, match="stop must be a str or a sequence of str"):
        ModelSettings(stop=stop)


def test_a_stop_mapping_is_refused_not_read_as_its_keys() -> None:
    with pytest.raises(TypeError, match="stop must be a str or a sequence of str"):
        ModelSettings(stop={"END": 1})


def _gemini(request: LLMRequest) -> dict[str, Any]:
    return gemini_body(request, "gemini-2.5-flash", stream=False)


def _bedrock(request: LLMRequest) -> dict[str, Any]:
    return bedrock_body(request, "anthropic.claude-sonnet-4-5-20250929-v1:0", stream=False)


@pytest.mark.parametrize(("wire", "encode"), [("gemini", _gemini), ("bedrock", _bedrock)])
@pytest.mark.parametrize("key", ["model", "stream"])
def test_options_naming_the_model_or_streaming_are_refused_on_every_wire(wire: str, encode: Any, key: str) -> None:
    # docs/settings.md: "extra naming model, messages / input / contents or stream | all | UnsupportedSettingError".
    # Gemini and Bedrock copied them into the body: the model is in their URL (an option cannot switch it), and
    # neither body has a stream field.
    request = LLMRequest([Message.user("hi")], vendor_options={wire: {key: "gemini-3-pro"}})
    with pytest.raises(UnsupportedSettingError, match=f"may not set '{key}'") as caught:
        encode(request)
    assert caught.value.setting == "vendor_options"
    assert "gemini-3-pro" not in str(caught.value)


def _tool() -> ToolSpec:
    return ToolSpec(name="lookup", description="Look a word up.", parameters={"type": "object", "properties": {}})


def test_an_anthropic_tools_option_beside_declared_tools_is_refused() -> None:
    # It replaced the declared tools: the model could no longer call them (and a named tool choice drew a 400).
    web = {"type": "web_search_20250305", "name": "web_search"}
    request = LLMRequest([Message.user("hi")], tools=[_tool()], vendor_options={"anthropic": {"tools": [web]}})
    with pytest.raises(UnsupportedSettingError, match=r"'tools'.*extra_tools") as caught:
        anthropic_body(request, "claude-sonnet-4-5", stream=False)
    assert caught.value.setting == "vendor_options"
    # extra_tools appends; without declared tools, a raw tools list is the body's whole tool list.
    both = LLMRequest([Message.user("hi")], tools=[_tool()], vendor_options={"anthropic": {"extra_tools": [web]}})
    assert [t["name"] for t in anthropic_body(both, "claude-sonnet-4-5", stream=False)["tools"]] == [
        "lookup", "web_search"]
    alone = LLMRequest([Message.user("hi")], vendor_options={"anthropic": {"tools": [web]}})
    assert anthropic_body(alone, "claude-sonnet-4-5", stream=False)["tools"] == [web]


def test_a_bedrock_tool_config_naming_tools_beside_declared_tools_is_refused() -> None:
    grounding = {"systemTool": {"name": "nova_grounding"}}
    request = LLMRequest([Message.user("hi")], tools=[_tool()],
                         vendor_options={"bedrock": {"toolConfig": {"tools": [grounding]}}})
    with pytest.raises(UnsupportedSettingError, match=r"toolConfig.*'tools'") as caught:
        _bedrock(request)
    assert caught.value.setting == "vendor_options"
    # Other toolConfig keys still merge key by key; without declared tools the option's list is the tool list.
    choice = LLMRequest([Message.user("hi")], tools=[_tool()],
                        vendor_options={"bedrock": {"toolConfig": {"toolChoice": {"any": {}}}}})
    config = _bedrock(choice)["toolConfig"]
    assert config["toolChoice"] == {"any": {}} and config["tools"][0]["toolSpec"]["name"] == "lookup"
    alone = LLMRequest([Message.user("hi")], vendor_options={"bedrock": {"toolConfig": {"tools": [grounding]}}})
    assert _bedrock(alone)["toolConfig"] == {"tools": [grounding]}


@pytest.mark.parametrize("field", ["max_tokens", "thinking_budget"])
def test_a_token_count_past_64_bits_is_refused_in_a_request_too(field: str) -> None:
    # A request built directly, not from ModelSettings: no wire or server parses more, and the body would carry it.
    def request(count: int) -> LLMRequest:
        if field == "max_tokens":
            return LLMRequest((Message.user("hi"),), max_tokens=count)
        return LLMRequest((Message.user("hi"),), thinking_budget=count)

    with pytest.raises(ValueError, match=f"{field} must fit a signed 64-bit integer"):
        request(2**63)
    assert getattr(request(2**63 - 1), field) == 2**63 - 1
