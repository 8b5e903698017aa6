"""A store that fails in the middle of a commit: the error reaches the caller typed, nothing is half-written, and
the session goes on.  A real SQLite file that fills up (``max_page_count``: SQLite's own "database or disk is full"
in the middle of the transaction) and a real PostgreSQL server whose connection is cut (``pg_terminate_backend``).
Real threads and sockets: the real clock.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import anyio
import psycopg
import pytest

from agentactors import Agent, Runtime
from agentactors.messages import LLMRequest
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import PostgresStore, SqliteStore
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401

pytestmark = pytest.mark.anyio


def echo_model(request: LLMRequest) -> str:
    return "seen: " + " | ".join(m.content[:8] for m in request.messages if m.role == "user")


async def test_a_full_disk_fails_the_commit_writes_nothing_and_the_session_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=store)
        await session.send("one")
        conn = store._conn
        assert conn is not None
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")  # the next page the commit needs is refused
        with pytest.raises(sqlite3.OperationalError, match="full"):
            await session.send("x" * 200_000)
        assert session.version == 1 and len(session.history) == 2
        async with SqliteStore(path) as other:  # nothing of the failed turn: not its document, not its messages
            stored = await other.load("k")
            assert stored is not None and stored.version == 1 and stored.messages == session.history
        conn.execute("PRAGMA max_page_count = 1073741823")
        assert (await session.send("three")).content == "seen: one | three"
        assert session.version == 2
    async with SqliteStore(path) as again:
        stored = await again.load("k")
        assert stored is not None and [m.content for m in stored.messages] == ["one", "seen: one", "three",
                                                                               "seen: one | three"]


async def test_a_postgres_connection_dropped_during_the_commit_fails_it_and_the_next_turn_reconnects(
    postgres_dsn: str,  # noqa: F811
) -> None:
    """Dropped *during* the commit (one dropped while idle is replaced before it is used:
    ``test_postgres_dropped_connection.py``): the commit waits on a row lock another connection holds, and its
    backend is terminated there."""
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=PostgresStore(postgres_dsn))
        await session.send("one")
        with psycopg.connect(postgres_dsn) as admin:
            admin.execute("SELECT 1 FROM agentactors_sessions WHERE key = 'k' FOR UPDATE")  # held until rollback

            def drop_the_waiting_commit() -> None:
                with psycopg.connect(postgres_dsn, autocommit=True) as killer:
                    for _ in range(1000):
                        waiting = killer.execute(
                            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                            " AND datname = current_database()"
                        ).fetchall()
                        if waiting:
                            killer.execute("SELECT pg_terminate_backend(%s)", waiting[0])
                            return
                        time.sleep(0.01)
                raise AssertionError("the commit never waited for the row lock")

            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(anyio.to_thread.run_sync, drop_the_waiting_commit)
                    with pytest.raises(psycopg.OperationalError):
                        await session.send("two")
            admin.rollback()
        assert session.version == 1
        assert (await session.send("three")).content == "seen: one | three"
        assert session.version == 2
    async with PostgresStore(postgres_dsn) as store:
        stored = await store.load("k")
        assert stored is not None and [m.content for m in stored.messages] == ["one", "seen: one", "three",
                                                                               "seen: one | three"]
