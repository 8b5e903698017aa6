"""A SQLite journal or session store at a path that cannot be opened says which path and why.

Before, what a missing directory, a directory, or a file that is not a database raised was sqlite3's own
``OperationalError("unable to open database file")`` / ``DatabaseError("file is not a database")``, naming no
path: with several stores in a process, nobody could tell which.  Now it is a :class:`ConnectionError` — what the
PostgreSQL journal and store raise for a server they cannot reach — naming the path and SQLite's reason, sqlite3's
error its cause.  A busy database ("database is locked") and a full disk stay sqlite3's errors (documented).
Real files on real threads: the real clock.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from agentactors import Agent, Runtime, ScriptedProvider, SqliteJournal
from agentactors.sessions import SqliteStore

pytestmark = pytest.mark.anyio


def _bad_paths(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """What is at each bad path, and SQLite's reason for it."""
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("hello, not a database " * 100)
    (tmp_path / "a-dir").mkdir()
    return {
        "missing directory": (str(tmp_path / "nowhere" / "runs.db"), "unable to open database file"),
        "a directory": (str(tmp_path / "a-dir"), "unable to open database file"),
        "not a database": (str(not_a_db), "file is not a database"),
    }


@pytest.mark.parametrize("kind", ["missing directory", "a directory", "not a database"])
async def test_a_journal_at_a_bad_path_names_it(tmp_path: Path, kind: str) -> None:
    path, reason = _bad_paths(tmp_path)[kind]
    with anyio.fail_after(30):
        with pytest.raises(ConnectionError) as caught:
            async with SqliteJournal(path) as journal, Runtime(journal=journal):
                await Agent(ScriptedProvider(["answer"]), name="a").run("go")
    assert repr(path) in str(caught.value) and reason in str(caught.value)
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)


@pytest.mark.parametrize("kind", ["missing directory", "a directory", "not a database"])
async def test_a_session_store_at_a_bad_path_names_it(tmp_path: Path, kind: str) -> None:
    path, reason = _bad_paths(tmp_path)[kind]
    with anyio.fail_after(30):
        async with SqliteStore(path) as store:
            with pytest.raises(ConnectionError) as caught:
                await store.load("s1")
    assert repr(path) in str(caught.value) and reason in str(caught.value)
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)
