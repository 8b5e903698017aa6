"""``rt.recover()`` in a process that keeps running: a supervisor task recovering while the service runs new runs, two
recoveries at once, a pause this process already resumed, a runtime closed and opened again, a recovery cancelled
or failing before its run starts, a journal locked or deleted meanwhile.

Runs left by real processes killed with SIGKILL, on both journals (a SQLite file, a real PostgreSQL server), on
asyncio and trio.  Real processes, files, servers and threads: the real clock.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from agentactors import Agent, Runtime, ToolContext, tool
from agentactors.errors import PauseConsumedError
from agentactors.journal import JournalError, RecoveryError
from tests.support.journals import sql
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

from .crashing import STEPS, Stateless, open_journal
from .crashing_kinds import agents as kinds

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[3]

#: Until SqlJournal counts a claimed run as running here only once it opens, and forgets a run whose begin or end
#: commit failed (agentactors/journal/_sql.py: recov's report, /tmp/s13/recov/_sql.py.patch).


def _crash(db: str, ledger: Path, where: str) -> str:
    """A run killed at ``where`` (``tool:N``, ``model:N``) in another process: its run id."""
    before = _run_ids(db)
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.journal.crashing", db, str(ledger), where],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )
    assert done.returncode == -9, (where, done.returncode, done.stdout, done.stderr)  # killed, not finished
    (run_id,) = _run_ids(db) - before
    return run_id


def _crash_resumed(db: Path, ledger: Path) -> None:
    """A run paused for approval, resumed, and the resumed run killed inside its second charge, in another process."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.journal.crashing_kinds", "resumed", str(db), str(ledger), "tool:2"],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )
    assert done.returncode == -9, (done.stdout, done.stderr)


def _run_ids(db: str) -> set[str]:
    try:
        return {r for (r,) in sql(db, "SELECT run_id FROM agentactors_runs")}
    except Exception:  # no run yet: no table yet
        return set()


def _statuses(db: str) -> dict[str, str]:
    return {r: s for r, s in sql(db, "SELECT run_id, status FROM agentactors_runs")}


def _effects(ledger: Path) -> list[str]:
    return [line.split()[0] for line in ledger.read_text().splitlines() if line] if ledger.exists() else []


def _payer(
    ledger: Path, *, gate: anyio.Event | None = None, started: anyio.Event | None = None, crashed: str = ""
) -> Agent[Any]:
    """The crashed runs' agent (``tests.unit.journal.crashing``), its charge waiting on ``gate`` when given (in a
    run other than ``crashed``: a live one)."""

    @tool
    async def charge(ctx: ToolContext, cents: int) -> str:
        """Charge the card."""
        with ledger.open("a") as file:
            file.write(f"{ctx.idempotency_key} {cents}\n")
        if started is not None and ctx.run_id != crashed:
            started.set()
        if gate is not None and ctx.run_id != crashed:
            await gate.wait()
        else:
            await anyio.sleep(0.05)  # long enough for a second recoverer to look meanwhile
        return f"charged {cents}"

    return Agent(Stateless(), tools=[charge], name="payer")


def _once_each(effects: list[str], run_id: str, cut: int) -> None:
    """Each charge of ``run_id`` once, but the one the crash cut (inside its tool): twice, with the same key."""
    counts = Counter(k for k in effects if k.startswith(run_id))
    assert counts == {f"{run_id}:call-{n}": 2 if n == cut else 1 for n in range(1, STEPS + 1)}, counts


# -- two recoveries at once, and a recovery beside live runs ---------------------------------------------------


