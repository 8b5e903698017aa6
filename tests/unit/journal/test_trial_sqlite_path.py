"""A SQLite journal's path given where a JSONL record is read (``replay("runs.db", ...)``, ``explain_fork(forked,
"runs.db")``, ``python -m agentactors explain runs.db RUN_ID``) is said to be a SQLite database, with what to pass
instead.  It was "runs.db, line 1: not a JSON event record ('utf-8' codec can't decode byte 0xf8 ...)": true, and
no help to a user whose ``replay`` and ``fork`` commands take that very file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentactors import Agent, Runtime, SqliteJournal, ToolCall, fork, replay
from agentactors.__main__ import main
from agentactors.events import EventRecordError
from agentactors.explain import Explanation
from agentactors.journal import explain_fork
from agentactors.providers.scripted import ScriptedProvider

from .conftest import Ledger

pytestmark = pytest.mark.anyio


async def _journaled(path: Path) -> str:
    agent = Agent(
        ScriptedProvider([[ToolCall("c1", "lookup", {"city": "Lisbon"})], "Sunny."]), tools=Ledger().tools(),
        name="shop",
    )
    async with SqliteJournal(path) as journal, Runtime(journal=journal):
        result = await agent.run("Weather?")
    return result.run_id or ""


async def test_a_journal_path_read_as_a_record_is_named_a_sqlite_database(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = await _journaled(db)
    for reading in (replay(str(db), run_id), fork(db, run_id, 2, agent=Agent(ScriptedProvider(["x"]), name="shop"))):
        with pytest.raises(EventRecordError, match=r"is a SQLite database .*SqliteJournal"):
            await reading
    async with SqliteJournal(db) as journal:
        forked = await fork(journal, run_id, 2, agent=Agent(ScriptedProvider(["x"]), name="shop"))
    with pytest.raises(EventRecordError, match="is a SQLite database"):
        await explain_fork(forked, str(db))
    with pytest.raises(EventRecordError, match="is a SQLite database"):
        Explanation.from_jsonl(db, run_id)


async def test_explain_of_a_journal_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    run_id = await _journaled(db)
    assert main(["explain", str(db), run_id]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a SQLite database" in err and "codec" not in err, err
