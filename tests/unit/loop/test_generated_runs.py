"""Generated runs (hypothesis): random models, tools and options through an Agent, on both backends.

A run is drawn whole — what the model answers at each step (text, think-only text, reasoning, 1-4 tool calls
of known, unknown, handoff and output tools with good, missing, extra, wrong or unparseable arguments and
fresh, duplicate, empty or overlong ids, odd stop reasons, a provider error, a stream cut, a delay), what
its tools do (small and huge results, results over a ceiling, a raise, a ``ModelRetry``, a ``ToolDenied``,
a timeout of an async and of a sync tool, values JSON cannot carry, media parts, a delegated agent, an
approval that pauses or waits in place), the agent's options (``max_steps``, ``max_empty_steps``, the cap,
the context budget, ``on_tool_status``, a policy, ``output_type``, a validator, nudges, handoffs, the JSON
transport, a recorder or none, a deadline, a runtime of the caller's or a private one), and how it is driven
(``agent.run``, ``on_token``, ``agent.stream`` with steers / interrupts / cancels / decisions at some events,
a cancellation from outside after some virtual delay; a paused run resumed the same ways, with some
decisions) — and run on virtual time.  What is checked is what docs/loop.md, docs/agents.md and
docs/output.md say: the run ends in a ``RunResult`` (or the documented raise), every request and the
conversation are ones a vendor takes, its counters, flags, usage, results and events agree, and
``explain`` reads them.  Plain examples of what it found: test_generated_regressions.py.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentactors import Agent, InMemoryRecorder, LLMResponse, NeedsApproval, RunResult, Runtime, ToolStatus, tool
from agentactors.errors import (
    CallNotPendingError,
    ModelRetry,
    ProviderError,
    RunFinishedError,
    RunInterruptedError,
    ToolDenied,
    ToolStatusError,
)
from agentactors.events import Event
from agentactors.explain import explain
from agentactors.messages import LLMRequest, Message, StopReason, ToolCall, Usage
from agentactors.parts import Image, Text
from agentactors.providers.scripted import ScriptedProvider, StreamCut
from agentactors.testing import virtual_backends
from agentactors.tools.results import ResultCeiling

# The budget of examples per backend (GENERATED_RUNS_EXAMPLES=5000 for a long hunt).
SETTINGS = settings(
    max_examples=int(os.environ.get("GENERATED_RUNS_EXAMPLES", "800")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SECRET_BODY = "VENDOR-BODY-do-not-show"
CEILING = 300
BIG_MARK = "Q"  # the refused payload's character: it must appear in no message and no event


@dataclass
class Point:
    x: int
    y: int


# -- tools -----------------------------------------------------------------------------------------------


@tool
async def echo(x: str) -> str:
    """Echo."""
    return x


@tool
def add(a: int, b: int) -> int:
    """Add (sync)."""
    return a + b


@tool(result_ceiling=ResultCeiling(max_chars=CEILING, narrow_by=("n",)))
async def big(n: int) -> str:
    """A result of n chars, refused over its ceiling."""
    return BIG_MARK * n


@tool
def huge() -> str:
    """A long result (sync): over any cap drawn."""
    return "z" * 5000


@tool(hint="Do not call boom again.")
async def boom() -> str:
    """Raises."""
    raise ValueError("boom went off")


@tool
async def retry() -> str:
    """Asks the model to try again."""
    raise ModelRetry("call it with more care")


@tool(timeout=5)
async def slow() -> str:
    """Sleeps past its timeout."""
    await anyio.sleep(100)
    return "never"


@tool(timeout=0.01)
def slow_sync() -> str:
    """Sleeps past its timeout in its thread (abandoned)."""
    time.sleep(0.02)
    return "never"


ODD_VALUES: list[Callable[[], Any]] = [
    lambda: {"a": [1, 2, {"b": None}]},
    lambda: math.nan,
    lambda: b"\x00\xff\xfe",
    lambda: {1, 2},
    lambda: object(),
    lambda: "\ud800 lone",
    lambda: 12.5,
    lambda: None,
    lambda: Image(url="https://example.com/cat.png"),
    lambda: [Text("the chart " + "w" * 400), Image(url="https://example.com/chart.png")],
    lambda: {"img": Image(url="https://example.com/cat.png")},
    lambda: [Text("x" * 2000)],
]


@tool
async def odd(kind: int) -> Any:
    """Returns a value JSON may not carry."""
    return ODD_VALUES[kind % len(ODD_VALUES)]()


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pays, once a person approves."""
    return f"paid {amount}"


