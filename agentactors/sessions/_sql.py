"""What both SQL session stores do the same way: the port's methods, and the statements of a load and a commit.

:class:`~agentactors.sessions.SqliteStore` and :class:`~agentactors.sessions.PostgresStore` keep the same tables
(``agentactors_sessions``, ``agentactors_messages``, ``agentactors_meta``) and the same rules — optimistic
versions, append-only turns, the layout checked when a connection opens — so those live here once, the
statements written with ``:name`` parameters.  Each store brings its connection (:mod:`agentactors._db_worker`)
and its database's :class:`~agentactors._dialect.Dialect` (how it spells a parameter and the clock, how it locks
the row a commit checks, its transactions).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any, Final, Self

import attrs

from .._db_worker import Worker
from .._dialect import Dialect
from ..errors import SessionConflictError, SessionFormatError
from .format import dump_head, dump_messages, load_record, stored_head
from .store import SessionRecord, check_expected, check_key, conflict_message, new_origin, origin_conflict

log = logging.getLogger("agentactors.sessions")

__all__ = ["LAYOUT", "META", "PIECES", "TABLE", "SqlStore", "check_layout"]

#: The version of the tables' layout this version writes (kept in ``agentactors_meta``).
LAYOUT: Final = 1
TABLE: Final = "agentactors_sessions"
META: Final = "agentactors_meta"
PIECES: Final = "agentactors_messages"


class SqlStore:
    """A :class:`~agentactors.sessions.store.SessionStore` in a SQL database: what the SQLite and PostgreSQL
    stores share (their connection: :mod:`agentactors._db_worker`; their SQL: :mod:`agentactors._dialect`).

    Also an async context manager (``async with store:`` closes it on exit).
    """

    __slots__ = ("__weakref__", "_dialect", "_guard", "_worker")

    def __init__(self, worker: Worker[Any], dialect: Dialect, guard: Callable[[Any], None] | None = None) -> None:
        """``guard``, if given, is called with the connection (in the worker thread) before each write, and raises
        if writing there would be lost (SQLite: the file was deleted or replaced under the connection)."""
        self._worker = worker
        self._dialect = dialect
        self._guard = guard
        # A store nobody closed (one given only to rt.recover, or made in passing) closes its connection when it is
        # collected, as a journal does — not left to the connection's own finaliser (Python 3.13 and psycopg warn).
        # Not at the interpreter's exit: a worker thread may hold the connection's lock there, and exit must not wait.
        weakref.finalize(self, _close_collected, worker).atexit = False

    async def __aenter__(self) -> Self:
        """``async with store:`` — the store itself (its connection opens on first use).

        Cancellation: not a cancellation point (it awaits nothing).
        """
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Leaving the block closes the store (:meth:`aclose`); an exception of the block propagates.

        Cancellation: as :meth:`aclose`, shielded and bounded — a block left by a cancellation still closes the
        store, then the cancellation goes on.
        """
        await self.aclose()

    async def load(self, key: str) -> SessionRecord | None:
        """The record for ``key`` or ``None`` (an older stored format is migrated as it is read).

        :raises SessionFormatError: the stored record (or the database's layout) is newer than this
            version reads, or is not a session.
        :raises ValueError: a key no store keeps (:func:`~agentactors.sessions.store.check_key`: a NUL, which
            PostgreSQL's text refuses, or a lone surrogate) — before any I/O, in both databases alike.
        :raises SqliteStoreError: (SQLite) the database failed: locked past ``busy_timeout`` (a new file another
            process holds), a damaged file... (as :meth:`commit`).

        Cancellation: the query runs in a worker thread and is not interrupted: a cancelled caller
        waits for it (a read: milliseconds) and then sees the cancellation.
        """
        return await self._worker.call(_load, self._dialect, check_key(key))

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        """Store ``record`` in one transaction if the stored version is ``expected_version``.

        :raises SessionConflictError: another commit came first, or the key was deleted and created again
            since ``record.origin`` was read (nothing was written).
        :raises TypeError: the record holds a value JSON cannot keep, or is not a record; an ``expected_version``
            that is not ``None`` nor an int (:func:`~agentactors.sessions.store.check_expected`), before any I/O.
        :raises ValueError: a negative ``expected_version``.  (Its key was checked when it was made:
            :class:`~agentactors.sessions.store.SessionRecord`; a NUL in its text is JSON's ``\\u0000``, kept.)
        :raises SessionFormatError: the record holds a value past the JSON depth and integer limits
            (:mod:`agentactors._json`), which could not be read back; or the stored version cell is
            corrupted.  Nothing was written.
        :raises SessionError: (SQLite) the store's file was deleted or replaced since its connection opened it:
            a commit there would be acknowledged and lost, so none is made.
        :raises SqliteStoreError: (SQLite: :mod:`agentactors.sessions.sqlite`, also a ``sqlite3.OperationalError``)
            the write lock stayed taken past ``busy_timeout``, or the disk failed, or the file is read-only or
            damaged — naming the file (the transaction was rolled back).
        :raises PostgresStoreError: (PostgreSQL: :mod:`agentactors.sessions.postgres`, also psycopg's
            ``LockNotAvailable``, ``QueryCanceled``, ``OperationalError`` it replaces) a row lock held past
            ``lock_timeout``, a statement past ``statement_timeout``, or a server that did not answer within that
            bound or dropped the connection (``docs/durability.md``).

        Cancellation: not interrupted once started — a cancelled caller waits for the transaction to
        end (SQLite: at most ``busy_timeout`` waiting for the lock, then the write; PostgreSQL: at most
        its timeouts) and then sees the cancellation.  So the commit happened entirely or not at all, and
        the caller cannot tell which from the cancellation alone: a session shields its commits and knows.
        """
        if not isinstance(record, SessionRecord):
            raise TypeError(f"commit() takes a SessionRecord, not {type(record).__name__}")
        return await self._worker.call(_commit, self._dialect, self._guard, record, check_expected(expected_version))

    async def delete(self, key: str, *, expected_version: int | None = None) -> bool:
        """Forget ``key`` (only at ``expected_version``, if given), in one transaction.

        :raises ValueError: a key no store keeps, as :meth:`load`; a negative ``expected_version``.
        :raises TypeError: an ``expected_version`` that is not ``None`` nor an int.
        :raises SessionError: (SQLite) the store's file was deleted or replaced, as :meth:`commit`; its database
            failed (:class:`~agentactors.sessions.sqlite.SqliteStoreError`), as :meth:`commit`.

        Cancellation: as :meth:`commit`.
        """
        return await self._worker.call(
            _delete, self._dialect, self._guard, check_key(key), check_expected(expected_version)
        )

    async def aclose(self) -> None:
        """Close the connection (the next use opens a new one).  Idempotent.

        Cancellation: shielded and bounded.  A caller already cancelled, or cancelled while it waits for a
        statement that is running to end, still closes the connection: it waits for that statement at most
        ``CLOSE_TIMEOUT`` (:mod:`agentactors._db_worker`, 10 s), and past that returns, the connection closed in
        the background as soon as the statement returns (its own bounds end it: ``busy_timeout``, PostgreSQL's
        timeouts).  A store collected closes its connection then.
        """
        await self._worker.close()


