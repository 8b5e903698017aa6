"""A session's agent with something done around each call the session makes of it: one wrapper, one hook.

A session calls its agent twice over a turn's life: ``run`` for a turn, ``resume`` for a paused turn's
decisions (:class:`~agentactors.sessions.actor.SessionAgent`).  What the session itself does around those
calls — the journal's record of the turn, the session's budgets entered, the turn listed among the runtime's
live turns so that ``session.steer`` finds it — its actor does (:class:`~agentactors.sessions.actor.SessionActor`:
no layer per turn for it).  What other parts of the library do around them without the session knowing — a
served turn streams its events to the request that sent it (:mod:`agentactors.serve`) — is a
:class:`TurnAgent`: the agent, and an ``around`` hook given the :class:`TurnCall` — what the session asked,
and :meth:`TurnCall.proceed` to ask the wrapped agent — that returns the call's result.  The hook supplies only
what differs; the forwarding is here, once.

Wrappers nest, each hook seeing the call its outer one proceeded with, in order: the outermost acts first.  A
session's handle runs the agent it was given, a :class:`TurnAgent` or not, inside what its actor does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

from ..loop.result import RunResult
from .actor import SessionAgent

__all__ = ["Around", "TurnAgent", "TurnCall"]


@attrs.frozen(slots=True)
class TurnCall:
    """One call a session makes of an agent: a turn's ``run(prompt, **options)``, or — ``resuming`` — a
    paused turn's ``resume(state, decisions, **options)``.

    ``options`` are the session's keywords, as given (``runtime``, ``deps``, and for a run ``settings``,
    ``deadline``, ``priority``): a hook passes them on unread unless it must change how the call is made.
    """

    agent: SessionAgent
    args: tuple[Any, ...]
    options: Mapping[str, Any] = attrs.field(repr=False)
    resuming: bool = False

    @property
    def prompt(self) -> Any:
        """A run's input (the history plus the turn's messages); ``None`` for a resume."""
        return None if self.resuming else self.args[0]

    async def proceed(self) -> RunResult[Any]:
        """Make the call of the wrapped agent as the session asked it.

        Cancellation: as the wrapped agent's ``run`` or ``resume``: the run is cancelled and the cancellation
        propagates to the hook.
        """
        method = self.agent.resume if self.resuming else self.agent.run
        result: RunResult[Any] = await method(*self.args, **self.options)
        return result


#: What a :class:`TurnAgent` does with a call: usually something around ``await call.proceed()``.
Around = Callable[[TurnCall], Awaitable[RunResult[Any]]]


class TurnAgent:
    """``agent`` with ``around`` wrapped around its turns' runs — and, with ``resumes=True``, its resumes too
    (else a resume goes straight to ``agent``).  It is a :class:`~agentactors.sessions.actor.SessionAgent`:
    what a session runs, or what another :class:`TurnAgent` wraps."""

    __slots__ = ("agent", "around", "resumes")

    def __init__(self, agent: SessionAgent, around: Around, *, resumes: bool = False) -> None:
        self.agent = agent
        self.around = around
        self.resumes = resumes

    @property
    def name(self) -> str | None:
        return self.agent.name

    @property
    def handoffs(self) -> Any:
        """The wrapped agent's handoffs (``None``: it does not say): whether it may resume another agent's pause."""
        return getattr(self.agent, "handoffs", None)

    async def run(self, prompt: Any, **options: Any) -> RunResult[Any]:
        """The turn's run, through the hook.

        Cancellation: as the hook's: a hook that awaits :meth:`TurnCall.proceed` has the wrapped agent's run
        cancelled, and the cancellation propagates (the session commits nothing).
        """
        return await self.around(TurnCall(self.agent, (prompt,), options))

    async def resume(self, state: Any, decisions: Any, **options: Any) -> RunResult[Any]:
        """The paused run resumed, through the hook when ``resumes`` (else straight to the wrapped agent).

        Cancellation: as :meth:`run` (the pause, claimed before, is consumed).
        """
        if not self.resumes:
            result: RunResult[Any] = await self.agent.resume(state, decisions, **options)
            return result
        return await self.around(TurnCall(self.agent, (state, decisions), options, resuming=True))
