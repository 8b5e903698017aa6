"""The names and signatures docs/architecture.md promises are importable from ``agentactors``.

Users and acceptance checks rely on these exact names; this test fails when one is
renamed or reshaped without a deprecation path.  Every name of the design's three API blocks is
importable from ``agentactors`` (or from the subpackage its block names), listed in ``__all__`` (the user
API) or not (the machinery a run is made of, the stream events, the old names of renamed errors).
"""

from __future__ import annotations

import inspect
from typing import Any

import attrs
import pytest

import agentactors
import agentactors.errors

# --- every name of the three API blocks (docs/architecture.md, the design's "public API" sections) ----------

# Importable from agentactors, block by block.  Methods (Message.system, rt.spawn, ...) are checked below.
FIRST_BLOCK = [
    # data and stream events
    "Message", "ToolCall", "ToolSpec", "ToolChoice", "LLMRequest", "LLMResponse", "Usage", "StopReason",
    "TextDelta", "ReasoningDelta", "ToolCallStart", "ToolCallDelta", "ToolCallEnd", "StreamEnd",
    # providers
    "LLMProvider", "forced_tool_choice_for", "OpenAIProvider", "AnthropicProvider", "GeminiProvider",
    "ScriptedProvider",
    # errors
    "AgentActorsError", "ProviderError", "ErrorKind", "UnsupportedToolChoiceError", "CircuitOpenError",
    "AllProvidersFailedError", "StreamInterruptedError", "ProviderTimeout", "AskTimeout", "ActorStopped",
    "ToolStatusError",
    # resilience
    "with_retry", "with_fallback", "with_circuit_breaker", "with_timeout",
    # tools
    "tool", "ResultCeiling", "ToolResult", "ToolStatus", "ToolContext",
    # actors and agents
    "Runtime", "Actor", "ActorRef", "ProviderActor", "ToolExecutorActor", "LoopController", "Complete", "Stream",
    "ExecuteTools", "Agent", "RunResult",
    # events
    "InMemoryRecorder", "JsonlRecorder",
]
SECOND_BLOCK = [
    # typed results (docs/architecture.md adds OutputContext and ResponseFormat to the design's block)
    "ToolOutput", "NativeOutput", "PromptedOutput", "ModelRetry", "OutputValidationError", "OutputContext",
    "ResponseFormat",
    # model settings and content parts
    "ModelSettings", "Text", "Image", "Document", "Audio",
    # agents together
    "Tool", "handoff", "AgentSession", "SessionStore", "MemoryStore", "SqliteStore", "SessionConflictError",
    "NeedsApproval",
    # services and observability
    "AgentRun", "explain", "Explanation",
    # under load
    "Overloaded", "RunDeadlineExceeded", "with_pool", "resilient_chain",
]
THIRD_BLOCK = [
    "Capabilities", "OpenAIResponsesProvider", "AzureOpenAIProvider", "BedrockProvider", "GeminiProvider",
    "AnthropicProvider", "AgentRun", "RunResult", "ToolContext",
    "with_hedge", "Cost", "CostLimitExceeded",
    "JournalStore", "SqliteJournal", "replay", "fork", "RunState",
    "PostgresJournal", "PostgresStore",
    "BatchProvider",
]
# The names the blocks show under a subpackage.
SUBPACKAGE_NAMES: dict[str, list[str]] = {
    "agentactors.testing": ["FakeVendor"],
    "agentactors.otel": ["OTelRecorder"],
    "agentactors.mcp": ["MCPServerStdio", "MCPServerHTTP"],
    "agentactors.ray": ["RayCluster", "SharedBudget", "with_shared_budget", "WorkerLost"],
    "agentactors.pricing": ["price_for", "Price"],
    "agentactors.serve": ["openai_app", "mcp_server", "agui_app", "lifespan"],
}

# The block names importable from the root but not in __all__ (machinery, stream events, the old names of
# renamed errors), and the new names of renamed errors that are not listed either.
UNLISTED = {
    "Actor", "ActorRef", "AgentRun", "Complete", "ExecuteTools", "LoopController", "Stream", "Tool",
    "ToolExecutorActor", "forced_tool_choice_for", "SessionStore", "ToolStatusError",
    "TextDelta", "ReasoningDelta", "ToolCallStart", "ToolCallDelta", "ToolCallEnd", "StreamEnd", "ResponseFormat",
    "ActorStopped", "AskTimeout", "Overloaded", "ProviderTimeout", "RunDeadlineExceeded",
    "ActorStoppedError", "AskTimeoutError", "CostLimitExceeded",
}
# Old name -> the class it names now (the same object: ``except ActorStopped`` still catches it).
RENAMED = {
    "ActorStopped": "ActorStoppedError",
    "AskTimeout": "AskTimeoutError",
    "Overloaded": "OverloadedError",
    "ProviderTimeout": "ProviderTimeoutError",
    "RunDeadlineExceeded": "RunDeadlineExceededError",
    "CostLimitExceeded": "CostLimitExceededError",
}
ROOT_NAMES = sorted(set(FIRST_BLOCK) | set(SECOND_BLOCK) | set(THIRD_BLOCK))
SUBPACKAGE_PAIRS = [(package, name) for package, names in SUBPACKAGE_NAMES.items() for name in names]


