"""The session actor: one conversation's turns, one at a time, each committed whole or not at all.

A session's state — its history, its version in the store, its pending pause — lives in one actor
spawned with ``concurrency=1``, so turns never interleave and the state needs no lock.  The actor is
*virtual* (:mod:`agentactors.sessions.registry` activates and deactivates it); this module is what it
does with a message.

**The commit rule.**  A turn runs the agent on ``history + prompt`` and ends in one of three ways:

* **committed** — the run ended on an answer (``result.ok``), or stopped at ``max_steps`` /
  ``max_empty_steps`` without an error (``bounded`` and ``error is None``): ``result.messages``
  becomes the history, in one store commit, and ``session.committed`` is emitted;
* **paused** — the run stopped at tool calls awaiting approval (``result.paused``): the history stays
  as it was and the pause (``result.resume_state``) is committed with it, so it survives the
  process; the session takes no new turn until :meth:`SessionActor.resolve` decides it;
* **not committed** — the run raised, was cancelled (its caller's cancellation, or
  ``result.cancelled``), failed (``result.generation_failed``) or ended with ``result.error`` set (a
  provider failure after some text, ``RunDeadlineExceeded``, ``OutputValidationError``): the store is
  not touched and the history is *exactly* what it was.  The result (or the exception) still goes
  to the caller.

**Atomic under cancellation.**  The commit is the turn's one point of no return: it runs shielded, and
the actor's copy of the state changes only once the store said yes.  A cancellation that arrives
before the commit starts cancels the turn (nothing committed); one that arrives during it waits for it
(the turn is committed, and the caller gets either its result or the cancellation — which one depends on
where the turn ran, so a caller that must know reads the history or the store).

**Conflicts.**  A commit names the version the turn started from, and the origin of the session it
loaded (:attr:`~agentactors.sessions.store.SessionRecord.origin`); if another runtime or process
committed meanwhile — or deleted the key and created it again, which can bring the version back to the
very one this actor holds — the store refuses it with :class:`~agentactors.errors.SessionConflictError`,
which reaches the caller — the turn is not committed, nothing is overwritten — and the actor marks
itself stale: its next turn reloads the session from the store first.

**Resolving a pause** first *claims* it: a commit that clears the pause (history unchanged, version
bumped) before any tool runs.  Of two resolves of one pause — in this runtime (the second queues behind
the first and finds no pause) or in another process (its claim meets a newer version) — exactly one
claims it; the other raises ``SessionConflictError`` and runs nothing.  Then the agent resumes the paused
run, and its outcome is committed like a turn's (its messages become the history, or it pauses again).
If the resumed run fails or is cancelled, the pause stays consumed: the history is what it was before the
paused turn, and the decided calls are not offered again (a tool that ran may have had effects; running
it twice would be worse than asking the person again with a new turn).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager
from typing import Any, Final, Protocol

import anyio
import attrs

from ..actors.runtime import Runtime
from ..errors import SessionConflictError, SessionPausedError
from ..gateway.cost_budget import CostBudget
from ..loop.pause import PausedRun, check_decisions
from ..loop.result import RunResult
from ..messages import Message, ToolCall
from ..settings import ModelSettings
from .journaled import SessionTurn, turn_running
from .memory import MemoryStore
from .spending import spending_under
from .store import SessionRecord, SessionStore, awaited

__all__ = [
    "Refresh",
    "Resolve",
    "Resuming",
    "SessionActor",
    "SessionAgent",
    "Turn",
    "commit_recovered",
    "committable",
    "turn_record",
]

log = logging.getLogger("agentactors.sessions")


class SessionAgent(Protocol):
    """What a session needs of an agent (:class:`agentactors.Agent` is one): its name, ``run`` and ``resume``."""

    @property
    def name(self) -> str | None: ...

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
        """Run a turn: ``prompt`` is the session's history plus the turn's messages.

        Cancellation: as :meth:`agentactors.Agent.run`: the run is cancelled and the cancellation propagates;
        the session commits nothing for it.
        """
        ...

    async def resume(
        self, state: Any, decisions: Any, *, runtime: Runtime | None = None, deps: Any = None
    ) -> RunResult[Any]:
        """Resume the paused run ``state`` with ``decisions``.

        Cancellation: as :meth:`agentactors.Agent.resume`: the run is cancelled and the cancellation
        propagates; the session commits nothing for it (its pause, claimed before, is consumed).
        """
        ...


@attrs.frozen(slots=True)
class Turn:
    """Run one turn: ``agent`` on the history plus ``messages``.  ``deps`` reach tools and are never stored.

    ``budgets``: what the turn's runs spend under, outermost first — the session's, and a turn's own
    (:func:`~agentactors.sessions.spending.turn_budgets`).
    """

    agent: SessionAgent
    messages: tuple[Message, ...]
    deps: Any = attrs.field(default=None, repr=False)
    settings: ModelSettings | None = None
    deadline: float | None = None
    priority: int | None = None
    budgets: tuple[CostBudget, ...] = ()


@attrs.frozen(slots=True)
class Resolve:
    """Decide the pending pause with ``decisions`` (``{call_id: True | "reason"}``) and resume the run
    (under ``budgets``, as a :class:`Turn`'s)."""

    agent: SessionAgent
    decisions: Any
    deps: Any = attrs.field(default=None, repr=False)
    budgets: tuple[CostBudget, ...] = ()


@attrs.frozen(slots=True)
class Resuming:
    """What a resolved turn is listed by among the runtime's live turns (:class:`SessionActor`): the pause it goes
    on from (its run's id), which its run keeps as ``LoopState.resumed_from``."""

    run_id: str


#: ``MemoryStore``'s own commit, which never suspends: a commit through it needs no shield
#: (:meth:`SessionActor._commit`).
_MEMORY_COMMIT: Final = MemoryStore.commit


@attrs.frozen(slots=True)
class Refresh:
    """Read the session's committed state from the store again, running nothing (``session.refresh()``)."""


def committable(result: RunResult[Any]) -> bool:
    """Whether a turn's result is committed (as history or as a pause): see the module docstring."""
    return not (result.cancelled or result.generation_failed or result.error is not None)


class SessionActor:
    """One session's state and turns (spawned by the registry with ``concurrency=1``; see the module docstring).

    ``history``, ``version``, ``paused`` and ``origin`` are the committed state as this actor last knew it;
    ``loaded`` is false until the first message loads it from the store, and again after a conflict
    (the next message reloads it).  ``live``: the runtime's live turns, ``{slot: what the running turn is listed
    by}`` — while a turn's run (or a resolved turn's resume) runs, the actor lists it at its session's ``slot``, so
    that ``session.steer`` finds the run (:mod:`agentactors.sessions.session`): a turn by its run's input tuple,
    which the run keeps as ``LoopState.inputs``; a resolved turn by :class:`Resuming`.  ``running``: how many
    messages it is handling now — one at most, which may go on after its caller left (a queued turn runs in the
    actor's task, and its commit is shielded), so the registry does not deactivate the session until it is over;
    ``settled``, set by the registry meanwhile, is called (once, then cleared) when it is — the session goes idle
    then, and nothing polls it until then.
    """

    __slots__ = (
        "activated", "children", "history", "key", "live", "loaded", "origin", "paused", "rt", "running", "settled",
        "slot", "store", "version",
    )

    def __init__(
        self, rt: Runtime, store: SessionStore, key: str, *, live: dict[Any, Any], slot: tuple[Hashable, str]
    ) -> None:
        self.rt = rt
        self.store = store
        self.key = key
        self.live = live
        self.slot = slot
        self.history: tuple[Message, ...] = ()
        self.version: int | None = None
        self.paused: PausedRun | None = None
        # The pause's delegated runs (SessionRecord.children): the result that resolves it keeps them.
        self.children: tuple[RunResult[Any], ...] = ()
        self.origin: str | None = None
        self.loaded = False
        self.activated = False
        self.running = 0
        self.settled: Callable[[], None] | None = None

    @property
    def pending(self) -> tuple[ToolCall, ...]:
        return () if self.paused is None else self.paused.pending

    async def receive(self, message: Turn | Resolve | Refresh) -> RunResult[Any] | None:
        """Handle a :class:`Turn` or :class:`Resolve` (loading the session first if need be), or a :class:`Refresh`.

        Cancellation: as :meth:`turn` and :meth:`resolve`.  A load (a :class:`Refresh`, or the first message's)
        cancelled changes nothing: the state read is adopted only once the store answered.
        """
        self.running += 1
        try:
            return await self._handle(message)
        finally:
            self.running -= 1
            if self.settled is not None and not self.running:  # (one attribute test a message, usually)
                settled, self.settled = self.settled, None
                settled()

    async def _handle(self, message: Turn | Resolve | Refresh) -> RunResult[Any] | None:
        if type(message) is Refresh:
            await self._load()
            return None
        if not self.loaded:
            await self._load()
        if type(message) is Turn:
            return await self.turn(message)
        if type(message) is Resolve:
            return await self.resolve(message)
        raise TypeError(f"a session actor handles Turn, Resolve and Refresh, not {type(message).__name__}")

    async def _load(self) -> None:
        record = await awaited(self.store, "load", self.store.load(self.key))
        if record is not None:
            _check_stored(self.store, "load", record, self.key)
        if record is None:
            self.history, self.version, self.paused, self.origin = (), None, None, None
            self.children = ()
        else:
            self.history, self.version, self.paused = record.messages, record.version, record.paused
            self.children = record.children
            self.origin = record.origin
        self.loaded = True
        if not self.activated:
            self.activated = True
            self.rt.emit(
                "session.activated",
                key=self.key,
                version=self.version,
                messages=len(self.history),
                paused=self.paused is not None,
            )

    async def turn(self, message: Turn) -> RunResult[Any]:
        """Run the turn and commit its outcome (the module docstring's rule).

        :raises SessionPausedError: the session waits for decisions on a paused turn (as the store says: a pause
            this actor holds is read again first, since another process may have resolved it).
        :raises SessionConflictError: another turn was committed first; this one was not.

        Cancellation: a turn cancelled while its agent runs commits nothing: the session stays as it was.  The
        commit is shielded: one that started ends, the actor's state follows the store, and the cancellation is
        delivered at the caller's next checkpoint.
        """
        if self.paused is not None:
            await self._load()  # this runtime's copy may be stale: another process may have resolved the pause
        if self.paused is not None:
            raise SessionPausedError(
                f"session {self.key!r} is paused for approval of {len(self.paused.pending)} call(s): "
                "resolve() it before sending another turn",
                key=self.key,
                pending=self.paused.pending,
            )
        inputs = self.history + message.messages
        # Listed by its input tuple while it runs, which the run keeps (steer finds it).
        with self._running(len(self.history), message.budgets, inputs):
            result = await message.agent.run(
                inputs,
                runtime=self.rt,
                deps=message.deps,
                settings=message.settings,
                deadline=message.deadline,
                priority=message.priority,
            )
        await self._settle(result, message.agent, "run")
        return result

    async def resolve(self, message: Resolve) -> RunResult[Any]:
        """Claim the pause, resume the run with the decisions, commit its outcome.

        :raises TypeError, ValueError: decisions that do not fit the pause, or an agent that cannot resume it
            (nothing claimed) — the pause as the store holds it: one held here is read again before they are
            refused, since another process may have resolved it and paused again on other calls.
        :raises SessionConflictError: there is no pause to resolve (resolved already, or never
            paused: as the store says, read again first), or another runtime claimed it first.  Nothing ran.

        Cancellation: a caller cancelled before the claim changes nothing (the pause stays).  The claim is a
        shielded commit: once it started, the pause is consumed — a resume then cancelled commits nothing, the
        history stays what it was before the paused turn, and the decided calls are not offered again.
        """
        if self.paused is None:
            await self._load()  # this runtime's copy may be stale: another process's turn may have paused it since
        try:
            pause, decisions = self._decided(message)
        except (TypeError, ValueError):
            # This runtime's pause may be stale: another process may have resolved it and paused again on other
            # calls, which the decisions name.  Read the store before refusing them (as a turn does before it
            # refuses one), or every retry would be refused against the old pause until the session deactivates.
            # Only on this refusal's path: a resolve that fits its pause pays nothing.
            await self._load()
            pause, decisions = self._decided(message)
        history, children = self.history, self.children
        claim = SessionRecord(self.key, history, 0, None, pause.run_id, len(history), origin=self.origin)
        await self._commit(claim, claim=True)
        # Listed by the pause's run id while the resumed run goes on, as a sent turn is by its input (steer finds
        # it); a pause with no run id leaves nothing to find its run by.
        listed = Resuming(pause.run_id) if isinstance(pause.run_id, str) else None
        with self._running(len(history), message.budgets, listed):
            result = await message.agent.resume(pause, decisions, runtime=self.rt, deps=message.deps)
        if children and isinstance(result, RunResult):  # the paused part's delegated runs, as Agent.resume keeps them
            result = attrs.evolve(result, children=children + result.children)
        await self._settle(result, message.agent, "resume")
        return result

    def _running(self, kept: int, budgets: tuple[CostBudget, ...], listed: object) -> _TurnRun:
        """The block a turn's run (or a resolved turn's resume) runs in: the journal (if any) records which turn
        the run is (``kept`` messages of history), so that recover() can commit it if this process dies; the run
        spends under the turn's ``budgets``; and it is listed by ``listed`` (``None``: not listed) at the session's
        slot among the runtime's live turns while it runs."""
        turn = turn_running(SessionTurn(self.key, self.version, kept, self.origin))
        return _TurnRun(turn, spending_under(budgets), self.live, self.slot, listed)

    def _decided(self, message: Resolve) -> tuple[PausedRun, Any]:
        """The pause this actor holds and ``message``'s decisions checked against it (:meth:`resolve`).

        :raises SessionConflictError: no pause is held.
        :raises TypeError, ValueError: the decisions do not fit it, or the message's agent cannot resume it.
        """
        pause = self.paused
        if pause is None:
            raise SessionConflictError(
                f"session {self.key!r} has no pause to resolve: it was resolved already, or never paused",
                key=self.key,
            )
        decisions = check_decisions(pause, message.decisions)
        _check_resumer(self.key, pause, message.agent)
        return pause, decisions

    async def _settle(self, result: RunResult[Any], agent: SessionAgent, method: str) -> None:
        if not isinstance(result, RunResult):  # an agent of the user's own: refused here, not as an AttributeError
            raise TypeError(
                f"agent {getattr(agent, 'name', None)!r}: its {method}() returned {type(result).__name__}, not a "
                f"RunResult (session {self.key!r}: nothing committed)"
            )
        # Named with the origin of the session this actor holds, not another one created under its key since.
        record = turn_record(self.key, self.history, result, origin=self.origin)
        if record is not None:
            await self._commit(record)

    async def _commit(self, record: SessionRecord, *, claim: bool = False) -> None:
        """Commit ``record`` — built with this actor's :attr:`origin` — over the version this actor holds; adopt
        what the store stored.

        Cancellation: shielded — a commit that started ends, and the actor's state follows the store.  A
        ``MemoryStore``'s own commit never suspends (no await: not a cancellation point), so nothing can interrupt
        it and it is not wrapped in a shielded scope (on trio, entering and leaving one cost more than the commit).
        """
        if getattr(self.store.commit, "__func__", None) is _MEMORY_COMMIT:  # (a commit set on the instance is not)
            stored = await self._write(record)
        else:
            with anyio.CancelScope(shield=True):
                stored = await self._write(record)
        _committed(self.rt.emit, stored, resolving=claim)

    async def _write(self, record: SessionRecord) -> SessionRecord:
        """:meth:`_commit`'s store commit, and the actor's state adopted from what it stored."""
        try:
            answer = self.store.commit(record, expected_version=self.version)
            stored: SessionRecord = await awaited(self.store, "commit", answer)
            _check_stored(self.store, "commit", stored, self.key)
        except BaseException:
            # A conflict (or a failure that leaves the outcome unknown): reload before the next turn.
            self.loaded = False
            raise
        self.history, self.version, self.paused = stored.messages, stored.version, stored.paused
        self.origin, self.children = stored.origin, stored.children
        return stored


class _TurnRun:
    """:meth:`SessionActor._running`'s block: its turn record and its budgets entered, then the run listed; left
    in the reverse order.  One object for the three (a turn pays for each layer it enters)."""

    __slots__ = ("budgets", "listed", "live", "slot", "turn")

    def __init__(
        self,
        turn: AbstractContextManager[None],
        budgets: AbstractContextManager[object],
        live: dict[Any, Any],
        slot: tuple[Hashable, str],
        listed: object,
    ) -> None:
        self.turn, self.budgets, self.live, self.slot, self.listed = turn, budgets, live, slot, listed

    def __enter__(self) -> None:
        self.turn.__enter__()
        try:
            self.budgets.__enter__()
        except BaseException:
            self.turn.__exit__(None, None, None)
            raise
        if self.listed is not None:
            self.live[self.slot] = self.listed

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.listed is not None and self.live.get(self.slot) is self.listed:
                del self.live[self.slot]
        finally:
            try:
                self.budgets.__exit__(*exc)
            finally:
                self.turn.__exit__(*exc)


def _check_stored(store: SessionStore, method: str, record: object, key: str) -> None:
    """Refuse what a store answered that breaks the port's contract, before the actor adopts any of it.

    A store of the user's own may return something else than a record, another session's record (a key it
    normalized, a cache keyed wrongly) or one with no stored version: taken as it was, the turn failed later
    with an ``AttributeError`` deep in the actor — or ran the model on another conversation's history, which
    is another user's data.  Cheap: two comparisons.

    :raises TypeError: not a :class:`SessionRecord`.
    :raises ValueError: the record of another key, or of version 0 (a record not stored).
    """
    where = f"{type(store).__name__}.{method}()"
    if not isinstance(record, SessionRecord):
        raise TypeError(f"{where} returned a {type(record).__name__}, not a SessionRecord (session {key!r})")
    if record.key != key:
        raise ValueError(f"{where} returned the record of session {record.key!r} for session {key!r}")
    if record.version < 1:
        raise ValueError(f"{where} returned a record of session {key!r} with version 0: a stored record has 1 or more")


def _check_resumer(key: str, pause: PausedRun, agent: SessionAgent) -> None:
    """Refuse, before the claim, an agent that would refuse to resume ``pause``.

    A session's turns may run different agents (one handle each), but a pause goes on only with the agent
    that was answering when it paused, or one that hands off to it (:meth:`agentactors.Agent.resume`, which
    raises ``ValueError`` otherwise).  Found only after the claim, that refusal consumed the pause with
    nothing run: the person's decision lost, the calls never offered again.  The rule is applied here to an
    agent that says whether it hands off (``handoffs``, as :class:`~agentactors.Agent` does); another agent
    keeps its own rules.

    :raises ValueError: ``agent`` is not the paused agent and hands off to none.
    """
    handoffs = getattr(agent, "handoffs", None)
    if handoffs is None or handoffs or pause.agent == agent.name:
        return
    raise ValueError(
        f"session {key!r} paused while agent {pause.agent!r} was answering; resolve it through a session "
        f"handle of that agent (or of one that hands off to it), not {agent.name!r} (nothing was claimed)"
    )


def turn_record(
    key: str, history: tuple[Message, ...], result: RunResult[Any], *, origin: str | None = None
) -> SessionRecord | None:
    """What a turn that started on ``history`` commits (the module docstring's rule); ``None``: nothing.

    A pause: the history unchanged, and the pause with the run's children (the result that resolves it keeps
    them).  An answer: the run's messages become the history.  ``origin``: the session's the turn started on
    (:attr:`SessionRecord.origin`), which the commit names.
    """
    if not committable(result):
        return None
    state = result.resume_state
    if state is not None:
        return SessionRecord(
            key, history, 0, state, result.run_id, len(history), origin=origin, children=result.children
        )
    messages = result.messages
    return SessionRecord(key, messages, 0, None, result.run_id, _kept(history, messages), origin=origin)


async def commit_recovered(
    store: SessionStore,
    turn: SessionTurn,
    result: RunResult[Any],
    inputs: tuple[Message, ...],
    emit: Callable[..., None] | None = None,
) -> bool:
    """Commit the result of a session's turn that ``rt.recover()`` finished, as the session's actor would have.

    ``turn`` is what the journal recorded of it (:mod:`agentactors.sessions.journaled`), ``inputs`` the
    run's inputs (the history it started on, then the turn's messages).  The commit names the version the
    turn started from.  Returns whether it committed: not for a result the rule does not commit (a failure,
    a cancellation), nor when the session moved on since (the store's conflict: a warning is logged, nothing
    is overwritten).  ``emit`` (the runtime's) is given ``session.committed`` with ``recovered=True``.

    :raises SessionFormatError: the stored session is in a format this version cannot read.
        Other errors of the store propagate too, and a store's answer that is not the record it stored
        (``TypeError`` / ``ValueError``, as a session's actor refuses it).

    Cancellation: not shielded, as the store's ``commit``: a cancelled commit happened entirely or not at all (a
    SQL store's, once started, ends first) and the caller cannot tell which — the return value and the
    ``session.committed`` event are lost with it.  One that did not happen leaves the session as it was.
    """
    # Named with the origin of the session the turn started on, not a new one of its key.
    record = turn_record(turn.key, inputs[: turn.kept], result, origin=turn.origin)
    if record is None:
        log.info("run %s: the turn of session %r ended with nothing to commit", result.run_id, turn.key)
        return False
    try:
        stored = await awaited(store, "commit", store.commit(record, expected_version=turn.version))
        _check_stored(store, "commit", stored, turn.key)
    except SessionConflictError:
        log.warning(
            "run %s: session %r moved on since its turn started (from version %s): the recovered turn is not "
            "committed",
            result.run_id, turn.key, turn.version,
        )
        return False
    log.info("run %s: the recovered turn is committed to session %r (version %d)", result.run_id, turn.key,
             stored.version)
    if emit is not None:
        _committed(emit, stored, recovered=True)
    return True


def _committed(emit: Callable[..., None], stored: SessionRecord, *, resolving: bool = False, **more: Any) -> None:
    """``session.committed`` for what the store stored (``more``: ``recovered=True`` from a recovery)."""
    emit(
        "session.committed",
        key=stored.key,
        version=stored.version,
        turn_run_id=stored.run_id,
        messages=len(stored.messages),
        paused=stored.paused is not None,
        resolving=resolving,
        **more,
    )


def _kept(history: tuple[Message, ...], messages: tuple[Message, ...]) -> int:
    """How many of ``messages`` are the history, unchanged (a run usually extends it: all of it).

    The comparison is of the same objects, in the usual case — a tuple compares identity first — so it
    costs a pointer compare per message, not an encoding: the store then writes only the turn.
    """
    n = len(history)
    return n if len(messages) >= n and messages[:n] == history else 0
