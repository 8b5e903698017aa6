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
happen.  :meth:`Agent.run_many` and :meth:`Agent.as_completed` (also reached as
``rt.run_many`` / ``rt.as_completed``) run one agent over many inputs.

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
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, TypeAlias

import anyio
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .actors.provider import ProviderActor
from .actors.runtime import ActorRef, Runtime
from .actors.tools import ToolExecutorActor, ToolPolicy
from .events import Event, EventSink, FanOut, Recorder, current_sink, use_sink
from .loop.controller import LoopConfig, LoopController
from .loop.nudges import DEFAULT_NUDGES, FOLLOWUPS_TOOL, Nudges
from .loop.result import RunResult
from .messages import Message, ToolChoice
from .providers.base import native_tools_for
from .tools.registry import Tool, tool
from .tools.results import ToolStatus

__all__ = ["Agent", "AgentRun", "AsCompleted", "Prompt", "RunResult", "as_completed", "run_many"]

log = logging.getLogger("agentactors.agent")

#: What a run takes: a prompt, one message, or a conversation.
Prompt: TypeAlias = str | Message | Sequence[Message]

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
    for m in messages:
        if not isinstance(m, Message):
            raise TypeError(f"a conversation holds Message objects, not {type(m).__name__}")
    return messages


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


def _to_recorders(value: Iterable[Recorder]) -> tuple[Recorder, ...]:
    recorders = tuple(value)
    for r in recorders:
        if not callable(getattr(r, "record", None)):
            raise TypeError(f"a recorder needs a record(event) method; {type(r).__name__} has none")
    return recorders


@attrs.frozen(slots=True)
class _Bound:
    """An agent's actors in one runtime."""

    rt: Runtime
    provider: ActorRef
    native: bool
    tools: ActorRef | None
    fanout: FanOut


