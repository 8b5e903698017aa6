"""Handoffs: a tool whose call hands the conversation to another agent (``handoff(agent)``).

``Agent(..., handoffs=[billing, handoff(refunds, input_filter=...)])`` offers the model one tool per
target (``transfer_to_<name>`` unless named); calling it ends the current agent's turn and the run goes
on with the target — its system prompt, tools, settings and output type — in the same run
(:mod:`agentactors.loop.seats` tells how the loop does it).  ``RunResult.agent`` names the agent that
answered and ``RunResult.handoffs`` the way there; the whole run, handoffs included, is bounded by the
first agent's ``max_steps``.  A handoff starts no run, so it is not counted against a delegation tree's
``max_runs`` (:mod:`.delegation`); the delegations the target makes count in the same tree as the run's
earlier ones — the run, and its count, go on.

A :class:`Handoff` is a :class:`~agentactors.tools.registry.Tool` (so it can be listed, inspected and
passed where tools go: in ``tools=`` it is taken as a handoff too), but the executor never runs it: the
loop answers the call itself.  The target is an Agent — checked here only for a ``name`` and a ``run``, without
importing the agent layer, which imports this module; another object with them is refused when the ``Agent`` given
the handoff is made (a ``TypeError`` naming its type) — or the *name* of an agent (``handoff("triage")``),
resolved among the agents the run can reach: that is how two agents hand a conversation back and forth
(agents are immutable, so two of them cannot hold each other).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from ..loop.seats import InputFilter
from ..tools.registry import Tool

__all__ = ["Handoff", "handoff", "tool_name_for"]

_NOT_IN_NAMES = re.compile(r"[^a-zA-Z0-9_-]+")


def tool_name_for(prefix: str, agent_name: str) -> str:
    """``prefix`` + the agent's name made a valid tool name (letters, digits, ``_``, ``-``; at most 64)."""
    return (prefix + _NOT_IN_NAMES.sub("_", agent_name).strip("_"))[:64] or prefix.rstrip("_")


def _transfer() -> str:
    # Never called by the loop (it answers handoff calls itself); a direct call says what it would do.
    return "transferred"


class Handoff(Tool[[], str]):
    """The tool :func:`handoff` builds: its call hands the run to :attr:`target`.

    :ivar target: the ``Agent`` that takes over, or its name (found among the agents the run reaches through
        its handoffs).
    :ivar target_name: the target agent's name.
    :ivar input_filter: ``fn(messages) -> messages``, what the target sees of the conversation
        (default: all of it).
    """

    __slots__ = ("input_filter", "target", "target_name")

    def __init__(
        self,
        target: Any,
        *,
        name: str | None = None,
        description: str | None = None,
        input_filter: InputFilter | None = None,
    ) -> None:
        if not isinstance(target, str) and not callable(getattr(target, "run", None)):
            # Else accepted here and refused by the Agent given it, when it is made: only agents are found by a run.
            raise TypeError(f"a handoff's target is an Agent or the name of one, not {type(target).__name__}")
        target_name = target if isinstance(target, str) else getattr(target, "name", None)
        if not isinstance(target_name, str) or not target_name:
            raise ValueError(
                "a handoff's target agent needs a name (Agent(..., name='billing')): the run reports who "
                "answered by it, and a paused run finds its agent again by it"
            )
        if input_filter is not None:
            if not callable(input_filter):
                raise TypeError("input_filter must be callable: (messages) -> messages")
            if inspect.iscoroutinefunction(input_filter) or inspect.iscoroutinefunction(type(input_filter).__call__):
                # Called synchronously at the handoff: an async one gave a coroutine, no conversation.
                raise TypeError(
                    f"the input_filter of the handoff to {target_name!r} is called synchronously: pass a plain "
                    "function (messages) -> messages, not an async one"
                )
        super().__init__(
            _transfer,
            name=name if name is not None else tool_name_for("transfer_to_", target_name),
            description=description
            if description is not None
            else f"Hand the conversation over to the {target_name} agent, which takes it from here. "
            "Call it when the request is theirs to handle.",
        )
        self.target = target
        self.target_name = target_name
        self.input_filter = input_filter

    def __repr__(self) -> str:
        return f"<Handoff {self.name!r} -> {self.target_name!r}>"


def handoff(
    agent: Any, *, name: str | None = None, description: str | None = None, input_filter: InputFilter | None = None
) -> Handoff:
    """A tool that hands the conversation to ``agent``; put it in ``Agent(..., handoffs=[...])``.

    :param agent: the agent that takes over (it must have a ``name``), or the name of an agent the run
        reaches through other handoffs (to hand a conversation back: ``handoff("triage")``).
    :param name: the tool's name (default ``transfer_to_<agent name>``).
    :param description: what the model reads about when to call it.
    :param input_filter: ``fn(messages) -> messages``: what the target sees of the conversation so far
        (e.g. drop earlier tool calls); default: everything.
    :raises ValueError: the agent has no name, or the name is not a valid tool name.
    :raises TypeError: ``agent`` is neither an agent nor a name; ``input_filter`` is not callable, or is async
        (it is called synchronously, at the handoff).
    """
    return Handoff(agent, name=name, description=description, input_filter=input_filter)
