"""Model settings a vendor would answer with a 400, refused before sending; vendor options that must not clobber.

Each case here was a request the codecs used to send as it was, for the vendor to refuse (or, for a vendor
option naming a field the codec owns, to answer something else than what was asked):

* ``vendor_options`` naming the model, the conversation or the streaming flag replaced them in the body;
* Claude Opus 4.1 and later 4.x models, Sonnet 4.5 / 4.6 and Haiku 4.5 refuse ``temperature`` and ``top_p``
  together ("`temperature` and `top_p` cannot both be specified for this model. Please use only one.");
* a seed past a signed 64-bit integer (no vendor takes one), and past 32 bits on Gemini (``int32 seed``);
* a temperature above 2 for a model the OpenAI or Gemini tables know (both take 0 to 2);
* ``max_output_tokens`` below 16 on the Responses API ("integer below minimum value. Expected a value >= 16");
* a Bedrock ``inferenceConfig`` vendor option erased the mapped ``temperature`` / ``stop`` / ``maxTokens``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentactors import LLMRequest, Message, ModelSettings, ToolSpec, UnsupportedSettingError
from agentactors.errors import ErrorKind
from agentactors.providers.anthropic.provider import AnthropicProvider, AnthropicWire
from agentactors.providers.azure import AzureChatWire, AzureResponsesWire
from agentactors.providers.bedrock import encode_request as bedrock_encode
from agentactors.providers.codec import WireCodec
from agentactors.providers.gemini.provider import GeminiProvider, GeminiWire
from agentactors.providers.openai.provider import OpenAIProvider, OpenAIWire
from agentactors.providers.responses.provider import OpenAIResponsesProvider, ResponsesWire

LOOKUP = ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {"word": {"type": "string"}}})
OPENAI = OpenAIWire(max_tokens_field="max_completion_tokens", official=True)
COMPAT = OpenAIWire()
RESPONSES = ResponsesWire(official=True)
RESPONSES_COMPAT = ResponsesWire()
ANTHROPIC = AnthropicWire()
GEMINI = GeminiWire()
BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BEDROCK_NOVA = "us.amazon.nova-pro-v1:0"


def req(**fields: Any) -> LLMRequest:
    return LLMRequest([Message.system("Be brief."), Message.user("Hi")], **fields)


def refused(
    codec: WireCodec, request: LLMRequest, model: str, setting: str, match: str, *, judged: str | None = None
) -> UnsupportedSettingError:
    """``judged``: the model the error names when it is not ``model`` (Azure judges by the underlying model)."""
    with pytest.raises(UnsupportedSettingError, match=match) as caught:
        codec.encode_request(request, model, stream=False)
    err = caught.value
    assert err.kind is ErrorKind.request and not err.retryable and err.setting == setting
    assert err.model == (judged or model)
    return err


# --- vendor options may not replace the model, the conversation or the streaming flag ---------------------------

OWNED = [
    (OPENAI, "openai", "gpt-4.1", "model"),
    (OPENAI, "openai", "gpt-4.1", "messages"),
    (OPENAI, "openai", "gpt-4.1", "stream"),
    (COMPAT, "openai", "llama-3.3-70b", "model"),
    (RESPONSES, "openai-responses", "gpt-4.1", "model"),
    (RESPONSES, "openai-responses", "gpt-4.1", "input"),
    (RESPONSES, "openai-responses", "gpt-4.1", "stream"),
    (ANTHROPIC, "anthropic", "claude-sonnet-4-5", "model"),
    (ANTHROPIC, "anthropic", "claude-sonnet-4-5", "messages"),
    (ANTHROPIC, "anthropic", "claude-sonnet-4-5", "stream"),
    (GEMINI, "gemini", "gemini-2.5-flash", "contents"),
    (AzureChatWire("prod", api_version="2024-10-21"), "openai", "prod", "messages"),
    (AzureResponsesWire("prod"), "openai-responses", "prod", "model"),
]


@pytest.mark.parametrize(("codec", "wire", "model", "key"), OWNED)
def test_a_vendor_option_naming_a_field_the_codec_owns_is_refused(
    codec: WireCodec, wire: str, model: str, key: str
) -> None:
    secret = "sk-proj-do-not-print-me-0123456789"
    request = req(vendor_options={wire: {key: secret}})
    err = refused(codec, request, model, "vendor_options", repr(key))
    assert secret not in str(err)  # a value in vendor_options is never repeated in the error
    # None (which removes a field the codec would send) is no way around it either
    refused(codec, req(vendor_options={wire: {key: None}}), model, "vendor_options", repr(key))


def test_bedrock_vendor_options_may_not_replace_the_conversation() -> None:
    with pytest.raises(UnsupportedSettingError, match="'messages'") as caught:
        bedrock_encode(req(vendor_options={"bedrock": {"messages": []}}), BEDROCK_NOVA, stream=False)
    assert caught.value.setting == "vendor_options"


def test_other_vendor_options_still_reach_the_body() -> None:
    body = OPENAI.encode_request(req(vendor_options={"openai": {"user": "u", "stream_options": None}}), "gpt-4.1",
                                 stream=True)
    assert body["user"] == "u" and "stream_options" not in body
    assert body["stream"] is True and body["model"] == "gpt-4.1"
    # another wire's options are not this wire's business
    body = ANTHROPIC.encode_request(req(vendor_options={"openai": {"model": "x"}}), "claude-sonnet-4-5", stream=False)
    assert body["model"] == "claude-sonnet-4-5"


# --- Claude: temperature or top_p, not both, on the models that say so ------------------------------------------


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-haiku-4-5-20251001", "claude-opus-4-1",
                                   "claude-opus-4-5-20251101", "claude-opus-4-6", "claude-sonnet-4-6"])
def test_claude_models_that_take_one_sampler_refuse_temperature_with_top_p(model: str) -> None:
    refused(ANTHROPIC, req(temperature=0.5, top_p=0.9), model, "top_p", "temperature or top_p, not both")
    assert ANTHROPIC.encode_request(req(temperature=0.5), model, stream=False)["temperature"] == 0.5
    assert ANTHROPIC.encode_request(req(top_p=0.9), model, stream=False)["top_p"] == 0.9


@pytest.mark.parametrize("model", ["claude-sonnet-4-20250514", "claude-opus-4-20250514", "claude-3-7-sonnet-latest",
                                   "claude-3-5-haiku-latest", "claude-next"])
def test_older_and_unknown_claude_models_take_both_samplers(model: str) -> None:
    body = ANTHROPIC.encode_request(req(temperature=0.5, top_p=0.9), model, stream=False)
    assert body["temperature"] == 0.5 and body["top_p"] == 0.9


def test_bedrock_claude_refuses_both_samplers_too() -> None:
    with pytest.raises(UnsupportedSettingError, match="not both"):
        bedrock_encode(req(temperature=0.5, top_p=0.9), BEDROCK_CLAUDE, stream=False)
    config = bedrock_encode(req(temperature=0.5, top_p=0.9), BEDROCK_NOVA, stream=False)["inferenceConfig"]
    assert config == {"temperature": 0.5, "topP": 0.9}


# --- seeds ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [2**63, -(2**63) - 1, 2**80])
def test_a_seed_no_vendor_takes_fails_where_it_is_built(seed: int) -> None:
    with pytest.raises(ValueError, match="64-bit"):
        ModelSettings(seed=seed)
    with pytest.raises(ValueError, match="64-bit"):
        req(seed=seed)


def test_int64_seeds_are_fine() -> None:
    assert ModelSettings(seed=2**63 - 1).seed == 2**63 - 1 and req(seed=-(2**63)).seed == -(2**63)
    assert OPENAI.encode_request(req(seed=2**40), "gpt-4.1", stream=False)["seed"] == 2**40


def test_gemini_takes_32_bit_integers() -> None:
    refused(GEMINI, req(seed=2**31), "gemini-2.5-flash", "seed", "32-bit")
    refused(GEMINI, req(seed=-(2**31) - 1), "gemini-4-ultra", "seed", "32-bit")
    refused(GEMINI, req(max_tokens=2**31), "gemini-2.5-flash", "max_tokens", "32-bit")
    refused(GEMINI, req(thinking_budget=2**31), "gemini-4-ultra", "thinking_budget", "32-bit")
    config = GEMINI.encode_request(req(seed=2**31 - 1, max_tokens=2**31 - 1), "gemini-2.5-flash",
                                   stream=False)["generationConfig"]
    assert config["seed"] == 2**31 - 1 and config["maxOutputTokens"] == 2**31 - 1


# --- temperatures above the known models' range -----------------------------------------------------------------


def test_a_temperature_above_2_is_refused_for_a_model_the_tables_know() -> None:
    refused(OPENAI, req(temperature=2.5), "gpt-4.1", "temperature", "0 to 2")
    refused(RESPONSES, req(temperature=2.5), "gpt-4.1", "temperature", "0 to 2")
    refused(GEMINI, req(temperature=2.5), "gemini-2.5-flash", "temperature", "0 to 2")
    # a compatible server's model is its own business
    assert COMPAT.encode_request(req(temperature=2.5), "qwen3-32b", stream=False)["temperature"] == 2.5
    assert GEMINI.encode_request(req(temperature=2.5), "gemini-4-ultra", stream=False)["generationConfig"][
        "temperature"] == 2.5
    # a reasoning model drops its temperature anyway: nothing to refuse
    assert "temperature" not in OPENAI.encode_request(req(temperature=2.5), "o3", stream=False)


# --- Responses: max_output_tokens >= 16 -------------------------------------------------------------------------


def test_responses_refuses_max_output_tokens_below_16() -> None:
    refused(RESPONSES, req(max_tokens=10), "gpt-4.1", "max_tokens", "at least 16")
    refused(RESPONSES, req(max_tokens=15), "some-new-model", "max_tokens", "at least 16")  # OpenAI's own endpoint
    refused(AzureResponsesWire("prod", model="gpt-4.1"), req(max_tokens=1), "prod", "max_tokens", "at least 16",
            judged="gpt-4.1")
    assert RESPONSES.encode_request(req(max_tokens=16), "gpt-4.1", stream=False)["max_output_tokens"] == 16
    assert RESPONSES_COMPAT.encode_request(req(max_tokens=1), "local-model", stream=False)["max_output_tokens"] == 1


# --- Bedrock: a vendor option's dict merges into the one the codec built ----------------------------------------


def test_bedrock_inference_config_option_keeps_the_mapped_settings() -> None:
    out = bedrock_encode(req(temperature=0.3, stop=("END",), max_tokens=100, tools=[LOOKUP],
                             vendor_options={"bedrock": {"inferenceConfig": {"maxTokens": 500},
                                                         "toolConfig": {"toolChoice": {"auto": {}}}}}),
                         BEDROCK_NOVA, stream=False)
    assert out["inferenceConfig"] == {"maxTokens": 500, "temperature": 0.3, "stopSequences": ["END"]}
    assert out["toolConfig"]["toolChoice"] == {"auto": {}} and out["toolConfig"]["tools"][0]["toolSpec"]["name"] == \
        "lookup"


# --- providers: refused before anything is sent -----------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("make", "model", "fields"),
    [
        (OpenAIProvider, "gpt-4.1", {"vendor_options": {"openai": {"stream": False}}}),
        (OpenAIResponsesProvider, "gpt-4.1", {"max_tokens": 8}),
        (AnthropicProvider, "claude-sonnet-4-5", {"temperature": 0.2, "top_p": 0.5}),
        (GeminiProvider, "gemini-2.5-flash", {"seed": 2**40}),
    ],
)
async def test_refused_before_anything_is_sent(make: Any, model: str, fields: dict[str, Any]) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500, json={"error": {"message": "unexpected"}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        p = make(model, api_key="sk-test-settings-0123456789", http_client=client)
        with pytest.raises(UnsupportedSettingError):
            await p.complete(req(**fields))
        with pytest.raises(UnsupportedSettingError):
            async with p.stream(req(**fields)) as stream:
                async for _ in stream:
                    pass
    assert sent == []


@pytest.mark.anyio
async def test_provider_default_vendor_options_meet_the_same_rule() -> None:
    """A provider's ``settings=`` extra is merged into the request before encoding: the same refusal."""
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        p = OpenAIProvider("gpt-4.1", api_key="sk-test-settings-0123456789", http_client=client,
                           settings=ModelSettings(extra={"openai": {"model": "gpt-4o"}}))
        with pytest.raises(UnsupportedSettingError, match="'model'"):
            await p.complete(req())
    assert bodies == []


