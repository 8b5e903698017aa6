"""``RunResult``: what one agent run comes back as."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from ..messages import Message, ToolCall, Usage

__all__ = ["RunResult"]


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _messages(value: Iterable[Message]) -> tuple[Message, ...]:
    return tuple(value)


def _calls(value: Iterable[ToolCall]) -> tuple[ToolCall, ...]:
    return tuple(value)


@attrs.frozen(slots=True)
class RunResult:
    """The outcome of one run of the tool loop.

    :ivar content: the answer text (think blocks removed); on ``bounded`` runs the
        last substantive answer; on failed runs a plain explanation, never a
        vendor's raw error body.
    :ivar messages: the whole conversation after the run: the input messages
        plus everything the run added.  A cancelled run adds nothing.
    :ivar tool_calls: every call the model asked for, in order.
    :ivar steps: model calls made (think-only and failed ones included).
    :ivar bounded: the run stopped at ``max_steps`` or ``max_empty_steps`` rather
        than on an answer — or the provider failed after an earlier step had
        produced substantive text (then ``error`` is set and ``content`` is that text).
    :ivar cancelled: the run was cancelled through its own handle.
    :ivar generation_failed: the provider stack gave up and nothing useful was produced.
    :ivar error: the provider error (or the tool-status routing error) that ended the run.
    :ivar followups: the suggestions of the last ``suggest_followups`` call.
    :ivar usage: tokens summed over every step.
    :ivar served_by: the provider member that served the final answer.
    :ivar run_id: the id every event of this run carries.
    """

    content: str
    messages: tuple[Message, ...] = attrs.field(converter=_messages)
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_calls)
    steps: int = 0
    bounded: bool = False
    cancelled: bool = False
    generation_failed: bool = False
    error: BaseException | None = attrs.field(default=None, eq=False)
    followups: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    usage: Usage = attrs.field(factory=Usage)
    served_by: str | None = None
    run_id: str | None = None

    @property
    def ok(self) -> bool:
        """The run ended on an answer: not bounded, cancelled or failed."""
        return not (self.bounded or self.cancelled or self.generation_failed or self.error is not None)
