"""SqliteStore: a real database file, WAL, one transaction per commit, optimistic versions, formats.

Real threads and files: the real clock (no virtual time).
"""

from __future__ import annotations

import json
import sqlite3
from functools import partial
from pathlib import Path

import anyio
import pytest

from agentactors.errors import SessionConflictError, SessionFormatError
from agentactors.loop.pause import PausedRun
from agentactors.messages import Message, ToolCall
from agentactors.sessions import SqliteStore
from agentactors.sessions.codec import messages_to_json
from agentactors.sessions.store import SessionRecord

pytestmark = pytest.mark.anyio

HISTORY = (Message.user("hi"), Message.assistant("hello"))


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="busy_timeout"):
        SqliteStore("x.db", busy_timeout=-1)
    with pytest.raises(ValueError, match="synchronous"):
        SqliteStore("x.db", synchronous="SOMETIMES")  # type: ignore[arg-type]
    assert SqliteStore("x.db", synchronous="full").synchronous == "FULL"  # type: ignore[arg-type]


async def test_commit_load_delete_on_a_file(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        assert await store.load("k") is None
        call = ToolCall("c1", "refund", {"amount": 5})
        pause = PausedRun("run-1", (*HISTORY, Message.assistant("", [call])), (call,), (), (call,))
        first = await store.commit(SessionRecord("k", HISTORY), expected_version=None)
        assert first == SessionRecord("k", HISTORY, 1)
        second = await store.commit(SessionRecord("k", HISTORY, 0, pause, "run-1"), expected_version=1)
        assert second.version == 2 and await store.load("k") == second
        assert repr(store).endswith(", open)")
        assert not await store.delete("k", expected_version=1)
        assert await store.delete("k", expected_version=2)
        assert await store.load("k") is None
    assert not repr(store).endswith(", open)")
    conn = _raw(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT value FROM agentactors_meta WHERE name = 'layout'").fetchone()[0] == 1
    finally:
        conn.close()


async def test_the_connection_is_configured(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db", busy_timeout=2.5, synchronous="FULL")
    try:
        await store.load("k")
        conn = store._conn  # the test looks at its own store's connection
        assert conn is not None
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 2500
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert conn.isolation_level is None
    finally:
        await store.aclose()


async def test_two_stores_on_one_file_conflict_and_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as a, SqliteStore(path) as b:
        await a.commit(SessionRecord("k", HISTORY[:1]), expected_version=None)
        with pytest.raises(SessionConflictError, match="already exists"):
            await b.commit(SessionRecord("k", HISTORY), expected_version=None)
        await b.commit(SessionRecord("k", HISTORY), expected_version=1)
        with pytest.raises(SessionConflictError, match="at version 2, not 1") as info:
            await a.commit(SessionRecord("k", (Message.user("lost?"),)), expected_version=1)
        assert info.value.key == "k"
        loaded = await a.load("k")
        assert loaded is not None and loaded.messages == HISTORY and loaded.version == 2
        await b.delete("k")
        with pytest.raises(SessionConflictError, match="no longer stored"):
            await a.commit(SessionRecord("k"), expected_version=2)


async def test_concurrent_commits_to_many_keys_all_land(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.db") as store:
        async with anyio.create_task_group() as tg:
            for i in range(50):
                record = SessionRecord(f"k{i}", (Message.user(str(i)),))
                tg.start_soon(partial(store.commit, record, expected_version=None))
        for i in range(50):
            loaded = await store.load(f"k{i}")
            assert loaded is not None and loaded.messages == (Message.user(str(i)),)


async def test_an_unstorable_record_writes_nothing(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.db") as store:
        bad = SessionRecord("k", (Message.assistant("", [ToolCall("c", "t", {"x": object()})]),))
        with pytest.raises(TypeError, match="not object"):
            await store.commit(bad, expected_version=None)
        assert await store.load("k") is None
        await store.commit(SessionRecord("k"), expected_version=None)  # the lock was not left taken


async def test_a_held_write_lock_makes_a_commit_wait_then_fail(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path, busy_timeout=0.2) as store:
        await store.load("k")  # the tables exist
        other = _raw(path)
        try:
            other.execute("BEGIN IMMEDIATE")
            started = anyio.current_time()
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                await store.commit(SessionRecord("k"), expected_version=None)
            assert anyio.current_time() - started >= 0.15
            other.execute("ROLLBACK")
        finally:
            other.close()
        assert (await store.commit(SessionRecord("k"), expected_version=None)).version == 1


async def test_a_store_is_used_again_after_aclose(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    await store.commit(SessionRecord("k"), expected_version=None)
    await store.aclose()
    await store.aclose()  # idempotent
    record = await store.load("k")
    assert record is not None and record.version == 1
    await store.aclose()


# --- formats ---------------------------------------------------------------------------------------


async def _insert(path: Path, key: str, body: str, version: int = 1) -> None:
    async with SqliteStore(path) as store:
        await store.load(key)  # creates the tables
    conn = _raw(path)
    try:
        conn.execute(
            "INSERT INTO agentactors_sessions (key, version, body, updated) VALUES (?, ?, ?, 0)", (key, version, body)
        )
    finally:
        conn.close()


async def test_a_format_1_row_is_migrated_when_read_and_rewritten_at_the_next_commit(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    await _insert(path, "k", json.dumps({"format": 1, "history": messages_to_json(HISTORY)}), version=4)
    async with SqliteStore(path) as store:
        record = await store.load("k")
        assert record == SessionRecord("k", HISTORY, 4)
        conn = _raw(path)
        try:
            assert json.loads(conn.execute("SELECT body FROM agentactors_sessions").fetchone()[0])["format"] == 1
            await store.commit(SessionRecord("k", (*HISTORY, Message.user("more"))), expected_version=4)
            assert json.loads(conn.execute("SELECT body FROM agentactors_sessions").fetchone()[0])["format"] == 3
        finally:
            conn.close()


async def test_a_newer_row_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    body = json.dumps({"format": 9, "messages": [], "whatever": "a later version added"})
    await _insert(path, "k", body)
    async with SqliteStore(path) as store:
        with pytest.raises(SessionFormatError, match="format 9, newer") as info:
            await store.load("k")
        assert info.value.found == 9
    conn = _raw(path)
    try:
        assert conn.execute("SELECT body FROM agentactors_sessions").fetchone()[0] == body
    finally:
        conn.close()


async def test_a_database_with_a_newer_layout_is_refused_on_open(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        await store.load("k")
    conn = _raw(path)
    try:
        conn.execute("UPDATE agentactors_meta SET value = 2 WHERE name = 'layout'")
    finally:
        conn.close()
    store = SqliteStore(path)
    with pytest.raises(SessionFormatError, match="has layout 2"):
        await store.load("k")
    await store.aclose()  # nothing was left open
    assert store._conn is None


def _message_keys(path: Path) -> list[str]:
    conn = _raw(path)
    try:
        return [k for (k,) in conn.execute("SELECT key FROM agentactors_messages ORDER BY key, start")]
    finally:
        conn.close()


async def test_deleting_a_session_row_by_hand_deletes_its_messages(tmp_path: Path) -> None:
    """Expiring old sessions is a ``DELETE`` of their rows (the docs say so), from any tool — the ``sqlite3`` shell,
    whose connections do not enforce foreign keys.  Their messages, the bulk of the data, stayed behind for ever.
    A trigger deletes them with the row; a session created again on the key holds its new messages only."""
    path = tmp_path / "s.db"
    longer = (*HISTORY, Message.user("again"), Message.assistant("sure"))
    async with SqliteStore(path) as store:
        for key in ("old", "kept"):
            first = await store.commit(SessionRecord(key, HISTORY), expected_version=None)
            await store.commit(SessionRecord(key, longer, kept=2), expected_version=first.version)
    conn = _raw(path)  # a plain connection: foreign keys off, as in the sqlite3 shell
    try:
        conn.execute("DELETE FROM agentactors_sessions WHERE key = 'old'")
    finally:
        conn.close()
    assert _message_keys(path) == ["kept", "kept"]
    async with SqliteStore(path) as store:
        assert await store.load("old") is None
        again = (Message.user("new"),)
        await store.commit(SessionRecord("old", again), expected_version=None)
        assert (await store.load("old")) == SessionRecord("old", again, 1)
        assert (await store.load("kept")) == SessionRecord("kept", longer, 2)


async def test_a_database_of_the_previous_version_loses_its_orphans_and_nothing_else(tmp_path: Path) -> None:
    """A file made by the previous version has no such trigger, and may hold the messages of rows deleted by hand:
    opened by this version, it gets the trigger and loses those orphans once — every session's messages stay."""
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        await store.commit(SessionRecord("live", HISTORY), expected_version=None)
    conn = _raw(path)
    try:  # what the previous version left: no trigger, and the messages of a row deleted by hand
        conn.execute("DROP TRIGGER agentactors_sessions_forget")
        conn.execute("INSERT INTO agentactors_messages VALUES ('gone', 0, ?)", (json.dumps(messages_to_json(HISTORY)),))
    finally:
        conn.close()
    assert _message_keys(path) == ["gone", "live"]
    async with SqliteStore(path) as store:
        assert await store.load("live") == SessionRecord("live", HISTORY, 1)
    assert _message_keys(path) == ["live"]
    conn = _raw(path)
    try:
        conn.execute("DELETE FROM agentactors_sessions")
    finally:
        conn.close()
    assert _message_keys(path) == []
