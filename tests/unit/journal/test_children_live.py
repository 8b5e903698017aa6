"""A recovered run is a live run of the recovering runtime: ``rt.run_ref(run_id)`` finds it by the id it kept.

Real processes, files and threads: the real clock.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, Runtime, SqliteJournal, ToolContext, tool
from agentactors.errors import RunNotFoundError

from .crashing import STEPS, Stateless

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]


async def test_rt_run_ref_reattaches_to_a_recovered_run(tmp_path: Path) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [sys.executable, "-m", "tests.unit.journal.crashing", str(db), str(ledger), "tool:2"], cwd=ROOT, check=False
        )
    assert done.returncode == -9, done.stderr
    async with SqliteJournal(db) as journal:
        (recorded,) = await journal.unfinished()
    run_id = recorded.run_id
    inside, release = anyio.Event(), anyio.Event()

    @tool
    async def charge(ctx: ToolContext, cents: int) -> str:
        """Charge the card (the last charge waits until the test looked at the run)."""
        if ctx.step == STEPS:
            inside.set()
            await release.wait()
        return f"charged {cents}"

    results: list[Any] = []
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        agent = Agent(Stateless(), tools=[charge], name="payer").bind(rt)

        async def recover() -> None:
            results.extend(await rt.recover())

        async with anyio.create_task_group() as tg:
            tg.start_soon(recover)
            with anyio.fail_after(30):
                await inside.wait()
            handle = rt.run_ref(run_id)  # the id the crashed process gave it
            assert handle.run_id == run_id and handle.state().step == STEPS
            await handle.steer("and say thanks")
            release.set()
            with anyio.fail_after(30):
                result = await handle.wait()
        with pytest.raises(RunNotFoundError):
            rt.run_ref(run_id)  # finished
    assert agent.name == "payer" and results == [result]
    assert result.run_id == run_id and result.steps == STEPS + 1
    assert any(m.content == "and say thanks" for m in result.messages)  # the steer reached the recovered run
