"""Explain an answer: the exact request that produced it, the tool results it consumed, the provider path.

The seeds' headline — trace a wrong answer back to the context that produced it — as an API::

    result = await agent.run("...")                 # with an InMemoryRecorder (or a JsonlRecorder) attached
    print(explain(result, recorder.events))         # the same text the demo prints
    Explanation.from_jsonl("events.jsonl", run_id)  # the same, from the record; python -m agentactors explain

:func:`explain` and :meth:`Explanation.from_jsonl` are synchronous and read only events: a live run's
(objects) and a JSONL record's (JSON values) go through one path — each event's payload is first put in
its JSON form (:func:`~agentactors.events.to_jsonable`) — so both give the same explanation, with
``.tool_results`` as :class:`~agentactors.tools.results.ToolResult` objects.  The request is the exception:
a live run's ``.request`` is the :class:`~agentactors.messages.LLMRequest` the loop sent (its model the one the
member that answered was asked for, after a failover); a record's
is rebuilt from its JSON as one of :class:`~agentactors.messages.Message` objects, without what the record
does not keep — media payloads (``.request_media`` still names each part) and the credentials it redacted from
the request's configuration — and ``.request_notes`` says so.

What a record holds is what the events hold: the request (messages, tools, settings) as the loop sent it,
every tool call's status and sizes (a refused result's true size; the refused payload itself never enters
an event), and every resilience decision with the member it concerned.  Part payloads (an image's bytes)
are recorded as their size only, and nothing the run was given as ``deps`` is recorded at all.
"""

from __future__ import annotations

import json
import re
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
from .messages import LLMRequest, Message, ResponseFormat, ToolCall, ToolChoice, ToolSpec
from .parts import describe, shown_url, size_text
from .pricing import Cost
from .redaction import redact
from .settings import CachePolicy
from .tools.results import ToolResult, ToolStatus

__all__ = ["EventRecordError", "Explanation", "StepPath", "explain"]


