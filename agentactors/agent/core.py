"""The ``Agent`` façade: an immutable configuration that runs the tool loop in a runtime.

``await agent.run(prompt)`` starts a :class:`~agentactors.loop.controller.LoopController`
in the current :class:`~agentactors.actors.runtime.Runtime` (or a private one when
none is running), reusing the agent's provider and tool actors there: agents given
the same provider object in one runtime share one ProviderActor
(:meth:`~agentactors.gateway.provider.ProviderActor.shared`).  A run asks its
agent's own (stateless, private) ToolExecutorActor with an ordinary ask, which
takes the direct path (the handler runs in the run's task, seen by
``rt.stats()`` and cancelled by ``rt.stop()`` like any handler).
``async with agent.stream(prompt) as run`` yields the run's typed events as they
happen (``run.text_stream()`` only its answer text).  :meth:`Agent.run_many` and
:meth:`Agent.as_completed` (also reached as ``rt.run_many`` / ``rt.as_completed``)
run one agent over many inputs, with the machinery of :mod:`agentactors.agent.batch` (one result per
input, always).

**Which runtime a run uses** (:meth:`Agent._runtime`): the one passed as
``runtime=``; else the one the agent is bound to (:meth:`Agent.bind`); else the
current one (``Runtime.current()``: inside ``async with`` or an actor); else the
runtime of a provider ``ActorRef``; else a private runtime made for the run.  A
web server runs its handlers in tasks that do not inherit the lifespan's context,
so there the current runtime is ``None``: a run that falls back to a private
runtime while a Runtime is running in the process warns once per agent
(``RuntimeWarning``), because it silently loses the shared ProviderActor, its
budgets and the runtime's recorders.  A script with no Runtime anywhere uses the
private one silently.

Every run gets its own :class:`~agentactors.events.EventSink` combining the
runtime's and the agent's recorders, installed as the current sink while the run
works, so the decorators inside the ProviderActor (an ask carries the asker's
contextvars) report to it.  With no recorder anywhere, no event is ever built.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import math
import numbers
import os
import threading
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import cache, partial
from typing import Any, Generic, TypeAlias, cast

import anyio
import attrs

from .._backend import run_loop, running_loop_library
from ..actors.runtime import RUN_RESOLVER, ActorRef, PrivateRuntime, Runtime
from ..events import EventSink, FanOut, Recorder, current_sink, use_sink
from ..gateway import ticket
from ..gateway.cost_budget import CostBudget
from ..gateway.provider import ProviderActor, bound_provider_actor
from ..loop import lineage
from ..loop.config import LoopConfig
from ..loop.controller import LoopController
from ..loop.cost import check_cost_limit
from ..loop.nudges import DEFAULT_NUDGES, FOLLOWUPS_TOOL, Nudges
from ..loop.options import NO_OPTIONS, RunOptions
from ..loop.pause import PausedRun, check_decisions
from ..loop.result import RunResult
from ..loop.seats import InputFilter, Seat
from ..messages import Message, ToolChoice, text_message
from ..output.config import OutputConfig
from ..output.spec import NativeOutput, OutputT, PromptedOutput, ToolOutput
from ..parts import Part, is_part
from ..providers.port import check_provider, native_tools_for
from ..resilience.chain import describe_chain
from ..sessions.session import AgentSession, open_session
from ..sessions.store import SessionStore
from ..settings import ModelSettings
from ..tools.executor import ToolExecutorActor, ToolPolicy
from ..tools.registry import Tool, tool
from ..tools.results import ToolStatus
from ..tools.toolset import ToolNameClashError, Toolset, ToolsetError, ToolsetView, check_toolsets
from .batch import AsCompleted, Spent, SpentLater, check_concurrency, check_items, check_progress, run_batch
from .delegation import MAX_RUNS, AgentTool
from .handoffs import Handoff, handoff
from .pauses import claim as claim_pause
from .pauses import release as release_pause
from .run import AgentRun, PreparedRun, resolve_run

__all__ = ["Agent", "AgentRun", "AsCompleted", "Prompt", "RunResult", "as_completed", "run_many"]

log = logging.getLogger("agentactors.agent")

#: What a run takes: a prompt, one message, a conversation, or the content parts of one user message.
Prompt: TypeAlias = str | Message | Sequence[Message] | Sequence[Part]

# Run ids: unique in a process (a counter) and across processes (a random prefix), cheap to make.
_RUN_PREFIX = os.urandom(3).hex()
_RUN_IDS = itertools.count(1)
# Runs share an agent's tool executor; a step's own budget is ExecutionContext-free
# (max_concurrency_per_step), so the actor itself must never make one run wait for another.
_EXECUTOR_CONCURRENCY = 1_000_000


def new_run_id() -> str:
    return f"run-{_RUN_PREFIX}-{next(_RUN_IDS)}"


def _to_messages(prompt: Prompt) -> tuple[Message, ...]:
    """A prompt as the run's input messages.  :raises TypeError, ValueError: it is not a prompt."""
    if isinstance(prompt, str):
        if prompt:
            return (text_message("user", prompt, (), None, None, "", None, False),)  # Message.user(prompt), directly
        # Else each wire ends it its own way: Anthropic drops the empty message and answers 400, OpenAI sends it.
        raise ValueError("a run needs a prompt or at least one message: the prompt is an empty string")
    if isinstance(prompt, Message):
        return (prompt,)
    if isinstance(prompt, bytes | bytearray | Mapping) or not isinstance(prompt, Iterable):
        # Said here: iterated, a dict gives its keys and bytes their ints, each refused for what it is not.
        raise TypeError(
            "a prompt is a str, a Message, a sequence of Messages or the content parts of one user message, "
            f"not {type(prompt).__name__}"
        )
    messages = tuple(prompt)
    if not messages:
        raise ValueError("a run needs a prompt or at least one message")
    if all(is_part(m) for m in messages):
        return (Message.user(cast("tuple[Part, ...]", messages)),)  # [Text(...), Image(...)]: one user message
    for m in messages:
        if not isinstance(m, Message):
            raise TypeError(f"a conversation holds Message objects, not {type(m).__name__}")
    return cast("tuple[Message, ...]", messages)


async def suggest_followups(suggestions: list[str]) -> str:
    """Offer the user 2 to 4 short follow-up questions they might ask next. Call it at most once, at the end.

    Args:
        suggestions: the follow-up questions, each a short sentence.

    Cancellation: nothing to cancel: it returns at once (the loop takes the suggestions from the call).
    """
    return f"Recorded {len(suggestions)} follow-up suggestion{'s' if len(suggestions) != 1 else ''}."


@cache
def _followups_tool() -> Tool[Any, Any]:
    """The built-in tool, made on first use: a tool compiles a jsonschema validator, `import agentactors` need not."""
    return tool(name=FOLLOWUPS_TOOL)(suggest_followups)


def provider_carries_tools(ref: ActorRef) -> bool:
    """Whether the provider behind a ProviderActor reference carries tools natively (default: yes).

    Read from the hosted provider's ``carries_tools``; the transport must be
    known before the first request, so it cannot be learned from a response.
    """
    provider = getattr(ref.actor, "provider", None)
    return native_tools_for(provider)


def _check_provider(provider: object) -> None:
    """:raises TypeError: ``provider`` is neither an ActorRef nor a provider instance whose ``complete`` can be
    awaited (:func:`~agentactors.providers.port.check_provider`: said here, not at the first model call)."""
    if not isinstance(provider, ActorRef):
        check_provider(provider, or_else="or an ActorRef to a ProviderActor")


def _check_settings(settings: object) -> None:
    if settings is not None and not isinstance(settings, ModelSettings):
        raise TypeError(f"settings must be a ModelSettings, not {type(settings).__name__}")




def _options(
    on_token: Callable[[str], None] | None,
    deps: Any,
    settings: ModelSettings | None,
    deadline: float | None,
    priority: int | None,
    input_key: str | None,
    cost_limit: float | CostBudget | None = None,
) -> RunOptions:
    """The run's options, checked; the shared default when none is given (the hot path allocates nothing)."""
    if (
        on_token is None
        and deps is None
        and settings is None
        and deadline is None
        and priority is None
        and input_key is None
        and cost_limit is None
    ):
        return NO_OPTIONS
    _check_settings(settings)
    if on_token is not None:
        if not callable(on_token):
            # Else it is called for every piece of text, and each TypeError only logged.
            raise TypeError(f"on_token must be callable: (text) -> None, not {type(on_token).__name__}")
        if inspect.iscoroutinefunction(on_token) or inspect.iscoroutinefunction(type(on_token).__call__):
            # Else each call makes a coroutine nobody awaits: every token lost, a warning each.
            raise TypeError(
                "on_token is called synchronously for each piece of text: pass a plain function, not an async one "
                "(to await something per token, read agent.stream(...)'s text_stream())"
            )
    if input_key is not None and not isinstance(input_key, str):
        raise TypeError(f"input_key must be a str, not {type(input_key).__name__}")
    return RunOptions(on_token, deps, settings, deadline, priority, input_key, check_cost_limit(cost_limit))


def _batch_options(
    deps: Any,
    settings: ModelSettings | None,
    deadline: float | None,
    priority: int | None,
    input_key: str | None,
    cost_limit: float | CostBudget | None,
) -> Callable[[int], RunOptions]:
    """Each input's options in a batch (``run_many``, ``as_completed``): one checked value for every run, but for
    ``input_key``, which names each input — ``"{input_key}:{index}"``, as :class:`~agentactors.ray.RayCluster` names
    a job's inputs — so that a tool with side effects deduplicates per input across attempts of the batch.

    :raises TypeError, ValueError: an option :meth:`Agent.run` would refuse (checked before any run starts).
    """
    options = _options(None, deps, settings, deadline, priority, input_key, cost_limit)
    _check_ticket(options)
    if input_key is None:
        return lambda index: options
    return lambda index: attrs.evolve(options, input_key=f"{input_key}:{index}")


