"""Generated steps (hypothesis) through one ``ToolExecutorActor``: drawn tools that misbehave, drawn policies, caps
and concurrency, steps of good and bad calls, sometimes cancelled from outside — on both backends, virtual time.

A program draws a set of tools — async (waiting or never waiting) or sync (in a worker thread), each with a
timeout or none, a ceiling or none, a hint, ``sequential`` and ``read_only`` flags — whose bodies return a str,
a dict, a dataclass, bytes of text or binary data, ``None``, huge text, text with lone surrogates, a NaN, an
object JSON cannot hold, one whose ``__str__`` and ``__repr__`` raise; or raise a ``ValueError``, an exception
whose message cannot be read, a ``BaseException`` of their own, ``SystemExit``, ``ToolDenied``, ``ModelRetry``,
``KeyboardInterrupt``; or sleep past their timeout (async: virtual time); or, sync, block in their thread
ignoring the cancellation (or polling ``ctx.check_cancelled()``) until released.  Then an executor (its
concurrency, default timeout, policy), and two to four steps of calls (valid, wrong-typed, missing and extra
arguments, unparseable ones, unknown names, duplicate ids, up to 24 calls), each step asked through
``execute`` or ``receive``, some cancelled from outside at a drawn virtual time.

What is checked is what docs/loop.md ("Tool results") and docs/reliability.md ("Tool outcomes", "Stuck sync
tools", "What cancellation leaves behind") promise: exactly one result per call, in call order, each with its
call's id and name; the status and text documented for each misbehaviour; a ceiling refuses (the payload in no
event), the cap truncates with its marker and a verbatim head; a timeout is typed and ends at its deadline; a
cancelled step answers nothing, leaves no async tool running and ends every started call's events; an abandoned
thread is reported, emits nothing after its call ended, and returns; the executor serves the next step whatever
a tool did.  A sync tool's thread takes real time that virtual clocks see as idleness, so a sync call with a
finite timeout may end ``timeout`` whatever its body does, and a cancellation may strike while one runs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentactors.actors import worker_threads
from agentactors.errors import ModelRetry, ToolDenied
from agentactors.events import EventSink, InMemoryRecorder, use_sink
from agentactors.messages import ToolCall
from agentactors.testing import virtual_backends
from agentactors.tools import ToolContext, ToolStatus, tool
from agentactors.tools.executor import ExecuteTools, ExecutionContext, ToolExecutorActor
from agentactors.tools.registry import Tool
from agentactors.tools.results import ResultCeiling, refusal_text, timeout_text, truncation_marker

SETTINGS = settings(
    max_examples=int(os.environ.get("GENERATED_EXECUTOR_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

HUGE = 100_000
BIG_MARK = "Q"  # the refused payload's character: no event may carry a run of it


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ itself fails")


class OwnBase(BaseException):
    """A BaseException subclass of the tool author's own."""


class Mute:
    """An object whose __str__ and __repr__ raise."""

    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


# -- what a tool's body does, and what the model must read of it ---------------------------------------------

# kind -> (value or raise, for n) ; the expectations are in expected_raw()
VALUE_KINDS = (
    "text", "dict", "dataclass", "bytes", "binary", "none", "huge", "surrogate", "nan", "object", "mute",
)
RAISE_KINDS = (
    "value_error", "unprintable", "surrogate_error", "group", "own_base", "system_exit", "denied", "retry",
    "interrupt",
)
ASYNC_ONLY = ("sleep", "stubborn")
CLEANUP = 0.3  # how long a stubborn tool's shielded cleanup takes when it is cancelled (virtual seconds)
SYNC_ONLY = ("blocked", "polite")


