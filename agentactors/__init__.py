"""agentactors: LLM agents as actors on anyio (asyncio and trio).

The names in ``__all__`` are the user API; they report ``agentactors`` as their module and are the
contract of docs/architecture.md.  Everything else is plumbing and stays importable from the submodule that
defines it.  The package is laid out by idea:

``messages``, ``parts``, ``settings``, ``errors``, ``events``
    the data model (with content parts and model settings), the exception tree, typed events and recorders.
``explain``
    an answer traced back to the request that produced it, live or from a JSONL record.
``actors``
    the actor kernel (runtime, refs, mailbox, worker, supervision) and the domain actors
    (``provider``: ProviderActor, ``tools``: ToolExecutorActor).
``loop``
    the tool loop a run is: controller, nudges, JSON transport, thinking filter, context budget, result.
``agent``, ``streaming``, ``batch``
    Agent (configuration bound to a runtime), AgentRun (a run's stream handle), many runs of one agent.
``delegation``, ``handoffs``
    agents together: an agent as another's tool (a child run), a tool that hands a run to another agent.
``sessions``
    conversations held by actors (virtual actors), committed to a store (memory, SQLite).
``providers``
    the LLMProvider port, the three vendor wires over httpx, and the scripted double.
``resilience``
    retry, fallback, circuit breaker and timeout: decorators that return an LLMProvider.
``tools``
    ``@tool``, schemas from type hints, argument validation, results; toolsets (sources of tools).
``output``
    typed results: output types, the three output strategies (tool, native, prompted), validation and re-ask.
``testing``
    FakeVendor (a real HTTP server speaking the three wires), virtual time, the pytest plugin.
``mcp``, ``otel``, ``ray``
    optional integrations, each behind its extra and imported only when used: tools from MCP servers,
    OpenTelemetry spans and metrics, agentactors past one machine.
"""

import typing as _typing

