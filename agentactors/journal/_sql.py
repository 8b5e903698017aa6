"""What both SQL journals do the same way: their tables' names, reading and claiming runs, leases, parking.

:class:`~agentactors.journal.SqliteJournal` and :class:`~agentactors.journal.PostgresJournal` keep the same
tables and follow the same rules (:mod:`agentactors.journal._lease` for leases, :mod:`agentactors.journal._group`
for concurrent commits); one statement differs from the other only in its SQL dialect.  So the statements live
here once, written with ``:name`` parameters, and each journal brings its database's
:class:`~agentactors._dialect.Dialect` — and how it writes a batch of commits, the one piece whose SQL is its own
(SQLite's savepoints in one ``BEGIN IMMEDIATE``, PostgreSQL's one statement a commit in autocommit).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any, Final, Self

import anyio
import anyio.lowlevel
import anyio.to_thread

import agentactors._db_worker as _db_worker

from .._db_worker import Worker
from .._dialect import Dialect
from ..loop.tape import Commit
from ..messages import Message
from ._group import GroupCommit
from ._lease import Keeper, check_lease, is_free, new_owner
from ._parking import check_key, check_value
from ._rows import Encoded, decode_run, encode
from ._tapes import Tapes
from .children import Orphans
from .records import RecordedRun, RunNotRecordedError
from .store import JournalFormatError, LeaseLostError

__all__ = ["PARKED", "RUNS", "STEPS", "ApplyMany", "Item", "SqlJournal", "lost"]

log = logging.getLogger("agentactors.journal")

RUNS: Final = "agentactors_runs"
STEPS: Final = "agentactors_steps"
PARKED: Final = "agentactors_parked"

#: One run's commit, encoded: ``(run_id, agent, what it writes)``.
Item = tuple[str, str | None, Encoded]


def lost(run_id: str) -> LeaseLostError:
    """The error of a commit whose run another recoverer took over."""
    return LeaseLostError(
        f"run {run_id!r} was taken over by another recoverer (this journal's lease on it had expired): "
        "it goes on there",
        run_id=run_id,
    )


#: ``apply_many(conn, items, owner, lease)``: a batch of commits in the worker thread, each one's error or ``None``.
ApplyMany = Callable[[Any, list[Item], str, float], list[BaseException | None]]


class SqlJournal(Tapes):
    """A step journal in a SQL database: what :class:`~agentactors.journal.SqliteJournal` and
    :class:`~agentactors.journal.PostgresJournal` share.  A subclass implements :meth:`_where`.

    :param lease: seconds a run stays leased to this object without a renewal, checked.
    :param dialect: the SQL of the subclass's database.
    :param apply_many: how it writes a batch of commits (:data:`ApplyMany`).
    :param worker: ``worker(name=…)`` makes a connection worker (:mod:`agentactors._db_worker`) named ``name``.
    :param label: names the workers' and the group commit's per-loop state (``"sqlite"``, ``"pg"``).
    """

    __slots__ = (
        "_dialect", "_group", "_keeper", "_mine", "_orphans", "_renewer", "_worker", "_write_many", "lease", "owner",
    )

    def __init__(
        self, lease: float, dialect: Dialect, apply_many: ApplyMany, worker: Callable[..., Worker[Any]], label: str
    ) -> None:
        self.lease = check_lease(lease)
        self._dialect = dialect
        self._write_many = apply_many
        #: This object's lease owner id (host, PID namespace, PID, a nonce).
        self.owner = new_owner(self)
        self._worker = worker(name=f"agentactors-{label}-journal-{id(self)}")
        # The lease keeper's own connection: a renewal never waits behind a commit, nor a commit behind it.
        self._renewer = worker(name=f"agentactors-{label}-lease-{id(self)}")
        # Held weakly by the keeper's thread: a journal nobody closed (a runtime was given it) is collected
        # when nothing else holds it, and its thread ends then instead of living as long as the process.
        self._keeper = Keeper(_renewal(weakref.WeakMethod(self._renew_mine)), self.lease / 3)
        # And collected, its connections are closed then, not left to their own finalisers (psycopg warns).  Not
        # at the interpreter's exit: a daemon thread may hold a connection's lock there, and exit must not wait.
        weakref.finalize(self, _close_connections, self._worker, self._renewer).atexit = False
        # Concurrent runs' commits share a thread hop and a transaction (agentactors.journal._group).
        self._group: GroupCommit[Item] = GroupCommit(self._apply_many, f"agentactors-{label}-group-{id(self)}")
        #: Runs this object opened (running here, not left by a crash): recover() leaves them alone.
        self._mine: set[str] = set()
        #: Recorded children of the runs being recovered, for their parents' re-run tool steps.
        self._orphans = Orphans()

    def _renew_mine(self) -> None:
        """Renew the leases of this object's runs (the keeper's thread calls it every third of a lease).

        Nothing to renew, nothing done: the keeper's thread lives until :meth:`aclose` (or until the journal
        is collected, :func:`_renewal`), and a journal whose runs have all ended — one a runtime was given and
        nobody closed — neither touches its database nor opens the renewer's connection meanwhile.
        """
        if self._mine:
            self._renewer.call_sync(_renew, self._dialect, self.owner, self.lease)

    def _where(self) -> str:
        """The database, as an error names it (never with a password)."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        """``async with journal:`` — the journal itself (its connections open on first use).

        Cancellation: not a cancellation point (it awaits nothing).
        """
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Leaving the block closes the journal (:meth:`aclose`); an exception of the block propagates.

        Cancellation: as :meth:`aclose`, shielded and bounded — a block left by a cancellation still closes the
        journal, then the cancellation goes on.
        """
        await self.aclose()

    # -- committing (open_run, resume_run and recover: agentactors.journal._tapes) ----------

    async def commit(
        self, run_id: str, agent: str | None, inputs: tuple[Message, ...], commit: Commit, origin: Any = None
    ) -> None:
        """Apply ``commit`` for ``run_id`` in one transaction (a :class:`~agentactors.loop.tape.Commit`), if this
        object still holds the run's lease.

        ``origin``: where the run came from (:func:`~agentactors.journal.codec.origin_now`), kept with its start.
        Every commit checks (and renews) this object's lease on the run.

        A run's end whose answer cannot be journaled is still an end: the run raises (this error leaves its tape),
        so the journal says it ``"raised"`` — left ``"running"``, every later ``recover()`` would run it again
        and meet the same value.

        Cancellation: the commit is shielded (:mod:`agentactors.journal._group`): once started it happens whole
        or not at all, and this call returns only when the database said which.

        :raises LeaseLostError: another recoverer took the run over (this object's lease had expired).
        :raises JournalFormatError: the commit holds a value JSON cannot keep or past the JSON policy (nothing of
            it was written; a run's end is written as ``"raised"``).
        """
        try:
            encoded = encode(run_id, inputs, commit, origin)  # before the transaction: a bad value takes no lock
        except JournalFormatError as exc:
            if commit.end is not None:
                try:
                    await self._commit(run_id, agent, encode(run_id, inputs, Commit(end="raised"), origin))
                except Exception as also:  # the database or the lease: the value's error is still the run's
                    exc.add_note(f"and its end could not be journaled either ({type(also).__name__})")
            raise
        await self._commit(run_id, agent, encoded, ended=commit.end is not None)

    async def _commit(self, run_id: str, agent: str | None, encoded: Encoded, *, ended: bool = True) -> None:
        try:
            await self._group.commit((run_id, agent, encoded))
        except LeaseLostError:
            # No longer running here: were the other owner to die with it, this journal's unfinished() must list
            # it again like any crashed process's run (a replica recovering every minute would skip it forever).
            self._mine.discard(run_id)
            self._orphans.forget(run_id)
            raise
        except Exception:
            if ended or encoded.begin is not None:  # its end (or begin) did not land — a locked file, a dropped
                # connection: the run is over here all the same (or never started), and a recovered one is left
                # "running" as a crash leaves it — this journal's next recover() finishes it, never skipped as one
                # running here, its lease renewed for as long as this object lives
                self._mine.discard(run_id)
                self._orphans.forget(run_id)
            raise
        if ended:
            self._mine.discard(run_id)
            self._orphans.forget(run_id)

    # -- reading and claiming -------------------------------------------------------------------------

    async def load_run(self, run_id: str) -> RecordedRun:
        """The run ``run_id`` as committed.  :raises RunNotRecordedError: the journal has no such run.

        Cancellation: a read, nothing changes.  A caller cancelled while it waits for the connection leaves;
        the query, once started in the worker thread, is not interrupted: it ends and the cancellation is
        delivered at the caller's next checkpoint.
        """
        run = await self._worker.call(_load, self._dialect, run_id)
        if run is None:
            raise RunNotRecordedError(f"the journal {self._where()!r} holds no run {run_id!r}")
        return run

    async def unfinished(self, *, damaged: dict[str, JournalFormatError] | None = None) -> list[RecordedRun]:
        """The top-level runs nothing said ended — a crashed process's: not running here, their lease free
        (expired, or its process gone from this machine).

        A run whose rows do not decode (a damaged row, a missing step) is left out — one bad run must not hide the
        others from recovery — and left as it is: a warning names it, ``load_run`` raises its
        :class:`JournalFormatError`, and ``damaged`` (when given) receives it by run id (what ``recover()`` raises
        in its :class:`~agentactors.journal.RecoveryError`).

        Cancellation: a read, nothing changes: it stops before its next query (one running is not interrupted,
        as :meth:`load_run`).
        """
        rows = await self._worker.call(_running, self._dialect)
        runs = []
        for run_id, owner, expired in rows:
            if run_id in self._mine or not is_free(owner, expired, self.owner):
                continue
            try:
                run = await self._worker.call(_load, self._dialect, run_id)
            except JournalFormatError as exc:
                log.warning("run %s cannot be recovered: %s", run_id, exc)
                if damaged is not None:
                    damaged[run_id] = exc
                continue
            if run is not None and not run.finished:
                runs.append(run)
        return runs

    async def claim(self, run_id: str) -> RecordedRun | None:
        """Lease ``run_id`` (and its unfinished children) to this object, in one transaction, if its lease is
        free: the run as committed then; ``None`` if it ended or another live owner holds it.

        Cancellation: a caller cancelled while it waits for the connection has taken nothing.  A claim whose
        transaction started is not interrupted: it ends (the run leased to this object if it was free) and the
        cancellation is delivered at the caller's next checkpoint; a claimed run nobody opens stays unfinished,
        for a later ``recover()``.
        """
        if run_id in self._mine:  # running here (this object's lease): not another caller's to take
            return None
        run = await self._worker.call(_claim, self._dialect, run_id, self.owner, self.lease)
        if run is not None:  # counted running here when its run opens (resume_run): one that never does is not
            self._keeper.start()
        return run

    # -- parking ------------------------------------------------------------------------------------

    async def park(self, key: str, value: str) -> None:
        """Keep the JSON text ``value`` under ``key`` (replacing what was there), committed before it returns.

        For what must outlive the process and is not a step: a batch provider parks a run's pending batch
        here, and finds it again after a restart.

        :raises JournalFormatError: ``value`` is not JSON or is past the JSON depth and size policy
            (:mod:`agentactors._json`): what could not be read back is refused now.  Nothing was written.
        :raises TypeError, ValueError: ``key`` is not a non-empty ``str`` (of at most 1,024 characters).

        Cancellation: a caller cancelled while it waits for the connection has written nothing.  A write that
        started in the worker thread is not interrupted: it is committed, and the cancellation is delivered at
        the caller's next checkpoint.
        """
        await self._worker.call(_park, self._dialect, check_key(key), check_value(key, value))

    async def parked(self, key: str) -> str | None:
        """The JSON text parked under ``key``, or ``None``.

        :raises JournalFormatError: the stored text is not JSON or is past the policy (a damaged row: left as
            it is).

        Cancellation: a read, nothing changes (as :meth:`load_run`).
        """
        value = await self._worker.call(_parked, self._dialect, check_key(key))
        return None if value is None else check_value(key, value, stored=True)

    async def unpark(self, key: str) -> None:
        """Forget what is parked under ``key`` (nothing happens if nothing is).

        Cancellation: as :meth:`park`: a delete that started is committed.
        """
        await self._worker.call(_unpark, self._dialect, check_key(key))

    async def aclose(self) -> None:
        """Stop renewing leases and close the connections (the next use opens new ones).  Idempotent.

        The runs still running here keep their lease until it expires: close after they end.

        Cancellation: shielded and bounded — a caller cancelled before or during the close (``async with``
        left by a cancellation) still stops the lease keeper and closes both connections.  It waits at most
        ``CLOSE_TIMEOUT`` (:mod:`agentactors._db_worker`, 10 s) in all for what runs on them (a renewal or a
        commit waiting for a lock, a server slow to answer: a statement cannot be interrupted); past that it
        returns, and what was still busy is closed in the background as soon as its statement returns (the
        statements' own bounds end them: ``busy_timeout``, PostgreSQL's timeouts).  A journal collected closes
        its connections then.
        """
        deadline = anyio.current_time() + _db_worker.CLOSE_TIMEOUT
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(_db_worker.CLOSE_TIMEOUT):
                # The keeper may be renewing, on the database: waited for in a thread (abandoned past the bound,
                # it goes on: the renewer is closed once the keeper's thread ended, so no renewal reopens it).
                await anyio.to_thread.run_sync(self._stop_renewing, abandon_on_cancel=True)
            await self._worker.close(max(0.0, deadline - anyio.current_time()))
        await anyio.lowlevel.checkpoint_if_cancelled()  # the caller's cancellation, now that both are closed

    def _stop_renewing(self) -> None:
        """Stop the lease keeper (waiting for a renewal in progress), then close the renewer's connection."""
        self._keeper.stop()
        self._renewer.close_blocking()

    async def _apply_many(self, items: list[Item]) -> list[BaseException | None]:
        return await self._worker.call(self._write_many, items, self.owner, self.lease)