@attrs.frozen(slots=True)
class StepPath:
    """How one step's model call went through the provider stack.

    ``tried``: the members in the order they were tried; ``attempts``: requests sent per member (a
    member whose breaker refused the call has 0); ``errors``: failed attempts by error kind;
    ``failovers``: ``"a → b (kind)"``; ``breakers``: breaker transitions and refusals seen during the
    step; ``hedges``: each hedged copy, ``"b (model m) after 0.10s, won"`` (or ``lost``, or ``not sent
    (admission)``); ``served_by``: the member that answered (``None`` when the step failed, with ``error``);
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
    hedges: tuple[str, ...] = ()

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
        if self.hedges:
            out += f"; hedged: {', '.join(self.hedges)}"
        out += f"; served by {self.served_by}" if self.served_by else f"; failed ({self.error or 'no answer'})"
        if self.cost is not None:
            out += f"; cost {_money(self.cost)}"
        return out


@attrs.frozen(slots=True)
class Explanation:
    """One run, told from its events.  ``str(explanation)`` prints it (:meth:`lines`).

    ``request`` is the :class:`~agentactors.messages.LLMRequest` that produced the final answer (the
    last one the provider stack answered) as its member was sent it (:attr:`request_notes`: where the record
    cannot tell that exactly); ``tool_results`` the results of the tool calls in that
    request's context, in order — ``status``, ``duration`` and sizes from the events, ``content`` as the
    model read it (a refused result: ``refused=True`` and its true size in ``original_chars``; one a context
    budget trimmed: ``truncated=True``, its true size in ``original_chars``; on the JSON tool transport, read
    from the request's text blocks).
    ``path`` is the provider path of every step; ``timeline`` the run's decisions, in seconds since it
    started.  ``streamed``: the run's model calls took the stream path (``agent.stream``, ``on_token``), as its
    ``run.started`` says — also a call that streamed only tool calls, no text (an older record, which does not say,
    is read by its text deltas).  :meth:`lines` gives, under the request that produced the answer, the settings it
    was sent with (those set; a vendor option by its keys only, never a value) and what a context budget left out of
    it (:attr:`context_fit`).
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
    #: Whether the run's provider carried tools natively, from its ``run.started`` (``None``: not recorded).  On
    #: ``False`` — the JSON tool transport — the request holds no tool specs (the system message lists the tools)
    #: and its calls and results are text blocks; :attr:`tool_results` are read from those blocks.
    native_tools: bool | None = None
    #: The runs this run's tool calls started (delegation: ``agent.as_tool()``), by the id of the call that
    #: started them (``None``: a tool that did not say which call it served) — explain one with its run id.
    #: Found by their ``run.started`` among the events given (a recorder of the parent's receives them).
    children: Mapping[str | None, tuple[str, ...]] = attrs.field(factory=dict)
    #: Where :attr:`request` may differ from what the member that answered was sent, and the record cannot say
    #: how: credentials a record redacted, the model a member after a failover (or a hedge's copy) called, the media
    #: parts a record keeps as their kind and size only.
    request_notes: tuple[str, ...] = ()
    #: The media parts (images, documents, audio) of each of :attr:`request`'s messages, in order, as
    #: :func:`~agentactors.parts.describe` names them (``"Image(image/png, 2.0 KB)"``): what :meth:`lines` shows
    #: beside each message's text.  From a record too, which keeps a part's kind, media type and size (or URL,
    #: without its query) but not its payload — so a request rebuilt from one holds no parts, and this says
    #: what the model was sent besides the text.
    request_media: tuple[tuple[str, ...], ...] = ()
    #: What the context budget (``context_budget_chars``) left out of :attr:`request`, from the loop's
    #: ``context.fitted`` event of its step: ``chars`` (the budget), ``messages`` (the conversation's, the system
    #: message aside), ``dropped`` (the earlier messages not sent) and ``trimmed`` (the tool results sent trimmed:
    #: :attr:`tool_results` marks them ``truncated``).  ``None`` when the request held the whole conversation.  A
    #: wrong answer may come of a message the model was never sent: this says it was not.
    context_fit: Mapping[str, int] | None = None
    #: The tool calls whose results the context budget dropped from :attr:`request` (``"page c0"``: the tool and
    #: the call id), as far as the events tell: the calls of earlier steps whose results :attr:`request` lacks.
    dropped_results: tuple[str, ...] = ()

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
        events, children, notes = _read_record(path, run_id)
        if not events:
            raise LookupError(f"{path} holds no event of run {run_id!r}" + "".join(f" ({n})" for n in notes))
        original = next((e.data.get("forked_from") for e in events if e.type == "run.forked"), None)
        before = _read_record(path, original)[0] if isinstance(original, str) else []
        explanation = _explain(run_id, events, None, _children_of(run_id, children))
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
            offered = ", ".join(t.name for t in request.tools)
            if not offered and self.native_tools is False:
                offered = "none natively (the JSON tool transport: the system message lists the tools)"
            out += [
                f"  the request that produced the answer (served by {self.served_by}, model {self.served_model}):",
                *(f"    note: {note}" for note in self.request_notes),
                f"    settings: {_settings_text(request)}",
                *((f"    context budget: {_fit_text(self.context_fit, self.dropped_results)}",)
                  if self.context_fit is not None else ()),
                f"    tools offered: {offered}",
                *(f"    {_describe_message(m)}{_media_text(self.request_media, i)}"
                  for i, m in enumerate(request.messages)),
            ]
        shown = {r.call_id for r in self.tool_results}
        out += [
            "  tool results it saw:",
            *(f"    {_describe_result(r)}{_delegated(self.children.get(r.call_id))}" for r in self.tool_results),
            *(f"  delegated runs of call {c or '(unnamed)'}: {', '.join(ids)}"
              for c, ids in self.children.items() if c not in shown),
            f"  answer: {self.answer}",
            *(f"  note: {note}" for note in self.notes),
        ]
        if self.fork is not None:
            out += ["  beside its original:", *(f"  {line}" for line in self.fork.lines())]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def explain(result: RunResult[Any], events: Iterable[Event]) -> Explanation:
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
    explanation = _explain(run_id, mine, result, _children_of(run_id, events))
    if result.forked_from is None:
        return explanation
    before = [e for e in events if e.run_id == result.forked_from]
    return attrs.evolve(explanation, fork=_fork_of(result, mine, before))


def _fork_of(result: RunResult[Any] | None, events: Sequence[Event], before: Sequence[Event]) -> ForkComparison | None:
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


def _read_record(path: str | Path, run_id: str) -> tuple[list[Event], list[Event], tuple[str, ...]]:
    """``run_id``'s events of a JSONL record, the ``run.started`` of the runs it delegated to, and the notes on
    what was skipped (a cut-off last line).

    :raises EventRecordError: a bad line, as :func:`~agentactors.events.read_jsonl` says.
    """
    skipped: list[str] = []
    mine: list[Event] = []
    children: list[Event] = []
    for e in read_jsonl(path, skipped=skipped):
        if e.run_id == run_id:
            mine.append(e)
        elif e.parent_run_id == run_id and e.type == "run.started":
            children.append(e)
    return mine, children, tuple(skipped)


def _children_of(run_id: str, events: Iterable[Event]) -> dict[str | None, tuple[str, ...]]:
    """The runs ``run_id``'s tool calls started, by call id, from their ``run.started`` events."""
    out: dict[str | None, tuple[str, ...]] = {}
    for e in events:
        if e.type == "run.started" and e.parent_run_id == run_id and e.run_id is not None:
            call = _text(e.data.get("parent_call_id"))
            out[call] = (*out.get(call, ()), e.run_id)
    return out


def _delegated(ids: tuple[str, ...] | None) -> str:
    return f" (delegated run {', '.join(ids)})" if ids else ""


# --- building it ----------------------------------------------------------------------------------------


def _explain(
    run_id: str, events: Sequence[Event], result: RunResult[Any] | None, children: Mapping[str | None, tuple[str, ...]]
) -> Explanation:
    start = events[0].time
    end = events[-1].time
    agent: str | None = None
    final_request: Any = None
    answered_request: Any = None
    served_model: str | None = None
    served_by: str | None = None
    answered_step: int | None = None
    answered_calls = ""  # the answering response's tool calls: a typed run's output tool call is its answer
    native_tools: bool | None = None
    answer = ""
    streamed = False
    steps = 0
    tools: dict[str, dict[str, Any]] = {}  # call_id -> status, duration, size, refused/truncated sizes, name, step
    fits: dict[int | None, Mapping[str, Any]] = {}  # step -> its context.fitted payload (a budget left messages out)
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
            native = data.get("native_tools")
            native_tools = native if isinstance(native, bool) else None
            # Every call of the run took the stream path (a step that streamed only tool calls has no text delta
            # to tell it by); a record from before the loop said so is read by its text deltas below.
            streamed = streamed or data.get("stream") is True
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
            answered_step = step
            response = _mapping(data.get("response"))
            answered_calls = _calls_text(response)
            served_model = _text(response.get("model"))
            served_by = _text(data.get("provider")) or _text(response.get("provider"))
        elif kind == "llm.text_delta":
            streamed = True
        elif kind == "context.fitted":
            fits[step] = data
        elif kind == "retry.scheduled":
            retries += 1
        elif kind in _MOVED:
            failovers.append(f"{data.get('from_member')} → {data.get('to_member')} ({data.get('reason')})")
        elif kind.startswith("tools."):
            call_id = data.get("call_id")
            if isinstance(call_id, str):
                entry = tools.setdefault(call_id, {})
                entry.setdefault("step", step)
                if isinstance(data.get("name"), str):
                    entry["name"] = data["name"]
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
    request_notes: list[str] = []
    request = _to_request(answered_request, notes, request_notes) if answered_request is not None else None
    media: tuple[tuple[str, ...], ...] = ()
    if request is not None:
        media = _media_of(answered_request, request_notes)
        request = _as_the_member_got_it(request, paths.get(answered_step) if answered_step is not None else None,
                                        request_notes)
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
    if not answer and status == "ok" and answered_calls:
        # A typed run answered through its output tool: no text, the call holds the answer.
        answer = answered_calls
    messages: Sequence[Message] = request.messages if request is not None else ()
    if native_tools is False:
        messages = _wire_results(messages)
    fit = _fit_of(fits.get(answered_step)) if request is not None else None
    dropped: tuple[str, ...] = ()
    if fit is not None and fit.get("dropped") and answered_step is not None:
        sent = {m.tool_call_id for m in messages if m.role == "tool"}
        dropped = tuple(
            f"{entry.get('name') or 'tool'} {call_id}"
            for call_id, entry in tools.items()
            if call_id not in sent and isinstance(entry.get("step"), int) and entry["step"] < answered_step
        )
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
        native_tools=native_tools,
        children=dict(children),
        request_notes=tuple(request_notes),
        request_media=media,
        context_fit=fit,
        dropped_results=dropped,
    )