@tool(sequential=True)
async def refuse(why: str) -> str:
    """Refuses the call itself (it ran)."""
    raise ToolDenied(why)


@tool(requires_approval=True, approval="wait", approval_timeout=10)
async def confirm(what: str) -> str:
    """Waits in place for a person (denied after 10 s without one)."""
    return f"confirmed {what}"


#: A delegated agent (a child run): what it answers, and its usage, join the caller's result.
CHILD_USAGE = Usage(7, 3)
helper = Agent(
    ScriptedProvider(lambda request: LLMResponse("child answer", usage=CHILD_USAGE)), name="helper"
).as_tool()

TOOLS: list[Any] = [echo, add, big, huge, boom, retry, slow, slow_sync, odd, pay, refuse, confirm, helper]
GOOD_ARGS: dict[str, dict[str, Any]] = {
    "echo": {"x": "hi"},
    "add": {"a": 1, "b": 2},
    "big": {"n": 2000},
    "huge": {},
    "boom": {},
    "retry": {},
    "slow": {},
    "slow_sync": {},
    "odd": {"kind": 0},
    "pay": {"amount": 5},
    "nosuch": {"q": 1},
    "refuse": {"why": "not today"},
    "confirm": {"what": "the order"},
    "helper": {"input": "look it up"},
    "final_result": {"x": 1, "y": 2},
    "transfer_to_target": {},
    "transfer_to_main": {},
}

# -- the plan --------------------------------------------------------------------------------------------

call_specs = st.tuples(
    st.sampled_from([*GOOD_ARGS, "pay", "echo", "final_result", "confirm"]),
    st.sampled_from(["good", "missing", "extra", "wrong", "unparseable", "small"]),
    st.sampled_from(["fresh", "fresh", "fresh", "dup", "empty", "long"]),
    st.integers(0, 11),
)
actions = st.one_of(
    st.tuples(st.just("text"), st.sampled_from(["Hello.", "Sure, I can help with that!", '{"x": 3, "y": 4}'])),
    st.tuples(st.just("think"), st.sampled_from(["<think>hmm</think>", "", "<thinking>x</thinking>  "])),
    st.tuples(st.just("calls"), st.lists(call_specs, min_size=1, max_size=4)),
    st.tuples(st.just("calls"), st.lists(call_specs, min_size=1, max_size=4)),
    st.tuples(
        st.just("calls"),
        st.lists(call_specs, min_size=1, max_size=4),
        st.sampled_from(["max_tokens", "end_turn", "pause_turn", "content_filter"]),
        st.sampled_from(["", "Let me check.", "<think>plan</think>"]),
    ),
    st.tuples(st.just("reasoning"), st.sampled_from(["", "The answer."])),
    st.tuples(
        st.just("stop"),
        st.sampled_from(["max_tokens", "content_filter", "pause_turn", "other", "stop_sequence"]),
        st.sampled_from(["", "partial answer", "<think>only</think>"]),
    ),
    st.tuples(st.just("error"), st.sampled_from(["transient", "request", "content_policy", "context"])),
    st.tuples(st.just("delay"), st.sampled_from([0.5, 3.0, 30.0])),
    st.tuples(st.just("cut"), st.sampled_from(["", "half an ans"])),
)
CONTROLS = ["steer", "interrupt", "cancel", "none", "approve", "deny"]
drives = st.one_of(
    st.just(("run",)),
    st.just(("tokens",)),
    st.tuples(
        st.just("stream"),
        st.lists(st.tuples(st.integers(1, 14), st.sampled_from(CONTROLS)), min_size=2, max_size=4),
        st.just("many"),
    ),
    st.tuples(st.just("stream"), st.integers(1, 14), st.sampled_from(CONTROLS)),
    st.tuples(st.just("outside"), st.sampled_from([0.0, 0.2, 1.0, 4.0, 10.0, 40.0])),
)
STATUS_ROUTES = st.dictionaries(
    st.sampled_from([ToolStatus.error, ToolStatus.invalid, ToolStatus.denied, ToolStatus.timeout]),
    st.sampled_from(["continue", "end_turn", "raise"]),
    max_size=2,
)


