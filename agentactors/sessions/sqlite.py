"""``SqliteStore``: sessions in a SQLite database file, shared safely by runtimes and processes.

A session store must be durable (a conversation outlives the process), shareable (two processes on
one file must never lose each other's turns) and cheap to leave idle (100,000 dormant conversations
should cost a file, not memory).  SQLite is all three and ships with Python.

**Why stdlib** ``sqlite3`` **in worker threads, not an async driver.**  Every async SQLite driver
(aiosqlite and its kin) is itself ``sqlite3`` on a thread, usually asyncio-only — this library runs
on trio too — and one more dependency.  Doing the same here with ``anyio.to_thread.run_sync`` works
on both backends, and costs one thread hop per load or commit.  The store has its own
:class:`anyio.CapacityLimiter` of one token (per event loop): its calls queue for *its* thread
instead of taking slots of anyio's default pool, which the rest of the process shares — and one
connection does all the work, in turn, under a lock (SQLite serializes writers anyway).

**How a commit stays safe across processes.**

* The database is in WAL mode (readers never block the writer and are not blocked by it), with a
  ``busy_timeout`` so a writer waits for another process's transaction instead of failing at once.
* A commit is one transaction (``BEGIN IMMEDIATE``: the write lock is taken at the start, so two
  writers serialize rather than deadlock on an upgrade) that checks the stored version is the
  expected one, then ``UPDATE ... SET version = version + 1`` and appends the turn's messages — or,
  for a new session, ``INSERT OR IGNORE``.  Another version (or no row changed) means another commit
  came first: the transaction is rolled back and :class:`~agentactors.errors.SessionConflictError`
  raised.  This is optimistic versioning; no lock
  is held between a session's load and its commit, so a crashed process leaves nothing locked.
* ``synchronous`` defaults to ``NORMAL``, SQLite's usual choice for WAL: a committed turn survives
  the process crashing; the last turns before a power cut may not (``FULL`` makes every commit
  wait for the disk).

**Layout.**  A table ``agentactors_sessions(key PRIMARY KEY, version, body, updated)`` — ``body`` is
the record's JSON document (:mod:`agentactors.sessions.format`, with its own format version, migrated
when read) without its messages, ``updated`` a wall-clock timestamp for the operator (expiring old
sessions is a ``DELETE`` away); a table ``agentactors_messages(key, start, body)`` holding the
messages, one row a commit (the messages it added; ``start``: the index of the first); and a table
``agentactors_meta`` holding the layout version of those tables.

**Append-only.**  A commit whose record extends the stored history (``SessionRecord.kept``: the
session's actor sets it) writes the document and one row of messages — the turn — in its
transaction: its cost does not grow with the conversation.  Anything else (a trimmed history, a row
of the whole-record layout, whose document holds its messages) is written whole, once.  A file of
the whole-record layout (format 2 documents, no messages table) needs no migration step: each row is
read as it is and rewritten at its session's next commit; the layout version stays 1, since the new
table only adds to it (a process of the older version refuses a row written in format 3 —
:class:`~agentactors.errors.SessionFormatError` — rather than misreading it).  A version cell that is
not an integer >= 1 is a ``SessionFormatError`` naming the key, never coerced.  A database
whose layout is newer than this version knows is refused when opened
(:class:`~agentactors.errors.SessionFormatError`), before anything is written.

**Lifetime.**  The connection opens on first use and closes on :meth:`SqliteStore.aclose` (a
:class:`~agentactors.actors.runtime.Runtime` closes the stores its sessions used when it exits); a
store used again after that opens a new one.  A store object serves one event loop at a time;
several stores (in several processes or threads) may share one file.
"""

from __future__ import annotations

import os
import sqlite3
import time
from functools import partial
from typing import Any, Final, Literal

from .._sqlite import Snapshot, Transaction, Worker, check_options
from ..errors import SessionConflictError, SessionFormatError
from .format import dump_head, dump_messages, load_record, stored_count
from .store import SessionRecord, conflict_message

__all__ = ["LAYOUT", "SqliteStore"]

#: The version of the tables' layout this version writes (kept in ``agentactors_meta``).
LAYOUT: Final = 1
_TABLE: Final = "agentactors_sessions"
_META: Final = "agentactors_meta"
_PIECES: Final = "agentactors_messages"

