"""``replay`` and ``fork``: a recorded run run again — without a vendor, or live from a chosen step.

``await replay(source, run_id)`` runs the recorded run again with every model response and every tool result
served from its recording (:class:`~agentactors.loop.tape.Tape`): no vendor call, no tool call, the same
result (content, messages, tool calls, steps) and the same events — a bug report becomes a file.
``await fork(source, run_id, at_step, agent=...)`` serves steps ``1 … at_step-1`` the same way and runs
the rest live with ``agent`` (and ``settings``): "what if" from the step where it went wrong, without paying
for the steps before it.  The recording is only read.

``source`` is a JSONL event record (a path: :class:`~agentactors.events.JsonlRecorder`'s file) or a journal
(anything with ``async load_run(run_id)``: :class:`~agentactors.journal.SqliteJournal`,
:class:`~agentactors.journal.PostgresJournal`).  A ``postgresql://`` URL given as ``source`` is refused with a
:class:`TypeError` saying to pass ``PostgresJournal(dsn)``: a journal is the caller's to open, configure (its
timeouts) and close, as a SQLite journal's path given as a record is refused saying to pass ``SqliteJournal(path)``
— read as a path, it failed as a missing file whose name quoted the password.

Both run in a runtime of their own, whose journal hands the tape to the run (and to no run it delegates to).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import anyio.to_thread
import attrs

from ..actors.runtime import ActorRef, Runtime
from ..agent.core import Agent
from ..agent.pauses import again
from ..events import Recorder
from ..gateway.provider import ProviderActor
from ..loop.result import RunResult
from ..loop.tape import Tape
from ..messages import LLMRequest, LLMResponse, Message, ToolCall
from ..providers.port import native_tools_for
from ..settings import ModelSettings
from ..tools.registry import ToolContext
from .jsonl import read_run
from .records import ForkAgentMissingError, RecordedRun, ReplayDivergedError, StepOutOfRangeError, checked_agents

__all__ = ["ReplayProvider", "RunSource", "fork", "load_run", "replay"]

#: A ``str`` source starting so is a PostgreSQL DSN, not a path (a path never holds ``//`` after its scheme-like head:
#: ``Path`` would fold it into one ``/`` and look for a file whose name quotes the password).
_DSN_SCHEMES = ("postgresql://", "postgres://")


class RunSource(Protocol):
    """A journal a recorded run can be read from."""

    async def load_run(self, run_id: str) -> RecordedRun:
        """The recorded run ``run_id``; :class:`~agentactors.journal.RunNotRecordedError` when there is none.

        Cancellation: a read, nothing changes; a journal's read is cancelled as its own ``load_run`` says (the
        SQL journals' query, once started, is not interrupted: the cancellation comes at the next checkpoint).
        """
        ...


async def load_run(source: str | os.PathLike[str] | RunSource, run_id: str) -> RecordedRun:
    """The recorded run ``run_id`` of ``source`` (a JSONL path, read in a worker thread, or a journal).

    :raises RunNotRecordedError: the source holds no such run.
    :raises TypeError: ``source`` is neither — a ``postgresql://`` / ``postgres://`` URL included (pass
        ``PostgresJournal(dsn)``; the message never quotes the DSN, which may hold a password).

    Cancellation: a read, nothing written.  A JSONL file's read in its worker thread is not interrupted: a
    cancelled caller waits for it to end and the cancellation is delivered at its next checkpoint.  A journal's
    read is cancelled as that journal's ``load_run``.
    """
    if isinstance(source, str) and source.startswith(_DSN_SCHEMES):
        raise TypeError(
            "a run's source given as a PostgreSQL URL is no JSONL path: pass the journal, "
            "PostgresJournal(dsn) (and close it: async with PostgresJournal(dsn) as journal)"
        )
    if isinstance(source, str | os.PathLike):
        return await anyio.to_thread.run_sync(read_run, Path(source), run_id)
    load = getattr(source, "load_run", None)
    if not callable(load):
        raise TypeError(f"a run's source is a JSONL path or a journal with load_run(), not {type(source).__name__}")
    run: RecordedRun = await load(run_id)
    return run


class ReplayProvider:
    """The provider of a replayed run: every answer comes from the recording, so a call here is a divergence.

    It answers nothing: asked, it counts the call (``asked``) and raises :class:`ReplayDivergedError`, which
    the run takes as a failed model call; :func:`replay` then raises it.
    """

    def __init__(self, *, native: bool = True, name: str = "replay", model: str | None = None) -> None:
        self.name = name
        self.default_model = model
        self.carries_tools = native
        self.asked = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Count the call and raise :class:`ReplayDivergedError`: a replayed run's answers are its recording's.

        Cancellation: not a cancellation point (it awaits nothing).
        """
        self.asked += 1
        raise ReplayDivergedError("the replayed run asked for a model call its recording does not hold")

    def stream(self, request: LLMRequest) -> Any:
        self.asked += 1
        raise ReplayDivergedError("the replayed run asked for a model call its recording does not hold")

    async def aclose(self) -> None:
        """Nothing to close.

        Cancellation: not a cancellation point (it awaits nothing).
        """
        return None


