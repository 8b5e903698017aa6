"""What the journal tests share: :data:`Make`, the type of the ``make`` fixture (``tests/unit/journal/conftest.py``),
:func:`journal_on`, a journal object on a ``db`` fixture's database, :func:`sql`, a statement on a journal's
database from outside, and for replays :class:`Counting` (a scripted model that counts its calls) and
:func:`vendor_failure`."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from typing import Any

from agentactors.errors import ProviderError
from agentactors.journal import JournalStore
from agentactors.messages import LLMRequest

__all__ = ["Counting", "Make", "journal_on", "sql", "vendor_failure"]

#: A factory of journal objects on one database: each call a new object (a new connection, as another process or a
#: restart would make).
Make = Callable[[], JournalStore]


def journal_on(db: str) -> JournalStore:
    """A new journal object on ``db`` (a ``db`` fixture's value): a PostgreSQL DSN's, else a SQLite file's."""
    from agentactors.journal import PostgresJournal, SqliteJournal

    return PostgresJournal(db) if db.startswith("postgresql://") else SqliteJournal(db)


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


class Counting:
    """A scripted model's answers (a ``ScriptedProvider``'s function), counted: a replay must ask none of them.  An
    answer that is an exception is raised; past the last answer, the last one again."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.calls = 0

    async def __call__(self, request: LLMRequest) -> Any:
        self.calls += 1
        answer = self.answers[min(self.calls, len(self.answers)) - 1]
        if isinstance(answer, BaseException):
            raise answer
        return answer


def vendor_failure() -> ProviderError:
    """A vendor's transient failure (a 500), as a model call that failed."""
    return ProviderError("vendor said no", provider="scripted", kind="transient", status=500)
