"""agentactors: LLM agents as actors on anyio (asyncio and trio).

The names in ``__all__`` are the user API — what the examples and the README use, and the data model users
build — and report ``agentactors`` as their module.  The other names of the contract (the API blocks of
docs/architecture.md) are importable from here too, unlisted: the machinery a run is made of (``LoopController``
asks a ``ProviderActor`` with ``Complete`` / ``Stream`` and a ``ToolExecutorActor`` with ``ExecuteTools``), the
stream events a provider yields, and the old names of renamed errors.  Everything else stays importable from the
submodule that defines it; a name that left the root still resolves here for one release, with a
DeprecationWarning (:mod:`agentactors._deprecate` holds every moved name and path).  The package is laid out
by idea:

``messages``, ``parts``, ``settings``, ``errors``, ``events``
    the data model (with content parts and model settings), the exception tree, typed events and recorders.
``explain``
    an answer traced back to the request that produced it, live or from a JSONL record.
``actors``
    the actor kernel alone (runtime, refs, mailbox, worker, supervision); it imports nothing above it.
``gateway``
    the process's shared way to a vendor: ProviderActor, its scheduling and rate budgets, run tickets.
``loop``
    the tool loop a run is: controller, nudges, JSON transport, thinking filter, context budget, result.
``agent``
    Agent (configuration bound to a runtime), AgentRun (a run's stream handle), many runs of one agent;
    agents together: an agent as another's tool (a child run), a tool that hands a run to another agent.
``sessions``
    conversations held by actors (virtual actors), committed to a store (memory, SQLite).
``providers``
    the LLMProvider port and its Capabilities, one folder per vendor wire over httpx, the scripted double.
``resilience``
    retry, fallback, circuit breaker, timeout and pool: decorators that return an LLMProvider; hedged
    requests; BatchProvider (the vendors' batch APIs, at about half the price).
``tools``
    ``@tool``, schemas from type hints, argument validation, results; toolsets (sources of tools); the
    ToolExecutorActor.
``output``
    typed results: output types, the three output strategies (tool, native, prompted), validation and re-ask.
``testing``
    FakeVendor (a real HTTP server speaking every vendor wire), virtual time, the pytest plugin.
``serve``
    agents behind an ASGI app: a lifespan that owns a Runtime.
``mcp``, ``otel``, ``ray``
    optional integrations, each behind its extra and imported only when used: tools from MCP servers,
    OpenTelemetry spans and metrics, agentactors past one machine.
"""

import importlib as _importlib
import typing as _typing

# The user API (__all__, below) and, in the ``X as X`` form (how a package re-exports a name it does not list,
# for type checkers and linters), the contract's other names: the machinery a run is made of, the actor
# kernel's API, the stream events a provider yields, the old names of renamed errors, and the errors a live run's
# control raises (docs/loop.md: written beside the run's other errors, so imported from here too).  Those keep the
# module that defines them; only the listed names are relabelled.  tests/unit/test_public_api.py checks both.
from . import _deprecate, _reexport
from ._version import __version__
from .actors.ref import Actor as Actor
from .actors.ref import ActorRef as ActorRef
from .actors.runtime import Runtime
from .agent.core import Agent
from .agent.handoffs import handoff
from .agent.run import AgentRun as AgentRun
from .errors import (
    ActorError,
    AgentActorsError,
    AllProvidersFailedError,
    CircuitOpenError,
    CostLimitExceededError,
    ErrorKind,
    ModelRetry,
    OutputValidationError,
    OverloadedError,
    ProviderError,
    ProviderTimeoutError,
    RunDeadlineExceededError,
    RunError,
    SessionConflictError,
    SessionError,
    SessionPausedError,
    StreamInterruptedError,
    ToolDenied,
    UnsupportedContentError,
    UnsupportedSettingError,
    UnsupportedToolChoiceError,
)
from .errors import ActorStopped as ActorStopped
from .errors import ActorStoppedError as ActorStoppedError
from .errors import AskTimeout as AskTimeout
from .errors import AskTimeoutError as AskTimeoutError
from .errors import CallNotPendingError as CallNotPendingError
from .errors import CostLimitExceeded as CostLimitExceeded
from .errors import Overloaded as Overloaded
from .errors import PauseConsumedError as PauseConsumedError
from .errors import ProviderTimeout as ProviderTimeout
from .errors import RunDeadlineExceeded as RunDeadlineExceeded
from .errors import RunFinishedError as RunFinishedError
from .errors import RunInterruptedError as RunInterruptedError
from .errors import RunNotFoundError as RunNotFoundError
from .errors import ToolStatusError as ToolStatusError
from .events import Event, InMemoryRecorder, JsonlRecorder, Recorder
from .explain import Explanation, explain
from .gateway.cost_budget import CostBudget
from .gateway.provider import Complete as Complete
from .gateway.provider import ProviderActor
from .gateway.provider import Stream as Stream
from .journal import JournalStore, fork, replay
from .loop.controller import LoopController as LoopController
from .loop.live import RunState
from .loop.result import RunResult
from .messages import LLMRequest, LLMResponse, Message, StopReason, ToolCall, ToolChoice, ToolSpec, Usage
from .messages import ReasoningDelta as ReasoningDelta
from .messages import ResponseFormat as ResponseFormat
from .messages import StreamEnd as StreamEnd
from .messages import TextDelta as TextDelta
from .messages import ToolCallDelta as ToolCallDelta
from .messages import ToolCallEnd as ToolCallEnd
from .messages import ToolCallStart as ToolCallStart
from .output import NativeOutput, OutputContext, PromptedOutput, ToolOutput
from .parts import Audio, Document, Image, Text
from .pricing import Cost
from .providers.openai.provider import OpenAIProvider
from .providers.port import Capabilities, LLMProvider
from .providers.port import forced_tool_choice_for as forced_tool_choice_for
from .providers.scripted import ScriptedProvider
from .resilience import (
    resilient_chain,
    with_circuit_breaker,
    with_fallback,
    with_hedge,
    with_pool,
    with_retry,
    with_timeout,
)
from .sessions import AgentSession, MemoryStore
from .sessions import SessionStore as SessionStore
from .settings import CachePolicy, ModelSettings
from .tools import ResultCeiling, ToolContext, ToolResult, ToolStatus, tool
from .tools import Tool as Tool
from .tools.approval import NeedsApproval
from .tools.executor import ExecuteTools as ExecuteTools
from .tools.executor import ToolExecutorActor as ToolExecutorActor

