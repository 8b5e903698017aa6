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
what the docs say of them holds here; a database whose layout is newer than this version reads is refused.  A
session's messages are deleted with its row, whoever deletes it (a foreign key ``ON DELETE CASCADE``; SQLite's is a
trigger); a database of the previous version gets the key when a store first opens it, and loses then the
messages its rows deleted by hand had left — nothing else.  (``TRUNCATE agentactors_sessions`` now needs
``CASCADE``.)

Driver and threads: :mod:`agentactors._postgres` (psycopg 3's sync connection in worker threads: it works on
asyncio and trio; its ``AsyncConnection`` is asyncio-only).  The DSN's password never appears in a ``repr``, an
error or a log line.  Load, commit and delete are the SQLite store's (:mod:`agentactors.sessions._sql`); this
module keeps its PostgreSQL tables.

A call the database fails — a row held locked past ``lock_timeout``, a statement past ``statement_timeout``, a
server that stopped answering or went away mid-call — raises :class:`PostgresStoreError` (a ``SessionError``, and
still the psycopg error it replaces); the store goes on.  A connection it cannot open — the server stopped or
restarting, a port nothing listens on, a password refused — raises :class:`PostgresStoreConnectionError` (a
``PostgresStoreError``, and a ``ConnectionError``: what it raised before), its text scrubbed of the passwords, with
neither cause nor context.
"""

from __future__ import annotations

from typing import Any, Final

from .._postgres import DIALECT, Timeouts, Worker, reduce_typed, safe_dsn, typed
from ..errors import SessionError
from ._sql import META, PIECES, TABLE, SqlStore, check_layout

__all__ = ["PostgresStore", "PostgresStoreConnectionError", "PostgresStoreError"]


class PostgresStoreError(SessionError):
    """A :class:`PostgresStore`'s database failed a call: a row another transaction held locked past
    ``lock_timeout`` (another turn's commit, a long manual transaction), a statement past ``statement_timeout`` (or
    cancelled by an operator), a server that did not answer within that bound, or one that went away mid-call (a
    restart, a crash), a full disk, a role refused a table.

    Its text names the store's DSN (its passwords masked) and the server's reason with what it means; ``dsn`` is
    that DSN, ``sqlstate`` the server's code for the failure (``"55P03"`` a lock, ``"57014"`` a cancel,
    ``"57P01"`` a terminated backend; ``None`` when libpq's, not the server's: a lost connection, our deadline),
    psycopg's own error its ``__cause__``.  Also an instance of the psycopg class it replaces — what the store
    raised before — so ``except psycopg.errors.LockNotAvailable`` or ``except psycopg.OperationalError`` catches it
    still: its class is made once for each psycopg class, deriving from both (its ``diag`` and ``pgresult`` are
    those of the error it replaces), and is named as this one.  A commit that failed was rolled back —
    or, its connection lost while its ``COMMIT`` was on the wire, may have landed (the text says so; the session
    reloads before its next turn) — what was committed before is kept, and the store goes on: its next call tries
    again (over a new connection if that one is gone), and :meth:`PostgresStore.aclose` closes it.
    """

    def __init__(self, message: str, *, dsn: str | None = None, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.dsn = dsn
        self.sqlstate = sqlstate

    def __reduce__(self) -> str | tuple[Any, ...]:
        return reduce_typed(self) or super().__reduce__()


class PostgresStoreConnectionError(PostgresStoreError, ConnectionError):
    """A :class:`PostgresStore` could not open a connection to its database: the server refused it (stopped,
    restarting, a port nothing listens on), did not accept it within ``connect_timeout``, refused the role or its
    password, or the DSN cannot be parsed.

    A :class:`PostgresStoreError` — so ``except SessionError`` around a turn catches the most common outage, a server
    restarting — and a :class:`ConnectionError`, what the store raised before, so ``except ConnectionError``
    catches it still.  Not a psycopg error (it never was).  Its text is ``PostgresStore could not connect to <the
    DSN, its passwords masked>: <libpq's reason, the passwords scrubbed>``; ``dsn`` is that DSN, ``sqlstate``
    ``None``.  It has neither cause nor context: psycopg's error holds the failed connection, whose ``repr`` lists
    every option, the password included.  Nothing was written; the store's next call tries to connect again.
    """


#: The DSN's options that hold a secret, left out of a store's address.
_SECRETS: Final = frozenset({"password", "sslpassword"})
_LOCK: Final = 0x61677365737373  # the advisory lock that serializes creating the tables
_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    " key TEXT PRIMARY KEY, version BIGINT NOT NULL, body TEXT NOT NULL, updated DOUBLE PRECISION NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {META} (name TEXT PRIMARY KEY, value BIGINT NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {PIECES} ("
    " key TEXT NOT NULL, start INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (key, start))",
)

#: A session's messages go with its row, whoever deletes it (``ON DELETE CASCADE``).  Added by the setup, not in
#: ``CREATE TABLE``: a table of the previous version has none, and gets it the same way.
_CASCADE: Final = "agentactors_messages_session"
_HAS_CASCADE: Final = f"SELECT 1 FROM pg_constraint WHERE conname = %s AND conrelid = '{PIECES}'::regclass"
_ORPHANS: Final = f"DELETE FROM {PIECES} m WHERE NOT EXISTS (SELECT 1 FROM {TABLE} s WHERE s.key = m.key)"
_ADD_CASCADE: Final = (
    f"ALTER TABLE {PIECES} ADD CONSTRAINT {_CASCADE} FOREIGN KEY (key) REFERENCES {TABLE} (key) ON DELETE CASCADE"
)


class PostgresStore(SqlStore):
    """A :class:`~agentactors.sessions.store.SessionStore` in PostgreSQL: ``PostgresStore(dsn)`` (``[postgres]``).

    :param dsn: a libpq connection string or URL (``postgresql://user:password@host:5432/db``); its password is
        never shown (``repr`` prints the DSN with ``***``).
    :param connect_timeout: seconds a connection attempt waits for the server.
    :param statement_timeout: seconds one statement may run before the server cancels it
        (:class:`PostgresStoreError`, also psycopg's ``QueryCanceled``), and a transaction may sit idle; a server
        that does not answer at all gets this and a grace, then the call fails (:class:`PostgresStoreError`, also
        psycopg's ``OperationalError``).  ``None``: the server's setting.
    :param lock_timeout: seconds a commit may wait for a row another transaction holds (:class:`PostgresStoreError`,
        also ``LockNotAvailable``).
    :raises ValueError: a timeout that is not a finite number of seconds > 0 (see :mod:`agentactors._postgres`).

    Also an async context manager.  The connection opens on first use (``psycopg`` is imported then: a missing
    extra is an :class:`ImportError` naming it) and closes on :meth:`aclose`; a store used again reopens.  A store
    object serves one event loop at a time; any number of stores, processes and hosts may share one database.
    """

    __slots__ = ("_address", "_dsn")

    def __init__(
        self,
        dsn: str,
        *,
        connect_timeout: float = 10.0,
        statement_timeout: float | None = 30.0,
        lock_timeout: float | None = 10.0,
    ) -> None:
        if not isinstance(dsn, str) or not dsn:
            raise TypeError("a PostgresStore takes a DSN: a non-empty str")
        self._dsn = dsn
        self._address: tuple[str, ...] | None = ()  # () until first asked (see address)
        name = f"agentactors-pg-store-{id(self)}"
        timeouts = Timeouts(connect_timeout, statement_timeout, lock_timeout)
        worker = Worker(
            dsn, _setup, what="PostgresStore", name=name, connect_timeout=connect_timeout,
            statement_timeout=statement_timeout, lock_timeout=lock_timeout,
            typed=typed(PostgresStoreError, "session store", dsn, timeouts), unreachable=PostgresStoreConnectionError,
        )
        super().__init__(worker, DIALECT)

    def __repr__(self) -> str:
        return f"PostgresStore({safe_dsn(self._dsn)!r}{', open' if self._worker.conn is not None else ''})"

    @property
    def address(self) -> tuple[str, ...] | None:
        """Where the store's records live (:class:`~agentactors.sessions.store.SessionStore`): two stores of one
        database hold the same sessions, so a runtime reaches one session through either.

        ``("postgres", the DSN without its passwords)``: its parameters (``password`` and ``sslpassword`` left
        out), in one order, as ``key=value`` text — a URL and its ``key=value`` form, or two DSNs that differ only
        in their password, are one address; the password is never kept in it.  ``None`` (by identity) for a DSN
        that cannot be read (or without psycopg, which reads it: imported when first asked, as for a connection).
        What libpq takes from the environment (``PGHOST``…) is not in it: one process reads one environment.
        """
        address = self._address
        if address == ():
            address = self._address = _dsn_address(self._dsn)
        return address


def _dsn_address(dsn: str) -> tuple[str, ...] | None:
    """The address of ``dsn`` (:attr:`PostgresStore.address`), or ``None`` when it cannot be read."""
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = conninfo_to_dict(dsn)
        kept = {name: params[name] for name in sorted(params) if name not in _SECRETS}
        return ("postgres", make_conninfo("", **kept))
    except Exception:  # unreadable, or no psycopg: by identity, never one address for all such stores
        return None


# --- what runs in the worker thread ------------------------------------------------------------------


def _setup(conn: Any) -> None:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        for statement in _SCHEMA:
            conn.execute(statement)
        check_layout(conn, DIALECT, "", "database")
        if conn.execute(_HAS_CASCADE, (_CASCADE,)).fetchone() is None:
            # A new database, or one of the previous version: the messages of rows deleted by hand before are
            # deleted once (no session reads them), then the key holds — nothing else is touched.
            conn.execute(_ORPHANS)
            conn.execute(_ADD_CASCADE)
