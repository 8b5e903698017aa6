"""The ``Agent`` façade: an immutable configuration that runs the tool loop in a runtime.

``await agent.run(prompt)`` starts a :class:`~agentactors.loop.controller.LoopController`
in the current :class:`~agentactors.actors.runtime.Runtime` (or a private one when
none is running), reusing the agent's provider and tool actors there: agents given
the same provider object in one runtime share one ProviderActor
(:meth:`~agentactors.actors.provider.ProviderActor.shared`).  A run asks its
agent's own (stateless, private) ToolExecutorActor with an ordinary ask, which
takes the direct path (the handler runs in the run's task, seen by
``rt.stats()`` and cancelled by ``rt.stop()`` like any handler).
``async with agent.stream(prompt) as run`` yields the run's typed events as they
happen (``run.text_stream()`` only its answer text).  :meth:`Agent.run_many` and
:meth:`Agent.as_completed` (also reached as ``rt.run_many`` / ``rt.as_completed``)
run one agent over many inputs, with the machinery of :mod:`agentactors.batch` (one result per
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

import itertools
import logging
import math
import os
import threading
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from types import TracebackType
from typing import Any, Final, Generic, TypeAlias, cast

import anyio
import attrs
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .actors.provider import ProviderActor
from .actors.runtime import ActorRef, Runtime
from .actors.tools import ToolExecutorActor, ToolPolicy
from .batch import AsCompleted, check_concurrency, run_batch
from .events import Event, EventSink, FanOut, LLMTextDelta, Recorder, current_sink, use_sink
from .loop.controller import LoopConfig, LoopController
from .loop.nudges import DEFAULT_NUDGES, FOLLOWUPS_TOOL, Nudges
from .loop.result import RunResult
from .messages import Message, ToolChoice
from .output.config import OutputConfig
from .output.partial import jiter_available
from .output.spec import NativeOutput, OutputT, PromptedOutput, ToolOutput
from .parts import Part, is_part
from .providers.base import native_tools_for
from .settings import ModelSettings
from .tools.registry import Tool, tool
from .tools.results import ToolStatus
from .tools.toolset import Toolset, ToolsetView, check_toolsets

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
    if isinstance(prompt, str):
        return (Message.user(prompt),)
    if isinstance(prompt, Message):
        return (prompt,)
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
    """
    return f"Recorded {len(suggestions)} follow-up suggestion{'s' if len(suggestions) != 1 else ''}."


_FOLLOWUPS_TOOL: Tool[Any, Any] = tool(name=FOLLOWUPS_TOOL)(suggest_followups)


def provider_carries_tools(ref: ActorRef) -> bool:
    """Whether the provider behind a ProviderActor reference carries tools natively (default: yes).

    Read from the hosted provider's ``carries_tools``; the transport must be
    known before the first request, so it cannot be learned from a response.
    """
    provider = getattr(ref.actor, "provider", None)
    return native_tools_for(provider)


def _check_settings(settings: object) -> None:
    if settings is not None and not isinstance(settings, ModelSettings):
        raise TypeError(f"settings must be a ModelSettings, not {type(settings).__name__}")


@attrs.frozen(slots=True)
class RunOptions:
    """What one run takes beyond its messages: the keywords of :meth:`Agent.run` / :meth:`Agent.stream`.

    One value travels from the entry point to the run's :class:`~agentactors.loop.controller.LoopController`
    instead of a keyword per option through every layer.  ``NO_OPTIONS`` (all defaults) is shared, so a
    plain ``agent.run(prompt)`` builds none.
    """

    on_token: Callable[[str], None] | None = None
    deps: Any = attrs.field(default=None, repr=False)
    settings: ModelSettings | None = None
    deadline: float | None = None
    priority: int | None = None
    input_key: str | None = None


NO_OPTIONS: Final = RunOptions()


def _options(
    on_token: Callable[[str], None] | None,
    deps: Any,
    settings: ModelSettings | None,
    deadline: float | None,
    priority: int | None,
    input_key: str | None,
) -> RunOptions:
    """The run's options, checked; the shared default when none is given (the hot path allocates nothing)."""
    if (
        on_token is None
        and deps is None
        and settings is None
        and deadline is None
        and priority is None
        and input_key is None
    ):
        return NO_OPTIONS
    _check_settings(settings)
    if input_key is not None and not isinstance(input_key, str):
        raise TypeError(f"input_key must be a str, not {type(input_key).__name__}")
    return RunOptions(on_token, deps, settings, deadline, priority, input_key)


