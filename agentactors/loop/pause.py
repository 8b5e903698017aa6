"""A run paused for approval: where it stood, so that it can go on — later, or in another process.

A tool that needs a person's yes (``@tool(requires_approval=True)``, or a ``tool_policy`` that returns
:class:`~agentactors.tools.approval.NeedsApproval`) does not run when the model calls it: the executor
answers the call as *pending*, the step's other calls run as usual, and the run ends **paused**
(``RunResult.paused``).  Everything the run needs to go on is a :class:`PausedRun` — plain data, no
live object — which ``RunResult.resume_state`` carries and a session store persists:

* the conversation through the assistant message that made the calls (``messages``);
* that step's calls (``calls``), the results of the ones that ran (``results``), the ones waiting
  (``pending``) and why each waits (``reasons``);
* the run's counters: ``step``, ``usage``, every call so far (``tool_calls``), the answer so far;
* who was answering (``agent``, after ``handoffs``) and whether the step also held calls of an output
  tool (``output_step``: they are checked once every result is in).

``agent.resume(result_or_state, {call_id: True | "reason to deny"})`` feeds the decisions to the same
step: approved calls run, denied ones are answered with status ``denied`` and the reason, every result
goes back in call order, and the loop goes on from the next step (``max_steps`` counts the steps
before the pause).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from ..messages import Message, ToolCall, Usage
from ..tools.approval import pending_reason
from ..tools.results import ToolResult

__all__ = ["MAX_REASON_CHARS", "Decisions", "PausedRun", "any_pending", "bounded_reason", "check_decisions",
           "denial_reason"]

#: ``{call_id: True}`` to approve a call, ``{call_id: "why not"}`` to deny it (``False`` denies without a reason).
Decisions = Mapping[str, "bool | str"]


#: The most characters of a person's reason to deny that the run keeps (a longer one is cut, saying so): a reason is
#: a sentence or two for the model to read; a pasted document, or a client sending megabytes, went whole into the
#: conversation — paid for at every later step — and held the loop while it was redacted.
MAX_REASON_CHARS: Final = 2_000

#: Control characters but tab and newline (C0, DEL, C1): a terminal escape or a NUL in a reason reaches the model,
#: the run's records and whoever reads them — none of which wants it.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]+")

#: A reason :func:`bounded_reason` cut already: its text, and the note saying how long it was.
_KEPT = re.compile(r"(\S(?:.*\S)?) \[\.\.\. cut: the reason was [0-9,]+ characters\]", re.DOTALL)

#: Ids shown in an error about decisions: enough to see the mistake, not a message of megabytes.
_SHOWN_IDS = 10


def denial_reason(text: str) -> str:
    """A person's reason to deny a call as the run keeps it (:func:`bounded_reason`); ``"denied by a person"`` when
    nothing is left."""
    return bounded_reason(text) or "denied by a person"


def bounded_reason(text: str) -> str:
    """A reason a person gave (to deny a call, to interrupt a run) as the run keeps it: control characters but tabs
    and newlines dropped, whitespace stripped, at most :data:`MAX_REASON_CHARS` (a longer one cut, with a note
    saying so); ``""`` when nothing is left.

    A reason kept already comes back as it is: decisions are checked more than once (a session's ``resolve``, then
    ``agent.resume``; a journal keeps the checked ones and a recovered resume checks them again), and a second cut
    made the note name the first cut's length instead of what the person wrote."""
    kept = _KEPT.fullmatch(text) if MAX_REASON_CHARS < len(text) <= MAX_REASON_CHARS + 80 else None
    if kept is not None and len(kept.group(1)) <= MAX_REASON_CHARS and not _CONTROL.search(text):
        return text
    size = len(text)
    cut = size > MAX_REASON_CHARS
    if cut:
        text = text[:MAX_REASON_CHARS]
    text = _CONTROL.sub("", text).strip()
    if text and cut:
        text += f" [... cut: the reason was {size:,} characters]"
    return text


def _shown(ids: Sequence[object]) -> str:
    """``ids`` for an error message: the first few, and how many more."""
    head = ", ".join(repr(i)[:80] for i in ids[:_SHOWN_IDS])
    more = len(ids) - _SHOWN_IDS
    return f"[{head}]" if more <= 0 else f"[{head}, ... and {more:,} more]"


def _frozen_reasons(value: Mapping[str, str]) -> Mapping[str, str]:
    return dict(value)


