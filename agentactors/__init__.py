"""agentactors: LLM agents as actors on anyio.

The public API is re-exported here; everything else lives in private or
submodule namespaces.  See DESIGN.md for the contract these names keep.
"""

from __future__ import annotations

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
    classify_exception,
    classify_http_error,
    redact,
    register_secret,
)
from .events import Event, EventSink, FanOut, InMemoryRecorder, JsonlRecorder, Recorder, emit
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
from .providers.base import LLMProvider, forced_tool_choice_for
from .providers.scripted import ScriptedProvider, ScriptExhaustedError, StreamCut

__version__ = "0.1.0"

__all__ = [
    "ActorStopped",
    "AgentActorsError",
    "AllProvidersFailedError",
    "AskTimeout",
    "CircuitOpenError",
    "ErrorKind",
    "Event",
    "EventSink",
    "FanOut",
    "InMemoryRecorder",
    "JsonlRecorder",
    "LLMProvider",
    "LLMRequest",
    "LLMResponse",
    "MalformedResponseError",
    "Message",
    "ProviderError",
    "ProviderTimeout",
    "ReasoningDelta",
    "Recorder",
    "ScriptExhaustedError",
    "ScriptedProvider",
    "StopReason",
    "StreamCut",
    "StreamEnd",
    "StreamEvent",
    "StreamInterruptedError",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolChoice",
    "ToolSpec",
    "ToolStatusError",
    "UnsupportedToolChoiceError",
    "Usage",
    "__version__",
    "classify_exception",
    "classify_http_error",
    "emit",
    "forced_tool_choice_for",
    "redact",
    "register_secret",
]
