"""A session store nobody closed closes its connection when it is collected, as a journal does.

``rt.recover(sessions=store)`` and a store made in passing do not hand the store to a runtime that would close it.
Python 3.13 warns of a SQLite connection left to the garbage collector (``ResourceWarning: unclosed database``,
which the suite turns into an error), and a psycopg connection left so warns too; the journals already close
theirs from a finaliser (``agentactors/journal/_sql.py``).
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

import agentactors._db_worker as db_worker
from agentactors.sessions import SqliteStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each ``Worker.close_sync`` call: whether it found a connection open."""
    seen: list[bool] = []
    real = db_worker.Worker.close_sync

    def spy(self: db_worker.Worker[Any]) -> None:
        seen.append(self.conn is not None)
        real(self)

    monkeypatch.setattr(db_worker.Worker, "close_sync", spy)
    return seen


async def test_a_collected_sqlite_store_closes_its_connection(tmp_path: Path, closed: list[bool]) -> None:
    store = SqliteStore(tmp_path / "s.db")
    assert await store.load("k") is None  # the connection is open now
    del store
    gc.collect()
    assert closed == [True]


async def test_a_store_closed_by_hand_then_collected_closes_nothing_twice(tmp_path: Path, closed: list[bool]) -> None:
    store = SqliteStore(tmp_path / "s.db")
    await store.load("k")
    await store.aclose()
    del store
    gc.collect()
    assert closed in ([], [False])  # nothing left open to close