@dataclass
class Plan:
    """One generated run: the model's steps, the agent's options, how the run (and its resume) is driven."""

    steps: list[Any]
    max_steps: int
    max_empty_steps: int
    cap: int | None
    budget: int | None
    routes: dict[ToolStatus, str]
    policy: str
    typed: bool
    nudges: bool
    drive: tuple[Any, ...]
    decisions: list[Any]
    resume_drive: tuple[Any, ...]
    native: bool = True
    history: bool = False
    deadline: float | None = None
    output_retries: int = 2
    picky: bool = False
    recorded: bool = True
    handoff: bool = False
    runtime: bool = False


plans = st.builds(
    Plan,
    steps=st.lists(actions, max_size=7),
    max_steps=st.integers(1, 7),
    max_empty_steps=st.integers(1, 3),
    cap=st.sampled_from([None, 120, 1000]),
    budget=st.sampled_from([None, 300, 3000]),
    routes=STATUS_ROUTES,
    policy=st.sampled_from(["none", "deny_boom", "ask_echo"]),
    typed=st.booleans(),
    nudges=st.booleans(),
    drive=drives,
    decisions=st.lists(st.sampled_from([True, False, "not now"]), min_size=1, max_size=4),
    resume_drive=drives,
    native=st.booleans(),
    history=st.booleans(),
    deadline=st.sampled_from([None, None, 2.0, 20.0]),
    output_retries=st.integers(0, 2),
    picky=st.booleans(),
    recorded=st.sampled_from([True, True, True, False]),
    handoff=st.booleans(),
    runtime=st.booleans(),
)


