"""Every model setting on each wire, against the vendors' documented request fields, per model.

The shapes asserted here are the vendors' documented request fields (OpenAI's Chat Completions reference,
Anthropic's extended/adaptive thinking, effort and prompt caching pages, Google's thinking and generateContent
reference); the per-model rules are the tables in ``providers/_<wire>_models.py``.  Dropped settings are
checked through the ``llm.setting_dropped`` events they leave; refused ones raise before anything is sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from agentactors import (
    CachePolicy,
    LLMRequest,
    Message,
    ModelSettings,
    ToolChoice,
    ToolSpec,
    UnsupportedSettingError,
    UnsupportedToolChoiceError,
)
from agentactors.errors import ErrorKind
from agentactors.events import EventSink, InMemoryRecorder, use_sink
from agentactors.providers.anthropic.provider import AnthropicProvider, AnthropicWire
from agentactors.providers.codec import WireCodec
from agentactors.providers.gemini.provider import GeminiProvider, GeminiWire
from agentactors.providers.openai.provider import OpenAIProvider, OpenAIWire

LOOKUP = ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {"word": {"type": "string"}}})
OPENAI = OpenAIWire(max_tokens_field="max_completion_tokens", official=True)
COMPAT = OpenAIWire()
ANTHROPIC = AnthropicWire()
GEMINI = GeminiWire()


def req(**fields: Any) -> LLMRequest:
    return LLMRequest([Message.system("Be brief."), Message.user("Hi")], **fields)


@contextmanager
def recording() -> Iterator[InMemoryRecorder]:
    recorder = InMemoryRecorder()
    with use_sink(EventSink([recorder], run_id="run-t")):
        yield recorder


def encode(codec: WireCodec, request: LLMRequest, model: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The body, and ``{setting: reason}`` of what was dropped."""
    with recording() as recorder:
        body = codec.encode_request(request, model, stream=False)
    drops = {e.setting: e.reason for e in recorder.events if e.type == "llm.setting_dropped"}
    for event in recorder.events:
        assert event.wire == codec.wire and event.model == model and event.run_id == "run-t"
    return body, drops


def refused(codec: WireCodec, request: LLMRequest, model: str, setting: str, match: str) -> None:
    with pytest.raises(UnsupportedSettingError, match=match) as caught:
        codec.encode_request(request, model, stream=False)
    err = caught.value
    assert err.kind is ErrorKind.request and not err.retryable and err.setting == setting and err.model == model


# --- OpenAI -------------------------------------------------------------------------------------


def test_openai_a_chat_model_takes_every_sampling_setting() -> None:
    body, drops = encode(OPENAI, req(temperature=0.2, top_p=0.9, stop=("END",), seed=7, max_tokens=50,
                                     tools=[LOOKUP], parallel_tool_calls=False), "gpt-4.1-mini")
    assert {k: body[k] for k in ("temperature", "top_p", "stop", "seed", "max_completion_tokens",
                                 "parallel_tool_calls")} == {
        "temperature": 0.2, "top_p": 0.9, "stop": ["END"], "seed": 7, "max_completion_tokens": 50,
        "parallel_tool_calls": False}
    assert drops == {}


def test_openai_reasoning_effort_is_validated_per_model() -> None:
    assert encode(OPENAI, req(reasoning_effort="minimal"), "gpt-5-mini")[0]["reasoning_effort"] == "minimal"
    assert encode(OPENAI, req(reasoning_effort="none"), "gpt-5.1")[0]["reasoning_effort"] == "none"
    assert encode(OPENAI, req(reasoning_effort="xhigh"), "gpt-5.2")[0]["reasoning_effort"] == "xhigh"
    assert encode(OPENAI, req(reasoning_effort="high"), "openai/o3")[0]["reasoning_effort"] == "high"
    refused(OPENAI, req(reasoning_effort="none"), "gpt-5", "reasoning_effort", "use 'minimal', 'low', 'medium' or")
    refused(OPENAI, req(reasoning_effort="low"), "gpt-5-pro", "reasoning_effort", "use 'high'")
    refused(OPENAI, req(reasoning_effort="xhigh"), "o4-mini", "reasoning_effort", "not accepted")
    body, drops = encode(OPENAI, req(reasoning_effort="high"), "gpt-4o")
    assert "reasoning_effort" not in body and drops == {"reasoning_effort": "the model does not reason"}
    body, drops = encode(OPENAI, req(reasoning_effort="high"), "o1-mini")
    assert "reasoning_effort" not in body and "takes no effort setting" in drops["reasoning_effort"]


