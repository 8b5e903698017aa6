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
  for a new session, ``INSERT ... ON CONFLICT DO NOTHING``.  Another version (or no row changed) means another commit
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
messages, one row a commit (the messages it added; ``start``: the index of the first), deleted with their
session's row by a trigger (``agentactors_sessions_forget``: whoever deletes the row — a ``DELETE`` from the
``sqlite3`` shell too, whose connections enforce no foreign keys — leaves no message behind); and a table
``agentactors_meta`` holding the layout version of those tables.  A file of the previous version (no trigger)
gets it when a store first opens it, and loses then the messages its rows deleted by hand had left: nothing
else.

**Append-only.**  A commit whose record extends the stored history (``SessionRecord.kept``: the
session's actor sets it) writes the document and one row of messages — the turn — in its
transaction: its cost does not grow with the conversation.  Anything else (a trimmed history, a row
of the whole-record layout, whose document holds its messages) is written whole, once.  A file of
the whole-record layout (format 2 documents, no messages table) needs no migration step: each row is
read as it is and rewritten at its session's next commit; the layout version stays 1, since the new
table only adds to it (a process of the older version refuses a row written in format 3 —
:class:`~agentactors.errors.SessionFormatError` — rather than misreading it).  A version cell that is
not an integer from 1 to 2**63 - 2 is a ``SessionFormatError`` naming the key, never coerced.  A database
whose layout is newer than this version knows is refused when opened
(:class:`~agentactors.errors.SessionFormatError`), before anything is written.

**Lifetime.**  The connection opens on first use and closes on :meth:`SqliteStore.aclose` (a
:class:`~agentactors.actors.runtime.Runtime` closes the stores its sessions used when it exits); a
store used again after that opens a new one.  A file deleted or replaced while the store has it open
refuses every commit and delete (:class:`~agentactors.errors.SessionError` naming the path): the connection
would go on writing into the unlinked file, each commit acknowledged and lost.  A call the database fails —
locked past ``busy_timeout``, a full disk, a read-only or damaged file — raises :class:`SqliteStoreError` naming
the path (:mod:`agentactors._sqlite`), nothing of it written; the store goes on.  A path SQLite cannot open as a
database at all — its directory missing, a directory, a file that is not a database — raises
:class:`SqliteStoreConnectionError` (a ``SqliteStoreError``, and a ``ConnectionError``: what it raised before).
A store object serves one event loop at a time; several stores (in several processes or threads) may share one
file.

Load, commit and delete are the PostgreSQL store's too (:mod:`agentactors.sessions._sql`, in the SQL of
:data:`agentactors._sqlite.DIALECT`); this module keeps its SQLite tables.
"""

from __future__ import annotations

import os
import sqlite3
from functools import partial
from typing import Final, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from .._sqlite import DIALECT, Transaction, Worker, check_options, database_path, moved, shown_path, typed
from ..errors import SessionError
from ._sql import LAYOUT, META, PIECES, TABLE, SqlStore, check_layout

__all__ = ["LAYOUT", "SqliteStore", "SqliteStoreConnectionError", "SqliteStoreError"]


class SqliteStoreError(SessionError, sqlite3.OperationalError):
    """A :class:`SqliteStore`'s database failed a call: locked by another connection past ``busy_timeout`` (before
    the store's first use or mid-conversation), a full disk, a disk error, a read-only or a damaged file.

    Its text names the file and SQLite's reason with what it means; ``path`` is the file (as the store opens it, a
    URI's key masked), ``sqlite_errorname`` and ``sqlite_errorcode`` SQLite's name and number for the failure
    (``"SQLITE_BUSY"``, ``"SQLITE_FULL"``, ``"SQLITE_IOERR"``, ``"SQLITE_READONLY"``, ``"SQLITE_CORRUPT"``...),
    sqlite3's own error its ``__cause__``.  Also a ``sqlite3.OperationalError`` — what the store raised before — so
    ``except sqlite3.OperationalError`` catches it still.  A commit that failed wrote nothing (its transaction was
    rolled back), what was committed before is kept, and the store goes on: its next call tries again, and
    :meth:`SqliteStore.aclose` closes it.
    """

    def __init__(self, message: str, *, path: str | None = None, errorname: str = "", errorcode: int = -1) -> None:
        super().__init__(message)
        self.path = path
        self.sqlite_errorname = errorname
        self.sqlite_errorcode = errorcode


class SqliteStoreConnectionError(SqliteStoreError, ConnectionError):
    """A :class:`SqliteStore`'s path cannot be opened as a database at all: its directory is missing, it is a
    directory, or the file there is not a database (``sqlite_errorname`` ``"SQLITE_CANTOPEN"``,
    ``"SQLITE_NOTADB"``).

    A :class:`SqliteStoreError` — so ``except SessionError`` around a turn catches it — and a
    :class:`ConnectionError`, what the store raised before (as a PostgreSQL store's server it cannot reach is), so
    ``except ConnectionError`` catches it still; like every ``SqliteStoreError``, a ``sqlite3.OperationalError``
    too.  Its text is ``could not open the SQLite database <path>: <SQLite's reason>``; ``path`` is that path,
    ``sqlite_errorname`` SQLite's name for it, sqlite3's own error its ``__cause__``.  Nothing was written; the
    store's next call tries to open the path again.
    """


_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    " key TEXT PRIMARY KEY NOT NULL,"
    " version INTEGER NOT NULL,"
    " body TEXT NOT NULL,"
    " updated REAL NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {META} (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {PIECES} ("
    " key TEXT NOT NULL,"
    " start INTEGER NOT NULL,"
    " body TEXT NOT NULL,"
    " PRIMARY KEY (key, start))",
)

#: Deletes a session's messages with its row, whoever deletes it: a trigger, not a foreign key, because SQLite
#: enforces foreign keys only on connections that ask (``PRAGMA foreign_keys``) — the ``sqlite3`` shell does not.
_FORGET: Final = "agentactors_sessions_forget"
_TRIGGER: Final = (
    f"CREATE TRIGGER IF NOT EXISTS {_FORGET} AFTER DELETE ON {TABLE} FOR EACH ROW"
    f" BEGIN DELETE FROM {PIECES} WHERE key = OLD.key; END"
)
_ORPHANS: Final = f"DELETE FROM {PIECES} WHERE key NOT IN (SELECT key FROM {TABLE})"


class SqliteStore(SqlStore):
    """A :class:`~agentactors.sessions.store.SessionStore` in a SQLite file: ``SqliteStore("sessions.db")``.

    :param path: the database file (created if missing; ``":memory:"`` for a private in-memory one).
    :param busy_timeout: seconds a commit waits for another connection's write lock before it fails
        with :class:`SqliteStoreError` ("database is locked"; also a ``sqlite3.OperationalError``).
    :param synchronous: SQLite's ``synchronous`` setting: ``"NORMAL"`` (the default; see the module
        docstring), ``"FULL"`` or ``"EXTRA"`` for power-cut durability, ``"OFF"`` for none.

    Also an async context manager (``async with SqliteStore(path) as store:`` closes it on exit).

    :raises ValueError: a negative ``busy_timeout``, an unknown ``synchronous``.
    """

    __slots__ = ("_address", "_where", "busy_timeout", "path", "synchronous")

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL",
    ) -> None:
        self.busy_timeout, self.synchronous = check_options(busy_timeout, synchronous)
        self.path = os.fspath(path)
        self._where = database_path(self.path)  # what every connection opens (resolved now: agentactors._sqlite)
        # Where the records live (see address): () until first asked, when a file's path is resolved.  A "file:"
        # URI's is taken now, with the directory it is read in (a relative one names a file there).
        self._address: tuple[str, ...] | None = (
            None if self.path in ("", ":memory:") else _uri_address(self.path) if self.path.startswith("file:") else ()
        )
        # The connection, its thread and its one-token limiter: agentactors._sqlite (shared with the journal);
        # load, commit and delete: agentactors.sessions._sql (shared with PostgresStore).
        setup, name = partial(_setup, self.path), f"agentactors-sqlite-store-{id(self)}"
        errors = typed(SqliteStoreError, "session database", self._where, self.busy_timeout)
        worker = Worker(
            self._where, self.busy_timeout, self.synchronous, setup, name, errors, unopenable=SqliteStoreConnectionError
        )
        super().__init__(worker, DIALECT, _check_file)

    @property
    def address(self) -> tuple[str, ...] | None:
        """Where the store's records live (:class:`~agentactors.sessions.store.SessionStore`): two stores of one
        file hold the same sessions, so a runtime reaches one session through either.

        ``("sqlite", the file's path)``, resolved — absolute (when the store was made) and its symbolic links
        followed (when first asked).  ``None`` for a private in-memory database (``":memory:"``, ``""``, a
        ``file:`` URI with ``mode=memory``, ``vfs=memdb`` or the path ``:memory:``): each store object is its own
        database, addressed by identity.  Another ``file:`` URI is ``("sqlite", the URI, the directory it was
        made in)``: how SQLite reads one depends on how it was built (a URI, or a file of that name), so only the
        same URI made in the same directory is known to be the same file.
        """
        address = self._address
        if address == ():
            address = self._address = ("sqlite", os.path.realpath(self._where))
        return address

    @property
    def _conn(self) -> sqlite3.Connection | None:
        """The open connection, or ``None`` (for this package's tests)."""
        conn: sqlite3.Connection | None = self._worker.conn
        return conn

    def __repr__(self) -> str:
        return f"SqliteStore({shown_path(self.path)!r}{', open' if self._worker.conn is not None else ''})"


def _uri_address(uri: str) -> tuple[str, ...] | None:
    """The address of a ``file:`` URI (:attr:`SqliteStore.address`): ``None`` for an in-memory database."""
    parts = urlsplit(uri)
    options = {name.lower(): value.lower() for name, value in parse_qsl(parts.query, keep_blank_values=True)}
    if unquote(parts.path) in ("", ":memory:") or options.get("mode") == "memory" or options.get("vfs") == "memdb":
        return None
    return ("sqlite", uri, os.getcwd())


# --- what runs in the worker thread ------------------------------------------------------------------


def _check_file(conn: sqlite3.Connection) -> None:
    """Refuse to write if the store's file was deleted or replaced since the connection opened it.

    The connection would go on writing into the unlinked file: each commit acknowledged, the session's version
    rising, and nothing at the path (:func:`agentactors._sqlite.moved`: one ``stat``, as the journal pays).

    :raises SessionError: naming the path; nothing was written.
    """
    problem = moved(conn)
    if problem is not None:
        raise SessionError(
            f"the session database {problem} while this store had it open: its commits would be lost, so none is "
            "made (restore the file, or close the store: its next use opens the path again)"
        )


def _setup(path: str, conn: sqlite3.Connection) -> None:
    """Create or check the tables (the connection is in WAL mode already: :mod:`agentactors._sqlite`).

    Text comes back as ``bytes``, decoded by the JSON reader (:func:`~agentactors.sessions.format.load_record`
    takes either): a cell that is not valid UTF-8 — written by another tool, or half a page of a damaged
    file — is then a stored session that does not decode (:class:`~agentactors.errors.SessionFormatError`,
    naming its key), where ``sqlite3`` would raise ``OperationalError`` while fetching the row.
    """
    conn.text_factory = bytes
    with Transaction(conn):
        for statement in _SCHEMA:
            conn.execute(statement)
        check_layout(conn, DIALECT, f" {shown_path(path)!r}", "file")
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?", (_FORGET,))
        if found.fetchone() is None:
            # A new file, or one of the previous version (no trigger): the messages of rows deleted by hand before
            # are deleted once — no session reads them (a session created again on the key writes its own first).
            conn.execute(_TRIGGER)
            conn.execute(_ORPHANS)