@pytest.mark.parametrize("name", ROOT_NAMES)
def test_every_name_of_the_api_blocks_is_importable_from_the_root(name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"from agentactors import {name}", namespace)  # the import statement users write
    assert namespace[name] is getattr(agentactors, name)
    assert name in agentactors.__all__ or name in UNLISTED, f"{name} is bound at the root but neither listed nor known"


@pytest.mark.parametrize(("package", "name"), SUBPACKAGE_PAIRS, ids=[f"{p}.{n}" for p, n in SUBPACKAGE_PAIRS])
def test_every_subpackage_name_of_the_api_blocks_is_importable_from_it(package: str, name: str) -> None:
    module = pytest.importorskip(package)  # mcp, otel and ray need their extra
    assert getattr(module, name) is not None


def test_the_unlisted_root_names_are_contract_names_or_the_new_names_of_renamed_ones() -> None:
    assert set(RENAMED.values()) <= set(dir(agentactors))
    assert set(RENAMED.values()) - set(agentactors.__all__) <= UNLISTED
    assert set(ROOT_NAMES) - set(agentactors.__all__) == UNLISTED - set(RENAMED.values())


@pytest.mark.parametrize(("old", "new"), sorted(RENAMED.items()))
def test_a_renamed_error_keeps_its_old_name_as_the_same_class(old: str, new: str) -> None:
    cls = getattr(agentactors, old)
    assert cls is getattr(agentactors, new) is getattr(agentactors.errors, old) is getattr(agentactors.errors, new)
    assert cls.__name__ == new and new.endswith("Error")


def test_the_ray_errors_keep_their_old_names() -> None:
    ray = pytest.importorskip("agentactors.ray")
    assert ray.WorkerLost is ray.WorkerLostError and ray.VersionMismatch is ray.VersionMismatchError
    from agentactors.ray.ledger import LedgerUnavailable, LedgerUnavailableError

    assert LedgerUnavailable is LedgerUnavailableError


# --- the names, signatures and defaults the blocks give ----------------------------------------------------

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
    assert name in agentactors.__all__ or name in UNLISTED, f"{name} missing from agentactors.__all__"
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
    # One base per layer a failure comes from.
    for name in ("AskTimeout", "ActorStopped"):
        assert issubclass(getattr(agentactors, name), agentactors.ActorError)
    assert issubclass(agentactors.AskTimeout, TimeoutError)
    for name in ("RunDeadlineExceeded", "ToolStatusError", "OutputValidationError"):
        assert issubclass(getattr(agentactors, name), agentactors.RunError)
    assert issubclass(agentactors.errors.DelegationError, agentactors.RunError)
    assert issubclass(agentactors.SessionConflictError, agentactors.SessionError)
    for base in (agentactors.ActorError, agentactors.RunError, agentactors.SessionError):
        assert issubclass(base, agentactors.AgentActorsError) and not issubclass(base, agentactors.ProviderError)


def test_signals_are_outside_the_error_tree() -> None:
    """``except AgentActorsError`` around a tool body or a validator does not swallow them."""
    for name in ("ModelRetry", "ToolDenied"):
        cls = getattr(agentactors, name)
        assert issubclass(cls, agentactors.errors.Signal) and issubclass(cls, Exception)
        assert not issubclass(cls, agentactors.AgentActorsError)
    with pytest.raises(agentactors.ModelRetry):
        try:
            raise agentactors.ModelRetry("the total must add up")
        except agentactors.AgentActorsError:
            pytest.fail("a signal was caught as a library error")


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
    assert issubclass(agentactors.ModelRetry, agentactors.errors.Signal)  # a signal, outside the error tree
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
    # getattr_static: mypy reads a property on the class as its getter function, never a property.
    assert isinstance(inspect.getattr_static(agentactors.RunResult, "paused"), property)
    assert isinstance(inspect.getattr_static(agentactors.RunResult, "pending_approvals"), property)
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
