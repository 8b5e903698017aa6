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
rendered as JSON (unserialisable, circular, nested too deeply) is an ``error``.
A result over the tool's ceiling is refused (``invalid``; the payload goes
nowhere), then a result over the agent's cap is truncated.  Hints are appended
to ``error`` and ``invalid`` results only.  Every text is made sendable: lone
surrogates are replaced (``tools.surrogates_replaced``).

The actor holds no per-message state, so one instance may serve many runs with
runtime ``concurrency > 1``.  Each message gets its own concurrency limiter:
runs do not share a step's budget.
"""

from __future__ import annotations

import inspect
import logging
import threading
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable, Mapping
from typing import Any, TypeAlias

import anyio
import attrs

from .._containment import escapes, interrupt_in
from ..actors._backend import backend_function
from ..errors import ToolDenied
from ..events import EventSink, current_sink, emit
from ..messages import ToolCall
from ..parts import MediaPart
from .approval import NeedsApproval, decision_denied_text, pending_result
from .registry import Tool, ToolContext, tool
from .results import (
    ToolResult,
    ToolStatus,
    ValidationIssue,
    denied_text,
    encodable_text,
    format_error,
    refusal_text,
    render_result,
    split_parts,
    timeout_text,
    truncate,
    truncated_head_length,
    unknown_tool_text,
    unreadable_arguments_text,
)
from .schema import ConversionError

__all__ = ["ExecuteTools", "ExecutionContext", "ToolExecutorActor", "ToolPolicy"]

log = logging.getLogger("agentactors.tools")

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
        # the backend's own class and clock once (:mod:`._backend`).
        self._scope: type[anyio.CancelScope] = anyio.CancelScope
        self._clock: Callable[[], float] = anyio.current_time

    async def on_start(self) -> None:
        """Runs inside the event loop the executor serves: resolve that backend's cancel scope class and clock."""
        self._scope = type(anyio.CancelScope())
        self._clock = backend_function("current_time", anyio.current_time)

    @property
    def tools(self) -> Mapping[str, Tool[Any, Any]]:
        return self._tools

    def __repr__(self) -> str:
        return f"ToolExecutorActor(tools={list(self._names)}, max_concurrency_per_step={self.max_concurrency_per_step})"

    async def receive(self, message: ExecuteTools) -> tuple[ToolResult, ...]:
        """Answer :class:`ExecuteTools`.  :raises TypeError: for any other message."""
        if not isinstance(message, ExecuteTools):
            raise TypeError(f"ToolExecutorActor handles ExecuteTools, not {type(message).__name__}")
        calls = message.calls
        if len(calls) == 1:  # the common case, one frame less: execute() would do just this
            return (await self.execute_one(calls[0], message.context),)
        return await self.execute(calls, message.context)

    async def execute(
        self, calls: Iterable[ToolCall], context: ExecutionContext = _DEFAULT_CONTEXT
    ) -> tuple[ToolResult, ...]:
        """Run ``calls`` and return one result per call, in call order (see the class docstring)."""
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
        """
        started = self._clock()
        sink = current_sink()
        # One check when nobody listens: no payload is built for either event.
        events = sink if sink is not None and sink.fanout.recorders else None
        if events is not None:
            events.emit("tools.started", call_id=call.id, name=call.name)
        try:
            result = await self._dispatch(call, context, started, sink)
        except BaseException as exc:
            if events is not None and isinstance(exc, anyio.get_cancelled_exc_class()):
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

    async def _dispatch(
        self, call: ToolCall, context: ExecutionContext, started: float, sink: EventSink | None
    ) -> ToolResult:
        t = self._tools.get(call.name)
        if t is None:
            return self._finish(
                call, None, ToolStatus.invalid, unknown_tool_text(call.name, self._names), context, started
            )
        if call.arguments_error is not None:
            text = unreadable_arguments_text(
                t.name, call.arguments_error, call.arguments_error_detail, t.spec.required, t.fix_text()
            )
            return self._finish(call, t, ToolStatus.invalid, text, context, started)
        issues = t.validate(call.arguments)
        if issues:
            return self._finish(call, t, ToolStatus.invalid, t.invalid_text(issues), context, started)
        decision = context.approvals.get(call.id) if context.approvals else None
        if isinstance(decision, str):  # a person said no: the tool does not run, no policy is asked
            text = decision_denied_text(t.name, decision)
            return self._finish(call, t, ToolStatus.denied, text, context, started)
        policies = (self.tool_policy, context.tool_policy) if decision is None else (None, None)
        ctx: ToolContext | None = None
        # Built only for someone who reads it: a policy, or a tool that takes a ToolContext.
        if t.takes_context or policies[0] is not None or policies[1] is not None:
            ctx = ToolContext(
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
            for policy in policies:
                if policy is not None:
                    reason = await _ask_policy(policy, call, ctx)
                    if isinstance(reason, NeedsApproval):
                        return pending_result(call.id, t.name, reason.reason)
                    if reason is not None:
                        return self._finish(call, t, ToolStatus.denied, denied_text(t.name, reason), context, started)
        if t.requires_approval and decision is None:
            return pending_result(call.id, t.name, "the tool requires approval")
        timeout = t.timeout if t.timeout is not None else self.default_timeout
        try:
            # An async tool's coroutine is awaited here directly: Tool.invoke would add a frame per call.
            if t.never_waits:
                # Its body has no await: the call ends in this one step, and a timeout could not interrupt
                # it (nothing can), so it pays for no scope and no timer.
                value = _run_to_end(t.start(call.arguments, ctx), t.name)
            elif timeout is None:
                if t.is_async:
                    value = await t.start(call.arguments, ctx)
                else:
                    value = await t.invoke(call.arguments, ctx, on_abandoned=_Abandoned(call.id, t.name))
            else:
                # The tool's time starts now (a policy's own time, it may await, is not the tool's);
                # with no policy, "now" is when the call started: no second clock read.
                deadline = (started if ctx is None else self._clock()) + timeout
                if t.is_async:
                    awaitable = t.start(call.arguments, ctx)
                    with self._scope() as scope:
                        if type(awaitable) is types.CoroutineType or isinstance(awaitable, Coroutine):
                            try:
                                # The first step here: a call that never waits needs no trampoline, no timer.
                                first = awaitable.send(None)
                            except StopIteration as stop:
                                value = stop.value
                            else:
                                scope.deadline = deadline  # the same as from the start: it could not have struck
                                value = await _armed_at_first_wait(awaitable, first)
                        else:
                            scope.deadline = deadline
                            value = await awaitable
                else:
                    with self._scope(deadline=deadline) as scope:
                        value = await t.invoke(call.arguments, ctx, on_abandoned=_Abandoned(call.id, t.name))
                if scope.cancelled_caught:
                    return self._finish(call, t, ToolStatus.timeout, timeout_text(t.name, timeout), context, started)
        except ConversionError as exc:
            text = t.invalid_text([_conversion_issue(exc)])
            return self._finish(call, t, ToolStatus.invalid, text, context, started)
        except ToolDenied as exc:
            return self._finish(call, t, ToolStatus.denied, denied_text(t.name, exc.reason), context, started)
        except Exception as exc:
            return self._finish(call, t, ToolStatus.error, format_error(exc), context, started)
        except BaseException as exc:
            # SystemExit, a BaseException of the tool's own, a CancelledError no scope asked for:
            # the tool's failure.  A real cancellation, KeyboardInterrupt, GeneratorExit: not its to stop.
            if escapes(exc):
                raise
            return self._finish(call, t, ToolStatus.error, format_error(exc), context, started)
        media: tuple[MediaPart, ...] = ()
        parts = split_parts(value)
        if parts is not None:
            content, media = parts  # images etc. a tool returned ride beside its text
        else:
            try:
                content = render_result(value)
            except Exception:  # TypeError whatever went wrong (too deep, circular, a conversion that raised)
                text = format_error(
                    TypeError(f"the tool returned a {type(value).__name__} that cannot be sent as JSON")
                )
                return self._finish(call, t, ToolStatus.error, text, context, started)
        del value
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
        name = t.name if t is not None else call.name
        if not content.isascii():
            content = _encodable(call, name, content)
        suffix = ""
        if t is not None and status in (ToolStatus.error, ToolStatus.invalid):
            hint = t.hint_text(content)
            if hint is not None:
                suffix = f"\nHint: {hint}" if hint.isascii() else _encodable(call, name, f"\nHint: {hint}")
        truncated = False
        cap = context.max_tool_result_chars
        # The operator's cap is for what tools produce (results and their error messages); our own
        # texts (invalid, denied, timeout) are short by construction and must stay whole to be useful.
        if cap is not None and status in (ToolStatus.ok, ToolStatus.error) and len(content) + len(suffix) > cap:
            if len(suffix) >= cap:
                suffix = ""  # a hint as long as the cap itself cannot be kept
            room = cap - len(suffix)
            if len(content) > room:
                size = len(content)
                content = truncate(name, content, room)
                truncated = True
                shown = truncated_head_length(name, size, room)
                emit("tools.result_truncated", call_id=call.id, name=name, size=size, cap=cap, shown=shown)
        if suffix:
            content += suffix
        return ToolResult(
            call.id,
            name,
            status,
            content,
            len(content),
            max(0.0, self._clock() - started),
            truncated,  # positional: keywords cost a good part of building a result, once per call
            refused,
            original,
            media,
        )


def _run_to_end(awaitable: Awaitable[Any], name: str) -> Any:
    """The value of a coroutine that ends in its first step (:attr:`Tool.never_waits`).

    :raises RuntimeError: it waited after all (the bytecode check is wrong for this interpreter); the
        coroutine is closed and the call is an ``error``, never a call left running without its timeout.
    """
    coro: Any = awaitable
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError(f"tool {name!r} waited, though its body has no await; please report this")


@types.coroutine
def _armed_at_first_wait(coro: Coroutine[Any, Any, Any], yielded: Any) -> Generator[Any, Any, Any]:
    """Go on awaiting ``coro`` from its first wait (``yielded``), once its scope's deadline is armed.

    A deadline can only strike while the tool waits, and most calls of an async
    tool never wait: the caller runs the first step itself, and only a call that
    waits pays for a timer and this trampoline (arming and disarming a timer is
    a good part of a cancel scope's cost).  The scope itself is entered before
    the coroutine starts, so scopes the tool opens nest inside it as they must.
    """
    while True:
        # Pass what the coroutine yields to the event loop, and what comes back (a value, or a
        # cancellation thrown in) to the coroutine.
        try:
            sent = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                yielded = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
            continue
        try:
            yielded = coro.send(sent)
        except StopIteration as stop:
            return stop.value


async def _ask_policy(policy: ToolPolicy, call: ToolCall, ctx: ToolContext) -> str | NeedsApproval | None:
    """The policy's reason to deny (``None`` allows, :class:`NeedsApproval` asks a person).

    A policy that fails denies: it fails closed.

    "Fails" as for a tool (:mod:`agentactors._containment`): SystemExit and stray cancellations
    included; a real cancellation, KeyboardInterrupt and GeneratorExit propagate.
    """
    try:
        verdict: Any = policy(call, ctx)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        if verdict is None or isinstance(verdict, NeedsApproval):
            return verdict
        reason = str(verdict)
    except BaseException as exc:
        if escapes(exc):
            raise
        log.warning("tool_policy raised %s for tool %r; the call is denied", type(exc).__name__, call.name)
        return f"the tool policy could not decide ({type(exc).__name__})"
    return reason if reason.strip() else "no reason given"


class _Abandoned:
    """Reports a sync call its caller left (timeout, cancellation): an event and a log line."""

    __slots__ = ("call_id", "name")

    def __init__(self, call_id: str, name: str) -> None:
        self.call_id = call_id
        self.name = name

    def __call__(self, alive: int) -> None:
        # The thread cannot be stopped; what can be done is to say so, with how many are stuck.
        log.info(
            "sync tool %r (call %s) was abandoned in its worker thread; %d abandoned thread(s) still running",
            self.name,
            self.call_id,
            alive,
        )
        emit("tools.thread_abandoned", call_id=self.call_id, name=self.name, alive=alive)


def _encodable(call: ToolCall, name: str, text: str) -> str:
    """``text`` as the next request can carry it; repairs are recorded (``tools.surrogates_replaced``)."""
    fixed, count = encodable_text(text)
    if count:
        emit("tools.surrogates_replaced", call_id=call.id, name=name, surrogates=count)
    return fixed


def _conversion_issue(exc: ConversionError) -> ValidationIssue:
    return ValidationIssue(exc.path, exc.expected, "a value that does not convert")
