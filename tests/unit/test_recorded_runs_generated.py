"""Generated runs, recorded three ways at once: in memory, as a JSONL record, and as OpenTelemetry spans.

Hypothesis draws a run — what a scripted model answers at each step (text, tool calls of tools that answer,
fail with a credential in their error, time out on virtual time, return huge or odd values, delegate to a
child agent or hand the run off; a provider error, a stream cut, a delay), the settings (a credential in
their vendor-only ``extra``), and how it is driven (``agent.run``, ``on_token``, ``agent.stream`` with a
steer, an interrupt or a cancel at a drawn event, a cancellation from outside after a drawn virtual delay) —
and records it with an :class:`InMemoryRecorder`, a :class:`JsonlRecorder` and an :class:`OTelRecorder`.
What is checked is what the docs promise of the record:

* events (``docs/actors.md``, "Events and the record"; ``docs/agents.md``, "Linked record"): per run,
  ``run.started`` first and ``run.finished`` last, once; ``seq`` increasing, ``time`` never going back;
  each tool call's start has its end (a run left to end on its own); a child's events carry its parent's
  id and its ``run.started`` names the parent's call and step;
* the JSONL record: every line JSON, read back (``read_jsonl``) as the events the run emitted, requests
  rebuilt whole — a run cancelled mid-way included; a replay from it (``docs/durability.md``, "Replay")
  gives the live run's content, steps, messages and tool calls, asking no model, where the docs say it can;
* spans (``agentactors.otel.recorder``): every span started is ended, ``chat`` and ``execute_tool`` under
  their run's ``invoke_agent``, a child's ``invoke_agent`` under its parent's ``execute_tool``, inside it in
  time; attributes of the conventions' names and within the recorder's bounds;
* no credential (a registered one and a key-shaped one) in any event, line, span, span event or result — but
  in what events and records keep as given (a tool's own ``ctx.emit`` payload, a provider member's name), which
  only spans are checked for.

Run twice at once in one runtime too (one record, deltas of two runs interleaved), with the recorders on the
agent or on the runtime.  Plain examples of what it found are at the end: a member's name on spans, and three bugs
of the replay and the loop's tape, outside the recorders (a handoff's target asked past the recording, a steer
before a failed call lost, an interrupt after a think-only step not applied).  A longer
hunt: ``RECORDED_RUNS_EXAMPLES=1000 HYPOTHESIS_PROFILE=explore``.
"""

from __future__ import annotations

import enum
import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agentactors import Agent, InMemoryRecorder, LLMResponse, ModelSettings, RunResult, Runtime, ToolContext, tool
from agentactors.errors import ProviderError, RunFinishedError, RunInterruptedError
from agentactors.events import Event, JsonlRecorder, Recorder, event_to_dict, make_event, read_jsonl
from agentactors.journal import ReplayDivergedError, replay
from agentactors.journal.jsonl import read_run
from agentactors.journal.records import RecordedRun
from agentactors.messages import LLMRequest, ToolCall, Usage
from agentactors.otel import OTelRecorder
from agentactors.providers.scripted import ScriptedProvider, StreamCut
from agentactors.redaction import register_secret
from agentactors.testing import virtual_backends
from tests.support.journals import Counting, vendor_failure