_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {_TABLE} ("
    " key TEXT PRIMARY KEY NOT NULL,"
    " version INTEGER NOT NULL,"
    " body TEXT NOT NULL,"
    " updated REAL NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {_META} (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {_PIECES} ("
    " key TEXT NOT NULL,"
    " start INTEGER NOT NULL,"
    " body TEXT NOT NULL,"
    " PRIMARY KEY (key, start))",
)


class SqliteStore:
    """A :class:`~agentactors.sessions.store.SessionStore` in a SQLite file: ``SqliteStore("sessions.db")``.

    :param path: the database file (created if missing; ``":memory:"`` for a private in-memory one).
    :param busy_timeout: seconds a commit waits for another connection's write lock before it fails
        with ``sqlite3.OperationalError`` ("database is locked").
    :param synchronous: SQLite's ``synchronous`` setting: ``"NORMAL"`` (the default; see the module
        docstring), ``"FULL"`` or ``"EXTRA"`` for power-cut durability, ``"OFF"`` for none.

    Also an async context manager (``async with SqliteStore(path) as store:`` closes it on exit).

    :raises ValueError: a negative ``busy_timeout``, an unknown ``synchronous``.
    """

    __slots__ = ("_worker", "busy_timeout", "path", "synchronous")

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL",
    ) -> None:
        self.busy_timeout, self.synchronous = check_options(busy_timeout, synchronous)
        self.path = os.fspath(path)
        # The connection, its thread and its one-token limiter: agentactors._sqlite (shared with the journal).
        setup, name = partial(_setup, self.path), f"agentactors-sqlite-store-{id(self)}"
        self._worker = Worker(self.path, self.busy_timeout, self.synchronous, setup, name)

    @property
    def _conn(self) -> sqlite3.Connection | None:
        """The open connection, or ``None`` (for this package's tests)."""
        return self._worker.conn

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r}{', open' if self._worker.conn is not None else ''})"

    async def __aenter__(self) -> SqliteStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the port -----------------------------------------------------------------------------------

    async def load(self, key: str) -> SessionRecord | None:
        """The record for ``key`` or ``None`` (an older stored format is migrated as it is read).

        :raises SessionFormatError: the stored record (or the database's layout) is newer than this
            version reads, or is not a session.

        Cancellation: the query runs in a worker thread and is not interrupted: a cancelled caller
        waits for it (a read: milliseconds) and then sees the cancellation.
        """
        return await self._worker.call(_load, key)

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        """Store ``record`` in one transaction if the stored version is ``expected_version``.

        :raises SessionConflictError: another commit came first (nothing was written).
        :raises TypeError: the record holds a value JSON cannot keep.
        :raises SessionFormatError: the record holds a value past the JSON depth and integer limits
            (:mod:`agentactors._json`), which could not be read back; or the stored version cell is
            corrupted.  Nothing was written.
        :raises sqlite3.OperationalError: the write lock stayed taken past ``busy_timeout``, or the
            disk failed (the transaction was rolled back).

        Cancellation: not interrupted once started — a cancelled caller waits for the transaction to
        end (at most ``busy_timeout`` waiting for the lock, then the write) and then sees the
        cancellation.  So the commit happened entirely or not at all, and the caller cannot tell
        which from the cancellation alone: a session shields its commits and knows.
        """
        if not isinstance(record, SessionRecord):
            raise TypeError(f"commit() takes a SessionRecord, not {type(record).__name__}")
        return await self._worker.call(_commit, record, expected_version)

    async def delete(self, key: str, *, expected_version: int | None = None) -> bool:
        """Forget ``key`` (only at ``expected_version``, if given), in one transaction.

        Cancellation: as :meth:`commit`.
        """
        return await self._worker.call(_delete, key, expected_version)

    async def aclose(self) -> None:
        """Close the connection (the next use opens a new one).  Idempotent.

        Cancellation: waits for a statement that is running to end, then closes; not interrupted.
        """
        await self._worker.close()


# --- what runs in the worker thread ------------------------------------------------------------------


