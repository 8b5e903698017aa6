"""The delegation tree's run count and durable runs: a recovered tree counts each run once, a replay none.

A real process killed by SIGKILL inside the tree (``crashing_tree``), recovered here with ``max_runs`` exactly the
tree's size: nothing is refused, each side effect happens once (the cut one twice, with its own key).  Real
processes and files: the real clock.
"""

from __future__ import annotations

import sqlite3
import sys
from contextlib import closing
from pathlib import Path

import anyio
import pytest

from agentactors import InMemoryRecorder, Runtime, SqliteJournal, replay

from .crashing_tree import RUNS, WORKERS, agents

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]


def _refusals(text: str) -> int:
    return text.count("refused this call")  # a tool's own refusal (results.refused_itself_text)


async def test_a_recovered_tree_counts_each_run_once_and_a_replay_refuses_nothing(tmp_path: Path) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [sys.executable, "-m", "tests.unit.agent.crashing_tree", str(db), str(ledger)], cwd=ROOT, check=False
        )
    assert done.returncode == -9, done.stderr  # killed inside the third leaf's note
    with closing(sqlite3.connect(db)) as conn:
        recorded = conn.execute("SELECT run_id, parent_run_id FROM agentactors_runs").fetchall()
    assert len(recorded) == 1 + RUNS  # the whole tree had started before the crash
    before = ledger.read_text().splitlines()
    rec = InMemoryRecorder()
    async with SqliteJournal(db) as journal, Runtime(journal=journal, recorders=[rec]) as rt:
        bound = [agent.bind(rt) for agent in agents(ledger)]  # held: the runtime knows its agents weakly
        with anyio.fail_after(60):
            (result,) = await rt.recover()
    assert bound and result.ok and _refusals(result.content) == 0
    assert result.content == " | ".join(["worker: leaf: noted"] * WORKERS)
    assert not [e for e in rec.events if e.type == "delegation.refused"]
    # Each child the recovery started again is a run of the crashed tree, started once, under its own id.
    again = [e.run_id for e in rec.events if e.type == "run.started" and e.parent_run_id is not None]
    assert len(again) == len(set(again)) and set(again) <= {run_id for run_id, _ in recorded}
    assert len(result.children) == WORKERS
    after = ledger.read_text().splitlines()
    assert after[: len(before)] == before and len(set(after)) == WORKERS  # each leaf's note once (the cut one again)

    replayed_rec = InMemoryRecorder()
    async with SqliteJournal(db) as journal:
        replayed = await replay(journal, result.run_id, agents=agents(ledger), recorders=[replayed_rec])
    assert replayed.content == result.content
    assert not [e for e in replayed_rec.events if e.type == "delegation.refused"]
    assert ledger.read_text().splitlines() == after  # no tool ran
