"""Recovery: the runs a crashed process left in a journal, finished from their last committed step.

``await rt.recover()`` (:meth:`Runtime.recover <agentactors.actors.runtime.Runtime.recover>`) asks the
runtime's journal for its unfinished runs and runs each again with its agent — found by ``Agent.name`` —
in the runtime, concurrently.  Each run is handed a tape of what it committed (:meth:`JournalStore.resume_run
<agentactors.journal.JournalStore.resume_run>`): its model responses and tool results are served back, so
no committed tool runs again; a tool step whose response was committed but whose results were not runs
again, with the same call ids and so the same ``ToolContext.idempotency_key``; then the run goes on live,
committing as before.  It keeps its run id.

The runs are recovered side by side, and what goes wrong with one stays with it: a run whose rows do not decode
is left out (and left as it is), a run that raises is ended ``raised``, a run whose lease another recoverer took
over is left to it — none cancels the others (a run cancelled is *ended*, never recovered again).  Once the others
are finished, the failures are raised together: a :class:`~agentactors.journal.RecoveryError` naming each run,
holding the others' results.

Several recoverers (the replicas of a service, each calling ``rt.recover()`` on start) share a journal
safely: ``unfinished`` lists only the runs whose lease is free, and each is *claimed*
(:meth:`JournalStore.claim <agentactors.journal.JournalStore.claim>`) — atomically, so exactly one recoverer
takes it — before it is run; a run another recoverer claimed first is left to it.

A run that was a session's turn (the journal recorded which: :mod:`agentactors.sessions.journaled`) is
committed to the session when it ends, if ``recover`` was given the session store (``sessions=``), as the
session's actor would have committed it in the process that died: the same rule, over the version the turn
started from — a session that moved on meanwhile keeps its history (a warning says the turn was not
committed).  Without ``sessions=``, the result is only ``recover()``'s (an info line says which session's).

How the tape reaches that run and no other: a context variable, set in the recovering task just before
``agent.run`` makes the run's controller there, and taken by the journal's ``open_run`` (once).  The tape is made
(:meth:`JournalStore.resume_run <agentactors.journal.JournalStore.resume_run>`, which counts the run as running
here and offers its recorded children) only when it is taken: a run that fails or is cancelled before it starts
— its agent's run raising at once, a supervisor's pass cancelled — opened nothing.

**In one process.**  A journal's lease names the journal object, so the database cannot tell two ``recover()``
calls on one journal apart (a supervisor's periodic pass beside a start-up call, two tasks): both would claim
the run and both would run it.  So a run is also claimed in this process, by journal object, for as long as a
``recover()`` here is finishing it; another call of this process meeting it leaves it.  A resumed run goes on
inside :func:`~agentactors.agent.pauses.recovering`: its pause is consumed — by this recovery, or already by the
resume that this process started before (a runtime closed and opened again) — without a
:class:`~agentactors.errors.PauseConsumedError`.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, Final, Protocol, cast

import anyio

from ..agent.pauses import recovering
from ..loop.result import RunResult
from ..loop.tape import Tape
from ..sessions.actor import commit_recovered
from ..sessions.registry import Sessions
from ..sessions.store import SessionStore, check_store
from .records import RecordedRun, RecoveryError, checked_agents
from .store import JournalFormatError, JournalStore, LeaseLostError

__all__ = ["adopted", "recover"]

log = logging.getLogger("agentactors.journal")

#: How to make the tape of the recovered run this task is starting (made when taken: see the module).
_ADOPTING: contextvars.ContextVar[Callable[[], Tape] | None] = contextvars.ContextVar(
    "agentactors_journal_adopting", default=None
)

#: The runs a ``recover()`` of this process is finishing, as ``(id(journal), run_id)`` (see the module); its journal
#: is alive while it is here (the recovering task holds it), so its id names it.
_recovering: set[tuple[int, str]] = set()
#: Held while ``_recovering`` is read and written: recoveries in other threads' event loops may share a journal.
_recovering_lock: Final = threading.Lock()


def adopted() -> Tape | None:
    """The tape of a recovered run this task is starting (taken: a second call answers ``None``)."""
    make = _ADOPTING.get()
    if make is None:
        return None
    _ADOPTING.set(None)
    return make()


async def recover(
    journal: JournalStore, rt: Any, *, agents: Iterable[Any], sessions: Any = None
) -> list[RunResult[Any]]:
    """Finish ``journal``'s unfinished runs in ``rt`` with ``agents`` (by name; the first of a name wins); commit
    the recovered session turns to ``sessions`` when given (see the module).

    :raises TypeError: ``sessions`` is not a session store, or ``agents`` holds what is not an Agent (checked
        before anything runs).
    :raises RecoveryError: some runs could not be recovered (a damaged row, a run that raised, a failed claim):
        raised once every other run was finished, with their results (``.results``) and each failure by run id.

    Cancellation: the runs it is finishing are cancelled, and each is ended ``"cancelled"`` (the end committed
    shielded): a run cancelled is ended, never recovered again.  A run it had not started yet stays unfinished,
    for a later ``recover()``.
    """
    store = None if sessions is None else check_store(sessions)
    named: dict[str | None, Any] = {}
    for agent in checked_agents(agents):
        named.setdefault(getattr(agent, "name", None), agent)
    failed: dict[str, BaseException] = {}
    damaged: dict[str, JournalFormatError] = {}
    runs = await cast("_Listing", journal).unfinished(damaged=damaged)  # a damaged run: left out, and reported
    failed.update(damaged)
    results: list[RunResult[Any] | None] = [None] * len(runs)
    async with anyio.create_task_group() as tg:
        for index, run in enumerate(runs):
            agent = named.get(run.agent)
            if agent is None:
                log.warning("run %s: no agent named %r to recover it with; left for later", run.run_id, run.agent)
                continue
            tg.start_soon(_isolated, journal, rt, run, agent, results, index, store, failed)
    recovered = [r for r in results if r is not None]
    if failed:
        raise RecoveryError(recovered, failed)
    return recovered


class _Listing(Protocol):
    async def unfinished(self, *, damaged: dict[str, JournalFormatError] | None = None) -> list[RecordedRun]: ...


async def _isolated(
    journal: JournalStore,
    rt: Any,
    run: RecordedRun,
    agent: Any,
    results: list[RunResult[Any] | None],
    index: int,
    store: SessionStore | None,
    failed: dict[str, BaseException],
) -> None:
    """:func:`_finish` one run; what it raises is its own, never its siblings' (in the task group it would cancel
    them, and a run cancelled is *ended* ``cancelled``: never recovered again).  A lease taken over is no failure:
    the other recoverer goes on with the run."""
    try:
        await _finish(journal, rt, run, agent, results, index, store)
    except Exception as exc:
        if _lease_lost(exc):
            log.warning("run %s: another recoverer took it over (this journal's lease had expired); it goes on there",
                        run.run_id)
            return
        failed[run.run_id] = exc


def _lease_lost(exc: BaseException) -> bool:
    """Whether ``exc`` is — or was caused by, or groups — a :class:`LeaseLostError`."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, LeaseLostError):
            return True
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
        todo.extend(x for x in (e.__cause__, e.__context__) if x is not None)
    return False