def _as_the_member_got_it(request: LLMRequest, path: _PathBuilder | None, notes: list[str]) -> LLMRequest:
    """``request`` (as the loop sent it to its provider stack) as the member that answered it was sent it.

    A member of a chain, a pool or a hedge may be sent the request for a model of its own (``with_model``): the
    only difference.  A hedge that won says its copy's model (``hedge.won``), a failover its member's
    (``to_model``); a record from before failovers named it gets a note rather than the chain's request passed off
    as the member's.
    """
    if path is None or path.served_by is None:
        return request
    model = path.hedge_model
    if model is not None and model != request.model:
        if request.model is not None:
            # Asked for a model, a hedge's copy goes to that model or to its target's own: the one hedge.won names.
            return request.with_model(model)
        notes.append(f"step {path.step}'s hedge to {path.served_by} was for model {model}: the request sent to it "
                     "named that model, or none (left to its default) — the record does not say which")
    elif path.failovers and path.tried and path.served_by != path.tried[0]:
        if path.moved_model is not None:  # the record names the model the member was asked (to_model)
            return request.with_model(path.moved_model) if path.moved_model != request.model else request
        notes.append(f"step {path.step} was served by {path.served_by} after a failover: a later member of a chain "
                     "or pool calls its own model when it has one, which the record does not name — the request's "
                     f"model ({request.model}) is the one asked of the chain")
    return request