# --- Gemini: a thinking level and a thinking budget never go out together ---------------------------------------


@pytest.mark.parametrize(
    ("fields", "config"),
    [
        ({"thinking_budget": 1024}, {"thinkingConfig": {"thinkingLevel": "low"}}),
        ({"reasoning_effort": "low"}, {"thinkingConfig": {"thinkingBudget": 2048}}),
        ({"reasoning_effort": "low"}, {"thinking_config": {"thinking_budget": 2048}}),
        ({"thinking_budget": 1024}, {"generationConfig": {"thinkingConfig": {"thinking_level": "high"}}}),
    ],
)
def test_gemini_refuses_a_level_and_a_budget_from_settings_and_vendor_options(
    fields: dict[str, Any], config: dict[str, Any]
) -> None:
    """Gemini answers a 400 to a thinkingLevel beside a thinkingBudget; one from the settings and one from the
    vendor options used to go out together."""
    refused(GEMINI, req(vendor_options={"gemini": config}, **fields), "gemini-3-flash-preview", "vendor_options",
            "thinkingLevel or a thinkingBudget, not both")


def test_gemini_vendor_thinking_options_that_agree_with_the_settings_still_go_out() -> None:
    body = GEMINI.encode_request(req(thinking_budget=1024, vendor_options={"gemini": {"thinkingConfig": {
        "thinkingBudget": 2048, "includeThoughts": True}}}), "gemini-3-flash-preview", stream=False)
    assert body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 2048, "includeThoughts": True}


# --- Bedrock: Converse's temperature is 0 to 1, for every model -------------------------------------------------


@pytest.mark.parametrize("model", [BEDROCK_NOVA, "openai.gpt-oss-120b-1:0", "meta.llama3-1-70b-instruct-v1:0",
                                   "some.future-model-v1:0"])
def test_bedrock_refuses_a_temperature_above_1(model: str) -> None:
    """``inferenceConfig.temperature`` "must have value less than or equal to 1" (a ValidationException), whatever
    the model: a ``ModelSettings(temperature=1.5)`` meant for OpenAI or Gemini used to go out and come back a 400."""
    with pytest.raises(UnsupportedSettingError, match="0 to 1") as caught:
        bedrock_encode(req(temperature=1.5), model, stream=False)
    assert caught.value.setting == "temperature" and caught.value.kind is ErrorKind.request
    assert bedrock_encode(req(temperature=1), model, stream=False)["inferenceConfig"] == {"temperature": 1}