class Model:
    """The scripted model of a plan: step i answers ``plan.steps[i]``, then a final answer for ever."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.calls = 0
        self.usage = Usage()  # what every response returned carried
        self.ids = 0
        self.last: LLMResponse | None = None  # the last response given (None when the last call raised)
        self.problems: list[str] = []  # what check_request found wrong in a request

    def _call(self, spec: tuple[str, str, str, int], made: list[ToolCall]) -> ToolCall:
        name, args_kind, id_kind, k = spec
        self.ids += 1
        if id_kind == "dup" and made:
            cid = made[-1].id
        elif id_kind == "empty":
            cid = ""
        elif id_kind == "long":
            cid = "c" * 60
        else:
            cid = f"c{self.ids}"
        args = dict(GOOD_ARGS[name])
        if name == "odd":
            args["kind"] = k
        if args_kind == "small" and name == "big":
            args["n"] = 10
        if args_kind == "missing" and args:
            args.pop(next(iter(args)))
        elif args_kind == "extra":
            args["zzz"] = 1
        elif args_kind == "wrong" and args:
            args[next(iter(args))] = [1, 2]
        elif args_kind == "unparseable":
            return ToolCall(cid, name, {}, raw_arguments='{"a": 1,', arguments_error="unparseable")
        return ToolCall(cid, name, args)

    async def __call__(self, request: LLMRequest) -> Any:
        if self.plan.native:
            try:
                check_request(request)
            except AssertionError as exc:  # raised here, the loop would take it for the provider's failure
                self.problems.append(f"{exc}")
        i = self.calls
        self.calls += 1
        self.last = None
        usage = Usage(i + 1, 1)
        if i >= len(self.plan.steps):
            if self.plan.typed:
                response = LLMResponse(tool_calls=[ToolCall(f"f{i}", "final_result", {"x": 1, "y": 2})], usage=usage)
            else:
                response = LLMResponse("Final answer.", usage=usage)
            self.usage += usage
            self.last = response
            return response
        action = self.plan.steps[i]
        kind = action[0]
        if kind == "error":
            raise ProviderError(
                "vendor said no", provider="scripted", kind=action[1], status=500, body_excerpt=SECRET_BODY
            )
        if kind == "cut":
            return StreamCut(action[1], ProviderError("connection reset", provider="scripted", kind="transient"))
        if kind == "delay":
            await anyio.sleep(action[1])
            response = LLMResponse("After a while.", usage=usage)
        elif kind == "text" or kind == "think":
            response = LLMResponse(action[1], usage=usage)
        elif kind == "calls":
            made: list[ToolCall] = []
            for spec in action[1]:
                made.append(self._call(spec, made))
            stop = StopReason(action[2]) if len(action) > 2 else StopReason.tool_use
            text = action[3] if len(action) > 3 else ""
            response = LLMResponse(text, tool_calls=made, stop_reason=stop, usage=usage)
        elif kind == "reasoning":
            response = LLMResponse(action[1], reasoning="a long thought", usage=usage)
        else:
            data = {"anthropic": {"blocks": [{"type": "server_tool_use"}]}} if action[1] == "pause_turn" else None
            response = LLMResponse(action[2], stop_reason=StopReason(action[1]), usage=usage, provider_data=data)
        self.usage += usage
        self.last = response
        return response


def picky(value: Any) -> Any:
    """An output validator that refuses the first value it sees of each kind, once."""
    if isinstance(value, Point) and value.x == 3:
        raise ModelRetry("x must not be 3")
    if isinstance(value, str) and value.startswith("Sure"):
        raise ModelRetry("answer the question")
    return value


def policy_of(plan: Plan) -> Any:
    if plan.policy == "deny_boom":
        return lambda call, ctx: "boom is not allowed" if call.name == "boom" else None
    if plan.policy == "ask_echo":
        return lambda call, ctx: NeedsApproval("echo needs a person") if call.name == "echo" else None
    return None


def agent_of(plan: Plan, model: Model, rec: InMemoryRecorder) -> Agent[Any]:
    provider = ScriptedProvider(model, model="m", carries_tools=plan.native)
    handoffs: list[Any] = []
    if plan.handoff:  # a target that can hand back: one run, one max_steps, the same model answering
        handoffs = [Agent(provider, name="target", tools=TOOLS, handoffs=["main"], **options_of(plan))]
    return Agent(
        provider,
        name="main",
        handoffs=handoffs,
        recorders=[rec] if plan.recorded else [],
        tools=TOOLS,
        **options_of(plan),
    )


def options_of(plan: Plan) -> dict[str, Any]:
    return dict(
        max_steps=plan.max_steps,
        max_empty_steps=plan.max_empty_steps,
        max_tool_result_chars=plan.cap,
        context_budget_chars=plan.budget,
        on_tool_status=plan.routes,
        tool_policy=policy_of(plan),
        output_type=Point if plan.typed else str,
        output_retries=plan.output_retries,
        output_validator=picky if plan.picky else None,
        nudges=plan.nudges,
    )


# -- the invariants --------------------------------------------------------------------------------------


def check_conversation(result: RunResult[Any]) -> None:
    """Every call answered by one tool message with its id, in order, before the next assistant message
    (a paused run's last assistant message excepted); no empty assistant message."""
    msgs = result.messages
    seen_ids: set[str] = set()
    i = 0
    while i < len(msgs):
        m = msgs[i]
        if m.role == "assistant":
            assert m.content or m.tool_calls or m.provider_data, f"empty assistant message at {i}: {msgs}"
            ids = [c.id for c in m.tool_calls]
            assert len(set(ids)) == len(ids), f"duplicate call ids in one message: {ids}"
            for cid in ids:
                assert cid and len(cid) <= 40, f"call id {cid!r} no vendor takes back"
                assert cid not in seen_ids, f"call id {cid!r} used twice in the run"
                seen_ids.add(cid)
            j = i + 1
            answered = []
            while j < len(msgs) and msgs[j].role == "tool":
                answered.append(msgs[j].tool_call_id)
                j += 1
            if ids:
                last = not any(x.role == "assistant" for x in msgs[j:])
                if result.paused and last:
                    pending = {c.id for c in result.pending_approvals}
                    assert pending, "paused with no pending call"
                    assert answered == [] and pending <= set(ids), (ids, answered, pending)
                else:
                    assert answered == ids, f"calls {ids} answered by {answered}"
            else:
                assert answered == [], f"tool messages {answered} answer no call"
            i = j
        else:
            assert m.role != "tool", f"a tool message not after its call at {i}"
            i += 1


def check_request(request: LLMRequest) -> None:
    """What a vendor is sent: every call answered, in order, right after it; no empty assistant message;
    no think block; each steer read once.  (A context budget trims and drops in the request only.)"""
    msgs = request.messages
    for i, m in enumerate(msgs):
        if m.role == "assistant":
            assert m.content or m.tool_calls or m.provider_data, f"empty assistant message sent at {i}"
            assert "<think" not in m.content, m.content
            ids = [c.id for c in m.tool_calls]
            answered = []
            for n in msgs[i + 1 :]:
                if n.role != "tool":
                    break
                answered.append(n.tool_call_id)
            assert answered == ids, f"request: calls {ids} answered by {answered}"
        elif m.role == "tool":
            assert i > 0 and (msgs[i - 1].role == "tool" or msgs[i - 1].tool_calls), f"request: stray result at {i}"
    steers = [m.content for m in msgs if m.role == "user" and m.content.startswith("also this #")]
    assert len(steers) == len(set(steers)), f"a steer read twice: {steers}"


def check_streamed(streamed: str) -> None:
    """Answer text as it streamed (``on_token``, ``llm.text_delta``): never a think tag, never a call's block."""
    for tag in ("<think", "</think", "<thinking", "</thinking"):
        assert tag not in streamed, f"a think tag streamed: {streamed!r}"
    assert '"tool"' not in streamed and '"arguments"' not in streamed, f"a call block streamed: {streamed!r}"
    assert BIG_MARK * (CEILING + 1) not in streamed


def check_events(events: list[Event], result: RunResult[Any] | None, *, whole: bool) -> None:
    by_run: dict[str | None, list[Event]] = {}
    for e in events:
        by_run.setdefault(e.run_id, []).append(e)
    for run_id, mine in by_run.items():
        assert run_id is not None
        seqs = [e.seq for e in mine]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), f"seq not increasing: {seqs}"
        # (A resume seating the agent it paused in, after a handoff, spawns that agent's tools actor before the
        # run starts, reporting to the run's sink — as a toolset's listing does: agent/core.py.)
        head = [e.type for e in mine if not e.type.startswith(("actor.", "mcp."))]
        assert head[0] == "run.started", head
        assert mine[-1].type == "run.finished", [e.type for e in mine]
        assert sum(e.type == "run.finished" for e in mine) == 1
        # Each call: started then finished — once, or twice for a call that waited for a person in place
        # (approval="wait": its first finish says awaiting_approval, the second is its outcome).
        started: dict[str, int] = {}
        finished: dict[str, int] = {}
        waited: dict[str, int] = {}
        for e in mine:
            if e.type == "tools.started":
                assert started.get(e.call_id, 0) == finished.get(e.call_id, 0), f"call {e.call_id} started twice"
                started[e.call_id] = started.get(e.call_id, 0) + 1
            elif e.type == "tools.finished":
                finished[e.call_id] = finished.get(e.call_id, 0) + 1
                if e.data.get("awaiting_approval"):
                    waited[e.call_id] = waited.get(e.call_id, 0) + 1
        for cid, n in started.items():
            assert n - waited.get(cid, 0) <= 1, f"call {cid} started {n} times"
            if whole:
                assert finished.get(cid) == n, f"call {cid} started {n} times, finished {finished.get(cid)} times"
        for cid, n in finished.items():
            assert n - waited.get(cid, 0) <= 1, f"call {cid} finished {n} times"
        steps = [e.step for e in mine if e.type == "step.started"]
        assert None not in steps and steps == sorted({s for s in steps if s is not None}), f"step.started: {steps}"
    check_streamed("".join(e.text for e in events if e.type == "llm.text_delta"))
    for e in events:
        assert BIG_MARK * (CEILING + 1) not in json.dumps(e.to_dict(), default=str), "a refused payload in an event"
        assert SECRET_BODY not in str(e.data.get("content", "")), e