def test_openai_reasoning_models_drop_sampling_and_refuse_stop() -> None:
    body, drops = encode(OPENAI, req(temperature=0.3, top_p=0.5, reasoning_effort="low"), "gpt-5")
    assert "temperature" not in body and "top_p" not in body and set(drops) == {"temperature", "top_p"}
    refused(OPENAI, req(stop=("END",)), "o3", "stop", "reasoning models take no sampling settings")
    # gpt-5.1 and later take them while their effort is none (their default)
    body, drops = encode(OPENAI, req(temperature=0.3, stop=("END",)), "gpt-5.1")
    assert body["temperature"] == 0.3 and body["stop"] == ["END"] and drops == {}
    body, drops = encode(OPENAI, req(temperature=0.3, reasoning_effort="high"), "gpt-5.1")
    assert "temperature" not in body and "only with reasoning_effort 'none'" in drops["temperature"]
    refused(OPENAI, req(stop=("END",), reasoning_effort="medium"), "gpt-5.2", "stop", "reasoning_effort 'none'")


def test_openai_max_completion_tokens_for_reasoning_models_even_on_a_compatible_server() -> None:
    assert encode(COMPAT, req(max_tokens=64), "llama-3.3-70b")[0]["max_tokens"] == 64
    body = encode(COMPAT, req(max_tokens=64), "openai/o4-mini")[0]
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body


def test_openai_thinking_budget() -> None:
    refused(OPENAI, req(thinking_budget=2048), "gpt-4.1", "thinking_budget", "does not think")
    body, drops = encode(OPENAI, req(thinking_budget=2048), "o3")
    assert "reasoning_effort" not in body and "takes no thinking budget" in drops["thinking_budget"]
    body, drops = encode(OPENAI, req(thinking_budget=0), "gpt-5.1")
    assert body["reasoning_effort"] == "none" and drops == {}  # no thinking, said the way the model understands


def test_openai_an_unknown_model_gets_every_setting_as_given() -> None:
    body, drops = encode(COMPAT, req(reasoning_effort="high", temperature=1.5, stop=("a", "b", "c", "d", "e")),
                         "qwen3-32b")
    assert body["reasoning_effort"] == "high" and body["temperature"] == 1.5 and len(body["stop"]) == 5
    assert drops == {}
    refused(OPENAI, req(stop=("a", "b", "c", "d", "e")), "gpt-4.1", "stop", "at most 4 stop sequences")


def test_openai_parallel_tool_calls_only_with_tools_and_cache_retention() -> None:
    assert "parallel_tool_calls" not in encode(OPENAI, req(parallel_tool_calls=True), "gpt-4.1")[0]
    body = encode(OPENAI, req(cache=CachePolicy(retention="extended")), "gpt-4.1")[0]
    assert body["prompt_cache_retention"] == "24h"
    assert "prompt_cache_retention" not in encode(OPENAI, req(cache=True), "gpt-4.1")[0]  # automatic caching


def test_openai_extra_is_the_vendor_passthrough_and_wins() -> None:
    settings = ModelSettings(seed=1, extra={"openai": {"seed": 2, "user": "u"}, "anthropic": {"top_k": 3}})
    body = encode(OPENAI, req(**settings.request_fields()), "gpt-4.1")[0]
    assert body["seed"] == 2 and body["user"] == "u" and "top_k" not in body


# --- Anthropic ----------------------------------------------------------------------------------


def test_anthropic_thinking_budget_on_a_thinking_model() -> None:
    body, _ = encode(ANTHROPIC, req(thinking_budget=2048), "claude-sonnet-4-5")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and body["max_tokens"] == 4096
    body, _ = encode(ANTHROPIC, req(thinking_budget=8000), "claude-sonnet-4-5-20250929")
    assert body["max_tokens"] == 8000 + 4096  # the default leaves room for the answer
    refused(ANTHROPIC, req(thinking_budget=500), "claude-sonnet-4-5", "thinking_budget", "at least 1024")
    refused(ANTHROPIC, req(thinking_budget=4000, max_tokens=4000), "claude-sonnet-4-5", "thinking_budget",
            r"must be below max_tokens \(4000\)")
    refused(ANTHROPIC, req(thinking_budget=2048), "claude-3-5-haiku-latest", "thinking_budget", "does not think")
    refused(ANTHROPIC, req(thinking_budget=2048), "claude-opus-4-7", "thinking_budget", "only adaptive thinking")
    assert "thinking" not in encode(ANTHROPIC, req(thinking_budget=0), "claude-sonnet-4-5")[0]


