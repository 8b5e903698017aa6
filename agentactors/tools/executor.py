"""``ToolExecutorActor``: runs one step's tool calls and answers with one result per call, in call order.

The loop asks it with :class:`ExecuteTools`; the answer is a tuple of
:class:`~agentactors.tools.results.ToolResult`, one per call, in the order the
model made them, whatever order they finished in.  Every outcome is a status
(``docs/loop.md``): nothing a tool does — raising, hanging, returning too much —
becomes an exception in the loop.  ``SystemExit``, a ``BaseException`` of the
tool's own and a cancellation no cancel scope asked for (a library leaking
asyncio's ``CancelledError``) are ``error`` results too; only what is not the
tool's to stop propagates (:mod:`agentactors._containment`): a real
cancellation — a cancelled run's turn is discarded, so there is nothing to
answer with — ``KeyboardInterrupt`` and ``GeneratorExit``.

Per call, in order: unknown tool → ``invalid``; arguments that did not parse →
``invalid``; arguments that break the schema → ``invalid`` (the tool does not
run); the agent's ``tool_policy`` refuses → ``denied``; a call that needs a person's decision
(``@tool(requires_approval=True)``, or a policy's :class:`~agentactors.tools.approval.NeedsApproval`)
and has none yet is answered as pending (:func:`~agentactors.tools.approval.pending_result`: the
loop pauses the run) — one with a decision runs (approved) or is ``denied`` with the person's
reason, and the policy is not asked again; a tool raising
:class:`~agentactors.errors.ToolDenied` refuses itself → ``denied``; then the tool runs
(sync tools in a worker thread of :func:`~agentactors.actors.threads.worker_threads`,
at most 40 at once per event loop; a sync call abandoned at its timeout frees its
slot and is reported: ``tools.thread_abandoned``, ``rt.stats().abandoned_threads``)
under its timeout → ``ok`` / ``error`` / ``timeout``.  A result that cannot be
rendered as JSON (unserialisable, circular, nested too deeply, a NaN or an infinity,
bytes that are binary data) is an ``error``.  An ``error`` is its developer's to see
too: a WARNING with the traceback on ``agentactors.tools``, and ``error_type`` on
``tools.finished`` (:mod:`~agentactors.tools._failure`; the failure path only).
A result over the tool's ceiling is refused (``invalid``; the payload goes
nowhere), then a result over the agent's cap is truncated.  Hints are appended
to ``error`` and ``invalid`` results only.  Every text is made sendable: lone
surrogates are replaced (``tools.surrogates_replaced``).

Each of those is a layer with a name (``ToolExecutorActor._dispatch`` calls them
in that order): lookup → validate → approve/policy → invoke → map the outcome →
render → ceiling, then :mod:`~agentactors.tools._finish` gives every answer its
last touch.  The invocation paths live in :mod:`~agentactors.tools._invoke`, the
policy call in :mod:`~agentactors.tools._policy`.

The actor holds no per-message state, so one instance may serve many runs with
runtime ``concurrency > 1``.  Each message gets its own concurrency limiter:
runs do not share a step's budget.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, TypeAlias

import anyio
import attrs

from .._backend import loop_clock
from .._containment import escapes, first_in, in_group_task, interrupt_in, is_cancellation
from .._json import bound_problem
from .._slots import draft
from ..errors import ToolDenied
from ..events import EventSink, current_sink, emit
from ..messages import ToolCall, all_tool_calls
from ..parts import MediaPart
from ._failure import log_raised, log_unsendable
from ._finish import finish
from ._invoke import TimedOut, invoke, run_to_end
from ._policy import ask_policy
from .approval import NeedsApproval, decision_denied_text, pending_result
from .registry import Tool, ToolContext, end_call, tool
from .results import (
    ToolResult,
    ToolStatus,
    ValidationIssue,
    denied_text,
    format_error,
    refusal_text,
    refused_itself_text,
    render_result,
    split_parts,
    timeout_text,
    unknown_tool_text,
    unreadable_arguments_text,
    unsendable_text,
)
from .schema import ConversionError

__all__ = ["ExecuteTools", "ExecutionContext", "ToolExecutorActor", "ToolPolicy", "execute_tools"]

#: ``(call, context) -> None`` to allow the call, a reason string to deny it, or
#: :class:`~agentactors.tools.approval.NeedsApproval` to ask a person (may be async).
ToolPolicy: TypeAlias = Callable[
    [ToolCall, ToolContext], "str | NeedsApproval | Awaitable[str | NeedsApproval | None] | None"
]


@attrs.frozen(slots=True)
class ExecutionContext:
    """What the loop tells the executor about the run a step belongs to.

    ``run_id`` (default: the current event sink's run id), ``agent`` (the
    agent's name), ``step``; ``max_tool_result_chars`` is the agent's truncation
    cap (``None``: no cap); ``tool_policy`` may deny calls; ``deps`` is handed
    to tools through :class:`ToolContext` and never recorded anywhere;
    ``input_key`` (the caller's stable key for the run's input, see
    :attr:`ToolContext.input_key`) is handed to tools the same way.  ``approvals`` are a person's
    decisions for calls that waited for one (``{call_id: True | reason}``: a resumed run's).

    :raises ValueError: a cap that is not a positive int.
    :raises TypeError: a ``tool_policy`` that is not callable.
    """

    run_id: str | None = None
    agent: str | None = None
    step: int | None = None
    max_tool_result_chars: int | None = None
    tool_policy: ToolPolicy | None = attrs.field(default=None, repr=False)
    deps: Any = attrs.field(default=None, repr=False)
    input_key: str | None = None
    approvals: Mapping[str, bool | str] | None = attrs.field(default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        # Both checks in one call rather than a validator each (the loop builds a context per tool step).
        cap = self.max_tool_result_chars
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0):
            raise ValueError(f"max_tool_result_chars must be a positive int or None, not {cap!r}")
        policy = self.tool_policy
        if policy is not None and not callable(policy):
            raise TypeError(f"tool_policy must be callable or None, not {type(policy).__name__}")


def _to_calls(value: Iterable[ToolCall]) -> tuple[ToolCall, ...]:
    calls = value if type(value) is tuple else tuple(value)  # the loop's own calls: a tuple already
    for call in calls:
        if not isinstance(call, ToolCall):
            raise TypeError(f"ExecuteTools.calls must hold ToolCall objects, not {type(call).__name__}")
    return calls


_DEFAULT_CONTEXT = ExecutionContext()


@attrs.frozen(slots=True)
class ExecuteTools:
    """Ask: run these calls (one step's) → ``tuple[ToolResult, ...]``, one per call, in call order."""

    calls: tuple[ToolCall, ...] = attrs.field(converter=_to_calls)
    context: ExecutionContext = _DEFAULT_CONTEXT

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.context, ExecutionContext):
            raise TypeError(f"ExecuteTools.context must be an ExecutionContext, not {type(self.context).__name__}")


# What execute_tools() fills, field by field, then makes an ExecutionContext and an ExecuteTools (agentactors._slots).
_new = object.__new__
_ContextDraft = draft(ExecutionContext, "run_id agent step max_tool_result_chars tool_policy deps input_key approvals")
_MessageDraft = draft(ExecuteTools, "calls context")


def execute_tools(
    calls: tuple[ToolCall, ...],
    run_id: str | None,
    agent: str | None,
    step: int | None,
    max_tool_result_chars: int | None,
    tool_policy: ToolPolicy | None,
    deps: Any,
    input_key: str | None,
    approvals: Mapping[str, bool | str] | None,
) -> ExecuteTools:
    """``ExecuteTools(calls, ExecutionContext(run_id, agent, step, ...))`` — the message a run's tool step asks
    with — both values set field by field, with their checks made inline (arguments that fail one go to the
    constructors, which raise their errors): half the time of the two constructors.  Every argument is
    positional.
    """
    cap = max_tool_result_chars
    if (
        type(calls) is not tuple
        or not all_tool_calls(calls)
        or (cap is not None and (type(cap) is not int or cap <= 0))
        or (tool_policy is not None and not callable(tool_policy))
    ):
        context = ExecutionContext(run_id, agent, step, cap, tool_policy, deps, input_key, approvals)
        return ExecuteTools(calls, context)
    filled: Any = _new(_ContextDraft)
    filled.run_id = run_id
    filled.agent = agent
    filled.step = step
    filled.max_tool_result_chars = cap
    filled.tool_policy = tool_policy
    filled.deps = deps
    filled.input_key = input_key
    filled.approvals = approvals
    filled.__class__ = ExecutionContext
    message: Any = _new(_MessageDraft)
    message.calls = calls
    message.context = filled
    message.__class__ = ExecuteTools
    made: ExecuteTools = message
    return made


class ToolExecutorActor:
    """Executes tool calls: validated, policed, timed out, sized, and each one answered with a status.

    :param tools: :class:`Tool` objects or plain functions (wrapped with ``@tool``).
    :param max_concurrency_per_step: at most this many calls of one message run at once.
    :param default_timeout: seconds for a tool that declares none (``None``: no limit).
    :param tool_policy: a policy applied to every message (a message's own policy applies too).
    :raises ValueError: duplicate tool names, a non-positive concurrency or timeout.
    :raises TypeError: something in ``tools`` that is not a function or a Tool.

    Cancellation: cancelling the asker cancels every call in flight (async tools
    see it; sync tools' threads are abandoned) and propagates; ``tools.finished``
    events with status ``cancelled`` are emitted for the calls that were running.
    A tool that fails while it is cancelled (a task group of its own whose child
    raises in its cleanup: a group of the cancellation and the error) has its error
    logged (WARNING on ``agentactors.tools``), and only the cancellation propagates.
    A ``KeyboardInterrupt`` from a tool cancels the step's other calls and is
    raised in the asker's task.
    """

    def __init__(
        self,
        tools: Iterable[Tool[Any, Any] | Callable[..., Any]] = (),
        *,
        max_concurrency_per_step: int = 16,
        default_timeout: float | None = 60.0,
        tool_policy: ToolPolicy | None = None,
    ) -> None:
        if isinstance(max_concurrency_per_step, bool) or not isinstance(max_concurrency_per_step, int):
            raise TypeError("max_concurrency_per_step must be an int")
        if max_concurrency_per_step < 1:
            raise ValueError(f"max_concurrency_per_step must be at least 1, not {max_concurrency_per_step}")
        if default_timeout is not None and (
            isinstance(default_timeout, bool) or not isinstance(default_timeout, int | float) or not default_timeout > 0
        ):
            raise ValueError(f"default_timeout must be a positive number of seconds or None, not {default_timeout!r}")
        if tool_policy is not None and not callable(tool_policy):
            raise TypeError("tool_policy must be callable: (ToolCall, ToolContext) -> None | reason")
        table: dict[str, Tool[Any, Any]] = {}
        for t in tools:
            if not isinstance(t, Tool):
                if not callable(t):
                    raise TypeError(f"tools must be Tool objects or functions, not {type(t).__name__}")
                t = tool(t)
            if t.name in table:
                raise ValueError(f"two tools are named {t.name!r}; tool names must be unique")
            table[t.name] = t
        self._tools: Mapping[str, Tool[Any, Any]] = table
        self._names = tuple(table)
        self.max_concurrency_per_step = max_concurrency_per_step
        self.default_timeout = float(default_timeout) if default_timeout is not None else None
        self.tool_policy = tool_policy
        # anyio.CancelScope() and anyio.current_time() look the backend up on every call; on_start resolves
        # the backend's own class and clock once (:mod:`agentactors._backend`).
        self._scope: type[anyio.CancelScope] = anyio.CancelScope
        self._clock: Callable[[], float] = anyio.current_time

    async def on_start(self) -> None:
        """Runs inside the event loop the executor serves: resolve that backend's cancel scope class and clock.

        Cancellation: nothing to cancel: it returns at once, with no await.
        """
        self._scope = type(anyio.CancelScope())
        self._clock = loop_clock()

    @property
    def tools(self) -> Mapping[str, Tool[Any, Any]]:
        return self._tools

    def __repr__(self) -> str:
        return f"ToolExecutorActor(tools={list(self._names)}, max_concurrency_per_step={self.max_concurrency_per_step})"

    async def receive(self, message: ExecuteTools) -> tuple[ToolResult, ...]:
        """Answer :class:`ExecuteTools`.  :raises TypeError: for any other message.

        Cancellation: as :meth:`execute`'s (the asker gave up, or the run was cancelled): the running calls are
        cancelled, each ``tools.finished`` with status ``cancelled``, and no result is answered.
        """
        if not isinstance(message, ExecuteTools):
            raise TypeError(f"ToolExecutorActor handles ExecuteTools, not {type(message).__name__}")
        calls = message.calls
        if len(calls) == 1:  # the common case, one frame less: execute() would do just this
            return (await self.execute_one(calls[0], message.context),)
        return await self.execute(calls, message.context)

    async def execute(
        self, calls: Iterable[ToolCall], context: ExecutionContext = _DEFAULT_CONTEXT
    ) -> tuple[ToolResult, ...]:
        """Run ``calls`` and return one result per call, in call order (see the class docstring).

        Cancellation: propagates (anyio's cancellation exception); every call still running is cancelled
        with it — an async tool sees the cancellation at its next await, a sync tool's thread is abandoned —
        and each gets a ``tools.finished`` with status ``cancelled``.  No result is returned for any of
        them, those that had finished included.
        """
        calls = tuple(calls)
        if not calls:
            return ()
        if len(calls) == 1:  # the common case: no task group, no limiter
            return (await self.execute_one(calls[0], context),)
        results: list[ToolResult | None] = [None] * len(calls)
        limiter = anyio.CapacityLimiter(self.max_concurrency_per_step)  # per message: runs never share it
        interrupted: list[BaseException] = []
        for group in self._groups(calls):
            if len(group) == 1:
                results[group[0]] = await self.execute_one(calls[group[0]], context)
                continue
            async with anyio.create_task_group() as tg:
                for index in group:
                    tg.start_soon(
                        self._execute_into, results, index, calls[index], context, limiter, interrupted, tg.cancel_scope
                    )
            if interrupted:
                # Raised here, in the asker's task, where the run (and a batch around it) can answer it.
                raise interrupted[0]
        if None in results:  # execute_one answers or raises: a hole would be a bug of ours
            raise AssertionError(f"the executor lost a result: {sum(r is None for r in results)} of {len(calls)}")
        return tuple(results)  # type: ignore[arg-type]  # no None left: checked above

    def _groups(self, calls: tuple[ToolCall, ...]) -> list[list[int]]:
        """Call indexes in batches that may run together: a sequential tool's call is a batch of its own."""
        groups: list[list[int]] = []
        current: list[int] = []
        for i, call in enumerate(calls):
            t = self._tools.get(call.name)
            if t is not None and t.sequential:
                if current:
                    groups.append(current)
                    current = []
                groups.append([i])
            else:
                current.append(i)
        if current:
            groups.append(current)
        return groups

    async def _execute_into(
        self,
        results: list[ToolResult | None],
        index: int,
        call: ToolCall,
        context: ExecutionContext,
        limiter: anyio.CapacityLimiter,
        interrupted: list[BaseException],
        group: anyio.CancelScope,
    ) -> None:
        """One call of a step, in a task of the step's group.

        A KeyboardInterrupt is handed to the step's own task instead of leaving this one: on
        asyncio an interrupt escaping a task leaves the event loop at once, past every run and
        batch that could still account for it.  The other calls are cancelled.
        """
        in_group_task()  # a task.cancel() of this task is the call's failure, not its caller's cancellation
        try:
            async with limiter:
                results[index] = await self.execute_one(call, context)
        except BaseException as exc:
            interrupt = interrupt_in(exc)
            if interrupt is None:
                raise
            interrupted.append(interrupt)
            group.cancel()

    async def execute_one(self, call: ToolCall, context: ExecutionContext = _DEFAULT_CONTEXT) -> ToolResult:
        """Run one call to a result, emitting ``tools.started`` and ``tools.finished``.

        Never raises for anything the tool or the model did; cancellation propagates.

        Cancellation: a cancellation of the caller's (its run's, an enclosing scope's) propagates as anyio's
        cancellation exception, after a ``tools.finished`` with status ``cancelled``; the tool is cancelled
        with it (an async tool at its next await; a sync tool's thread is abandoned, its result discarded).
        A ``CancelledError`` no cancel scope asked for, raised by the tool itself, is its ``error`` result.
        """
        started = self._clock()
        sink = current_sink()
        # One check when nobody listens: no payload is built for either event.
        events = sink if sink is not None and sink.fanout.recorders else None
        if events is not None:
            events.emit("tools.started", call_id=call.id, name=call.name)
        try:
            result = await self._dispatch(call, context, started, sink)
        except _Failed as failed:  # an ``error`` result (logged already): its event names the error's type
            if events is not None:
                events.emit(
                    "tools.finished",
                    call_id=call.id,
                    name=call.name,
                    status=failed.result.status,
                    duration=failed.result.duration,
                    size=failed.result.size_chars,
                    error_type=failed.error_type,
                )
            return failed.result
        except BaseException as exc:
            # (a group too: one with an interrupt travels whole, and the call was cancelled all the same)
            if events is not None and first_in(exc, anyio.get_cancelled_exc_class()) is not None:
                events.emit(
                    "tools.finished",
                    call_id=call.id,
                    name=call.name,
                    status=ToolStatus.cancelled,
                    duration=self._clock() - started,
                    size=0,
                )
            raise
        if events is not None:
            if result.awaiting_approval:  # not run: the call waits for a person (the run pauses)
                events.emit(
                    "tools.finished",
                    call_id=call.id,
                    name=call.name,
                    status=result.status,
                    duration=0.0,
                    size=0,
                    awaiting_approval=True,
                )
            else:
                events.emit(
                    "tools.finished",
                    call_id=call.id,
                    name=call.name,
                    status=result.status,
                    duration=result.duration,
                    size=result.size_chars,
                )
        return result

    # -- one call, layer by layer -----------------------------------------------------------------

    async def _dispatch(
        self, call: ToolCall, context: ExecutionContext, started: float, sink: EventSink | None
    ) -> ToolResult:
        """One call through the layers: lookup → validate → approve/policy → invoke → map the outcome →
        render → ceiling.  Each answers the call or hands it on (the module docstring gives the order).

        Only the layers that can await (the policies, the tool) are coroutines, and a call that needs no
        decision and no context skips the first of them: every tool call takes this path, and pays for
        no frame it does not use.
        """
        t = self._tools.get(call.name)
        if t is None:
            return self._unknown_tool(call, context, started)
        invalid = _invalid_arguments(t, call)
        if invalid is not None:
            return self._finish(call, t, ToolStatus.invalid, invalid, context, started)
        ctx: ToolContext | None = None
        if (
            t.takes_context
            or t.requires_approval
            or context.approvals
            or self.tool_policy is not None
            or context.tool_policy is not None
        ):
            gate = await self._approve(t, call, context, started, sink)
            if isinstance(gate, ToolResult):
                return gate
            ctx = gate
        try:
            if t.never_waits:
                # Its body has no await: the call ends in this one step, and a timeout could not interrupt
                # it (nothing can), so it pays for no scope, no timer and no frame.
                value = run_to_end(t.start(call.arguments, ctx), t.name)
            else:
                timeout = t.timeout if t.timeout is not None else self.default_timeout
                # The tool's time starts now (a policy's own time, it may await, is not the tool's);
                # with no context built (no policy), "now" is when the call started: no second clock read.
                value = await invoke(t, call, ctx, timeout, started if ctx is None else self._clock(), self._scope)
        except BaseException as exc:
            if ctx is not None:
                end_call(ctx)  # a sync tool's abandoned thread may still emit: dropped from now on
            # SystemExit, a BaseException of the tool's own, a CancelledError no scope asked for: the
            # tool's failure.  A real cancellation, KeyboardInterrupt, GeneratorExit: not its to stop.
            if escapes(exc):
                alone = _cancellation_alone(exc, t.name, call.id, _run_id(context, sink))
                if alone is None:
                    raise
                try:
                    raise alone
                finally:
                    # A clean context: the group (which holds ``alone``) would make a cycle and keep the
                    # tool's frames alive; its errors are logged already.
                    alone.__context__ = None
            status, text = _outcome(t, exc)
            result = self._finish(call, t, status, text, context, started)
            if status is ToolStatus.error:  # the tool failed: its developer is told too (agentactors.tools._failure)
                raise _Failed(result, log_raised(t.name, call.id, _run_id(context, sink), text, exc)) from None
            return result
        return self._render(t, call, value, context, started)

    def _unknown_tool(self, call: ToolCall, context: ExecutionContext, started: float) -> ToolResult:
        """Lookup failed: the model named a tool the agent does not have (made up, misspelt, another's).

        ``invalid``, with the names it may use: the model can correct itself at the next step.
        """
        text = unknown_tool_text(call.name, self._names)
        return self._finish(call, None, ToolStatus.invalid, text, context, started)

    async def _approve(
        self, t: Tool[Any, Any], call: ToolCall, context: ExecutionContext, started: float, sink: EventSink | None
    ) -> ToolResult | ToolContext | None:
        """Approve/policy: whether this call may run, asked before it does — a tool cannot be un-run.

        A person's recorded decision comes first (no: ``denied`` with their reason; yes: the policies are
        not asked again), then the executor's and the run's ``tool_policy`` (a reason denies,
        :class:`NeedsApproval` pauses the run), then the tool's own ``requires_approval``.  Answers the
        call's :class:`ToolResult` when it must not run now, else the :class:`ToolContext` the tool gets
        (``None``: nobody reads one).
        """
        decision = context.approvals.get(call.id) if context.approvals else None
        if isinstance(decision, str):  # a person said no: the tool does not run, no policy is asked
            return self._finish(call, t, ToolStatus.denied, decision_denied_text(t.name, decision), context, started)
        policies = (self.tool_policy, context.tool_policy) if decision is None else (None, None)
        ctx: ToolContext | None = None
        # Built only for someone who reads it: a policy, or a tool that takes a ToolContext.
        if t.takes_context or policies[0] is not None or policies[1] is not None:
            ctx = _tool_context(t, call, context, sink)
            for policy in policies:
                if policy is not None:
                    reason = await ask_policy(policy, call, ctx)
                    if isinstance(reason, NeedsApproval):
                        return pending_result(call.id, t.name, reason.reason)
                    if reason is not None:
                        return self._finish(call, t, ToolStatus.denied, denied_text(t.name, reason), context, started)
        if t.requires_approval and decision is None:
            return pending_result(call.id, t.name, "the tool requires approval")
        return ctx

    def _render(
        self, t: Tool[Any, Any], call: ToolCall, value: Any, context: ExecutionContext, started: float
    ) -> ToolResult:
        """Render: the tool's value as the text (and media) the model reads.

        A value JSON cannot carry (unserialisable, circular, nested too deeply, a NaN or an infinity, bytes
        that are binary data) is the tool's ``error``: it ran, but what it gave cannot be sent
        (:func:`~agentactors.tools.results.render_result`).
        """
        media: tuple[MediaPart, ...] = ()
        parts = split_parts(value)
        if parts is not None:
            content, media = parts  # images etc. a tool returned ride beside its text
        else:
            try:
                content = render_result(value)
            except Exception as exc:  # TypeError whatever went wrong (too deep, circular, a conversion that raised)
                text = format_error(TypeError(unsendable_text(value, exc)))
                result = self._finish(call, t, ToolStatus.error, text, context, started)
                run_id = _run_id(context, current_sink())
                raise _Failed(result, log_unsendable(t.name, call.id, run_id, value, exc)) from None
        return self._under_ceiling(t, call, content, media, context, started)

    def _under_ceiling(
        self,
        t: Tool[Any, Any],
        call: ToolCall,
        content: str,
        media: tuple[MediaPart, ...],
        context: ExecutionContext,
        started: float,
    ) -> ToolResult:
        """Ceiling: a result over the tool's own ceiling is refused (``invalid``) before it reaches the model.

        The tool's author declared that past this size a result is useless (or harmful) to the model;
        the refusal says how to narrow the call.  Under it, the result is ``ok`` (the agent's cap may
        still truncate it: :meth:`_finish`).
        """
        size = len(content)
        ceiling = t.result_ceiling
        if ceiling is not None and size > ceiling.max_chars:
            # The payload stops here: only its size leaves this function.
            del content
            emit(
                "tools.result_refused",
                call_id=call.id,
                name=t.name,
                size=size,
                max_chars=ceiling.max_chars,
                narrow_by=ceiling.narrow_by,
            )
            text = refusal_text(t.name, size, ceiling)
            return self._finish(call, t, ToolStatus.invalid, text, context, started, refused=True, original=size)
        return self._finish(call, t, ToolStatus.ok, content, context, started, original=size, media=media)

    def _finish(
        self,
        call: ToolCall,
        t: Tool[Any, Any] | None,
        status: ToolStatus,
        content: str,
        context: ExecutionContext,
        started: float,
        *,
        refused: bool = False,
        original: int | None = None,
        media: tuple[MediaPart, ...] = (),
    ) -> ToolResult:
        """Every layer's answer leaves through here (:func:`~agentactors.tools._finish.finish`), timed now."""
        cap = context.max_tool_result_chars
        return finish(call, t, status, content, cap, self._clock() - started, refused, original, media)


def _invalid_arguments(t: Tool[Any, Any], call: ToolCall) -> str | None:
    """Validate: why the model's arguments cannot reach the tool (``None``: they can).

    Arguments that did not parse, or that break the tool's schema: the tool does not run, and
    neither a policy nor a person is asked about a call that cannot run.  The text says what to fix.
    """
    if call.arguments_error is not None:
        detail = call.arguments_error_detail
        if detail is None and call.arguments_error == "unparseable":
            # A call a custom provider built with ToolCall.from_raw carries no detail: say at least what the
            # policy refused (a key named twice, nesting too deep) — the wires' own calls say it already.
            detail = bound_problem(call.raw_arguments)
        return unreadable_arguments_text(t.name, call.arguments_error, detail, t.spec.required, t.fix_text())
    issues = t.validate(call.arguments)
    return t.invalid_text(issues) if issues else None


def _tool_context(t: Tool[Any, Any], call: ToolCall, context: ExecutionContext, sink: EventSink | None) -> ToolContext:
    """What a tool that takes a :class:`ToolContext`, and a policy, see of the call and its run."""
    return ToolContext(
        call_id=call.id,
        tool_name=t.name,
        run_id=context.run_id if context.run_id is not None else (sink.run_id if sink is not None else None),
        agent=context.agent,
        step=context.step,
        deps=context.deps,
        input_key=context.input_key,
        sink=sink,
        loop_thread=threading.get_ident(),
    )


class _Failed(Exception):
    """A failed call's ``result`` on its way from the dispatch to :meth:`ToolExecutorActor.execute_one`, with
    ``error_type`` for its ``tools.finished`` event (logged already: :mod:`~agentactors.tools._failure`).

    Raised, not returned, so that the ``ok`` path — every call's, returning a :class:`ToolResult` — tests
    nothing more than it did; ``execute_one`` catches it, and it never leaves this module.
    """

    __slots__ = ("error_type", "result")

    def __init__(self, result: ToolResult, error_type: str) -> None:
        super().__init__(error_type)
        self.result = result
        self.error_type = error_type


def _run_id(context: ExecutionContext, sink: EventSink | None) -> str | None:
    """The run a failed call served, for its log record: the context's, else the current event sink's (``None``:
    neither says).  (:func:`_tool_context` spells it out inline: it runs for every call that takes a context.)"""
    return context.run_id if context.run_id is not None else (sink.run_id if sink is not None else None)


def _cancellation_alone(exc: BaseException, name: str, call_id: str, run_id: str | None) -> BaseException | None:
    """The real cancellation in ``exc``, a group that escapes the call, to raise alone (``None``: raise ``exc``).

    A tool that fails while it is cancelled — on trio, a task group whose child raises in its cleanup —
    ends with ``BaseExceptionGroup([Cancelled, ValueError])``.  The cancellation is not the tool's to stop,
    but its error must not travel with it: out of the scope that cancelled the run, only the ``ValueError``
    would be left, and the run would raise it instead of returning its result.  The tool's errors are
    logged (WARNING on ``agentactors.tools``, redacted) and dropped; nobody reads the call's result now.

    A group holding a ``KeyboardInterrupt`` or ``GeneratorExit`` travels whole, as before; so does
    anything that is not a group (``None``).
    """
    if not isinstance(exc, BaseExceptionGroup):
        return None
    if first_in(exc, KeyboardInterrupt) is not None or first_in(exc, GeneratorExit) is not None:
        return None
    cancelled, rest = exc.split(is_cancellation)  # asked here, inside the scopes it came through
    alone = first_in(cancelled, anyio.get_cancelled_exc_class())
    if alone is None:  # pragma: no cover - escapes() said something in it travels, and only this can
        return None
    if rest is not None:
        errors = "; ".join(format_error(leaf).removeprefix("Error: ") for leaf in _leaves(rest))
        logging.getLogger("agentactors.tools").warning(  # the module's logger: its filter redacts the traceback
            "tool %r (%s) raised %s while its call was cancelled; the cancellation goes on, the error is dropped",
            name,
            f"call {call_id}, run {run_id}" if run_id is not None else f"call {call_id}",
            errors,
            exc_info=rest,
        )
    return alone


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _outcome(t: Tool[Any, Any], exc: BaseException) -> tuple[ToolStatus, str]:
    """Map the outcome: what the tool raised, as the status and text the model reads.

    Nothing a tool does becomes an exception in the loop: its own refusal (:class:`ToolDenied`) is
    ``denied``, an argument that would not convert to its parameter's type ``invalid``, its deadline
    ``timeout``, anything else — ``SystemExit`` and stray cancellations included — ``error``.
    """
    if isinstance(exc, TimedOut):
        return ToolStatus.timeout, timeout_text(t.name, exc.seconds)
    if isinstance(exc, ConversionError):
        return ToolStatus.invalid, t.invalid_text([_conversion_issue(exc)])
    if isinstance(exc, ToolDenied):
        # Raised from the tool's body (a policy's refusal never comes here: _approve answers it, and a policy
        # that raises is asked by ask_policy, which contains it): the tool ran, and there may be no policy.
        return ToolStatus.denied, refused_itself_text(t.name, exc.reason)
    return ToolStatus.error, format_error(exc)


def _conversion_issue(exc: ConversionError) -> ValidationIssue:
    return ValidationIssue(exc.path, exc.expected, "a value that does not convert")