if _typing.TYPE_CHECKING:
    # The names that left the root (agentactors._deprecate.MOVED_NAMES), for type checkers only: at run time
    # they are served by the __getattr__ _deprecate installs, which warns.  Without these, a user's checker
    # would reject code that still runs.
    from .actors.runtime import RuntimeStats as RuntimeStats
    from .agent.delegation import AgentTool as AgentTool
    from .agent.handoffs import Handoff as Handoff
    from .errors import DelegationError as DelegationError
    from .errors import MalformedResponseError as MalformedResponseError
    from .errors import SessionFormatError as SessionFormatError
    from .events import ActorEvent as ActorEvent
    from .events import BreakerEvent as BreakerEvent
    from .events import EventSink as EventSink
    from .events import FallbackEvent as FallbackEvent
    from .events import FanOut as FanOut
    from .events import LLMEvent as LLMEvent
    from .events import OutputEvent as OutputEvent
    from .events import ProviderEvent as ProviderEvent
    from .events import RetryEvent as RetryEvent
    from .events import RunEvent as RunEvent
    from .events import SessionEvent as SessionEvent
    from .events import StepEvent as StepEvent
    from .events import ToolEvent as ToolEvent
    from .events import emit as emit
    from .loop.pause import PausedRun as PausedRun
    from .messages import StreamEvent as StreamEvent
    from .providers import classify_exception as classify_exception
    from .providers import classify_http_error as classify_http_error
    from .providers.scripted import ScriptExhaustedError as ScriptExhaustedError
    from .providers.scripted import StreamCut as StreamCut
    from .redaction import redact as redact
    from .redaction import register_secret as register_secret
    from .resilience import CircuitState as CircuitState
    from .resilience import CircuitStats as CircuitStats
    from .sessions import SessionRecord as SessionRecord
    from .tools import ToolNameClashError as ToolNameClashError
    from .tools import Toolset as Toolset
    from .tools import ToolsetError as ToolsetError
    from .tools.executor import ExecutionContext as ExecutionContext

if _typing.TYPE_CHECKING:
    # The names served on first use (_ON_FIRST_USE, below), for type checkers: at run time __getattr__ imports
    # each when it is first read.
    from .journal.postgres import PostgresJournal
    from .journal.sqlite import SqliteJournal
    from .providers.anthropic.provider import AnthropicProvider
    from .providers.azure import AzureOpenAIProvider
    from .providers.bedrock.provider import BedrockProvider
    from .providers.gemini.provider import GeminiProvider
    from .providers.responses.provider import OpenAIResponsesProvider
    from .resilience.batch import BatchProvider
    from .sessions.postgres import PostgresStore
    from .sessions.sqlite import SqliteStore