# A result entry's header in a request of the JSON tool transport (agentactors.loop.json_transport.to_wire_messages:
# "[name · call id · ok]" alone on its line; a result's own line that reads as one is escaped there with "\").
_WIRE_RESULT = re.compile(r"^\[(?P<name>.*) · call (?P<call>.*) · (?P<status>ok|error)\]$", re.MULTILINE)
_WIRE_RESULTS_LEAD = "Tool results:\n\n"


def _wire_results(messages: Sequence[Message]) -> list[Message]:
    """The tool results of a JSON-transport request's messages, as ``tool`` messages: what each block said."""
    out: list[Message] = []
    for m in messages:
        if m.role != "user" or not m.content.startswith(_WIRE_RESULTS_LEAD):
            continue
        text = m.content
        heads = list(_WIRE_RESULT.finditer(text))
        for k, head in enumerate(heads):
            end = heads[k + 1].start() - 2 if k + 1 < len(heads) else len(text)  # entries are joined by a blank line
            out.append(Message.tool(head["call"], text[head.end() + 1 : end], name=head["name"],
                                    is_error=head["status"] == "error"))
    return out


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


def _result_ending(result: RunResult[Any]) -> tuple[str, str | None]:
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

    __slots__ = ("approved", "attempts", "breakers", "cost", "denied", "error", "errors", "failovers", "hedge_model",
                 "hedges", "moved_model", "names", "outcomes", "resumed_from", "served_by", "step", "tried")

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
        self.hedges: list[str] = []
        self.hedge_model: str | None = None  # the model of the hedge's copy, when it won
        self.moved_model: str | None = None  # the model the last failover's member was asked (its to_model)
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
            self.moved_model = _text(data.get("to_model"))
        elif kind == "breaker.state_changed":
            member = _member_of(data.get("key"))
            self.breakers.append(f"{member} {data.get('from_state')} → {data.get('to_state')} ({data.get('reason')})")
        elif kind == "breaker.rejected":
            member = _member_of(data.get("key"))
            self._try(member, 0)
            self.breakers.append(f"{member} {data.get('state')}: refused")
        elif kind == "hedge.sent":
            after = _seconds(data.get("after"))
            self.hedges.append(f"{data.get('member')} (model {data.get('model')}) after {after:.2f}s")
        elif kind == "hedge.won" and self.hedges:
            won = data.get("winner") == "hedge"
            self.hedges[-1] += ", won" if won else ", lost"
            if won:
                self.hedge_model = _text(data.get("model"))
        elif kind == "hedge.skipped":
            self.hedges.append(f"{data.get('member')} not sent ({data.get('reason')})")
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
            hedges=tuple(self.hedges),
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
        what = _calls_text(response)
        text = response.get("content")
        return f"{at}: {data.get('provider')} answered: {what or f'text ({_size(text)} chars)'}"
    if kind == "context.fitted":
        fit = _fit_of(data)
        assert fit is not None
        cuts: list[str] = []
        if fit["dropped"]:
            cuts.append(f"dropped {_count_of(fit['dropped'], 'earlier message')} of {fit['messages']}")
        if fit["trimmed"]:
            cuts.append(f"trimmed {_count_of(fit['trimmed'], 'tool result')}")
        return f"{at}: the context budget ({fit['chars']:,} chars) {' and '.join(cuts) or 'left nothing out'}"
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


