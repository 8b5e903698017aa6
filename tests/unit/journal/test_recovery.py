"""rt.recover(): a real process killed by SIGKILL mid-run, its run finished here, each side effect once.

On both journals: a SQLite file and a real PostgreSQL server (tests/support/postgres.py).
Real processes, files, servers and threads: the real clock.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from agentactors import Runtime
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

from .crashing import STEPS, make_agent, open_journal

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]




def _crash(db: str, ledger: Path, where: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.journal.crashing", str(db), str(ledger), where],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )
    assert done.returncode == -9, done.stderr  # killed, not finished


def _effects(ledger: Path) -> list[tuple[str, int]]:
    lines = ledger.read_text().split("\n") if ledger.exists() else []
    return [(key, int(cents)) for key, cents in (line.split() for line in lines if line)]


@pytest.mark.parametrize("where", ["model:1", "tool:1", "model:2", "tool:2", "model:3", "tool:3", "model:4"])
async def test_a_killed_run_is_finished_with_each_side_effect_once(tmp_path: Path, db: str, where: str) -> None:
    ledger = tmp_path / "ledger.txt"
    _crash(db, ledger, where)
    before = _effects(ledger)
    agent = make_agent(ledger)
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        bound = agent.bind(rt)  # found by name (among the agents bound to the runtime and alive)
        (result,) = await rt.recover()
        assert await rt.recover() == []  # nothing left to do
    assert result.content == f"charged {STEPS} times" and result.steps == STEPS + 1
    effects = _effects(ledger)
    keys = [key for key, _ in effects]
    assert sorted(set(effects)) == sorted((f"{result.run_id}:call-{n}", 100 * n) for n in range(1, STEPS + 1))
    # Stable keys: an attempt the crash cut short is repeated with the same key (the API deduplicates on it),
    # and nothing that was committed runs again.
    repeated = [k for k, n in Counter(keys).items() if n > 1]
    if where.startswith("tool:"):
        assert repeated == [f"{result.run_id}:call-{where.split(':')[1]}"]
    else:
        assert repeated == []
    assert bound.name == "payer" and effects[: len(before)] == before
    assert all(k.startswith(f"{result.run_id}:") for k in keys)  # the recovered run kept its id


async def test_recover_takes_agents_by_keyword_and_leaves_runs_without_one(tmp_path: Path, db: str) -> None:
    ledger = tmp_path / "ledger.txt"
    _crash(db, ledger, "tool:2")
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        assert await rt.recover() == []  # no agent named "payer" here: left for later
        assert len(await journal.unfinished()) == 1
        (result,) = await rt.recover(agents=[make_agent(ledger)])
    assert result.ok
    with pytest.raises(RuntimeError, match="needs a journal"):
        async with Runtime() as plain:
            await plain.recover()
