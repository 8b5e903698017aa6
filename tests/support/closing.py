"""What the tests of closing a SQL journal or store share: a table held locked from outside, and whether a
connection was closed.

:func:`held` takes, from another connection (as another process would), a lock a write to ``table`` of the database
``db`` (a SQLite path or a PostgreSQL DSN) waits for: SQLite's write lock (``BEGIN IMMEDIATE``, the whole file), or
PostgreSQL's ``EXCLUSIVE`` lock on the table (reads go on).  A write of the journal or store then runs in its worker
thread until ``busy_timeout`` (SQLite) or ``lock_timeout`` (PostgreSQL) ends it: a statement that is running.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import Any

import anyio

__all__ = ["LOCKED", "eventually", "held", "is_closed", "is_postgres"]


def is_postgres(db: str) -> bool:
    return db.startswith("postgresql://")


def _locked_errors() -> tuple[type[BaseException], ...]:
    import psycopg.errors

    return (sqlite3.OperationalError, psycopg.errors.LockNotAvailable)


#: What a write behind :func:`held` raises once its database's bound ends it.
LOCKED: tuple[type[BaseException], ...] = _locked_errors()


@contextmanager
def held(db: str, table: str) -> Iterator[None]:
    """A lock writes to ``table`` wait for, held from another connection for the block (see the module)."""
    if is_postgres(db):
        import psycopg

        with psycopg.connect(db) as conn:  # a transaction: the lock lasts until it ends
            conn.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")
            try:
                yield
            finally:
                conn.rollback()
        return
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")


def is_closed(conn: Any) -> bool:
    """Whether ``conn`` (a ``sqlite3`` or psycopg connection) was closed."""
    if isinstance(conn, sqlite3.Connection):
        try:
            conn.total_changes  # noqa: B018  (what a closed sqlite3 connection refuses)
        except sqlite3.ProgrammingError:
            return True
        return False
    return bool(conn.closed)


async def eventually(check: Callable[[], bool], within: float) -> bool:
    """Whether ``check()`` became true within ``within`` seconds (real time: threads are involved)."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(0.02)
    return True
