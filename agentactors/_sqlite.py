"""One SQLite connection used from worker threads: what the session store and the step journal share.

Both :class:`~agentactors.sessions.SqliteStore` and :class:`~agentactors.journal.SqliteJournal` keep their data in
a SQLite file that several processes may share, and both reach it the same way:

* **stdlib** ``sqlite3`` **in worker threads**, one connection per object used by one call at a time
  (:mod:`agentactors._db_worker`, as the PostgreSQL ones): every async SQLite driver is ``sqlite3`` on a thread
  anyway (usually asyncio-only);
* **WAL mode** (readers and the writer never block each other), a ``busy_timeout`` (a writer waits for another
  process's transaction instead of failing at once — and no longer: then "database is locked", the owner's typed
  error below, which is what ends a shielded commit on a file another process keeps locked), ``synchronous`` as
  the owner chose (``NORMAL`` by default: a commit survives the process crashing, ``FULL`` also a power cut) and
  no implicit transactions — each one is an explicit ``BEGIN IMMEDIATE`` (:class:`Transaction`: the write lock
  taken first, so two writers serialize instead of deadlocking on an upgrade).

A path SQLite cannot open as a database — its directory missing, a directory, a file that is not a database — is
its owner's connection error (:class:`~agentactors.sessions.sqlite.SqliteStoreConnectionError`,
:class:`~agentactors.journal.sqlite.SqliteJournalConnectionError`: its typed error below, and a
:class:`ConnectionError`, what it was before) naming the path and SQLite's reason (sqlite3's error its cause), as a
PostgreSQL owner's server it cannot reach is.  Any other failure of the database (:func:`typed`) — locked past
``busy_timeout``, before the first use or mid-run, a full disk, a disk error, a read-only file, a damaged one — is
its owner's typed error (:class:`~agentactors.sessions.sqlite.SqliteStoreError`,
:class:`~agentactors.journal.sqlite.SqliteJournalError`), naming the path and SQLite's reason with what it means,
``sqlite_errorname`` kept and sqlite3's error its cause; it is also a ``sqlite3.OperationalError``, what it was
before.  A transaction that failed was rolled back (SQLite
rolls back one whose ``COMMIT`` failed on a full disk or a disk error), so what was committed before is kept.

The connection opens on first use (in the worker thread, where the owner's ``setup`` creates its tables) and
closes on ``Worker.close``; a worker used again opens a new one.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Callable
from functools import partial
from typing import ClassVar, Final, Protocol

from ._db_worker import Worker as DbWorker
from ._dialect import Dialect
from .errors import AgentActorsError

__all__ = [
    "DIALECT", "SYNCHRONOUS", "Snapshot", "Transaction", "TypedError", "Worker", "check_options", "connect", "moved",
    "shown_path", "typed",
]

SYNCHRONOUS: Final = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})


def database_path(path: str) -> str:
    """``path`` as every connection to it opens it: absolute, resolved now against the current directory.

    A store or journal opens its connections lazily, on worker threads, and again after a close — and
    sqlite3 resolves a relative path when it connects.  Resolved once, when the object is made, a later
    ``os.chdir`` cannot send one of its connections (a journal's lease renewer opens its own) to another
    file.  ``":memory:"``, ``""`` (a private temporary database) and ``file:`` URIs are left as they are.
    """
    if path in ("", ":memory:") or path.startswith("file:"):
        return path
    return os.path.abspath(path)


def check_options(busy_timeout: float, synchronous: str) -> tuple[float, str]:
    """``(busy_timeout, SYNCHRONOUS mode)`` checked.  :raises ValueError: a negative timeout, an unknown mode."""
    if isinstance(busy_timeout, bool) or not busy_timeout >= 0 or math.isinf(busy_timeout):
        raise ValueError(f"busy_timeout must be a finite number of seconds >= 0, not {busy_timeout!r}")
    mode = str(synchronous).upper()
    if mode not in SYNCHRONOUS:
        raise ValueError(f"synchronous must be one of {sorted(SYNCHRONOUS)}, not {synchronous!r}")
    return float(busy_timeout), mode


class _Connection(sqlite3.Connection):
    """A connection that remembers which file it opened (:func:`moved`): ``(path, (device, inode))``."""

    file: tuple[str, tuple[int, int]] | None = None


def _identity(path: str) -> tuple[int, int] | None:
    """``(device, inode)`` of the file at ``path`` now, or ``None`` when nothing is there."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


#: The longest ``busy_timeout`` SQLite keeps: milliseconds in a C ``int`` (about 24.8 days).
_LONGEST_WAIT_MS: Final = 2**31 - 1


def connect(
    path: str, busy_timeout: float, synchronous: str, unopenable: TypedError | None = None
) -> sqlite3.Connection:
    """Open ``path`` in WAL mode with the timeouts and ``synchronous`` set, autocommit (explicit transactions).

    ``busy_timeout`` is set before anything else (switching to WAL may wait for another connection's lock), and
    past what SQLite keeps it is the longest it keeps — not what SQLite reads a larger value as: 0, fail at once.

    :param unopenable: the owner's error for a path SQLite cannot open as a database (a ``ConnectionError`` too:
        :func:`_unopenable`); ``None``: a plain :class:`ConnectionError`.
    """
    wait_ms = int(min(busy_timeout * 1000, _LONGEST_WAIT_MS))  # (1e308 seconds is inf ms: no int)
    try:
        conn = sqlite3.connect(
            path, timeout=wait_ms / 1000, isolation_level=None, check_same_thread=False, factory=_Connection
        )
    except sqlite3.Error as exc:
        raise _unopenable(path, exc, unopenable) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
        conn.execute("PRAGMA journal_mode = WAL")  # a no-op answer ("memory") for ":memory:"
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        if path not in ("", ":memory:") and not path.startswith("file:"):  # a file of its own, by name
            identity = _identity(path)
            if identity is not None:
                conn.file = (path, identity)
    except sqlite3.Error as exc:
        conn.close()
        if getattr(exc, "sqlite_errorname", None) not in _UNOPENABLE:
            raise  # "database is locked" past busy_timeout, a full disk...: the owner's typed error (its worker's)
        raise _unopenable(path, exc, unopenable) from exc
    except BaseException:
        conn.close()
        raise
    return conn


#: What SQLite says of a path it cannot use as a database at all: it cannot open it (a missing directory, a
#: directory), or what is there is not a database.
_UNOPENABLE: Final = frozenset({"SQLITE_CANTOPEN", "SQLITE_NOTADB"})


#: SQLite's own URI parameters (sqlite.org/uri.html): a ``file:`` URI's query shows them as they are, any other's
#: value masked (:func:`shown_path`).
_URI_PARAMS: Final = frozenset({"vfs", "mode", "cache", "psow", "nolock", "immutable"})


def shown_path(path: str) -> str:
    """``path`` as errors and reprs show it: a ``file:`` URI's query parameters other than SQLite's own masked.

    A build with encryption takes its key in the URI (``file:secret.db?key=...``, SQLite3MC, SEE): a store's or a
    journal's error names its database — with several in a process, which one failed — and travels (logs, Ray),
    so the key must not travel with it.  A plain path is shown as it is.
    """
    if not path.startswith("file:") or "?" not in path:
        return path
    head, _, rest = path.partition("?")
    query, hash_mark, fragment = rest.partition("#")
    shown = []
    for item in query.split("&"):
        name, equals, _value = item.partition("=")
        shown.append(item if not equals or name in _URI_PARAMS else f"{name}=[REDACTED]")
    return f"{head}?{'&'.join(shown)}{hash_mark}{fragment}"


def _unopenable(path: str, exc: sqlite3.Error, error: TypedError | None) -> Exception:
    """A database that cannot be opened, as the PostgreSQL owners say it (``error``: the owner's connection error,
    also a :class:`ConnectionError`; a plain one without it) — naming the path (:func:`shown_path`), which sqlite3's
    own error does not: with several stores in a process, which one failed."""
    shown = shown_path(path)
    message = f"could not open the SQLite database {shown!r}: {exc}"
    if error is None:
        return ConnectionError(message)
    name: str = getattr(exc, "sqlite_errorname", "")
    code: int = getattr(exc, "sqlite_errorcode", -1)
    return error(message, path=shown, errorname=name, errorcode=code)


class TypedError(Protocol):
    """How an owner's typed error is made (:func:`typed`), and its connection error (:func:`connect`): its message,
    the path, SQLite's name and number for the failure (``sqlite_errorname``, ``sqlite_errorcode``)."""

    def __call__(self, message: str, *, path: str, errorname: str, errorcode: int) -> Exception: ...


#: What SQLite's failure means, by the start of its name (``sqlite_errorname``): the hint a typed error adds.
_MEANING: Final = (
    (("SQLITE_BUSY", "SQLITE_LOCKED"), "another connection held it locked past busy_timeout={wait:g} s: nothing was "
     "written; try again once it is free, or give it a longer busy_timeout"),
    (("SQLITE_FULL",), "the disk is full: nothing was written"),
    (("SQLITE_IOERR",), "a disk error: nothing was written"),
    (("SQLITE_READONLY",), "the file is read-only here: nothing was written"),
    (("SQLITE_CORRUPT", "SQLITE_NOTADB"), "the file is damaged: it was left as it is (restore it from a backup)"),
    (("SQLITE_CANTOPEN",), "SQLite could not open the file (or its journal beside it)"),
)


def typed(error: TypedError, what: str, path: str, busy_timeout: float) -> Callable[[Exception], Exception | None]:
    """What a store's or journal's worker raises in place of sqlite3's error: ``error(message, path=, errorname=,
    errorcode=)``, its message naming ``what`` (``"session database"``, ``"journal"``), the path and SQLite's
    reason with what it means (:data:`_MEANING`); sqlite3's error its cause.

    ``None`` (raised as it is) for anything else: the library's own errors, and sqlite3's that say the library
    misused it (``ProgrammingError``, ``NotSupportedError``, ``InterfaceError``: a bug, not the database).
    """

    shown = shown_path(path)

    def make(exc: Exception) -> Exception | None:
        if (
            not isinstance(exc, sqlite3.DatabaseError)
            or isinstance(exc, AgentActorsError | sqlite3.ProgrammingError | sqlite3.NotSupportedError)
        ):
            return None
        name: str = getattr(exc, "sqlite_errorname", "")
        code: int = getattr(exc, "sqlite_errorcode", -1)
        meaning = next((text for names, text in _MEANING if name.startswith(names)), None)
        reason = str(exc) if meaning is None else f"{exc} ({meaning.format(wait=busy_timeout)})"
        made = error(f"the SQLite {what} {shown!r} failed: {reason}", path=shown, errorname=name, errorcode=code)
        made.__cause__ = exc  # also where it is returned as a value (a journal's batch of commits), not raised
        return made

    return make


def moved(conn: sqlite3.Connection) -> str | None:
    """Why ``conn``'s file is no longer the one at its path — deleted, or replaced by another — or ``None``.

    An open connection goes on writing to the file it opened, even once it is unlinked: every commit "succeeds"
    into an inode no later process will see.  What promises durability (a journal) asks this before it writes,
    for the price of one ``stat``.  ``None`` also for a connection not opened by :func:`connect` on a named file.
    """
    file = getattr(conn, "file", None)
    if file is None:
        return None
    path, identity = file
    now = _identity(path)
    if now == identity:
        return None
    return f"{path!r} was deleted" if now is None else f"{path!r} was replaced by another file"


class _Begun:
    """``conn`` in a transaction its ``BEGIN`` (the subclass's) starts, for a ``with`` block."""

    __slots__ = ("conn",)
    begin: ClassVar[str]

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute(self.begin)
        return self.conn


class Transaction(_Begun):
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` on any exception."""

    __slots__ = ()
    begin = "BEGIN IMMEDIATE"

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


class Snapshot(_Begun):
    """``BEGIN`` … ``COMMIT``: a read transaction, so what several statements read is of one commit."""

    __slots__ = ()
    begin = "BEGIN"

    def __exit__(self, *exc: object) -> None:
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")


class Worker(DbWorker[sqlite3.Connection]):
    """One connection to ``path`` (:func:`connect`), used one call at a time from worker threads.

    :param setup: run in the worker thread on each new connection (its tables); raising closes it.
    :param name: names the per-loop limiter (one per owner object).
    :param typed: what sqlite3's errors become when they leave a call (:func:`typed`); ``None``: as they are.
    :param unopenable: the owner's error for a path SQLite cannot open (:func:`connect`), a ``ConnectionError``
        too; ``None``: a plain :class:`ConnectionError`.
    """

    __slots__ = ("busy_timeout", "path", "synchronous")

    def __init__(
        self,
        path: str,
        busy_timeout: float,
        synchronous: str,
        setup: Callable[[sqlite3.Connection], None],
        name: str,
        typed: Callable[[Exception], Exception | None] | None = None,
        unopenable: TypedError | None = None,
    ) -> None:
        super().__init__(partial(connect, path, busy_timeout, synchronous, unopenable), setup, name, typed=typed)
        self.path = path
        self.busy_timeout = busy_timeout
        self.synchronous = synchronous


def _as_is(text: str) -> str:
    return text


#: SQLite's side of the shared statements (:mod:`agentactors._dialect`): ``:name`` parameters and ``:now`` as
#: they are, ``BEGIN IMMEDIATE`` for every write (the database's write lock taken first: no row lock needed).
DIALECT: Final = Dialect(sql=_as_is, row_lock="", transaction=Transaction, single=Transaction, snapshot=Snapshot)