def _calls_text(response: Mapping[str, Any]) -> str:
    """A response's tool calls (its JSON form), as ``name({"arg":1}), ...``."""
    calls = [c for c in _sequence(response.get("tool_calls")) if isinstance(c, Mapping)]
    return ", ".join(f"{c.get('name')}({json.dumps(c.get('arguments'), separators=(',', ':'))})" for c in calls)


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


def _settings_text(request: LLMRequest) -> str:
    """The settings ``request`` was sent with, those set only (``None``, ``()``, an ``auto`` tool choice are the
    provider's defaults), on one line: ``model m, temperature 0.3, stop ["END"], tool_choice none, ...``.

    A vendor option is named by its wire and keys, never its value (``vendor_options openai(user, api_key)``): a
    value may be a credential, and a record holds ``[REDACTED]`` where the request held it — shown, the line
    would differ between the live events and the record, or show the credential.  The line is redacted as a
    whole (a model name or a stop string shaped like a key).
    """
    out: list[str] = []
    for name in ("model", "temperature", "max_tokens", "top_p"):
        value = getattr(request, name)
        if value is not None:
            out.append(f"{name} {value}")
    if request.stop:
        out.append(f"stop {json.dumps(list(request.stop), ensure_ascii=False)}")
    if request.seed is not None:
        out.append(f"seed {request.seed}")
    if request.parallel_tool_calls is not None:
        out.append(f"parallel_tool_calls {str(request.parallel_tool_calls).lower()}")
    choice = request.tool_choice
    if choice.mode != "auto":
        out.append(f"tool_choice {choice.mode}" + (f" {choice.name}" if choice.name else ""))
    if request.response_format is not None:
        out.append(f"response_format {request.response_format.name}")
    for name in ("reasoning_effort", "thinking_budget"):
        value = getattr(request, name)
        if value is not None:
            out.append(f"{name} {value}")
    cache = request.cache
    if cache is not None:
        parts = "+".join(p for p in ("system", "tools", "conversation") if getattr(cache, p)) or "off"
        out.append(f"cache {parts}" + (f" ({cache.retention} retention)" if cache.retention != "default" else ""))
    if request.timeout is not None:
        out.append(f"timeout {request.timeout:g}s")
    if request.vendor_options:
        wires = ", ".join(
            f"{_short(wire, 40)}({', '.join(_short(str(k), 40) for k in options)})"
            if isinstance(options, Mapping) and options else _short(wire, 40)
            for wire, options in request.vendor_options.items()
        )
        out.append(f"vendor_options {wires} (values not shown)")
    return redact(", ".join(out)) if out else "none set (the provider's defaults)"