def _check_ticket(options: RunOptions) -> None:
    """:raises ValueError, TypeError: a bad ``deadline`` or ``priority`` — for a handle (``stream``,
    ``resume_stream``), whose run is made when it is entered: :meth:`Agent.run` leaves the check to the run's
    :class:`~agentactors.loop.controller.LoopController`, made in the call, so it is not asked twice."""
    if options is not NO_OPTIONS:
        ticket.check_deadline(options.deadline)
        ticket.check_priority(options.priority)


def _listed(value: Any, field: str, what: str) -> Iterable[Any]:
    """``value``, a collection argument, checked to be one: not a single item, not a string.

    :raises TypeError: it is not (a str would be taken letter by letter: ``handoffs="billing"``).
    """
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(f"{field} takes a list of {what}, not {type(value).__name__} (for one, pass [it])")
    return value


def _check_int(field: str, value: object, *, optional: bool = False) -> None:
    """:raises TypeError: ``value`` is not an int (``None`` too, when ``optional``): a float such as ``nan`` or
    ``inf`` passes every ``<`` check, and a step limit of ``nan`` never ends a tool loop."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{field} must be an int{' or None' if optional else ''}, not {value!r}")


def _check_text(field: str, value: object) -> None:
    """:raises TypeError: ``value`` is neither a str nor ``None``."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{field} must be a str or None, not {type(value).__name__}")


def _check_routes(value: object) -> None:
    """:raises TypeError, ValueError: ``value`` is not ``None`` or a mapping keyed by :class:`ToolStatus` values.

    A key that is no status (``"eror"``) was kept and never matched, or — routed anywhere but ``"continue"`` —
    refused as "'eror' is not a valid ToolStatus", naming no argument.  A status' own string is the status.
    """
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise TypeError(
            f"on_tool_status must be a mapping {{ToolStatus: 'continue' | 'end_turn' | 'raise'}}, "
            f"not {type(value).__name__}"
        )
    for status in value:
        if not isinstance(status, str) or status not in _STATUSES:
            raise ValueError(
                f"on_tool_status keys are ToolStatus values ({', '.join(_STATUSES)}), not {status!r}"
            )


_STATUSES = tuple(s.value for s in ToolStatus)


def _to_tools(value: Iterable[Tool[Any, Any] | Callable[..., Any]]) -> tuple[Tool[Any, Any], ...]:
    out: list[Tool[Any, Any]] = []
    for t in _listed(value, "tools", "@tool functions or plain functions"):
        if isinstance(t, Tool):
            out.append(t)
        elif callable(t):
            out.append(tool(t))
        else:
            raise TypeError(f"tools must be @tool functions or plain functions, not {type(t).__name__}")
    return tuple(out)


def _to_handoffs(value: Iterable[Any]) -> tuple[Handoff, ...]:
    out: list[Handoff] = []
    for item in _listed(value, "handoffs", "Agents, agent names or handoff(agent, ...) tools"):
        if isinstance(item, Handoff):
            if not isinstance(item.target, Agent | str):
                # handoff() takes anything with a name and a run (it cannot import this module); a run seats only
                # Agents, so any other target failed at the first run as a name no agent has ("cannot reach").
                raise TypeError(
                    f"a handoff's target is an Agent or the name of one, not {type(item.target).__name__} "
                    f"(the handoff {item.name!r})"
                )
            out.append(item)
        elif isinstance(item, Agent | str):
            out.append(handoff(item))
        else:
            raise TypeError(
                f"handoffs are Agents, agent names or handoff(agent, ...) tools, not {type(item).__name__}"
            )
    return tuple(out)


def _members(provider: Any) -> Iterable[tuple[str, str | None, str | None, int | None]]:
    """``(name, wire, host, port)`` of each vendor provider in a stack, read from public attributes only.

    The ends of the stack (:func:`~agentactors.resilience.describe_chain`); an HTTP provider says its
    ``wire_name`` and ``base_url``; anything else (a scripted or user provider) is a member with no wire.
    """
    for end in describe_chain(provider).providers():
        yield _member(end.name, end.provider)


def _member(name: str, provider: Any) -> tuple[str, str | None, str | None, int | None]:
    wire = getattr(provider, "wire_name", None)
    base_url = getattr(provider, "base_url", None)
    host: str | None = None
    port: int | None = None
    if isinstance(base_url, str):
        import httpx  # a provider with a base URL is an HTTP one: httpx is loaded already (not by `import agentactors`)

        try:
            url = httpx.URL(base_url)
            host, port = url.host or None, url.port or (443 if url.scheme == "https" else 80)
        except (httpx.InvalidURL, TypeError, ValueError):
            pass
    return name, wire if isinstance(wire, str) else None, host, port


def _run_info(provider: Any, model: str | None) -> dict[str, Any]:
    """What ``run.started`` says of an agent's provider, when it knows: its default model, its vendor members."""
    hosted = getattr(getattr(provider, "actor", None), "provider", None) if isinstance(provider, ActorRef) else provider
    if hosted is None:
        return {}
    info: dict[str, Any] = {}
    members = tuple(_members(hosted))
    # Only what says more than the names responses carry anyway: a stack with a vendor in it, a model given.
    vendors = any(wire is not None or host is not None for _, wire, host, _ in members)
    default = model if model is not None or not vendors else getattr(hosted, "default_model", None)
    if isinstance(default, str):
        info["model"] = default
    if vendors:
        info["providers"] = members
    return info


def _owner(t: Tool[Any, Any]) -> str:
    if isinstance(t, AgentTool):
        return f"the delegation to agent {getattr(t.agent, 'name', None)!r} (as_tool)"
    if t is _followups_tool():
        return "the built-in suggest_followups tool (followups=True)"
    return "a plain tool of the agent"


def _claim(owners: dict[str, str], name: str, owner: str, *, lead: str = "tool names must be unique") -> None:
    """Record that ``owner`` holds tool name ``name``.  :raises ToolNameClashError: someone holds it already."""
    held = owners.get(name)
    if held is not None:
        raise ToolNameClashError(f"{lead}: two tools are named {name!r}: one from {held}, one from {owner}; rename one")
    owners[name] = owner


def _owners(tools: Iterable[Tool[Any, Any]], handoffs: Iterable[Handoff]) -> dict[str, str]:
    """Who holds each tool name of an agent built with ``tools`` and ``handoffs``, in words.

    :raises ToolNameClashError: two of them share a name (naming both).
    """
    owners: dict[str, str] = {}
    for t in tools:
        _claim(owners, t.name, _owner(t))
    for h in handoffs:
        _claim(owners, h.name, f"the handoff to agent {h.target_name!r}")
    return owners


def _to_recorders(value: Iterable[Recorder]) -> tuple[Recorder, ...]:
    recorders = tuple(_listed(value, "recorders", "recorders"))
    for r in recorders:
        if isinstance(r, type):  # its record is an unbound function: every event failed, each only logged
            raise TypeError(f"recorders takes recorder instances, not the class {r.__name__}: pass {r.__name__}()")
        if not callable(getattr(r, "record", None)):
            raise TypeError(f"a recorder needs a record(event) method; {type(r).__name__} has none")
    return recorders


@attrs.define(slots=True, eq=False)
class _ToolsetTools:
    """An agent's tools in one runtime when it has toolsets: they change when a toolset's list does.

    ``config`` and ``executor`` follow ``view.tools``; an executor replaced after a change is left to
    the runs still asking it (it is stateless, and idle it holds no task).
    """

    view: ToolsetView
    config: LoopConfig
    executor: ActorRef | None


class _Warned:
    """Whether an agent has warned about running outside the runtime its process runs (once per agent)."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = False


class _PrivateRuntime:
    """The mark of a runtime an agent made for its own run or batch (:meth:`Agent._private`), a ``rt.service``.

    It holds the ProviderActors spawned there, one per provider object — shared by the agents of the run
    (its delegated children, its handoff targets), as a caller's runtime shares them — but spawned outside
    :meth:`ProviderActor.shared <agentactors.gateway.provider.ProviderActor.shared>`, whose registry the
    runtime closes when it exits: these providers are the caller's.  And it holds the agents bound in the
    runtime, which forget it when it closes.  In a runtime of the caller's the service is ``None``.
    """

    __slots__ = ("agents", "providers")

    def __init__(self) -> None:
        self.providers: dict[int, tuple[Any, ActorRef]] = {}  # the provider itself is held: its id stays its own
        self.agents: set[Agent[Any]] = set()

    def provider_actor(self, rt: Runtime, provider: Any) -> ActorRef:
        """The runtime's ProviderActor for ``provider`` (by identity), spawned on first use, never closing it."""
        entry = self.providers.get(id(provider))
        if entry is not None and not entry[1].stopped:
            return entry[1]
        actor = ProviderActor(provider)
        ref = rt.spawn(actor, name="provider", concurrency=actor.spawn_concurrency)
        self.providers[id(provider)] = (provider, ref)
        return ref


def _no_mark() -> _PrivateRuntime | None:
    """What a runtime of the caller's holds for :class:`_PrivateRuntime`: nothing."""
    return None


@attrs.frozen(slots=True)
class _Bound:
    """An agent's actors in one runtime."""

    rt: Runtime
    provider: ActorRef
    native: bool
    tools: ActorRef | None
    fanout: FanOut
    toolsets: _ToolsetTools | None = None