def _close_connections(*workers: Worker[Any]) -> None:
    """A collected journal's connections, closed (a finaliser: no journal is left to use them)."""
    for worker in workers:
        try:
            worker.close_sync()
        except Exception as exc:  # a finaliser must not raise; the connection goes with its object anyway
            log.debug("closing a collected journal's connection raised %s", type(exc).__name__)


def _renewal(journals_renewal: weakref.WeakMethod[Callable[[], None]]) -> Callable[[], bool]:
    """The keeper's ``renew``: the journal's renewal while it lives; ``False`` (the thread ends) once it is gone."""

    def renew() -> bool:
        renew_now = journals_renewal()
        if renew_now is None:
            return False
        renew_now()
        return True

    return renew


# --- what runs in the worker thread --------------------------------------------------------------------

_RUNNING: Final = (  # a child is recovered by its parent's recovery, never on its own
    f"SELECT run_id, owner, lease_until IS NULL OR lease_until < :now FROM {RUNS}"
    " WHERE status = 'running' AND parent_run_id IS NULL ORDER BY started"
)
_RUN: Final = f"SELECT agent, inputs, status, content, origin FROM {RUNS} WHERE run_id = :run"
_RUN_STEPS: Final = f"SELECT step, response, results FROM {STEPS} WHERE run_id = :run ORDER BY step"
_CHILDREN: Final = f"SELECT run_id FROM {RUNS} WHERE parent_run_id = :run ORDER BY started"
_LEASE: Final = f"SELECT status, owner, lease_until IS NULL OR lease_until < :now FROM {RUNS} WHERE run_id = :run"
_TAKE: Final = (  # the run and its unfinished children: their begins, when started again, are this owner's
    f"WITH RECURSIVE tree(id) AS (SELECT CAST(:run AS TEXT) UNION SELECT r.run_id FROM {RUNS} r"
    " JOIN tree ON r.parent_run_id = tree.id)"
    f" UPDATE {RUNS} SET owner = :owner, lease_until = :now + :lease"
    " WHERE run_id IN (SELECT id FROM tree) AND status = 'running'"
)
_RENEW: Final = f"UPDATE {RUNS} SET lease_until = :now + :lease WHERE owner = :owner AND status = 'running'"
_PARK: Final = (
    f"INSERT INTO {PARKED} (key, value, updated) VALUES (:key, :value, :now)"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated = excluded.updated"
)
_PARKED: Final = f"SELECT value FROM {PARKED} WHERE key = :key"
_UNPARK: Final = f"DELETE FROM {PARKED} WHERE key = :key"


