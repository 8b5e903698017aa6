"""A store or journal closed and dropped leaves nothing behind in the event loop that used it.

Each database worker (``SqliteStore``, ``SqliteJournal``, the PostgreSQL ones) made an anyio ``RunVar`` of its own for
its per-loop limiter; anyio keeps every ``RunVar`` set in a loop — and its value — for the loop's whole life, so a
service opening a store per request, tenant or test grew by ~1 KB for each one it had closed.
"""

from __future__ import annotations

import gc
from pathlib import Path

import anyio
import pytest

from agentactors import Message
from agentactors.journal import SqliteJournal
from agentactors.sessions import SessionRecord, SqliteStore

pytestmark = pytest.mark.anyio


def _limiters() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, anyio.CapacityLimiter))


async def test_stores_opened_and_closed_in_one_loop_leave_no_limiter_behind(tmp_path: Path) -> None:
    async def one(i: int) -> None:
        store = SqliteStore(tmp_path / "sessions.db")
        try:
            await store.commit(SessionRecord(f"k{i}", (Message.user("hi"),), 0), expected_version=None)
            assert await store.load(f"k{i}") is not None
        finally:
            await store.aclose()

    for i in range(5):  # warm: what the loop keeps once (thread pools, the first limiter map)
        await one(i)
    before = _limiters()
    for i in range(5, 105):
        await one(i)
    assert _limiters() - before < 10


async def test_journals_opened_and_closed_in_one_loop_leave_no_limiter_behind(tmp_path: Path) -> None:
    async def one() -> None:
        journal = SqliteJournal(tmp_path / "journal.db")
        try:
            assert await journal.unfinished() == []
        finally:
            await journal.aclose()

    for _ in range(5):
        await one()
    before = _limiters()
    for _ in range(100):
        await one()
    assert _limiters() - before < 10
