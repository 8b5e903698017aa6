"""``PostgresStore``: sessions in PostgreSQL, shared safely by processes on any number of hosts.

The same guarantees as :class:`~agentactors.sessions.SqliteStore`, on a server instead of a file:

* **atomic turns**: a commit is one transaction — the session's row, then its turn's messages;
* **optimistic versions**: the commit reads the stored version ``FOR UPDATE`` (a concurrent commit of the same
  session waits for the first to end, then sees its version) and goes on only if it is the expected one —
  else :class:`~agentactors.errors.SessionConflictError` and nothing written; a new session is
  ``INSERT … ON CONFLICT DO NOTHING`` (the second creator sees no row inserted: a conflict).  No lock is held
  between a load and a commit, so a process that dies leaves nothing locked;
* **the JSON policy and formats**: the record is the same document (:mod:`agentactors.sessions.format`), checked
  against the JSON depth and integer limits at commit and at load; a corrupted version cell or document is a
  :class:`~agentactors.errors.SessionFormatError` naming the key;
* **append-only**: a turn that extends the stored history writes one row of messages, as SQLite's layout does.

Same tables as the SQLite store (``agentactors_sessions``, ``agentactors_messages``, ``agentactors_meta``), so
what the docs say of them holds here; a database whose layout is newer than this version reads is refused.

Driver and threads: :mod:`agentactors._postgres` (psycopg 3's sync connection in worker threads: it works on
asyncio and trio; its ``AsyncConnection`` is asyncio-only).  The DSN's password never appears in a ``repr``, an
error or a log line.
"""

from __future__ import annotations

from typing import Any, Final

from .._postgres import Worker, safe_dsn
from ..errors import SessionConflictError, SessionFormatError
from .format import dump_head, dump_messages, load_record, stored_count
from .store import SessionRecord, conflict_message

__all__ = ["PostgresStore"]

#: The tables' layout version (SQLite's: the same tables).
LAYOUT: Final = 1
_TABLE: Final = "agentactors_sessions"
_META: Final = "agentactors_meta"
_PIECES: Final = "agentactors_messages"
_NOW: Final = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"
_LOCK: Final = 0x61677365737373  # the advisory lock that serializes creating the tables
_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {_TABLE} ("
    " key TEXT PRIMARY KEY, version BIGINT NOT NULL, body TEXT NOT NULL, updated DOUBLE PRECISION NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {_META} (name TEXT PRIMARY KEY, value BIGINT NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {_PIECES} ("
    " key TEXT NOT NULL, start INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (key, start))",
)


class PostgresStore:
    """A :class:`~agentactors.sessions.store.SessionStore` in PostgreSQL: ``PostgresStore(dsn)`` (``[postgres]``).

    :param dsn: a libpq connection string or URL (``postgresql://user:password@host:5432/db``); its password is
        never shown (``repr`` prints the DSN with ``***``).
    :param connect_timeout: seconds a connection attempt waits for the server.

    Also an async context manager.  The connection opens on first use (``psycopg`` is imported then: a missing
    extra is an :class:`ImportError` naming it) and closes on :meth:`aclose`; a store used again reopens.  A store
    object serves one event loop at a time; any number of stores, processes and hosts may share one database.
    """

    __slots__ = ("_worker",)

    def __init__(self, dsn: str, *, connect_timeout: float = 10.0) -> None:
        if not isinstance(dsn, str) or not dsn:
            raise TypeError("a PostgresStore takes a DSN: a non-empty str")
        self._worker = Worker(
            dsn, _setup, what="PostgresStore", name=f"agentactors-pg-store-{id(self)}", connect_timeout=connect_timeout
        )

    def __repr__(self) -> str:
        return f"PostgresStore({safe_dsn(self._worker.dsn)!r}{', open' if self._worker.conn is not None else ''})"

    async def __aenter__(self) -> PostgresStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def load(self, key: str) -> SessionRecord | None:
        """The record for ``key`` or ``None`` (an older stored format is migrated as it is read).

        :raises SessionFormatError: the stored record (or the layout) is newer than this version reads, or is
            not a session.
        """
        return await self._worker.call(_load, key)

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        """Store ``record`` in one transaction if the stored version is ``expected_version``.

        :raises SessionConflictError: another commit came first (nothing was written).
        :raises TypeError: the record holds a value JSON cannot keep.
        :raises SessionFormatError: a value past the JSON limits, or a corrupted stored version (nothing written).

        Cancellation: not interrupted once started (it runs in a worker thread): the commit happened entirely
        or not at all, and a session shields its commits, so it knows which.
        """
        if not isinstance(record, SessionRecord):
            raise TypeError(f"commit() takes a SessionRecord, not {type(record).__name__}")
        return await self._worker.call(_commit, record, expected_version)

    async def delete(self, key: str, *, expected_version: int | None = None) -> bool:
        """Forget ``key`` (only at ``expected_version``, if given), in one transaction."""
        return await self._worker.call(_delete, key, expected_version)

    async def aclose(self) -> None:
        """Close the connection (the next use opens a new one).  Idempotent."""
        await self._worker.close()


