"""A SQL session store left by a cancellation still closes its connection.

``async with store:`` left because its task was cancelled used to close nothing: the close stopped at its first
checkpoint, and the file descriptor or the PostgreSQL connection (counted against the server's
``max_connections``) lived on until the store was collected.  The close is shielded and bounded: it waits for a
statement running on the connection at most ``CLOSE_TIMEOUT`` seconds, and a connection still busy then is closed
by a thread of its own as soon as that statement returns.  SQLite and PostgreSQL, real threads: the real clock,
generous bounds.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

import agentactors._db_worker as db_worker
from agentactors.sessions import PostgresStore, SessionRecord, SqliteStore
from agentactors.sessions._sql import TABLE, SqlStore
from tests.support.closing import LOCKED, eventually, held, is_closed, is_postgres
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the store is: a SQLite file, or a new database of the test server (its DSN)."""
    if request.param == "sqlite":
        return str(tmp_path / "s.db")
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn


def store_at(db: str, *, wait: float = 5.0) -> SqlStore:
    """A store on ``db`` whose writes wait ``wait`` seconds for a lock another connection holds."""
    if is_postgres(db):
        return PostgresStore(db, lock_timeout=wait)
    return SqliteStore(db, busy_timeout=wait)


async def test_a_block_left_by_a_cancellation_closes_the_connection(db: str) -> None:
    store = store_at(db)
    with anyio.CancelScope() as scope:
        async with store:
            await store.commit(SessionRecord("k"), expected_version=None)
            conn = store._worker.conn
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert store._worker.conn is None and is_closed(conn)
    async with store:  # used again: a new connection
        record = await store.load("k")
        assert record is not None and record.version == 1


async def test_a_close_cancelled_behind_a_running_statement_closes_once_it_returned(db: str) -> None:
    store = store_at(db, wait=0.6)
    await store.commit(SessionRecord("k"), expected_version=None)
    conn = store._worker.conn

    async def stuck() -> None:
        with pytest.raises(LOCKED):
            await store.commit(SessionRecord("k2"), expected_version=None)

    with held(db, TABLE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(stuck)
            assert await eventually(lambda: store._worker._lock.locked(), within=10)  # its statement runs
            with anyio.CancelScope() as scope:
                scope.cancel()
                started = time.monotonic()
                await store.aclose()  # waits for the commit (its bound: 0.6 s), then closes
            assert time.monotonic() - started < 8
            assert store._worker.conn is None and is_closed(conn)
    assert await store.load("k2") is None
    await store.aclose()


async def test_a_close_past_its_bound_leaves_and_the_connection_closes_when_the_statement_returns(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_worker, "CLOSE_TIMEOUT", 0.3, raising=False)
    store = store_at(db, wait=30.0)  # the statement runs until the lock is let go, after the close left
    await store.commit(SessionRecord("k"), expected_version=None)
    conn = store._worker.conn
    returned = anyio.Event()

    async def stuck() -> None:
        await store.commit(SessionRecord("k2"), expected_version=None)  # it gets the lock once it is let go
        returned.set()

    async with anyio.create_task_group() as tg:
        with held(db, TABLE):
            tg.start_soon(stuck)
            assert await eventually(lambda: store._worker._lock.locked(), within=10)  # its statement runs
            with anyio.move_on_after(0.1):
                async with store:
                    started = time.monotonic()
                    await anyio.sleep_forever()
            # the caller is not held for the statement (it runs on): left within the bound (~0.4 s idle)
            assert time.monotonic() - started < 2.0
            assert not returned.is_set()  # the statement still runs
        # The lock let go, the commit returns: the connection is closed then, or very soon after.
    assert returned.is_set()
    assert await eventually(lambda: store._worker.conn is None and is_closed(conn), within=10)


async def test_a_close_already_cancelled_closes_then_delivers_the_cancellation(db: str) -> None:
    store = store_at(db)
    await store.commit(SessionRecord("k"), expected_version=None)
    conn = store._worker.conn
    went_on = False
    with anyio.CancelScope() as scope:
        scope.cancel()
        await store.aclose()
        went_on = True  # a cancelled caller gets its cancellation once the close is done, not later
    assert scope.cancelled_caught and not went_on
    assert store._worker.conn is None and is_closed(conn)