def check_result(
    plan: Plan, model: Model, result: RunResult[Any], events: list[Event], *, whole: bool, base: int = 0
) -> None:
    """``base``: the steps of the paused run a resumed one goes on from (counted in its ``steps``)."""
    check_conversation(result)
    mine = [e for e in events if e.run_id == result.run_id]
    assert result.steps <= plan.max_steps, (result.steps, plan.max_steps)
    if result.generation_failed:
        assert result.error is not None
    if result.cancelled:
        assert not result.paused
    if result.paused:
        assert not result.cancelled and not result.generation_failed and not result.ok
        assert result.error is None, result.error
    assert SECRET_BODY not in result.content
    # docs/loop.md: content_filter with no answer ends the run at once, generation_failed, a content-policy error.
    # (A filtered response with calls is a tool step, not this.)
    last = model.last
    filtered = last is not None and last.stop_reason is StopReason.content_filter and not last.tool_calls
    ended = result.paused or result.cancelled or isinstance(result.error, RunInterruptedError) or plan.typed
    if filtered and result.stop_reason is StopReason.content_filter and not result.content and not ended:
        assert result.generation_failed or result.bounded, result
        assert isinstance(result.error, ProviderError) and result.error.kind == "content_policy", result.error
    if plan.typed and result.ok:
        # docs/output.md: a status routed to end_turn ends the run "with an output only if one was taken".
        ended_turn = "end_turn" in plan.routes.values()
        assert isinstance(result.output, Point) or (ended_turn and result.output is None), result.output
    if not plan.typed and result.ok:
        # (With a validator, an end_turn route ends the run "with an output only if one was taken".)
        assert result.output == result.content or ("end_turn" in plan.routes.values() and result.output is None)
    for m in result.messages:
        assert BIG_MARK * (CEILING + 1) not in m.content, "a refused payload in the conversation"
    if not plan.recorded:
        return
    # The cap is for what a tool produced (ok and error results); the loop's own texts stay whole.
    status = {e.call_id: e.status for e in mine if e.type == "tools.finished"}
    # tools.finished's size is that of the content the model gets (events.ToolFinished).
    sizes = {e.call_id: e.size for e in mine if e.type == "tools.finished" and not e.data.get("awaiting_approval")}
    for m in result.messages:
        if m.role == "tool" and not plan.nudges and m.tool_call_id in sizes:
            assert len(m.content) == sizes[m.tool_call_id], (m.name, len(m.content), sizes[m.tool_call_id])
        produced = status.get(m.tool_call_id) in (ToolStatus.ok, ToolStatus.error)
        if m.role == "tool" and plan.cap is not None and not plan.nudges and produced:
            assert len(m.content) <= plan.cap, (m.name, len(m.content), plan.cap)
    finished = [e for e in mine if e.type == "run.finished"]
    assert len(finished) == 1
    # Every steer taken is in the conversation once, after the step's results; none is lost without a word.
    received = sum(e.type == "run.steer_received" for e in mine)
    taken = [e.text for e in mine if e.type == "run.steered"]
    unread = sum(e.count for e in mine if e.type == "run.steers_unread")
    assert received == len(taken) + unread, (received, taken, unread)
    if not result.cancelled and result.error is None:
        for text in taken:
            assert [m.content for m in result.messages].count(text) == 1, (text, result.messages)
    n_started = sum(e.type == "step.started" for e in mine)
    assert n_started == result.steps - base, (n_started, result.steps, base)
    data = finished[0].data
    assert data["steps"] == result.steps and data["usage"] == result.usage, (data, result)
    assert data.get("cancelled", False) == result.cancelled and data.get("paused", False) == result.paused
    if not result.cancelled:  # a cancelled run's says only that (events.RunFinished)
        assert data["bounded"] == result.bounded and data["generation_failed"] == result.generation_failed
        assert data["tool_calls"] == len(result.tool_calls)
    explain(result, events)