@attrs.frozen(slots=True, repr=False)
class PausedRun:
    """Where a paused run stood (see the module docstring); plain data, safe to persist.

    :ivar run_id: the id of the run that paused (the resumed run gets a new one and names this one).
    :ivar messages: the conversation through the assistant message holding ``calls``.
    :ivar calls: the paused step's tool calls, in call order.
    :ivar results: the results of the calls that ran (every call but the pending ones), in call order.
    :ivar pending: the calls awaiting a decision, in call order.
    :ivar reasons: why each pending call waits, by call id (the tool's or the policy's reason).
    :ivar step: the step that paused.
    :ivar usage: tokens used up to the pause (children included).
    :ivar tool_calls: every call of the run so far.
    :ivar answer: the last substantive answer text before the pause.
    :ivar agent: the agent answering when the run paused (after handoffs: not the first one).
    :ivar handoffs: the handoffs taken before the pause.
    :ivar output_step: the step also held calls of an output tool (checked after every result is in).
    """

    run_id: str | None
    messages: tuple[Message, ...]
    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    pending: tuple[ToolCall, ...]
    reasons: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_reasons)
    step: int = 0
    usage: Usage = attrs.field(factory=Usage)
    tool_calls: tuple[ToolCall, ...] = ()
    answer: str = ""
    agent: str | None = None
    handoffs: tuple[str, ...] = ()
    output_step: bool = False

    def __attrs_post_init__(self) -> None:
        _check_fields(self)

    @classmethod
    def of(
        cls,
        run_id: str | None,
        messages: tuple[Message, ...],
        calls: Sequence[ToolCall],
        results: Sequence[ToolResult],
        *,
        step: int,
        usage: Usage,
        tool_calls: Sequence[ToolCall],
        answer: str,
        agent: str | None,
        handoffs: Sequence[str],
        output_step: bool,
    ) -> PausedRun:
        """Where a run stands when some of its step's ``calls`` wait for a person's decision.

        ``results`` are the step's results so far, the waiting calls' placeholders among them
        (:func:`~agentactors.tools.approval.pending_result`): those calls are the pending ones, with
        the placeholders' reasons; the others' results are kept.
        """
        reasons = {r.call_id: pending_reason(r) for r in results if r.awaiting_approval}
        return cls(
            run_id,
            messages,
            tuple(calls),
            tuple(r for r in results if not r.awaiting_approval),
            tuple(c for c in calls if c.id in reasons),
            reasons,
            step,
            usage,
            tuple(tool_calls),
            answer,
            agent,
            tuple(handoffs),
            output_step,
        )

    def completed(self, results: Iterable[ToolResult]) -> tuple[list[ToolCall], tuple[ToolResult, ...]]:
        """The paused step with the pending calls' ``results`` in: the calls that have a result, and those
        results, in call order (what the step feeds back)."""
        by_id = {r.call_id: r for r in self.results}
        by_id.update((r.call_id, r) for r in results)
        ran = [c for c in self.calls if c.id in by_id]
        return ran, tuple(by_id[c.id] for c in ran)

    def __repr__(self) -> str:
        # Its shape, not its contents: the conversation holds the calls' arguments (card numbers, tokens) and the
        # vendors' signatures, which a logged ``%r`` of a pause must not write out.
        pending = ", ".join(f"{c.name!r} (call {c.id!r})" for c in self.pending)
        return (
            f"PausedRun(run_id={self.run_id!r}, agent={self.agent!r}, step={self.step!r}, pending=[{pending}], "
            f"messages={len(self.messages)}, calls={len(self.calls)})"
        )

    def describe(self) -> str:
        """One line per pending call: its name, id and why it waits."""
        return "\n".join(
            f"{c.name} (call {c.id}): {self.reasons.get(c.id) or 'needs approval'}" for c in self.pending
        )


def _sequence_of(state: PausedRun, field: str, kind: type) -> Sequence[Any]:
    """``state``'s ``field``, checked to be a tuple or list of ``kind``."""
    value = getattr(state, field)
    if not isinstance(value, tuple | list):
        raise TypeError(f"PausedRun.{field} must be a tuple of {kind.__name__}, not {type(value).__name__}")
    for item in value:
        if not isinstance(item, kind):
            raise TypeError(f"PausedRun.{field} must hold {kind.__name__} objects, not {type(item).__name__}")
    return value