@attrs.frozen(slots=True, eq=False, repr=False)
class Agent(Generic[OutputT]):
    """An immutable agent configuration, generic in its output type.  See docs/architecture.md for every parameter.

    :param provider: an :class:`~agentactors.providers.port.LLMProvider` instance, whose ``complete`` is a
        coroutine function (agents given the same provider object share one ProviderActor in a runtime), or an
        :class:`~agentactors.actors.runtime.ActorRef` to a ProviderActor spawned with its own budgets.  A
        duck-typed provider needs only ``complete``; a runtime closes it with ``aclose()`` if it has one.
    :param tools: ``@tool`` functions (plain functions are wrapped).
    :param toolsets: sources of tools listed when a run starts (:class:`~agentactors.Toolset`; an MCP
        server from :mod:`agentactors.mcp` is one).  A name clash with another toolset or a plain tool
        raises :class:`~agentactors.ToolNameClashError` at the first run; a toolset that cannot list its
        tools makes the run raise :class:`~agentactors.ToolsetError`.
    :param handoffs: agents (or :func:`~agentactors.handoff` tools) the model may hand the conversation
        to: the run goes on with the target's prompt, tools and output type (``RunResult.agent``,
        ``RunResult.handoffs``).  Targets need a ``name``.
    :param system: the system prompt.
    :param model: the model to call (default: the provider's).
    :param tool_choice: applies to the first step of a run; later steps use ``auto``.
    :param max_steps: model calls per run before it ends with ``bounded=True``.
    :param max_empty_steps: think-only steps in a row before it ends with ``bounded=True``.
    :param max_tool_result_chars: the operator's cap; longer results are truncated.
    :param context_budget_chars: trim old tool results so requests stay under this size.
    :param on_tool_status: ``{ToolStatus: "continue" | "end_turn" | "raise"}`` (a key that is no status, such as a
        misspelt ``"eror"``, is a ``ValueError``; a status' own string is the status).
    :param tool_policy: ``(ToolCall, ToolContext) -> None`` to allow or a reason to deny.
    :param nudges: ``True`` (the default policies), ``False`` (none) or a :class:`Nudges`.
    :param followups: add the built-in ``suggest_followups`` tool (``RunResult.followups``).
    :param recorders: receive the events of this agent's runs.
    :param name: the agent's name, in events and tool contexts: a non-empty str, or ``None``.
    :param settings: :class:`~agentactors.ModelSettings` for every request of its runs; they win over the
        provider's defaults, and a run's ``settings=`` win over them, field by field.
    :param output_type: the type of ``RunResult.output`` (``docs/output.md``): ``str`` (the default: the
        answer text, as always), a class, a scalar, ``list[...]`` / ``dict[str, ...]``, ``Literal[...]`` or
        an ``Enum`` (a constrained pick), a union of classes — bare (auto: the strategy chosen per model
        call) or in :class:`~agentactors.ToolOutput`, :class:`~agentactors.NativeOutput` or
        :class:`~agentactors.PromptedOutput`.
    :param output_retries: how many times an answer that does not validate is sent back with its issues
        before the run ends with :class:`~agentactors.OutputValidationError` in ``RunResult.error``.
    :param output_validator: ``fn(value, ctx) -> value`` (sync or async; ``fn(value)`` too), raising
        :class:`~agentactors.ModelRetry` to re-ask: checks no schema can express.
    :raises ValueError, TypeError: for an invalid configuration (checked here, not at run time).
    """

    provider: Any
    tools: tuple[Tool[Any, Any], ...] = attrs.field(default=(), converter=_to_tools, kw_only=True)
    system: str | None = attrs.field(default=None, kw_only=True)
    model: str | None = attrs.field(default=None, kw_only=True)
    tool_choice: ToolChoice = attrs.field(factory=ToolChoice.auto, kw_only=True)
    max_steps: int = attrs.field(default=8, kw_only=True)
    max_empty_steps: int = attrs.field(default=2, kw_only=True)
    max_tool_result_chars: int | None = attrs.field(default=None, kw_only=True)
    context_budget_chars: int | None = attrs.field(default=None, kw_only=True)
    on_tool_status: Mapping[ToolStatus, str] | None = attrs.field(default=None, kw_only=True)
    tool_policy: ToolPolicy | None = attrs.field(default=None, kw_only=True)
    nudges: bool | Nudges = attrs.field(default=True, kw_only=True)
    followups: bool = attrs.field(default=False, kw_only=True)
    recorders: tuple[Recorder, ...] = attrs.field(default=(), converter=_to_recorders, kw_only=True)
    name: str | None = attrs.field(default=None, kw_only=True)
    toolsets: tuple[Toolset, ...] = attrs.field(default=(), converter=check_toolsets, kw_only=True)
    handoffs: tuple[Handoff, ...] = attrs.field(default=(), converter=_to_handoffs, kw_only=True)
    settings: ModelSettings | None = attrs.field(default=None, kw_only=True)
    output_type: type[OutputT] | ToolOutput[OutputT] | NativeOutput[OutputT] | PromptedOutput[OutputT] = attrs.field(
        default=str, kw_only=True  # type: ignore[assignment]
    )
    output_retries: int = attrs.field(default=2, kw_only=True)
    output_validator: Callable[..., Any] | None = attrs.field(default=None, kw_only=True)
    _config: LoopConfig = attrs.field(init=False)
    _all_tools: tuple[Tool[Any, Any], ...] = attrs.field(init=False)
    _bound: dict[int, _Bound] = attrs.field(init=False, factory=dict)
    _home: Runtime | None = attrs.field(init=False, default=None)
    _warned: _Warned = attrs.field(init=False, factory=_Warned)
    _graph: dict[str, Agent[Any]] | None = attrs.field(init=False, default=None)
    # The input_filters of the handoffs in _graph, by (agent name, handoff tool name); set with _graph.
    _filters: dict[tuple[str, str], InputFilter] = attrs.field(init=False, factory=dict)
    _owners: dict[str, str] = attrs.field(init=False, factory=dict)  # who holds each tool name, in words

    def __attrs_post_init__(self) -> None:
        _check_provider(self.provider)
        if not isinstance(self.tool_choice, ToolChoice):
            raise TypeError("tool_choice must be a ToolChoice")
        _check_int("max_steps", self.max_steps)
        _check_int("max_empty_steps", self.max_empty_steps)
        _check_int("max_tool_result_chars", self.max_tool_result_chars, optional=True)
        _check_int("context_budget_chars", self.context_budget_chars, optional=True)
        for field in ("system", "model", "name"):
            _check_text(field, getattr(self, field))
        if self.name == "":  # no tool, handoff or event could name it, yet it is not unnamed (None)
            raise ValueError("name must be a non-empty str, or None for an unnamed agent")
        _check_routes(self.on_tool_status)
        if not isinstance(self.followups, bool):
            raise TypeError(f"followups must be True or False, not {self.followups!r}")
        moved = tuple(t for t in self.tools if isinstance(t, Handoff))
        if moved:  # a handoff given among the tools is a handoff all the same
            object.__setattr__(self, "tools", tuple(t for t in self.tools if not isinstance(t, Handoff)))
            object.__setattr__(self, "handoffs", self.handoffs + _to_handoffs(moved))
        all_tools = self.tools + ((_followups_tool(),) if self.followups else ())
        names = [t.name for t in all_tools] + [h.name for h in self.handoffs]
        owners = _owners(all_tools, self.handoffs)
        if not self.toolsets:  # with toolsets, the tools are known at the first run: checked there
            _check_choice(self.tool_choice, names)
        if self.max_tool_result_chars is not None and self.max_tool_result_chars < 1:
            raise ValueError("max_tool_result_chars must be positive")
        _check_settings(self.settings)
        if self.tool_policy is not None and not callable(self.tool_policy):
            raise TypeError("tool_policy must be callable: (ToolCall, ToolContext) -> None | reason")
        if isinstance(self.nudges, Nudges):
            nudges: Nudges | None = self.nudges
        elif isinstance(self.nudges, bool):
            nudges = DEFAULT_NUDGES if self.nudges else None
        else:
            raise TypeError("nudges must be True, False or a Nudges value")
        output = OutputConfig.build(self.output_type, retries=self.output_retries, validator=self.output_validator)
        if output is not None and output.target is not None:
            for member in output.target.members:
                _claim(
                    owners,
                    member.name,
                    f"the output tool of output_type ({member.name!r})",
                    lead=f"output tool name {member.name!r} is also one of the agent's tools",
                )
        config = LoopConfig(
            tool_specs=tuple(t.spec for t in all_tools) + tuple(h.spec for h in self.handoffs),
            system=self.system,
            model=self.model,
            tool_choice=self.tool_choice,
            max_steps=self.max_steps,
            max_empty_steps=self.max_empty_steps,
            max_tool_result_chars=self.max_tool_result_chars,
            context_budget_chars=self.context_budget_chars,
            on_tool_status=self.on_tool_status,
            tool_policy=self.tool_policy,
            nudges=nudges,
            followups=self.followups,
            read_only=frozenset(t.name for t in all_tools if t.read_only),
            handoffs={h.name: h.target_name for h in self.handoffs},
            may_pause=self.tool_policy is not None
            or bool(self.toolsets)
            or any(t.requires_approval for t in all_tools),
            agent_name=self.name,
            run_info=_run_info(self.provider, self.model),
            settings=self.settings or None,
            output=output,
        )
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_all_tools", all_tools)
        object.__setattr__(self, "_owners", owners)

    def __repr__(self) -> str:
        provider = getattr(self.provider, "name", None) or repr(self.provider)
        label = f"{self.name!r}, " if self.name else ""
        toolsets = f", toolsets={[ts.name for ts in self.toolsets]}" if self.toolsets else ""
        bound = ", bound" if self._home is not None else ""
        return (
            f"Agent({label}provider={provider!r}, tools={[t.name for t in self.tools]}{toolsets}, "
            f"max_steps={self.max_steps}{bound})"
        )

    # -- binding to a runtime ---------------------------------------------------------------------

    def bind(self, runtime: Runtime) -> Agent[OutputT]:
        """This agent's configuration, bound to ``runtime``: its runs use that runtime from any task.

        The recipe for services: open the runtime in the server's lifespan and bind the agent there;
        request handlers (tasks the server spawned, which do not see the lifespan's
        ``Runtime.current()``) then share its ProviderActor, budgets and recorders.  ``runtime`` may
        be bound before it is entered; a run needs it running.  The agent itself is unchanged (it is
        immutable): the bound copy is returned.

        A runtime belongs to its event loop's thread.  ``await bound.run(...)`` from another thread's
        event loop (asyncio or trio) hands the run to the runtime's loop (:meth:`Runtime.call`) and
        returns its result there: the run's tasks, actors and ``on_token`` callbacks are the runtime's
        thread's, and cancelling the caller cancels the run and waits for it to end.  ``stream()``,
        ``run_many()``, ``session()`` and the rest raise a :class:`RuntimeError` from another thread:
        run them in the runtime's loop with ``await rt.call(fn, ...)``.

        :raises TypeError: ``runtime`` is not a :class:`~agentactors.actors.runtime.Runtime`.
        """
        if not isinstance(runtime, Runtime):
            raise TypeError(f"bind() takes a Runtime, not {type(runtime).__name__}")
        bound: Agent[OutputT] = attrs.evolve(self)
        object.__setattr__(bound, "_home", runtime)
        runtime.keep_bound(bound, bound.name)  # where rt.recover() finds a crashed run's agent by name
        return bound

    @property
    def runtime(self) -> Runtime | None:
        """The runtime this agent is bound to (:meth:`bind`), or ``None``."""
        return self._home

    # -- running --------------------------------------------------------------------------------

    async def run(
        self,
        prompt: Prompt,
        *,
        on_token: Callable[[str], None] | None = None,
        deps: Any = None,
        runtime: Runtime | None = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        input_key: str | None = None,
        cost_limit: float | CostBudget | None = None,
    ) -> RunResult[OutputT]:
        """Run the tool loop on ``prompt`` (a str, a Message, a conversation, or the content parts of one user
        message: ``[Text(...), Image(...)]``) to a :class:`RunResult`.

        ``on_token(text)`` is called for each piece of answer text as it streams
        (the provider's stream path is used then).  ``deps`` reaches tools as
        ``ToolContext.deps`` and is never recorded.  ``input_key`` names the
        input across attempts (a run of the same input again gets a new run id
        but the same key) and reaches tools as ``ToolContext.input_key``, so a
        tool with side effects can deduplicate.  ``runtime``: the runtime to
        run in (default: the bound one, else the current one; see the module's
        docstring for the whole order and the warning a server gets when it finds none).
        ``settings`` win over the agent's for this run, field by field.

        :raises RuntimeError: ``runtime`` (or the bound one) is not running — it closed, or was never
            entered.  (One of another thread's event loop is no error: the run is handed to it; see
            :meth:`bind`.)
        :raises ValueError: the prompt is empty (``""`` or ``[]``): nothing is sent.

        ``deadline`` (seconds) bounds the whole run — budget waits at the ProviderActor, retries'
        backoff (``with_retry`` starts no wait that would end past it), model calls and tool
        steps: a run past it ends with :class:`~agentactors.errors.RunDeadlineExceeded` in
        ``RunResult.error`` (it is not raised), its in-flight request cancelled.  ``priority``
        (an int, higher first; default ``0``) is the run's class at the ProviderActor: an
        interactive run with ``priority=1`` is served before batch runs at ``0``, and lower
        classes are never starved (``ProviderActor(max_overtakes=)``).  A run started inside
        another run's work (a tool that runs an agent) inherits its age, its class and its
        earlier deadline.  ``cost_limit`` (in the price table's currency, USD) is the most the run
        may spend (:mod:`agentactors.pricing`), its delegated runs' included: right after the model call
        that passes it — or before a call its estimate says would — the run ends with
        :class:`~agentactors.errors.CostLimitExceededError` in ``RunResult.error``; a
        :class:`~agentactors.gateway.cost_budget.CostBudget` is a limit shared with every run given it
        (``docs/costs.md``).

        Errors: provider failures end the run with ``generation_failed=True``
        (see :class:`RunResult`; ``(await agent.run(...)).raise_for_error()`` raises them); a tool
        status routed to ``"raise"`` raises :class:`~agentactors.errors.ToolStatusError`.

        Cancellation: a cancellation from an enclosing scope (``asyncio.timeout``, a task group, Ctrl-C under
        ``asyncio.run``) cancels the run where it stands — its model request (the HTTP request closed) and its
        running tools — and propagates as anyio's cancellation exception: nothing is returned, and the caller's
        conversation is untouched.  A run cancelled through its handle (``run.cancel()``,
        ``rt.run_ref(run_id).cancel()``) ends with ``RunResult.cancelled`` instead.
        """
        messages = _to_messages(prompt)
        options = _options(on_token, deps, settings, deadline, priority, input_key, cost_limit)
        if runtime is not None or self._home is not None:
            rt = self._runtime(runtime, any_thread=True)
        else:
            rt = self._current()
        if rt is not None:
            if rt.thread != threading.get_ident():
                # A runtime of another thread's event loop: the run is handed to that loop (Runtime.call).
                return await rt.call(self._run_in, rt, messages, options)
            return await self._run_in(rt, messages, options)
        async with self._private() as private:
            result = await self._run_in(private, messages, options, private=True)
        return result

    def run_sync(
        self,
        prompt: Prompt,
        *,
        backend: str | None = None,
        on_token: Callable[[str], None] | None = None,
        deps: Any = None,
        runtime: Runtime | None = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        input_key: str | None = None,
        cost_limit: float | CostBudget | None = None,
    ) -> RunResult[OutputT]:
        """:meth:`run`, from code that is not async: a script, a REPL, a worker thread of a WSGI server.

        It blocks until the run ends and returns the same :class:`RunResult`, raising the same errors; the
        options are :meth:`run`'s.  The run goes to the runtime :meth:`run` would choose (bound, passed as
        ``runtime=``, current, else a private one made for the run):

        * with no runtime to use, a new event loop runs the call in this thread (``anyio.run``, on
          ``backend``: ``"asyncio"``, the default, or ``"trio"``), with the private runtime :meth:`run`
          makes, and ends with it;
        * an agent bound to a runtime running in another thread's event loop (``agent.bind(rt)``, or
          ``runtime=rt``: a service's loop beside a Django or Flask worker thread) hands the run to that
          loop (:meth:`Runtime.call`) and waits for it: the run's tasks, actors and ``on_token`` calls
          are the runtime's thread's, and it shares that runtime's ProviderActor, budgets and recorders.

        Streaming needs async code: :meth:`stream` has no blocking twin (iterate it in ``async with``).

        .. code-block:: python

            agent = Agent(OpenAIProvider("gpt-4.1-mini"), system="Be brief.")
            result = agent.run_sync("What's the capital of Portugal?", deadline=30)
            print(result.content)

        :raises RuntimeError: an event loop is running in this thread (a Jupyter cell, an ``async def``
            view, a callback of an async framework): blocking it would stop the loop the run needs —
            ``await agent.run(...)`` there instead; and whatever :meth:`run` raises (``runtime`` or the
            bound one is not running).
        :raises ValueError: ``backend`` is neither ``"asyncio"`` nor ``"trio"``; and whatever :meth:`run`
            raises (an empty prompt).
        :raises KeyboardInterrupt: Ctrl-C while the run works (see Cancellation).

        Cancellation: nothing can cancel a blocking call but an interrupt.  Ctrl-C (``KeyboardInterrupt``)
        cancels the run — on asyncio ``anyio.run`` cancels its main task, on trio the interrupt is raised
        into it at its next checkpoint, never in the middle of a tool's or the library's code — waits for
        it to end (its tasks and tools cancelled, its private runtime closed; a run handed to another
        thread's runtime cancelled there and waited for), then raises ``KeyboardInterrupt`` to the caller.
        Python delivers Ctrl-C to the main thread only: a run started from another thread goes on until it
        ends or its ``deadline`` passes.
        """
        if backend is None:
            backend = "asyncio"
        elif backend not in _SYNC_BACKENDS:
            raise ValueError(f"run_sync() backend must be 'asyncio' or 'trio', not {backend!r}")
        running = running_loop_library()
        if running is not None:
            raise RuntimeError(
                f"Agent.run_sync() was called where {running}'s event loop is running (this thread's: an async "
                "function, a Jupyter cell, an async view); blocking here would stop the loop the run needs. Use "
                "`await agent.run(...)` instead"
            )
        # Before any loop is made: a runtime that is not running is the caller's error at once, and the warning for
        # a run that finds no runtime names the caller's line (the run itself then finds it given already).
        if runtime is not None or self._home is not None:
            self._runtime(runtime, any_thread=True)
        else:
            self._current()

        async def main() -> RunResult[OutputT]:
            # (Ctrl-C on asyncio cancels this task with task.cancel(): a real cancellation for every part of the run,
            # a tool running in it included — agentactors._containment — so asyncio.run raises KeyboardInterrupt.)
            return await self.run(
                prompt,
                on_token=on_token,
                deps=deps,
                runtime=runtime,
                settings=settings,
                deadline=deadline,
                priority=priority,
                input_key=input_key,
                cost_limit=cost_limit,
            )

        return run_loop(main, backend)

    async def run_many(
        self,
        inputs: Iterable[Prompt],
        *,
        runtime: Runtime | None = None,
        concurrency: int = 100,
        progress: Callable[[int, int, int], Any] | None = None,
        deps: Any = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        input_key: str | None = None,
        cost_limit: float | CostBudget | None = None,
    ) -> list[RunResult[OutputT]]:
        """Run the agent on every input, at most ``concurrency`` at once; one result per input, in input order.

        In ``runtime`` (default: the current one, as for :meth:`run`, or a
        private one made for these runs).  ``progress(done, failed, total)`` is
        called after each run (``failed`` counts runs with ``generation_failed``
        or an ``error``); a progress callback that raises is logged and ignored
        (a ``KeyboardInterrupt`` from it stops the batch, as one from a run does).

        Each run takes :meth:`run`'s options: ``deps``, ``settings``, ``deadline``
        (seconds, each run's own), ``priority`` and ``cost_limit`` (a number: each
        run's own limit; a :class:`~agentactors.gateway.cost_budget.CostBudget`: one
        limit the runs share) as given; ``input_key`` names the batch, and each run's
        ``ToolContext.input_key`` is ``"{input_key}:{index}"`` — the same for input
        ``index`` in every attempt of the batch, so a tool with side effects can
        deduplicate on it (as :class:`~agentactors.ray.RayCluster` names a job's inputs).
        A run that fails, or raises anything that is its own failure (any
        ``Exception``, ``SystemExit``, a ``BaseException`` of its own, a
        cancellation no cancel scope asked for), becomes a failed
        :class:`RunResult` in its place (``error`` set) and never disturbs the
        others: the list always has ``len(inputs)`` results, ``results[i]``
        always ``inputs[i]``'s (docs/reliability.md, "Batches").  A failed or
        cancelled slot keeps what its run had spent — ``usage``, ``cost``
        (a call the cancellation cut short at its estimate), ``steps`` — its
        ``messages`` being the input; a slot whose run never started costs
        ``Cost()``: ``pricing.total_cost(results)`` is what the batch was billed,
        what a ``CostBudget`` around it counted (docs/costs.md).

        :raises ValueError: ``concurrency`` is not a positive int; an option :meth:`run` refuses (a negative
            ``deadline``, a ``cost_limit`` below zero, ...), before any run starts.
        :raises TypeError: ``inputs`` is one prompt (a str or a Message), not an iterable of them;
            ``progress`` is not a plain function (not callable, or ``async``: it is called synchronously);
            an option of the wrong type (as :meth:`run`), before any run starts.
        :raises RuntimeError: ``runtime`` (or the bound one) is not running, or belongs to another
            thread's event loop: a batch is not handed over as :meth:`run` is; run it there with
            ``await rt.call(agent.run_many, inputs)``.
        :raises KeyboardInterrupt: the batch was interrupted (a run raised it, or trio delivered
            Ctrl-C to the batch's task): the other runs are cancelled and the *same* interrupt is
            raised again, with every input's result in ``exc.results`` (finished runs' results,
            ``RunResult(cancelled=True)`` for the others).  On asyncio, ``anyio.run`` turns Ctrl-C
            into a cancellation of the main task (see Cancellation) and raises the interrupt from
            it: :func:`agentactors.agent.batch.results_of(exc) <agentactors.agent.batch.results_of>` finds the
            list on both backends.

        Cancellation: cancels every run and propagates; every slot is filled first (a cancelled run's
        with what it had spent) and the list rides on the cancellation exception as ``exc.results``.
        """
        check_concurrency(concurrency)
        check_items(inputs, "run_many")
        check_progress(progress)
        options_at = _batch_options(deps, settings, deadline, priority, input_key, cost_limit)
        items = list(inputs)
        # An explicit runtime is checked as a bound one is (running, this thread's): a batch is not handed over.
        # Before the empty shortcut: a closed or foreign runtime is the caller's mistake even with nothing to run.
        rt = self._runtime(runtime)
        if not items:
            return []
        typed = self._config.output is not None
        if rt is not None:
            return await run_batch(
                items,
                _to_messages,
                partial(self._run_counted, rt, options_at),
                concurrency=concurrency,
                progress=progress,
                typed=typed,
                indexed=True,
            )
        async with self._private() as private:
            results = await run_batch(
                items,
                _to_messages,
                partial(self._run_counted, private, options_at, private=True),
                concurrency=concurrency,
                progress=progress,
                typed=typed,
                indexed=True,
            )
        return results

    def as_completed(
        self,
        inputs: Iterable[Prompt],
        *,
        runtime: Runtime | None = None,
        concurrency: int = 100,
        deps: Any = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        input_key: str | None = None,
        cost_limit: float | CostBudget | None = None,
    ) -> AsCompleted[Prompt, OutputT]:
        """Run the agent on every input and yield each :class:`RunResult` as it finishes (``async for``).

        Each run takes the options ``deps``, ``settings``, ``deadline``, ``priority``, ``input_key`` and
        ``cost_limit`` as :meth:`run_many`'s do.

        In ``runtime`` (default: the current one, as for :meth:`run`); the runs
        start at the first ``__anext__`` and live in the runtime's task group.
        To stop early, use ``async with agent.as_completed(...) as results:`` or
        call ``aclose()``: unfinished runs are cancelled, and it returns once they
        have ended; an iterator dropped unclosed cancels its runs when it is
        collected (as a dropped :class:`AgentRun` does).  Failed runs are
        yielded like the others, with what they spent (see :meth:`run_many`): one result per input.
        A ``KeyboardInterrupt`` in a run cancels the others; the results
        finished before it are yielded, then the iteration raises it.

        :raises RuntimeError: no runtime is running (the runs need one to live in); ``runtime`` (or the
            bound one) has closed or belongs to another thread's event loop.
        :raises ValueError: ``concurrency`` is not a positive int.
        :raises TypeError: ``inputs`` is one prompt (a str or a Message), not an iterable of them.

        Cancellation: the runs belong to the runtime, not to the consumer: cancelling the consumer
        leaves them running until ``aclose()``, the end of ``async with``, the iterator's collection, or the
        runtime's exit.  ``aclose()``'s wait for the cancelled runs is shielded.
        """
        check_items(inputs, "as_completed")
        options_at = _batch_options(deps, settings, deadline, priority, input_key, cost_limit)
        rt = self._runtime(runtime)
        if rt is None:
            raise RuntimeError(
                "as_completed needs a running Runtime for its runs: call it inside `async with Runtime() as rt:` "
                "(or use run_many, which makes one)"
            )
        return AsCompleted(
            rt,
            list(inputs),
            _to_messages,
            partial(self._run_counted, rt, options_at),
            concurrency,
            typed=self._config.output is not None,
            indexed=True,
        )

    def as_tool(
        self, *, name: str | None = None, description: str | None = None, max_depth: int = 4, max_runs: int = MAX_RUNS
    ) -> AgentTool:
        """This agent as a tool of another agent (delegation): ``Agent(p, tools=[researcher.as_tool()])``.

        The tool takes one required string, ``input`` (the child's prompt, written by the calling
        model), and answers with this agent's answer (``content``, or its typed output rendered).  A call
        runs this agent as a *child run* of the caller's run: in the same runtime (sharing its
        ProviderActors and budgets), with the caller's ``deps``; the child's events carry
        ``parent_run_id`` and reach the caller's recorders, its result joins the caller's
        ``RunResult.children`` and its usage the caller's ``RunResult.usage``.  Cancelling the caller
        cancels the child; the caller's deadline bounds it.  A child that ends without an answer is the
        call's ``error`` result with a concise reason; a call that would nest more than ``max_depth``
        delegated runs deep, or start one more run in a delegation tree that has started ``max_runs``, is
        refused with status ``denied`` (``DelegationLimitError``).

        :param name: the tool's name (default: the agent's name).
        :param description: what the calling model reads about when to use it.
        :param max_depth: how deep delegation may nest through this tool (the caller's own child is 1).
        :param max_runs: how many runs the whole delegation tree of the root run may start for a call
            through this tool to start one (default ``MAX_RUNS`` = 256, at most 10,000:
            ``agentactors.agent.delegation``).
        :raises ValueError: no ``name`` for an agent without one; ``max_depth`` or ``max_runs`` out of range.
        :raises TypeError: ``max_depth`` or ``max_runs`` not an int.
        """
        return AgentTool(self, name=name, description=description, max_depth=max_depth, max_runs=max_runs)

    async def resume(
        self,
        paused: RunResult[Any] | PausedRun,
        decisions: Mapping[str, bool | str],
        *,
        on_token: Callable[[str], None] | None = None,
        deps: Any = None,
        runtime: Runtime | None = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        input_key: str | None = None,
        cost_limit: float | CostBudget | None = None,
    ) -> RunResult[OutputT]:
        """Go on with a run that paused for approval, given a decision for each pending call.

        ``paused``: the paused :class:`RunResult` (``result.paused``), or its ``resume_state`` — plain
        data that may have been stored and read back in another process.  ``decisions``:
        ``{call_id: True}`` approves a call (it runs; a policy is not asked again), ``{call_id: "why"}``
        (or ``False``) denies it (the model reads status ``denied`` with the reason).  The paused step's
        results then go back in call order and the run goes on from the next step, with the paused
        run's steps, usage and calls counted; a run paused after a handoff goes on with the agent that
        was answering.  The result may be paused again.  The other keywords as for :meth:`run` (``deps``
        are not kept with a pause: pass them again).  ``cost_limit`` bounds what the resumed run spends (what
        the run spent before its pause is not counted again); ``on_token`` streams its answer text.

        :raises ValueError: ``paused`` is not paused; a pending call without a decision, or a decision
            for a call that is not pending; this agent neither is nor hands off to the agent the run
            paused in, or the run paused in an unnamed agent and this one is named (nothing is claimed: the
            pause is left to the right agent; a pause knows its agent by name, so two unnamed agents are not
            told apart).
        :raises PauseConsumedError: this pause was resumed already in this process (sequentially or at
            the same time): a pause goes on once, and this call runs nothing.  Across processes, see
            docs/agents.md ("Approvals").
        :raises TypeError: a decision that is not ``True``, ``False`` or a str.
        :raises RuntimeError: as for :meth:`run`.

        Cancellation: as for :meth:`run`; the pending calls that had started are cancelled with it.
        """
        state, checked = self._resumable(paused, decisions, "resume")
        options = _options(on_token, deps, settings, deadline, priority, input_key, cost_limit)
        key = claim_pause(state)  # before the first await: of two resumes at once, one alone goes on
        started: list[bool] = []
        try:
            rt = self._runtime(runtime) if runtime is not None or self._home is not None else self._current()
            if rt is not None:
                result = await self._resume_in(rt, state, checked, options, started=started)
            else:
                async with self._private() as private:
                    result = await self._resume_in(private, state, checked, options, private=True, started=started)
        except BaseException:
            if not started:  # nothing ran: the pause may be resumed again
                release_pause(key)
            raise
        if isinstance(paused, RunResult) and paused.children:  # the children of the paused part stay the run's
            result = attrs.evolve(result, children=paused.children + result.children)
        return result

    def resume_stream(
        self,
        paused: RunResult[Any] | PausedRun,
        decisions: Mapping[str, bool | str],
        *,
        deps: Any = None,
        runtime: Runtime | None = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        input_key: str | None = None,
        cost_limit: float | CostBudget | None = None,
    ) -> AgentRun[OutputT]:
        """:meth:`resume` as a live run: ``async with agent.resume_stream(paused, decisions) as run``.

        The handle is :meth:`stream`'s (:class:`AgentRun`): the resumed run's events as they happen, its
        ``text_stream()``, and its control messages — ``steer``, ``interrupt``, ``approve``, ``deny`` — taken
        at its step boundaries as a streamed run takes them; ``rt.run_ref(run_id)`` finds it too.  The
        arguments are :meth:`resume`'s, checked here, when the handle is made.  The pause is claimed when the
        handle is entered: a second resume of it then raises :class:`~agentactors.errors.PauseConsumedError`;
        one whose run could not start (a runtime that is not usable, toolsets that could not be listed)
        leaves the pause to be resumed again.  The result keeps the paused run's ``children``.

        :raises ValueError, TypeError: as :meth:`resume` raises them, from this call.
        :raises PauseConsumedError: when entered, if this pause was resumed already in this process.
        """
        state, checked = self._resumable(paused, decisions, "resume_stream")
        options = _options(None, deps, settings, deadline, priority, input_key, cost_limit)
        _check_ticket(options)
        _check_runtime(runtime)
        children = paused.children if isinstance(paused, RunResult) else ()
        return AgentRun(_Launcher(self, (), options, runtime, resume=(state, checked), children=children))

    def _resumable(
        self, paused: RunResult[Any] | PausedRun, decisions: Mapping[str, bool | str], call: str
    ) -> tuple[PausedRun, Mapping[str, bool | str]]:
        """The pause ``paused`` holds and ``decisions`` checked against it, before anything is claimed."""
        state = paused.resume_state if isinstance(paused, RunResult) else paused
        if not isinstance(state, PausedRun):
            raise ValueError(f"{call}() takes a paused RunResult (result.paused is True) or its resume_state")
        checked = check_decisions(state, decisions)
        # Before the claim: a resume whose run would fail at once, finding no seat for the paused agent, must
        # leave the pause to the right agent.  An unnamed agent is no handoff's target: its pause is its own.
        if state.agent != self.name and (
            not self.handoffs or state.agent is None or state.agent not in self._reachable()
        ):
            if state.agent is None:
                raise ValueError(
                    f"the paused run was answered by an unnamed agent; resume it with that agent, not {self.name!r} "
                    "(an unnamed agent is no handoff's target, so no other agent goes on with its run)"
                )
            raise ValueError(
                f"the paused run was answered by agent {state.agent!r}; resume it with that agent "
                f"(or with one that hands off to it), not {self.name!r}"
            )
        return state, checked

    async def _resume_in(
        self,
        rt: Runtime,
        state: PausedRun,
        decisions: Mapping[str, bool | str],
        options: RunOptions,
        *,
        private: bool = False,
        started: list[bool],
    ) -> RunResult[OutputT]:
        if self.toolsets or _elsewhere(self, state):
            controller, sink = await self._listed_controller(rt, options, private=private, resume=(state, decisions))
        else:
            controller, sink = self._controller(rt, options, private=private, resume=(state, decisions))
        started.append(True)
        return await _drive(controller, sink)

    def session(
        self,
        key: str,
        *,
        runtime: Runtime | None = None,
        store: SessionStore | None = None,
        idle_timeout: float = 60.0,
        cost_limit: float | CostBudget | None = None,
    ) -> AgentSession[OutputT]:
        """The conversation ``key`` with this agent, held by an actor of ``runtime``: ``await session.send(p)``.

        A session is a virtual actor (``docs/sessions.md``): addressed by ``key``, activated on its
        first turn (its history loaded from ``store``), one turn at a time in order, deactivated after
        ``idle_timeout`` seconds without a turn (no task, no history in memory), and activated again
        by the next turn.  A turn is committed to ``store`` atomically when it ends; a failed or
        cancelled turn leaves the history as it was.  ``store`` defaults to the runtime's own
        :class:`~agentactors.sessions.MemoryStore`; a :class:`~agentactors.sessions.SqliteStore`
        keeps sessions across processes.  ``rt.session(agent, key, ...)`` is the same call.  ``cost_limit``
        is the most the session's turns may spend together in this runtime (or a
        :class:`~agentactors.gateway.cost_budget.CostBudget` they spend from): ``session.cost`` says
        what they spent (``docs/costs.md``).

        :raises RuntimeError: no runtime is running (``runtime`` as for :meth:`run`).
        :raises TypeError, ValueError: a key that is not a non-empty str, a bad ``idle_timeout``, a ``runtime``
            that is not a Runtime.
        """
        _check_runtime(runtime)
        rt = runtime if runtime is not None else self._runtime()
        if rt is None:
            raise RuntimeError(
                "a session lives in a running Runtime: call it inside `async with Runtime() as rt:` "
                "(rt.session(agent, key)), pass runtime=, or bind the agent"
            )
        return open_session(self, key, runtime=rt, store=store, idle_timeout=idle_timeout, cost_limit=cost_limit)

    def stream(
        self,
        prompt: Prompt,
        *,
        deps: Any = None,
        runtime: Runtime | None = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        input_key: str | None = None,
        cost_limit: float | CostBudget | None = None,
    ) -> AgentRun[OutputT]:
        """A handle that runs the loop and yields its events: ``async with agent.stream(p) as run``.

        ``runtime`` as for :meth:`run` (checked when the handle is entered); ``settings``, ``deadline``,
        ``priority``, ``input_key`` and ``cost_limit`` as for :meth:`run` (a live run is the service's way to
        run an agent: it is bounded as a run is), checked here.  See :class:`AgentRun`.

        :raises RuntimeError: called where no event loop runs (the handle belongs to one): it says what to do.
        """
        options = _options(None, deps, settings, deadline, priority, input_key, cost_limit)
        _check_ticket(options)
        _check_runtime(runtime)
        launcher = _Launcher(self, _to_messages(prompt), options, runtime)
        try:
            return AgentRun(launcher)
        except RuntimeError:  # (its cancel scope and event, which need a loop, are all that can raise it: anyio's)
            raise RuntimeError(
                "agent.stream() makes a handle for async code: call it where an event loop runs "
                "(`async with agent.stream(prompt) as run:` inside `async def`); from synchronous code, "
                "agent.run_sync(prompt, on_token=...) streams the answer's text"
            ) from None

    def _runtime(
        self, runtime: Runtime | None = None, *, stacklevel: int = 3, any_thread: bool = False
    ) -> Runtime | None:
        """The runtime a run uses, in the order the module's docstring gives; ``None`` for a private one.

        :raises RuntimeError: an explicit or bound runtime that is not running, or (unless ``any_thread``:
            the caller hands its call to the runtime's loop) of another thread.
        """
        if runtime is not None and type(runtime) is not Runtime:  # inline: every run given runtime= passes here
            _check_runtime(runtime)  # (a subclass passes)
        rt = runtime if runtime is not None else self._home
        if rt is not None:
            which = "passed as runtime=" if runtime is not None else "this agent is bound to"
            _check_usable(rt, which, any_thread=any_thread)
            return rt
        return self._current(stacklevel=stacklevel + 1)

    def _current(self, *, stacklevel: int = 3) -> Runtime | None:
        """The current runtime (or the provider ref's); ``None`` — with the warning, when it applies."""
        rt = Runtime.current()
        if rt is not None and rt.running:
            return rt
        if isinstance(self.provider, ActorRef):
            host = self.provider.runtime
            if isinstance(host, Runtime) and host.running:
                return host  # the provider's own runtime hosts the run
        if not self._warned.done and Runtime.running_in_process():
            self._warned.done = True
            warnings.warn(
                f"{self!r} found no Runtime for its run: none is current in this task and the agent is not "
                "bound, although a Runtime is running in this process (a server's lifespan runtime is not "
                "seen by its request handlers). The run uses a private runtime — no shared ProviderActor, "
                "budgets or recorders. Pass runtime=rt, or bind the agent once: agent.bind(rt). "
                "(This warning is given once per agent.)",
                RuntimeWarning,
                stacklevel=stacklevel,
            )
        return None

    @asynccontextmanager
    async def _private(self) -> AsyncIterator[Runtime]:
        """A runtime made for one run (or one batch) of this agent when none is running.

        It closes no provider, as a runtime of the caller's would: the providers are the caller's — this
        agent's, and those of the agents its runs delegate to or hand off to, which run in it too — and other
        runs may still use them (one whose ``aclose()`` is final would be broken for the next run).  It is
        marked as such (:class:`_PrivateRuntime`), so every agent binding in it spawns its provider's actor
        the private way.  (Its connection pool does not leak: the HTTP transports close what they own when
        their event loop ends.)
        """
        # (Not counted as a runtime running in the process: another run's check for a user's runtime it cannot
        # see — the warning of :meth:`_current` — must not find this one.)
        async with PrivateRuntime() as rt:
            mark = rt.service(_PrivateRuntime, _PrivateRuntime)
            try:
                yield rt
            finally:
                agents: list[Agent[Any]] = [*mark.agents, self]
                for agent in agents:
                    agent._forget(rt)

    def _forget(self, rt: Runtime) -> None:
        """Drop what :meth:`_bind` cached for a private runtime that is closing."""
        self._bound.pop(id(rt), None)

    def _bind(self, rt: Runtime, *, private: bool = False) -> _Bound:
        """The agent's actors in ``rt``, spawned on first use and cached while ``rt`` runs.

        In a private runtime (one ``agent.run``, ``stream`` or ``run_many`` made for itself: :meth:`_private`
        marks it, and ``private`` says so too) the provider actor is not the runtime's shared one, which it
        closes when it exits: the provider is the caller's.  That holds for every agent bound there — a
        delegated child run (``as_tool``, given the runtime by its parent, knows nothing of ``private``) and
        a handoff target included — which is why the runtime's mark decides, not the flag of one call.
        Whoever made the private runtime drops the entries (:meth:`_forget`).  Only the first run of an
        agent in a runtime gets here: later ones take the cached entry above.
        """
        bound = self._bound.get(id(rt))
        if bound is not None and bound.rt is rt and not bound.provider.stopped:
            return bound
        # Forget runtimes that have closed: the cache must not keep them alive.
        for key in [k for k, b in self._bound.items() if not b.rt.running]:
            del self._bound[key]
        mark = rt.service(_PrivateRuntime, _PrivateRuntime if private else _no_mark)
        if mark is not None:
            mark.agents.add(self)
        provider = self.provider
        if isinstance(provider, ActorRef):
            ref = provider
            native = provider_carries_tools(ref)
        else:
            # The runtime's shared actor, held for this agent: one made only for agents is released (stopped, its
            # connections closed) once they are all collected — a provider made per request does not stay.
            ref = mark.provider_actor(rt, provider) if mark is not None else bound_provider_actor(rt, provider, self)
            native = native_tools_for(provider)
        tools = None
        if self._all_tools:
            # Stateless and the agent's alone: asks to it take the direct path (in the run's task).
            tools = rt.spawn(
                ToolExecutorActor(self._all_tools),
                name=f"tools:{self.name or 'agent'}",
                concurrency=_EXECUTOR_CONCURRENCY,
                mailbox_size=1024,
            )
            # The runtime holds its agents weakly: one dropped (made per request, say) takes its executor with it,
            # and what the tools close over — not kept until the runtime exits.  Graceful (rt.stop drains), though
            # no run can be in flight: a run holds its agent (its caller's frame, or the stream's handle).
            rt.when_collected(self, rt.stop, tools)
        toolsets = None
        if self.toolsets:
            toolsets = _ToolsetTools(ToolsetView(self._all_tools, self.toolsets, self._owners), self._config, tools)
        rt.service(RUN_RESOLVER, lambda: partial(resolve_run, rt))  # rt.run_ref(run_id) finds this layer's runs
        bound = self._bound[id(rt)] = _Bound(rt, ref, native, tools, rt.fanout.with_recorders(self.recorders), toolsets)
        if self.recorders:  # the runtime's exit flushes them with its own (held weakly: it does not keep us alive)
            rt.flush_at_exit(self.recorders, owner=self)
        return bound

    async def _toolset_tools(self, bound: _Bound) -> tuple[LoopConfig, ActorRef | None]:
        """This run's config and tool executor: the toolsets listed now, the tables rebuilt if that changed.

        :raises ToolsetError: a toolset could not list its tools.
        :raises ToolNameClashError: two tools share a name.
        :raises ValueError: ``tool_choice`` does not fit the tools listed.
        """
        state = bound.toolsets
        assert state is not None
        if await state.view.refresh(bound.rt):
            tools = state.view.tools
            _check_choice(self.tool_choice, [t.name for t in tools] + [h.name for h in self.handoffs])
            state.config = attrs.evolve(
                self._config,
                tool_specs=tuple(t.spec for t in tools) + tuple(h.spec for h in self.handoffs),
                read_only=frozenset(t.name for t in tools if t.read_only),
            )
            state.executor = (
                bound.rt.spawn(
                    ToolExecutorActor(tools),
                    name=f"tools:{self.name or 'agent'}",
                    concurrency=_EXECUTOR_CONCURRENCY,
                    mailbox_size=1024,
                )
                if tools
                else None
            )
            if state.executor is not None:  # (as in _bind; the one it replaces may still serve runs in flight)
                bound.rt.when_collected(self, bound.rt.stop, state.executor)
        return state.config, state.executor

    def _controller(
        self,
        rt: Runtime,
        options: RunOptions,
        *,
        extra: Recorder | None = None,
        stream: bool = False,
        private: bool = False,
        listed: tuple[LoopConfig, ActorRef | None] | None = None,
        run: tuple[str, EventSink | None] | None = None,
        messages: Sequence[Message] = (),
        resume: tuple[PausedRun, Mapping[str, bool | str]] | None = None,
        seats: Callable[[str, str | None], Awaitable[Seat]] | None = None,
    ) -> tuple[LoopController, EventSink | None]:
        origin = lineage.current()
        if origin is not None:  # (a top-level run nests nowhere: no call)
            lineage.check_depth(origin)
        bound = self._bind(rt, private=private)
        run_id, sink = self._new_run(bound, extra, origin) if run is None else run
        config, tools = (self._config, bound.tools) if listed is None else listed
        # Positionally, and the options as the one value they are (LoopController.of): keywords cost a tenth of
        # the setup.
        controller = LoopController.of(
            config,
            bound.provider,
            tools,
            resume[0].messages if resume is not None else messages,
            resume,
            bound.native,
            sink,
            run_id,
            options,
            stream,
            origin,
            rt,
            (self._seats(rt, private) if seats is None else seats) if self.handoffs else None,
        )
        return controller, sink

    @staticmethod
    def _new_run(
        bound: _Bound, extra: Recorder | None, origin: lineage.Origin | None = None
    ) -> tuple[str, EventSink | None]:
        """A new run's id and event sink (``None`` when nobody listens).

        A child run (``origin``: a parent's tool step started it) reports to its parent's recorders too,
        and its events carry the parent's run id.
        """
        run_id = new_run_id()
        fanout = bound.fanout if extra is None else bound.fanout.with_recorders((extra,))
        if origin is None:
            return run_id, (EventSink(fanout, run_id=run_id) if fanout else None)
        parent_sink = origin.link.sink
        if parent_sink is not None:
            fanout = fanout.with_recorders(parent_sink.fanout.recorders)
        return run_id, (EventSink(fanout, run_id=run_id, parent_run_id=origin.parent_run_id) if fanout else None)

    # -- handoffs: the agents a run may be handed to, as seats in a runtime ---------------------------

    def _reachable(self) -> dict[str, Agent[Any]]:
        """Every agent this one can hand a run to, directly or through others, by name (itself included).

        Worked out once per agent (agents are immutable).

        :raises ValueError: two different agents share a name (a run could not say which answered), or a
            handoff names an agent that is not reachable.
        """
        if self._graph is not None:
            return self._graph
        found: dict[str, Agent[Any]] = {}
        todo: list[Agent[Any]] = [self]
        while todo:
            agent = todo.pop()
            name = agent.name or ""
            known = found.get(name)
            if known is agent:
                continue
            if known is not None:
                raise ValueError(f"two different agents are named {name!r} among the handoffs of {self!r}")
            found[name] = agent
            todo.extend(h.target for h in agent.handoffs if isinstance(h.target, Agent))
        unknown = sorted({h.target_name for a in found.values() for h in a.handoffs} - found.keys())
        if unknown:
            raise ValueError(
                f"handoffs name agents that {self!r} cannot reach: {unknown} (known: {sorted(found)})"
            )
        # A handoff's input_filter is the handoff's own: two agents may each hand off through a tool of the same
        # name (both have `transfer_to_billing`), one with a filter and one without.
        filters = {
            (name, h.name): h.input_filter
            for name, agent in found.items()
            for h in agent.handoffs
            if h.input_filter is not None
        }
        object.__setattr__(self, "_filters", filters)
        object.__setattr__(self, "_graph", found)
        return found

    def _seats(self, rt: Runtime, private: bool) -> Callable[[str, str | None], Awaitable[Seat]]:
        """How a run of this agent in ``rt`` finds the seat of an agent it is handed to (by name).

        One resolver per run: it follows the agent answering (the first one; each seat it gives; the agent a
        resumed run was paused in), since a handoff tool's name says which filter applies only together with
        the agent that offered it.
        """
        agents = self._reachable()
        filters = self._filters
        answering = [self.name or ""]

        async def seat(name: str, via: str | None) -> Seat:
            agent = agents.get(name)
            if agent is None:
                raise ValueError(f"no agent named {name!r} is reachable through the handoffs of {self!r}")
            bound = agent._bind(rt, private=private)
            config, tools = (agent._config, bound.tools) if not agent.toolsets else await agent._toolset_tools(bound)
            input_filter = filters.get((answering[0], via)) if via is not None else None
            answering[0] = name
            return Seat(config, bound.provider, tools, bound.native, input_filter)

        return seat

    async def _listed_controller(
        self,
        rt: Runtime,
        options: RunOptions,
        *,
        extra: Recorder | None = None,
        stream: bool = False,
        private: bool = False,
        input_key: str | None = None,
        messages: Sequence[Message] = (),
        resume: tuple[PausedRun, Mapping[str, bool | str]] | None = None,
    ) -> tuple[LoopController, EventSink | None]:
        """:meth:`_controller` for an agent with toolsets: they are listed first, as part of the run.

        A run resumed from a pause made after a handoff (:func:`_elsewhere`) seats the agent it paused in first
        the same way — its toolsets listed — so that a seat that cannot be had fails here, before the run starts,
        and the pause is left to be resumed again (as a listing of this agent's own toolsets that fails is).

        The listing reports to the run's sink (a connection's ``mcp.*`` events belong to the run that
        caused them).  :raises ToolsetError, ToolNameClashError, ValueError: see :meth:`_toolset_tools`.
        """
        origin = lineage.current()
        if origin is not None:  # (a top-level run nests nowhere: no call)
            lineage.check_depth(origin)
        bound = self._bind(rt, private=private)
        run = self._new_run(bound, extra, origin)
        limit = _listing_limit(options.deadline)
        listed: tuple[LoopConfig, ActorRef | None] | None = None
        seats: Callable[[str, str | None], Awaitable[Seat]] | None = None
        whose = self
        with use_sink(run[1]), anyio.move_on_after(limit) as listing:
            if self.toolsets:
                listed = await self._toolset_tools(bound)
            if resume is not None and _elsewhere(self, resume[0]):
                paused_in = resume[0].agent
                assert paused_in is not None  # (_elsewhere)
                whose = self._reachable()[paused_in]
                seats = self._seats(rt, private)
                seats = _seated_first(seats, paused_in, await seats(paused_in, None))
        if listing.cancelled_caught:
            raise ToolsetError(
                f"the toolsets of {whose!r} were not listed within the run's deadline ({max(limit, 0):g} s left); "
                "the run did not start"
            )
        return self._controller(
            rt, options, extra=extra, stream=stream, private=private, listed=listed, run=run,
            messages=messages, resume=resume, seats=seats,
        )

    def _run_in(
        self, rt: Runtime, messages: tuple[Message, ...], options: RunOptions = NO_OPTIONS, *, private: bool = False
    ) -> Awaitable[RunResult[OutputT]]:
        """The run's coroutine: the controller's own when there is no sink to install (no frame of ours)."""
        if self.toolsets:
            return self._run_listed(rt, messages, options, private=private)
        controller, sink = self._controller(rt, options, private=private, messages=messages)
        if sink is None and current_sink() is None:
            return controller.run()  # the hot path: nothing to install
        return _drive(controller, sink)

    def _run_counted(
        self,
        rt: Runtime,
        options_at: Callable[[int], RunOptions],
        messages: tuple[Message, ...],
        index: int,
        *,
        private: bool = False,
    ) -> tuple[Awaitable[RunResult[OutputT]], Spent]:
        """:meth:`_run_in` for a batch's input ``index``: the run, and its state (what it has counted), so that the
        slot of a run that raises — cancelled with its batch, or failing — says what it spent (:mod:`.batch`).  The
        same steps as :meth:`_run_in` (keep them alike), which stays as it is: ``agent.run``'s hot path builds no
        tuple."""
        options = options_at(index)
        if self.toolsets:
            later = SpentLater()
            return self._run_listed(rt, messages, options, private=private, spent=later), later
        controller, sink = self._controller(rt, options, private=private, messages=messages)
        if sink is None and current_sink() is None:
            return controller.run(), controller.state
        return _drive(controller, sink), controller.state

    async def _run_listed(
        self, rt: Runtime, messages: tuple[Message, ...], options: RunOptions, *, private: bool,
        spent: SpentLater | None = None,
    ) -> RunResult[OutputT]:
        """A run of an agent with toolsets: list them (cheap when nothing changed), then run (``spent``: a batch's,
        given the run's state once it has one)."""
        controller, sink = await self._listed_controller(rt, options, private=private, messages=messages)
        if spent is not None:
            spent.state = controller.state
        return await _drive(controller, sink)