# -- driving ---------------------------------------------------------------------------------------------


def spent(model: Model, result: RunResult[Any]) -> Usage:
    """What the run's model calls and its delegated runs (children) were paid for."""
    total = model.usage
    for child in result.children:
        total = total + child.usage
    return total


def outcome_of(result: RunResult[Any] | None) -> str:
    if result is None:
        return "cancelled from outside"
    flags = [f for f in ("paused", "cancelled", "bounded", "generation_failed", "ok") if getattr(result, f)]
    handed = " handed off" if result.handoffs else ""
    return "+".join(flags) + (f" ({type(result.error).__name__})" if result.error is not None else "") + handed


STEERS = itertools.count(1)  # each steer's text is its own


def controls_at(at: Any, what: str, n: int) -> list[str]:
    """The control messages to send at the ``n``-th event: one (``at``, ``what``), or several (``at`` a list)."""
    if isinstance(at, list):
        return [w for k, w in at if k == n]
    return [what] if n == at else []


def whole_drive(drive: tuple[Any, ...]) -> bool:
    """Whether a drive lets the run end on its own (no interrupt or cancel): every call's events are paired."""
    if drive[0] != "stream":
        return True
    if isinstance(drive[1], list):
        return all(w not in ("interrupt", "cancel") for _, w in drive[1])
    return drive[2] not in ("interrupt", "cancel")


