"""agentactors: LLM agents as actors on anyio.

The public API is re-exported here; everything else lives in private or
submodule namespaces.  See docs/architecture.md for the contract these names keep.
"""

from __future__ import annotations

from . import _compat
from .actors.provider import Complete, ProviderActor, Stream
from .actors.runtime import Actor, ActorRef, Runtime, RuntimeStats
from .actors.tools import ExecuteTools, ExecutionContext, ToolExecutorActor
from .agent import Agent, AgentRun, RunResult
from .errors import (
    ActorStopped,
    AgentActorsError,
    AllProvidersFailedError,
    AskTimeout,
    CircuitOpenError,
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    ProviderTimeout,
    StreamInterruptedError,
    ToolStatusError,
    UnsupportedToolChoiceError,
)
from .events import Event, EventSink, FanOut, InMemoryRecorder, JsonlRecorder, Recorder, emit
from .loop.controller import LoopController
from .messages import (
    LLMRequest,
    LLMResponse,
    Message,
    ReasoningDelta,
    StopReason,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolChoice,
    ToolSpec,
    Usage,
)
from .providers._classify import classify_exception, classify_http_error
from .providers.anthropic import AnthropicProvider
from .providers.base import LLMProvider, forced_tool_choice_for
from .providers.gemini import GeminiProvider
from .providers.openai import OpenAIProvider
from .providers.scripted import ScriptedProvider, ScriptExhaustedError, StreamCut
from .redaction import redact, register_secret
from .resilience import CircuitState, CircuitStats, with_circuit_breaker, with_fallback, with_retry, with_timeout
from .tools import ResultCeiling, Tool, ToolContext, ToolResult, ToolStatus, tool

__version__ = "0.1.0"

_compat.install()

__all__ = [
    "Actor",
    "ActorRef",
    "ActorStopped",
    "Agent",
    "AgentActorsError",
    "AgentRun",
    "AllProvidersFailedError",
    "AnthropicProvider",
    "AskTimeout",
    "CircuitOpenError",
    "CircuitState",
    "CircuitStats",
    "Complete",
    "ErrorKind",
    "Event",
    "EventSink",
    "ExecuteTools",
    "ExecutionContext",
    "FanOut",
    "GeminiProvider",
    "InMemoryRecorder",
    "JsonlRecorder",
    "LLMProvider",
    "LLMRequest",
    "LLMResponse",
    "LoopController",
    "MalformedResponseError",
    "Message",
    "OpenAIProvider",
    "ProviderActor",
    "ProviderError",
    "ProviderTimeout",
    "ReasoningDelta",
    "Recorder",
    "ResultCeiling",
    "RunResult",
    "Runtime",
    "RuntimeStats",
    "ScriptExhaustedError",
    "ScriptedProvider",
    "StopReason",
    "Stream",
    "StreamCut",
    "StreamEnd",
    "StreamEvent",
    "StreamInterruptedError",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolChoice",
    "ToolContext",
    "ToolExecutorActor",
    "ToolResult",
    "ToolSpec",
    "ToolStatus",
    "ToolStatusError",
    "UnsupportedToolChoiceError",
    "Usage",
    "classify_exception",
    "classify_http_error",
    "emit",
    "forced_tool_choice_for",
    "redact",
    "register_secret",
    "tool",
    "with_circuit_breaker",
    "with_fallback",
    "with_retry",
    "with_timeout",
    "__version__",
]
