"""rt.recover() with several runs: what goes wrong with one of them stays with it, and the others are finished.

Runs left by real processes killed with SIGKILL, on both journals (a SQLite file, a real PostgreSQL server).  A
damaged row (bad JSON, a missing step) is a typed error naming its run, raised after the other runs were finished;
a run whose lease another recoverer takes over is left to it — neither cancels the runs recovering beside it (a
cancelled run is *ended* ``cancelled``: never recovered again).  Real processes, files, servers and threads: the
real clock.
"""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from agentactors import Agent, Runtime, ToolCall, ToolContext, tool
from agentactors.journal import JournalFormatError, RecoveryError
from agentactors.providers.scripted import ScriptedProvider
from tests.support.journals import sql
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

from .crashing import STEPS, Stateless, make_agent, open_journal

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]






def _crash(db: str, ledger: Path, where: str) -> str:
    """A run killed at ``where`` (``tool:N``, ``model:N``): its run id."""
    before = _run_ids(db)
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.journal.crashing", db, str(ledger), where],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )
    assert done.returncode == -9, (where, done.returncode, done.stdout, done.stderr)  # killed, not finished
    (run_id,) = _run_ids(db) - before
    return run_id


def _run_ids(db: str) -> set[str]:
    try:
        return {r for (r,) in sql(db, "SELECT run_id FROM agentactors_runs")}
    except (sqlite3.OperationalError, psycopg.errors.UndefinedTable):  # no run yet: no table yet
        return set()


def _statuses(db: str) -> dict[str, str]:
    return {r: s for r, s in sql(db, "SELECT run_id, status FROM agentactors_runs")}


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("UPDATE agentactors_steps SET response = '{not json' WHERE run_id = ? AND step = 1", "does not decode"),
        ("DELETE FROM agentactors_steps WHERE run_id = ? AND step = 1", "step 1 is missing"),
        ("UPDATE agentactors_steps SET response = NULL WHERE run_id = ? AND step = 1", "step 1 has results"),
    ],
)
async def test_a_damaged_run_is_a_typed_error_naming_it_and_the_others_are_recovered(
    tmp_path: Path, db: str, damage: str, says: str
) -> None:
    ledger = tmp_path / "ledger.txt"
    first = _crash(db, ledger, "tool:3")
    damaged = _crash(db, ledger, "tool:3")  # steps 1 and 2 whole, step 3's results never committed
    last = _crash(db, ledger, "tool:2")
    sql(db, damage, damaged)
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        bound = make_agent(ledger).bind(rt)
        # Listing skips it (a warning names it): one bad row does not hide the runs that can be recovered.
        assert sorted(r.run_id for r in await journal.unfinished()) == sorted([first, last])
        with pytest.raises(JournalFormatError, match=says) as loaded:
            await journal.load_run(damaged)
        assert damaged in str(loaded.value)
        with pytest.raises(RecoveryError) as caught:
            await rt.recover()
    error = caught.value
    assert damaged in str(error) and list(error.errors) == [damaged]
    assert isinstance(error.errors[damaged], JournalFormatError)
    assert sorted(r.run_id for r in error.results) == sorted([first, last])
    assert all(r.content == f"charged {STEPS} times" for r in error.results)
    assert bound.name == "payer"
    assert _statuses(db) == {first: "finished", damaged: "running", last: "finished"}  # left as it is


class _Told(logging.Handler):
    """Sets ``event`` when a log record's message holds ``needle``."""

    def __init__(self, needle: str, event: anyio.Event) -> None:
        super().__init__()
        self.needle = needle
        self.event = event

    def emit(self, record: logging.LogRecord) -> None:
        if self.needle in record.getMessage():
            self.event.set()


@pytest.fixture
def journal_log() -> Iterator[logging.Logger]:
    logger = logging.getLogger("agentactors.journal")
    handlers = list(logger.handlers)
    yield logger
    logger.handlers[:] = handlers


async def test_a_recovered_run_whose_lease_is_taken_over_leaves_the_others_recovering(
    tmp_path: Path, db: str, journal_log: logging.Logger
) -> None:
    # The recovering process stalls inside one run's tool past its lease (a SIGSTOP, a long GC pause) and another
    # recoverer takes that run over: this run stops at its next commit (LeaseLostError) and goes on there — and
    # the run recovering beside it, mid-tool then, must go on here, not be cancelled (ended "cancelled", lost).
    ledger = tmp_path / "ledger.txt"
    stalled = _crash(db, ledger, "tool:1")
    beside = _crash(db, ledger, "tool:1")
    thief = open_journal(db)
    lost = anyio.Event()
    journal_log.addHandler(_Told(stalled, lost))
    taken: list[Any] = []

    @tool
    async def charge(ctx: ToolContext, cents: int) -> str:
        """Charge the card."""
        if ctx.run_id == stalled and not taken:
            sql(db, "UPDATE agentactors_runs SET lease_until = NOW - 1, owner = 'elsewhere|pid:[1]|1|abc' "
                 "WHERE run_id = ?", stalled)
            taken.append(await thief.claim(stalled))
        elif ctx.run_id == beside and ctx.step == 1:
            with anyio.fail_after(30):
                await lost.wait()  # still in its tool when the other run learns its lease is lost
        return f"charged {cents}"

    try:
        async with open_journal(db) as journal, Runtime(journal=journal) as rt:
            bound = Agent(Stateless(), tools=[charge], name="payer").bind(rt)
            (result,) = await rt.recover()
    finally:
        await thief.aclose()
    assert bound.name == "payer" and taken and taken[0] is not None
    assert result.run_id == beside and result.content == f"charged {STEPS} times"
    assert _statuses(db) == {stalled: "running", beside: "finished"}
    assert sql(db, "SELECT owner FROM agentactors_runs WHERE run_id = ?", stalled) == [(thief.owner,)]


async def test_a_run_taken_over_from_this_journal_is_recovered_by_it_once_the_taker_is_gone(db: str) -> None:
    # This process stalled, lost the run to another recoverer, and that one died with it unfinished: the run is a
    # crashed process's like any other, and this long-lived journal (a replica calling recover() every minute)
    # must list it again — not keep it as "running here" forever because it once opened it.
    thief = open_journal(db)

    @tool
    async def stalls(ctx: ToolContext) -> str:
        """The process stalls past its lease; another recoverer takes the run over meanwhile."""
        sql(db, "UPDATE agentactors_runs SET lease_until = NOW - 1, owner = 'elsewhere|pid:[1]|1|abc'")
        assert await thief.claim(ctx.run_id or "") is not None
        return "done"

    provider = ScriptedProvider([[ToolCall("c1", "stalls", {})], "answer"])
    try:
        async with open_journal(db) as journal, Runtime(journal=journal):
            with pytest.raises(Exception):  # noqa: B017  (LeaseLostError, as the run's tool step raised it)
                await Agent(provider, tools=[stalls], name="staller").run("go")
            (run_id,) = [r for (r,) in sql(db, "SELECT run_id FROM agentactors_runs")]
            assert await journal.unfinished() == []  # the other recoverer holds it, alive
            sql(db, "UPDATE agentactors_runs SET lease_until = NOW - 1")  # ... until it died: its lease expired
            assert [r.run_id for r in await journal.unfinished()] == [run_id]
    finally:
        await thief.aclose()
