"""A fork beside its original: what changed in the context from the fork step on, and which answer differs.

``fork(source, run_id, at_step, ...)`` answers "what if": the same conversation, another model, prompt or tool,
from the step where it went wrong.  :class:`ForkComparison` is the answer's explanation — both runs side by
side, step by step:

* what changed in the context at the fork step: the system prompt, the model, the generation settings, the
  tools offered (as each run's request at that step carried them);
* each step from the fork step on: what the model did (its calls, or an answer) and what the tools gave back,
  original beside fork, with the steps that differ marked;
* the two answers, and whether they differ.

Two ways in.  :func:`agentactors.explain` shows it by itself (``Explanation.fork``) when the forked result's
events and its original's are in the events it is given — one recorder on both runs, or one JSONL file
(``python -m agentactors explain FILE FORK_RUN_ID``).  ``await explain_fork(forked, source, events=...)``
loads the original from the source it was forked from (a JSONL record or a journal).

What each side says depends on what recorded it.  Events (a recorder, a JSONL file) hold every request:
system prompt, model and settings included.  A journal holds the steps (responses, with the model that
served them, and tool results) but not the requests: what it cannot say is listed as not compared, never
guessed.  A forked :class:`~agentactors.RunResult` without its events gives its steps (from its messages)
and its answer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import attrs

from ..events import Event, read_jsonl, to_jsonable
from ..loop.call_ids import is_fresh_id_of
from ..loop.result import RunResult
from ..messages import LLMResponse
from ..tools.results import ToolResult, ToolStatus
from .jsonl import run_from_events
from .records import RecordedRun, RecordedStep, RunNotRecordedError
from .replay import load_run

__all__ = ["ContextChange", "ForkComparison", "StepSideBySide", "compare_fork", "explain_fork"]

#: The request fields compared at the fork step, in the order they are shown.
_SETTINGS = (
    "model", "temperature", "max_tokens", "top_p", "seed", "stop", "reasoning_effort", "thinking_budget",
    "parallel_tool_calls", "tool_choice", "response_format", "vendor_options",
)


@attrs.frozen(slots=True)
class ContextChange:
    """One thing the fork's model was given differently at the fork step: ``what`` (``"system prompt"``,
    ``"model"``, ``"temperature"``, ``"tools offered"``...) went from ``original`` to ``fork`` (as text;
    ``"(default)"``: not set, the vendor's default)."""

    what: str
    original: str
    fork: str

    def describe(self) -> str:
        return f"{self.what}: {self.original} → {self.fork}"


@attrs.frozen(slots=True)
class StepSideBySide:
    """One step of both runs: what each did (``None``: that run had no such step).  ``reused``: a step before
    the fork step, served to the fork from the original's recording (the same by construction)."""

    step: int
    original: str | None
    fork: str | None
    reused: bool = False

    @property
    def differs(self) -> bool:
        return self.original != self.fork

    def describe(self) -> str:
        if self.reused:
            return f"step {self.step} (reused): {self.original}"
        mark = "differs" if self.differs else "same"
        return f"step {self.step} [{mark}]\n  original: {self.original or '(no such step)'}\n" \
               f"  fork:     {self.fork or '(no such step)'}"


@attrs.frozen(slots=True)
class ForkComparison:
    """A fork and its original side by side (see the module docstring).  ``str(comparison)`` prints it.

    ``at_step`` is the first step the fork ran live (from its ``run.forked`` event); when the fork's events
    were not given it is the first step whose model output differs, and ``at_step_inferred`` says so.
    ``not_compared`` names what only one side's recording holds (a journal holds no request: no system
    prompt, no settings), so it could not be compared.
    """

    original_run_id: str
    fork_run_id: str | None
    at_step: int
    changes: tuple[ContextChange, ...]
    steps: tuple[StepSideBySide, ...]
    original_answer: str | None
    fork_answer: str
    at_step_inferred: bool = False
    not_compared: tuple[str, ...] = ()

    @property
    def answer_differs(self) -> bool:
        """Whether the fork ended on another answer than the original."""
        return self.original_answer != self.fork_answer

    def lines(self) -> list[str]:
        """The comparison as plain text lines."""
        how = "first differing step" if self.at_step_inferred else "live from step"
        out = [f"fork {self.fork_run_id} of run {self.original_run_id} ({how} {self.at_step})"]
        out.append(f"  what changed in the context at step {self.at_step}:")
        out += [f"    {c.describe()}" for c in self.changes] or ["    nothing recorded changed"]
        if self.not_compared:
            out.append(f"    not compared (one side did not record it): {', '.join(self.not_compared)}")
        out.append("  step by step:")
        for pair in self.steps:
            out += [f"    {line}" for line in pair.describe().splitlines()]
        if self.answer_differs:
            out += ["  the answer differs:", f"    original: {_short(self.original_answer or '(none)')}",
                    f"    fork:     {_short(self.fork_answer)}"]
        else:
            out.append(f"  the same answer: {_short(self.fork_answer)}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


# --- the two ways in ----------------------------------------------------------------------------------


async def explain_fork(
    forked: RunResult[Any],
    source: str | os.PathLike[str] | Any,
    *,
    events: Iterable[Event] = (),
) -> ForkComparison:
    """``forked`` beside the run it was forked from, read from ``source`` (what ``fork`` was given).

    ``events``: the fork's events (a recorder given to ``fork(..., recorders=[...])``), for its requests'
    context; without them the fork's side is read from its result.

    :raises TypeError: ``forked`` is not a :class:`~agentactors.RunResult`.
    :raises ValueError: ``forked`` is not a fork (no ``forked_from``).
    :raises RunNotRecordedError: ``source`` holds no original.

    Cancellation: a read, nothing written: as :func:`~agentactors.journal.load_run` (a JSONL source is read
    once, in a worker thread — its events and the run they tell — and that read is not interrupted: a cancelled
    caller waits for it to end).
    """
    if not isinstance(forked, RunResult):  # (its forked_from read off a str was an AttributeError)
        raise TypeError(f"forked is fork()'s RunResult, not a {type(forked).__name__}")
    original_id = forked.forked_from
    if original_id is None:
        raise ValueError("this RunResult is not a fork (its forked_from is None): fork(source, run_id, at_step)")
    original_events: list[Event] = []
    if isinstance(source, str | os.PathLike):  # a file's read is blocking: not on the event loop
        original_events, recorded = await anyio.to_thread.run_sync(_read_original, Path(source), original_id)
    else:
        recorded = await load_run(source, original_id)
    return compare_fork(recorded, forked, original_events=original_events, fork_events=events)


def _read_original(path: Path, run_id: str) -> tuple[list[Event], RecordedRun]:
    """The events of ``run_id`` in the JSONL file at ``path``, and the run they tell (as ``read_run``)."""
    events = list(read_jsonl(path, run_id=run_id))
    return events, run_from_events(events, run_id, where=str(path))


def compare_fork(
    original: RecordedRun,
    forked: RunResult[Any] | None,
    *,
    original_events: Iterable[Event] = (),
    fork_events: Iterable[Event] = (),
) -> ForkComparison:
    """The comparison of a fork with ``original`` (a recorded run), from whatever each side has.

    ``forked``: the fork's result (``None`` when only its events are known: ``fork_events`` must then hold
    them).  ``original_events`` / ``fork_events``: each run's events (others' are skipped), for the context
    of its requests.

    :raises ValueError: neither ``forked`` nor ``fork_events`` tell the fork.
    """
    mine = [e for e in original_events if e.run_id == original.run_id]
    fork_events = list(fork_events)
    fork_id = forked.run_id if forked is not None else _forked_run(fork_events, original.run_id)
    theirs = [e for e in fork_events if fork_id is not None and e.run_id == fork_id]
    if forked is None and not theirs:
        raise ValueError(f"no forked result and no event of a fork of run {original.run_id!r}")
    # Both sides' steps go by their events' numbers (a journal's too, RecordedRun.steps): a resumed run's go on
    # from the paused run's step, and so do its fork's, which resumes the same pause.
    fork_run = _told(theirs, fork_id or "") if theirs else None
    if fork_run is None:
        if forked is None:
            raise ValueError(f"the events of fork {fork_id!r} do not tell it (no run.started and first request)")
        fork_run = _from_result(forked, _steps_before(original), original.first_step)
    answer = forked.content if forked is not None else fork_run.content or ""
    at_step, inferred = _at_step(theirs, original, fork_run)
    before, after = _context(mine, at_step, original), _context(theirs, at_step, fork_run)
    return ForkComparison(
        original_run_id=original.run_id,
        fork_run_id=fork_id,
        at_step=at_step,
        changes=_changes(before, after),
        steps=_side_by_side(original, fork_run, at_step),
        original_answer=original.content,
        fork_answer=answer,
        at_step_inferred=inferred,
        not_compared=tuple(k for k in (*before, *after) if (k in before) != (k in after)),
    )


# --- building it ----------------------------------------------------------------------------------------


def _told(events: Sequence[Event], run_id: str) -> RecordedRun | None:
    try:
        return run_from_events(events, run_id)
    except RunNotRecordedError:
        return None


def _forked_run(events: Iterable[Event], original_id: str) -> str | None:
    for e in events:
        if e.type == "run.forked" and e.data.get("forked_from") == original_id:
            return e.run_id
    return None


def _at_step(events: Sequence[Event], original: RecordedRun, fork: RecordedRun) -> tuple[int, bool]:
    for e in events:
        if e.type == "run.forked" and isinstance(e.data.get("at_step"), int):
            return int(e.data["at_step"]), False
    for a, b in zip(original.steps, fork.steps, strict=False):
        if _did(a) != _did(b):
            return a.number, True
    return original.first_step + min(len(original.steps), len(fork.steps)), True


def _steps_before(original: RecordedRun) -> int:
    """How many assistant messages the conversation held before the original's first step: its input's (a
    session's history), or — a resumed run — the paused run's, its paused step included.  A fork starts from the
    same conversation."""
    before = original.resume[0].messages if original.resume is not None else original.inputs
    return sum(1 for m in before if m.role == "assistant")


def _from_result(result: RunResult[Any] | None, skip: int = 0, first: int = 1) -> RecordedRun:
    """A run's steps read from its conversation: each assistant message a step, its tool messages its results;
    the first ``skip`` assistant messages (and their results) were the conversation it started from, and its
    first step is numbered ``first`` (a resumed run's goes on from the paused run's)."""
    assert result is not None
    steps: list[RecordedStep] = []
    calls: dict[str, str] = {}
    results: list[ToolResult] = []
    seen = 0

    def close() -> None:
        if steps and results:
            steps[-1] = attrs.evolve(steps[-1], results=tuple(results))
        results.clear()

    for m in result.messages:
        if m.role == "assistant":
            seen += 1
        if seen <= skip:
            continue
        if m.role == "assistant":
            close()
            calls.update((c.id, c.name) for c in m.tool_calls)
            steps.append(RecordedStep(len(steps) + first, LLMResponse(m.content, m.tool_calls)))
        elif m.role == "tool" and m.tool_call_id is not None:
            status = ToolStatus.error if m.is_error else ToolStatus.ok
            name = m.name or calls.get(m.tool_call_id, "tool")
            results.append(ToolResult(m.tool_call_id, name, status, m.content, len(m.content), 0.0))
    close()
    return RecordedRun(result.run_id or "", result.agent, (), tuple(steps), content=result.content)


def _context(events: Sequence[Event], step: int, run: RecordedRun) -> dict[str, str]:
    """What the run's model was given at ``step``: its request's system prompt, settings and tools (from the
    events), else what its recording says (the model that served the step, the system prompt of a JSONL)."""
    out: dict[str, str] = {}
    request = next((e.data.get("request") for e in events if e.type == "llm.request" and e.step == step), None)
    doc = to_jsonable(request) if request is not None else None
    if isinstance(doc, Mapping):
        # A record's request as it is (explain reads a record, damaged or not): lists where lists are.
        messages = messages if isinstance(messages := doc.get("messages"), list) else ()
        tools = tools if isinstance(tools := doc.get("tools"), list) else ()
        roles = (m for m in messages if isinstance(m, Mapping))
        system = next((m.get("content") for m in roles if m.get("role") == "system"), None)
        out["system prompt"] = _quoted(system) if system is not None else "(none)"
        for name in _SETTINGS:
            out[name] = _value(doc.get(name))
        out["tools offered"] = ", ".join(str(t.get("name")) for t in tools if isinstance(t, Mapping))
        out["tools offered"] = out["tools offered"] or "(none)"
    elif run.system is not None:
        out["system prompt"] = _quoted(run.system)
    served = next((s.response.model for s in run.steps if s.number == step and s.response.model), None)
    if served is not None:
        out["model served"] = served
    return out


def _changes(original: Mapping[str, str], fork: Mapping[str, str]) -> tuple[ContextChange, ...]:
    """What both sides recorded, and differs (what one side did not record is ``not_compared``)."""
    return tuple(ContextChange(k, v, fork[k]) for k, v in original.items() if k in fork and fork[k] != v)


def _side_by_side(original: RecordedRun, fork: RecordedRun, at_step: int) -> tuple[StepSideBySide, ...]:
    a = {s.number: s for s in original.steps}
    b = {s.number: s for s in fork.steps}
    out = []
    for n in range(min([*a, *b], default=1), max([*a, *b], default=0) + 1):  # a resumed run's start after 1
        mine, theirs = a.get(n), b.get(n)
        if n < at_step:
            out.append(StepSideBySide(n, _did(mine), _did(theirs), reused=True))
        else:
            out.append(StepSideBySide(n, _did(mine), _did(theirs)))
    return tuple(out)


def _did(step: RecordedStep | None) -> str | None:
    """One line: what a step's model asked for and its tools gave back, or its answer."""
    if step is None:
        return None
    response = step.response
    if not response.tool_calls:
        return f"answered {_short(response.content, 70)!r}"
    unmatched = list(step.results or ())
    parts = []
    for call in response.tool_calls:
        args = json.dumps(call.arguments, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        result = _result_of(call.id, unmatched)
        got = f" → {result.status.value} {_short(result.content, 50)!r}" if result is not None else " → (no result)"
        parts.append(f"{call.name}({args}){got}")
    return "; ".join(parts)


def _result_of(call_id: str, unmatched: list[ToolResult]) -> ToolResult | None:
    """The result of the call ``call_id`` among ``unmatched`` (taken out of it): by its id, else by the fresh id the
    run gave the call (a recorded response keeps the vendor's ids; a call reusing an id ran, and its result is
    recorded, as ``<id>_2``...: ``loop/call_ids.py``)."""
    for i, result in enumerate(unmatched):
        if result.call_id == call_id:
            return unmatched.pop(i)
    for i, result in enumerate(unmatched):
        if is_fresh_id_of(result.call_id, (call_id,)):
            return unmatched.pop(i)
    return None


def _value(value: Any) -> str:
    if value in (None, (), [], {}):
        return "(default)"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False, default=str)


def _quoted(text: Any) -> str:
    return repr(_short(str(text), 80))


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

