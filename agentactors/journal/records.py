"""A recorded run, as a journal or a JSONL record gives it back: its input and its steps, in order.

Replay, fork and recovery all start from one :class:`RecordedRun`, whatever held it, and turn a prefix of
its steps into a :class:`~agentactors.loop.tape.Tape` (:meth:`RecordedRun.tape`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

import attrs

from ..errors import AgentActorsError
from ..loop.pause import PausedRun
from ..loop.tape import Ending, StepWriter, Tape
from ..messages import LLMResponse, Message
from ..sessions.journaled import SessionTurn
from ..tools.results import ToolResult

__all__ = [
    "ForkAgentMissingError",
    "JournalError",
    "RecordedRun",
    "RecordedStep",
    "RecoveryError",
    "ReplayDivergedError",
    "RunNotRecordedError",
    "StepOutOfRangeError",
]


class JournalError(AgentActorsError):
    """A durable run, a replay or a fork could not be done from what was recorded."""


class ReplayDivergedError(JournalError):
    """A replayed run asked for a model call its recording does not hold: the agent given to ``replay`` does
    not run as the recorded one did (another ``max_steps``, nudges, output type...)."""


class RecoveryError(JournalError):
    """``rt.recover()`` could not finish some of the runs it found; it finished all the others first.

    What goes wrong with one run stays with it: a damaged row (a :class:`~agentactors.journal.JournalFormatError`
    naming the run, which is left as it is), a run that raised while it was recovered (its end is journaled
    ``raised``), a database error while it was claimed.  The runs recovering beside it are never cancelled for it
    (a cancelled run is *ended*, and would never be recovered again).  ``errors`` maps each such run's id to its
    exception; ``results`` are the recovered runs' results, as ``recover()`` would have returned them.
    """

    def __init__(self, results: list[Any], errors: Mapping[str, BaseException]) -> None:
        named = "; ".join(f"run {run_id!r}: {type(exc).__name__}: {exc}" for run_id, exc in errors.items())
        super().__init__(
            f"{len(errors)} run(s) could not be recovered ({named}); the other {len(results)} were "
            "(their results: .results)"
        )
        self.results = results
        self.errors = dict(errors)

    def __reduce__(self) -> Any:
        # Exception's own pickling would call __init__ with the message alone (Ray and multiprocessing ship
        # errors); the notes come back with the __dict__.
        return (type(self), (self.results, self.errors), dict(self.__dict__))


class RunNotRecordedError(JournalError, LookupError):
    """The source holds no run of that id (or not enough of it to run it again: no ``run.started``)."""


class StepOutOfRangeError(JournalError, ValueError):
    """``fork(..., at_step)`` names a step the recorded run does not have.

    Steps go by the numbers the run's events and ``explain()`` gave them: ``1 … steps`` for a run that started
    from its input, ``first … first + steps - 1`` for one resumed after a pause (it goes on from the paused run's
    step).  ``steps`` is how many steps the run recorded, ``first`` the number of its first one, ``at_step`` the
    step asked for.
    """

    def __init__(self, message: str, *, at_step: int, steps: int, first: int = 1) -> None:
        super().__init__(message)
        self.at_step = at_step
        self.steps = steps
        self.first = first

    def __reduce__(self) -> Any:
        # Exception's own pickling would call __init__ with the message alone, without its keywords; the notes
        # come back with the __dict__.
        rebuild = partial(type(self), at_step=self.at_step, steps=self.steps, first=self.first)
        return (rebuild, self.args, dict(self.__dict__))


class ForkAgentMissingError(JournalError, TypeError):
    """``fork(..., agent=None)`` found no agent to run the live steps: none of the recorded name among the
    ``agents`` given and those bound to the ``runtime`` given.  ``agent`` is the recorded agent's name."""

    def __init__(self, message: str, *, agent: str | None) -> None:
        super().__init__(message)
        self.agent = agent

    def __reduce__(self) -> Any:
        # Exception's own pickling would call __init__ without its keyword; the notes come back with the __dict__.
        return (partial(type(self), agent=self.agent), self.args, dict(self.__dict__))


def checked_agents(agents: Iterable[Any]) -> tuple[Any, ...]:
    """``agents`` (``replay``'s, ``fork``'s, ``rt.recover()``'s) as a tuple: each with a ``name`` that is a str or
    ``None`` (an unnamed agent: it is found for an unnamed agent's run), as an :class:`~agentactors.Agent` has;
    ``recover`` takes any object that runs as one.

    :raises TypeError: ``agents`` is a string, or holds something without a ``name`` (or one that is neither a str
        nor ``None``).  Agents are found among them by name, so a string was read as one-letter "agents" and anything
        else was passed over: the run went on with an agent made from the recording, or was left unrecovered, and
        nothing said why.
    """
    if isinstance(agents, str | bytes):
        raise TypeError(f"agents is an iterable of Agents, not a {type(agents).__name__}: agents=[agent]")
    out = tuple(agents)
    missing = object()
    for agent in out:
        name = getattr(agent, "name", missing)
        if name is not None and not isinstance(name, str):
            raise TypeError(
                f"agents holds {_a(type(agent).__name__)}, not an Agent (it has no name to be found by: an Agent's "
                "name is a str, or None)"
            )
    return out


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


