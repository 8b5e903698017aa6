"""The names and signatures docs/architecture.md promises are importable from ``agentactors``.

Users and acceptance checks rely on these exact names; this test fails when one is
renamed or reshaped without a deprecation path.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import agentactors

CONTRACT: dict[str, list[str]] = {
    "Message": [],
    "ToolCall": ["id", "name", "arguments", "raw_arguments", "arguments_error"],
    "ToolSpec": ["name", "description", "parameters"],
    "ToolChoice": [],
    "LLMRequest": ["messages", "model", "tools", "tool_choice", "max_tokens", "temperature", "stop", "vendor_options"],
    "LLMResponse": ["content", "tool_calls", "stop_reason", "usage", "model", "provider", "raw_stop_reason",
                    "reasoning", "provider_data"],
    "Usage": ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"],
    "StopReason": [],
    "TextDelta": ["text"],
    "ReasoningDelta": ["text"],
    "ToolCallStart": ["index", "id", "name"],
    "ToolCallDelta": ["index", "arguments_fragment"],
    "ToolCallEnd": ["index", "call"],
    "StreamEnd": ["response"],
    "LLMProvider": [],
    "forced_tool_choice_for": ["provider", "model"],
    "OpenAIProvider": ["model", "api_key", "base_url", "carries_forced_tool_choice", "http_client"],
    "AnthropicProvider": ["model", "api_key", "base_url", "http_client"],
    "GeminiProvider": ["model", "api_key", "base_url", "http_client"],
    "ScriptedProvider": ["script", "name", "model", "latency", "carries_tools", "carries_forced_tool_choice",
                         "rejects_forced_tool_choice"],
    "AgentActorsError": [],
    "ProviderError": ["message", "provider", "kind", "model", "status", "retry_after", "retryable", "request_id"],
    "ErrorKind": [],
    "UnsupportedToolChoiceError": ["provider", "model"],
    "CircuitOpenError": ["provider", "model", "retry_after", "last_error"],
    "AllProvidersFailedError": ["message", "errors"],
    "StreamInterruptedError": [],
    "ProviderTimeout": [],
    "AskTimeout": [],
    "ActorStopped": [],
    "ToolStatusError": [],
    "with_retry": ["max_attempts", "base_delay", "multiplier", "max_delay", "jitter", "max_retry_after", "deadline",
                   "retry_on", "clock", "sleep", "rng"],
    "with_fallback": ["primary", "fallbacks", "fallback_on", "skip_incapable"],
    "with_circuit_breaker": ["window", "min_calls", "failure_rate", "consecutive_failures", "open_duration",
                             "max_open_duration", "half_open_max_calls", "half_open_successes",
                             "max_half_open_wait", "count_mid_stream", "key", "clock"],
    "with_timeout": ["attempt", "first_event", "idle"],
    "tool": ["name", "description", "timeout", "result_ceiling", "hint", "sequential", "read_only"],
    "ResultCeiling": ["max_chars", "narrow_by"],
    "ToolResult": ["call_id", "name", "status", "content", "size_chars", "duration"],
    "ToolStatus": [],
    "ToolContext": [],
    "Runtime": ["recorders", "drain_timeout"],
    "ProviderActor": ["provider", "max_concurrency", "requests_per_minute", "tokens_per_minute"],
    "ToolExecutorActor": ["tools", "max_concurrency_per_step", "default_timeout"],
    "LoopController": [],
    "Agent": ["provider", "tools", "system", "model", "tool_choice", "max_steps", "max_empty_steps",
              "max_tool_result_chars", "context_budget_chars", "on_tool_status", "tool_policy", "nudges", "followups",
              "recorders"],
    "RunResult": ["content", "messages", "tool_calls", "steps", "bounded", "cancelled", "generation_failed", "error",
                  "followups", "usage", "served_by"],
    "InMemoryRecorder": [],
    "JsonlRecorder": ["path"],
}


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_contract_name_is_exported_with_its_parameters(name: str) -> None:
    assert name in agentactors.__all__, f"{name} missing from agentactors.__all__"
    obj: Any = getattr(agentactors, name)
    params = CONTRACT[name]
    if not params:
        return
    sig = inspect.signature(obj)
    missing = [p for p in params if p not in sig.parameters]
    assert not missing, f"{name} lacks parameters {missing}: {sig}"


def test_every_library_error_derives_from_the_base() -> None:
    for name in ("ProviderError", "AskTimeout", "ActorStopped", "ToolStatusError", "UnsupportedToolChoiceError",
                 "CircuitOpenError", "AllProvidersFailedError", "StreamInterruptedError", "ProviderTimeout"):
        assert issubclass(getattr(agentactors, name), agentactors.AgentActorsError)
    for name in ("UnsupportedToolChoiceError", "CircuitOpenError", "AllProvidersFailedError",
                 "StreamInterruptedError", "ProviderTimeout"):
        assert issubclass(getattr(agentactors, name), agentactors.ProviderError)
    assert not issubclass(agentactors.AskTimeout, agentactors.ProviderError)


def test_enums_and_methods_promised() -> None:
    assert {m.value for m in agentactors.StopReason} == {
        "end_turn", "tool_use", "max_tokens", "stop_sequence", "content_filter", "pause_turn", "other"}
    assert {k.value for k in agentactors.ErrorKind} == {
        "request", "account", "context", "content_policy", "transient", "circuit_open"}
    assert {s.value for s in agentactors.ToolStatus} == {"ok", "error", "invalid", "denied", "timeout", "cancelled"}
    for method in ("auto", "none", "required", "tool"):
        assert callable(getattr(agentactors.ToolChoice, method))
    for method in ("system", "user", "assistant", "tool"):
        assert callable(getattr(agentactors.Message, method))
    for method in ("spawn", "stats", "run_many", "as_completed", "stop"):
        assert callable(getattr(agentactors.Runtime, method))
    for method in ("tell", "try_tell", "ask"):
        assert callable(getattr(agentactors.ActorRef, method))
    for method in ("run", "stream"):
        assert callable(getattr(agentactors.Agent, method))
    from agentactors.testing import FakeVendor

    assert FakeVendor is not None