async def control(run: Any, what: str) -> None:
    """A control message to a live run: one that comes after the run finished is ``RunFinishedError``
    (docs/loop.md, "Any control message to a finished run")."""
    try:
        if what == "steer":
            await run.steer(f"also this #{next(STEERS)}")
        elif what == "interrupt":
            await run.interrupt("enough")
        elif what == "cancel":
            run.cancel()
        elif what in ("approve", "deny"):
            for call in run.state().pending:
                if what == "approve":
                    await run.approve(call.id)
                else:
                    await run.deny(call.id, "no")
    except (RunFinishedError, CallNotPendingError):
        assert run.state().finished


async def drive(plan: Plan, models: list[Model]) -> None:
    model = Model(plan)
    models.append(model)
    rec = InMemoryRecorder()
    agent = agent_of(plan, model, rec)
    raises = "raise" in plan.routes.values()
    result: RunResult[Any] | None = None
    kind = plan.drive[0]
    prompt: Any = "go"
    if plan.history:  # an earlier turn, whose call id the model may use again
        prompt = [
            Message.user("before"),
            Message.assistant("", [ToolCall("c1", "echo", {"x": "a"})]),
            Message.tool("c1", "a", "echo"),
            Message.assistant("earlier answer"),
            Message.user("go"),
        ]
    with anyio.fail_after(100_000):  # virtual: a hang fails here
        try:
            if kind == "run":
                result = await agent.run(prompt, deadline=plan.deadline)
            elif kind == "tokens":
                tokens: list[str] = []
                result = await agent.run(prompt, on_token=tokens.append, deadline=plan.deadline)
                check_streamed("".join(tokens))
            elif kind == "outside":
                with anyio.move_on_after(plan.drive[1]) as scope:
                    result = await agent.run(prompt, deadline=plan.deadline)
                if scope.cancelled_caught:
                    assert result is None
            else:
                at, what = plan.drive[1], plan.drive[2]
                async with agent.stream(prompt, deadline=plan.deadline) as run:
                    n = 0
                    async for _event in run:
                        n += 1
                        for what_now in controls_at(at, what, n):
                            await control(run, what_now)
                    result = await run.wait()
        except ToolStatusError:
            event("outcome: ToolStatusError")
            assert raises, "ToolStatusError without a status routed to raise"
            check_events(rec.events, None, whole=False)
            return
    events = list(rec.events)
    event(f"outcome: {outcome_of(result)}")
    if result is None:  # cancelled from outside
        check_events(events, None, whole=False)
        return
    whole = whole_drive(plan.drive)
    check_events(events, result, whole=whole)
    check_result(plan, model, result, events, whole=whole)
    if whole and kind != "outside":
        # Usage is the sum of every response's (a paused run's too: what was spent so far).
        assert result.usage == spent(model, result), (result.usage, model.usage)
    if whole and result.error is None:  # (a step cut short is left out of messages; tool_calls has its calls)
        given = 1 if isinstance(prompt, str) else len(prompt)
        made = [c.id for m in result.messages[given:] if m.role == "assistant" for c in m.tool_calls]
        assert [c.id for c in result.tool_calls] == made, (result.tool_calls, made)
    if result.paused:
        assert result.pending_approvals and result.resume_state is not None
        assert result.messages[-1].role == "assistant"
        assert {c.id for c in result.pending_approvals} <= {c.id for c in result.messages[-1].tool_calls}
    # Resume a paused run with the plan's decisions, a few times over.
    rounds = 0
    while result.paused and rounds < 3:
        rounds += 1
        before = result
        decisions = {
            c.id: plan.decisions[k % len(plan.decisions)] for k, c in enumerate(result.pending_approvals)
        }
        rec.clear()
        how = plan.resume_drive
        try:
            with anyio.fail_after(100_000):
                if how[0] == "run":
                    result = await agent.resume(before, decisions, deadline=plan.deadline)
                elif how[0] == "tokens":
                    result = await agent.resume(before, decisions, on_token=lambda text: None)
                elif how[0] == "outside":
                    got = None
                    with anyio.move_on_after(how[1]):
                        got = await agent.resume(before, decisions)
                    if got is None:
                        check_events(list(rec.events), None, whole=False)
                        return
                    result = got
                else:
                    async with agent.resume_stream(before, decisions) as run:
                        n = 0
                        async for _event in run:
                            n += 1
                            for what_now in controls_at(how[1], how[2], n):
                                await control(run, what_now)
                        result = await run.wait()
        except ToolStatusError:
            assert raises
            return
        events = list(rec.events)
        # The same conversation goes on: the paused one is its prefix — but a resumed run cut short before the
        # paused step's calls were all answered (cancelled, failed) leaves that step out whole.
        if result.messages[: len(before.messages)] != before.messages:
            assert result.cancelled or result.error is not None, result
            assert result.messages == before.messages[:-1]
        assert result.steps >= before.steps
        check_conversation(result)
        assert result.steps <= plan.max_steps, (result.steps, plan.max_steps)
        resumed_whole = whole_drive(how)
        check_result(plan, model, result, events, whole=resumed_whole, base=before.steps)
        if resumed_whole and how[0] != "outside":
            assert result.usage == spent(model, result), (result.usage, model.usage)
        if result.paused:
            assert result.messages[-1].role == "assistant" and result.pending_approvals
        if plan.recorded:
            mine = [e for e in events if e.run_id == result.run_id]
            head = [e for e in mine if not e.type.startswith(("actor.", "mcp."))]
            assert head[0].type == "run.started" and mine[-1].type == "run.finished"
            mine = head
            assert mine[0].data.get("resumed_from") == before.run_id
            check_events(events, result, whole=resumed_whole)


async def drive_and_check_requests(plan: Plan) -> None:
    models: list[Model] = []
    if plan.runtime:  # runs in a runtime of the caller's (else each run makes a private one)
        async with Runtime():
            await drive(plan, models)
    else:
        await drive(plan, models)
    assert not models[0].problems, models[0].problems


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@SETTINGS
@given(plan=plans)
def test_a_generated_run_keeps_the_documented_invariants(backend: str, plan: Plan) -> None:
    name, options = dict(enumerate(virtual_backends()))[0 if backend == "asyncio" else 1]
    anyio.run(drive_and_check_requests, plan, backend=name, backend_options=options)
