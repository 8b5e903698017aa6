"""A session's turn streamed for the request that sent it (a :class:`~agentactors.sessions.turns.TurnAgent`).

A session runs each turn through its agent's ``run`` and commits the result.  A served turn also needs the
run's events as they happen (AG-UI events, chat completion chunks) and its handle (a steer), so the apps
give the session the agent wrapped with this hook: the turn's run is streamed (``agent.stream``) and the live
run handed to the request's ``follow`` before its result goes back to the session to commit.  A resume is
the agent's own — but for the arguments a person edited before approving a call (AG-UI's ``editedArgs``):
:func:`edited_resume` puts them in the pause the session resumes, so the call runs with them and the thread
reads the call as it ran.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

import attrs

from ..agent.core import Agent
from ..agent.run import AgentRun
from ..loop.pause import PausedRun
from ..loop.result import RunResult
from ..messages import Message, ToolCall
from ..sessions.turns import TurnAgent, TurnCall

__all__ = ["edited_resume", "streamed_turn", "with_edits"]

Follow = Callable[[AgentRun[Any]], Awaitable[None]]


def streamed_turn(agent: Agent[Any], follow: Follow) -> TurnAgent:
    """``agent`` as one session turn sees it: the run streamed, ``follow(run)`` consuming its events."""
    return TurnAgent(agent, partial(_stream, agent, follow))


async def _stream(agent: Agent[Any], follow: Follow, call: TurnCall) -> RunResult[Any]:
    async with agent.stream(call.prompt, **call.options) as run:
        await follow(run)
        return await run.wait()


def edited_resume(agent: Agent[Any], edits: Mapping[str, Mapping[str, Any]]) -> TurnAgent:
    """``agent`` as a session's resume sees it when a person approved calls with other arguments: ``edits``, by call
    id, replace those calls' arguments in the pause (:func:`with_edits`) before the agent resumes it.

    The edits go in as the session hands the agent its stored pause — after the session checked the decisions
    against it and claimed it — so the pause kept in the store is the model's, and only the run that resumes it
    sees the person's.  They were checked against each tool's schema before (the executor checks them again, as
    every call's).
    """
    return TurnAgent(agent, partial(_edited, edits), resumes=True)


async def _edited(edits: Mapping[str, Mapping[str, Any]], call: TurnCall) -> RunResult[Any]:
    if call.resuming and edits:
        state, decisions = call.args
        if isinstance(state, PausedRun):
            call = attrs.evolve(call, args=(with_edits(state, edits), decisions))
    return await call.proceed()


def with_edits(state: PausedRun, edits: Mapping[str, Mapping[str, Any]]) -> PausedRun:
    """``state`` with the calls named in ``edits`` made with those arguments instead: wherever the pause holds the
    call — the assistant message that made it (the conversation the run goes on from, so the model reads the call
    as it ran), the step's calls, the pending ones and the run's list of calls."""

    def edited(call: ToolCall) -> ToolCall:
        given = edits.get(call.id)
        if given is None:
            return call
        return attrs.evolve(
            call, arguments=dict(given), raw_arguments=None, arguments_error=None, arguments_error_detail=None
        )

    def in_message(message: Message) -> Message:
        if not any(c.id in edits for c in message.tool_calls):
            return message
        return attrs.evolve(message, tool_calls=tuple(edited(c) for c in message.tool_calls))

    return attrs.evolve(
        state,
        messages=tuple(in_message(m) for m in state.messages),
        calls=tuple(edited(c) for c in state.calls),
        pending=tuple(edited(c) for c in state.pending),
        tool_calls=tuple(edited(c) for c in state.tool_calls),
    )