async def _finish(
    journal: JournalStore,
    rt: Any,
    run: RecordedRun,
    agent: Any,
    results: list[RunResult[Any] | None],
    index: int,
    store: SessionStore | None,
) -> None:
    here = (id(journal), run.run_id)
    with _recovering_lock:  # checked and taken in one step: of two recover() calls here, one finishes the run
        mine = here not in _recovering
        _recovering.add(here)
    if not mine:
        log.info("run %s: another recover() of this process is finishing it; left to it", run.run_id)
        return
    try:
        finished = await _claimed(journal, rt, run, agent)
    finally:
        with _recovering_lock:
            _recovering.discard(here)
    if finished is None:
        return
    run, result = finished
    results[index] = result
    if run.session is None:
        return
    if store is None:
        log.info("run %s was a turn of session %r: recover(sessions=store) commits it", run.run_id, run.session.key)
        return
    # A resumed turn started on the history alone (its inputs), a turn on the history and its messages.
    inputs = run.resume[0].messages if run.resume is not None else run.inputs
    if await commit_recovered(store, run.session, result, tuple(inputs), rt.emit):
        Sessions.of(rt).changed(store, run.session.key)  # an active session here reloads before its next turn


async def _claimed(
    journal: JournalStore, rt: Any, run: RecordedRun, agent: Any
) -> tuple[RecordedRun, RunResult[Any]] | None:
    """Claim ``run`` and run it to its end: the run as claimed and its result; ``None``: another recoverer holds it."""
    claimed = await journal.claim(run.run_id)  # as committed when claimed: another recoverer may have gone on
    if claimed is None:
        log.info("run %s: another recoverer holds it; left to it", run.run_id)
        return None
    _ADOPTING.set(partial(journal.resume_run, claimed))  # the tape made when the run opens (see the module)
    log.info("run %s: recovering from step %d", claimed.run_id, len(claimed.steps))
    if claimed.resume is not None:  # a resumed run starts again as it did: its pause, its decisions
        with recovering():  # the pause it goes on from is consumed, maybe by this process already: no error
            result: RunResult[Any] = await agent.resume(*claimed.resume, runtime=rt)
    else:
        result = await agent.run(claimed.inputs, runtime=rt)
    return claimed, result
