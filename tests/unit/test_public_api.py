"""The names and signatures docs/architecture.md promises are importable from ``agentactors``.

Users and acceptance checks rely on these exact names; this test fails when one is
renamed or reshaped without a deprecation path.
"""

from __future__ import annotations

import inspect
from typing import Any

import attrs
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
    # model settings and content parts (the second wave's block)
    "ModelSettings": ["temperature", "top_p", "max_tokens", "stop", "seed", "parallel_tool_calls", "reasoning_effort",
                      "thinking_budget", "cache", "timeout", "extra"],
    "CachePolicy": ["system", "tools", "conversation", "retention"],
    "Text": ["text"],
    "Image": ["data", "url", "media_type"],
    "Document": ["data", "url", "media_type", "title"],
    "Audio": ["data", "media_type"],
    "UnsupportedContentError": ["provider", "model", "part"],
    "UnsupportedSettingError": ["provider", "model", "setting"],
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
    "tool": ["name", "description", "timeout", "result_ceiling", "hint", "sequential", "read_only",
             "requires_approval"],
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
              "recorders", "settings", "output_type", "output_retries", "output_validator", "toolsets", "handoffs"],
    "ToolOutput": ["output_type", "name", "description"],
    "NativeOutput": ["output_type", "name", "strict"],
    "PromptedOutput": ["output_type", "template"],
    "ModelRetry": ["message"],
    "OutputValidationError": [],
    "RunResult": ["content", "messages", "tool_calls", "steps", "bounded", "cancelled", "generation_failed", "error",
                  "followups", "usage", "served_by"],
    "InMemoryRecorder": [],
    "JsonlRecorder": ["path"],
    "Actor": [],
    "ActorRef": [],
    "Complete": ["request"],
    "Stream": ["request"],
    "ExecuteTools": ["calls", "context"],
    # second wave, under load
    "Overloaded": [],
    "RunDeadlineExceeded": [],
    "with_pool": ["members", "strategy", "weights"],
    "resilient_chain": ["members", "attempt_timeout", "first_event_timeout"],
    # second wave, agents together
    "handoff": ["agent", "name", "description", "input_filter"],
    "NeedsApproval": ["reason"],
    "SessionConflictError": [],
    "SessionStore": [],
    "MemoryStore": [],
    "SqliteStore": ["path"],
    "AgentSession": [],
}

# Methods the API block names, with the parameters it gives them.
METHOD_CONTRACT: dict[str, list[str]] = {
    "Message.system": ["text"],
    "Message.user": ["text"],
    "Message.assistant": ["text", "tool_calls"],
    "Message.tool": ["call_id", "content", "name"],
    "ToolChoice.auto": [],
    "ToolChoice.none": [],
    "ToolChoice.required": [],
    "ToolChoice.tool": ["name"],
    "Runtime.spawn": ["actor_or_factory", "name", "mailbox_size", "concurrency", "on_failure", "max_restarts",
                      "restart_window"],
    "Runtime.stats": [],
    "Runtime.run_many": ["agent", "inputs", "concurrency", "progress"],
    "Runtime.as_completed": ["agent", "inputs", "concurrency"],
    "ActorRef.tell": [],
    "ActorRef.try_tell": [],
    "ActorRef.ask": ["timeout"],
    "Agent.run": ["on_token", "runtime", "settings", "deadline", "priority"],
    "Agent.stream": ["runtime", "settings"],
    "Agent.bind": ["runtime"],
    "AgentRun.text_stream": ["min_interval"],
    "AgentRun.partial_output": [],
    "Explanation.from_jsonl": ["path", "run_id"],
    "ProviderActor.__init__": ["scheduling", "max_waiting", "max_wait"],
    "Agent.as_tool": ["name", "description", "max_depth"],
    "Agent.resume": ["paused", "decisions"],
    "Runtime.session": ["agent", "key", "store", "idle_timeout"],
    "AgentSession.send": ["prompt"],
    "AgentSession.resolve": ["decisions"],
}