def _to_tools(value: Iterable[Tool[Any, Any] | Callable[..., Any]]) -> tuple[Tool[Any, Any], ...]:
    out: list[Tool[Any, Any]] = []
    for t in value:
        if isinstance(t, Tool):
            out.append(t)
        elif callable(t):
            out.append(tool(t))
        else:
            raise TypeError(f"tools must be @tool functions or plain functions, not {type(t).__name__}")
    return tuple(out)


def _members(provider: Any, depth: int = 0) -> Iterable[tuple[str, str | None, str | None, int | None]]:
    """``(name, wire, host, port)`` of each vendor provider in a stack, read from public attributes only.

    A fallback's ``members`` and a decorator's ``inner`` are followed; an HTTP provider says its
    ``wire_name`` and ``base_url``; anything else (a scripted or user provider) is a member with no wire.
    """
    if depth > 16:
        return
    members = getattr(provider, "members", None)
    if isinstance(members, tuple | list):
        for member in members:
            yield from _members(member, depth + 1)
        return
    inner = getattr(provider, "inner", None)
    if inner is not None and inner is not provider:
        yield from _members(inner, depth + 1)
        return
    name = str(getattr(provider, "name", None) or type(provider).__name__)
    wire = getattr(provider, "wire_name", None)
    base_url = getattr(provider, "base_url", None)
    host: str | None = None
    port: int | None = None
    if isinstance(base_url, str):
        try:
            url = httpx.URL(base_url)
            host, port = url.host or None, url.port or (443 if url.scheme == "https" else 80)
        except (httpx.InvalidURL, TypeError, ValueError):
            pass
    yield name, wire if isinstance(wire, str) else None, host, port


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