async def test_two_recoveries_at_once_in_one_runtime_finish_each_run_once(tmp_path: Path, db: str) -> None:
    ledger = tmp_path / "ledger.txt"
    first, second = _crash(db, ledger, "tool:1"), _crash(db, ledger, "tool:2")
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        agent = _payer(ledger).bind(rt)
        found: list[list[Any]] = [[], []]

        async def recover(i: int) -> None:
            found[i] = await rt.recover()

        async with anyio.create_task_group() as tg:  # a supervisor's periodic task, and a start-up call, at once
            tg.start_soon(recover, 0)
            tg.start_soon(recover, 1)
        assert await rt.recover() == []
    assert agent.name == "payer"
    assert sorted(r.run_id for r in [*found[0], *found[1]]) == sorted([first, second])  # each run by one of them
    effects = _effects(ledger)
    _once_each(effects, first, 1)
    _once_each(effects, second, 2)
    assert _statuses(db) == {first: "finished", second: "finished"}


async def test_a_recovery_beside_a_live_run_leaves_it_to_its_task(tmp_path: Path, db: str) -> None:
    ledger = tmp_path / "ledger.txt"
    gate, started = anyio.Event(), anyio.Event()
    crashed = _crash(db, ledger, "tool:2")
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        live = _payer(ledger, gate=gate, started=started, crashed=crashed).bind(rt)
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def serve() -> None:
                results.append(await live.run("pay"))

            tg.start_soon(serve)
            await started.wait()  # the live run is inside its tool, its lease held here
            (recovered,) = await rt.recover()  # a supervisor's pass: the crashed run, never the live one
            # Another runtime of this process on the same database (the runtime restarted, the old one still
            # running): the live run is not its to take either.
            async with open_journal(db) as again, Runtime(journal=again) as rt2:
                other = _payer(ledger).bind(rt2)
                assert await again.unfinished() == []
                assert await rt2.recover() == []
            gate.set()
        assert other.name == "payer"
    assert recovered.run_id == crashed and recovered.content == f"charged {STEPS} times"
    (result,) = results
    assert result.run_id != crashed and result.content == f"charged {STEPS} times"
    assert Counter(_effects(ledger))[f"{result.run_id}:call-1"] == 1  # the live run's charges ran once
    assert set(_statuses(db).values()) == {"finished"}


# -- a pause this process already resumed ------------------------------------------------------------------------


def _reopen(db: str, run_id: str) -> None:
    """``run_id`` as a run whose last step and end were never committed, its lease free: what a crash leaves (here
    in the process that ran it: its end could not be committed, its journal closed)."""
    sql(db, "DELETE FROM agentactors_steps WHERE run_id = ? AND step = (SELECT MAX(step) FROM agentactors_steps"
            " WHERE run_id = ?)", run_id, run_id)
    sql(db, "UPDATE agentactors_runs SET status = 'running', ended = NULL, content = NULL, owner = NULL,"
            " lease_until = NULL WHERE run_id = ?", run_id)


async def test_a_resumed_run_whose_pause_this_process_claimed_is_recovered_here(tmp_path: Path, db: str) -> None:
    ledger = tmp_path / "ledger.txt"
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        payer = kinds("resumed", ledger)[0].bind(rt)
        paused = await payer.run("pay")
        approve = {paused.pending_approvals[0].id: True}
        resumed = await payer.resume(paused, approve)  # this process claimed the pause
        assert resumed.content == f"charged {STEPS} times"
        charged = _effects(ledger)
        _reopen(db, resumed.run_id or "")
        (recovered,) = await rt.recover()  # a supervisor's pass finds it: not a PauseConsumedError
        assert recovered.run_id == resumed.run_id and recovered.content == f"charged {STEPS} times"
        assert await rt.recover() == []
        with pytest.raises(PauseConsumedError):  # and the pause is still consumed for a person's second click
            await payer.resume(paused, approve)
    assert _effects(ledger) == charged  # nothing ran again: every committed charge was served
    assert sorted(_statuses(db).values()) == ["finished", "paused"]


# -- a recovery that fails or is cancelled before its run starts -------------------------------------------------


class _Refuses:
    """An agent of the crashed run's name whose run fails before it starts (no run opened, no step)."""

    name = "payer"

    async def run(self, inputs: Any, *, runtime: Any) -> Any:
        raise RuntimeError("no seat for this run")


