"""A SqliteStore whose file is deleted or replaced under it refuses to write: a typed error, never a silent loss.

An open SQLite connection keeps writing to the file it opened — after an ``rm`` of it (and of its ``-wal``),
to an unlinked inode the next process never sees.  A store that went on acknowledging commits there would
lose every turn while the session's version kept rising.  So each commit and delete checks that the path still
names the file its connection opened, as the SQLite journal does.  Real files and threads: the real clock.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

import anyio
import pytest

from agentactors import Agent, Runtime
from agentactors.errors import SessionError
from agentactors.messages import Message
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import SqliteStore
from agentactors.sessions.store import SessionRecord

pytestmark = pytest.mark.anyio


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


async def test_a_deleted_store_file_is_a_typed_error_at_the_next_turn_and_nothing_is_pretended(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    with anyio.fail_after(60):
        store = SqliteStore(path)
        async with Runtime() as rt:
            session = rt.session(Agent(ScriptedProvider(lambda request: "a")), "k", store=store)
            await session.send("one")
            _remove(path)
            with pytest.raises(SessionError, match="was deleted while this store had it open") as caught:
                await session.send("two")
            assert str(path) in str(caught.value)
            assert session.version == 1
    assert not path.exists()  # no new empty database was made in its place either


async def test_a_store_file_replaced_under_it_refuses_commits_and_deletes_and_the_new_file_is_untouched(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn, conn:
        conn.execute("CREATE TABLE kept (x)")
    with anyio.fail_after(60):
        async with SqliteStore(path) as store:
            first = await store.commit(SessionRecord("k", (Message.user("hi"),)), expected_version=None)
            _remove(path)
            os.replace(other, path)
            with pytest.raises(SessionError, match="was replaced by another file"):
                await store.commit(SessionRecord("k", (Message.user("hi"), Message.user("more"))), expected_version=1)
            with pytest.raises(SessionError, match="was replaced by another file"):
                await store.commit(SessionRecord("new", ()), expected_version=None)
            with pytest.raises(SessionError, match="was replaced by another file"):
                await store.delete(first.key)
    with closing(sqlite3.connect(path)) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert tables == ["kept"]


async def test_a_store_opened_again_after_the_file_went_writes_a_new_file(tmp_path: Path) -> None:
    """The way out the error names: close the store (or open another); its next use opens the path again."""
    path = tmp_path / "sessions.db"
    with anyio.fail_after(60):
        async with SqliteStore(path) as store:
            await store.commit(SessionRecord("k", ()), expected_version=None)
            _remove(path)
            with pytest.raises(SessionError):
                await store.commit(SessionRecord("j", ()), expected_version=None)
            await store.aclose()
            stored = await store.commit(SessionRecord("j", ()), expected_version=None)
            assert stored.version == 1
            assert await store.load("k") is None
        assert path.exists()