def _to_recorders(value: Iterable[Recorder]) -> tuple[Recorder, ...]:
    recorders = tuple(value)
    for r in recorders:
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

    :param provider: an :class:`~agentactors.providers.base.LLMProvider` (agents given the
        same provider object share one ProviderActor in a runtime) or an
        :class:`~agentactors.actors.runtime.ActorRef` to a ProviderActor spawned with its own budgets.
    :param tools: ``@tool`` functions (plain functions are wrapped).
    :param toolsets: sources of tools listed when a run starts (:class:`~agentactors.Toolset`; an MCP
        server from :mod:`agentactors.mcp` is one).  A name clash with another toolset or a plain tool
        raises :class:`~agentactors.ToolNameClashError` at the first run; a toolset that cannot list its
        tools makes the run raise :class:`~agentactors.ToolsetError`.
    :param system: the system prompt.
    :param model: the model to call (default: the provider's).
    :param tool_choice: applies to the first step of a run; later steps use ``auto``.
    :param max_steps: model calls per run before it ends with ``bounded=True``.
    :param max_empty_steps: think-only steps in a row before it ends with ``bounded=True``.
    :param max_tool_result_chars: the operator's cap; longer results are truncated.
    :param context_budget_chars: trim old tool results so requests stay under this size.
    :param on_tool_status: ``{ToolStatus: "continue" | "end_turn" | "raise"}``.
    :param tool_policy: ``(ToolCall, ToolContext) -> None`` to allow or a reason to deny.
    :param nudges: ``True`` (the default policies), ``False`` (none) or a :class:`Nudges`.
    :param followups: add the built-in ``suggest_followups`` tool (``RunResult.followups``).
    :param recorders: receive the events of this agent's runs.
    :param name: the agent's name, in events and tool contexts.
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

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.provider, ActorRef) and not callable(getattr(self.provider, "complete", None)):
            raise TypeError(
                f"provider must be an LLMProvider or an ActorRef to a ProviderActor, not {type(self.provider).__name__}"
            )
        if not isinstance(self.tool_choice, ToolChoice):
            raise TypeError("tool_choice must be a ToolChoice")
        all_tools = self.tools + ((_FOLLOWUPS_TOOL,) if self.followups else ())
        names = [t.name for t in all_tools]
        if len(set(names)) != len(names):
            raise ValueError(f"tool names must be unique: {names}")
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
        output = OutputConfig.build(
            self.output_type, retries=self.output_retries, validator=self.output_validator, tool_names=names
        )
        config = LoopConfig(
            tool_specs=tuple(t.spec for t in all_tools),
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
            agent_name=self.name,
            run_info=_run_info(self.provider, self.model),
            settings=self.settings or None,
            output=output,
        )
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_all_tools", all_tools)

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

        A runtime belongs to its event loop's thread.  From another thread, run in that loop:
        ``anyio.from_thread.run(bound.run, prompt, token=token)`` with a token taken in the loop
        (``anyio.lowlevel.current_token()`` in the lifespan), or through a ``BlockingPortal``; a run
        started in the wrong thread is refused with a :class:`RuntimeError` that says so.

        :raises TypeError: ``runtime`` is not a :class:`~agentactors.actors.runtime.Runtime`.
        """
        if not isinstance(runtime, Runtime):
            raise TypeError(f"bind() takes a Runtime, not {type(runtime).__name__}")
        bound: Agent[OutputT] = attrs.evolve(self)
        object.__setattr__(bound, "_home", runtime)
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
            entered — or belongs to another thread's event loop.

        ``deadline`` (seconds) bounds the whole run — budget waits at the ProviderActor, retries'
        backoff (``with_retry`` starts no wait that would end past it), model calls and tool
        steps: a run past it ends with :class:`~agentactors.errors.RunDeadlineExceeded` in
        ``RunResult.error`` (it is not raised), its in-flight request cancelled.  ``priority``
        (an int, higher first; default ``0``) is the run's class at the ProviderActor: an
        interactive run with ``priority=1`` is served before batch runs at ``0``, and lower
        classes are never starved (``ProviderActor(max_overtakes=)``).  A run started inside
        another run's work (a tool that runs an agent) inherits its age, its class and its
        earlier deadline.

        Errors: provider failures end the run with ``generation_failed=True``
        (see :class:`RunResult`); a tool status routed to ``"raise"`` raises
        :class:`~agentactors.errors.ToolStatusError`.  Cancellation from an
        enclosing scope propagates as anyio's cancellation exception, and the
        caller's conversation is untouched.
        """
        messages = _to_messages(prompt)
        options = _options(on_token, deps, settings, deadline, priority, input_key)
        rt = self._runtime(runtime) if runtime is not None or self._home is not None else self._current()
        if rt is not None:
            return await self._run_in(rt, messages, options)
        async with self._private() as private:
            result = await self._run_in(private, messages, options, private=True)
        return result

    async def run_many(
        self,
        inputs: Iterable[Prompt],
        *,
        runtime: Runtime | None = None,
        concurrency: int = 100,
        progress: Callable[[int, int, int], Any] | None = None,
    ) -> list[RunResult[OutputT]]:
        """Run the agent on every input, at most ``concurrency`` at once; one result per input, in input order.

        In ``runtime`` (default: the current one, as for :meth:`run`, or a
        private one made for these runs).  ``progress(done, failed, total)`` is
        called after each run (``failed`` counts runs with ``generation_failed``
        or an ``error``); a progress callback that raises is logged and ignored.
        A run that fails, or raises anything that is its own failure (any
        ``Exception``, ``SystemExit``, a ``BaseException`` of its own, a
        cancellation no cancel scope asked for), becomes a failed
        :class:`RunResult` in its place (``error`` set) and never disturbs the
        others: the list always has ``len(inputs)`` results, ``results[i]``
        always ``inputs[i]``'s (docs/reliability.md, "Batches").

        :raises ValueError: ``concurrency`` is not a positive int.
        :raises KeyboardInterrupt: the batch was interrupted (a run raised it, or trio delivered
            Ctrl-C to the batch's task): the other runs are cancelled and the *same* interrupt is
            raised again, with every input's result in ``exc.results`` (finished runs' results,
            ``RunResult(cancelled=True)`` for the others).  On asyncio, ``anyio.run`` turns Ctrl-C
            into a cancellation of the main task (see Cancellation) and raises the interrupt from
            it: :func:`agentactors.batch.results_of(exc) <agentactors.batch.results_of>` finds the
            list on both backends.

        Cancellation: cancels every run and propagates; every slot is filled first and the list
        rides on the cancellation exception as ``exc.results``.
        """
        check_concurrency(concurrency)
        items = list(inputs)
        if not items:
            return []
        rt = runtime if runtime is not None else self._runtime()
        typed = self._config.output is not None
        if rt is not None:
            return await run_batch(
                items,
                _to_messages,
                partial(self._run_in, rt),
                concurrency=concurrency,
                progress=progress,
                typed=typed,
            )
        async with self._private() as private:
            results = await run_batch(
                items,
                _to_messages,
                partial(self._run_in, private, private=True),
                concurrency=concurrency,
                progress=progress,
                typed=typed,
            )
        return results

    def as_completed(
        self, inputs: Iterable[Prompt], *, runtime: Runtime | None = None, concurrency: int = 100
    ) -> AsCompleted[Prompt]:
        """Run the agent on every input and yield each :class:`RunResult` as it finishes (``async for``).

        In ``runtime`` (default: the current one, as for :meth:`run`); the runs
        start at the first ``__anext__`` and live in the runtime's task group.
        To stop early, use ``async with agent.as_completed(...) as results:`` or
        call ``aclose()``: unfinished runs are cancelled.  Failed runs are
        yielded like the others (see :meth:`run_many`): one result per input.
        A ``KeyboardInterrupt`` in a run cancels the others; the results
        finished before it are yielded, then the iteration raises it.

        :raises RuntimeError: no runtime is running (the runs need one to live in).
        :raises ValueError: ``concurrency`` is not a positive int.

        Cancellation: the runs belong to the runtime, not to the consumer: cancelling the consumer
        leaves them running until ``aclose()``, the end of ``async with``, or the runtime's exit.
        """
        rt = runtime if runtime is not None else self._runtime()
        if rt is None:
            raise RuntimeError(
                "as_completed needs a running Runtime for its runs: call it inside `async with Runtime() as rt:` "
                "(or use run_many, which makes one)"
            )
        return AsCompleted(
            rt,
            list(inputs),
            _to_messages,
            partial(self._run_in, rt),
            concurrency,
            typed=self._config.output is not None,
        )

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
    ) -> AgentRun[OutputT]:
        """A handle that runs the loop and yields its events: ``async with agent.stream(p) as run``.

        ``runtime`` as for :meth:`run` (checked when the handle is entered); ``settings``, ``deadline``,
        ``priority`` and ``input_key`` as for :meth:`run`.  See :class:`AgentRun`.
        """
        options = _options(None, deps, settings, deadline, priority, input_key)
        return AgentRun(self, _to_messages(prompt), options, runtime=runtime)

    def _runtime(self, runtime: Runtime | None = None, *, stacklevel: int = 3) -> Runtime | None:
        """The runtime a run uses, in the order the module's docstring gives; ``None`` for a private one.

        :raises RuntimeError: an explicit or bound runtime that is not running, or of another thread.
        """
        rt = runtime if runtime is not None else self._home
        if rt is not None:
            _check_usable(rt, "passed as runtime=" if runtime is not None else "this agent is bound to")
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

        It does not close the caller's provider, as a runtime of the caller's would: the provider is the
        caller's, and other runs may still use it.  (Its connection pool does not leak: the HTTP
        transports close what they own when their event loop ends.)
        """
        async with Runtime() as rt:
            try:
                yield rt
            finally:
                self._forget(rt)

    def _forget(self, rt: Runtime) -> None:
        """Drop what :meth:`_bind` cached for a private runtime that is closing."""
        self._bound.pop(id(rt), None)

    def _bind(self, rt: Runtime, *, private: bool = False) -> _Bound:
        """The agent's actors in ``rt``, spawned on first use and cached while ``rt`` runs.

        In a ``private`` runtime (one ``agent.run`` or ``run_many`` made for itself) the provider
        actor is spawned directly: the runtime would otherwise close the caller's
        provider when the run ends.  Whoever made the private runtime drops its entry (:meth:`_forget`).
        """
        bound = self._bound.get(id(rt))
        if bound is not None and bound.rt is rt and not bound.provider.stopped:
            return bound
        # Forget runtimes that have closed: the cache must not keep them alive.
        for key in [k for k, b in self._bound.items() if not b.rt.running]:
            del self._bound[key]
        provider = self.provider
        if isinstance(provider, ActorRef):
            ref = provider
            native = provider_carries_tools(ref)
        else:
            if private:
                actor = ProviderActor(provider)
                ref = rt.spawn(actor, name="provider", concurrency=actor.spawn_concurrency)
            else:
                ref = ProviderActor.shared(rt, provider)
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
        toolsets = None
        if self.toolsets:
            toolsets = _ToolsetTools(ToolsetView(self._all_tools, self.toolsets), self._config, tools)
        bound = self._bound[id(rt)] = _Bound(rt, ref, native, tools, rt.fanout.with_recorders(self.recorders), toolsets)
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
            _check_choice(self.tool_choice, [t.name for t in tools])
            state.config = attrs.evolve(
                self._config,
                tool_specs=tuple(t.spec for t in tools),
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
    ) -> tuple[LoopController, EventSink | None]:
        bound = self._bind(rt, private=private)
        run_id, sink = self._new_run(bound, extra) if run is None else run
        config, tools = (self._config, bound.tools) if listed is None else listed
        controller = LoopController(
            config,
            bound.provider,
            tools,
            native=bound.native,
            sink=sink,
            run_id=run_id,
            deps=options.deps,
            on_text=options.on_token,
            stream=stream,
            settings=options.settings,
            deadline=options.deadline,
            priority=options.priority,
            input_key=options.input_key,
        )
        return controller, sink

    @staticmethod
    def _new_run(bound: _Bound, extra: Recorder | None) -> tuple[str, EventSink | None]:
        """A new run's id and event sink (``None`` when nobody listens)."""
        run_id = new_run_id()
        fanout = bound.fanout if extra is None else bound.fanout.with_recorders((extra,))
        return run_id, (EventSink(fanout, run_id=run_id) if fanout else None)

    async def _listed_controller(
        self,
        rt: Runtime,
        options: RunOptions,
        *,
        extra: Recorder | None = None,
        stream: bool = False,
        private: bool = False,
        input_key: str | None = None,
    ) -> tuple[LoopController, EventSink | None]:
        """:meth:`_controller` for an agent with toolsets: they are listed first, as part of the run.

        The listing reports to the run's sink (a connection's ``mcp.*`` events belong to the run that
        caused them).  :raises ToolsetError, ToolNameClashError, ValueError: see :meth:`_toolset_tools`.
        """
        bound = self._bind(rt, private=private)
        run = self._new_run(bound, extra)
        with use_sink(run[1]):
            listed = await self._toolset_tools(bound)
        return self._controller(rt, options, extra=extra, stream=stream, private=private, listed=listed, run=run)

    def _run_in(
        self, rt: Runtime, messages: tuple[Message, ...], options: RunOptions = NO_OPTIONS, *, private: bool = False
    ) -> Awaitable[RunResult[OutputT]]:
        """The run's coroutine: the controller's own when there is no sink to install (no frame of ours)."""
        if self.toolsets:
            return self._run_listed(rt, messages, options, private=private)
        controller, sink = self._controller(rt, options, private=private)
        if sink is None and current_sink() is None:
            return controller.run(messages)  # the hot path: nothing to install
        return _drive(controller, sink, messages)

    async def _run_listed(
        self, rt: Runtime, messages: tuple[Message, ...], options: RunOptions, *, private: bool
    ) -> RunResult[OutputT]:
        """A run of an agent with toolsets: list them (cheap when nothing changed), then run."""
        controller, sink = await self._listed_controller(rt, options, private=private)
        return await _drive(controller, sink, messages)