def produce(kind: str, n: int) -> Any:
    if kind == "text":
        return BIG_MARK * n
    if kind == "dict":
        return {"n": n, "s": "é" * n}
    if kind == "dataclass":
        return Point(n, -n)
    if kind == "bytes":
        return ("b" * n).encode()
    if kind == "binary":
        return b"\x00\xff" + bytes(n)
    if kind == "none":
        return None
    if kind == "huge":
        return BIG_MARK * HUGE
    if kind == "surrogate":
        return "s\ud800" * (n % 5 + 1) + "x"
    if kind == "nan":
        return {"v": [1.0, math.nan]}
    if kind == "object":
        return object()
    if kind == "mute":
        return Mute()
    if kind == "value_error":
        raise ValueError(f"bad {n}")
    if kind == "unprintable":
        raise Unprintable()
    if kind == "surrogate_error":
        raise ValueError("half \udcff a character")
    if kind == "group":
        raise BaseExceptionGroup("many", [OwnBase("own"), ValueError("v")])
    if kind == "own_base":
        raise OwnBase("own")
    if kind == "system_exit":
        raise SystemExit(2)
    if kind == "denied":
        raise ToolDenied("not today")
    if kind == "retry":
        raise ModelRetry("call it again")
    if kind == "interrupt":
        raise KeyboardInterrupt
    if kind in ("sleep", "stubborn"):
        return f"slept {n}"
    raise AssertionError(kind)


def expected_raw(kind: str, n: int, name: str) -> tuple[ToolStatus, str]:
    """The status and text the tool's outcome maps to, before the ceiling, the hint and the cap."""
    unsendable = "Error: TypeError: the tool returned a {} that cannot be sent as JSON"
    if kind == "text":
        return ToolStatus.ok, BIG_MARK * n
    if kind == "dict":
        return ToolStatus.ok, json.dumps({"n": n, "s": "é" * n}, ensure_ascii=False)
    if kind == "dataclass":
        return ToolStatus.ok, json.dumps({"x": n, "y": -n})
    if kind == "bytes":
        return ToolStatus.ok, json.dumps("b" * n)  # the text, as a JSON string
    if kind == "binary":
        return ToolStatus.error, unsendable.format("bytes") + (
            " (it holds binary data (bytes that are not UTF-8 text): return a str, base64-encode the bytes, "
            "or return an Image, Document or Audio part)"
        )
    if kind == "none":
        return ToolStatus.ok, "null"
    if kind == "huge":
        return ToolStatus.ok, BIG_MARK * HUGE
    if kind == "surrogate":
        return ToolStatus.ok, "s\ufffd" * (n % 5 + 1) + "x"
    if kind == "nan":
        return ToolStatus.error, unsendable.format("dict") + (
            " (it holds a NaN or an infinity, which JSON has no number for: return None or a str for it)"
        )
    if kind == "object":
        return ToolStatus.error, unsendable.replace("a {}", "an object")
    if kind == "mute":
        return ToolStatus.error, unsendable.format("Mute")
    if kind == "value_error":
        return ToolStatus.error, f"Error: ValueError: bad {n}"
    if kind == "unprintable":
        return ToolStatus.error, "Error: Unprintable (its message could not be read)"
    if kind == "surrogate_error":
        return ToolStatus.error, "Error: ValueError: half \ufffd a character"
    if kind == "group":
        return ToolStatus.error, "Error: BaseExceptionGroup: many (2 sub-exceptions) — OwnBase: own; ValueError: v"
    if kind == "own_base":
        return ToolStatus.error, "Error: OwnBase: own"
    if kind == "system_exit":
        return ToolStatus.error, "Error: SystemExit: 2"
    if kind == "denied":
        return ToolStatus.denied, f"Tool '{name}' refused this call: not today. Do not make the same call again; " \
            "continue without it."
    if kind == "retry":
        return ToolStatus.error, "Retry: call it again"
    if kind in ("sleep", "stubborn", "blocked", "polite"):
        return ToolStatus.ok, "released" if kind in SYNC_ONLY else f"slept {n}"
    raise AssertionError(kind)


# -- the harness: what the tools' bodies record --------------------------------------------------------------