@attrs.frozen(slots=True, eq=False, repr=False)
class Agent:
    """An immutable agent configuration.  See docs/architecture.md for every parameter.

    :param provider: an :class:`~agentactors.providers.base.LLMProvider` (agents given the
        same provider object share one ProviderActor in a runtime) or an
        :class:`~agentactors.actors.runtime.ActorRef` to a ProviderActor spawned with its own budgets.
    :param tools: ``@tool`` functions (plain functions are wrapped).
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
    _config: LoopConfig = attrs.field(init=False)
    _all_tools: tuple[Tool[Any, Any], ...] = attrs.field(init=False)
    _bound: dict[int, _Bound] = attrs.field(init=False, factory=dict)

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
        if self.tool_choice.forced and not all_tools:
            raise ValueError(f"tool_choice {self.tool_choice.mode!r} needs at least one tool")
        if self.tool_choice.mode == "tool" and self.tool_choice.name not in names:
            raise ValueError(f"tool_choice names {self.tool_choice.name!r}, which is not among the tools {names}")
        if self.max_tool_result_chars is not None and self.max_tool_result_chars < 1:
            raise ValueError("max_tool_result_chars must be positive")
        if self.tool_policy is not None and not callable(self.tool_policy):
            raise TypeError("tool_policy must be callable: (ToolCall, ToolContext) -> None | reason")
        if isinstance(self.nudges, Nudges):
            nudges: Nudges | None = self.nudges
        elif isinstance(self.nudges, bool):
            nudges = DEFAULT_NUDGES if self.nudges else None
        else:
            raise TypeError("nudges must be True, False or a Nudges value")
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
        )
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_all_tools", all_tools)

    def __repr__(self) -> str:
        provider = getattr(self.provider, "name", None) or repr(self.provider)
        label = f"{self.name!r}, " if self.name else ""
        return f"Agent({label}provider={provider!r}, tools={[t.name for t in self.tools]}, max_steps={self.max_steps})"

    # -- running --------------------------------------------------------------------------------

    async def run(
        self,
        prompt: Prompt,
        *,
        on_token: Callable[[str], None] | None = None,
        deps: Any = None,
        input_key: str | None = None,
    ) -> RunResult:
        """Run the tool loop on ``prompt`` (a str, a Message or a conversation) to a :class:`RunResult`.

        ``on_token(text)`` is called for each piece of answer text as it streams
        (the provider's stream path is used then).  ``deps`` reaches tools as
        ``ToolContext.deps`` and is never recorded.  ``input_key`` names the
        input across attempts (a run of the same input again gets a new run id
        but the same key) and reaches tools as ``ToolContext.input_key``, so a
        tool with side effects can deduplicate.

        Errors: provider failures end the run with ``generation_failed=True``
        (see :class:`RunResult`); a tool status routed to ``"raise"`` raises
        :class:`~agentactors.errors.ToolStatusError`.  Cancellation from an
        enclosing scope propagates as anyio's cancellation exception, and the
        caller's conversation is untouched.
        """
        messages = _to_messages(prompt)
        rt = self._runtime()
        if rt is not None:
            return await self._run_in(rt, messages, on_token=on_token, deps=deps, input_key=input_key)
        async with Runtime() as private:
            try:
                result = await self._run_in(
                    private, messages, on_token=on_token, deps=deps, private=True, input_key=input_key
                )
            finally:
                self._forget(private)
        return result

    async def run_many(
        self,
        inputs: Iterable[Prompt],
        *,
        runtime: Runtime | None = None,
        concurrency: int = 100,
        progress: Callable[[int, int, int], Any] | None = None,
    ) -> list[RunResult]:
        """Run the agent on every input, at most ``concurrency`` at once; results in input order.

        In ``runtime`` (default: the current one, as for :meth:`run`, or a
        private one made for these runs).  ``progress(done, failed, total)`` is
        called after each run (``failed`` counts runs with ``generation_failed``
        or an ``error``); a progress callback that raises is logged and ignored.
        A run that fails, or raises, becomes a failed :class:`RunResult` in its
        place and never disturbs the others.

        :raises ValueError: ``concurrency`` is not a positive int.

        Cancellation: cancels every run and propagates.
        """
        _check_concurrency(concurrency)
        items = list(inputs)
        if not items:
            return []
        rt = runtime if runtime is not None else self._runtime()
        if rt is not None:
            return await _run_many(rt, self, items, concurrency, progress, False)
        async with Runtime() as private:
            try:
                results = await _run_many(private, self, items, concurrency, progress, True)
            finally:
                self._forget(private)
        return results

    def as_completed(
        self, inputs: Iterable[Prompt], *, runtime: Runtime | None = None, concurrency: int = 100
    ) -> AsCompleted:
        """Run the agent on every input and yield each :class:`RunResult` as it finishes (``async for``).

        In ``runtime`` (default: the current one, as for :meth:`run`); the runs
        start at the first ``__anext__`` and live in the runtime's task group.
        To stop early, use ``async with agent.as_completed(...) as results:`` or
        call ``aclose()``: unfinished runs are cancelled.  Failed runs are
        yielded like the others (see :meth:`run_many`).

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
        return AsCompleted(rt, self, inputs, concurrency)

    def stream(self, prompt: Prompt, *, deps: Any = None, input_key: str | None = None) -> AgentRun:
        """A handle that runs the loop and yields its events: ``async with agent.stream(p) as run``.

        See :class:`AgentRun`; ``deps`` and ``input_key`` as for :meth:`run`.
        """
        return AgentRun(self, _to_messages(prompt), deps=deps, input_key=input_key)

    def _runtime(self) -> Runtime | None:
        rt = Runtime.current()
        if rt is not None and rt.running:
            return rt
        if isinstance(self.provider, ActorRef):
            host = self.provider.runtime
            if isinstance(host, Runtime) and host.running:
                return host  # the provider's own runtime hosts the run
        return None

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
                ref = rt.spawn(actor, name="provider", concurrency=actor.max_concurrency)
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
        bound = self._bound[id(rt)] = _Bound(rt, ref, native, tools, rt.fanout.with_recorders(self.recorders))
        return bound

    def _controller(
        self,
        rt: Runtime,
        *,
        on_token: Callable[[str], None] | None = None,
        deps: Any = None,
        extra: Recorder | None = None,
        stream: bool = False,
        private: bool = False,
        input_key: str | None = None,
    ) -> tuple[LoopController, EventSink | None]:
        bound = self._bind(rt, private=private)
        run_id = new_run_id()
        fanout = bound.fanout if extra is None else bound.fanout.with_recorders((extra,))
        sink = EventSink(fanout, run_id=run_id) if fanout else None
        controller = LoopController(
            self._config,
            bound.provider,
            bound.tools,
            native=bound.native,
            sink=sink,
            run_id=run_id,
            deps=deps,
            on_text=on_token,
            stream=stream,
            input_key=input_key,
        )
        return controller, sink

    def _run_in(
        self,
        rt: Runtime,
        messages: tuple[Message, ...],
        *,
        on_token: Callable[[str], None] | None = None,
        deps: Any = None,
        private: bool = False,
        input_key: str | None = None,
    ) -> Awaitable[RunResult]:
        """The run's coroutine: the controller's own when there is no sink to install (no frame of ours)."""
        controller, sink = self._controller(rt, on_token=on_token, deps=deps, private=private, input_key=input_key)
        if sink is None and current_sink() is None:
            return controller.run(messages)  # the hot path: nothing to install
        return _drive(controller, sink, messages)


async def _drive(controller: LoopController, sink: EventSink | None, messages: tuple[Message, ...]) -> RunResult:
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


class AgentRun:
    """A run in progress, from :meth:`Agent.stream`.

    ``async with agent.stream(prompt) as run:`` starts the run; ``async for event
    in run`` yields the same typed events recorders receive (``run.started``,
    ``llm.request``, ``llm.text_delta``, ``tools.started``, ``tools.finished``,
    ``step.finished``, ``run.finished``, ...) and ends after the run finished.

    ``run.cancel()`` cancels the run (its provider request and running tools
    included); it then ends with ``RunResult(cancelled=True)`` whose messages
    are the input messages.  Leaving the block before the run finished cancels
    it the same way.  ``run.result`` is the :class:`RunResult` once finished;
    ``await run.wait()`` waits for it.  An exception the run raised (e.g.
    :class:`~agentactors.errors.ToolStatusError`) is raised by ``wait()``,
    ``result`` and when the block is left.  Cancellation from an enclosing
    scope propagates as anyio's cancellation exception.
    """

    def __init__(
        self, agent: Agent, messages: tuple[Message, ...], *, deps: Any = None, input_key: str | None = None
    ) -> None:
        self._agent = agent
        self._messages = messages
        self._deps = deps
        self._input_key = input_key
        self._stack: AsyncExitStack | None = None
        self._scope = anyio.CancelScope()
        self._receive: MemoryObjectReceiveStream[Event] | None = None
        self._done = anyio.Event()
        self._result: RunResult | None = None
        self._error: BaseException | None = None

    async def __aenter__(self) -> AgentRun:
        if self._stack is not None:
            raise RuntimeError("an AgentRun can be entered only once")
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            rt = self._agent._runtime()
            private = rt is None
            if rt is None:
                rt = await stack.enter_async_context(Runtime())
                stack.callback(self._agent._forget, rt)  # on the way out, after the run's task group
            send, receive = anyio.create_memory_object_stream[Event](math.inf)
            self._receive = receive
            stack.callback(receive.close)
            controller, sink = self._agent._controller(
                rt,
                deps=self._deps,
                extra=_ChannelRecorder(send),
                stream=True,
                private=private,
                input_key=self._input_key,
            )
            tg = await stack.enter_async_context(anyio.create_task_group())
            tg.start_soon(self._work, controller, sink, send)
        except BaseException:
            await stack.__aexit__(None, None, None)
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        if not self._done.is_set():
            self._scope.cancel()
        assert self._stack is not None
        suppressed = await self._stack.__aexit__(exc_type, exc, tb)
        if exc_type is None and self._error is not None:
            raise self._error
        return suppressed

    async def _work(
        self, controller: LoopController, sink: EventSink | None, send: MemoryObjectSendStream[Event]
    ) -> None:
        with send:
            with self._scope:
                try:
                    self._result = await _drive(controller, sink, self._messages)
                except Exception as exc:
                    self._error = exc
            if self._result is None and self._error is None:
                self._result = controller.cancelled_result(self._messages)
            self._done.set()

    def __aiter__(self) -> AgentRun:
        return self

    async def __anext__(self) -> Event:
        if self._receive is None:
            raise RuntimeError("iterate an AgentRun inside `async with agent.stream(...) as run:`")
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def cancel(self) -> None:
        """Cancel the run; it ends with ``RunResult(cancelled=True)``.  Idempotent; no effect once finished."""
        self._scope.cancel()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def result(self) -> RunResult:
        """The run's result.  :raises RuntimeError: the run has not finished yet."""
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise RuntimeError("the run has not finished: iterate it, or `await run.wait()`")
        return self._result

    async def wait(self) -> RunResult:
        """Wait until the run finishes and return its result (raising what the run raised)."""
        await self._done.wait()
        return self.result


# --- many runs -----------------------------------------------------------------------------------


def _failed_result(messages: tuple[Message, ...], exc: Exception) -> RunResult:
    return RunResult("", messages, error=exc)


async def _run_safely(rt: Runtime, agent: Agent, prompt: Prompt) -> RunResult:
    """One run of many: whatever it raises (but cancellation) becomes its result, never its neighbours'."""
    try:
        messages = _to_messages(prompt)
    except (TypeError, ValueError) as exc:
        return _failed_result((), exc)
    try:
        return await agent._run_in(rt, messages)
    except Exception as exc:
        return _failed_result(messages, exc)


def _is_failed(result: RunResult) -> bool:
    return result.generation_failed or result.error is not None


def _check_concurrency(concurrency: int) -> None:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive int, not {concurrency!r}")


async def run_many(
    rt: Runtime,
    agent: Agent,
    inputs: Iterable[Prompt],
    *,
    concurrency: int = 100,
    progress: Callable[[int, int, int], Any] | None = None,
) -> list[RunResult]:
    """``agent.run_many(inputs, runtime=rt, ...)`` (see :meth:`Agent.run_many`)."""
    return await agent.run_many(inputs, runtime=rt, concurrency=concurrency, progress=progress)


async def _run_many(
    rt: Runtime,
    agent: Agent,
    items: list[Prompt],
    concurrency: int,
    progress: Callable[[int, int, int], Any] | None,
    private: bool,
) -> list[RunResult]:
    total = len(items)
    results: list[RunResult | None] = [None] * total
    indexes = iter(range(total))
    counts = [0, 0]
    warned = [False]

    async def worker() -> None:
        # _run_safely inlined: one coroutine frame less per run in flight (10k runs in flight are common).
        for i in indexes:
            try:
                messages = _to_messages(items[i])
            except (TypeError, ValueError) as exc:
                result = _failed_result((), exc)
            else:
                try:
                    result = await agent._run_in(rt, messages, private=private)
                except Exception as exc:
                    result = _failed_result(messages, exc)
            results[i] = result
            counts[0] += 1
            if _is_failed(result):
                counts[1] += 1
            if progress is not None:
                try:
                    progress(counts[0], counts[1], total)
                except Exception:
                    if not warned[0]:
                        warned[0] = True
                        log.exception("the run_many progress callback raised; it is ignored from now on")

    async with anyio.create_task_group() as tg:
        for _ in range(min(concurrency, total)):
            tg.start_soon(worker)
    return [r for r in results if r is not None]


class AsCompleted:
    """The async iterator of :meth:`Agent.as_completed`; the runs live in the runtime's task group.

    Also an async context manager whose exit (like :meth:`aclose`) cancels the
    runs not yet finished.
    """

    def __init__(self, rt: Runtime, agent: Agent, inputs: Iterable[Prompt], concurrency: int) -> None:
        _check_concurrency(concurrency)
        self._rt = rt
        self._agent = agent
        self._items = list(inputs)
        self._concurrency = concurrency
        self._scope = anyio.CancelScope()
        self._receive: MemoryObjectReceiveStream[RunResult] | None = None

    def _start(self) -> MemoryObjectReceiveStream[RunResult]:
        send, receive = anyio.create_memory_object_stream[RunResult](math.inf)
        self._receive = receive
        self._rt.spawn_task(self._feed, send, name="as_completed")
        return receive

    async def _feed(self, send: MemoryObjectSendStream[RunResult]) -> None:
        items = self._items
        indexes = iter(range(len(items)))

        async def worker() -> None:
            for i in indexes:
                result = await _run_safely(self._rt, self._agent, items[i])
                try:
                    send.send_nowait(result)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    self._scope.cancel()  # nobody reads any more: stop the rest
                    return

        with send, self._scope:
            async with anyio.create_task_group() as tg:
                for _ in range(min(self._concurrency, len(items))):
                    tg.start_soon(worker)

    def __aiter__(self) -> AsCompleted:
        return self

    async def __anext__(self) -> RunResult:
        receive = self._receive if self._receive is not None else self._start()
        try:
            return await receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Stop: runs not finished are cancelled, results not yet read are dropped."""
        self._scope.cancel()
        if self._receive is not None:
            self._receive.close()

    async def __aenter__(self) -> AsCompleted:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def as_completed(rt: Runtime, agent: Agent, inputs: Iterable[Prompt], *, concurrency: int = 100) -> AsCompleted:
    """``agent.as_completed(inputs, runtime=rt, ...)`` (see :meth:`Agent.as_completed`)."""
    return agent.as_completed(inputs, runtime=rt, concurrency=concurrency)
