"""Schemas fitted to the vendors' constrained decoding, and the response format on each wire's body."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.messages import LLMRequest, Message, ResponseFormat
from agentactors.providers._constrained_schema import anthropic_output_schema, openai_strict_schema
from agentactors.providers.anthropic.encode import encode_request as anthropic_body
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.gemini.provider import GeminiProvider, GeminiWire
from agentactors.providers.openai.provider import OpenAIProvider, OpenAIWire
from agentactors.tools.json_refs import inline_refs

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "score": {"type": "integer", "minimum": 0},
        "home": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    "required": ["name", "tags"],
}


def test_openai_strict_closes_objects_requires_everything_and_makes_optionals_nullable() -> None:
    out = openai_strict_schema(SCHEMA)
    assert out["additionalProperties"] is False
    assert out["required"] == ["name", "tags", "score", "home"]
    assert out["properties"]["name"] == {"type": "string", "description": "(minLength: 1)"}
    assert out["properties"]["score"] == {"type": ["integer", "null"], "minimum": 0}
    home = out["properties"]["home"]
    assert home["type"] == ["object", "null"] and home["additionalProperties"] is False
    assert SCHEMA["properties"]["name"] == {"type": "string", "minLength": 1}, "the input is not modified"


def test_anthropic_closes_objects_and_moves_constraints_into_descriptions() -> None:
    out = anthropic_output_schema(SCHEMA)
    assert out["required"] == ["name", "tags"] and out["additionalProperties"] is False
    assert out["properties"]["score"] == {"type": "integer", "description": "(minimum: 0)"}
    assert out["properties"]["home"]["additionalProperties"] is False


@pytest.mark.parametrize("fit", [openai_strict_schema, anthropic_output_schema])
def test_what_cannot_be_carried_is_refused_naming_the_field(fit: Any) -> None:
    open_map = {"type": "object", "properties": {"scores": {"type": "object", "additionalProperties": {}}}}
    with pytest.raises(ValueError, match="scores is an open mapping"):
        fit(open_map)
    pair = {"type": "object", "properties": {"at": {"type": "array", "prefixItems": [{}, {}]}}}
    with pytest.raises(ValueError, match="at is a fixed-length tuple"):
        fit(pair)


def test_refs_are_inlined_and_a_recursive_one_is_refused() -> None:
    schema = {"$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
              "type": "object", "properties": {"p": {"$ref": "#/$defs/P"}, "enum": {"type": "string"}}}
    assert inline_refs(schema) == {"type": "object", "properties": {
        "p": {"type": "object", "properties": {"x": {"type": "integer"}}}, "enum": {"type": "string"}}}
    loop = {"$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}, "$ref": "#/$defs/N"}
    with pytest.raises(ValueError, match="refers to itself"):
        inline_refs(loop)


FORMAT = ResponseFormat("answer", {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
REQUEST = LLMRequest([Message.user("q")], response_format=FORMAT)


def test_each_wire_encodes_the_format_in_its_documented_field() -> None:
    openai = OpenAIWire().encode_request(REQUEST, "gpt-4o", stream=False)
    assert openai["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "answer", "strict": True,
        "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                   "additionalProperties": False}}}
    anthropic = anthropic_body(
        LLMRequest([Message.user("q")], response_format=FORMAT, vendor_options={"anthropic": {
            "output_config": {"effort": "low"}}}), "claude-sonnet-4-5", stream=False)
    assert anthropic["output_config"] == {"effort": "low", "format": {"type": "json_schema", "schema": {
        "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
        "additionalProperties": False}}}
    gemini = GeminiWire().encode_request(REQUEST, "gemini-2.5-flash", stream=False)
    assert gemini["generationConfig"] == {"responseMimeType": "application/json",
                                          "responseJsonSchema": FORMAT.schema}


def test_which_models_carry_a_response_format() -> None:
    official = OpenAIProvider("gpt-4o", api_key="k")
    assert official.supports_response_format("gpt-4o") and not official.supports_response_format("gpt-3.5-turbo")
    assert not OpenAIProvider(base_url="http://localhost:1/v1").supports_response_format("m")
    assert OpenAIProvider(base_url="http://localhost:1/v1", carries_response_format=True).supports_response_format("m")
    claude = AnthropicProvider(api_key="k")
    assert claude.supports_response_format("claude-sonnet-4-5")
    assert not claude.supports_response_format("claude-3-5-haiku")
    gemini = GeminiProvider(api_key="k")
    assert gemini.supports_response_format("gemini-2.5-flash") and not gemini.supports_response_format("gemma-3-27b")


async def test_a_model_without_it_is_refused_before_sending() -> None:
    from agentactors.errors import ProviderError

    provider = OpenAIProvider("gpt-3.5-turbo", api_key="k")
    with pytest.raises(ProviderError, match="cannot carry a JSON-schema response format") as info:
        await provider.complete(REQUEST)
    assert info.value.kind.value == "request"


pytestmark = pytest.mark.anyio
