"""A streamed run that ends before its loop begins: what was steered into it is reported, not lost.

A steer sent right after ``async with agent.stream(...)`` is accepted before the run's loop starts.  If the
run then ends without starting — a journaled run whose first journal commit fails (here: another connection
holds the database's write lock) — its actor used to be left as if the run were still to come: the steer
vanished without ``run.steers_unread``, ``run.state().finished`` stayed false, and a later steer was
accepted for a run that was gone instead of raising ``RunFinishedError``.

Real SQLite journal and threads: the real clock.  Bounded.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from agentactors import Agent, Runtime
from agentactors.errors import RunFinishedError
from agentactors.events import InMemoryRecorder
from agentactors.journal import SqliteJournal
from agentactors.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.anyio


async def test_a_steer_to_a_run_whose_journal_never_began_is_reported_unread(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    rec = InMemoryRecorder()
    with anyio.fail_after(10):
        async with SqliteJournal(path, busy_timeout=0.05) as journal, Runtime(journal=journal):
            agent = Agent(ScriptedProvider(["warm", "never"]), recorders=[rec])
            assert (await agent.run("warm up")).ok  # the journal is open and works
            lock = sqlite3.connect(path, isolation_level=None)
            try:
                lock.execute("BEGIN EXCLUSIVE")  # the run's begin commit waits past busy_timeout, then fails
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    async with agent.stream("q") as run:
                        await run.steer("also Oslo")
                        await run.wait()
            finally:
                lock.close()
            assert run.state().finished
            with pytest.raises(RunFinishedError):
                await run.steer("too late")
    own = [e for e in rec.events if e.run_id == run.run_id]
    assert [e.type for e in own] == ["run.steer_received", "run.steers_unread"]
    assert own[-1].data == {"count": 1, "reason": "stopped"}
