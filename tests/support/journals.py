"""What the journal tests share: :data:`Make`, the type of the ``make`` fixture (``tests/unit/journal/conftest.py``),
and :func:`sql`, a statement on a journal's database from outside."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from typing import Any

from agentactors.journal import JournalStore

__all__ = ["Make", "sql"]

#: A factory of journal objects on one database: each call a new object (a new connection, as another process or a
#: restart would make).
Make = Callable[[], JournalStore]


def sql(db: str, statement: str, *args: Any) -> list[tuple[Any, ...]]:
    """One statement on the journal's database ``db`` (a SQLite path or a PostgreSQL DSN) from outside, as another
    process would run it: ``?`` placeholders, ``NOW`` for the database's clock in epoch seconds; its rows."""
    if db.startswith("postgresql://"):
        import psycopg

        statement = statement.replace("?", "%s").replace("NOW", "EXTRACT(EPOCH FROM clock_timestamp())")
        with psycopg.connect(db, autocommit=True) as conn:
            cursor = conn.execute(statement, args)
            return list(cursor.fetchall()) if cursor.description else []
    # closing(): a connection's own ``with`` ends a transaction, not the connection (3.13 warns of one left open).
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        return conn.execute(statement.replace("NOW", "((julianday('now') - 2440587.5) * 86400.0)"), args).fetchall()
