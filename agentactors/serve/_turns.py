"""A session's turn streamed for the request that sent it (a :class:`~agentactors.sessions.turns.TurnAgent`).

A session runs each turn through its agent's ``run`` and commits the result.  A served turn also needs the
run's events as they happen (AG-UI events, chat completion chunks) and its handle (a steer), so the apps
give the session the agent wrapped with this hook: the turn's run is streamed (``agent.stream``) and the live
run handed to the request's ``follow`` before its result goes back to the session to commit.  A resume is
streamed the same way (:func:`streamed_resume`: ``agent.resume_stream``), the session still the one that claims
the pause and commits the outcome; the arguments a person edited before approving a call (AG-UI's
``editedArgs``) go into the pause it resumes, so the call runs with them and the thread reads the call as it ran.
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

__all__ = ["streamed_resume", "streamed_turn", "with_edits"]

Follow = Callable[[AgentRun[Any]], Awaitable[None]]


def streamed_turn(agent: Agent[Any], follow: Follow) -> TurnAgent:
    """``agent`` as one session turn sees it: the run streamed, ``follow(run)`` consuming its events."""
    return TurnAgent(agent, partial(_stream, agent, follow))


async def _stream(agent: Agent[Any], follow: Follow, call: TurnCall) -> RunResult[Any]:
    async with agent.stream(call.prompt, **call.options) as run:
        await follow(run)
        return await run.wait()


def streamed_resume(
    agent: Agent[Any], follow: Follow, edits: Mapping[str, Mapping[str, Any]] | None = None
) -> TurnAgent:
    """``agent`` as a session's resume sees it: the resumed run streamed (``agent.resume_stream``), ``follow(run)``
    consuming its events, and its result going back to the session to commit — as :func:`streamed_turn` does for a
    turn's run.  ``edits``, by call id, replace those calls' arguments in the pause (:func:`with_edits`) first.

    The session still claims the pause (in its store) and checks the decisions before it calls this; the run then
    claims it in this process as it starts (``resume_stream``), as ``agent.resume`` would.  The edits go in as the
    session hands the agent its stored pause, so the pause kept in the store is the model's, and only the run that
    resumes it sees the person's.  They were checked against each tool's schema before (the executor checks them
    again, as every call's).  A turn's run (not a resume) through this agent is the agent's own, unstreamed.
    """
    return TurnAgent(agent, partial(_resume_streamed, agent, follow, dict(edits or {})), resumes=True)


async def _resume_streamed(
    agent: Agent[Any], follow: Follow, edits: Mapping[str, Mapping[str, Any]], call: TurnCall
) -> RunResult[Any]:
    if not call.resuming:
        return await call.proceed()
    state, decisions = call.args
    if edits and isinstance(state, PausedRun):
        state = with_edits(state, edits)
    async with agent.resume_stream(state, decisions, **call.options) as run:
        await follow(run)
        return await run.wait()


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