def test_anthropic_thinking_conflicts_are_refused_before_sending() -> None:
    refused(ANTHROPIC, req(thinking_budget=2048, temperature=0.5), "claude-sonnet-4-5", "temperature",
            "not compatible with a temperature other than 1")
    assert encode(ANTHROPIC, req(thinking_budget=2048, temperature=1), "claude-sonnet-4-5")[0]["temperature"] == 1
    refused(ANTHROPIC, req(thinking_budget=2048, top_p=0.9), "claude-sonnet-4-5", "top_p", "between 0.95 and 1")
    assert encode(ANTHROPIC, req(thinking_budget=2048, top_p=0.97), "claude-sonnet-4-5")[0]["top_p"] == 0.97
    refused(ANTHROPIC, req(thinking_budget=2048, vendor_options={"anthropic": {"top_k": 5}}), "claude-sonnet-4-5",
            "top_k", "not compatible with top_k")
    # the vendor_options way of turning thinking on meets the same table
    refused(ANTHROPIC, req(temperature=0.2, vendor_options={"anthropic": {"thinking": {"type": "enabled",
                                                                                         "budget_tokens": 2000}}}),
            "claude-sonnet-4-5", "temperature", "temperature other than 1")
    with pytest.raises(UnsupportedToolChoiceError, match="extended thinking"):
        ANTHROPIC.encode_request(req(tools=[LOOKUP], tool_choice=ToolChoice.required(), reasoning_effort="high"),
                                 "claude-opus-4-6", stream=False)
    refused(ANTHROPIC, req(temperature=1.5), "claude-sonnet-4-5", "temperature", "takes 0 to 1")


def test_anthropic_reasoning_effort_per_model() -> None:
    body, _ = encode(ANTHROPIC, req(reasoning_effort="high"), "claude-opus-4-6")
    assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": "high"}
    refused(ANTHROPIC, req(reasoning_effort="xhigh"), "claude-sonnet-4-6", "reasoning_effort", "'max'")
    body, _ = encode(ANTHROPIC, req(reasoning_effort="xhigh"), "claude-opus-4-7")
    assert body["output_config"] == {"effort": "xhigh"}
    # older thinking models: a budget mapped from the effort, no effort parameter
    body, _ = encode(ANTHROPIC, req(reasoning_effort="high"), "claude-sonnet-4-5")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384} and "output_config" not in body
    body, _ = encode(ANTHROPIC, req(reasoning_effort="high", max_tokens=8000), "claude-3-7-sonnet-latest")
    assert body["thinking"]["budget_tokens"] == 7999
    body, drops = encode(ANTHROPIC, req(reasoning_effort="low", max_tokens=1000), "claude-sonnet-4-5")
    assert "thinking" not in body and "no room for the 1024-token minimum" in drops["reasoning_effort"]
    # Opus 4.5: the effort parameter and a budget
    body, _ = encode(ANTHROPIC, req(reasoning_effort="medium"), "claude-opus-4-5-20251101")
    assert body["output_config"] == {"effort": "medium"} and body["thinking"]["budget_tokens"] == 8192
    body, drops = encode(ANTHROPIC, req(reasoning_effort="high"), "claude-3-5-sonnet-latest")
    assert "thinking" not in body and drops == {"reasoning_effort": "the model does not reason"}
    body, drops = encode(ANTHROPIC, req(reasoning_effort="none"), "claude-opus-4-6")
    assert "thinking" not in body and "output_config" not in body and drops == {}
    # an unknown model: adaptive thinking with the effort as given; a budget as a manual budget
    assert encode(ANTHROPIC, req(reasoning_effort="max"), "claude-next")[0]["output_config"] == {"effort": "max"}
    assert encode(ANTHROPIC, req(thinking_budget=3000), "claude-next")[0]["thinking"]["type"] == "enabled"


def test_anthropic_opus_4_7_takes_no_sampling_settings() -> None:
    body, drops = encode(ANTHROPIC, req(temperature=0.2, top_p=0.9), "claude-opus-4-7")
    assert "temperature" not in body and "top_p" not in body and set(drops) == {"temperature", "top_p"}


