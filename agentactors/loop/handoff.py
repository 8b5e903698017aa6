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

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from ..messages import Message, ToolCall

__all__ = ["InputFilter", "Seat", "SeatResolver", "filtered", "handoff_calls", "not_used_text", "transferred_text"]

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


def filtered(seat: Seat, conversation: tuple[Message, ...]) -> tuple[Message, ...]:
    """The conversation as ``seat``'s agent gets it: through its ``input_filter``, checked.

    :raises TypeError: the filter returned something that is not a sequence of messages.
    :raises ValueError: it returned no message.
    """
    if seat.input_filter is None:
        return conversation
    out = tuple(seat.input_filter(conversation))
    for m in out:
        if not isinstance(m, Message):
            raise TypeError(f"a handoff's input_filter must return Message objects, not {type(m).__name__}")
    if not out:
        raise ValueError("a handoff's input_filter returned no message: the target agent needs a conversation")
    return out


def handoff_calls(calls: Sequence[ToolCall], handoffs: Any) -> list[ToolCall]:
    """The calls among ``calls`` that are handoffs (their names are keys of ``handoffs``), in call order."""
    return [c for c in calls if c.name in handoffs]