SETTINGS = settings(
    max_examples=int(os.environ.get("RECORDED_RUNS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: A provider's key (registered, as a provider registers its own) and a key of a known shape nobody registered.
CANARY = "zqcanary7f3a91c2e5d84b06"
SHAPED = "sk-canaryShaped0123456789abcdef"
#: A key in a provider member's name: a span never shows it (OTelRecorder: "never ... a credential").  (Events and
#: records keep a member's name as given: only spans are checked for this one.)
NAMED = "sk-canaryInName0123456789abcdef"
HUGE = 200_000

# -- tools ------------------------------------------------------------------------------------------------


@tool
async def echo(x: str) -> str:
    """Echo."""
    return x


@tool
async def boom() -> str:
    """Fails, its error holding credentials."""
    raise ValueError(f"upstream refused api_key={SHAPED} (account key {CANARY})")


@tool(timeout=5)
async def slow() -> str:
    """Sleeps past its timeout (virtual time)."""
    await anyio.sleep(100)
    return "never"


@tool
async def huge() -> str:
    """A long result: over the cap when one is drawn."""
    return "z" * HUGE


ODD: list[Callable[[], Any]] = [
    lambda: {"a": [1, 2, {"b": None}], "s": {3}},
    lambda: math.nan,
    lambda: b"\x00\xff\xfe",
    lambda: object(),
    lambda: "\ud800 lone",
    lambda: 10**400,
    lambda: "line\nbreak \"quoted\" \x00 nul",
]


@tool
async def odd(kind: int) -> Any:
    """Returns a value JSON may not carry."""
    return ODD[kind % len(ODD)]()


class Phase(enum.Enum):
    early = "early"


@tool(timeout=1)
async def progress(ctx: ToolContext, kind: int) -> str:
    """Says how it goes (its own events, with a key-shaped text in one), then answers — or times out half-way."""
    ctx.emit("tools.progress", detail=f"connecting with token={SHAPED} " + "d" * 3000, phase=Phase.early,
             nested={"a": [1, {"b": math.inf}]}, parts=["x", 2, None])
    await anyio.sleep([0.0, 0.5, 3.0][kind % 3])
    ctx.emit("tools.progress", detail="done", ratio=1.0)
    return "progressed"


CHILD_USAGE = Usage(7, 3)


def _child_answers(request: LLMRequest) -> Any:
    """The delegated agent: one echo call, then its answer."""
    if not any(m.role == "tool" for m in request.messages):
        return LLMResponse(tool_calls=[ToolCall("k1", "echo", {"x": "from the child"})], usage=CHILD_USAGE)
    return LLMResponse("child answer", usage=CHILD_USAGE)


helper = Agent(ScriptedProvider(_child_answers, name="child"), name="helper", tools=[echo]).as_tool()
TOOLS: list[Any] = [echo, boom, slow, huge, odd, progress, helper]
ARGS: dict[str, dict[str, Any]] = {
    "echo": {"x": "hi"},
    "boom": {},
    "slow": {},
    "huge": {},
    "odd": {"kind": 0},
    "progress": {"kind": 0},
    "helper": {"input": "look it up"},
    "nosuch": {},
    "transfer_to_target": {},
}

# -- the plan ---------------------------------------------------------------------------------------------

call_lists = st.lists(st.tuples(st.sampled_from(sorted(ARGS)), st.integers(0, 6)), min_size=1, max_size=3)
actions = st.one_of(
    st.tuples(st.just("text"), st.sampled_from(["Hello.", "Done: é ✓", ""])),
    st.tuples(st.just("calls"), call_lists),
    st.tuples(st.just("calls"), call_lists),
    st.tuples(st.just("calls"), call_lists),
    st.one_of(
        st.tuples(st.just("error"), st.sampled_from(["transient", "request"])),
        st.tuples(st.just("cut"), st.sampled_from(["", "half an ans"])),
    ),
    st.tuples(st.just("delay"), st.sampled_from([0.5, 30.0])),
)
#: Every model call takes this long (virtual): a cancellation from outside lands at some point of the run.
LATENCY = 0.1
drives = st.one_of(
    st.just(("run",)),
    st.just(("tokens",)),
    st.tuples(st.just("stream"), st.integers(1, 12), st.sampled_from(["steer", "interrupt", "cancel", "none"])),
    st.tuples(st.just("outside"), st.sampled_from([0.0, 0.05, 0.15, 0.25, 0.35, 4.0, 40.0])),
)


@dataclass
class Plan:
    steps: list[Any]
    max_steps: int
    cap: int | None
    drive: tuple[Any, ...]
    handoff: bool
    secret_settings: bool
    twin: bool  # a second run of the agent at the same time, in the same runtime, to the same recorders
    on_runtime: bool  # the recorders are the runtime's, not the agent's


plans = st.builds(
    Plan,
    steps=st.lists(actions, max_size=5),
    max_steps=st.integers(1, 6),
    cap=st.sampled_from([None, 120]),
    drive=drives,
    handoff=st.booleans(),
    secret_settings=st.booleans(),
    twin=st.booleans(),
    on_runtime=st.booleans(),
)


class Model:
    """Step i answers ``plan.steps[i]``, then a final answer for ever."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.calls: dict[str, int] = {}  # by the run's prompt: each run (a twin too) goes through the plan
        self.ids = 0

    async def __call__(self, request: LLMRequest) -> Any:
        prompt = next((m.content for m in request.messages if m.role == "user"), "")
        i = self.calls.get(prompt, 0)
        self.calls[prompt] = i + 1
        usage = Usage(i + 1, 1)
        if i >= len(self.plan.steps):
            return LLMResponse("Final answer.", usage=usage)
        action = self.plan.steps[i]
        kind = action[0]
        if kind == "error":
            raise ProviderError(
                f"vendor said no to key {SHAPED}", provider="scripted", kind=action[1], status=500,
                body_excerpt=f"token={CANARY}",
            )
        if kind == "cut":
            return StreamCut(action[1], ProviderError("connection reset", provider="scripted", kind="transient"))
        if kind == "delay":
            await anyio.sleep(action[1])
            return LLMResponse("After a while.", usage=usage)
        if kind == "text":
            return LLMResponse(action[1], usage=usage)
        calls = []
        for name, k in action[1]:
            self.ids += 1
            args = dict(ARGS[name])
            if name in ("odd", "progress"):
                args["kind"] = k
            calls.append(ToolCall(f"c{self.ids}", name, args))
        return LLMResponse(tool_calls=calls, usage=usage)


class VendorLike(ScriptedProvider):
    """A scripted provider that says where it is, as an HTTP one does: ``run.started`` lists it as a member."""

    base_url = "https://vendor.example:8443/v1"


def agent_of(plan: Plan, model: Model, recorders: list[Any]) -> Agent[Any]:
    # A member named with a key in it (a name made from a connection string, say): masked like any text.
    name = f"scripted-{NAMED}" if plan.secret_settings else "scripted"
    provider = VendorLike(model, model="m", latency=LATENCY, name=name)
    options: dict[str, Any] = dict(max_steps=plan.max_steps, max_tool_result_chars=plan.cap, tools=TOOLS)
    if plan.secret_settings:  # configuration: a record redacts its text (docs/reliability.md)
        options["settings"] = ModelSettings(extra={"openai": {"api_key": CANARY, "x-token": f"token={SHAPED}"}})
    handoffs: list[Any] = []
    if plan.handoff:
        handoffs = [Agent(provider, name="target", **options)]
    return Agent(provider, name="main", handoffs=handoffs, recorders=recorders, **options)


# -- spans ------------------------------------------------------------------------------------------------


class Tracking(SpanProcessor):
    """Every span started and every span ended (the exporter sees ended ones only)."""

    def __init__(self) -> None:
        self.started: dict[int, str] = {}
        self.ended: list[int] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.ended.append(span.context.span_id)


class Telemetry:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracking = Tracking()
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.tracking)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


# -- checks -----------------------------------------------------------------------------------------------


def by_run(events: list[Event]) -> dict[str, list[Event]]:
    out: dict[str, list[Event]] = {}
    for e in events:
        if e.run_id is not None:
            out.setdefault(e.run_id, []).append(e)
    return out


def check_events(events: list[Event], *, whole: bool) -> None:
    times = [e.time for e in events]
    assert times == sorted(times), "an event's time went back"
    runs = by_run(events)
    for run_id, mine in runs.items():
        types = [e.type for e in mine if not e.type.startswith("actor.")]
        assert types[0] == "run.started", types
        assert types[-1] == "run.finished" and types.count("run.finished") == 1, types
        assert types.count("run.started") == 1, types
        seqs = [e.seq for e in mine]
        assert seqs == sorted(set(seqs)), f"run {run_id}: seq not increasing: {seqs}"
        parents = {e.parent_run_id for e in mine}
        assert len(parents) == 1, f"run {run_id}: parent_run_id changes: {parents}"
        open_calls: dict[str, int] = {}
        ended: set[str] = set()
        for e in mine:
            if e.type.startswith("tools.") and e.get("call_id") in ended:  # (ToolContext.emit)
                raise AssertionError(f"{e.type} of call {e.call_id} after its tools.finished")
            if e.type == "tools.started":
                assert e.call_id not in open_calls, f"call {e.call_id} started twice"
                open_calls[e.call_id] = 1
            elif e.type == "tools.finished":
                assert open_calls.pop(e.call_id, None) == 1, f"call {e.call_id} finished, never started"
                ended.add(e.call_id)
        if whole:
            assert not open_calls, f"run {run_id}: calls started and never finished: {open_calls}"
    # A delegated run: linked to its parent's call, inside it (docs/agents.md, "Linked record").
    for run_id, mine in runs.items():
        parent = mine[0].parent_run_id
        if parent is None:
            continue
        assert parent in runs, f"child {run_id}'s parent {parent} recorded nothing"
        started = next(e for e in mine if e.type == "run.started")
        assert started.depth == 1
        call = [e for e in runs[parent] if e.type == "tools.started" and e.call_id == started.parent_call_id]
        assert len(call) == 1 and call[0].name == "helper", (started.data, call)
        assert started.parent_step == call[0].step
        at = events.index(call[0])
        end = [i for i, e in enumerate(events) if e.type == "tools.finished" and e.run_id == parent
               and e.call_id == started.parent_call_id]
        inside = [i for i, e in enumerate(events) if e.run_id == run_id]
        assert all(at < i for i in inside) and all(i < end[0] for i in inside if end), "child events outside its call"


def plain(value: Any) -> Any:
    """A record's values as a JSONL line spells them (a NaN or an infinity as its name)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def check_jsonl(path: Path, events: list[Event]) -> list[Event]:
    text = path.read_bytes().decode("utf-8")
    assert text.endswith("\n") or not text
    lines = text.splitlines()
    records = [json.loads(line) for line in lines]  # every line, strict JSON
    assert all(isinstance(r, dict) and isinstance(r.get("type"), str) for r in records)
    skipped: list[str] = []
    read = list(read_jsonl(path, skipped=skipped))
    assert not skipped, skipped
    assert [(e.type, e.run_id, e.seq, e.step, e.parent_run_id, e.time) for e in read] == [
        (e.type, e.run_id, e.seq, e.step, e.parent_run_id, e.time) for e in events
    ]
    for live, back in zip(events, read, strict=True):
        got = back.to_dict()
        if "omitted" in got:  # a line past the record's limit keeps its header (docs/actors.md)
            continue
        want = plain(json.loads(json.dumps(event_to_dict(live), allow_nan=True)))
        assert got == want, (live.type, got, want)
    return read


def check_spans(t: Telemetry, events: list[Event]) -> list[ReadableSpan]:
    spans = t.spans()
    assert set(t.tracking.started) == set(t.tracking.ended), "a span started and never ended"
    assert len(t.tracking.ended) == len(set(t.tracking.ended)), "a span ended twice"
    ids = {s.context.span_id: s for s in spans if s.context is not None}
    runs = by_run(events)
    invoke = {}
    for s in spans:
        attrs = dict(s.attributes or {})
        op = attrs["gen_ai.operation.name"]
        assert op in ("invoke_agent", "chat", "execute_tool"), op
        assert s.name == op or s.name.startswith(op + " "), s.name
        assert len(s.name) <= len(op) + 1 + 128 + 1, s.name
        assert s.start_time is not None and s.end_time is not None and s.start_time <= s.end_time
        for k, v in attrs.items():
            assert k.startswith(("gen_ai.", "agentactors.", "error.", "server.")), k
            if isinstance(v, str) and k not in ("gen_ai.input.messages", "gen_ai.output.messages"):
                assert len(v) <= 1024 + 1, (k, len(v))
        for note in s.events:
            for k, v in (note.attributes or {}).items():
                if isinstance(v, str):
                    assert len(v) <= 1024 + 1, (note.name, k, len(v))
        if op == "invoke_agent":
            invoke[attrs["agentactors.run_id"]] = s
    assert set(invoke) == set(runs), (set(invoke), set(runs))
    for s in spans:
        attrs = dict(s.attributes or {})
        run = invoke[attrs["agentactors.run_id"]]
        if s is run:
            continue
        assert s.parent is not None and s.parent.span_id == run.context.span_id, s.name
        assert run.start_time is not None and run.end_time is not None and s.start_time is not None
        assert s.end_time is not None and run.start_time <= s.start_time <= s.end_time <= run.end_time, s.name
        if attrs["gen_ai.operation.name"] == "execute_tool":
            assert attrs["gen_ai.tool.type"] == "function"
            status = attrs["agentactors.tool.status"]
            assert (s.status.status_code is StatusCode.ERROR) == (status != "ok"), (status, s.status)
            assert (status == "ok") == ("error.type" not in attrs)
    # Each tool call: one execute_tool span; each finished call's status is the span's.
    for run_id, mine in runs.items():
        calls = [e.call_id for e in mine if e.type == "tools.started"]
        tool_spans = [s for s in spans if (s.attributes or {}).get("agentactors.run_id") == run_id
                      and (s.attributes or {}).get("gen_ai.operation.name") == "execute_tool"]
        assert sorted(str((s.attributes or {})["gen_ai.tool.call.id"]) for s in tool_spans) == sorted(calls)
        for e in mine:
            if e.type == "tools.finished":
                (span,) = [s for s in tool_spans if (s.attributes or {})["gen_ai.tool.call.id"] == e.call_id]
                assert (span.attributes or {})["agentactors.tool.status"] == str(e.status.value)
        chats = [s for s in spans if (s.attributes or {}).get("agentactors.run_id") == run_id
                 and (s.attributes or {}).get("gen_ai.operation.name") == "chat"]
        assert len(chats) == sum(e.type == "llm.request" for e in mine)
        started = next(e for e in mine if e.type == "run.started")
        if started.parent_run_id is not None:  # a child under its parent's execute_tool span, inside it in time
            run = invoke[run_id]
            assert run.parent is not None
            tool_span = ids[run.parent.span_id]
            assert (tool_span.attributes or {})["gen_ai.tool.call.id"] == started.parent_call_id
            assert tool_span.start_time is not None and tool_span.end_time is not None
            assert run.start_time is not None and run.end_time is not None
            assert tool_span.start_time <= run.start_time <= run.end_time <= tool_span.end_time
        finished = next(e for e in mine if e.type == "run.finished")
        usage = finished.get("usage")
        run_attrs = invoke[run_id].attributes or {}
        if usage is not None:  # the run's usage, its delegated runs' included
            assert run_attrs["gen_ai.usage.input_tokens"] == usage.input_tokens, (run_attrs, usage)
            assert run_attrs["gen_ai.usage.output_tokens"] == usage.output_tokens, (run_attrs, usage)
        # A run whose calls took the stream path says so on run.started: each of its chat spans has the attribute,
        # a step that streamed only tool calls too (a record without the flag: the steps that streamed text).
        streamed_run = any(e.type == "run.started" and e.get("stream") is True for e in mine)
        streamed = {e.step for e in mine if e.type == "llm.text_delta"}
        for chat in chats:
            step = [e.step for e in mine if e.type == "llm.request"][sorted(chats, key=start).index(chat)]
            said = (chat.attributes or {}).get("gen_ai.request.stream") is True
            assert said == (streamed_run or step in streamed), step
        if finished.get("handoffs"):
            assert (invoke[run_id].attributes or {})["agentactors.final_agent"] == finished.final_agent
            assert any(e.name == "agentactors.handoff" for e in invoke[run_id].events)
    return spans


def start(span: ReadableSpan) -> int:
    return span.start_time or 0


def no_secret(text: str, where: str, secrets: tuple[str, ...] = (CANARY, SHAPED)) -> None:
    for secret in secrets:
        assert secret not in text, f"a credential in {where}: {text[max(0, text.find(secret) - 200):][:400]!r}"


def check_secrets(events: list[Event], path: Path, spans: list[ReadableSpan], results: list[RunResult[Any]]) -> None:
    """No credential anywhere — but in a tool's own payload (``ctx.emit``: its text, kept as given in events and
    records, like the conversation's) and a member's name (events and records keep it): spans clean those too."""
    for e in events:
        # (What a record holds: the live event's request keeps its vendor options as sent, docs/settings.md.)
        if e.type != "tools.progress":
            no_secret(json.dumps(e.to_dict(), default=str), f"event {e.type}")
    for line in path.read_text("utf-8").splitlines():
        if json.loads(line)["type"] != "tools.progress":
            no_secret(line, "the JSONL record")
    for s in spans:
        no_secret(s.to_json(), f"span {s.name}", (CANARY, SHAPED, NAMED))
    for result in results:
        no_secret(repr(result.error), "the result's error")
        for m in result.messages:
            no_secret(m.content, "the conversation")


# -- replay -----------------------------------------------------------------------------------------------


class FileSource:
    """The JSONL record as a run source read on the loop (``replay`` reads a path in a worker thread: real time)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def load_run(self, run_id: str) -> RecordedRun:
        return read_run(self.path, run_id)


async def check_replay(path: Path, result: RunResult[Any], events: list[Event], agent: Agent[Any]) -> None:
    """docs/durability.md, "Replay": the recorded result again, asking no model — within a JSONL record's limits.

    Replayed with the live agent (its recorders left out): a made-up agent has no handoffs to take.
    """
    assert result.run_id is not None
    mine = [e for e in events if e.run_id == result.run_id]
    recorded = read_run(path, result.run_id)
    # A JSONL record's limit: a last tool step with no model call after it has no recorded text.
    last_calls = bool(recorded.steps) and bool(recorded.steps[-1].response.tool_calls)
    asked_past = sum(e.type == "llm.request" for e in mine) > len(recorded.steps)  # a model call that failed
    interrupted_after_answer = recorded.ending is not None and recorded.ending.how == "interrupted" and not last_calls
    try:
        again = await replay(FileSource(path), result.run_id, agent=attrs.evolve(agent, recorders=()))
    except ReplayDivergedError:
        assert last_calls or asked_past or interrupted_after_answer, "a replay diverged from a whole record"
        return
    if result.cancelled:
        assert again.cancelled, again
        return
    assert not asked_past, ("a replay asked past its recording and did not say so", again)
    if last_calls and recorded.steps[-1].results is None:
        return  # (the documented limit: the step's results are not in the record)
    assert (again.content, again.steps, again.messages, again.tool_calls) == (
        result.content, result.steps, result.messages, result.tool_calls,
    ), (again, result)
    assert type(again.error) is type(result.error), (again.error, result.error)


# -- driving ----------------------------------------------------------------------------------------------


async def control(run: Any, what: str) -> None:
    try:
        if what == "steer":
            await run.steer("also this")
        elif what == "interrupt":
            await run.interrupt("enough")
        elif what == "cancel":
            run.cancel()
    except RunFinishedError:
        assert run.state().finished


def outcome_of(result: RunResult[Any] | None) -> str:
    if result is None:
        return "cancelled from outside"
    flags = [f for f in ("cancelled", "bounded", "generation_failed", "ok") if getattr(result, f)]
    error = f" ({type(result.error).__name__})" if result.error is not None else ""
    return "+".join(flags) + error + (" handed off" if result.handoffs else "")


async def drive(plan: Plan, folder: Path) -> None:
    register_secret(CANARY)
    model = Model(plan)
    memory = InMemoryRecorder()
    path = folder / "events.jsonl"
    jsonl = JsonlRecorder(path)
    t = Telemetry()
    recorders: list[Recorder] = [memory, jsonl, OTelRecorder(t.provider)]
    agent = agent_of(plan, model, [] if plan.on_runtime else recorders)
    results: dict[str, RunResult[Any] | None] = {"go": None}
    kind = plan.drive[0]

    async def first() -> None:
        if kind == "run":
            results["go"] = await agent.run("go")
        elif kind == "tokens":
            results["go"] = await agent.run("go", on_token=lambda text: None)
        elif kind == "outside":
            results["go"] = await agent.run("go")
        else:
            at, what = plan.drive[1], plan.drive[2]
            async with agent.stream("go") as run:
                n = 0
                async for _event in run:
                    n += 1
                    if n == at:
                        await control(run, what)
                results["go"] = await run.wait()

    async def twin() -> None:
        results["again"] = await agent.run("again")

    with anyio.fail_after(100_000):
        async with Runtime(recorders=recorders if plan.on_runtime else ()):
            with anyio.move_on_after(plan.drive[1] if kind == "outside" else math.inf):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(first)
                    if plan.twin:
                        results["again"] = None
                        tg.start_soon(twin)
    jsonl.close()
    events = list(memory.events)
    result = results["go"]
    event(f"outcome: {outcome_of(result)}")
    event(f"children: {sum(e.type == 'run.started' and e.parent_run_id is not None for e in events)}")
    whole = result is not None and not (kind == "stream" and plan.drive[2] in ("interrupt", "cancel"))
    check_events(events, whole=whole)
    check_jsonl(path, events)
    spans = check_spans(t, events)
    done = [r for r in results.values() if r is not None]
    check_secrets(events, path, spans, done)
    for r in done:
        await check_replay(path, r, events, agent)
    ran = {r.run_id for r in done}
    for top in {e.run_id for e in events if e.type == "llm.response" and e.parent_run_id is None} - ran:
        # Cancelled from outside: the record still reads, and its replay is cancelled where the record stops.
        assert top is not None
        again = await replay(FileSource(path), top, agent=attrs.evolve(agent, recorders=()))
        assert again.cancelled, again


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@SETTINGS
@given(plan=plans)
def test_a_generated_run_is_recorded_as_documented(backend: str, plan: Plan) -> None:
    name, options = dict(enumerate(virtual_backends()))[0 if backend == "asyncio" else 1]
    with tempfile.TemporaryDirectory(prefix="recorded-runs-") as folder:
        anyio.run(drive, plan, Path(folder), backend=name, backend_options=options)


# -- what the generated runs found ------------------------------------------------------------------------


def test_a_members_name_holding_a_key_is_masked_on_every_span() -> None:
    """A member's name is shown as a name a provider chose is: redacted and cut (``_text``) — on ``chat`` after
    the response named it, but not on ``invoke_agent`` and ``chat`` from ``run.started``'s members (found by the
    generated runs: a member named with a key in it)."""
    t = Telemetry()
    recorder = OTelRecorder(t.provider)
    members = [(f"acct-{NAMED}", None, "vendor.example", 8443)]
    recorder.record(make_event("run.started", "r1", 1, 0.0, None, {"agent": "a", "providers": members, "model": "m"}))
    recorder.record(make_event("llm.request", "r1", 2, 0.1, 1, {"request": None}))
    recorder.record(make_event("step.finished", "r1", 3, 0.2, 1, {"failed": True, "error": None}))
    recorder.record(make_event("run.finished", "r1", 4, 0.3, None, {"steps": 1}))
    spans = t.spans()
    assert sorted(s.name for s in spans) == ["chat m", "invoke_agent a"]
    for span in spans:
        assert (span.attributes or {})["gen_ai.provider.name"] == "acct-[REDACTED]", span.attributes
        no_secret(span.to_json(), f"span {span.name}", (NAMED,))


async def _recorded(agent: Agent[Any], path: Path, **options: Any) -> RunResult[Any]:
    recorder = JsonlRecorder(path)
    try:
        return await attrs.evolve(agent, recorders=(recorder,)).run("go", **options)
    finally:
        recorder.close()


@pytest.mark.virtual_time
@pytest.mark.anyio
async def test_a_replay_after_a_handoff_never_asks_the_targets_provider(tmp_path: Path) -> None:
    model = Counting([LLMResponse(tool_calls=[ToolCall("h1", "transfer_to_target", {})]), vendor_failure(), "late"])
    provider = ScriptedProvider(model)
    agent = Agent(provider, name="main", handoffs=[Agent(provider, name="target")], max_steps=3)
    live = await _recorded(agent, tmp_path / "events.jsonl")
    assert live.generation_failed and live.agent == "target" and model.calls == 2
    with pytest.raises(ReplayDivergedError):  # docs/durability.md: "its provider is never called"
        await replay(FileSource(tmp_path / "events.jsonl"), live.run_id or "", agent=agent)
    assert model.calls == 2


@pytest.mark.virtual_time
@pytest.mark.anyio
async def test_a_replay_of_a_run_whose_steered_call_failed_says_it_diverged(tmp_path: Path) -> None:
    model = Counting([LLMResponse("Hello."), vendor_failure()])
    agent = Agent(ScriptedProvider(model, latency=0.1), name="main", max_steps=2)
    recorder = JsonlRecorder(tmp_path / "events.jsonl")
    async with attrs.evolve(agent, recorders=(recorder,)).stream("go") as run:
        async for event in run:
            if event.type == "llm.request" and event.step == 1:  # during step 1's model call: taken after it
                await run.steer("also this")
        live = await run.wait()
    recorder.close()
    assert live.steps == 2 and isinstance(live.error, ProviderError)
    with pytest.raises(ReplayDivergedError):  # docs/durability.md: "asks for more than its recording holds"
        await replay(FileSource(tmp_path / "events.jsonl"), live.run_id or "", agent=agent)


@pytest.mark.virtual_time
@pytest.mark.anyio
async def test_a_run_interrupted_after_a_think_only_step_replays_interrupted(tmp_path: Path) -> None:
    model = Counting([LLMResponse(""), LLMResponse("Final.")])
    agent = Agent(ScriptedProvider(model, latency=0.1), name="main", max_steps=2)
    recorder = JsonlRecorder(tmp_path / "events.jsonl")
    async with attrs.evolve(agent, recorders=(recorder,)).stream("go") as run:
        async for event in run:
            if event.type == "llm.request":  # during step 1's model call: taken after it
                await run.interrupt("enough")
        live = await run.wait()
    recorder.close()
    assert live.steps == 1 and isinstance(live.error, RunInterruptedError)
    # docs/durability.md: "replay of an interrupted run ends interrupted after the same step ... no further model call"
    again = await replay(FileSource(tmp_path / "events.jsonl"), live.run_id or "", agent=agent)
    assert again.steps == 1 and isinstance(again.error, RunInterruptedError) and model.calls == 1