class _Replaying:
    """A runtime's journal that hands one tape to the first top-level run made in it, and keeps nothing."""

    __slots__ = ("tape",)

    def __init__(self, tape: Tape) -> None:
        self.tape: Tape | None = tape

    def open_run(
        self,
        run_id: str | None,
        agent: str | None,
        inputs: tuple[Message, ...],
        *,
        parent_run_id: str | None,
        resumed: bool,
    ) -> Tape | None:
        if parent_run_id is not None:
            return None
        tape, self.tape = self.tape, None
        if tape is not None and tape.ending is not None and tape.run_id is None:
            tape.run_id = run_id  # (its own id: where a recording cut short finds the run to end it so)
        return tape


async def replay(
    source: str | os.PathLike[str] | RunSource,
    run_id: str,
    *,
    agent: Agent[Any] | None = None,
    recorders: Iterable[Recorder] = (),
    runtime: Runtime | None = None,
    agents: Iterable[Agent[Any]] = (),
) -> RunResult[Any]:
    """Run the recorded run ``run_id`` of ``source`` again from its recording: no vendor call, no tool call.

    ``agent``: the agent to run it as (its prompt, tools' specs and settings shape the requests, which
    its recorders see); its provider is never called, its tools never run.  ``None``: the agent of the
    recorded name among ``agents`` and those bound to ``runtime`` (as ``rt.recover()`` finds it), else an
    agent made from the recording (its name — a resumed run's, the agent that paused —, its system prompt when
    the record has it, as many steps as were recorded, pausing where a recorded call waited for approval).
    ``recorders`` receive the replayed run's events (a tool call served from the recording says
    ``replayed=True``).  A resumed run is replayed as it went on: its pause, its decisions.  A run cut short from
    outside ends the same way at the same point: cancelled (``RunResult(cancelled=True)``) where the recording
    stops — inside the model call or the tool step it does not hold, or between steps — or interrupted after its
    last step (its ``RunInterruptedError``, with the recorded reason); no model is asked for what it does not hold.

    :raises RunNotRecordedError: ``source`` holds no such run.
    :raises TypeError: an argument of the wrong kind (``agent``, ``runtime``, ``agents``, ``run_id``), or a
        ``postgresql://`` URL as ``source`` (pass ``PostgresJournal(dsn)``: :func:`load_run`).
    :raises ReplayDivergedError: the run asked for a model call or a tool step its recording does not hold
        (``agent`` does not run as the recorded one did).

    Cancellation: the replay runs in a runtime of its own, which the cancellation closes (the run stops at its
    next checkpoint) before it propagates; nothing was called, and the recording is not changed.
    """
    agents = _checked(run_id, agent, runtime, agents)
    recorded = await load_run(source, run_id)
    if agent is None:
        agent = _named(recorded, runtime, agents)
    provider = ReplayProvider(native=_native(recorded, agent))
    agent = _agent_of(recorded, provider) if agent is None else attrs.evolve(agent, provider=provider)
    # Sealed: a model call past the recording is refused at the tape, whichever agent asks — the replayed one, or
    # one a handoff reached (its own provider, not the ReplayProvider given to the agent replayed, is its seat's).
    guard = _Refusal()
    tape = recorded.tape(label=("run.replayed", {"replayed_from": run_id}), guard=guard, sealed=True)
    async with _runtime(tape, recorders) as rt:
        result = await _start(agent, recorded, rt, None)
    if provider.asked or guard.refused:
        raise ReplayDivergedError(
            f"the replay of run {run_id!r} asked for more model calls than its {len(recorded.steps)} recorded steps"
        )
    return result