# Default values the API block spells out: changing one changes what existing callers get.
DEFAULTS: dict[str, dict[str, object]] = {
    "ToolCall": {"raw_arguments": None, "arguments_error": None},
    "LLMRequest": {"model": None, "tools": (), "max_tokens": None, "temperature": None, "stop": ()},
    "LLMResponse": {"tool_calls": (), "stop_reason": agentactors.StopReason.end_turn, "model": None,
                    "provider": None, "raw_stop_reason": None, "reasoning": "", "provider_data": None},
    "Usage": {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0,
              "reasoning_tokens": 0},
    "Message.assistant": {"tool_calls": ()},
    "Message.tool": {"name": None},
    "OpenAIProvider": {"model": None, "api_key": None, "base_url": "https://api.openai.com/v1",
                       "carries_forced_tool_choice": None, "http_client": None},
    "AnthropicProvider": {"model": None, "api_key": None, "base_url": "https://api.anthropic.com",
                          "http_client": None},
    "GeminiProvider": {"model": None, "api_key": None, "base_url": "https://generativelanguage.googleapis.com",
                       "http_client": None},
    "ScriptedProvider": {"name": "scripted", "model": None, "latency": 0.0, "carries_tools": True,
                         "carries_forced_tool_choice": True, "rejects_forced_tool_choice": ()},
    "ProviderError": {"model": None, "status": None, "retry_after": None, "retryable": None, "request_id": None},
    "with_retry": {"max_attempts": 3, "base_delay": 0.5, "multiplier": 2.0, "max_delay": 8.0, "jitter": (0.75, 1.0),
                   "max_retry_after": 60.0, "deadline": None, "retry_on": None, "clock": None, "sleep": None,
                   "rng": None},
    "with_fallback": {"fallback_on": None, "skip_incapable": False},
    "with_circuit_breaker": {"window": 60.0, "min_calls": 10, "failure_rate": 0.5, "consecutive_failures": 5,
                             "open_duration": 30.0, "max_open_duration": 300.0, "half_open_max_calls": 1,
                             "half_open_successes": 1, "max_half_open_wait": 60.0, "count_mid_stream": False,
                             "key": None, "clock": None},
    "with_timeout": {"attempt": None, "first_event": None, "idle": None},
    "tool": {"name": None, "description": None, "timeout": None, "result_ceiling": None, "hint": None,
             "sequential": False, "read_only": False, "requires_approval": False},
    "ResultCeiling": {"narrow_by": ()},
    "Runtime": {"recorders": (), "drain_timeout": 5.0},
    "Runtime.spawn": {"name": None, "mailbox_size": 256, "concurrency": 1, "on_failure": "resume", "max_restarts": 3,
                      "restart_window": 60.0},
    "Runtime.run_many": {"concurrency": 100, "progress": None},
    "Runtime.as_completed": {"concurrency": 100},
    "ActorRef.ask": {"timeout": None},
    "ProviderActor": {"max_concurrency": 64, "requests_per_minute": None, "tokens_per_minute": None},
    "ToolExecutorActor": {"max_concurrency_per_step": 16, "default_timeout": 60.0},
    "Agent": {"tools": (), "system": None, "model": None, "max_steps": 8, "max_empty_steps": 2,
              "max_tool_result_chars": None, "context_budget_chars": None, "on_tool_status": None,
              "tool_policy": None, "nudges": True, "followups": False, "recorders": (), "settings": None,
              "output_type": str, "output_retries": 2, "output_validator": None},
    "Agent.run": {"on_token": None, "settings": None, "deadline": None, "priority": None},
    "Agent.stream": {"settings": None},
    "ModelSettings": {name: None for name in ("temperature", "top_p", "max_tokens", "stop", "seed",
                                              "parallel_tool_calls", "reasoning_effort", "thinking_budget", "cache",
                                              "timeout", "extra")},
    "Image": {"data": None, "url": None, "media_type": None},
    "Document": {"data": None, "url": None, "media_type": "application/pdf", "title": None},
    "Audio": {"media_type": None},
    "ProviderActor.__init__": {"scheduling": "oldest_run", "max_waiting": None, "max_wait": None},
    "with_pool": {"strategy": "least_loaded", "weights": None},
    "resilient_chain": {"attempt_timeout": 60.0, "first_event_timeout": 20.0},
    "ToolOutput": {"name": "final_result", "description": None},
    "NativeOutput": {"name": None, "strict": True},
    "PromptedOutput": {"template": None},
    "Agent.as_tool": {"name": None, "description": None, "max_depth": 4},
    "handoff": {"name": None, "description": None, "input_filter": None},
    "Runtime.session": {"store": None, "idle_timeout": 60.0},
}


def _resolve(dotted: str) -> Any:
    obj: Any = agentactors
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


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
                 "StreamInterruptedError", "ProviderTimeout", "Overloaded"):
        assert issubclass(getattr(agentactors, name), agentactors.ProviderError)
    overloaded = agentactors.Overloaded("refused", provider="p", retry_after=1.5)
    assert overloaded.kind is agentactors.ErrorKind.transient and overloaded.retry_after == 1.5
    assert issubclass(agentactors.RunDeadlineExceeded, agentactors.AgentActorsError)
    assert not issubclass(agentactors.RunDeadlineExceeded, agentactors.ProviderError)
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


