"""One PostgreSQL connection used from worker threads: what the session store and the step journal share.

**Why psycopg 3, and why its sync connection in threads.**  psycopg 3 is the maintained PostgreSQL driver
(libpq underneath, binary wheels: the ``[postgres]`` extra installs ``psycopg[binary]``).  Its
``AsyncConnection`` runs on asyncio only — this library runs on trio too — so, as
:class:`~agentactors.sessions.SqliteStore` does with ``sqlite3``, each call runs the *sync* connection in a
worker thread, which works on both backends and costs one thread hop a call (tens of microseconds beside a
network round trip).  Each owner object has one connection, used by one call at a time
(:mod:`agentactors._db_worker`, as the SQLite ones).  No pool (``psycopg-pool``): one connection per process
and object is what a commit needs, and a group commit (the journal's) takes care of concurrent runs.

**Secrets.**  A DSN may carry a password.  It is never shown: :func:`safe_dsn` is what ``repr`` and error
messages print (the password replaced by ``***``), and a connection error is raised again as
:class:`ConnectionError` with the password scrubbed from its text and no chained cause that could hold it.

A connection the server dropped (a restart, a failover) is thrown away when a call fails on it; the next call
opens a new one.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import cache, partial
from types import ModuleType
from typing import Any, Final

from ._db_worker import Worker as DbWorker
from ._dialect import Dialect

__all__ = ["DIALECT", "NOW", "Worker", "import_psycopg", "safe_dsn"]

#: The server's clock, in seconds since the epoch (what ``:now`` stands for: hosts' clocks may disagree).
NOW: Final = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"


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


class Worker(DbWorker[Any]):
    """One connection to ``dsn``, used one call at a time from worker threads (see the module docstring).

    :param setup: run in the worker thread on each new connection (its tables), in autocommit mode.
    :param what: the owner's name, for the error when psycopg is missing.
    :param name: names the per-loop limiter (one per owner object).
    """

    __slots__ = ("connect_timeout", "dsn", "what")

    def __init__(
        self, dsn: str, setup: Callable[[Any], None], *, what: str, name: str, connect_timeout: float = 10.0
    ) -> None:
        super().__init__(partial(_connect, dsn, what, connect_timeout), setup, name, dead=_dead)
        self.dsn = dsn
        self.what = what
        self.connect_timeout = connect_timeout


def _connect(dsn: str, what: str, connect_timeout: float) -> Any:
    """An autocommit connection; a failure as :class:`ConnectionError` with the password scrubbed, no cause."""
    psycopg = import_psycopg(what)
    try:
        return psycopg.connect(dsn, autocommit=True, connect_timeout=max(1, round(connect_timeout)))
    except psycopg.Error as exc:
        text = scrub(str(exc), dsn).strip()
        raise ConnectionError(f"{what} could not connect to {safe_dsn(dsn)}: {text}") from None


def _dead(conn: Any) -> bool:
    """The server went away (a restart, a failover): the next call opens a new connection."""
    return bool(conn.closed or conn.broken)


@cache
def _sql(text: str) -> str:
    """A shared statement in psycopg's terms: ``%(name)s`` parameters, ``:now`` the server's clock."""
    return re.sub(r"(?<![:\w]):(\w+)", lambda m: NOW if m[1] == "now" else f"%({m[1]})s", text)


def _transaction(conn: Any) -> AbstractContextManager[Any]:
    return conn.transaction()  # type: ignore[no-any-return]


def _autocommit(conn: Any) -> AbstractContextManager[None]:
    """One statement is atomic by itself: no transaction around it (one round trip)."""
    return nullcontext()


@contextmanager
def _snapshot(conn: Any) -> Iterator[None]:
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


#: PostgreSQL's side of the shared statements (:mod:`agentactors._dialect`): the server's clock, rows locked
#: ``FOR UPDATE``, a single statement in autocommit, reads of one snapshot in ``REPEATABLE READ``.
DIALECT: Final = Dialect(
    sql=_sql, row_lock=" FOR UPDATE", transaction=_transaction, single=_autocommit, snapshot=_snapshot
)