def _close_collected(worker: Worker[Any]) -> None:
    """A collected store's connection, closed (a finaliser: no store is left to use it; it must not raise)."""
    try:
        worker.close_sync()
    except Exception as exc:
        log.debug("closing a collected session store's connection raised %s", type(exc).__name__)


# --- what runs in the worker thread ------------------------------------------------------------------


def check_layout(conn: Any, d: Dialect, database: str, kept: str) -> None:
    """Write the layout version into a new database, or refuse one of another layout (in the setup's
    transaction).  ``database`` names it in the error, ``kept`` says what was left as it is."""
    row = conn.execute(f"SELECT value FROM {META} WHERE name = 'layout'").fetchone()
    if row is None:
        conn.execute(d.sql(f"INSERT INTO {META} (name, value) VALUES ('layout', :layout)"), {"layout": LAYOUT})
    elif row[0] != LAYOUT:
        raise SessionFormatError(
            f"the session database{database} has layout {row[0]}, which this agentactors does not read "
            f"(it reads {LAYOUT}): upgrade agentactors (the {kept} was left as it is)",
            found=row[0],
        )


#: Past the largest version a commit can bump: ``version + 1`` of 2**63 - 1 overflows the 64-bit column
#: (SQLite would store a REAL — a session that never loads again —, PostgreSQL refuses the statement).
_VERSION_LIMIT: Final = 2**63 - 1


def _version(key: str, cell: Any) -> int:
    """A stored version, which must be an integer from 1 to 2**63 - 2: anything else is a corrupted row, never
    coerced.

    (``2.5`` read as 2 would make every later commit of the session conflict, for ever; 2**63 - 1, only ever set
    by hand, cannot be bumped — refused here, before the commit's ``UPDATE``, as one that loads is.)
    """
    if isinstance(cell, int) and not isinstance(cell, bool) and 1 <= cell < _VERSION_LIMIT:
        return cell
    raise SessionFormatError(
        f"stored session {key!r} has a corrupted version {cell!r} (an integer from 1 to 2**63 - 2 is expected): "
        "it was left as it is",
        key=key,
    )


