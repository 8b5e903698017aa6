"""A SqliteJournal whose file another connection holds locked: a commit waits ``busy_timeout``, then fails typed.

Journal commits are shielded from cancellation, so what ends one waiting for another process's write lock is
``busy_timeout``: it must be set on every connection, end in ``sqlite3.OperationalError`` ("database is locked")
with nothing written, and mean what it says for any value — SQLite keeps it in milliseconds in a C ``int``, and a
value past that (about 24.8 days) was silently read as 0: fail at once instead of waiting.  A real file, real
threads: the real clock.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from agentactors import SqliteJournal
from agentactors.loop.tape import Commit
from agentactors.messages import Message
from agentactors.sessions import SqliteStore

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

INPUTS = (Message.user("go"),)


async def test_a_commit_behind_a_held_write_lock_fails_within_busy_timeout_and_the_next_one_lands(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.db"
    async with SqliteJournal(path, busy_timeout=0.3) as journal:
        await journal.commit("r1", "a", INPUTS, Commit(begin=True))
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another process's writer, in the middle of its transaction
            started = time.monotonic()
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                await journal.commit("r1", "a", INPUTS, Commit(end="cancelled"))
            assert 0.25 <= time.monotonic() - started < 5
            assert (await journal.load_run("r1")).status == "running"  # readers are not blocked (WAL)
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                await journal.claim("r1")
            other.execute("ROLLBACK")
        finally:
            other.close()
        await journal.commit("r1", "a", INPUTS, Commit(end="cancelled"))
        assert (await journal.load_run("r1")).status == "cancelled"


@pytest.mark.parametrize("seconds", [2147484.0, 1e7, 1e308])
async def test_a_busy_timeout_past_what_sqlite_keeps_waits_the_longest_it_can_not_zero(
    tmp_path: Path, seconds: float
) -> None:
    async with SqliteJournal(tmp_path / "j.db", busy_timeout=seconds) as journal:
        await journal.park("k", "1")
        conn = journal._worker.conn
        assert conn is not None
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 2**31 - 1
    async with SqliteStore(tmp_path / "s.db", busy_timeout=seconds) as store:
        await store.load("k")
        conn = store._conn
        assert conn is not None
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 2**31 - 1
