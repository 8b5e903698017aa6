"""``python -m agentactors replay | fork FILE`` with a SQLite database that is no journal (another program's) says
so and leaves it as it was.  It opened it as a journal — which creates the journal's tables in it — then said "holds
no run": a read-only command had written four tables and their indexes into someone else's database.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from agentactors.__main__ import main


def _schema(path: Path) -> list[tuple[str]]:
    db = sqlite3.connect(path)
    try:
        return sorted(db.execute("SELECT name FROM sqlite_master").fetchall())
    finally:
        db.close()


@pytest.mark.parametrize("command", ["replay", "fork"])
def test_a_database_that_is_no_journal_is_said_so_and_left_alone(
    tmp_path: Path, command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "app.db"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    before = _schema(path)
    options: list[str] = []
    if command == "fork":  # --agent is checked first: give it an Agent
        (tmp_path / "trialcliagent.py").write_text(
            "from agentactors import Agent\n"
            "from agentactors.providers.scripted import ScriptedProvider\n"
            "agent = Agent(ScriptedProvider(['x']), name='shop')\n"
        )
        monkeypatch.syspath_prepend(str(tmp_path))
        options = ["--at", "2", "--agent", "trialcliagent:agent"]
    assert main([command, str(path), "run-1", *options]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a SQLite database but no journal" in err, err
    assert _schema(path) == before