def _check_choice(choice: ToolChoice, names: Sequence[str]) -> None:
    """``choice`` fits tools named ``names``.  :raises ValueError: it does not."""
    if choice.forced and not names:
        raise ValueError(f"tool_choice {choice.mode!r} needs at least one tool")
    if choice.mode == "tool" and choice.name not in names:
        raise ValueError(f"tool_choice names {choice.name!r}, which is not among the tools {list(names)}")


def _check_usable(rt: Runtime, which: str) -> None:
    if not rt.running:
        state = "has closed" if rt.closed else "was never entered (use `async with Runtime() as rt:`)"
        raise RuntimeError(f"the Runtime {which} is not running: it {state}")
    if rt.thread != threading.get_ident():
        raise RuntimeError(
            f"the Runtime {which} belongs to another thread's event loop; run in that loop instead "
            "(anyio.from_thread.run(agent.run, prompt, token=...) with a token taken there, or a BlockingPortal)"
        )


async def _drive(controller: LoopController, sink: EventSink | None, messages: tuple[Message, ...]) -> RunResult[Any]:
    if sink is None and current_sink() is None:
        return await controller.run(messages)  # the hot path: nothing to install
    # Installed even when None: an enclosing run's sink must not receive this run's events.
    with use_sink(sink):
        return await controller.run(messages)


