"""One SQLite connection used from worker threads: what the session store and the step journal share.

Both :class:`~agentactors.sessions.SqliteStore` and :class:`~agentactors.journal.SqliteJournal` keep their data in
a SQLite file that several processes may share, and both reach it the same way:

* **stdlib** ``sqlite3`` **in worker threads** (``anyio.to_thread.run_sync``): it works on asyncio and trio alike,
  and every async SQLite driver is ``sqlite3`` on a thread anyway (usually asyncio-only);
* **one connection per object, one call at a time**: a :class:`anyio.CapacityLimiter` of one token per event loop
  (its calls queue for *its* thread instead of taking slots of anyio's default pool, which the whole process
  shares) and a lock (the limiter is per loop; the connection is not);
* **WAL mode** (readers and the writer never block each other), a ``busy_timeout`` (a writer waits for another
  process's transaction instead of failing at once), ``synchronous`` as the owner chose (``NORMAL`` by default:
  a commit survives the process crashing, ``FULL`` also a power cut) and no implicit transactions — each one is
  an explicit ``BEGIN IMMEDIATE`` (:class:`Transaction`: the write lock taken first, so two writers serialize
  instead of deadlocking on an upgrade).

The connection opens on first use (in the worker thread, where the owner's ``setup`` creates its tables) and
closes on :meth:`Worker.close`; a worker used again opens a new one.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

__all__ = ["SYNCHRONOUS", "Snapshot", "Transaction", "Worker", "check_options", "connect"]

T = TypeVar("T")

SYNCHRONOUS: Final = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})


def check_options(busy_timeout: float, synchronous: str) -> tuple[float, str]:
    """``(busy_timeout, SYNCHRONOUS mode)`` checked.  :raises ValueError: a negative timeout, an unknown mode."""
    if isinstance(busy_timeout, bool) or not busy_timeout >= 0 or math.isinf(busy_timeout):
        raise ValueError(f"busy_timeout must be a finite number of seconds >= 0, not {busy_timeout!r}")
    mode = str(synchronous).upper()
    if mode not in SYNCHRONOUS:
        raise ValueError(f"synchronous must be one of {sorted(SYNCHRONOUS)}, not {synchronous!r}")
    return float(busy_timeout), mode


def connect(path: str, busy_timeout: float, synchronous: str) -> sqlite3.Connection:
    """Open ``path`` in WAL mode with the timeouts and ``synchronous`` set, autocommit (explicit transactions)."""
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")  # a no-op answer ("memory") for ":memory:"
        conn.execute(f"PRAGMA synchronous = {synchronous}")
    except BaseException:
        conn.close()
        raise
    return conn


class Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` on any exception."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


class Snapshot:
    """``BEGIN`` … ``COMMIT``: a read transaction, so what several statements read is of one commit."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN")
        return self.conn

    def __exit__(self, *exc: object) -> None:
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")


class Worker:
    """One connection to ``path``, used one call at a time from worker threads (see the module docstring).

    :param setup: run in the worker thread on each new connection (its tables); raising closes it.
    :param name: names the per-loop limiter (one per owner object).
    """

    __slots__ = ("_limiter", "_lock", "busy_timeout", "conn", "path", "setup", "synchronous")

    def __init__(
        self, path: str, busy_timeout: float, synchronous: str, setup: Callable[[sqlite3.Connection], None], name: str
    ) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.synchronous = synchronous
        self.setup = setup
        self.conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        # One token per event loop: a RunVar, because a limiter belongs to the loop that made it.
        self._limiter: RunVar[anyio.CapacityLimiter] = RunVar(name)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` in a worker thread, alone on the connection (opened first if need be)."""
        return await anyio.to_thread.run_sync(self._locked, fn, args, limiter=self._token())

    def call_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """:meth:`call` from a thread of one's own (not the event loop's)."""
        return self._locked(fn, args)

    async def close(self) -> None:
        """Close the connection, after the call running on it (the next call opens a new one).  Idempotent."""
        await anyio.to_thread.run_sync(self._close, limiter=self._token())

    def _token(self) -> anyio.CapacityLimiter:
        limiter = self._limiter.get(None)
        if limiter is None:
            limiter = anyio.CapacityLimiter(1)
            self._limiter.set(limiter)
        return limiter

    def _locked(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        with self._lock:
            conn = self.conn
            if conn is None:
                conn = connect(self.path, self.busy_timeout, self.synchronous)
                try:
                    self.setup(conn)
                except BaseException:
                    conn.close()
                    raise
                self.conn = conn
            return fn(conn, *args)

    def _close(self) -> None:
        with self._lock:
            conn, self.conn = self.conn, None
            if conn is not None:
                conn.close()