def _setup(path: str, conn: sqlite3.Connection) -> None:
    """Create or check the tables (the connection is in WAL mode already: :mod:`agentactors._sqlite`)."""
    with Transaction(conn):
        for statement in _SCHEMA:
            conn.execute(statement)
        row = conn.execute(f"SELECT value FROM {_META} WHERE name = 'layout'").fetchone()
        if row is None:
            conn.execute(f"INSERT INTO {_META} (name, value) VALUES ('layout', ?)", (LAYOUT,))
        elif row[0] != LAYOUT:
            raise SessionFormatError(
                f"the session database {path!r} has layout {row[0]}, which this agentactors does not read "
                f"(it reads {LAYOUT}): upgrade agentactors (the file was left as it is)",
                found=row[0],
            )


def _load(conn: sqlite3.Connection, key: str) -> SessionRecord | None:
    with Snapshot(conn):
        row = conn.execute(f"SELECT version, body FROM {_TABLE} WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        pieces = [p for (p,) in conn.execute(f"SELECT body FROM {_PIECES} WHERE key = ? ORDER BY start", (key,))]
    return load_record(row[1], key=key, version=_version(key, row[0]), pieces=pieces)


def _version(key: str, cell: Any) -> int:
    """A stored version, which must be an integer >= 1: anything else is a corrupted row, never coerced.

    (``2.5`` read as 2 would make every later commit of the session conflict, for ever.)
    """
    if isinstance(cell, int) and cell >= 1:
        return cell
    raise SessionFormatError(
        f"stored session {key!r} has a corrupted version {cell!r} (an integer >= 1 is expected): "
        "it was left as it is",
        key=key,
    )


def _found(conn: sqlite3.Connection, key: str) -> int | None:
    row = conn.execute(f"SELECT version FROM {_TABLE} WHERE key = ?", (key,)).fetchone()
    return None if row is None else _version(key, row[0])


def _commit(conn: sqlite3.Connection, record: SessionRecord, expected: int | None) -> SessionRecord:
    key, messages, kept = record.key, record.messages, record.kept
    # Encoded before the transaction: an unstorable value never takes the lock.  A turn that extends the
    # stored history (kept) writes only its own messages — the usual case; anything else writes them all.
    head = dump_head(record)
    appended = dump_messages(key, messages[kept:]) if expected is not None and kept else None
    whole = None if appended is not None else dump_messages(key, messages)
    now = time.time()
    with Transaction(conn):
        if expected is None:
            cursor = conn.execute(
                f"INSERT OR IGNORE INTO {_TABLE} (key, version, body, updated) VALUES (?, 1, ?, ?)", (key, head, now)
            )
            if cursor.rowcount != 1:
                raise SessionConflictError(conflict_message(key, _found(conn, key), expected), key=key)
        else:
            row = conn.execute(f"SELECT version, body FROM {_TABLE} WHERE key = ?", (key,)).fetchone()
            if row is None or row[0] != expected:
                raise SessionConflictError(conflict_message(key, _found(conn, key), expected), key=key)
            if appended is not None and stored_count(row[1], key=key) != kept:
                appended, whole = None, dump_messages(key, messages)  # an older document: written whole once
            conn.execute(
                f"UPDATE {_TABLE} SET version = version + 1, body = ?, updated = ? WHERE key = ?", (head, now, key)
            )
        if appended is not None:
            if len(messages) > kept:
                conn.execute(f"INSERT INTO {_PIECES} (key, start, body) VALUES (?, ?, ?)", (key, kept, appended))
        else:
            conn.execute(f"DELETE FROM {_PIECES} WHERE key = ?", (key,))
            if messages:
                conn.execute(f"INSERT INTO {_PIECES} (key, start, body) VALUES (?, 0, ?)", (key, whole))
    return SessionRecord(key, messages, (expected or 0) + 1, record.paused, record.run_id)


def _delete(conn: sqlite3.Connection, key: str, expected: int | None) -> bool:
    with Transaction(conn):
        if expected is None:
            cursor = conn.execute(f"DELETE FROM {_TABLE} WHERE key = ?", (key,))
        else:
            cursor = conn.execute(f"DELETE FROM {_TABLE} WHERE key = ? AND version = ?", (key, expected))
        deleted = cursor.rowcount > 0
        if deleted:
            conn.execute(f"DELETE FROM {_PIECES} WHERE key = ?", (key,))
    return deleted