def _elsewhere(agent: Agent[Any], paused: PausedRun) -> bool:
    """Whether ``paused`` was made in another agent than ``agent`` (after a handoff): its resume seats that one."""
    return paused.agent is not None and paused.agent != agent.name and bool(agent.handoffs)


def _seated_first(
    seats: Callable[[str, str | None], Awaitable[Seat]], name: str, seat: Seat
) -> Callable[[str, str | None], Awaitable[Seat]]:
    """``seats``, giving ``seat`` — found already, before the run started — the first time the run asks for the
    agent ``name`` a pause was made in (the controller's resume step); every other seat as ``seats`` finds it."""
    held = [seat]

    async def first(target: str, via: str | None) -> Seat:
        if held and via is None and target == name:
            return held.pop()
        return await seats(target, via)

    return first


def _listing_limit(deadline: float | None) -> float:
    """Seconds a run's toolsets may take to list: what is left of its deadline (its own, or its parent's).

    A toolset's own timeout (an MCP server's 60 s to connect and list) still applies within it.
    """
    limit = math.inf if deadline is None else deadline
    inherited = ticket.remaining()
    return limit if inherited is None else min(limit, inherited)


def _check_choice(choice: ToolChoice, names: Sequence[str]) -> None:
    """``choice`` fits tools named ``names``.  :raises ValueError: it does not."""
    if choice.forced and not names:
        raise ValueError(f"tool_choice {choice.mode!r} needs at least one tool")
    if choice.mode == "tool" and choice.name not in names:
        raise ValueError(f"tool_choice names {choice.name!r}, which is not among the tools {list(names)}")


