"""``SqliteJournal``: each step of each run committed to a SQLite file as it completes.

``Runtime(journal=SqliteJournal("runs.db"))``: every run started in the runtime (delegated and resumed too) gets a
:class:`~agentactors.loop.tape.Tape` whose writer is this journal, so the loop commits — each in one
transaction, before the run goes on (:mod:`agentactors.loop.tape` says when) — the run's start (its id, agent
and input), each model response, each tool step's results, and how the run ended.  What a crash leaves
(runs still ``"running"``) is what :meth:`SqliteJournal.unfinished` lists and ``rt.recover()`` finishes; any
run can be read back (:meth:`SqliteJournal.load_run`) for ``replay`` and ``fork``.

Stdlib ``sqlite3`` in worker threads, one connection serialized by the journal's own one-token limiter
(:mod:`agentactors._sqlite`, shared with :class:`~agentactors.sessions.SqliteStore`), in WAL mode, ``BEGIN
IMMEDIATE`` transactions.

**What a commit costs, and why it is safe to pay less.**  A step's commit is a thread hop and a transaction.
``synchronous=NORMAL`` (the default) is the right durability for a journal: in WAL mode a committed transaction
survives the *process* crashing — what recovery is for — and only a power cut or an OS crash may lose the last
commits before the WAL is synced at a checkpoint; ``"FULL"`` pays a disk flush per commit for that case.  Runs
that commit at the same time share the cost: their commits queue for the connection and go together — one hop,
one transaction with a savepoint for each (:mod:`agentactors.journal._group`) — while each run still goes on only
once its own commit is durable.  Fewer commits would not be safe: the response that asks for tools must be
durable before any of them runs (their ids are the idempotency keys), and their results before the next model
call (or a crash would run them again); the start must be there before the first model call, or a crash in it
would leave nothing to recover.  Only the answer rides with the end.

**Leases** (:mod:`agentactors.journal._lease`): each run is leased to the journal object running it, renewed by
a thread; :meth:`SqliteJournal.claim` takes a free one in one transaction, so several processes recovering one
file finish each run once.  **Parking**: :meth:`SqliteJournal.park`, a small durable map beside the runs.

**Layout.**  ``agentactors_runs(run_id PRIMARY KEY, agent, inputs, status, content, started, ended)`` and
``agentactors_steps(run_id, step, response, results, PRIMARY KEY (run_id, step))`` (runs also hold
``parent_run_id``, ``origin``, ``owner``, ``lease_until``; ``agentactors_parked(key, value, updated)``);
``inputs``, ``response`` and ``results`` are JSON in the sessions' lossless codec
(:mod:`agentactors.journal.codec`).  A step whose ``results`` is ``NULL`` asked for tools that were started but
never committed.
"""

from __future__ import annotations

import os
import sqlite3
import time
from functools import partial
from typing import Any, Final, Literal

import anyio
import anyio.to_thread

from .._sqlite import Snapshot, Transaction, Worker, check_options
from ..loop.tape import Commit
from ..messages import Message
from ._group import GroupCommit
from ._lease import Keeper, check_lease, is_free, new_owner
from ._parking import check_key, check_value
from ._rows import Encoded, decode_run, encode
from ._tapes import Tapes
from .children import Orphans
from .records import RecordedRun, RunNotRecordedError
from .store import LeaseLostError

__all__ = ["SqliteJournal"]

_RUNS: Final = "agentactors_runs"
_STEPS: Final = "agentactors_steps"
_PARKED: Final = "agentactors_parked"
_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {_RUNS} ("
    " run_id TEXT PRIMARY KEY NOT NULL, agent TEXT, inputs TEXT NOT NULL, status TEXT NOT NULL,"
    " content TEXT, started REAL NOT NULL, ended REAL, parent_run_id TEXT, origin TEXT, owner TEXT, lease_until REAL)",
    f"CREATE INDEX IF NOT EXISTS {_RUNS}_status ON {_RUNS} (status)",
    f"CREATE TABLE IF NOT EXISTS {_STEPS} ("
    " run_id TEXT NOT NULL, step INTEGER NOT NULL, response TEXT, results TEXT,"
    " PRIMARY KEY (run_id, step))",
    f"CREATE TABLE IF NOT EXISTS {_PARKED} (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL, updated REAL NOT NULL)",
)


