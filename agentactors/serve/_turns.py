"""A session's turn streamed for the request that sent it (a :class:`~agentactors.sessions.actor.SessionAgent`).

A session runs each turn through its agent's ``run`` and commits the result.  A served turn also needs the
run's events as they happen (AG-UI events, chat completion chunks) and its handle (a steer), so the apps
give the session this adapter: its ``run`` streams the agent (``agent.stream``) and hands the live run to
the request's ``follow`` before returning the result for the session to commit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..actors.runtime import Runtime
from ..agent.core import Agent
from ..agent.run import AgentRun
from ..loop.result import RunResult
from ..settings import ModelSettings

__all__ = ["StreamedTurn"]


class StreamedTurn:
    """``agent`` as one session turn sees it: the run streamed, ``follow(run)`` consuming its events."""

    __slots__ = ("agent", "follow")

    def __init__(self, agent: Agent[Any], follow: Callable[[AgentRun[Any]], Awaitable[None]]) -> None:
        self.agent = agent
        self.follow = follow

    @property
    def name(self) -> str | None:
        return self.agent.name

    async def run(
        self,
        prompt: Any,
        *,
        runtime: Runtime | None = None,
        deps: Any = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
    ) -> RunResult[Any]:
        async with self.agent.stream(
            prompt, runtime=runtime, deps=deps, settings=settings, deadline=deadline, priority=priority
        ) as run:
            await self.follow(run)
            return await run.wait()

    async def resume(
        self, state: Any, decisions: Any, *, runtime: Runtime | None = None, deps: Any = None
    ) -> RunResult[Any]:
        return await self.agent.resume(state, decisions, runtime=runtime, deps=deps)
