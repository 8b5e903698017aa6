"""``SqliteJournal``: each step of each run committed to a SQLite file as it completes.

``Runtime(journal=SqliteJournal("runs.db"))``: every run started in the runtime (delegated and resumed too) gets a
:class:`~agentactors.loop.tape.Tape` whose writer is this journal, so the loop commits — each in one
transaction, before the run goes on (:mod:`agentactors.loop.tape` says when) — the run's start (its id, agent
and input), each model response, each tool step's results, and how the run ended.  What a crash leaves
(runs still ``"running"``) is what :meth:`SqliteJournal.unfinished` lists and ``rt.recover()`` finishes; any
run can be read back (:meth:`SqliteJournal.load_run`) for ``replay`` and ``fork``.

Stdlib ``sqlite3`` in worker threads, one connection serialized by the journal's own one-token limiter
(:mod:`agentactors._sqlite`, shared with :class:`~agentactors.sessions.SqliteStore`), in WAL mode, ``BEGIN
IMMEDIATE`` transactions.  What it does as the PostgreSQL journal does (reading, claiming, leases, parking) is
:mod:`agentactors.journal._sql`; this module keeps its SQLite: the tables, and how a batch of commits is written.

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

**Failures**: a call the database fails — locked by another process past ``busy_timeout`` (before the first use
or mid-run), a full disk, a disk error, a read-only or damaged file — raises :class:`SqliteJournalError` naming the
path (:mod:`agentactors._sqlite`), nothing of it written, what was committed before kept; a batch's commit gets
its own.  A path SQLite cannot open as a database at all — its directory missing, a directory, a file that is not a
database — raises :class:`SqliteJournalConnectionError` (a ``SqliteJournalError``, and a ``ConnectionError``: what
it raised before).

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
from collections.abc import Callable
from functools import partial
from typing import Final, Literal

from .._sqlite import DIALECT, Transaction, Worker, check_options, database_path, moved, shown_path, typed
from ._lease import check_lease
from ._rows import Encoded
from ._sql import PARKED, RUNS, STEPS, Item, SqlJournal, lost
from .records import JournalError

__all__ = ["SqliteJournal", "SqliteJournalConnectionError", "SqliteJournalError"]


class SqliteJournalError(JournalError, sqlite3.OperationalError):
    """A :class:`SqliteJournal`'s database failed a call: locked by another connection past ``busy_timeout``
    (before the journal's first use, or mid-run: what ends a shielded commit), a full disk, a disk error, a
    read-only or a damaged file.

    Its text names the file and SQLite's reason with what it means; ``path`` is the file (as the journal opens it, a
    URI's key masked), ``sqlite_errorname`` and ``sqlite_errorcode`` SQLite's name and number for the failure
    (``"SQLITE_BUSY"``, ``"SQLITE_FULL"``, ``"SQLITE_IOERR"``, ``"SQLITE_READONLY"``, ``"SQLITE_CORRUPT"``...),
    sqlite3's own error its ``__cause__``.  Also a ``sqlite3.OperationalError`` — what the journal raised before —
    so ``except sqlite3.OperationalError`` catches it still.  A commit that failed wrote nothing (its transaction
    was rolled back), what was committed before is kept, and the journal goes on: its next call tries again, and
    :meth:`SqliteJournal.aclose` closes it.
    """

    def __init__(self, message: str, *, path: str | None = None, errorname: str = "", errorcode: int = -1) -> None:
        super().__init__(message)
        self.path = path
        self.sqlite_errorname = errorname
        self.sqlite_errorcode = errorcode


class SqliteJournalConnectionError(SqliteJournalError, ConnectionError):
    """A :class:`SqliteJournal`'s path cannot be opened as a database at all: its directory is missing, it is a
    directory, or the file there is not a database (``sqlite_errorname`` ``"SQLITE_CANTOPEN"``,
    ``"SQLITE_NOTADB"``).

    A :class:`SqliteJournalError` — so ``except JournalError`` around a journaled run catches it — and a
    :class:`ConnectionError`, what the journal raised before (as a PostgreSQL journal's server it cannot reach
    is), so ``except ConnectionError`` catches it still; like every ``SqliteJournalError``, a
    ``sqlite3.OperationalError`` too.  Its text is ``could not open the SQLite database <path>: <SQLite's reason>``;
    ``path`` is that path, ``sqlite_errorname`` SQLite's name for it, sqlite3's own error its ``__cause__``.
    Nothing was written; the journal's next call tries to open the path again.
    """


_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {RUNS} ("
    " run_id TEXT PRIMARY KEY NOT NULL, agent TEXT, inputs TEXT NOT NULL, status TEXT NOT NULL,"
    " content TEXT, started REAL NOT NULL, ended REAL, parent_run_id TEXT, origin TEXT, owner TEXT, lease_until REAL)",
    f"CREATE INDEX IF NOT EXISTS {RUNS}_status ON {RUNS} (status)",
    f"CREATE TABLE IF NOT EXISTS {STEPS} ("
    " run_id TEXT NOT NULL, step INTEGER NOT NULL, response TEXT, results TEXT,"
    " PRIMARY KEY (run_id, step))",
    f"CREATE TABLE IF NOT EXISTS {PARKED} (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL, updated REAL NOT NULL)",
)


class SqliteJournal(SqlJournal):
    """A step journal in a SQLite file: ``Runtime(journal=SqliteJournal("runs.db"))``.

    :param path: the database file (created if missing; it may be the sessions' file too: the tables differ).
    :param busy_timeout: seconds a commit waits for another connection's write lock, then fails with
        :class:`SqliteJournalError` ("database is locked"; nothing written; also a ``sqlite3.OperationalError``):
        what ends a shielded commit on a file another process keeps locked.  SQLite waits at most 2**31 - 1 ms
        (about 24.8 days).
    :param synchronous: SQLite's ``synchronous``: ``"NORMAL"`` (default), ``"FULL"``, ``"EXTRA"`` or ``"OFF"``.
    :param lease: seconds a run stays leased to this object without a renewal (renewed every third of it while
        the process lives, :mod:`agentactors.journal._lease`); ``recover()`` elsewhere takes a run whose lease
        expired — or at once, one whose process is gone from this machine.
    :raises ValueError: a negative ``busy_timeout``, an unknown ``synchronous``, a ``lease`` under a second.

    Delegated runs (a tool that runs an agent) are journaled with their parent's run id and call, and are
    recovered inside their parent's recovered tool step (:mod:`agentactors.journal.children`); resumed runs
    with their pause and decisions, and are recovered by resuming again.  Also an async context manager.
    """

    __slots__ = ("busy_timeout", "path", "synchronous")

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL",
        lease: float = 30.0,
    ) -> None:
        self.busy_timeout, self.synchronous = check_options(busy_timeout, synchronous)
        lease = check_lease(lease)
        self.path = os.fspath(path)
        where = database_path(self.path)
        # Its connections, their thread and one-token limiter: agentactors._sqlite (shared with SqliteStore); what
        # sqlite3's errors become — raised, or a batch's commit's own — SqliteJournalError, naming the file.
        errors = typed(SqliteJournalError, "journal", where, self.busy_timeout)
        worker = partial(
            Worker, where, self.busy_timeout, self.synchronous, _setup, typed=errors,
            unopenable=SqliteJournalConnectionError,
        )
        super().__init__(lease, DIALECT, partial(_apply_many, errors), worker, "sqlite")

    def __repr__(self) -> str:
        return f"SqliteJournal({shown_path(self.path)!r})"

    def _where(self) -> str:
        return self.path


# --- what runs in the worker thread --------------------------------------------------------------------


def _setup(conn: sqlite3.Connection) -> None:
    """Create the tables, or add the columns an older journal lacks (WAL and the rest: :mod:`agentactors._sqlite`)."""
    with Transaction(conn):
        for statement in _SCHEMA:
            conn.execute(statement)
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({RUNS})")}
        for column, kind in (("parent_run_id", "TEXT"), ("origin", "TEXT"), ("owner", "TEXT"), ("lease_until", "REAL")):
            if column not in columns:  # a journal made before runs had a lineage, or leases
                conn.execute(f"ALTER TABLE {RUNS} ADD COLUMN {column} {kind}")
        conn.execute(f"CREATE INDEX IF NOT EXISTS {RUNS}_parent ON {RUNS} (parent_run_id)")


def _apply_many(
    errors: Callable[[Exception], Exception | None],
    conn: sqlite3.Connection,
    items: list[Item],
    owner: str,
    lease: float,
) -> list[BaseException | None]:
    """The commits in one transaction, each under its own savepoint (alone: just its transaction); a commit's
    own failure is its outcome, sqlite3's error made typed by ``errors`` (:class:`SqliteJournalError`).

    :raises JournalError: the journal's file was deleted or replaced since the connection opened it: a commit
        there would be acknowledged and lost (:func:`agentactors._sqlite.moved`), so none is made.
    """
    problem = moved(conn)
    if problem is not None:
        raise JournalError(
            f"the journal file {problem} while this journal had it open: its commits would be lost, so none is "
            "made (restore the file, or open the journal again)"
        )
    if len(items) == 1:
        try:
            with Transaction(conn):
                _write(conn, *items[0], owner, lease)
        except Exception as exc:
            return [errors(exc) or exc]
        return [None]
    outcomes: list[BaseException | None] = []
    with Transaction(conn):
        for item in items:
            conn.execute("SAVEPOINT agentactors_commit")
            try:
                _write(conn, *item, owner, lease)
            except Exception as exc:
                conn.execute("ROLLBACK TO agentactors_commit")
                outcomes.append(errors(exc) or exc)
            else:
                outcomes.append(None)
            conn.execute("RELEASE agentactors_commit")
    return outcomes


def _write(conn: sqlite3.Connection, run_id: str, agent: str | None, e: Encoded, owner: str, lease: float) -> None:
    now = time.time()
    if e.begin is not None:
        cursor = conn.execute(
            f"INSERT INTO {RUNS} (run_id, agent, inputs, status, started, parent_run_id, origin, owner,"
            " lease_until) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)"
            " ON CONFLICT (run_id) DO UPDATE SET status = 'running', ended = NULL,"
            f" lease_until = excluded.lease_until WHERE {RUNS}.owner = excluded.owner",
            (run_id, agent, e.begin, now, e.parent, e.origin, owner, now + lease),
        )
        if cursor.rowcount != 1:
            raise lost(run_id)
    else:  # a read, not a write: the keeper renews the lease; the write lock (BEGIN IMMEDIATE) keeps it ours meanwhile
        row = conn.execute(f"SELECT owner FROM {RUNS} WHERE run_id = ?", (run_id,)).fetchone()
        if row is None or row[0] != owner:
            raise lost(run_id)
    for n, doc in e.responses:
        conn.execute(
            f"INSERT INTO {STEPS} (run_id, step, response) VALUES (?, ?, ?)"
            " ON CONFLICT (run_id, step) DO UPDATE SET response = excluded.response",
            (run_id, n, doc),
        )
    if e.results is not None:
        conn.execute(
            f"INSERT INTO {STEPS} (run_id, step, results) VALUES (?, ?, ?)"
            " ON CONFLICT (run_id, step) DO UPDATE SET results = excluded.results",
            (run_id, e.results[0], e.results[1]),
        )
    if e.end is not None:
        conn.execute(
            f"UPDATE {RUNS} SET status = ?, content = ?, ended = ? WHERE run_id = ?",
            (e.end, e.content, time.time(), run_id),
        )

