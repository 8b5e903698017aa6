"""A session's turn streamed for the request that sent it (a :class:`~agentactors.sessions.turns.TurnAgent`).

A session runs each turn through its agent's ``run`` and commits the result.  A served turn also needs the
run's events as they happen (AG-UI events, chat completion chunks) and its handle (a steer), so the apps
give the session the agent wrapped with this hook: the turn's run is streamed (``agent.stream``) and the live
run handed to the request's ``follow`` before its result goes back to the session to commit.  A resume is
the agent's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from ..agent.core import Agent
from ..agent.run import AgentRun
from ..loop.result import RunResult
from ..sessions.turns import TurnAgent, TurnCall

__all__ = ["streamed_turn"]

Follow = Callable[[AgentRun[Any]], Awaitable[None]]


def streamed_turn(agent: Agent[Any], follow: Follow) -> TurnAgent:
    """``agent`` as one session turn sees it: the run streamed, ``follow(run)`` consuming its events."""
    return TurnAgent(agent, partial(_stream, agent, follow))


async def _stream(agent: Agent[Any], follow: Follow, call: TurnCall) -> RunResult[Any]:
    async with agent.stream(call.prompt, **call.options) as run:
        await follow(run)
        return await run.wait()