#: The event loops :meth:`Agent.run_sync` can make (``anyio.run``'s backends).
_SYNC_BACKENDS = ("asyncio", "trio")


def _check_runtime(runtime: object) -> None:
    """:raises TypeError: ``runtime=`` was given something else than a Runtime (else an AttributeError, later)."""
    if runtime is not None and not isinstance(runtime, Runtime):
        raise TypeError(f"runtime must be a Runtime, not {type(runtime).__name__}")


def _check_usable(rt: Runtime, which: str, *, any_thread: bool = False) -> None:
    if not rt.running:
        state = "has closed" if rt.closed else "was never entered (use `async with Runtime() as rt:`)"
        raise RuntimeError(f"the Runtime {which} is not running: it {state}")
    if not any_thread and rt.thread != threading.get_ident():
        raise RuntimeError(
            f"the Runtime {which} belongs to another thread's event loop: only agent.run() is handed to that "
            "loop by itself; run the rest there with `await rt.call(fn, ...)` (e.g. an async function that "
            "consumes the stream)"
        )


async def _drive(controller: LoopController, sink: EventSink | None) -> RunResult[Any]:
    if sink is None and current_sink() is None:
        return await controller.run()  # the hot path: nothing to install
    # Installed even when None: an enclosing run's sink must not receive this run's events.
    with use_sink(sink):
        return await controller.run()