# --- streaming -----------------------------------------------------------------------------------


class _ChannelRecorder:
    """Forwards a run's events to its stream handle; never blocks (the buffer is unbounded)."""

    __slots__ = ("_send",)

    def __init__(self, send: MemoryObjectSendStream[Event]) -> None:
        self._send = send

    def record(self, event: Event) -> None:
        try:
            self._send.send_nowait(event)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the consumer left: the run goes on without it


class AgentRun(Generic[OutputT]):
    """A run in progress, from :meth:`Agent.stream`; generic in the agent's output type.

    ``async with agent.stream(prompt) as run:`` starts the run; ``async for event
    in run`` yields the same typed events recorders receive (``run.started``,
    ``llm.request``, ``llm.text_delta``, ``tools.started``, ``tools.finished``,
    ``step.finished``, ``run.finished``, ...; see :mod:`agentactors.events` for
    their classes, e.g. ``isinstance(event, ToolEvent)``) and ends after the run
    finished.  ``run.text_stream()`` yields only the answer text.

    ``run.cancel()`` cancels the run (its provider request and running tools
    included); it then ends with ``RunResult(cancelled=True)`` whose messages
    are the input messages.  Leaving the block before the run finished cancels
    it the same way — so does a consumer that goes away: a cancelled request
    handler, a closed ``text_stream()`` generator, a handle dropped unfinished.
    ``run.result`` is the :class:`RunResult` once finished; ``await run.wait()``
    waits for it.  An exception the run raised (e.g.
    :class:`~agentactors.errors.ToolStatusError`) is raised by ``wait()``,
    ``result`` and when the block is left.  Cancellation from an enclosing
    scope propagates as anyio's cancellation exception.

    The run works in a task of its runtime (the one :meth:`Agent.run` would
    use; a private one is opened by the handle and closed when it is left), not
    in the consumer's task: the consumer may be an async generator that a web
    framework abandons, and leaving the handle from another task — as a
    generator's finaliser does — still cancels the run and waits for it.

    ``run.partial_output()`` yields the typed result as it streams in — successively more complete
    values, then the final validated one — a filter over the same events, like :meth:`text_stream`.
    """

    def __init__(
        self,
        agent: Agent[OutputT],
        messages: tuple[Message, ...],
        options: RunOptions | None = None,
        *,
        runtime: Runtime | None = None,
    ) -> None:
        self._agent = agent
        self._messages = messages
        self._options = NO_OPTIONS if options is None else options
        self._runtime = runtime
        self._entered = False
        self._stack: AsyncExitStack | None = None
        self._receive: MemoryObjectReceiveStream[Event] | None = None
        self._state = _RunState()

    async def __aenter__(self) -> AgentRun[OutputT]:
        """Start the run.

        :raises RuntimeError: entered twice; or ``runtime=`` (or the bound runtime) is not running or
            belongs to another thread's loop.
        """
        if self._entered:
            raise RuntimeError("an AgentRun can be entered only once")
        self._entered = True
        rt = self._agent._runtime(self._runtime)
        private = rt is None
        stack: AsyncExitStack | None = None
        if rt is None:
            stack = AsyncExitStack()
            await stack.__aenter__()
        send, receive = anyio.create_memory_object_stream[Event](math.inf)
        try:
            if stack is not None:
                rt = await stack.enter_async_context(self._agent._private())
            assert rt is not None
            agent, recorder = self._agent, _ChannelRecorder(send)
            if agent.toolsets:
                controller, sink = await agent._listed_controller(
                    rt, self._options, extra=recorder, stream=True, private=private
                )
            else:
                controller, sink = agent._controller(rt, self._options, extra=recorder, stream=True, private=private)
            # The task holds the run's state, never this handle: a handle nobody holds can be collected,
            # and its finaliser cancels the run.
            rt.spawn_task(self._state.work, controller, sink, send, self._messages, name="agent.stream")
        except BaseException:
            send.close()
            receive.close()
            if stack is not None:
                await stack.__aexit__(None, None, None)
            raise
        self._receive = receive
        self._stack = stack
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        """Cancel the run unless it finished, wait for it to end, close a private runtime.

        Cancellation: the wait for the cancelled run to end is shielded (it ends at its next
        checkpoint; its HTTP request is closed on the way), so a cancelled consumer still leaves
        nothing running; the consumer's cancellation then propagates.
        """
        await self._state.close()
        if self._receive is not None:
            self._receive.close()
        suppressed = None
        if self._stack is not None:
            stack, self._stack = self._stack, None
            suppressed = await stack.__aexit__(exc_type, exc, tb)
        error = self._state.error
        if exc_type is None and error is not None:
            raise error
        return suppressed

    def __del__(self) -> None:
        # A handle dropped while its run goes on (a consumer that vanished without leaving the block): the
        # run must not go on spending tokens for nobody.
        state = getattr(self, "_state", None)
        if state is not None and self._entered:
            state.abandon()
            receive = getattr(self, "_receive", None)
            if receive is not None and threading.get_ident() == state.thread:
                receive.close()  # synchronous; like the cancel, only safe in the loop's own thread

    def __aiter__(self) -> AgentRun[OutputT]:
        return self

    async def __anext__(self) -> Event:
        if self._receive is None:
            raise RuntimeError("iterate an AgentRun inside `async with agent.stream(...) as run:`")
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def _values(self, pick: Callable[[Event], Any]) -> AsyncIterator[Any]:
        """The run's events mapped by ``pick`` (``None``: skipped), entering and leaving the run if not entered.

        The seam for filtered views of a run (:meth:`text_stream`; typed partial output next).
        """
        if self._entered:
            async for event in self:
                value = pick(event)
                if value is not None:
                    yield value
            return
        async with self:
            async for event in self:
                value = pick(event)
                if value is not None:
                    yield value

    def text_stream(self, *, min_interval: float | None = None) -> AsyncIterator[str]:
        """The answer text as it streams: ``async for text in run.text_stream(): ...``.

        Only ``llm.text_delta`` pieces (never think blocks, tool-call JSON or other events).  With
        ``min_interval`` (seconds), pieces arriving closer together are joined: a piece is yielded at
        most every ``min_interval`` seconds (the first at once), and whatever arrived meanwhile is
        joined into the next — the same text, in fewer, larger pieces (for a UI that repaints per
        piece, or an SSE stream that should not send a frame per token).

        Usable inside ``async with agent.stream(p) as run:`` (consume it or ``async for event in run``,
        not both), or on its own — ``agent.stream(p).text_stream()`` — when it enters the run itself
        and leaves it when the iteration ends or the generator is closed (``aclose()``, or dropped
        by its consumer): the run is cancelled with it.

        :raises ValueError: ``min_interval`` is negative.

        Cancellation: a cancelled consumer leaves the generator; a run it entered is cancelled (and
        waited for) on the way out.
        """
        if min_interval is not None and min_interval < 0:
            raise ValueError(f"min_interval must be >= 0, not {min_interval!r}")
        if not min_interval:
            return self._values(_text_of)
        return self._debounced(min_interval)

    async def _debounced(self, interval: float) -> AsyncIterator[str]:
        if not self._entered:
            async with self:
                async for text in self._joined(interval):
                    yield text
            return
        async for text in self._joined(interval):
            yield text

    async def _joined(self, interval: float) -> AsyncIterator[str]:
        """Text pieces, those arriving within ``interval`` of the last yield joined into one.

        Waits by sleeping while pieces gather in the (unbounded) buffer, then takes what is there
        without blocking: a receive is never cancelled half-way, so no piece can be lost.
        """
        receive = self._receive
        if receive is None:
            raise RuntimeError("iterate an AgentRun inside `async with agent.stream(...) as run:`")
        due = -math.inf
        pending: list[str] = []
        ended = False
        while not ended:
            try:
                event = await receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                break
            text = _text_of(event)
            if text is None:
                continue
            pending.append(text)
            wait = due - anyio.current_time()
            if wait > 0:
                await anyio.sleep(wait)
            while True:
                try:
                    event = receive.receive_nowait()
                except anyio.WouldBlock:
                    break
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    ended = True
                    break
                text = _text_of(event)
                if text is not None:
                    pending.append(text)
            yield "".join(pending)
            pending.clear()
            due = anyio.current_time() + interval

    def partial_output(self) -> AsyncIterator[OutputT]:
        """The typed result as it streams: ``async for partial in run.partial_output(): ...``.

        Successively more complete values while the output tool's arguments or the answer's JSON stream
        in — each one a value of the output type (a JSON prefix that does not validate yet, such as an
        object whose required field has not begun, is skipped; a value equal to the last is not
        repeated) — then the final validated value, the run's ``result.output``.  An answer that is
        refused and asked again streams its partial values too: only the last value is the validated
        one.  A run that ends without a valid answer yields no final value (its ``result`` says why).
        For ``output_type=str``: the answer text so far, growing piece by piece, then the whole answer.

        Usable like :meth:`text_stream`: inside ``async with agent.stream(p) as run:`` or on its own
        (``agent.stream(p).partial_output()``), entering and leaving the run itself.

        :raises ImportError: a typed output needs ``jiter`` for partial JSON (``pip install
            'agentactors[jiter]'``).

        Cancellation: as :meth:`text_stream`.
        """
        if self._agent._config.output is not None and self._agent._config.output.target is not None:
            if not jiter_available():
                raise ImportError(
                    "partial_output() of a typed result parses partial JSON with jiter: "
                    "pip install 'agentactors[jiter]'"
                )
            return self._partials(_partial_of)
        return self._partials(_TextSoFar())

    async def _partials(self, pick: Callable[[Event], Any]) -> AsyncIterator[Any]:
        async for value in self._values(pick):
            yield value
        state = self._state
        if state.result is not None and state.error is None and state.result.ok:
            yield state.result.output

    def cancel(self) -> None:
        """Cancel the run; it ends with ``RunResult(cancelled=True)``.  Idempotent; no effect once finished."""
        self._state.scope.cancel()

    @property
    def done(self) -> bool:
        return self._state.done.is_set()

    @property
    def result(self) -> RunResult[OutputT]:
        """The run's result.  :raises RuntimeError: the run has not finished yet."""
        state = self._state
        if state.error is not None:
            raise state.error
        if state.result is None:
            raise RuntimeError("the run has not finished: iterate it, or `await run.wait()`")
        return state.result

    async def wait(self) -> RunResult[OutputT]:
        """Wait until the run finishes and return its result (raising what the run raised)."""
        await self._state.done.wait()
        return self.result


