"""Leases: several recoverers on one journal finish each run exactly once; a live run is never taken from its process.

On both journals (a SQLite file, a real PostgreSQL server).  Real processes, servers and threads: the real clock.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import time
import weakref
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, Runtime, ToolCall, ToolContext, tool
from agentactors.journal import LeaseLostError
from agentactors.providers.scripted import ScriptedProvider
from tests.support.journals import sql
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

from .crashing import STEPS, make_agent, open_journal

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]






def _crash(db: str, ledger: Path, where: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.journal.crashing", db, str(ledger), where],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )
    assert done.returncode == -9, (where, done.returncode, done.stdout, done.stderr)  # killed, not finished


def _effects(ledger: Path) -> list[str]:
    return [line.split()[0] for line in ledger.read_text().splitlines() if line] if ledger.exists() else []


# A recoverer process: waits for the go file (so two start recovering together), recovers with a slow tool (so
# their recoveries overlap), prints the ids of the runs it finished.
_RECOVERER = """
import sys, anyio
from pathlib import Path
from agentactors import Agent, Runtime, ToolContext, tool
from tests.unit.journal.crashing import Stateless, open_journal

async def main(db, ledger, ready, go):
    @tool
    async def charge(ctx: ToolContext, cents: int) -> str:
        '''Charge the card.'''
        with open(ledger, "a") as f:
            f.write(f"{ctx.idempotency_key} {cents}\\n")
        await anyio.sleep(0.2)
        return f"charged {cents}"

    agent = Agent(Stateless(), tools=[charge], name="payer")
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        bound = agent.bind(rt)  # held weakly by the runtime: kept here
        Path(ready).touch()
        while not Path(go).exists():
            await anyio.sleep(0.01)
        results = await rt.recover()
    print(" ".join(sorted(r.run_id for r in results)), bound.name, file=sys.stderr)
    print(" ".join(sorted(r.run_id for r in results)))