class _Hangs:
    """An agent of the crashed run's name whose run waits before it starts (a toolset slow to list, say)."""

    name = "payer"

    def __init__(self) -> None:
        self.waiting = anyio.Event()  # set once the recovery handed it the run: it waits from then on

    async def run(self, inputs: Any, *, runtime: Any) -> Any:
        self.waiting.set()
        await anyio.sleep_forever()


async def test_a_recovered_run_that_never_started_is_recovered_by_a_later_call(tmp_path: Path, db: str) -> None:
    ledger = tmp_path / "ledger.txt"
    crashed = _crash(db, ledger, "tool:2")
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        with pytest.raises(RecoveryError) as caught:
            await rt.recover(agents=[_Refuses()])
        assert list(caught.value.errors) == [crashed]
        hangs = _Hangs()
        with anyio.CancelScope() as scope:  # a supervisor's pass cancelled (shutdown) before the run started
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: rt.recover(agents=[hangs]))
                await hangs.waiting.wait()
                scope.cancel()
        assert scope.cancelled_caught
        assert [r.run_id for r in await journal.unfinished()] == [crashed]  # still this process's to recover
        (result,) = await rt.recover(agents=[_payer(ledger)])
    assert result.run_id == crashed and result.content == f"charged {STEPS} times"
    _once_each(_effects(ledger), crashed, 2)
    assert _statuses(db) == {crashed: "finished"}


async def test_a_recovery_cancelled_while_its_run_goes_on_ends_the_run_cancelled(tmp_path: Path, db: str) -> None:
    ledger = tmp_path / "ledger.txt"
    crashed = _crash(db, ledger, "tool:2")
    gate, started = anyio.Event(), anyio.Event()
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        agent = _payer(ledger, gate=gate, started=started)
        async with anyio.create_task_group() as tg:

            async def supervise() -> None:
                await rt.recover(agents=[agent])

            tg.start_soon(supervise)
            await started.wait()  # the recovered run is inside its tool
            tg.cancel_scope.cancel()
        # A run cancelled is ended, as a live one cancelled is: not left leased to this process, never run again.
        assert await journal.unfinished() == []
        assert await rt.recover(agents=[_payer(ledger)]) == []
    assert _statuses(db) == {crashed: "cancelled"}


# -- a journal locked or deleted during recovery ----------------------------------------------------------------