def _running(conn: Any, d: Dialect) -> list[tuple[str, str | None, bool]]:
    rows = conn.execute(d.sql(_RUNNING), d.params()).fetchall()
    return [(str(r[0]), r[1], bool(r[2])) for r in rows]


def _load(conn: Any, d: Dialect, run_id: str) -> RecordedRun | None:
    with d.snapshot(conn):  # a run and its steps of one commit
        return _load_in(conn, d, run_id)


def _load_in(conn: Any, d: Dialect, run_id: str, above: tuple[str, ...] = ()) -> RecordedRun | None:
    """The run and its children's runs, read whole; ``above``: the runs it was read as a child of.

    A run found among its own ancestors (a ``parent_run_id`` edited into a cycle: no run the loop journals can
    delegate to its parent) is the run's format error, not a recursion without end.
    """
    if run_id in above:
        raise JournalFormatError(
            f"run {above[0]!r}'s stored lineage is a cycle: run {run_id!r} is its own parent "
            f"({' → '.join((*above, run_id))}): it was left as it is"
        )
    params = {"run": run_id}
    row = conn.execute(d.sql(_RUN), params).fetchone()
    if row is None:
        return None
    steps = conn.execute(d.sql(_RUN_STEPS), params).fetchall()
    ids = conn.execute(d.sql(_CHILDREN), params).fetchall()
    lineage = (*above, run_id)
    children = tuple(c for c in (_load_in(conn, d, str(r[0]), lineage) for r in ids) if c is not None)
    return decode_run(run_id, tuple(row), steps, children)