async def fork(
    source: str | os.PathLike[str] | RunSource,
    run_id: str,
    at_step: int,
    *,
    agent: Agent[Any] | None = None,
    settings: ModelSettings | None = None,
    recorders: Iterable[Recorder] = (),
    runtime: Runtime | None = None,
    agents: Iterable[Agent[Any]] = (),
) -> RunResult[Any]:
    """Run the recorded run ``run_id`` again: steps ``1 … at_step-1`` from the recording, the rest live.

    The reused steps keep their model responses and tool results (no vendor call, no tool call for them);
    from step ``at_step`` on, ``agent`` runs for real — its provider, its tools, ``settings`` over its own.
    ``agent=None``: the recorded agent, found by its name among ``agents`` and the agents bound to
    ``runtime`` (``agent.bind(rt)``), as ``rt.recover()`` finds it — "the same agent, other settings" is
    ``fork(journal, run_id, 3, runtime=rt, settings=ModelSettings(temperature=0))``.  The fork still runs in
    a runtime of its own.  The result's ``forked_from`` is ``run_id`` (and its events say ``run.forked``,
    with ``at_step``); the recording is not changed.

    :raises StepOutOfRangeError: ``at_step`` is not a step of the run: ``1 … steps`` — or, a run resumed after a
        pause, the numbers its events and ``explain()`` gave its steps (they go on from the paused run's step).
    :raises RunNotRecordedError: ``source`` holds no such run.
    :raises TypeError: an argument of the wrong kind (``agent``, ``runtime``, ``agents``, ``run_id``), or a
        ``postgresql://`` URL as ``source`` (pass ``PostgresJournal(dsn)``: :func:`load_run`).
    :raises ForkAgentMissingError: no ``agent``, and none of the recorded name among ``agents`` and
        ``runtime``'s (the live steps need a provider and tools, which a recording does not hold).

    Cancellation: the fork's runtime of its own is closed with its run before the cancellation propagates: a
    live step's model call is cancelled as its provider's ``complete`` (the request closed), a running tool is
    cancelled.  The recording is not changed, and the fork's steps are kept nowhere (its recorders saw its
    events so far).
    """
    agents = _checked(run_id, agent, runtime, agents)
    recorded = await load_run(source, run_id)
    if agent is None:
        agent = _named(recorded, runtime, agents)
        if agent is None:
            raise ForkAgentMissingError(
                f"fork() of run {run_id!r} needs the agent that runs the live steps (a recording holds no "
                f"provider and no tools): pass agent=..., or agents=[...] / runtime= holding an agent named "
                f"{recorded.agent!r} (agent.bind(rt))",
                agent=recorded.agent,
            )
    count, first = len(recorded.steps), recorded.first_step
    if isinstance(at_step, bool) or not isinstance(at_step, int) or not first <= at_step < first + count:
        raise StepOutOfRangeError(_out_of_range(recorded, at_step), at_step=at_step, steps=count, first=first)
    tape = recorded.tape(at_step, label=("run.forked", {"forked_from": run_id, "at_step": at_step}))
    async with _runtime(tape, recorders) as rt:
        live = agent if isinstance(agent.provider, ActorRef) else attrs.evolve(agent, provider=_own_provider(rt, agent))
        result = await _start(live, recorded, rt, settings)
    return attrs.evolve(result, forked_from=run_id)


def _out_of_range(recorded: RecordedRun, at_step: object) -> str:
    """What :class:`StepOutOfRangeError` says: the steps the run has, by the numbers its events gave them."""
    count, first = len(recorded.steps), recorded.first_step
    if not count:
        return f"run {recorded.run_id!r} recorded no step: there is no step to fork at (not {at_step!r})"
    valid = f"{first} … {first + count - 1}"
    why = ""
    if first != 1:
        why = f", numbered {valid} as its events and explain() number them (it was resumed after step {first - 1})"
    return f"run {recorded.run_id!r} recorded {count} step(s){why}: at_step must be {valid}, not {at_step!r}"


def _checked(
    run_id: object, agent: object, runtime: object, agents: Iterable[Agent[Any]]
) -> tuple[Agent[Any], ...]:
    """``agents`` as a tuple, once each argument is of its kind, before the source is read.

    :raises TypeError: one is not (a name given for an agent...): it was an ``AttributeError`` from deep inside,
        or, for ``agents``, nothing — an agent of the name was simply not found among them.
    """
    if not isinstance(run_id, str):
        raise TypeError(f"run_id is a run's id (a str), not a {type(run_id).__name__}")
    if agent is not None and not isinstance(agent, Agent):
        raise TypeError(f"agent is an Agent or None, not a {type(agent).__name__}")
    if runtime is not None and not isinstance(runtime, Runtime):
        raise TypeError(f"runtime is a Runtime or None, not a {type(runtime).__name__}")
    out = checked_agents(agents)
    for each in out:
        if not isinstance(each, Agent):  # run here as an Agent (attrs.evolve): a look-alike is not one
            raise TypeError(f"agents holds a {type(each).__name__}, not an Agent")
    return out


