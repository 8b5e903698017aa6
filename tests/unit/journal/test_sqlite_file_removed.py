"""A SqliteJournal whose file is deleted or replaced under it refuses to commit: a typed error, never a silent loss.

An open SQLite connection keeps writing to the file it opened — after an ``rm`` of it (and of its ``-wal``),
to an unlinked inode the next process never sees.  A journal that went on acknowledging commits there would
promise durability it no longer has: every run would "commit" its steps, and a crash would leave nothing to
recover.  So each commit checks that the path still names the file its connection opened.  Real files and
threads: the real clock.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import warnings
from contextlib import closing
from pathlib import Path

import anyio
import pytest

from agentactors import Agent, Runtime, SqliteJournal
from agentactors.journal import JournalError
from agentactors.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.anyio


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


async def test_a_deleted_journal_file_is_a_typed_error_at_the_next_commit(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with anyio.fail_after(60):
        async with SqliteJournal(path) as journal, Runtime(journal=journal):
            first = await Agent(ScriptedProvider(["one"]), name="a").run("go")
            assert first.content == "one"
            _remove(path)
            with pytest.raises(JournalError, match="was deleted while this journal had it open") as caught:
                await Agent(ScriptedProvider(["two"]), name="a").run("go")
            assert str(path) in str(caught.value)
    assert not path.exists()  # nothing pretended: no new empty journal was made in its place either


async def test_a_run_whose_begin_cannot_be_committed_never_starts_and_leaves_no_coroutine_behind(
    tmp_path: Path,
) -> None:
    """The begin commit fails: the run's coroutine is closed, not left to the collector ("never awaited")."""
    path = tmp_path / "runs.db"
    with anyio.fail_after(60):
        async with SqliteJournal(path) as journal, Runtime(journal=journal):
            await Agent(ScriptedProvider(["one"]), name="a").run("go")
            _remove(path)
            model = ScriptedProvider(["two"])
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with pytest.raises(JournalError):
                    await Agent(model, name="a").run("go")
                gc.collect()
            assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
            assert model.calls == 0  # the run never started


async def test_a_journal_file_replaced_under_it_is_a_typed_error_and_the_new_file_is_untouched(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn, conn:
        conn.execute("CREATE TABLE kept (x)")
    with anyio.fail_after(60):
        async with SqliteJournal(path) as journal, Runtime(journal=journal):
            await Agent(ScriptedProvider(["one"]), name="a").run("go")
            _remove(path)
            os.replace(other, path)  # another file where the journal was
            with pytest.raises(JournalError, match="was replaced by another file"):
                await Agent(ScriptedProvider(["two"]), name="a").run("go")
    with closing(sqlite3.connect(path)) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert tables == ["kept"]


async def test_a_journal_that_keeps_its_file_commits_as_before(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with anyio.fail_after(60):
        async with SqliteJournal(path) as journal, Runtime(journal=journal):
            results = [await Agent(ScriptedProvider([f"n{n}"]), name="a").run("go") for n in range(3)]
        async with SqliteJournal(path) as journal:  # closed and opened again: the same file, a new connection
            for result in results:
                assert (await journal.load_run(result.run_id or "")).status == "finished"