from . import _deprecate as _compat
from . import _reexport
from .actors.ref import Actor, ActorRef
from .actors.runtime import Runtime, RuntimeStats
from .agent.core import Agent, AgentRun
from .agent.delegation import AgentTool
from .agent.handoffs import Handoff, handoff
from .errors import (
    ActorStopped,
    AgentActorsError,
    AllProvidersFailedError,
    AskTimeout,
    CircuitOpenError,
    DelegationError,
    ErrorKind,
    MalformedResponseError,
    ModelRetry,
    OutputValidationError,
    Overloaded,
    ProviderError,
    ProviderTimeout,
    RunDeadlineExceeded,
    SessionConflictError,
    SessionError,
    SessionFormatError,
    SessionPausedError,
    StreamInterruptedError,
    ToolDenied,
    ToolStatusError,
    UnsupportedContentError,
    UnsupportedSettingError,
    UnsupportedToolChoiceError,
)
from .events import (
    ActorEvent,
    BreakerEvent,
    Event,
    FallbackEvent,
    InMemoryRecorder,
    JsonlRecorder,
    LLMEvent,
    OutputEvent,
    ProviderEvent,
    Recorder,
    RetryEvent,
    RunEvent,
    SessionEvent,
    StepEvent,
    ToolEvent,
)
from .explain import Explanation, explain
from .gateway.provider import Complete, ProviderActor, Stream
from .loop.controller import LoopController
from .loop.pause import PausedRun
from .loop.result import RunResult
from .messages import (
    LLMRequest,
    LLMResponse,
    Message,
    ReasoningDelta,
    ResponseFormat,
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
from .output import NativeOutput, OutputContext, PromptedOutput, ToolOutput
from .parts import Audio, Document, Image, Text
from .providers.anthropic.provider import AnthropicProvider
from .providers.gemini.provider import GeminiProvider
from .providers.openai.provider import OpenAIProvider
from .providers.port import LLMProvider, forced_tool_choice_for
from .providers.scripted import ScriptedProvider, ScriptExhaustedError, StreamCut
from .redaction import redact, register_secret
from .resilience import (
    CircuitState,
    CircuitStats,
    resilient_chain,
    with_circuit_breaker,
    with_fallback,
    with_pool,
    with_retry,
    with_timeout,
)
from .sessions import AgentSession, MemoryStore, SessionRecord, SessionStore, SqliteStore
from .settings import CachePolicy, ModelSettings
from .tools import ResultCeiling, Tool, ToolContext, ToolResult, ToolStatus, tool
from .tools.approval import NeedsApproval
from .tools.executor import ExecuteTools, ExecutionContext, ToolExecutorActor
from .tools.toolset import ToolNameClashError, Toolset, ToolsetError

if _typing.TYPE_CHECKING:
    # The deprecated root names (see _MOVED_OUT), for type checkers only: at run time they are served by
    # __getattr__, which warns.  Without these, a user's checker would reject code that still runs.
    from .events import EventSink as EventSink
    from .events import FanOut as FanOut
    from .events import emit as emit
    from .providers import classify_exception as classify_exception
    from .providers import classify_http_error as classify_http_error

__version__ = "0.1.0"

__all__ = [
    # data
    "LLMRequest",
    "LLMResponse",
    "Message",
    "ReasoningDelta",
    "ResponseFormat",
    "StopReason",
    "StreamEnd",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    # content parts and model settings
    "Audio",
    "CachePolicy",
    "Document",
    "Image",
    "ModelSettings",
    "Text",
    # providers
    "AnthropicProvider",
    "GeminiProvider",
    "LLMProvider",
    "OpenAIProvider",
    "ScriptExhaustedError",
    "ScriptedProvider",
    "StreamCut",
    "forced_tool_choice_for",
    # errors
    "ActorStopped",
    "AgentActorsError",
    "AllProvidersFailedError",
    "AskTimeout",
    "CircuitOpenError",
    "DelegationError",
    "ErrorKind",
    "MalformedResponseError",
    "Overloaded",
    "ModelRetry",
    "OutputValidationError",
    "ProviderError",
    "ProviderTimeout",
    "RunDeadlineExceeded",
    "SessionConflictError",
    "SessionError",
    "SessionFormatError",
    "SessionPausedError",
    "StreamInterruptedError",
    "ToolDenied",
    "ToolStatusError",
    "UnsupportedContentError",
    "UnsupportedSettingError",
    "UnsupportedToolChoiceError",
    # secrets: for authors of their own providers, tools and recorders
    "redact",
    "register_secret",
    # resilience
    "CircuitState",
    "CircuitStats",
    "resilient_chain",
    "with_circuit_breaker",
    "with_fallback",
    "with_pool",
    "with_retry",
    "with_timeout",
    # tools
    "ResultCeiling",
    "Tool",
    "ToolContext",
    "ToolNameClashError",
    "ToolResult",
    "ToolStatus",
    "Toolset",
    "ToolsetError",
    "tool",
    # actors and agents
    "Actor",
    "ActorRef",
    "Agent",
    "AgentRun",
    "Complete",
    "ExecuteTools",
    "ExecutionContext",
    "LoopController",
    "ProviderActor",
    "RunResult",
    "Runtime",
    "RuntimeStats",
    "Stream",
    "ToolExecutorActor",
    # events
    "Event",
    "InMemoryRecorder",
    "JsonlRecorder",
    "Recorder",
    # typed events: the families (the class of each type is in agentactors.events)
    "ActorEvent",
    "BreakerEvent",
    "FallbackEvent",
    "LLMEvent",
    "OutputEvent",
    "ProviderEvent",
    "RetryEvent",
    "RunEvent",
    "SessionEvent",
    "StepEvent",
    "ToolEvent",
    # agents together: delegation, handoffs, approvals that pause
    "AgentTool",
    "Handoff",
    "NeedsApproval",
    "PausedRun",
    "handoff",
    # sessions: conversations held by actors, and their stores
    "AgentSession",
    "MemoryStore",
    "SessionRecord",
    "SessionStore",
    "SqliteStore",
    # typed results
    "NativeOutput",
    "OutputContext",
    "PromptedOutput",
    "ToolOutput",
    # services and observability
    "Explanation",
    "explain",
    "__version__",
]

# Reprs, tracebacks and pickles name agentactors.X, where users import X from, not the submodule that
# happens to define it today (_reexport says what that takes to keep type hints resolving).
_reexport.adopt(globals(), (name for name in __all__ if name != "__version__"), __name__)
_compat.install()

#: Names that left ``__all__`` because they are plumbing, with the module to import them from.  They stay
#: importable from the root for one release, through ``__getattr__`` with a DeprecationWarning.
_MOVED_OUT: dict[str, str] = {
    "EventSink": "agentactors.events",
    "FanOut": "agentactors.events",
    "emit": "agentactors.events",
    "classify_exception": "agentactors.providers",
    "classify_http_error": "agentactors.providers",
}


def _moved_out(name: str) -> object:
    """A deprecated root name: the object from its module, with a DeprecationWarning that names the module.

    Python calls a module's ``__getattr__`` only for names the module does not bind, so this costs nothing at
    import nor for any name of the user API.
    """
    home = _MOVED_OUT.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Imported here, not at the top: the root's namespace holds the user API and nothing else public.
    import importlib
    import warnings

    warnings.warn(
        f"agentactors.{name} is deprecated: import it from {home} (the root name is kept for one release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)


if not _typing.TYPE_CHECKING:
    # Hidden from type checkers: a module __getattr__ would make them accept any name imported from the
    # package, typos included.  They see the deprecated names through the TYPE_CHECKING imports above.
    __getattr__ = _moved_out
