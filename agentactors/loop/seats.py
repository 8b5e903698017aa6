"""Handoffs inside one run: the conversation goes on with another agent — its prompt, tools and output type.

A handoff is a tool call the loop answers itself (``handoff(agent)`` builds the tool; ``Agent(...,
handoffs=[...])`` offers it).  When the model calls one, the step's other calls run as usual, the
handoff call is answered ("transferred"), and the run's *seat* changes: from the next step on, the
requests carry the target agent's system prompt, tools, settings and output type and go to its
provider; its tools run in its executor.  The run itself stays one run — one id, one sink, one
``max_steps`` (the first agent's, counting every step) — so a handoff loop is bounded like any other,
and ``RunResult.agent`` / ``RunResult.handoffs`` say who answered and the way there.

The loop knows agents only as :class:`Seat` values, which the agent layer makes
(:data:`SeatResolver`): the loop sits below the agent layer and imports nothing of it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from ..messages import Message, ToolCall
from ..tools.results import ToolResult, ToolStatus

__all__ = [
    "InputFilter",
    "Seat",
    "SeatResolver",
    "filtered",
    "handoff_calls",
    "handoff_results",
    "not_used_text",
    "transferred_text",
]

#: ``input_filter(messages) -> messages``: what the target agent sees of the conversation so far.
InputFilter = Callable[[tuple[Message, ...]], Sequence[Message]]


@attrs.frozen(slots=True)
class Seat:
    """An agent as one run's loop uses it: its config and its actors in the run's runtime.

    :ivar config: the agent's :class:`~agentactors.loop.controller.LoopConfig` (its ``handoffs`` map
        each handoff tool's name to the agent it hands to).
    :ivar provider: the reference to the agent's ProviderActor.
    :ivar tools: the reference to the agent's ToolExecutorActor, or ``None`` (no tools).
    :ivar native: whether the agent's provider calls tools natively (else the JSON-fallback transport).
    :ivar input_filter: applied to the conversation when the run is handed to this agent.
    """

    # A LoopConfig; typed loosely because the controller imports this module, not the other way round.
    config: Any
    provider: Any
    tools: Any
    native: bool = True
    input_filter: InputFilter | None = None


#: ``await resolve(agent_name, via)``: the seat of the agent named ``agent_name`` (a handoff's target, or
#: the agent a paused run was answering), made by the agent layer in the run's runtime; ``via`` is the
#: handoff tool's name (its ``input_filter`` applies), ``None`` when no handoff leads there.
SeatResolver = Callable[[str, str | None], Awaitable[Seat]]


def transferred_text(target: str) -> str:
    """The handoff call's result, as the model (and the target agent) read it."""
    return f"Transferred to {target}. {target} continues the conversation from here."


def not_used_text(target: str) -> str:
    """The result of a handoff call made beside the one taken."""
    return f"Not used: the conversation was already transferred to {target}."


#: The result of a handoff call made beside calls that wait for approval: the run pauses first.
_PAUSED_TEXT = "Not used: other calls of this step wait for approval; call it again afterwards."


def handoff_results(
    calls: Sequence[ToolCall],
    taken: Sequence[ToolCall],
    target: str,
    others: Iterable[ToolResult],
    *,
    pausing: bool,
) -> tuple[ToolResult, ...]:
    """A step's results in call order: the other calls' (``others``), then the handoff calls' (``taken``).

    The first handoff is answered "transferred" to ``target`` and any later one "not used", so the target
    agent reads a well-formed conversation; when the step ``pausing`` (another call waits for approval)
    every handoff is "not used" — the model may call it again once the decisions are in.
    """
    by_id = {r.call_id: r for r in others}
    first = taken[0]
    for call in taken:
        if pausing:
            text = _PAUSED_TEXT
        elif call is first:
            text = transferred_text(target)
        else:
            text = not_used_text(target)
        by_id[call.id] = ToolResult.of(call.id, call.name, ToolStatus.ok, text)
    return tuple(by_id[c.id] for c in calls)


def filtered(seat: Seat, conversation: tuple[Message, ...]) -> tuple[Message, ...]:
    """The conversation as ``seat``'s agent gets it: through its ``input_filter``, checked.

    :raises TypeError: the filter returned something that is not a sequence of messages.
    :raises Exception: what the filter raised, unchanged, with a note naming the handoff.
    :raises ValueError: it returned no message; or, for an agent whose provider carries tools natively, a tool
        call apart from its results (:func:`_unpaired`).
    """
    if seat.input_filter is None:
        return conversation
    handoff = f"the handoff to {getattr(seat.config, 'agent_name', None)!r}"
    try:
        returned = seat.input_filter(conversation)
    except Exception as exc:
        # The filter's own error, unchanged (the caller's bug, to be caught as what it is), saying where it came
        # from: raised from the loop, its traceback alone does not say which of the run's handoffs it was.
        exc.add_note(f"raised by the input_filter of {handoff}")
        raise
    if isinstance(returned, str | bytes | bytearray | Mapping | Message) or not isinstance(returned, Iterable):
        # Else a str or a dict was taken item by item, None or a coroutine failed as "not iterable".
        raise TypeError(
            f"{handoff}: its input_filter must return a sequence of Messages, not {type(returned).__name__}"
        )
    out = tuple(returned)
    for m in out:
        if not isinstance(m, Message):
            raise TypeError(
                f"{handoff}: its input_filter must return a sequence of Messages, not one holding {type(m).__name__}"
            )
    if not out:
        raise ValueError(f"{handoff}: its input_filter returned no message: the target agent needs a conversation")
    if seat.native:
        problem = _unpaired(out)
        if problem is not None:
            raise ValueError(
                f"{handoff}: its input_filter returned {problem}: every vendor refuses that conversation — keep or "
                "drop an assistant message that makes calls together with its tool results"
            )
    return out


def _unpaired(messages: Sequence[Message]) -> str | None:
    """What breaks a call/result pair in ``messages``, or ``None``: each tool result right after the assistant
    message that made its call (with the call's siblings' results), each call followed by its result.

    A filter that drops "earlier tool calls" by role alone leaves one half of each pair, and the target's first
    model call failed with the vendor's refusal, far from the cause.  (On the JSON transport tool turns are text,
    which the model reads whatever their order: not checked there.)
    """
    waiting: list[str] = []  # the calls of the last assistant message that have no result yet
    for m in messages:
        if m.role == "tool":
            if m.tool_call_id not in waiting:
                return f"a tool result (call {m.tool_call_id!r}) without the assistant message that made its call"
            waiting.remove(m.tool_call_id)
            continue
        if waiting:
            return f"tool calls {waiting} without their results"
        waiting = [c.id for c in m.tool_calls]
    if waiting:
        return f"tool calls {waiting} without their results"
    return None


def handoff_calls(calls: Sequence[ToolCall], handoffs: Any) -> list[ToolCall]:
    """The calls among ``calls`` that are handoffs (their names are keys of ``handoffs``), in call order."""
    return [c for c in calls if c.name in handoffs]