async def test_a_sqlite_journal_locked_during_recovery_is_a_typed_error_and_the_runs_wait(tmp_path: Path) -> None:
    db, ledger = str(tmp_path / "runs.db"), tmp_path / "ledger.txt"
    first, second = _crash(db, ledger, "tool:1"), _crash(db, ledger, "tool:2")
    async with open_journal(db, busy_timeout=0.2) as journal, Runtime(journal=journal) as rt:
        agent = _payer(ledger).bind(rt)
        assert len(await journal.unfinished()) == 2  # the journal's connection is open (its tables made)
        other = sqlite3.connect(db, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another process's writer holds the file
            with pytest.raises(RecoveryError) as caught:  # listing reads (WAL): each claim waits, then fails
                await rt.recover()
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert sorted(caught.value.errors) == sorted([first, second]) and caught.value.results == []
        assert all(isinstance(e, sqlite3.OperationalError) for e in caught.value.errors.values())
        found = await rt.recover()  # nothing was taken: the next pass recovers both
    assert agent.name == "payer" and sorted(r.run_id for r in found) == sorted([first, second])
    _once_each(_effects(ledger), first, 1)
    _once_each(_effects(ledger), second, 2)


async def test_a_sqlite_journal_deleted_during_recovery_is_a_typed_error(tmp_path: Path) -> None:
    db, ledger = str(tmp_path / "runs.db"), tmp_path / "ledger.txt"
    crashed = _crash(db, ledger, "tool:2")
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        agent = _payer(ledger).bind(rt)
        assert [r.run_id for r in await journal.unfinished()] == [crashed]  # the file is open
        os.unlink(db)
        with pytest.raises(RecoveryError) as caught:
            await rt.recover()
    assert agent.name == "payer" and list(caught.value.errors) == [crashed]
    assert isinstance(caught.value.errors[crashed], JournalError)


# -- a run whose end could not be committed -----------------------------------------------------------------------


class _LocksAtTheEnd(Stateless):
    """The crashed runs' model, whose answer comes while another process holds the journal's file locked: the run's
    last commit (its answer and its end) fails, and so does the ``"raised"`` end after it."""

    def __init__(self, db: str) -> None:
        super().__init__()
        self.db = db
        self.holder: sqlite3.Connection | None = None

    async def complete(self, request: Any) -> Any:
        response = await super().complete(request)
        if not response.tool_calls and self.holder is None:
            self.holder = sqlite3.connect(self.db, isolation_level=None)
            self.holder.execute("BEGIN IMMEDIATE")
        return response

    def release(self) -> None:
        if self.holder is not None:
            self.holder.execute("ROLLBACK")
            self.holder.close()


async def test_a_run_whose_end_could_not_be_committed_is_recovered_by_this_process(tmp_path: Path) -> None:
    db, ledger = str(tmp_path / "runs.db"), tmp_path / "ledger.txt"
    model = _LocksAtTheEnd(db)
    agent = attrs.evolve(_payer(ledger), provider=model)
    async with open_journal(db, busy_timeout=0.2) as journal, Runtime(journal=journal) as rt:
        try:
            with pytest.raises(Exception) as caught:
                await agent.run("pay")
        finally:
            model.release()
        assert "locked" in repr(caught.value) or "locked" in str(caught.value.__cause__)
        (run_id,) = _statuses(db)
        assert _statuses(db) == {run_id: "running"}  # its end never landed: what a crash leaves
        # A supervisor's pass here finishes it — every tool served, the answer asked again — rather than leave
        # it counted as running here, its lease renewed as long as this journal lives, for nobody to recover.
        (result,) = await rt.recover(agents=[_payer(ledger)])
    assert result.run_id == run_id and result.content == f"charged {STEPS} times"
    assert Counter(_effects(ledger)) == {f"{run_id}:call-{n}": 1 for n in range(1, STEPS + 1)}
    assert _statuses(db) == {run_id: "finished"}


async def test_a_resumed_run_recovered_from_a_dead_process_consumes_its_pause_here(tmp_path: Path) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    _crash_resumed(db, ledger)
    async with open_journal(str(db)) as journal, Runtime(journal=journal) as rt:
        payer = kinds("resumed", ledger)[0].bind(rt)
        (recorded,) = await journal.unfinished()
        assert recorded.resume is not None
        paused, decisions = recorded.resume
        (result,) = await rt.recover()
        assert result.content == f"charged {STEPS} times"
        with pytest.raises(PauseConsumedError):  # a person's click arriving late: the recovered resume consumed it
            await payer.resume(paused, decisions)


async def test_an_agent_bound_as_a_statement_is_still_found_by_recover(tmp_path: Path, db: str) -> None:
    """``agent.bind(rt)`` written as a statement (its bound copy dropped, as a reader of "agents bound to the
    runtime" may write it): a runtime with a journal keeps the latest bound under each name, so recover() finds it
    (held only weakly, the copy was collected and the run left for later with a warning)."""
    import gc

    ledger = tmp_path / "ledger.txt"
    crashed = _crash(db, ledger, "tool:2")
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        _payer(ledger).bind(rt)
        gc.collect()
        found = await rt.recover()
    assert [r.run_id for r in found] == [crashed] and found[0].ok
    _once_each(_effects(ledger), crashed, 2)
    assert _statuses(db) == {crashed: "finished"}