__all__ = [
    # the data model: messages, requests and answers, content parts, settings
    "Audio",
    "CachePolicy",
    "Document",
    "Image",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "ModelSettings",
    "StopReason",
    "Text",
    "ToolCall",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    "Cost",
    "CostBudget",
    # providers
    "AnthropicProvider",
    "AzureOpenAIProvider",
    "BedrockProvider",
    "Capabilities",
    "GeminiProvider",
    "LLMProvider",
    "OpenAIProvider",
    "OpenAIResponsesProvider",
    "ScriptedProvider",
    # resilience: each returns an LLMProvider
    "BatchProvider",
    "resilient_chain",
    "with_circuit_breaker",
    "with_fallback",
    "with_hedge",
    "with_pool",
    "with_retry",
    "with_timeout",
    # tools
    "ResultCeiling",
    "ToolContext",
    "ToolResult",
    "ToolStatus",
    "tool",
    # agents, their runtime and runs; agents together
    "Agent",
    "NeedsApproval",
    "ProviderActor",
    "RunResult",
    "RunState",
    "Runtime",
    "handoff",
    # sessions: conversations held by actors, and their stores
    "AgentSession",
    "MemoryStore",
    "SqliteStore",
    "PostgresStore",
    # typed results
    "NativeOutput",
    "OutputContext",
    "PromptedOutput",
    "ToolOutput",
    # events, recorders, and an answer explained
    "Event",
    "Explanation",
    "InMemoryRecorder",
    "JsonlRecorder",
    "Recorder",
    "explain",
    "fork",
    "replay",
    # durable runs: a step journal
    "JournalStore",
    "SqliteJournal",
    "PostgresJournal",
    # errors: the bases, and the ones the docs name; signals (raised by user code, outside the error tree)
    "ActorError",
    "AgentActorsError",
    "AllProvidersFailedError",
    "CircuitOpenError",
    "CostLimitExceededError",
    "ErrorKind",
    "OutputValidationError",
    "OverloadedError",
    "ProviderError",
    "ProviderTimeoutError",
    "RunDeadlineExceededError",
    "RunError",
    "SessionConflictError",
    "SessionError",
    "SessionPausedError",
    "StreamInterruptedError",
    "UnsupportedContentError",
    "UnsupportedSettingError",
    "UnsupportedToolChoiceError",
    "ModelRetry",
    "ToolDenied",
    "__version__",
]

# Listed names served on first use (PEP 562) rather than imported with the package: the vendors' providers but
# OpenAI's, the batch API, and the stores and journals over a database, each a corner a program may never use
# (tests/unit/test_import_cost.py).  Read once, a name is bound here (relabelled as the others are), so the next
# read is a plain lookup; `from agentactors import X`, pickles and reprs are as before.  (A name whose module is
# the package's own submodule of that name cannot be served so: importing agentactors.explain binds the module as
# agentactors.explain, over a function served later.)
_ON_FIRST_USE = {
    "AnthropicProvider": "agentactors.providers.anthropic.provider",
    "AzureOpenAIProvider": "agentactors.providers.azure",
    "BatchProvider": "agentactors.resilience.batch",
    "BedrockProvider": "agentactors.providers.bedrock.provider",
    "GeminiProvider": "agentactors.providers.gemini.provider",
    "OpenAIResponsesProvider": "agentactors.providers.responses.provider",
    "PostgresJournal": "agentactors.journal.postgres",
    "PostgresStore": "agentactors.sessions.postgres",
    "SqliteJournal": "agentactors.journal.sqlite",
    "SqliteStore": "agentactors.sessions.sqlite",
}
# The names that left the root (agentactors._deprecate.MOVED_NAMES): served with a warning.
_moved = _deprecate.getattr_for(__name__, stacklevel=3)


# Defined for the interpreter only: a module __getattr__ a type checker sees makes it accept any name imported from
# the package (a misspelt `from agentactors import Agnet` would check clean); every name it serves is declared
# above for checkers.
if not _typing.TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        home = _ON_FIRST_USE.get(name)
        if home is None:
            return _moved(name)
        value = getattr(_importlib.import_module(home), name)
        _reexport.adopt({name: value}, (name,), __name__)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})


# Reprs, tracebacks and pickles name agentactors.X, where users import X from, not the submodule that
# happens to define it today (_reexport says what that takes to keep type hints resolving).
_reexport.adopt(globals(), (name for name in __all__ if name != "__version__" and name not in _ON_FIRST_USE), __name__)
_deprecate.install()