class _RunState:
    """What a streamed run's task and its handle share: the scope, the outcome, the end."""

    __slots__ = ("done", "error", "result", "scope", "thread")

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.result: RunResult[Any] | None = None
        self.error: BaseException | None = None
        self.thread = threading.get_ident()

    async def work(
        self,
        controller: LoopController,
        sink: EventSink | None,
        send: MemoryObjectSendStream[Event],
        messages: tuple[Message, ...],
    ) -> None:
        try:
            with send, self.scope:
                try:
                    self.result = await _drive(controller, sink, messages)
                except Exception as exc:
                    self.error = exc
        finally:
            # Also when the runtime itself cancelled the task (its exit): the handle must learn the run ended.
            if self.result is None and self.error is None:
                self.result = controller.cancelled_result(messages)
            self.done.set()

    async def close(self) -> None:
        if not self.done.is_set():
            self.scope.cancel()
            with anyio.CancelScope(shield=True):
                await self.done.wait()

    def abandon(self) -> None:
        # From a finaliser: cancelling a scope is synchronous, but only safe in the loop's own thread.
        if not self.done.is_set() and threading.get_ident() == self.thread:
            try:
                self.scope.cancel()
            except Exception:  # pragma: no cover - a finaliser must never raise
                log.debug("could not cancel an abandoned stream's run", exc_info=True)


