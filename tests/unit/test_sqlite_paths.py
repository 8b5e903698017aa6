"""A SQLite store or journal made with a relative path keeps to that file when the process changes directory:
its connections are opened lazily, on worker threads, and again after a close."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentactors import Agent, Message, Runtime, ScriptedProvider, SqliteJournal, SqliteStore

pytestmark = pytest.mark.anyio


async def test_a_journal_made_with_a_relative_path_writes_there_after_a_chdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    journal = SqliteJournal("runs.db")
    assert journal.path == "runs.db" and repr(journal) == "SqliteJournal('runs.db')"  # as given
    monkeypatch.chdir(tmp_path / "elsewhere")  # before its first connection is opened
    async with journal, Runtime(journal=journal):
        result = await Agent(ScriptedProvider(["answer"]), name="a").run("go")
    assert result.content == "answer"
    assert (tmp_path / "here" / "runs.db").exists() and not (tmp_path / "elsewhere" / "runs.db").exists()
    async with SqliteJournal(tmp_path / "here" / "runs.db") as same:
        assert (await same.load_run(result.run_id or "")).finished


async def test_a_store_reopened_after_a_chdir_opens_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentactors.sessions import SessionRecord

    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    async with SqliteStore("chats.db") as store:
        await store.commit(SessionRecord("s1", (Message.user("hi"),)), expected_version=None)
        await store.aclose()  # the next use opens a new connection...
        os.chdir(tmp_path)  # ...from another directory
        loaded = await store.load("s1")
    assert loaded is not None and loaded.messages[0].content == "hi"
    assert not (tmp_path / "chats.db").exists()


def test_memory_and_uri_paths_are_left_as_they_are() -> None:
    from agentactors._sqlite import database_path

    assert database_path(":memory:") == ":memory:" and database_path("") == ""
    assert database_path("file:x.db?mode=ro") == "file:x.db?mode=ro"
    assert database_path("a/b.db") == os.path.join(os.getcwd(), "a", "b.db")