class SqliteJournal(Tapes):
    """A step journal in a SQLite file: ``Runtime(journal=SqliteJournal("runs.db"))``.

    :param path: the database file (created if missing; it may be the sessions' file too: the tables differ).
    :param busy_timeout: seconds a commit waits for another connection's write lock.
    :param synchronous: SQLite's ``synchronous``: ``"NORMAL"`` (default), ``"FULL"``, ``"EXTRA"`` or ``"OFF"``.
    :param lease: seconds a run stays leased to this object without a renewal (renewed every third of it while
        the process lives, :mod:`agentactors.journal._lease`); ``recover()`` elsewhere takes a run whose lease
        expired — or at once, one whose process is gone from this machine.
    :raises ValueError: a negative ``busy_timeout``, an unknown ``synchronous``, a ``lease`` under a second.

    Delegated runs (a tool that runs an agent) are journaled with their parent's run id and call, and are
    recovered inside their parent's recovered tool step (:mod:`agentactors.journal.children`); resumed runs
    with their pause and decisions, and are recovered by resuming again.  Also an async context manager.
    """

    __slots__ = (
        "_group", "_keeper", "_mine", "_orphans", "_renewer", "_worker", "busy_timeout", "lease", "owner", "path",
        "synchronous",
    )

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL",
        lease: float = 30.0,
    ) -> None:
        self.busy_timeout, self.synchronous = check_options(busy_timeout, synchronous)
        self.lease = check_lease(lease)
        self.path = os.fspath(path)
        #: This object's lease owner id (host, PID namespace, PID, a nonce).
        self.owner = new_owner()
        # The connection, its thread and its one-token limiter: agentactors._sqlite (shared with SqliteStore).
        options = (self.path, self.busy_timeout, self.synchronous, _setup)
        self._worker = Worker(*options, f"agentactors-sqlite-journal-{id(self)}")
        # The lease keeper's own connection: a renewal never waits behind a commit, nor a commit behind it.
        self._renewer = Worker(*options, f"agentactors-sqlite-lease-{id(self)}")
        self._keeper = Keeper(partial(self._renewer.call_sync, _renew, self.owner, self.lease), self.lease / 3)
        # Concurrent runs' commits share a thread hop and a transaction (agentactors.journal._group).
        self._group: GroupCommit[_Item] = GroupCommit(self._apply_many, f"agentactors-sqlite-group-{id(self)}")
        #: Runs this object opened (running here, not left by a crash): recover() leaves them alone.
        self._mine: set[str] = set()
        #: Recorded children of the runs being recovered, for their parents' re-run tool steps.
        self._orphans = Orphans()

    def __repr__(self) -> str:
        return f"SqliteJournal({self.path!r})"

    async def __aenter__(self) -> SqliteJournal:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- committing (open_run, resume_run and recover: agentactors.journal._tapes) ----------

    async def commit(
        self, run_id: str, agent: str | None, inputs: tuple[Message, ...], commit: Commit, origin: Any = None
    ) -> None:
        """Apply ``commit`` for ``run_id`` in one transaction (a :class:`~agentactors.loop.tape.Commit`).

        ``origin``: where the run came from (:func:`~agentactors.journal.codec.origin_now`), kept with its start.
        Every commit checks (and renews) this object's lease on the run.

        :raises LeaseLostError: another recoverer took the run over (this object's lease had expired).
        :raises JournalFormatError: the commit holds a value past the JSON policy (nothing was written).
        """
        encoded = encode(run_id, inputs, commit, origin)  # before the transaction: a bad value takes no lock
        await self._group.commit((run_id, agent, encoded))
        if commit.end is not None:
            self._mine.discard(run_id)
            self._orphans.forget(run_id)

    # -- reading -----------------------------------------------------------------------------------

    async def load_run(self, run_id: str) -> RecordedRun:
        """The run ``run_id`` as committed.  :raises RunNotRecordedError: the journal has no such run."""
        run = await self._worker.call(_load, run_id)
        if run is None:
            raise RunNotRecordedError(f"the journal {self.path!r} holds no run {run_id!r}")
        return run

    async def unfinished(self) -> list[RecordedRun]:
        """The runs nothing said ended — a crashed process's: not running here, their lease free (expired, or
        its process gone from this machine)."""
        rows = await self._worker.call(_running, time.time())
        runs = []
        for run_id, owner, expired in rows:
            if run_id in self._mine or not is_free(owner, expired, self.owner):
                continue
            run = await self._worker.call(_load, run_id)
            if run is not None and not run.finished:
                runs.append(run)
        return runs

    async def claim(self, run_id: str) -> RecordedRun | None:
        """Lease ``run_id`` (and its unfinished children) to this object, in one transaction, if its lease is
        free: the run as committed then; ``None`` if it ended or another live owner holds it."""
        run = await self._worker.call(_claim, run_id, self.owner, self.lease, time.time())
        if run is not None:
            self._mine.add(run_id)
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
        """
        await self._worker.call(_park, check_key(key), check_value(key, value), time.time())

    async def parked(self, key: str) -> str | None:
        """The JSON text parked under ``key``, or ``None``.

        :raises JournalFormatError: the stored text is not JSON or is past the policy (a damaged row: left as
            it is).
        """
        value = await self._worker.call(_parked, check_key(key))
        return None if value is None else check_value(key, value, stored=True)

    async def unpark(self, key: str) -> None:
        """Forget what is parked under ``key`` (nothing happens if nothing is)."""
        await self._worker.call(_unpark, check_key(key))

    async def aclose(self) -> None:
        """Stop renewing leases and close the connections (the next use opens new ones).  Idempotent.

        The runs still running here keep their lease until it expires: close after they end.
        """
        await anyio.to_thread.run_sync(self._keeper.stop)  # it may be waiting on the database: not on the loop
        await self._renewer.close()
        await self._worker.close()


    async def _apply_many(self, items: list[_Item]) -> list[BaseException | None]:
        return await self._worker.call(_apply_many, items, self.owner, self.lease)


# --- what runs in the worker thread --------------------------------------------------------------------


def _setup(conn: sqlite3.Connection) -> None:
    """Create the tables, or add the columns an older journal lacks (WAL and the rest: :mod:`agentactors._sqlite`)."""
    with Transaction(conn):
        for statement in _SCHEMA:
            conn.execute(statement)
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({_RUNS})")}
        for column, kind in (("parent_run_id", "TEXT"), ("origin", "TEXT"), ("owner", "TEXT"), ("lease_until", "REAL")):
            if column not in columns:  # a journal made before runs had a lineage, or leases
                conn.execute(f"ALTER TABLE {_RUNS} ADD COLUMN {column} {kind}")
        conn.execute(f"CREATE INDEX IF NOT EXISTS {_RUNS}_parent ON {_RUNS} (parent_run_id)")


def _lost(run_id: str) -> LeaseLostError:
    return LeaseLostError(
        f"run {run_id!r} was taken over by another recoverer (this journal's lease on it had expired): "
        "it goes on there",
        run_id=run_id,
    )


#: One run's commit, encoded: ``(run_id, agent, what it writes)``.
_Item = tuple[str, "str | None", Encoded]


def _apply_many(conn: sqlite3.Connection, items: list[_Item], owner: str, lease: float) -> list[BaseException | None]:
    """The commits in one transaction, each under its own savepoint (alone: just its transaction)."""
    if len(items) == 1:
        try:
            with Transaction(conn):
                _write(conn, *items[0], owner, lease)
        except Exception as exc:
            return [exc]
        return [None]
    errors: list[BaseException | None] = []
    with Transaction(conn):
        for item in items:
            conn.execute("SAVEPOINT agentactors_commit")
            try:
                _write(conn, *item, owner, lease)
            except Exception as exc:
                conn.execute("ROLLBACK TO agentactors_commit")
                errors.append(exc)
            else:
                errors.append(None)
            conn.execute("RELEASE agentactors_commit")
    return errors


def _write(conn: sqlite3.Connection, run_id: str, agent: str | None, e: Encoded, owner: str, lease: float) -> None:
    now = time.time()
    if e.begin is not None:
        cursor = conn.execute(
            f"INSERT INTO {_RUNS} (run_id, agent, inputs, status, started, parent_run_id, origin, owner,"
            " lease_until) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)"
            " ON CONFLICT (run_id) DO UPDATE SET status = 'running', ended = NULL,"
            f" lease_until = excluded.lease_until WHERE {_RUNS}.owner = excluded.owner",
            (run_id, agent, e.begin, now, e.parent, e.origin, owner, now + lease),
        )
        if cursor.rowcount != 1:
            raise _lost(run_id)
    else:  # a read, not a write: the keeper renews the lease; the write lock (BEGIN IMMEDIATE) keeps it ours meanwhile
        row = conn.execute(f"SELECT owner FROM {_RUNS} WHERE run_id = ?", (run_id,)).fetchone()
        if row is None or row[0] != owner:
            raise _lost(run_id)
    for n, doc in e.responses:
        conn.execute(
            f"INSERT INTO {_STEPS} (run_id, step, response) VALUES (?, ?, ?)"
            " ON CONFLICT (run_id, step) DO UPDATE SET response = excluded.response",
            (run_id, n, doc),
        )
    if e.results is not None:
        conn.execute(
            f"INSERT INTO {_STEPS} (run_id, step, results) VALUES (?, ?, ?)"
            " ON CONFLICT (run_id, step) DO UPDATE SET results = excluded.results",
            (run_id, e.results[0], e.results[1]),
        )
    if e.end is not None:
        conn.execute(
            f"UPDATE {_RUNS} SET status = ?, content = ?, ended = ? WHERE run_id = ?",
            (e.end, e.content, time.time(), run_id),
        )


def _running(conn: sqlite3.Connection, now: float) -> list[tuple[str, str | None, bool]]:
    rows = conn.execute(  # a child is recovered by its parent's recovery, never on its own
        f"SELECT run_id, owner, lease_until IS NULL OR lease_until < ? FROM {_RUNS}"
        " WHERE status = 'running' AND parent_run_id IS NULL ORDER BY started",
        (now,),
    ).fetchall()
    return [(str(r[0]), r[1], bool(r[2])) for r in rows]


def _load(conn: sqlite3.Connection, run_id: str) -> RecordedRun | None:
    with Snapshot(conn):  # a run and its steps of one commit
        return _load_in(conn, run_id)


def _load_in(conn: sqlite3.Connection, run_id: str) -> RecordedRun | None:
    row = conn.execute(
        f"SELECT agent, inputs, status, content, origin FROM {_RUNS} WHERE run_id = ?", (run_id,)
    ).fetchone()
    if row is None:
        return None
    steps = conn.execute(
        f"SELECT step, response, results FROM {_STEPS} WHERE run_id = ? ORDER BY step", (run_id,)
    ).fetchall()
    ids = conn.execute(f"SELECT run_id FROM {_RUNS} WHERE parent_run_id = ? ORDER BY started", (run_id,)).fetchall()
    children = tuple(c for c in (_load_in(conn, str(r[0])) for r in ids) if c is not None)
    return decode_run(run_id, tuple(row), steps, children)


def _claim(conn: sqlite3.Connection, run_id: str, owner: str, lease: float, now: float) -> RecordedRun | None:
    with Transaction(conn):  # BEGIN IMMEDIATE: of several claimers, one at a time
        row = conn.execute(
            f"SELECT status, owner, lease_until IS NULL OR lease_until < ? FROM {_RUNS} WHERE run_id = ?",
            (now, run_id),
        ).fetchone()
        if row is None or row[0] != "running" or not is_free(row[1], bool(row[2]), owner):
            return None
        conn.execute(  # the run and its unfinished children: their begins, when started again, are this owner's
            f"WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT r.run_id FROM {_RUNS} r"
            " JOIN tree ON r.parent_run_id = tree.id)"
            f" UPDATE {_RUNS} SET owner = ?, lease_until = ? WHERE run_id IN (SELECT id FROM tree)"
            " AND status = 'running'",
            (run_id, owner, now + lease),
        )
        return _load_in(conn, run_id)


def _renew(conn: sqlite3.Connection, owner: str, lease: float) -> None:
    with Transaction(conn):
        conn.execute(
            f"UPDATE {_RUNS} SET lease_until = ? WHERE owner = ? AND status = 'running'", (time.time() + lease, owner)
        )


def _park(conn: sqlite3.Connection, key: str, value: str, now: float) -> None:
    with Transaction(conn):
        conn.execute(
            f"INSERT INTO {_PARKED} (key, value, updated) VALUES (?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated = excluded.updated",
            (key, value, now),
        )


def _parked(conn: sqlite3.Connection, key: str) -> Any:
    row = conn.execute(f"SELECT value FROM {_PARKED} WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def _unpark(conn: sqlite3.Connection, key: str) -> None:
    with Transaction(conn):
        conn.execute(f"DELETE FROM {_PARKED} WHERE key = ?", (key,))