def _claim(conn: Any, d: Dialect, run_id: str, owner: str, lease: float) -> RecordedRun | None:
    params = d.params(run=run_id, owner=owner, lease=lease)
    with d.transaction(conn):  # SQLite: BEGIN IMMEDIATE; PostgreSQL: the row locked; of several claimers, one
        row = conn.execute(d.sql(_LEASE) + d.row_lock, params).fetchone()
        if row is None or row[0] != "running" or not is_free(row[1], bool(row[2]), owner):
            return None
        conn.execute(d.sql(_TAKE), params)
        return _load_in(conn, d, run_id)


def _renew(conn: Any, d: Dialect, owner: str, lease: float) -> None:
    with d.single(conn):
        conn.execute(d.sql(_RENEW), d.params(owner=owner, lease=lease))


def _park(conn: Any, d: Dialect, key: str, value: str) -> None:
    with d.single(conn):
        conn.execute(d.sql(_PARK), d.params(key=key, value=value))


def _parked(conn: Any, d: Dialect, key: str) -> Any:
    row = conn.execute(d.sql(_PARKED), {"key": key}).fetchone()
    return None if row is None else row[0]


def _unpark(conn: Any, d: Dialect, key: str) -> None:
    with d.single(conn):
        conn.execute(d.sql(_UNPARK), {"key": key})
