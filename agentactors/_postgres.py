"""One PostgreSQL connection used from worker threads: what the session store and the step journal share.

**Why psycopg 3, and why its sync connection in threads.**  psycopg 3 is the maintained PostgreSQL driver
(libpq underneath, binary wheels: the ``[postgres]`` extra installs ``psycopg[binary]``).  Its
``AsyncConnection`` runs on asyncio only — this library runs on trio too — so, as
:class:`~agentactors.sessions.SqliteStore` does with ``sqlite3``, each call runs the *sync* connection in a
worker thread (``anyio.to_thread.run_sync``), which works on both backends and costs one thread hop a call (tens
of microseconds beside a network round trip).  Each owner object has one connection, used by one call at a
time: a one-token :class:`anyio.CapacityLimiter` per event loop (its calls queue for *its* thread, not anyio's
shared pool) and a lock.  No pool (``psycopg-pool``): one connection per process and object is what a commit
needs, and a group commit (the journal's) takes care of concurrent runs.

**Secrets.**  A DSN may carry a password.  It is never shown: :func:`safe_dsn` is what ``repr`` and error
messages print (the password replaced by ``***``), and a connection error is raised again as
:class:`ConnectionError` with the password scrubbed from its text and no chained cause that could hold it.

A connection the server dropped (a restart, a failover) is thrown away when a call fails on it; the next call
opens a new one.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

__all__ = ["Worker", "import_psycopg", "safe_dsn"]

T = TypeVar("T")


def import_psycopg(what: str) -> ModuleType:
    """``psycopg``, or an ImportError that says which extra installs it."""
    try:
        return importlib.import_module("psycopg")
    except ImportError as exc:
        raise ImportError(
            f"{what} needs psycopg 3: pip install 'agentactors[postgres]' (or 'psycopg[binary]')"
        ) from exc


def _password(dsn: str) -> str | None:
    try:
        from psycopg.conninfo import conninfo_to_dict

        value = conninfo_to_dict(dsn).get("password")
    except Exception:  # not parseable, or psycopg missing: nothing we can name, and nothing we show
        return None
    return None if value is None else str(value)


def safe_dsn(dsn: str) -> str:
    """``dsn`` with its password (URL or ``key=value`` form) replaced by ``***``; ``"<dsn>"`` if unparseable."""
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = conninfo_to_dict(dsn)
    except Exception:
        return "<dsn>"
    if "password" in params:
        params["password"] = "***"
    shown = make_conninfo("", **params)
    return shown


def scrub(text: str, dsn: str) -> str:
    """``text`` without the DSN's password (if it holds it)."""
    secret = _password(dsn)
    return text.replace(secret, "***") if secret else text


class Worker:
    """One connection to ``dsn``, used one call at a time from worker threads (see the module docstring).

    :param setup: run in the worker thread on each new connection (its tables), in autocommit mode.
    :param what: the owner's name, for the error when psycopg is missing.
    :param name: names the per-loop limiter (one per owner object).
    """

    __slots__ = ("_limiter", "_lock", "conn", "connect_timeout", "dsn", "setup", "what")

    def __init__(
        self, dsn: str, setup: Callable[[Any], None], *, what: str, name: str, connect_timeout: float = 10.0
    ) -> None:
        self.dsn = dsn
        self.setup = setup
        self.what = what
        self.connect_timeout = connect_timeout
        self.conn: Any = None
        self._lock = threading.Lock()
        self._limiter: RunVar[anyio.CapacityLimiter] = RunVar(name)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` in a worker thread, alone on the connection (opened first if need be)."""
        return await anyio.to_thread.run_sync(self._locked, fn, args, limiter=self._token())

    def call_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """:meth:`call` from a thread of one's own (not the event loop's)."""
        return self._locked(fn, args)

    async def close(self) -> None:
        """Close the connection after the call running on it (the next call opens a new one).  Idempotent."""
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
                conn = self.conn = self._connect()
            try:
                return fn(conn, *args)
            except BaseException:
                if conn.closed or conn.broken:  # the server went away: the next call opens a new connection
                    self.conn = None
                    conn.close()
                raise

    def _connect(self) -> Any:
        psycopg = import_psycopg(self.what)
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=max(1, round(self.connect_timeout)))
        except psycopg.Error as exc:
            text = scrub(str(exc), self.dsn).strip()
            raise ConnectionError(f"{self.what} could not connect to {safe_dsn(self.dsn)}: {text}") from None
        try:
            self.setup(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _close(self) -> None:
        with self._lock:
            conn, self.conn = self.conn, None
            if conn is not None:
                conn.close()