class _Launcher:
    """How an :class:`AgentRun` starts one run of an agent (:class:`~agentactors.agent.run.RunLauncher`).

    ``resume``: the run goes on from a pause (:meth:`Agent.resume_stream`), claimed when it is prepared;
    ``children``: the paused part's delegated runs, which the result keeps.
    """

    __slots__ = ("agent", "children", "messages", "options", "resume", "runtime_given")

    def __init__(
        self,
        agent: Agent[Any],
        messages: tuple[Message, ...],
        options: RunOptions,
        runtime: Runtime | None,
        *,
        resume: tuple[PausedRun, Mapping[str, bool | str]] | None = None,
        children: tuple[RunResult[Any], ...] = (),
    ) -> None:
        self.agent = agent
        self.messages = messages
        self.options = options
        self.runtime_given = runtime
        self.resume = resume
        self.children = children

    @property
    def typed(self) -> bool:
        return _typed(self._first())

    def typed_agents(self) -> Mapping[str, bool]:
        agent = self.agent
        if not agent.handoffs:
            return {}
        return {name: _typed(target) for name, target in agent._reachable().items()}

    def _first(self) -> Agent[Any]:
        """The agent answering first: a resumed run's is the one it paused in (a handoff target, maybe)."""
        agent = self.agent
        paused_in = self.resume[0].agent if self.resume is not None else None
        if paused_in is None or paused_in == agent.name or not agent.handoffs:
            return agent
        return agent._reachable().get(paused_in, agent)

    def runtime(self) -> Runtime | None:
        # One frame deeper than Agent.run's call: the warning still points at the user's `async with`.
        return self.agent._runtime(self.runtime_given, stacklevel=4)

    def private_runtime(self) -> AbstractAsyncContextManager[Runtime]:
        return self.agent._private()

    async def prepare(self, rt: Runtime, recorder: Recorder, *, private: bool) -> PreparedRun:
        agent, options, messages, resume = self.agent, self.options, self.messages, self.resume
        # A pause is claimed before the first await (of two resumes at once, one alone goes on), and left to be
        # resumed again when its run could not be made.
        key = claim_pause(resume[0]) if resume is not None else None
        try:
            if agent.toolsets or (resume is not None and _elsewhere(agent, resume[0])):
                controller, sink = await agent._listed_controller(
                    rt, options, extra=recorder, stream=True, private=private, messages=messages, resume=resume
                )
            else:
                controller, sink = agent._controller(
                    rt, options, extra=recorder, stream=True, private=private, messages=messages, resume=resume
                )
        except BaseException:
            if key is not None:
                release_pause(key)
            raise
        children = self.children
        run = partial(_adopting, children, controller, sink) if children else partial(_drive, controller, sink)
        return run, controller.cancelled_result, controller.live


