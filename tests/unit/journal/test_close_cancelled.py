"""A SQL journal left by a cancellation still closes: its connections, and its lease keeper's thread.

``async with journal:`` left because its task was cancelled (a timeout, a shutdown) used to close nothing: the close
stopped at its first checkpoint, and the file descriptor, the PostgreSQL connection (counted against the server's
``max_connections``) and the lease keeper's thread lived on until the journal was collected.  The close is shielded
and bounded: it waits for a statement running on the connection at most ``CLOSE_TIMEOUT`` seconds, and a
connection still busy then is closed by a thread of its own as soon as that statement returns.  SQLite and
PostgreSQL, real threads: the real clock, generous bounds.
"""

from __future__ import annotations

import time

import anyio
import pytest

import agentactors._db_worker as db_worker
from agentactors.journal import PostgresJournal, SqliteJournal
from agentactors.journal._sql import PARKED, RUNS, SqlJournal
from agentactors.loop.tape import Commit
from agentactors.messages import Message
from tests.support.closing import LOCKED, eventually, held, is_closed, is_postgres
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

INPUTS = (Message.user("go"),)


def journal_at(db: str, *, lease: float = 30.0, wait: float = 5.0) -> SqlJournal:
    """A journal on ``db`` whose writes wait ``wait`` seconds for a lock another connection holds."""
    if is_postgres(db):
        return PostgresJournal(db, lease=lease, lock_timeout=wait)
    return SqliteJournal(db, lease=lease, busy_timeout=wait)


async def test_a_block_left_by_a_cancellation_closes_the_connections_and_stops_the_lease_keeper(db: str) -> None:
    journal = journal_at(db, lease=1)  # renewed every third of a second: the renewer's connection opens
    keeper = None
    with anyio.CancelScope() as scope:
        async with journal:
            await journal.park("k", "1")
            journal.open_run("r1", "a", INPUTS, parent_run_id=None, resumed=False)  # the keeper starts
            keeper = journal._keeper._thread
            assert await eventually(lambda: journal._renewer.conn is not None, within=5)
            conns = (journal._worker.conn, journal._renewer.conn)
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert journal._worker.conn is None and journal._renewer.conn is None
    assert all(is_closed(conn) for conn in conns)
    assert keeper is not None and not keeper.is_alive()


async def test_a_close_already_cancelled_closes_all_the_same(db: str) -> None:
    journal = journal_at(db)
    await journal.park("k", "1")
    conn = journal._worker.conn
    went_on = False
    with anyio.CancelScope() as scope:
        scope.cancel()
        await journal.aclose()
        went_on = True  # a cancelled caller gets its cancellation once the close is done, not later
    assert scope.cancelled_caught and not went_on
    assert journal._worker.conn is None and is_closed(conn)
    assert await journal.parked("k") == "1"  # and used again, it opens a new connection


async def test_a_close_cancelled_behind_a_running_statement_closes_once_it_returned(db: str) -> None:
    journal = journal_at(db, wait=0.6)
    await journal.park("k", "1")  # its tables made, its connection open
    conn = journal._worker.conn

    async def stuck() -> None:
        with pytest.raises(LOCKED):
            await journal.park("k", "2")

    with held(db, PARKED):
        async with anyio.create_task_group() as tg:
            tg.start_soon(stuck)
            assert await eventually(lambda: journal._worker._lock.locked(), within=10)  # its statement runs
            with anyio.CancelScope() as scope:
                scope.cancel()
                started = time.monotonic()
                await journal.aclose()  # waits for the park (its bound: 0.6 s), then closes
            assert time.monotonic() - started < 8
            assert journal._worker.conn is None and is_closed(conn)
    assert await journal.parked("k") == "1"


async def test_a_close_past_its_bound_leaves_and_the_connection_closes_when_the_statement_returns(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_worker, "CLOSE_TIMEOUT", 0.3, raising=False)
    journal = journal_at(db, wait=30.0)  # the statement runs until the lock is let go, after the close left
    await journal.park("k", "1")
    conn = journal._worker.conn
    returned = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def stuck() -> None:
            await journal.park("k", "2")  # it gets the lock once it is let go
            returned.set()

        with held(db, PARKED):
            tg.start_soon(stuck)
            assert await eventually(lambda: journal._worker._lock.locked(), within=10)  # its statement runs
            with anyio.move_on_after(0.1):
                async with journal:
                    started = time.monotonic()
                    await anyio.sleep_forever()
            # the caller is not held for the statement (it runs on): left within the bound (~0.4 s idle)
            assert time.monotonic() - started < 2.0
            assert not returned.is_set()  # the statement still runs
        # The lock let go, the park returns: the connection is closed then, or very soon after.
    assert returned.is_set()
    assert await eventually(lambda: journal._worker.conn is None and is_closed(conn), within=10)


async def test_a_renewal_stuck_on_the_database_does_not_hold_the_close_and_ends_closed(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_worker, "CLOSE_TIMEOUT", 0.3, raising=False)
    journal = journal_at(db, lease=1, wait=4.0)
    await journal.commit("r1", "a", INPUTS, Commit(begin=True))
    journal.open_run("r2", "a", INPUTS, parent_run_id=None, resumed=False)  # the keeper starts
    keeper = journal._keeper._thread
    assert keeper is not None
    with held(db, RUNS):
        await anyio.sleep(0.6)  # a renewal (every third of a lease) waits for the lock, in the keeper's thread
        renewer = journal._renewer.conn
        with anyio.CancelScope() as scope:
            scope.cancel()
            started = time.monotonic()
            await journal.aclose()
        assert time.monotonic() - started < 3.0
    assert await eventually(lambda: not keeper.is_alive() and journal._renewer.conn is None, within=10)
    assert renewer is None or is_closed(renewer)
    assert journal._worker.conn is None
