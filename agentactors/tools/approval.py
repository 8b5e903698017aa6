"""Approvals: a tool call that waits for a person's decision instead of running.

Two ways to ask for one: a tool that always needs it (``@tool(requires_approval=True)``), or a
``tool_policy`` that decides per call by returning :class:`NeedsApproval` (beside ``None`` to allow and
a reason string to deny).  Either way the executor does not run the call: it answers it as
*pending* (:func:`pending_result`), the step's other calls run as usual, and the loop ends the run
paused (:mod:`agentactors.loop.pause`).  When the run goes on, every decision reaches the executor
with the call (``ExecutionContext.approvals``): an approved call runs without asking again, a denied
one is answered with status ``denied`` and the person's reason.
"""

from __future__ import annotations

import attrs

from ..redaction import redact
from .results import ToolResult, ToolStatus

__all__ = ["NeedsApproval", "decision_denied_text", "is_pending", "pending_reason", "pending_result"]


@attrs.frozen(slots=True)
class NeedsApproval:
    """What a ``tool_policy`` returns for a call a person must decide on: ``NeedsApproval("sends money")``.

    :ivar reason: why the call needs a decision; shown to whoever decides (``RunResult.resume_state``,
        the ``run.paused`` event), never to the model.
    """

    reason: str = attrs.field(default="needs approval")

    @reason.validator
    def _check(self, _: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"NeedsApproval.reason must be a str, not {type(value).__name__}")


#: The text a pending call's placeholder carries; never sent: the run pauses before the next request.
_PENDING_PREFIX = "awaiting approval: "


def pending_result(call_id: str, name: str, reason: str) -> ToolResult:
    """The executor's answer for a call awaiting a decision (status ``denied``, never fed to the model)."""
    text = _PENDING_PREFIX + (reason or "needs approval")
    return ToolResult(call_id, name, ToolStatus.denied, text, len(text), 0.0, awaiting_approval=True)


def is_pending(result: ToolResult) -> bool:
    """Whether ``result`` is a pending call's placeholder (:func:`pending_result`)."""
    return result.awaiting_approval


def pending_reason(result: ToolResult) -> str:
    """The reason a pending call waits (from :func:`pending_result`'s text)."""
    return result.content.removeprefix(_PENDING_PREFIX)


def decision_denied_text(name: str, reason: str) -> str:
    """What the model reads for a call a person denied (status ``denied``)."""
    reason = redact(reason.strip()).rstrip(".") or "no reason given"
    return (
        f"Call refused: a person reviewing this call of tool '{name}' denied it — it was not executed. "
        f"Reason: {reason}. Do not call '{name}' again for this; continue without it or ask the user."
    )