def _typed(agent: Agent[Any]) -> bool:
    """Whether ``agent`` answers with a typed output (not text)."""
    output = agent._config.output
    return output is not None and output.target is not None


async def _adopting(
    children: tuple[RunResult[Any], ...], controller: LoopController, sink: EventSink | None
) -> RunResult[Any]:
    """A resumed run that keeps the paused part's children in its result (as :meth:`Agent.resume` does)."""
    result = await _drive(controller, sink)
    return attrs.evolve(result, children=children + result.children)


# --- many runs (the machinery: agentactors.agent.batch) --------------------------------------------------


async def run_many(
    rt: Runtime,
    agent: Agent[Any],
    inputs: Iterable[Prompt],
    *,
    concurrency: int = 100,
    progress: Callable[[int, int, int], Any] | None = None,
) -> list[RunResult[Any]]:
    """``agent.run_many(inputs, runtime=rt, ...)`` (see :meth:`Agent.run_many`).

    Cancellation: as :meth:`Agent.run_many`'s.
    """
    return await agent.run_many(inputs, runtime=rt, concurrency=concurrency, progress=progress)


def as_completed(
    rt: Runtime, agent: Agent[OutputT], inputs: Iterable[Prompt], *, concurrency: int = 100
) -> AsCompleted[Prompt, OutputT]:
    """``agent.as_completed(inputs, runtime=rt, ...)`` (see :meth:`Agent.as_completed`)."""
    return agent.as_completed(inputs, runtime=rt, concurrency=concurrency)
