"""A store given an ``expected_version`` that is not a version: a typed error before any I/O, in every store alike.

Before, each store did something else with it: ``SqliteStore.commit(record, expected_version=1.0)`` *committed*
the record, then raised ``ValueError`` building the record it returns (version ``2.0``) — the caller told it
failed when it had not; ``PostgresStore.delete(key, expected_version="1")`` was a ``psycopg.DataError`` from the
driver; a ``MemoryStore`` compared ``True`` equal to version 1 and went on.  Now every store refuses anything
but ``None`` or an ``int >= 0`` (``0``: a version no stored record has — a conflict, as any other stale one).

A real SQLite file and the real PostgreSQL server (threads, sockets): the real clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agentactors.errors import SessionConflictError
from agentactors.messages import Message
from agentactors.sessions import MemoryStore, PostgresStore, SessionStore, SqliteStore
from agentactors.sessions.store import SessionRecord
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401

pytestmark = pytest.mark.anyio

HISTORY = (Message.user("hi"), Message.assistant("hello"))
BAD: list[tuple[Any, type[Exception]]] = [
    (1.0, TypeError), ("1", TypeError), (True, TypeError), (None.__class__, TypeError), (-1, ValueError),
]


@asynccontextmanager
async def _store(kind: str, tmp_path: Path, dsn: str) -> AsyncIterator[SessionStore]:
    if kind == "memory":
        yield MemoryStore()
    elif kind == "sqlite":
        async with SqliteStore(tmp_path / "s.db") as sqlite:
            yield sqlite
    else:
        async with PostgresStore(dsn) as postgres:
            yield postgres


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_an_expected_version_that_is_not_one_is_refused_and_nothing_changes(
    kind: str, tmp_path: Path, postgres_dsn: str  # noqa: F811
) -> None:
    async with _store(kind, tmp_path, postgres_dsn) as store:
        await store.commit(SessionRecord("k", HISTORY), expected_version=None)
        longer = SessionRecord("k", (*HISTORY, Message.user("more")), kept=2)
        for bad, error in BAD:
            with pytest.raises(error, match="expected_version"):
                await store.commit(longer, expected_version=bad)
            with pytest.raises(error, match="expected_version"):
                await store.delete("k", expected_version=bad)
        stored = await store.load("k")
        assert stored is not None and stored.version == 1 and stored.messages == HISTORY
        with pytest.raises(SessionConflictError, match="version 1, not 0"):  # 0: no stored version, a conflict
            await store.commit(longer, expected_version=0)
        assert not await store.delete("k", expected_version=0)
        assert (await store.commit(longer, expected_version=1)).version == 2
        assert await store.delete("k", expected_version=2)