def test_anthropic_stop_seed_and_parallel_tool_calls() -> None:
    body, drops = encode(ANTHROPIC, req(stop=("END",), seed=3, top_p=0.8, tools=[LOOKUP], parallel_tool_calls=False),
                         "claude-haiku-4-5")
    assert body["stop_sequences"] == ["END"] and body["top_p"] == 0.8 and "seed" not in body
    assert drops == {"seed": "the Messages API has no seed"}
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    body = encode(ANTHROPIC, req(tools=[LOOKUP], parallel_tool_calls=True), "claude-haiku-4-5")[0]
    assert body["tool_choice"]["disable_parallel_tool_use"] is False
    body = encode(ANTHROPIC, req(tools=[LOOKUP], parallel_tool_calls=True,
                                 vendor_options={"anthropic": {"disable_parallel_tool_use": True}}), "c")[0]
    assert body["tool_choice"]["disable_parallel_tool_use"] is True  # the vendor option wins
    body = encode(ANTHROPIC, req(tools=[LOOKUP], tool_choice=ToolChoice.none(), parallel_tool_calls=False), "c")[0]
    assert body["tool_choice"] == {"type": "none"}  # the API rejects disable_parallel_tool_use with none


def test_anthropic_cache_breakpoints() -> None:
    conversation = [Message.system("You are terse."), Message.user("Hi"), Message.assistant("Hello"),
                    Message.user("Again")]
    body = ANTHROPIC.encode_request(LLMRequest(conversation, tools=[LOOKUP], cache=True), "claude-sonnet-4-5",
                                    stream=False)
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["messages"][0]["content"][-1]
    extended = ANTHROPIC.encode_request(
        LLMRequest(conversation, tools=[LOOKUP], cache=CachePolicy(retention="extended")), "claude-sonnet-4-5",
        stream=False)
    assert extended["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert extended["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert extended["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}  # the moving tail
    only_tools = ANTHROPIC.encode_request(
        LLMRequest(conversation, tools=[LOOKUP], cache=CachePolicy(system=False, conversation=False)),
        "claude-sonnet-4-5", stream=False)
    assert only_tools["system"] == "You are terse." and "cache_control" in only_tools["tools"][-1]
    off = ANTHROPIC.encode_request(LLMRequest(conversation, tools=[LOOKUP], cache=False), "c", stream=False)
    assert "cache_control" not in str(off)


def test_anthropic_output_config_merges_with_the_vendor_options() -> None:
    body = encode(ANTHROPIC, req(reasoning_effort="low", vendor_options={"anthropic": {"output_config": {
        "format": {"type": "json_schema"}}}}), "claude-opus-4-6")[0]
    assert body["output_config"] == {"effort": "low", "format": {"type": "json_schema"}}


# --- Gemini -------------------------------------------------------------------------------------


def test_gemini_generation_config_fields() -> None:
    body, drops = encode(GEMINI, req(temperature=0.4, top_p=0.8, stop=("END", "STOP"), seed=11, max_tokens=99,
                                     tools=[LOOKUP], parallel_tool_calls=True, cache=CachePolicy(retention="extended")),
                         "gemini-2.5-flash")
    assert body["generationConfig"] == {"maxOutputTokens": 99, "temperature": 0.4, "topP": 0.8,
                                        "stopSequences": ["END", "STOP"], "seed": 11}
    assert set(drops) == {"parallel_tool_calls", "cache"}
    refused(GEMINI, req(stop=tuple("abcdef")), "gemini-2.5-flash", "stop", "at most 5 stop sequences")


def test_gemini_thinking_budget_per_model() -> None:
    assert encode(GEMINI, req(thinking_budget=0), "gemini-2.5-flash")[0]["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 0}
    assert encode(GEMINI, req(thinking_budget=4096), "gemini-2.5-pro")[0]["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 4096}
    refused(GEMINI, req(thinking_budget=0), "gemini-2.5-pro", "thinking_budget", "cannot be turned off")
    refused(GEMINI, req(thinking_budget=100), "gemini-2.5-flash-lite", "thinking_budget", "512 to 24576")
    refused(GEMINI, req(thinking_budget=40000), "gemini-2.5-pro", "thinking_budget", "128 to 32768")
    refused(GEMINI, req(thinking_budget=1024), "gemini-2.0-flash", "thinking_budget", "does not think")
    # Gemini 3 takes a budget for backward compatibility
    assert encode(GEMINI, req(thinking_budget=2048), "gemini-3-pro-preview")[0]["generationConfig"][
        "thinkingConfig"] == {"thinkingBudget": 2048}


def test_gemini_reasoning_effort_per_model() -> None:
    assert encode(GEMINI, req(reasoning_effort="low"), "gemini-3-pro-preview")[0]["generationConfig"][
        "thinkingConfig"] == {"thinkingLevel": "low"}
    refused(GEMINI, req(reasoning_effort="medium"), "gemini-3-pro-preview", "reasoning_effort", "'low' or 'high'")
    assert encode(GEMINI, req(reasoning_effort="minimal"), "gemini-3-flash-preview")[0]["generationConfig"][
        "thinkingConfig"] == {"thinkingLevel": "minimal"}
    # 2.5: the effort as a budget, clamped into the model's range
    config = encode(GEMINI, req(reasoning_effort="medium"), "gemini-2.5-flash")[0]["generationConfig"]
    assert config["thinkingConfig"] == {"thinkingBudget": 8192}
    assert encode(GEMINI, req(reasoning_effort="max"), "gemini-2.5-flash")[0]["generationConfig"][
        "thinkingConfig"] == {"thinkingBudget": 24576}
    assert encode(GEMINI, req(reasoning_effort="none"), "gemini-2.5-flash")[0]["generationConfig"][
        "thinkingConfig"] == {"thinkingBudget": 0}
    refused(GEMINI, req(reasoning_effort="none"), "gemini-2.5-pro", "reasoning_effort", "cannot be turned off")
    body, drops = encode(GEMINI, req(reasoning_effort="high"), "gemini-2.0-flash")
    assert "generationConfig" not in body and drops == {"reasoning_effort": "the model does not reason"}
    # both set: the budget decides; Gemini refuses a level and a budget together
    body, drops = encode(GEMINI, req(reasoning_effort="high", thinking_budget=1024), "gemini-3-flash-preview")
    assert body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 1024} and "reasoning_effort" in drops
    assert encode(GEMINI, req(reasoning_effort="high"), "gemini-4-ultra")[0]["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "high"}


def test_gemini_vendor_options_merge_into_the_thinking_config() -> None:
    body = encode(GEMINI, req(reasoning_effort="low", vendor_options={"gemini": {"thinkingConfig": {
        "includeThoughts": True}}}), "gemini-3-pro-preview")[0]
    assert body["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "low", "includeThoughts": True}


# --- providers: defaults, timeouts, and nothing sent when refused -------------------------------


def _client(sent: list[httpx.Request]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500, json={"error": {"message": "unexpected"}})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("make", "model", "bad"),
    [
        (OpenAIProvider, "gpt-4.1", {"thinking_budget": 1024}),
        (AnthropicProvider, "claude-3-5-haiku-latest", {"thinking_budget": 2048}),
        (GeminiProvider, "gemini-2.0-flash", {"thinking_budget": 2048}),
        (AnthropicProvider, "claude-sonnet-4-5", {"thinking_budget": 2048, "temperature": 0.3}),
    ],
)
async def test_a_setting_a_model_cannot_carry_is_refused_before_anything_is_sent(
    make: Any, model: str, bad: dict[str, Any]
) -> None:
    sent: list[httpx.Request] = []
    async with _client(sent) as client:
        p = make(model, api_key="sk-test-settings-0123456789", http_client=client)
        with pytest.raises(UnsupportedSettingError):
            await p.complete(req(**bad))
        with pytest.raises(UnsupportedSettingError):
            async with p.stream(req(**bad)) as stream:
                async for _ in stream:
                    pass
    assert sent == []


@pytest.mark.anyio
async def test_provider_defaults_fill_what_the_request_leaves_unset() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        import json

        bodies.append(json.loads(request.content))
        timeouts.append(request.extensions["timeout"])
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]})

    timeouts: list[dict[str, float]] = []
    defaults = ModelSettings(temperature=0.2, seed=5, timeout=3.0, extra={"openai": {"user": "svc"}})
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        p = OpenAIProvider("gpt-4.1", api_key="sk-test-settings-0123456789", http_client=client, settings=defaults)
        assert p.settings is defaults
        await p.complete(req(temperature=0.9))
        await p.complete(req(timeout=7.5))
    assert bodies[0]["temperature"] == 0.9 and bodies[0]["seed"] == 5 and bodies[0]["user"] == "svc"
    assert timeouts[0]["read"] == 3.0  # the default settings' timeout is the provider's
    assert timeouts[1]["read"] == 7.5  # a request's own timeout wins
    with pytest.raises(TypeError, match="settings must be a ModelSettings"):
        OpenAIProvider("m", api_key="k", settings={"temperature": 1})  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_anthropic_default_settings_that_turn_thinking_on_meet_a_forced_choice() -> None:
    sent: list[httpx.Request] = []
    async with _client(sent) as client:
        p = AnthropicProvider("claude-opus-4-6", api_key="sk-ant-test-0123456789", http_client=client,
                              settings=ModelSettings(reasoning_effort="high"))
        with pytest.raises(UnsupportedToolChoiceError):
            await p.complete(req(tools=[LOOKUP], tool_choice=ToolChoice.tool("lookup")))
    assert sent == []