anyio.run(main, *sys.argv[1:5])
"""


def _recover_in_two_processes(db: str, ledger: Path, where: Path) -> list[tuple[int, str, str]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RECOVERER, db, str(ledger), str(where / f"ready-{n}"), str(where / "go")],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for n in (1, 2)
    ]
    deadline = time.monotonic() + 60
    while not all((where / f"ready-{n}").exists() for n in (1, 2)) and time.monotonic() < deadline:
        time.sleep(0.01)
    (where / "go").touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outputs, strict=True)]


async def test_two_processes_racing_recover_finish_each_run_once(tmp_path: Path, db: str) -> None:
    ledger = tmp_path / "ledger.txt"
    crashes = ["tool:1", "model:2", "tool:2", "model:4"]
    for where in crashes:
        _crash(db, ledger, where)
    before = Counter(_effects(ledger))
    outputs = await anyio.to_thread.run_sync(_recover_in_two_processes, db, ledger, tmp_path)
    assert [code for code, _, _ in outputs] == [0, 0], outputs
    finished = [out.split() for _, out, _ in outputs]
    runs = [run_id for (run_id,) in sql(db, "SELECT run_id FROM agentactors_runs")]
    assert len(runs) == len(crashes)
    assert sorted(finished[0] + finished[1]) == sorted(runs)  # each run finished by one recoverer: none twice
    assert sql(db, "SELECT DISTINCT status FROM agentactors_runs") == [("finished",)]
    after = Counter(_effects(ledger))
    for run_id in runs:  # every charge of every run happened; one the crash cut ran again once, with its key
        keys = {f"{run_id}:call-{n}" for n in range(1, STEPS + 1)}
        assert {k for k in after if k.startswith(f"{run_id}:")} == keys
        assert all(after[k] - before[k] <= 1 for k in keys)
        assert all(after[k] == 1 or (before[k] == 1 and after[k] == 2) for k in keys)
    async with open_journal(db) as journal:
        assert await journal.unfinished() == []


async def test_a_lease_held_elsewhere_is_left_until_it_expires(tmp_path: Path, db: str) -> None:
    ledger = tmp_path / "ledger.txt"
    _crash(db, ledger, "tool:2")
    # As if another host's live process held it: its process cannot be looked at from here, only its expiry.
    sql(db, "UPDATE agentactors_runs SET owner = 'elsewhere|pid:[1]|1|abc', lease_until = NOW + 60")
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        bound = make_agent(ledger).bind(rt)  # held weakly by the runtime: kept here
        assert await journal.unfinished() == []
        assert await rt.recover() == []
        (run_id,) = [r for (r,) in sql(db, "SELECT run_id FROM agentactors_runs")]
        assert await journal.claim(run_id) is None
        sql(db, "UPDATE agentactors_runs SET lease_until = NOW - 1")  # it stopped renewing: expired
        (result,) = await rt.recover()
    assert bound.name == "payer" and result.run_id == run_id and result.content == f"charged {STEPS} times"
    assert sql(db, "SELECT status FROM agentactors_runs") == [("finished",)]


async def test_a_live_run_stays_leased_past_its_lease_while_its_process_lives(db: str) -> None:
    seen: list[int] = []
    other = open_journal(db, lease=1.0)

    @tool
    async def slow(ctx: ToolContext) -> str:
        """Longer than the lease: the keeper renews it meanwhile."""
        for _ in range(5):  # 2 s: twice the lease, three looks past it
            await anyio.sleep(0.4)
            seen.append(len(await other.unfinished()))  # another process looking for runs to recover
        return "done"

    provider = ScriptedProvider([[ToolCall("c1", "slow", {})], "answer"])
    async with open_journal(db, lease=1.0) as journal, Runtime(journal=journal):
        result = await Agent(provider, tools=[slow], name="slowpoke").run("go")
    await other.aclose()
    assert result.content == "answer" and seen == [0] * 5


async def test_a_run_whose_lease_was_taken_over_stops_at_its_next_commit(db: str) -> None:
    taken: list[Any] = []
    thief = open_journal(db)

    @tool
    async def stalls(ctx: ToolContext) -> str:
        """The process stalls past its lease; another recoverer takes the run over meanwhile."""
        # Its lease expired (and, under another owner id, this process's keeper can no longer renew it).
        sql(db, "UPDATE agentactors_runs SET lease_until = NOW - 1, owner = 'elsewhere|pid:[1]|1|abc'")
        taken.append(await thief.claim(ctx.run_id or ""))
        return "done"

    provider = ScriptedProvider([[ToolCall("c1", "stalls", {})], "answer"])
    async with open_journal(db) as journal, Runtime(journal=journal):
        with pytest.raises(Exception) as caught:
            await Agent(provider, tools=[stalls], name="staller").run("go")
    await thief.aclose()
    assert _lease_lost(caught.value) is not None
    assert taken and taken[0] is not None and not taken[0].finished
    assert sql(db, "SELECT status, owner FROM agentactors_runs") == [("running", thief.owner)]
    assert sql(db, "SELECT step, results IS NULL FROM agentactors_steps") == [(1, 1)]  # its results: not written


def _lease_lost(exc: BaseException | None) -> LeaseLostError | None:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, LeaseLostError):
            return exc
        seen.add(id(exc))
        if isinstance(exc, BaseExceptionGroup):
            found = [_lease_lost(e) for e in exc.exceptions]
            return next((f for f in found if f is not None), None)
        exc = exc.__cause__ or exc.__context__
    return None


def test_a_lease_under_a_second_is_refused() -> None:
    makes: tuple[Callable[[], object], ...] = (
        lambda: open_journal("x.db", lease=0.5), lambda: open_journal("postgresql://h/db", lease=0)
    )
    for make in makes:
        with pytest.raises(ValueError, match="lease"):
            make()



async def test_a_journal_whose_runs_ended_leaves_its_database_alone(db: str) -> None:
    # Its keeper's thread lives until aclose(); with no run of its own to renew it neither writes nor opens the
    # renewer's connection — a journal a runtime was given and nobody closed stays quiet.
    provider = ScriptedProvider(["answer"])
    journal = open_journal(db, lease=1.0)
    try:
        async with Runtime(journal=journal):
            assert (await Agent(provider, name="quick").run("go")).content == "answer"
        before = sql(db, "SELECT run_id, lease_until FROM agentactors_runs")
        await anyio.sleep(1.0)  # three keeper intervals
        assert sql(db, "SELECT run_id, lease_until FROM agentactors_runs") == before
        assert journal._renewer.conn is None  # what the keeper would have opened to renew
    finally:
        await journal.aclose()


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_a_journal_nobody_closed_is_collected_and_its_keeper_thread_ends(db: str, loop: str) -> None:
    # Runtime(journal=SqliteJournal(path)), as the docs write it, never closes the journal: once nothing holds
    # it (here: its loop has ended), it is collected, and its keeper's thread — which holds it weakly — ends at
    # its next interval instead of living as long as the process.
    made: list[Any] = []

    async def main() -> None:
        journal = open_journal(db, lease=1.0)
        async with Runtime(journal=journal):
            assert (await Agent(ScriptedProvider(["answer"]), name="quick").run("go")).content == "answer"
        made.append((weakref.ref(journal), journal._keeper._thread))  # its keeper's thread, started by the run

    anyio.run(main, backend=loop)
    gone, keeper = made.pop()
    assert keeper is not None and keeper.is_alive()
    # (anyio's worker threads, stopping after the loop, hold the last call's context — the runtime in it — a
    # moment longer: collected within a few tries.)
    deadline = time.monotonic() + 5
    while gc.collect() >= 0 and gone() is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gone() is None
    keeper.join(timeout=5)
    assert not keeper.is_alive()