def _named(recorded: RecordedRun, runtime: Runtime | None, agents: Iterable[Agent[Any]]) -> Agent[Any] | None:
    """The agent of the recorded run's name among ``agents``, then those bound to ``runtime``; ``None``: none.

    An unnamed agent's run is found by an unnamed agent among ``agents`` only — given for this run, it is the
    caller's choice — never among those bound to ``runtime``: any number of unnamed agents may be bound there (held
    weakly, in no order), and taking one of them would replay the run with an unrelated prompt and tools, or
    fork it with a guess.
    """
    if recorded.agent is None:
        return next((a for a in agents if getattr(a, "name", None) is None), None)
    candidates = [*agents, *(runtime.bound if runtime is not None else ())]
    return next((a for a in candidates if getattr(a, "name", None) == recorded.agent), None)


async def _start(
    agent: Agent[Any], recorded: RecordedRun, rt: Runtime, settings: ModelSettings | None
) -> RunResult[Any]:
    """The recorded run started again as it started: from its input, or — a resumed run — from its pause."""
    if recorded.resume is not None:
        with again():  # the resume it repeats went on already: this one consumes no pause
            return await agent.resume(*recorded.resume, runtime=rt, settings=settings)
    return await agent.run(recorded.inputs, runtime=rt, settings=settings)


@asynccontextmanager
async def _runtime(tape: Tape, recorders: Iterable[Recorder]) -> AsyncIterator[Runtime]:
    async with Runtime(recorders, journal=_Replaying(tape)) as rt:
        yield rt


def _own_provider(rt: Runtime, agent: Agent[Any]) -> ActorRef:
    """A ProviderActor for the agent's provider in the fork's runtime that does not close the caller's provider."""
    actor = ProviderActor(agent.provider)
    return rt.spawn(actor, name="provider", concurrency=actor.spawn_concurrency)


class _Refusal:
    """A replay's tape guard: the run asked for a model call or a tool step its recording does not hold.

    It raises :class:`ReplayDivergedError` and remembers it was called: a refused tool step raises out of the run,
    but a refused model call is the step's failed call — the run ends failed on it — and :func:`replay` raises it.
    """

    __slots__ = ("refused",)

    def __init__(self) -> None:
        self.refused = False

    def __call__(self) -> None:
        self.refused = True
        raise ReplayDivergedError("the replayed run asked for a model call or a tool step its recording does not hold")


def _native(recorded: RecordedRun, agent: Agent[Any] | None) -> bool:
    if agent is not None and not isinstance(agent.provider, ActorRef):
        return native_tools_for(agent.provider)
    return recorded.native if recorded.native is not None else True


def _agent_of(recorded: RecordedRun, provider: ReplayProvider) -> Agent[Any]:
    """An agent that runs as the recorded one did, as far as the recording says: its name, prompt and length —
    and, when a recorded call waited for approval, a run that may pause there (an agent with no tool requiring
    approval never looks for a waiting call: it would feed the placeholder to the model and go on)."""
    waited = any(r.awaiting_approval for s in recorded.steps for r in s.results or ())
    # A resumed run goes on as the agent that paused (after a handoff: not the one resume() was called on, whose
    # handoffs the recording does not hold); the rebuilt agent takes its name, as resume() requires.
    paused_by = recorded.resume[0].agent if recorded.resume is not None else None
    return Agent(
        provider,
        name=paused_by or recorded.agent,
        system=recorded.system,
        # A resumed run counts the paused one's; one cut short (cancelled, interrupted) or steered after its last step
        # went on past it.
        max_steps=max(
            1, recorded.first_step + len(recorded.steps) - (0 if recorded.cut_short or recorded.steers_after else 1)
        ),
        tool_policy=_allows_all if waited else None,
    )


def _allows_all(call: ToolCall, ctx: ToolContext) -> None:
    """The rebuilt agent's tool policy: allows every call (none runs in a replay); its being set lets the run pause
    where the recorded one did, on the recorded results that say a call waits."""
    return None
