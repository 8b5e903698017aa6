"""A session's turn streamed for the request that sent it (a :class:`~agentactors.sessions.turns.TurnAgent`).

A session runs each turn through its agent's ``run`` and commits the result.  A served turn also needs the
run's events as they happen (AG-UI events, chat completion chunks) and its handle (a steer), so the apps
give the session the agent wrapped with this hook: the turn's run is streamed (``agent.stream``) and the live
run handed to the request's ``follow`` before its result goes back to the session to commit.  A resume is
streamed the same way (:func:`streamed_resume`: ``agent.resume_stream``), the session still the one that claims
the pause and commits the outcome; the arguments a person edited before approving a call (AG-UI's
``editedArgs``) go into the pause it resumes, so the call runs with them and the thread reads the call as it ran.

A served run may also have instructions of its own — what the application shares with the agent for that run
(AG-UI's ``context``) — which reach its model and nothing else: :func:`with_instructions` puts them in the run's
leading system message (after the agent's prompt and the client's system text, which the loop merges into one),
and :func:`without_instructions` takes them out of what the run returns, so a session never commits them to the
thread's history or its stored pause (they are not the user's words, and the next run has its own).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any

import attrs

from ..agent.core import Agent
from ..agent.run import AgentRun
from ..loop.pause import PausedRun
from ..loop.result import RunResult
from ..messages import Message, ToolCall
from ..sessions.turns import TurnAgent, TurnCall

__all__ = ["Instructed", "streamed_resume", "streamed_turn", "with_edits", "with_instructions", "without_instructions"]

Follow = Callable[[AgentRun[Any]], Awaitable[None]]


def streamed_turn(agent: Agent[Any], follow: Follow, instructions: str = "") -> TurnAgent:
    """``agent`` as one session turn sees it: the run streamed, ``follow(run)`` consuming its events.
    ``instructions``: the run's own (:func:`with_instructions`), never committed to the thread."""
    return TurnAgent(agent, partial(_stream, agent, follow, instructions))


async def _stream(agent: Agent[Any], follow: Follow, instructions: str, call: TurnCall) -> RunResult[Any]:
    if not instructions:
        async with agent.stream(call.prompt, **call.options) as run:
            await follow(run)
            return await run.wait()
    given = with_instructions(call.prompt, instructions)  # a session's turn input: its history and new messages
    async with agent.stream(given.messages, **call.options) as run:
        await follow(run)
        return without_instructions(await run.wait(), given)


def streamed_resume(
    agent: Agent[Any], follow: Follow, edits: Mapping[str, Mapping[str, Any]] | None = None, instructions: str = ""
) -> TurnAgent:
    """``agent`` as a session's resume sees it: the resumed run streamed (``agent.resume_stream``), ``follow(run)``
    consuming its events, and its result going back to the session to commit — as :func:`streamed_turn` does for a
    turn's run.  ``edits``, by call id, replace those calls' arguments in the pause (:func:`with_edits`) first;
    ``instructions`` are the resumed run's own (those of the request that resumes it), never committed.

    The session still claims the pause (in its store) and checks the decisions before it calls this; the run then
    claims it in this process as it starts (``resume_stream``), as ``agent.resume`` would.  The edits go in as the
    session hands the agent its stored pause, so the pause kept in the store is the model's, and only the run that
    resumes it sees the person's.  They were checked against each tool's schema before (the executor checks them
    again, as every call's).  A turn's run (not a resume) through this agent is the agent's own, unstreamed.
    """
    return TurnAgent(agent, partial(_resume_streamed, agent, follow, dict(edits or {}), instructions), resumes=True)


async def _resume_streamed(
    agent: Agent[Any], follow: Follow, edits: Mapping[str, Mapping[str, Any]], instructions: str, call: TurnCall
) -> RunResult[Any]:
    if not call.resuming:
        return await call.proceed()
    state, decisions = call.args
    if edits and isinstance(state, PausedRun):
        state = with_edits(state, edits)
    given = None
    if instructions and isinstance(state, PausedRun):  # the pause as stored holds none: the resumed run has its own
        given = with_instructions(state.messages, instructions)
        state = attrs.evolve(state, messages=given.messages)
    async with agent.resume_stream(state, decisions, **call.options) as run:
        await follow(run)
        result = await run.wait()
    return without_instructions(result, given) if given is not None else result


@attrs.frozen(slots=True)
class Instructed:
    """A run's conversation with its own instructions in (:func:`with_instructions`): ``messages``, what the run is
    given; ``put``, their leading system message; ``replaced``, the conversation's own leading message ``put``
    stands for (``None``: ``put`` was put before the conversation)."""

    messages: tuple[Message, ...]
    put: Message
    replaced: Message | None = None


def with_instructions(messages: Sequence[Message], instructions: str) -> Instructed:
    """``messages`` (a conversation) with ``instructions`` for its run: appended to its leading system message, or a
    system message of their own put first — where the loop reads the caller's system text, merging it into the
    agent's prompt (``LoopConfig.system_message``) as one system message (several vendors take only one), apart from
    every user message."""
    if messages and messages[0].role == "system":
        head = messages[0]
        put = Message.system(f"{head.content}\n\n{instructions}" if head.content else instructions)
        return Instructed((put, *messages[1:]), put, head)
    put = Message.system(instructions)
    return Instructed((put, *messages), put)


def without_instructions(result: RunResult[Any], given: Instructed) -> RunResult[Any]:
    """``result`` of a run given ``given.messages``, as if it had been given the conversation without the run's
    instructions: its conversation's leading message — and a paused run's, which a session stores — put back as it
    was (or taken out), so what a session commits is the thread's own."""

    def restored(messages: tuple[Message, ...]) -> tuple[Message, ...]:
        if not messages or not (messages[0] is given.put or messages[0] == given.put):
            return messages
        return ((given.replaced,) if given.replaced is not None else ()) + messages[1:]

    state = result.resume_state
    if state is not None:
        state = attrs.evolve(state, messages=restored(state.messages))
    return attrs.evolve(result, messages=restored(result.messages), resume_state=state)


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
