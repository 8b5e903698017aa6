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

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ..messages import Message, ToolCall, Usage
from ..tools.approval import pending_reason
from ..tools.results import ToolResult

__all__ = ["Decisions", "PausedRun", "any_pending", "check_decisions"]

#: ``{call_id: True}`` to approve a call, ``{call_id: "why not"}`` to deny it (``False`` denies without a reason).
Decisions = Mapping[str, "bool | str"]


def _frozen_reasons(value: Mapping[str, str]) -> Mapping[str, str]:
    return dict(value)


@attrs.frozen(slots=True)
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
        if not self.pending:
            raise ValueError("a paused run waits for at least one call")
        ids = {c.id for c in self.calls}
        missing = [c.id for c in self.pending if c.id not in ids]
        if missing:
            raise ValueError(f"pending calls {missing} are not among the paused step's calls")

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

    def describe(self) -> str:
        """One line per pending call: its name, id and why it waits."""
        return "\n".join(
            f"{c.name} (call {c.id}): {self.reasons.get(c.id) or 'needs approval'}" for c in self.pending
        )


def any_pending(results: Iterable[ToolResult]) -> bool:
    """Whether a call among ``results`` waits for a person's decision (the step then pauses the run)."""
    return any(r.awaiting_approval for r in results)


def check_decisions(state: PausedRun, decisions: Any) -> dict[str, bool | str]:
    """``decisions`` checked against ``state``: one per pending call, each ``True``, ``False`` or a reason.

    :raises TypeError: not a mapping, or a decision of another type.
    :raises ValueError: a pending call without a decision, or a decision for a call that is not pending.
    """
    if not isinstance(decisions, Mapping):
        raise TypeError(f"decisions map call ids to True or a reason to deny, not {type(decisions).__name__}")
    pending = [c.id for c in state.pending]
    unknown = [k for k in decisions if k not in pending]
    if unknown:
        raise ValueError(f"decisions for calls that are not pending: {unknown} (pending: {pending})")
    missing = [k for k in pending if k not in decisions]
    if missing:
        raise ValueError(f"no decision for pending calls {missing}: give True or a reason to deny for each")
    out: dict[str, bool | str] = {}
    for key, value in decisions.items():
        if value is True:
            out[key] = True
        elif value is False:
            out[key] = "denied by a person"
        elif isinstance(value, str):
            out[key] = value.strip() or "denied by a person"
        else:
            raise TypeError(f"the decision for {key!r} must be True, False or a reason (str), not {value!r}")
    return out