_HEAD: Final = f"SELECT version, body FROM {TABLE} WHERE key = :key"
_PIECES_OF: Final = f"SELECT body FROM {PIECES} WHERE key = :key ORDER BY start"
_FOUND: Final = f"SELECT version FROM {TABLE} WHERE key = :key"
_CREATE: Final = (  # a second creator inserts no row: a conflict
    f"INSERT INTO {TABLE} (key, version, body, updated) VALUES (:key, 1, :head, :now) ON CONFLICT (key) DO NOTHING"
)
_BUMP: Final = f"UPDATE {TABLE} SET version = version + 1, body = :head, updated = :now WHERE key = :key"
_APPEND: Final = f"INSERT INTO {PIECES} (key, start, body) VALUES (:key, :start, :body)"
_FORGET_PIECES: Final = f"DELETE FROM {PIECES} WHERE key = :key"
_DELETE: Final = f"DELETE FROM {TABLE} WHERE key = :key"
_DELETE_AT: Final = f"DELETE FROM {TABLE} WHERE key = :key AND version = :version"


def _load(conn: Any, d: Dialect, key: str) -> SessionRecord | None:
    with d.snapshot(conn):  # a document and its pieces of one commit
        row = conn.execute(d.sql(_HEAD), {"key": key}).fetchone()
        if row is None:
            return None
        pieces = [p for (p,) in conn.execute(d.sql(_PIECES_OF), {"key": key})]
    return load_record(row[1], key=key, version=_version(key, row[0]), pieces=pieces)


def _found(conn: Any, d: Dialect, key: str) -> int | None:
    row = conn.execute(d.sql(_FOUND), {"key": key}).fetchone()
    return None if row is None else _version(key, row[0])


def _commit(
    conn: Any, d: Dialect, guard: Callable[[Any], None] | None, record: SessionRecord, expected: int | None
) -> SessionRecord:
    key, messages, kept = record.key, record.messages, record.kept
    # Encoded before the transaction: an unstorable value never takes the lock.  A turn that extends the
    # stored history (kept) writes only its own messages — the usual case; anything else writes them all.
    # The origin is the record's (a new session's own, if it names none); a stored one wins below.
    origin = record.origin or new_origin()
    head = dump_head(attrs.evolve(record, origin=origin))
    appended = dump_messages(key, messages[kept:]) if expected is not None and kept else None
    whole = None if appended is not None else dump_messages(key, messages)
    params = d.params(key=key, head=head)
    if guard is not None:
        guard(conn)
    with d.transaction(conn):
        if expected is None:
            if conn.execute(d.sql(_CREATE), params).rowcount != 1:
                raise SessionConflictError(conflict_message(key, _found(conn, d, key), expected), key=key)
        else:
            # PostgreSQL locks the row (FOR UPDATE): a concurrent commit waits for this one, then sees its version
            row = conn.execute(d.sql(_HEAD) + d.row_lock, params).fetchone()
            found = None if row is None else _version(key, row[0])
            if found != expected:
                raise SessionConflictError(conflict_message(key, found, expected), key=key)
            count, stored = stored_head(row[1], key=key)
            if origin_conflict(stored, record.origin):  # the same version of another conversation (ABA)
                raise SessionConflictError(conflict_message(key, found, expected, recreated=True), key=key)
            if stored is not None and stored != origin:  # a record naming none keeps the session's
                origin = stored
                params = d.params(key=key, head=dump_head(attrs.evolve(record, origin=origin)))
            if appended is not None and count != kept:
                appended, whole = None, dump_messages(key, messages)  # an older document: written whole once
            conn.execute(d.sql(_BUMP), params)
        if appended is not None:
            if len(messages) > kept:
                conn.execute(d.sql(_APPEND), {"key": key, "start": kept, "body": appended})
        else:
            conn.execute(d.sql(_FORGET_PIECES), params)
            if messages:
                conn.execute(d.sql(_APPEND), {"key": key, "start": 0, "body": whole})
    return SessionRecord(
        key, messages, (expected or 0) + 1, record.paused, record.run_id, origin=origin, children=record.children
    )


def _delete(conn: Any, d: Dialect, guard: Callable[[Any], None] | None, key: str, expected: int | None) -> bool:
    if guard is not None:
        guard(conn)
    with d.transaction(conn):
        if expected is None:
            cursor = conn.execute(d.sql(_DELETE), {"key": key})
        else:
            cursor = conn.execute(d.sql(_DELETE_AT), {"key": key, "version": expected})
        deleted = bool(cursor.rowcount > 0)
        if deleted:
            conn.execute(d.sql(_FORGET_PIECES), {"key": key})
    return deleted