# --- what runs in the worker thread ------------------------------------------------------------------


def _setup(conn: Any) -> None:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        for statement in _SCHEMA:
            conn.execute(statement)
        row = conn.execute(f"SELECT value FROM {_META} WHERE name = 'layout'").fetchone()
        if row is None:
            conn.execute(f"INSERT INTO {_META} (name, value) VALUES ('layout', %s)", (LAYOUT,))
        elif row[0] != LAYOUT:
            raise SessionFormatError(
                f"the session database has layout {row[0]}, which this agentactors does not read "
                f"(it reads {LAYOUT}): upgrade agentactors (the database was left as it is)",
                found=row[0],
            )


def _version(key: str, cell: Any) -> int:
    """A stored version: an integer >= 1, never coerced (see :mod:`agentactors.sessions.sqlite`)."""
    if isinstance(cell, int) and not isinstance(cell, bool) and cell >= 1:
        return cell
    raise SessionFormatError(
        f"stored session {key!r} has a corrupted version {cell!r} (an integer >= 1 is expected): "
        "it was left as it is",
        key=key,
    )


def _load(conn: Any, key: str) -> SessionRecord | None:
    with conn.transaction():  # one snapshot: a document and its pieces of one commit
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        row = conn.execute(f"SELECT version, body FROM {_TABLE} WHERE key = %s", (key,)).fetchone()
        if row is None:
            return None
        pieces = [p for (p,) in conn.execute(f"SELECT body FROM {_PIECES} WHERE key = %s ORDER BY start", (key,))]
    return load_record(row[1], key=key, version=_version(key, row[0]), pieces=pieces)


def _found(conn: Any, key: str) -> int | None:
    row = conn.execute(f"SELECT version FROM {_TABLE} WHERE key = %s", (key,)).fetchone()
    return None if row is None else _version(key, row[0])


def _commit(conn: Any, record: SessionRecord, expected: int | None) -> SessionRecord:
    key, messages, kept = record.key, record.messages, record.kept
    # Encoded before the transaction (an unstorable value never takes a lock); a turn that extends the stored
    # history writes only its own messages.
    head = dump_head(record)
    appended = dump_messages(key, messages[kept:]) if expected is not None and kept else None
    whole = None if appended is not None else dump_messages(key, messages)
    with conn.transaction():
        if expected is None:
            cursor = conn.execute(
                f"INSERT INTO {_TABLE} (key, version, body, updated) VALUES (%s, 1, %s, {_NOW})"
                " ON CONFLICT (key) DO NOTHING",
                (key, head),
            )
            if cursor.rowcount != 1:
                raise SessionConflictError(conflict_message(key, _found(conn, key), expected), key=key)
        else:
            row = conn.execute(f"SELECT version, body FROM {_TABLE} WHERE key = %s FOR UPDATE", (key,)).fetchone()
            if row is None or _version(key, row[0]) != expected:
                found = None if row is None else _version(key, row[0])
                raise SessionConflictError(conflict_message(key, found, expected), key=key)
            if appended is not None and stored_count(row[1], key=key) != kept:
                appended, whole = None, dump_messages(key, messages)  # an older document: written whole once
            conn.execute(
                f"UPDATE {_TABLE} SET version = version + 1, body = %s, updated = {_NOW} WHERE key = %s", (head, key)
            )
        if appended is not None:
            if len(messages) > kept:
                conn.execute(f"INSERT INTO {_PIECES} (key, start, body) VALUES (%s, %s, %s)", (key, kept, appended))
        else:
            conn.execute(f"DELETE FROM {_PIECES} WHERE key = %s", (key,))
            if messages:
                conn.execute(f"INSERT INTO {_PIECES} (key, start, body) VALUES (%s, 0, %s)", (key, whole))
    return SessionRecord(key, messages, (expected or 0) + 1, record.paused, record.run_id)


def _delete(conn: Any, key: str, expected: int | None) -> bool:
    with conn.transaction():
        if expected is None:
            cursor = conn.execute(f"DELETE FROM {_TABLE} WHERE key = %s", (key,))
        else:
            cursor = conn.execute(f"DELETE FROM {_TABLE} WHERE key = %s AND version = %s", (key, expected))
        deleted = bool(cursor.rowcount > 0)
        if deleted:
            conn.execute(f"DELETE FROM {_PIECES} WHERE key = %s", (key,))
    return deleted
