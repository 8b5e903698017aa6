"""Explain an answer: the exact request that produced it, the tool results it consumed, the provider path.

The seeds' headline — trace a wrong answer back to the context that produced it — as an API::

    result = await agent.run("...")                 # with an InMemoryRecorder (or a JsonlRecorder) attached
    print(explain(result, recorder.events))         # the same text the demo prints
    Explanation.from_jsonl("events.jsonl", run_id)  # the same, from the record; python -m agentactors explain

:func:`explain` and :meth:`Explanation.from_jsonl` are synchronous and read only events: a live run's
(objects) and a JSONL record's (JSON values) go through one path — each event's payload is first put in
its JSON form (:func:`~agentactors.events.to_jsonable`) — so both give the same explanation, with
``.request`` rebuilt as an :class:`~agentactors.messages.LLMRequest` of
:class:`~agentactors.messages.Message` objects and ``.tool_results`` as
:class:`~agentactors.tools.results.ToolResult` objects.

What a record holds is what the events hold: the request (messages, tools, settings) as the loop sent it,
every tool call's status and sizes (a refused result's true size; the refused payload itself never enters
an event), and every resilience decision with the member it concerned.  Part payloads (an image's bytes)
are recorded as their size only, and nothing the run was given as ``deps`` is recorded at all.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .events import Event, EventRecordError, read_jsonl, to_jsonable
from .journal.compare import ForkComparison, compare_fork
from .journal.jsonl import run_from_events
from .journal.records import RunNotRecordedError
from .loop.result import RunResult
from .messages import LLMRequest, Message, ToolCall, ToolChoice, ToolSpec
from .pricing import Cost
from .redaction import redact
from .tools.results import ToolResult, ToolStatus

__all__ = ["EventRecordError", "Explanation", "StepPath", "explain"]


@attrs.frozen(slots=True)
class StepPath:
    """How one step's model call went through the provider stack.

    ``tried``: the members in the order they were tried; ``attempts``: requests sent per member (a
    member whose breaker refused the call has 0); ``errors``: failed attempts by error kind;
    ``failovers``: ``"a → b (kind)"``; ``breakers``: breaker transitions and refusals seen during the
    step; ``served_by``: the member that answered (``None`` when the step failed, with ``error``);
    ``cost``: what the answered call cost (``None``: no price, or no answer).

    The first step of a run resumed after an approval pause (``resumed_from``: the paused run's id) is the paused
    step: its model call was made — and is told — by the paused run, and this run finished it by running the
    calls a person decided on.  ``approved`` and ``denied`` name those calls' tools, ``tools`` what each call
    came to (``"refund → ok"``, ``"wipe → denied"``).  Without them the step would read as a model call that
    failed, when none was made.
    """

    step: int
    tried: tuple[str, ...] = ()
    attempts: Mapping[str, int] = attrs.field(factory=dict)
    errors: Mapping[str, int] = attrs.field(factory=dict)
    failovers: tuple[str, ...] = ()
    breakers: tuple[str, ...] = ()
    served_by: str | None = None
    error: str | None = None
    cost: Cost | None = None
    resumed_from: str | None = None
    approved: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line: who was tried, how often, what failed, who served (a resumed step: what it finished)."""
        if self.resumed_from is not None:
            out = (f"step {self.step}: resumed from run {self.resumed_from} (its model call was made there); "
                   f"{_decisions(self.approved, self.denied)}; tool results: {', '.join(self.tools) or 'none'}")
            return out + (f"; failed ({self.error})" if self.error else "")
        tried = ", ".join(f"{m} ×{self.attempts.get(m, 0)}" for m in self.tried) or "nothing"
        errors = ", ".join(f"{n} {kind}" for kind, n in self.errors.items())
        out = f"step {self.step}: tried {tried}"
        if errors:
            out += f"; errors: {errors}"
        if self.failovers:
            out += f"; failovers: {', '.join(self.failovers)}"
        if self.breakers:
            out += f"; breakers: {', '.join(self.breakers)}"
        out += f"; served by {self.served_by}" if self.served_by else f"; failed ({self.error or 'no answer'})"
        if self.cost is not None:
            out += f"; cost {_money(self.cost)}"
        return out


@attrs.frozen(slots=True)
class Explanation:
    """One run, told from its events.  ``str(explanation)`` prints it (:meth:`lines`).

    ``request`` is the :class:`~agentactors.messages.LLMRequest` that produced the final answer (the
    last one the provider stack answered), ``tool_results`` the results of the tool calls in that
    request's context, in order — ``status``, ``duration`` and sizes from the events, ``content`` as the
    model read it (a refused result: ``refused=True`` and its true size in ``original_chars``).
    ``path`` is the provider path of every step; ``timeline`` the run's decisions, in seconds since it
    started.
    """

    run_id: str
    agent: str | None
    question: str
    answer: str
    streamed: bool
    latency: float
    steps: int
    served_by: str | None
    served_model: str | None
    request: LLMRequest | None
    tool_results: tuple[ToolResult, ...]
    path: tuple[StepPath, ...]
    timeline: tuple[str, ...]
    retries: int
    failovers: tuple[str, ...]
    #: What the run cost (its delegated runs' included); ``None`` when a call had no price, or the events
    #: do not say (a record cut before ``run.finished``).
    cost: Cost | None = None

    notes: tuple[str, ...] = ()
    #: A fork's comparison with its original (:mod:`agentactors.journal.compare`) when the events given hold
    #: both runs, else ``None``.
    fork: ForkComparison | None = None
    #: The paused run this one was resumed from (after an approval pause), else ``None``; its first step in
    #: :attr:`path` is the paused one it finished.
    resumed_from: str | None = None
    #: How the run ended, from its ``run.finished``: ``"ok"`` (on an answer), ``"bounded"`` (at a step limit,
    #: or a provider failure after substantive text), ``"failed"`` (an error returned in the result: its
    #: deadline passed, the provider stack gave up, ...), ``"paused"`` (for a person's decision),
    #: ``"cancelled"`` or ``"raised"``; ``None`` when the events end before it (a run still going, or a record
    #: cut short) and no result says.
    status: str | None = None
    #: The error the run ended on, as the record names it: its type, HTTP status and kind
    #: (``"ProviderError HTTP 503 transient"``) — never its message.  ``None`` when it ended on none.
    error: str | None = None

    @classmethod
    def from_jsonl(cls, path: str | Path, run_id: str) -> Explanation:
        """The explanation of ``run_id`` from a :class:`~agentactors.events.JsonlRecorder` record.

        A last line cut off mid-write (the process that wrote the record was killed: the usual crash) is
        skipped, and :attr:`notes` says so with its line number — so is one a recorder reopening the file
        after the crash marked (:func:`~agentactors.events.read_jsonl`); every other line must be an event
        record.  Each line is read under the depth and size policy of :mod:`agentactors._json`.

        :raises LookupError: the record holds no event of ``run_id``.
        :raises EventRecordError: a line (other than a cut-off one, as above) is not JSON, is past the
            policy's limits, or is not an event record; the error names the line (``.line``).
        :raises OSError: the file cannot be read.
        """
        events, notes = _read_record(path, run_id)
        if not events:
            raise LookupError(f"{path} holds no event of run {run_id!r}" + "".join(f" ({n})" for n in notes))
        original = next((e.data.get("forked_from") for e in events if e.type == "run.forked"), None)
        before = _read_record(path, original)[0] if isinstance(original, str) else []
        explanation = _explain(run_id, events, None)
        return attrs.evolve(explanation, notes=explanation.notes + notes, fork=_fork_of(None, events, before))

    def lines(self) -> list[str]:
        """The explanation as plain text lines."""
        mode = "streamed" if self.streamed else "complete()"
        label = self.agent or "agent"
        calls = f"{self.steps} model calls"
        if self.resumed_from is not None:
            # Its steps go on from the paused run's numbers: the paused step's model call, and those before it,
            # were that run's.
            at = next((p.step for p in self.path if p.resumed_from is not None), None)
            calls = (f"resumed from run {self.resumed_from} at step {at}, {max(0, self.steps - at)} model calls"
                     if at is not None else f"resumed from run {self.resumed_from}, {self.steps} steps")
        out = [
            f"run {self.run_id} ({label}, {mode}, {calls}, {self.latency:.2f}s)",
            f"  asked: {self.question}",
            f"  ended: {self.status or 'not recorded'}" + (f" ({self.error})" if self.error else ""),
            f"  retries: {self.retries}; failovers: {', '.join(self.failovers) or 'none'}",
            f"  cost: {_money(self.cost, detail=True)}" if self.cost is not None else "  cost: unknown (unpriced)",
            "  what happened (seconds since the run started):",
            *(f"    {line}" for line in self.timeline),
            "  the provider path of each step:",
            *(f"    {p.describe()}" for p in self.path),
        ]
        request = self.request
        if request is None:
            out.append("  no request produced an answer")
        else:
            out += [
                f"  the request that produced the answer (served by {self.served_by}, model {self.served_model}):",
                f"    tools offered: {', '.join(t.name for t in request.tools)}",
                *(f"    {_describe_message(m)}" for m in request.messages),
            ]
        out += [
            "  tool results it saw:",
            *(f"    {_describe_result(r)}" for r in self.tool_results),
            f"  answer: {self.answer}",
            *(f"  note: {note}" for note in self.notes),
        ]
        if self.fork is not None:
            out += ["  beside its original:", *(f"  {line}" for line in self.fork.lines())]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def explain(result: RunResult, events: Iterable[Event]) -> Explanation:
    """The :class:`Explanation` of ``result``'s run from ``events`` (a recorder's: other runs' are skipped).

    A fork (``result.forked_from``) whose original's events are in ``events`` too (one recorder on both runs)
    is explained beside it: :attr:`Explanation.fork` (:mod:`agentactors.journal.compare`).

    :raises ValueError: ``result`` has no run id, or ``events`` hold none of its run.
    """
    run_id = result.run_id
    if run_id is None:
        raise ValueError("this RunResult has no run_id: it was not produced by a run")
    events = list(events)
    mine = [e for e in events if e.run_id == run_id]
    if not mine:
        raise ValueError(f"no event of run {run_id!r}: was a recorder attached to the run or its runtime?")
    explanation = _explain(run_id, mine, result)
    if result.forked_from is None:
        return explanation
    before = [e for e in events if e.run_id == result.forked_from]
    return attrs.evolve(explanation, fork=_fork_of(result, mine, before))


def _fork_of(result: RunResult | None, events: Sequence[Event], before: Sequence[Event]) -> ForkComparison | None:
    """A fork beside its original, when the original's events (``before``) tell enough of it; else ``None``."""
    if not before:
        return None
    try:
        original = run_from_events(before, before[0].run_id or "")
    except RunNotRecordedError:
        return None
    return compare_fork(original, result, original_events=before, fork_events=events)


# --- reading a record -----------------------------------------------------------------------------------
# (EventRecordError, what a bad line raises, is defined with the reader of records, agentactors.events.read_jsonl.)


def _read_record(path: str | Path, run_id: str) -> tuple[list[Event], tuple[str, ...]]:
    """``run_id``'s events of a JSONL record, and the notes on what was skipped (a cut-off last line).

    :raises EventRecordError: a bad line, as :func:`~agentactors.events.read_jsonl` says.
    """
    skipped: list[str] = []
    events = list(read_jsonl(path, run_id=run_id, skipped=skipped))
    return events, tuple(skipped)


# --- building it ----------------------------------------------------------------------------------------


def _explain(run_id: str, events: Sequence[Event], result: RunResult | None) -> Explanation:
    start = events[0].time
    end = events[-1].time
    agent: str | None = None
    final_request: Any = None
    answered_request: Any = None
    served_model: str | None = None
    served_by: str | None = None
    answer = ""
    streamed = False
    steps = 0
    tools: dict[str, dict[str, Any]] = {}  # call_id -> status, duration, size, refused/truncated sizes
    retries = 0
    cost: Cost | None = None  # the run's, from run.finished
    status: str | None = None  # how it ended, from run.finished (else the result's)
    error: str | None = None
    failovers: list[str] = []
    paths: dict[int, _PathBuilder] = {}
    timeline: list[str] = []
    resumed: _PathBuilder | None = None  # the paused step a resumed run finished
    resumed_line = -1  # its timeline line: written once the step's tool events named the calls' tools
    for e in events:
        data = {k: to_jsonable(v) if k != "request" else v for k, v in e.data.items()}
        kind = e.type
        step = e.step
        builder = None
        if step is not None:
            steps = max(steps, step)
            builder = paths.get(step)
            if builder is None:
                builder = paths[step] = _PathBuilder(step)
            builder.see(kind, data)
        if kind == "run.started":
            agent = _text(data.get("agent"))
        elif kind == "run.resumed" and resumed is None:
            # A JSONL record written before payload keys named as header fields were kept apart ("data.step")
            # reads its payload's ``step`` back as the event's own.
            at = data.get("step", step)
            if isinstance(at, int) and not isinstance(at, bool) and at >= 0:
                resumed = paths.get(at)
                if resumed is None:
                    resumed = paths[at] = _PathBuilder(at)
                steps = max(steps, at)
                resumed.resume(data)
                resumed_line = len(timeline)
                timeline.append(f"+{e.time - start:6.3f}s       ")
        elif kind == "llm.request":
            final_request = e.data.get("request")
        elif kind == "llm.response":
            answered_request = final_request
            response = _mapping(data.get("response"))
            served_model = _text(response.get("model"))
            served_by = _text(data.get("provider")) or _text(response.get("provider"))
        elif kind == "llm.text_delta":
            streamed = True
        elif kind == "retry.scheduled":
            retries += 1
        elif kind in _MOVED:
            failovers.append(f"{data.get('from_member')} → {data.get('to_member')} ({data.get('reason')})")
        elif kind.startswith("tools."):
            call_id = data.get("call_id")
            if isinstance(call_id, str):
                entry = tools.setdefault(call_id, {})
                if kind == "tools.finished":
                    entry.update(status=data.get("status"), duration=data.get("duration"), size=data.get("size"))
                elif kind == "tools.result_refused":
                    entry["refused"] = data.get("size")
                elif kind == "tools.result_truncated":
                    entry["truncated"] = data.get("size")
        elif kind == "run.finished":
            agent = _text(data.get("final_agent")) or agent  # the agent that answered, after a handoff
            answer = str(data.get("content") or "")
            served_by = _text(data.get("served_by")) or served_by
            cost = _cost_of(data.get("cost"))
            status, error = _ending(data)
        line = _timeline_line(kind, data, e.time - start, step)
        if line is not None:
            timeline.append(line)
    if resumed is not None:
        approved, denied = resumed.decided()
        timeline[resumed_line] += (f": resumed run {resumed.resumed_from} at step {resumed.step}: "
                                   f"{_decisions(approved, denied)}")
    notes: list[str] = []
    request = _to_request(answered_request, notes) if answered_request is not None else None
    # The question: the answered request's — or, when none was answered, the one the vendor was sent.
    asked = request
    if asked is None and final_request is not None and final_request is not answered_request:
        asked = _to_request(final_request, notes)
    if result is not None:
        agent = getattr(result, "agent", None) or agent
        answer = result.content
        served_by = result.served_by or served_by
        steps = result.steps or steps
        cost = result.cost
        if status is None:
            status, error = _result_ending(result)
    messages = request.messages if request is not None else ()
    return Explanation(
        run_id=run_id,
        agent=agent,
        question=_question(asked.messages if asked is not None else ()),
        answer=answer,
        streamed=streamed,
        latency=max(0.0, end - start),
        steps=steps,
        served_by=served_by,
        served_model=served_model,
        request=request,
        tool_results=tuple(_tool_results(messages, tools)),
        path=tuple(paths[s].build() for s in sorted(paths)),
        timeline=tuple(timeline),
        retries=retries,
        failovers=tuple(failovers),
        cost=cost,
        notes=tuple(notes),
        resumed_from=resumed.resumed_from if resumed is not None else None,
        status=status,
        error=error,
    )


def _ending(data: Mapping[str, Any]) -> tuple[str, str | None]:
    """How a run ended, from its ``run.finished`` payload: :attr:`Explanation.status` and :attr:`Explanation.error`."""
    if data.get("cancelled"):
        return "cancelled", None
    if data.get("paused"):
        return "paused", None
    error = data.get("error")
    named = _error_text(error) if isinstance(error, Mapping) else None
    if "content" not in data:  # a run that raised: its run.finished has no outcome
        return "raised", named
    if data.get("bounded"):
        return "bounded", named
    if error is not None or data.get("generation_failed"):
        return "failed", named
    return "ok", None


def _result_ending(result: RunResult) -> tuple[str, str | None]:
    """How a run ended, from its result (when the events end before ``run.finished``)."""
    error = _error_text(to_jsonable(result.error)) if result.error is not None else None
    if result.cancelled:
        return "cancelled", None
    if result.paused:
        return "paused", None
    if result.bounded:
        return "bounded", error
    if result.generation_failed or result.error is not None:
        return "failed", error
    return "ok", None


def _decisions(approved: Sequence[str], denied: Sequence[str]) -> str:
    parts = [f"approved {', '.join(approved)}"] if approved else []
    if denied:
        parts.append(f"denied {', '.join(denied)}")
    return "; ".join(parts) or "no call decided"


class _PathBuilder:
    """Collects one step's resilience events into its :class:`StepPath`."""

    __slots__ = ("approved", "attempts", "breakers", "cost", "denied", "error", "errors", "failovers", "names",
                 "outcomes", "resumed_from", "served_by", "step", "tried")

    def __init__(self, step: int) -> None:
        self.step = step
        self.tried: list[str] = []
        self.attempts: dict[str, int] = {}
        self.errors: Counter[str] = Counter()
        self.failovers: list[str] = []
        self.breakers: list[str] = []
        self.served_by: str | None = None
        self.error: str | None = None
        self.cost: Cost | None = None
        # A resumed run's paused step (resume): the run it went on from, the decided call ids, and each call's
        # tool name and outcome as its tool events tell them.
        self.resumed_from: str | None = None
        self.approved: list[str] = []
        self.denied: list[str] = []
        self.names: dict[str, str] = {}
        self.outcomes: dict[str, str] = {}

    def resume(self, data: Mapping[str, Any]) -> None:
        """This is the paused step a resumed run finishes (``run.resumed``)."""
        self.resumed_from = _text(data.get("from_run_id")) or "?"
        self.approved = [c for c in _sequence(data.get("approved")) if isinstance(c, str)]
        self.denied = [c for c in _sequence(data.get("denied")) if isinstance(c, str)]

    def decided(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The tools of the approved and the denied calls (a call no tool event named: its id)."""
        return (tuple(self.names.get(c, c) for c in self.approved), tuple(self.names.get(c, c) for c in self.denied))

    def _try(self, member: Any, attempts: int | None = None) -> None:
        if not isinstance(member, str):
            return
        if member not in self.tried:
            self.tried.append(member)
        if attempts is not None:
            self.attempts[member] = max(self.attempts.get(member, 0), attempts)

    def see(self, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "retry.scheduled":
            self._try(data.get("provider"), _count(data.get("attempt")))
            self.errors[_kind_of(data.get("error"))] += 1
        elif kind in ("retry.recovered", "retry.exhausted"):
            self._try(data.get("provider"), _count(data.get("attempts")))
        elif kind in _MOVED:
            source = data.get("from_member")
            refused = data.get("reason") == "circuit_open"
            self._try(source, 0 if refused and source not in self.attempts else 1)
            self.errors[str(data.get("reason"))] += 1
            self.failovers.append(f"{source} → {data.get('to_member')} ({data.get('reason')})")
            self._try(data.get("to_member"))
        elif kind == "breaker.state_changed":
            member = _member_of(data.get("key"))
            self.breakers.append(f"{member} {data.get('from_state')} → {data.get('to_state')} ({data.get('reason')})")
        elif kind == "breaker.rejected":
            member = _member_of(data.get("key"))
            self._try(member, 0)
            self.breakers.append(f"{member} {data.get('state')}: refused")
        elif kind == "llm.response":
            served = data.get("provider")
            self._try(served, 1)
            self.served_by = served if isinstance(served, str) else None
            self.cost = _cost_of(data.get("cost"))
        elif kind in ("tools.started", "tools.finished"):
            call_id, name = data.get("call_id"), data.get("name")
            if isinstance(call_id, str):
                if isinstance(name, str):
                    self.names[call_id] = name
                if kind == "tools.finished":
                    self.outcomes[call_id] = f"{self.names.get(call_id, call_id)} → {data.get('status')}"
        elif kind == "step.finished" and data.get("failed"):
            error = data.get("error")
            self.error = _error_text(error)
            if not self.tried and isinstance(error, Mapping):
                # No resilience layer reported an attempt: the one provider was sent the request and failed.
                self._try(error.get("provider"), 1)
            errors = error.get("errors") if isinstance(error, Mapping) else None
            # The last member's error: the ones before it were counted when the chain moved on.
            self.errors[_kind_of(errors[-1] if isinstance(errors, list) and errors else error)] += 1

    def build(self) -> StepPath:
        if self.resumed_from is not None:
            approved, denied = self.decided()
            # In the order the calls were decided (they run at once: their events come in any order).
            order = {c: i for i, c in enumerate((*self.approved, *self.denied))}
            calls = sorted(self.outcomes, key=lambda c: order.get(c, len(order)))
            return StepPath(step=self.step, error=self.error, resumed_from=self.resumed_from, approved=approved,
                            denied=denied, tools=tuple(self.outcomes[c] for c in calls))
        return StepPath(
            step=self.step,
            tried=tuple(self.tried),
            attempts={m: self.attempts.get(m, 0) for m in self.tried},
            errors=dict(self.errors),
            failovers=tuple(self.failovers),
            breakers=tuple(self.breakers),
            served_by=self.served_by,
            error=self.error,
            cost=self.cost,
        )


# A record is data someone else wrote (or a tool's own event): each value is read as what it should be, and
# one of another kind counts as absent rather than failing the explanation.


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any) -> int:
    """An attempt number or count from an event: 1 when it is not a positive integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def _seconds(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _cost_of(value: Any) -> Cost | None:
    """A cost from an event (its JSON form), or ``None`` for none (or a record that does not hold one)."""
    if isinstance(value, Cost):
        return value
    if not isinstance(value, Mapping):
        return None
    try:
        cost = Cost(float(value["input"]), float(value["output"]), float(value["total"]), str(value["currency"]))
    except (KeyError, TypeError, ValueError):
        return None
    estimated = value.get("estimated")  # (records written before it was kept have none: nothing estimated)
    if isinstance(estimated, int | float) and not isinstance(estimated, bool) and 0 < estimated <= cost.total:
        return attrs.evolve(cost, estimated=float(estimated))
    return cost


def _money(cost: Cost, *, detail: bool = False) -> str:
    text = f"{cost.total:.6g} {cost.currency}"
    if not detail:
        return text
    # The estimated part: calls cut short after they were sent, charged at an estimate (docs/costs.md).
    estimated = f", of which {cost.estimated:.6g} estimated" if cost.estimated else ""
    return f"{text} (input {cost.input:.6g}, output {cost.output:.6g}{estimated})"


def _member_of(key: Any) -> str:
    return str(key[0]) if isinstance(key, list | tuple) and key else str(key)


def _kind_of(error: Any) -> str:
    if isinstance(error, Mapping):
        return str(error.get("kind") or error.get("error") or "error")
    return "error"


def _error_text(error: Any) -> str:
    if not isinstance(error, Mapping):
        return "?"
    name = str(error.get("error") or "error")
    if name == "StreamInterruptedError":
        return "StreamInterruptedError (cut after its first event)"
    parts = [name]
    status = error.get("status")
    if isinstance(status, int) and not isinstance(status, bool):
        parts.append(f"HTTP {status}")
    elif status is not None:  # not an HTTP status: a ToolStatusError's tool status, say
        parts.append(f"status {status}")
    if error.get("kind") and name != "CircuitOpenError":
        parts.append(str(error["kind"]))
    return " ".join(parts)


def _timeline_line(kind: str, data: Mapping[str, Any], t: float, step: int | None) -> str | None:
    at = f"+{t:6.3f}s " + (f"step {step}" if step is not None else "      ")
    if kind == "llm.request":
        request = data.get("request")
        messages = getattr(request, "messages", None)
        tools = getattr(request, "tools", None)
        if isinstance(request, Mapping):
            messages, tools = request.get("messages"), request.get("tools")
        return f"{at}: request sent to the chain ({_size(messages)} messages, {_size(tools)} tools offered)"
    if kind == "retry.scheduled":
        return (f"{at}: {data.get('provider')} attempt {data.get('attempt')} failed "
                f"({_error_text(data.get('error'))}); retrying in {_seconds(data.get('delay')):.2f}s")
    if kind == "retry.exhausted":
        why = ": its breaker opened meanwhile, no further attempt sent" if data.get("reason") == "circuit_open" else ""
        return f"{at}: {data.get('provider')} gave up after {data.get('attempts')} attempts{why}"
    if kind == "breaker.rejected":
        return f"{at}: breaker {_member_of(data.get('key'))} is {data.get('state')}: refused without calling it"
    if kind == "breaker.state_changed":
        return (f"{at}: breaker {_member_of(data.get('key'))} {data.get('from_state')} → "
                f"{data.get('to_state')} ({data.get('reason')})")
    if kind in _MOVED:
        return (f"{at}: failover {data.get('from_member')} → {data.get('to_member')} "
                f"(reason: {data.get('reason')}, {_error_text(data.get('error'))})")
    if kind in _SKIPPED:
        return f"{at}: {_SKIPPED[kind]} member {data.get('member')} skipped ({data.get('reason')})"
    if kind == "hedge.sent":
        return (f"{at}: hedge sent to {data.get('member')} (model {data.get('model')}) "
                f"after {_seconds(data.get('after')):.2f}s")
    if kind == "hedge.won":
        won = "the hedge won" if data.get("winner") == "hedge" else "the first call won"
        return f"{at}: {won}: {data.get('member')} answered first"
    if kind == "hedge.skipped":
        return (f"{at}: hedge to {data.get('member')} not sent ({data.get('reason')}: "
                "the ProviderActor had no room for it at once)")
    if kind == "llm.response":
        response = _mapping(data.get("response"))
        calls = [c for c in _sequence(response.get("tool_calls")) if isinstance(c, Mapping)]
        what = ", ".join(f"{c.get('name')}({json.dumps(c.get('arguments'), separators=(',', ':'))})" for c in calls)
        text = response.get("content")
        return f"{at}: {data.get('provider')} answered: {what or f'text ({_size(text)} chars)'}"
    if kind == "tools.finished":
        return f"{at}: tool {data.get('name')} → {data.get('status')}"
    if kind == "agent.handoff":
        return f"{at}: handoff: agent {data.get('from_agent')} → agent {data.get('to_agent')} answers from here"
    if kind == "step.finished" and data.get("failed"):
        return f"{at}: the provider stack gave up ({_error_text(data.get('error'))})"
    if kind == "run.deadline_exceeded":
        deadline = data.get("deadline")
        limit = f" of {_seconds(deadline):.2f}s" if isinstance(deadline, int | float) else " (its caller's)"
        return f"{at}: the run passed its deadline{limit}"
    if kind == "run.paused":
        names = [str(p.get("name")) for p in _sequence(data.get("pending")) if isinstance(p, Mapping)]
        waits = "awaits" if len(names) == 1 else "await"
        return f"{at}: paused: {', '.join(names) or 'a call'} {waits} a person's decision"
    if kind == "run.finished":
        status, error = _ending(data)
        why = f" ({error})" if error else ""
        if status == "cancelled":
            return f"{at}: the run was cancelled"
        if status == "raised":
            return f"{at}: the run raised {error or 'an error'}"
        if status != "ok":
            return f"{at}: the run ended {status}{why}"
    return None


#: A failover: a fallback chain's or a pool's, told alike (the same fields: from_member, to_member, reason, error).
_MOVED = frozenset(("fallback.moved", "pool.moved"))
#: A member passed over without a call (its breaker open, a capability missing), by the layer that skipped it.
_SKIPPED = {"fallback.skipped": "chain", "pool.skipped": "pool"}


def _sequence(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | list | tuple) else 0


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe_message(m: Message) -> str:
    if m.role == "assistant" and m.tool_calls:
        calls = ", ".join(f"{c.name}({json.dumps(c.arguments, separators=(',', ':'))})" for c in m.tool_calls)
        return f"assistant → {calls}"
    if m.role == "tool":
        return f"tool {m.name or m.tool_call_id}: {_short(m.content)}"
    return f"{m.role}: {_short(m.content)}"


def _describe_result(r: ToolResult) -> str:
    size = f"{r.original_chars:,} chars, refused" if r.refused else f"{r.size_chars:,} chars"
    if r.truncated and r.original_chars is not None:
        size = f"{r.original_chars:,} chars, truncated to {r.size_chars:,}"
    return f"{r.name} [{r.status.value}, {size}]: {_short(r.content, 70)}"


def _question(messages: Sequence[Message]) -> str:
    for m in messages:
        if m.role == "user":
            return _short(m.content, 120)
    return ""


def _tool_results(messages: Sequence[Message], tools: Mapping[str, Mapping[str, Any]]) -> list[ToolResult]:
    out: list[ToolResult] = []
    for m in messages:
        if m.role != "tool" or m.tool_call_id is None:
            continue
        seen = tools.get(m.tool_call_id, {})
        status = seen.get("status")
        try:
            status_value = ToolStatus(status) if status is not None else (
                ToolStatus.error if m.is_error else ToolStatus.ok
            )
        except ValueError:
            status_value = ToolStatus.error
        refused = seen.get("refused")
        truncated = seen.get("truncated")
        size = seen.get("size")
        out.append(
            ToolResult(
                m.tool_call_id,
                m.name or "tool",
                status_value,
                m.content,
                size if isinstance(size, int) and size >= 0 else len(m.content),
                float(seen.get("duration") or 0.0),
                truncated=truncated is not None,
                refused=refused is not None,
                original_chars=refused if refused is not None else truncated,
            )
        )
    return out


# --- a request from its record -----------------------------------------------------------------------------

_MESSAGE_FIELDS = ("role", "content", "tool_call_id", "name", "reasoning", "provider_data", "is_error")
_CALL_FIELDS = ("id", "name", "arguments", "raw_arguments", "arguments_error", "arguments_error_detail",
                "provider_data")
_REQUEST_FIELDS = ("model", "max_tokens", "temperature", "stop", "vendor_options")


def _to_request(value: Any, notes: list[str] | None = None) -> LLMRequest | None:
    """``value`` as an LLMRequest: the emitted object itself, or rebuilt from its JSON record.

    Only the fields this module knows are rebuilt; a field a later version records keeps its default
    here rather than failing the explanation.  A record the request cannot be rebuilt from (a message of a
    role no request holds, a tool without a name: a hand-edited or foreign record) gives ``None``, and a
    line in ``notes`` says why — the rest of the run is still explained.
    """
    if isinstance(value, LLMRequest):
        return value
    if not isinstance(value, Mapping):
        return None
    try:
        return _rebuilt_request(value)
    except (TypeError, ValueError, KeyError) as exc:
        if notes is not None:
            notes.append(f"a recorded request could not be rebuilt ({type(exc).__name__}: {redact(str(exc))[:200]})")
        return None


def _rebuilt_request(value: Mapping[str, Any]) -> LLMRequest | None:
    kwargs: dict[str, Any] = {k: value[k] for k in _REQUEST_FIELDS if value.get(k) is not None}
    kwargs["tools"] = tuple(
        ToolSpec(t["name"], t.get("description") or "", t.get("parameters") or {"type": "object", "properties": {}})
        for t in _sequence(value.get("tools"))
        if isinstance(t, Mapping)
    )
    choice = value.get("tool_choice")
    if isinstance(choice, Mapping) and choice.get("mode"):
        kwargs["tool_choice"] = ToolChoice(choice["mode"], choice.get("name"))
    messages = tuple(_to_message(m) for m in _sequence(value.get("messages")) if isinstance(m, Mapping))
    if not messages:
        return None
    return LLMRequest(messages, **kwargs)


def _to_message(record: Mapping[str, Any]) -> Message:
    kwargs = {k: record[k] for k in _MESSAGE_FIELDS if record.get(k) is not None}
    calls = tuple(
        ToolCall(**{k: c[k] for k in _CALL_FIELDS if c.get(k) is not None})
        for c in _sequence(record.get("tool_calls"))
        if isinstance(c, Mapping)
    )
    return Message(tool_calls=calls, **kwargs)