@attrs.frozen(slots=True)
class RecordedStep:
    """One step of a recorded run: its model ``response`` and, for a tool step, its tool ``results``.

    ``results`` is ``None`` for a step that asked for no tool — or whose tools were started but never
    committed (a crash in the middle of them): a recovered run runs those calls again.  ``steers``: the steers
    the run took at the boundary before this step's model call (``run.steer``), in order.
    """

    number: int
    response: LLMResponse
    results: tuple[ToolResult, ...] | None = None
    steers: tuple[Message, ...] = ()


@attrs.frozen(slots=True)
class RecordedRun:
    """A run as it was recorded: enough to run it again.

    Its ``steps`` are numbered as the run's events numbered them (:attr:`first_step` on): a resumed run's go on
    from its paused run's step — the numbers ``fork``'s ``at_step`` takes.

    ``status`` is ``"running"`` (nothing said it ended: a crash, or a run still going), ``"finished"``,
    ``"paused"``, ``"raised"`` or ``"cancelled"``.  ``native`` says whether its provider carried tools
    natively (``None``: not recorded); ``system`` is the system prompt its requests carried, when known.

    Where it came from (a journal records it; a JSONL record does not): a delegated run's
    ``parent_run_id`` and ``parent_call_id`` (the parent's tool call that ran it, when the delegating tool
    said so), and its ``children`` left unfinished — recovered inside the parent's recovered tool step,
    never on their own; a resumed run's ``resume`` (the pause and the decisions it went on with) and
    ``resumed_results`` (the paused step's results, once committed); a session's turn's ``session`` (which
    session, from which version: what ``rt.recover(sessions=store)`` commits the recovered turn with).

    ``ending``: how the run ended past its last step when it was cut short from outside — cancelled (``status``
    ``"cancelled"``) or interrupted (``status`` ``"finished"``, its error a ``RunInterruptedError``) — else
    ``None`` (:class:`~agentactors.loop.tape.Ending`).  A replay of the whole run, or a child served whole to its
    recovered parent, ends the same way at the same point; a fork from an earlier step runs live past it.

    ``steers_after``: the steers the run took after its last recorded step, before a model call that never answered
    (it failed, or the run was cut short in it) — the run went on past that step for them.  A replay takes them
    there too, goes on, and asks for that call (its recording does not hold it: ``ReplayDivergedError``, or, cut
    short, it ends so), instead of ending ``ok`` on the answer before them.
    """

    run_id: str
    agent: str | None
    inputs: tuple[Message, ...]
    steps: tuple[RecordedStep, ...] = ()
    status: str = "running"
    native: bool | None = None
    system: str | None = None
    content: str | None = None
    parent_run_id: str | None = None
    parent_call_id: str | None = None
    resume: tuple[PausedRun, Mapping[str, bool | str]] | None = None
    resumed_results: tuple[ToolResult, ...] | None = None
    children: tuple[RecordedRun, ...] = ()
    session: SessionTurn | None = None
    ending: Ending | None = attrs.field(default=None, kw_only=True)
    steers_after: tuple[Message, ...] = attrs.field(default=(), kw_only=True)

    @property
    def first_step(self) -> int:
        """The number of the run's first step, as its events and ``explain()`` gave it: 1, or — a resumed run —
        the step after the paused run's (a resumed run goes on counting from there)."""
        if self.steps:
            return self.steps[0].number
        return self.resume[0].step + 1 if self.resume is not None else 1

    @property
    def cut_short(self) -> Ending | None:
        """How the run was cut short from outside (:attr:`ending`), also for a record that says only ``"cancelled"``
        (a JSONL record's, a journal's row written before endings were kept): cancelled where its recording stops."""
        if self.ending is None and self.status == "cancelled":
            return Ending("cancelled")
        return self.ending

    @property
    def finished(self) -> bool:
        """Whether the run ended (whatever the way): a run still ``"running"`` in a journal is one a crash left."""
        return self.status != "running"

    def tape(
        self,
        upto: int | None = None,
        *,
        writer: StepWriter | None = None,
        label: tuple[str, Mapping[str, Any]] | None = None,
        guard: Callable[[], None] | None = None,
        sealed: bool = False,
    ) -> Tape:
        """A tape serving this run's steps before ``upto`` (a step's number; ``None``: every step); the other
        arguments are :class:`~agentactors.loop.tape.Tape`'s.

        The steers recorded with those steps go too, and those of step ``upto``: they joined the conversation
        before its model call, so a fork from it reads them as the recorded step did.  Every step served
        (``upto=None``), the run ends as the recorded one did when it was cut short (:attr:`ending`); a run
        recorded ``"cancelled"`` without one (a JSONL record's) is cancelled where its recording stops; and the steers
        it took after its last step (:attr:`steers_after`) are handed back there, so it goes on past it as it did.
        """
        steps = self.steps if upto is None else tuple(s for s in self.steps if s.number < upto)
        results = {r.call_id: r for s in steps for r in s.results or ()}
        if self.resumed_results is not None:  # the paused step a resumed run finished first
            results.update((r.call_id, r) for r in self.resumed_results)
        upto_steers = len(steps) + 1 if upto is not None else len(steps)
        steers = {i: s.steers for i, s in enumerate(self.steps[:upto_steers], 1) if s.steers} or None
        if upto is None and self.steers_after:  # (rare) taken before a model call that never answered
            steers = {**(steers or {}), len(steps) + 1: self.steers_after}
        ending = self.cut_short if upto is None else None
        return Tape(
            [s.response for s in steps], results, writer, label=label, guard=guard, steers=steers, ending=ending,
            sealed=sealed,
        )