def _check_fields(state: PausedRun) -> None:
    """Every field of ``state`` of its type, and its pending calls among its calls.

    A pause is data that is stored and read back — pickled, rebuilt from a document by hand — so it may come
    back damaged.  Unchecked, a damaged one failed only once the resumed run had run the approved calls (a
    payment made, then an ``AttributeError``, and the pause used up): checked here, it fails before anything
    runs.  Run when a pause is made and again before it is resumed (:func:`check_decisions`, with
    :func:`_check_resumable`), because unpickling does not go through the constructor.

    :raises TypeError: a field of another type.
    :raises ValueError: no pending call, or a pending call that is not among the step's calls.
    """
    for field in ("run_id", "agent"):
        value = getattr(state, field)
        if value is not None and not isinstance(value, str):
            raise TypeError(f"PausedRun.{field} must be a str or None, not {type(value).__name__}")
    _sequence_of(state, "messages", Message)
    calls = _sequence_of(state, "calls", ToolCall)
    _sequence_of(state, "results", ToolResult)
    pending = _sequence_of(state, "pending", ToolCall)
    _sequence_of(state, "tool_calls", ToolCall)
    _sequence_of(state, "handoffs", str)
    reasons: object = state.reasons
    if not isinstance(reasons, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in reasons.items()
    ):
        raise TypeError("PausedRun.reasons must map call ids (str) to reasons (str)")
    step: object = state.step
    if type(step) is not int or step < 0:
        raise TypeError(f"PausedRun.step must be an int of at least 0, not {step!r}")
    if not isinstance(state.usage, Usage):
        raise TypeError(f"PausedRun.usage must be a Usage, not {type(state.usage).__name__}")
    if not isinstance(state.answer, str):
        raise TypeError(f"PausedRun.answer must be a str, not {type(state.answer).__name__}")
    if type(state.output_step) is not bool:
        raise TypeError(f"PausedRun.output_step must be a bool, not {type(state.output_step).__name__}")
    if not pending:
        raise ValueError("a paused run waits for at least one call")
    ids = {c.id for c in calls}
    missing = [c.id for c in pending if c.id not in ids]
    if missing:
        raise ValueError(f"pending calls {missing} are not among the paused step's calls")


def _check_resumable(state: PausedRun) -> None:
    """``state`` (its fields checked) is a step that can go on: its calls, results and conversation agree.

    The step's results are appended to its conversation, which must end with the assistant message that made
    its calls: after any other message they would answer calls the model never made there — a conversation
    every vendor refuses, found only after the approved calls ran.  Each call has its own id, and each result
    answers one of the calls that ran (else a result is dropped, or answers a call it does not belong to).

    :raises ValueError: they do not agree.
    """
    ids = [c.id for c in state.calls]
    if len(set(ids)) != len(ids):
        raise ValueError(f"the paused step's calls {ids} share an id: a result could not say which call it answers")
    waiting = {c.id for c in state.pending}
    stray = [r.call_id for r in state.results if r.call_id not in ids or r.call_id in waiting]
    if stray:
        raise ValueError(f"the paused run holds results for calls {stray} that are not among its calls that ran")
    last = state.messages[-1] if state.messages else None
    if last is None or last.role != "assistant" or [c.id for c in last.tool_calls] != [c.id for c in state.calls]:
        raise ValueError(
            "the paused run's messages must end with the assistant message that made its calls "
            f"{[c.id for c in state.calls]}: their results follow it"
        )


def any_pending(results: Iterable[ToolResult]) -> bool:
    """Whether a call among ``results`` waits for a person's decision (the step then pauses the run)."""
    return any(r.awaiting_approval for r in results)


def check_decisions(state: PausedRun, decisions: Any) -> dict[str, bool | str]:
    """``decisions`` checked against ``state``: one per pending call, each ``True``, ``False`` or a reason.

    ``state`` is checked first, whole (it may have been stored and read back damaged): nothing of a pause
    that cannot go on is run.

    :raises TypeError: not a mapping, or a decision of another type; a field of ``state`` of another type.
    :raises ValueError: a pending call without a decision, or a decision for a call that is not pending; a
        ``state`` whose calls, results and messages do not agree (:func:`_check_resumable`).
    """
    if not isinstance(state, PausedRun):
        raise TypeError(f"a paused run's state is a PausedRun, not {type(state).__name__}")
    _check_fields(state)
    _check_resumable(state)
    if not isinstance(decisions, Mapping):
        raise TypeError(f"decisions map call ids to True or a reason to deny, not {type(decisions).__name__}")
    pending = [c.id for c in state.pending]
    waiting = set(pending)
    unknown = [k for k in decisions if k not in waiting]
    if unknown:
        raise ValueError(f"decisions for calls that are not pending: {_shown(unknown)} (pending: {_shown(pending)})")
    missing = [k for k in pending if k not in decisions]
    if missing:
        raise ValueError(f"no decision for pending calls {_shown(missing)}: give True or a reason to deny for each")
    out: dict[str, bool | str] = {}
    for key, value in decisions.items():
        if value is True:
            out[key] = True
        elif value is False:
            out[key] = "denied by a person"
        elif isinstance(value, str):
            out[key] = denial_reason(value)
        else:
            raise TypeError(
                f"the decision for {key!r} must be True, False or a reason (str), not {type(value).__name__}"
            )
    return out