def _partial_of(event: Event) -> Any:
    if event.type == "output.partial":
        return event.data["value"]
    return None


class _TextSoFar:
    """The answer text so far, for the partial output of a text run."""

    __slots__ = ("text",)

    def __init__(self) -> None:
        self.text = ""

    def __call__(self, event: Event) -> str | None:
        piece = _text_of(event)
        if not piece:
            return None
        self.text += piece
        return self.text


def _text_of(event: Event) -> str | None:
    if type(event) is LLMTextDelta:
        text: str = event.data["text"]
        return text
    return None


# --- many runs (the machinery: agentactors.batch) --------------------------------------------------


async def run_many(
    rt: Runtime,
    agent: Agent[Any],
    inputs: Iterable[Prompt],
    *,
    concurrency: int = 100,
    progress: Callable[[int, int, int], Any] | None = None,
) -> list[RunResult[Any]]:
    """``agent.run_many(inputs, runtime=rt, ...)`` (see :meth:`Agent.run_many`)."""
    return await agent.run_many(inputs, runtime=rt, concurrency=concurrency, progress=progress)


def as_completed(
    rt: Runtime, agent: Agent[Any], inputs: Iterable[Prompt], *, concurrency: int = 100
) -> AsCompleted[Prompt]:
    """``agent.as_completed(inputs, runtime=rt, ...)`` (see :meth:`Agent.as_completed`)."""
    return agent.as_completed(inputs, runtime=rt, concurrency=concurrency)