class Harness:
    """What the bodies of one example's tools record (reset per example; the tests run one at a time)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.async_running = 0
        self.async_cancelled = 0
        self.peak = 0  # the most async bodies running at once in the current step
        self.alone = False  # a sequential tool's body runs
        self.violations: list[str] = []
        self.release = threading.Event()  # lets blocked sync tools return
        self.threads_in = 0
        self.threads_out = 0
        self.thread_calls: list[str] = []  # call ids of the sync bodies that blocked

    def thread_enter(self, call_id: str) -> None:
        with self.lock:
            self.threads_in += 1
            self.thread_calls.append(call_id)

    def thread_exit(self) -> None:
        with self.lock:
            self.threads_out += 1


H = Harness()


@dataclasses.dataclass(frozen=True)
class ToolPlan:
    kind: str
    is_async: bool
    waits: bool  # async: awaits before its value (never_waits otherwise); sync: unused
    timeout: float | None
    ceiling: int | None
    hint: str | None
    sequential: bool
    read_only: bool
    takes_context: bool

    def sleep_for(self, n: int) -> float:
        return n * 0.1 + 0.05  # never equal to a drawn timeout (multiples of 0.1)


def make_tool(index: int, plan: ToolPlan) -> Tool[Any, Any]:
    kind = plan.kind
    fn: Callable[..., Any]
    if plan.is_async and plan.waits:

        async def waiting(n: int) -> Any:
            if H.alone or (plan.sequential and H.async_running):
                H.violations.append(f"t{index} ran beside a sequential tool's call")
            H.async_running += 1
            H.peak = max(H.peak, H.async_running)
            H.alone = plan.sequential
            try:
                await anyio.lowlevel.checkpoint()
                if kind in ("sleep", "stubborn"):
                    await anyio.sleep(plan.sleep_for(n))
                return produce(kind, n)
            except anyio.get_cancelled_exc_class():
                H.async_cancelled += 1
                if kind == "stubborn":  # a cleanup that must finish: it holds the cancellation a while
                    with anyio.CancelScope(shield=True):
                        await anyio.sleep(CLEANUP)
                raise
            finally:
                H.async_running -= 1
                H.alone = False

        async def waiting_ctx(n: int, ctx: ToolContext) -> Any:
            assert ctx.tool_name == f"t{index}"
            return await waiting(n)

        fn = waiting_ctx if plan.takes_context else waiting
    elif plan.is_async:

        async def at_once(n: int) -> Any:
            return produce(kind, n)  # no await: the executor's run_to_end path

        fn = at_once
    elif kind in SYNC_ONLY:

        def blocking(n: int, ctx: ToolContext) -> Any:
            H.thread_enter(ctx.call_id)
            try:
                if kind == "blocked":
                    H.release.wait(10)  # ignores its cancellation until released
                else:
                    while not H.release.wait(0.001):
                        ctx.check_cancelled()  # notices it was abandoned
                ctx.emit("tools.late", n=n)  # after its call ended: must reach no recorder
                return "released"
            finally:
                H.thread_exit()

        fn = blocking
    else:

        def plain(n: int) -> Any:
            return produce(kind, n)

        def plain_ctx(n: int, ctx: ToolContext) -> Any:
            assert ctx.tool_name == f"t{index}"
            return produce(kind, n)

        fn = plain_ctx if plan.takes_context else plain
    ceiling = ResultCeiling(plan.ceiling, narrow_by=("n",)) if plan.ceiling is not None else None
    return tool(
        fn,
        name=f"t{index}",
        timeout=plan.timeout,
        result_ceiling=ceiling,
        hint=plan.hint,
        sequential=plan.sequential,
        read_only=plan.read_only,
    )


TIMEOUTS = st.sampled_from([0.1, 0.5, 1.0, 2.5])


@st.composite
def tool_plans(draw: st.DrawFn) -> ToolPlan:
    is_async = draw(st.booleans())
    kinds = VALUE_KINDS + RAISE_KINDS + (ASYNC_ONLY if is_async else SYNC_ONLY)
    kind = draw(st.sampled_from(kinds))
    waits = kind in ASYNC_ONLY or (is_async and draw(st.booleans()))
    timeout = draw(st.none() | TIMEOUTS | st.just(math.inf))
    if kind in SYNC_ONLY and (timeout is None or math.isinf(timeout)):
        timeout = draw(TIMEOUTS)  # (a blocked thread with no deadline would hold the step until released)
    return ToolPlan(
        kind=kind,
        is_async=is_async,
        waits=waits,
        timeout=timeout,
        ceiling=draw(st.none() | st.integers(1, 400)),
        hint=draw(st.none() | st.sampled_from(["Try n=1.", "h" * 50])),
        sequential=draw(st.booleans()),
        read_only=draw(st.booleans()),
        takes_context=kind in SYNC_ONLY or (waits and draw(st.booleans())),
    )


@dataclasses.dataclass(frozen=True)
class Step:
    calls: tuple[ToolCall, ...]
    cancel_at: float | None
    cap: int | None
    via_receive: bool
    context_policy: bool


@dataclasses.dataclass(frozen=True)
class Program:
    tools: tuple[ToolPlan, ...]
    concurrency: int
    default_timeout: float | None
    denied: frozenset[str]  # tool names a policy denies
    failing: frozenset[str]  # tool names the policy raises for
    executor_policy: bool
    steps: tuple[Step, ...]


@st.composite
def calls_for(draw: st.DrawFn, names: list[str]) -> ToolCall:
    name = draw(st.sampled_from([*names, "nope"]) if draw(st.integers(0, 9)) == 0 else st.sampled_from(names))
    call_id = draw(st.sampled_from(["c0", "c1", "c2"]) | st.from_regex(r"call_[a-z0-9]{1,6}", fullmatch=True))
    n = draw(st.integers(0, 40) | st.integers(0, 600))
    shape = draw(st.sampled_from(["valid"] * 6 + ["float", "string", "missing", "extra", "bool", "unparseable"]))
    if shape == "unparseable":
        return ToolCall.from_raw(call_id, name, '{"n": ' + str(n))
    shapes: dict[str, dict[str, Any]] = {
        "valid": {"n": n},
        "float": {"n": float(n)},
        "string": {"n": str(n)},
        "missing": {},
        "extra": {"n": n, "zzz": 1},
        "bool": {"n": True},
    }
    return ToolCall(call_id, name, shapes[shape])


@st.composite
def programs(draw: st.DrawFn) -> Program:
    tools = tuple(draw(st.lists(tool_plans(), min_size=1, max_size=6)))
    names = [f"t{i}" for i in range(len(tools))]
    subset = st.frozensets(st.sampled_from(names), max_size=1)
    steps = []
    for _ in range(draw(st.integers(2, 4))):
        size = draw(st.sampled_from([0, 1, 1, 2, 3, 5, 8, 24]))
        calls = tuple(draw(calls_for(names)) for _ in range(size))
        steps.append(
            Step(
                calls=calls,
                cancel_at=draw(st.none() | st.none() | st.sampled_from([0.0, 0.05, 0.3, 1.0, 3.0])),
                cap=draw(st.none() | st.integers(1, 300)),
                via_receive=draw(st.booleans()),
                context_policy=draw(st.booleans()),
            )
        )
    return Program(
        tools=tools,
        concurrency=draw(st.sampled_from([1, 2, 4, 16])),
        default_timeout=draw(st.none() | TIMEOUTS),
        denied=draw(subset),
        failing=draw(subset),
        executor_policy=draw(st.booleans()),
        steps=tuple(steps),
    )


# -- checking one step -----------------------------------------------------------------------------------------


def arguments_valid(call: ToolCall) -> bool:
    if call.arguments_error is not None:
        return False
    n = call.arguments.get("n")
    return set(call.arguments) == {"n"} and type(n) in (int, float)


def check_capped(result: Any, name: str, expected: str, suffix: str, cap: int | None) -> None:
    """``result`` holds ``expected`` (+ the hint ``suffix``) as the cap leaves it (docs/loop.md, "Truncate")."""
    whole = expected + suffix
    if cap is None or len(whole) <= cap:
        assert result.content == whole, (result.content[:300], whole[:300])
        assert not result.truncated
        return
    kept = suffix if len(suffix) < cap else ""  # a hint as long as the cap is dropped
    if len(expected) <= cap - len(kept):
        assert result.content == expected + kept and not result.truncated
        return
    assert result.truncated
    assert result.size_chars <= cap
    if kept:
        assert result.content.endswith(kept)
    body = result.content[: len(result.content) - len(kept)]
    if "\n" not in body:  # a cap too small for the marker and a head: the marker clipped to it
        assert body == truncation_marker(name, len(expected), 0)[: cap - len(kept)], body
        return
    marker, _, head = body.partition("\n")
    shown = len(head)
    assert marker == truncation_marker(name, len(expected), shown)
    assert head == expected[:shown]


class StepOutcome:
    def __init__(self) -> None:
        self.results: tuple[Any, ...] | None = None
        self.cancelled = False
        self.interrupted = False
        self.elapsed = 0.0


def policy_reason(program: Program) -> Callable[[ToolCall, ToolContext], str | None]:
    def policy(call: ToolCall, ctx: ToolContext) -> str | None:
        if call.name in program.failing:
            raise RuntimeError("the policy broke")
        return f"no {call.name} today" if call.name in program.denied else None

    return policy


def check_step(program: Program, step: Step, outcome: StepOutcome, events: list[Any]) -> None:
    plans = {f"t{i}": plan for i, plan in enumerate(program.tools)}
    policed = program.executor_policy or step.context_policy
    calls = step.calls
    runnable_interrupt = False
    for call in calls:
        plan = plans.get(call.name)
        if plan is None or not arguments_valid(call):
            continue
        if policed and (call.name in program.denied or call.name in program.failing):
            continue
        if plan.kind == "interrupt":
            runnable_interrupt = True
    # Every call that started ended: one tools.started and one tools.finished per call that ran.
    started = Counter(e.data["call_id"] for e in events if e.type == "tools.started")
    finished = Counter(e.data["call_id"] for e in events if e.type == "tools.finished")
    if not outcome.interrupted:
        assert started == finished, (started, finished)
    for e in events:
        if e.type == "tools.result_refused" or e.type == "tools.result_truncated":
            assert BIG_MARK * 50 not in repr(e.data)
    assert H.async_running == 0, "an async tool is still running after its step"
    assert not H.violations, H.violations
    assert H.peak <= program.concurrency, (H.peak, program.concurrency)
    H.peak = 0
    abandoned = [e.data["call_id"] for e in events if e.type == "tools.thread_abandoned"]
    event("step: " + ("interrupted" if outcome.interrupted else "cancelled" if outcome.cancelled else "answered"))
    if abandoned:
        event("a thread abandoned")
    for call_id in abandoned:  # only a sync call is abandoned, and only one that timed out or was cancelled
        assert any(
            c.id == call_id and c.name in plans and not plans[c.name].is_async
            and (outcome.results is None or outcome.results[i].status is ToolStatus.timeout)
            for i, c in enumerate(calls)
        ), call_id
    if outcome.interrupted:
        assert runnable_interrupt, "a KeyboardInterrupt out of a step that had no call raising it"
        return
    if outcome.cancelled:
        assert step.cancel_at is not None
        # At the drawn time; later only by a stubborn tool's shielded cleanup.
        assert step.cancel_at - 1e-6 <= outcome.elapsed <= step.cancel_at + CLEANUP + 1e-6, outcome.elapsed
        cancelled = Counter(
            e.data["call_id"] for e in events if e.type == "tools.finished" and e.data["status"] == "cancelled"
        )
        assert not cancelled - started, "a call ended cancelled that never started"
        return
    results = outcome.results
    assert results is not None
    assert len(results) == len(calls)
    assert Counter(e.data["call_id"] for e in events if e.type == "tools.started") == Counter(c.id for c in calls)
    for call, result in zip(calls, results, strict=True):
        assert result.call_id == call.id and result.name == call.name
        assert result.status is not ToolStatus.cancelled
        assert result.duration >= 0
        check_result(program, step, plans, call, result, policed, abandoned)
        event(f"status: {result.status}" + (" truncated" if result.truncated else ""))
    statuses: dict[str, list[str]] = {call.id: [] for call in calls}
    for e in events:
        if e.type == "tools.finished":
            statuses[e.data["call_id"]].append(str(e.data["status"]))
    for call, result in zip(calls, results, strict=True):
        assert str(result.status) in statuses[call.id]
    # The events say what acted on the results: one per refusal, per truncation; an error names its type.
    assert len([e for e in events if e.type == "tools.result_refused"]) == sum(r.refused for r in results)
    assert len([e for e in events if e.type == "tools.result_truncated"]) == sum(r.truncated for r in results)
    errors = [e for e in events if e.type == "tools.finished" and e.data["status"] == "error"]
    assert all(e.data.get("error_type") for e in errors), errors
    for call, result in zip(calls, results, strict=True):  # a repaired text is recorded
        plan = plans.get(call.name)
        if plan is not None and plan.kind.startswith("surrogate") and "\ufffd" in result.content:
            assert any(e.type == "tools.surrogates_replaced" and e.data["call_id"] == call.id for e in events)


def check_result(
    program: Program,
    step: Step,
    plans: dict[str, ToolPlan],
    call: ToolCall,
    result: Any,
    policed: bool,
    abandoned: list[str],
) -> None:
    name = call.name
    plan = plans.get(name)
    if plan is None:
        assert result.status is ToolStatus.invalid
        assert result.content.startswith(f"Invalid call: there is no tool named '{name}'")
        return
    suffix = f"\nHint: {plan.hint}" if plan.hint is not None else ""
    if not arguments_valid(call):
        assert result.status is ToolStatus.invalid
        assert result.content.startswith(f"Invalid arguments for tool '{name}' — the call was not executed.")
        assert result.content.endswith(suffix) and not result.truncated
        return
    if policed and name in program.failing:
        assert result.status is ToolStatus.denied, result
        assert "the tool policy could not decide (RuntimeError)" in result.content
        return
    if policed and name in program.denied:
        assert result.status is ToolStatus.denied, result
        assert f"Reason: no {name} today." in result.content
        return
    n = int(call.arguments["n"])
    timeout = plan.timeout if plan.timeout is not None else program.default_timeout
    finite = timeout is not None and not math.isinf(timeout)
    if result.status is ToolStatus.timeout:
        # An async tool times out only when it sleeps past its deadline; a sync one may whenever its thread runs
        # (virtual time sees the thread's real time as idleness) — and a blocked one always does.
        assert finite, result
        assert timeout is not None
        if plan.is_async:
            assert plan.kind in ASYNC_ONLY and plan.sleep_for(n) > timeout, result
        assert result.content == timeout_text(name, timeout)
        assert not result.truncated and result.original_chars is None
        # Ended at its deadline (a stubborn tool: once its shielded cleanup ended).
        late = CLEANUP if plan.kind == "stubborn" else 0.0
        assert result.duration == pytest.approx(timeout + late, abs=1e-6), (result.duration, timeout)
        return
    assert not (not plan.is_async and plan.kind in SYNC_ONLY), f"a blocked sync tool ended {result.status}"
    if plan.kind in ASYNC_ONLY:
        assert not finite or plan.sleep_for(n) < (timeout or 0), f"{result} slept {plan.sleep_for(n)} s"
        assert result.duration == pytest.approx(plan.sleep_for(n), abs=1e-6)
    if plan.kind == "interrupt":
        raise AssertionError(f"a tool raising KeyboardInterrupt answered {result}")
    status, expected = expected_raw(plan.kind, n, name)
    if status is ToolStatus.ok and plan.ceiling is not None and len(expected) > plan.ceiling:
        assert result.status is ToolStatus.invalid, result.status
        assert result.refused and not result.truncated
        assert result.original_chars == len(expected)
        assert result.content == refusal_text(name, len(expected), ResultCeiling(plan.ceiling, ("n",))) + suffix
        return
    assert result.status is status, (result.status, status, result.content[:200])
    assert not result.refused
    if status is ToolStatus.ok:
        assert result.original_chars == len(expected)
        check_capped(result, name, expected, "", step.cap)
    elif status is ToolStatus.error:
        check_capped(result, name, expected, suffix, step.cap)
    else:  # denied by the tool itself: the loop's own text, never cut, no hint
        assert result.content == expected


# -- running a program -----------------------------------------------------------------------------------------


async def run_step(
    ex: ToolExecutorActor, program: Program, step: Step, policy: Callable[..., Any]
) -> tuple[StepOutcome, list[Any]]:
    rec = InMemoryRecorder()
    sink = EventSink([rec], run_id="run-gen")
    context = ExecutionContext(
        max_tool_result_chars=step.cap, tool_policy=policy if step.context_policy else None, step=1
    )
    outcome = StepOutcome()
    begin = anyio.current_time()
    with use_sink(sink):
        try:
            with anyio.CancelScope() as scope:
                if step.cancel_at is not None:
                    scope.deadline = begin + step.cancel_at
                if step.via_receive:
                    outcome.results = await ex.receive(ExecuteTools(step.calls, context))
                else:
                    outcome.results = await ex.execute(step.calls, context)
            outcome.cancelled = scope.cancelled_caught
        except KeyboardInterrupt:
            outcome.interrupted = True
    outcome.elapsed = anyio.current_time() - begin
    if outcome.cancelled:
        assert outcome.results is None, "a cancelled step answered"
    return outcome, rec.events


async def run_program(program: Program) -> None:
    global H
    H = Harness()
    policy = policy_reason(program)
    ex = ToolExecutorActor(
        [make_tool(i, plan) for i, plan in enumerate(program.tools)],
        max_concurrency_per_step=program.concurrency,
        default_timeout=program.default_timeout,
        tool_policy=policy if program.executor_policy else None,
    )
    await ex.on_start()
    recorded: list[list[Any]] = []
    try:
        for step in program.steps:
            outcome, events = await run_step(ex, program, step, policy)
            recorded.append(events)
            check_step(program, step, outcome, events)
    finally:
        H.release.set()
    # Abandoned threads run on until their function returns, then are no longer counted (docs/reliability.md).
    threads = worker_threads()
    give_up = time.monotonic() + 10  # real time: the virtual clock jumps while a thread runs
    while threads.abandoned and time.monotonic() < give_up:
        await anyio.to_thread.run_sync(time.sleep, 0.002)
    assert threads.abandoned == 0
    assert H.threads_in == H.threads_out
    for events in recorded:  # nothing of a call reaches the recorders after its tools.finished
        assert not any(e.type == "tools.late" for e in events), "an abandoned thread's event reached the recorder"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@SETTINGS
@given(program=programs())
def test_generated_steps_keep_the_documented_promises(backend: str, program: Program) -> None:
    name, options = dict(enumerate(virtual_backends()))[0 if backend == "asyncio" else 1]
    anyio.run(run_program, program, backend=name, backend_options=options)