def _fit_of(data: Mapping[str, Any] | None) -> dict[str, int] | None:
    """A ``context.fitted`` payload as :attr:`Explanation.context_fit` holds it (its counts; one of another kind
    in a record counts as 0), or ``None`` for none."""
    if data is None:
        return None
    return {k: v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0
            for k, v in ((k, data.get(k)) for k in ("chars", "messages", "dropped", "trimmed"))}


def _fit_text(fit: Mapping[str, int], dropped_results: Sequence[str]) -> str:
    """What the context budget left out of the request: ``5,000 chars: 3 earlier messages dropped (...), ...``."""
    parts: list[str] = []
    if fit.get("dropped"):
        among = f" (the results of {', '.join(dropped_results)} among them)" if dropped_results else ""
        parts.append(f"{_count_of(fit['dropped'], 'earlier message')} of {fit.get('messages', 0)} dropped{among}")
    if fit.get("trimmed"):
        parts.append(f"{_count_of(fit['trimmed'], 'tool result')} trimmed (truncated below)")
    return f"{fit.get('chars') or 0:,} chars: {', '.join(parts) or 'nothing left out'}"


def _count_of(n: int, thing: str) -> str:
    return f"{n} {thing}" + ("" if n == 1 else "s")


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
        size = size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else len(m.content)
        if refused is None and size > len(m.content):
            # The request held less than the tool's result: a context budget trimmed it (in the request only).
            # Told as the model read it: truncated, from the size the tool gave (or the cap's, if one cut it first).
            truncated = truncated if truncated is not None else size
            size = len(m.content)
        out.append(
            ToolResult(
                m.tool_call_id,
                m.name or "tool",
                status_value,
                m.content,
                size,
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
_REQUEST_FIELDS = ("model", "max_tokens", "temperature", "stop", "vendor_options", "top_p", "seed",
                   "parallel_tool_calls", "reasoning_effort", "thinking_budget", "timeout")
_CACHE_FIELDS = ("system", "tools", "conversation", "retention")
_FORMAT_FIELDS = ("name", "schema", "strict", "description")
#: What a record writes where it redacted a credential (:func:`agentactors.redaction.redact`).
_REDACTED = "[REDACTED]"


def _to_request(value: Any, notes: list[str] | None = None, caveats: list[str] | None = None) -> LLMRequest | None:
    """``value`` as an LLMRequest: the emitted object itself, or rebuilt from its JSON record.

    Only the fields this module knows are rebuilt; a field a later version records keeps its default
    here rather than failing the explanation.  A record the request cannot be rebuilt from (a message of a
    role no request holds, a tool without a name: a hand-edited or foreign record) gives ``None``, and a
    line in ``notes`` says why — the rest of the run is still explained.  A request whose record redacted a
    credential gets a line in ``caveats``.
    """
    if isinstance(value, LLMRequest):
        return value
    if not isinstance(value, Mapping):
        if notes is not None:
            notes.append(f"a recorded request could not be rebuilt (it is a {type(value).__name__}, not an object)")
        return None
    try:
        request = _rebuilt_request(value)
    except (TypeError, ValueError, KeyError) as exc:
        if notes is not None:
            notes.append(f"a recorded request could not be rebuilt ({type(exc).__name__}: {redact(str(exc))[:200]})")
        return None
    if request is None and notes is not None:
        # Read as "no request produced an answer" with nothing said, the record would hide that one did.
        notes.append("a recorded request could not be rebuilt (it holds no messages)")
    if request is not None and caveats is not None and _holds_redacted(request.vendor_options):
        # A record redacts the request's configuration (vendor options, settings' extra): the request the
        # provider was sent held the credentials where this one says [REDACTED].
        caveats.append(f"the record redacted credentials in the request's vendor_options ({_REDACTED} stands where "
                     "the provider was sent a value)")
    return request


def _media_of(value: Any, caveats: list[str]) -> tuple[tuple[str, ...], ...]:
    """The media parts of each message of ``value`` (an emitted request, or its record), as
    :attr:`Explanation.request_media` holds them.  A record's go in ``caveats`` too: the request rebuilt from it
    lacks them (a record keeps a part's kind and size, not its payload)."""
    if isinstance(value, LLMRequest):
        return tuple(tuple(describe(p) for p in m.media) for m in value.messages)
    records = [m for m in _sequence(_mapping(value).get("messages")) if isinstance(m, Mapping)]
    out = tuple(tuple(_recorded_part(p) for p in _sequence(m.get("_parts")) if _is_media(p)) for m in records)
    lacking = [f"message {i + 1}: {', '.join(parts)}" for i, parts in enumerate(out) if parts]
    if lacking:
        caveats.append("the record keeps media parts as their kind and size only, so they are not in the rebuilt "
                       f"request ({'; '.join(lacking)})")
    return out


def _is_media(part: Any) -> bool:
    """Whether a recorded part (its JSON form) is an image, a document or audio — not a ``Text`` (``{"text": ...}``)."""
    return isinstance(part, Mapping) and "data" in part


def _recorded_part(part: Mapping[str, Any]) -> str:
    """A recorded media part as :func:`~agentactors.parts.describe` names the part itself.

    The record has no class name: a ``Document`` is told by its ``title`` and ``pages``, an ``Image`` by its
    ``url`` (``None`` when given bytes), and ``Audio`` has neither.
    """
    kind = "Document" if "title" in part or "pages" in part else "Image" if "url" in part else "Audio"
    media_type = _text(part.get("media_type"))
    size = _mapping(part.get("data")).get("omitted_bytes")
    if isinstance(size, int) and not isinstance(size, bool):
        return f"{kind}({media_type}, {size_text(size)})"
    url = _text(part.get("url"))
    where = f" at {shown_url(url)}" if url is not None else ""
    return f"{kind}({media_type or 'media type unknown'}{where})"


def _media_text(media: Sequence[tuple[str, ...]], index: int) -> str:
    """What a message's line adds for its media parts: `` [+ Image(image/png, 2.0 KB)]``, or nothing."""
    parts = media[index] if index < len(media) else ()
    return f" [+ {', '.join(_short(p, 200) for p in parts)}]" if parts else ""


def _holds_redacted(value: Any) -> bool:
    """Whether a string in ``value`` (a record's JSON: dicts, lists, strings), keys included, was redacted."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _REDACTED in item:
                return True
        elif isinstance(item, Mapping):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return False


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
    cache = value.get("cache")
    if isinstance(cache, Mapping):
        kwargs["cache"] = CachePolicy(**{k: cache[k] for k in _CACHE_FIELDS if k in cache})
    fmt = value.get("response_format")
    if isinstance(fmt, Mapping):
        kwargs["response_format"] = ResponseFormat(**{k: fmt[k] for k in _FORMAT_FIELDS if k in fmt})
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