@pytest.mark.parametrize("dotted", sorted(METHOD_CONTRACT))
def test_contract_method_exists_with_its_parameters(dotted: str) -> None:
    method = _resolve(dotted)
    assert callable(method)
    sig = inspect.signature(method)
    missing = [p for p in METHOD_CONTRACT[dotted] if p not in sig.parameters]
    assert not missing, f"{dotted} lacks parameters {missing}: {sig}"


@pytest.mark.parametrize("dotted", sorted(DEFAULTS))
def test_contract_defaults_are_kept(dotted: str) -> None:
    sig = inspect.signature(_resolve(dotted))
    changed = {
        name: (expected, sig.parameters[name].default if name in sig.parameters else "<missing>")
        for name, expected in DEFAULTS[dotted].items()
        if name not in sig.parameters or sig.parameters[name].default != expected
    }
    assert not changed, f"{dotted}: (promised, actual) defaults differ: {changed}"


def test_the_provider_port_declares_its_members() -> None:
    declared = set(dir(agentactors.LLMProvider))
    for member in ("name", "default_model", "complete", "stream", "carries_tools", "carries_forced_tool_choice",
                   "aclose"):
        assert member in declared, f"LLMProvider does not declare {member}"


def test_events_and_tool_contexts_carry_the_promised_fields() -> None:
    event = agentactors.Event("run.started", "run-1", 1, 0.5, None)
    assert (event.type, event.run_id, event.seq, event.time, event.step) == ("run.started", "run-1", 1, 0.5, None)
    context = agentactors.ToolContext("call_1", "lookup", run_id="run-1", agent="a")
    assert (context.run_id, context.agent, context.call_id) == ("run-1", "a", "call_1")
    assert callable(context.emit)
    assert agentactors.InMemoryRecorder().events == []


def test_the_services_and_observability_names_of_the_second_wave() -> None:
    """docs/architecture.md, second API block: services and observability."""
    from agentactors.otel import OTelRecorder

    assert list(inspect.signature(agentactors.explain).parameters) == ["result", "events"]
    otel = inspect.signature(OTelRecorder).parameters
    assert otel["tracer_provider"].default is None
    assert otel["capture_content"].kind is inspect.Parameter.KEYWORD_ONLY and otel["capture_content"].default is False
    assert inspect.signature(agentactors.Agent.run).parameters["runtime"].default is None
    assert inspect.signature(agentactors.Agent.stream).parameters["runtime"].default is None
    assert callable(agentactors.Agent.bind) and callable(agentactors.AgentRun.text_stream)
    assert callable(agentactors.Explanation.from_jsonl)


def test_the_typed_results_names_of_the_second_wave() -> None:
    """docs/architecture.md, second API block: typed results."""
    assert issubclass(agentactors.ModelRetry, agentactors.AgentActorsError)
    assert issubclass(agentactors.OutputValidationError, agentactors.AgentActorsError)
    assert not issubclass(agentactors.OutputValidationError, agentactors.ProviderError)
    for name in ("name", "description"):
        assert inspect.signature(agentactors.ToolOutput).parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
    assert next(iter(inspect.signature(agentactors.ToolOutput).parameters)) == "output_type"
    assert callable(agentactors.AgentRun.partial_output)


def test_the_agents_together_names_of_the_second_wave() -> None:
    """docs/architecture.md, second API block: agents together."""
    fields = {f.name for f in attrs.fields(agentactors.RunResult)}
    assert {"children", "agent", "handoffs"} <= fields
    assert isinstance(agentactors.RunResult.paused, property)
    assert isinstance(agentactors.RunResult.pending_approvals, property)
    result = agentactors.RunResult("hi", [agentactors.Message.user("x")])
    assert (result.children, result.agent, result.handoffs, result.paused, result.pending_approvals) == (
        (), None, (), False, ()
    )
    assert issubclass(agentactors.SessionConflictError, agentactors.AgentActorsError)
    event = agentactors.Event("run.started", "run-2", 1, 0.0, None, {}, "run-1")
    assert event.parent_run_id == "run-1"
    assert agentactors.Event("run.started").parent_run_id is None
    assert isinstance(agentactors.handoff(agentactors.Agent(agentactors.ScriptedProvider([]), name="b")),
                      agentactors.Tool)
    assert isinstance(agentactors.Agent(agentactors.ScriptedProvider([]), name="b").as_tool(), agentactors.Tool)
    assert "handoffs" in inspect.signature(agentactors.Agent).parameters
