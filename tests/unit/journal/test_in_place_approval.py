"""A journaled step decided in place (``approval="wait"``): its calls run in two executor messages, each committing the
step's results — the step keeps both, so recover(), replay() and fork() serve the whole step and run nothing twice.

On a SQLite file and a real PostgreSQL server (the crash tests).  Real processes (killed by SIGKILL), files, servers
and threads: the real clock, with generous bounds.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import anyio
import pytest

from agentactors import JsonlRecorder, Runtime, SqliteJournal, fork, replay
from agentactors.loop.result import RunResult
from agentactors.tools.results import ToolStatus
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

from .crashing import open_journal
from .crashing_in_place import make_agent

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
ANSWER = "noted paying + sent 5"


def _crash(backend: str, db: str, ledger: Path, where: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.journal.crashing_in_place", backend, db, str(ledger), where],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )
    assert done.returncode == -9, (done.stdout, done.stderr)  # killed, not finished


def _effects(ledger: Path) -> Counter[str]:
    lines = ledger.read_text().split("\n") if ledger.exists() else []
    return Counter(line for line in lines if line)


def _tool_messages(result: RunResult[object]) -> list[tuple[str | None, str]]:
    return [(m.tool_call_id, m.content) for m in result.messages if m.role == "tool"]


def _backend(anyio_backend: object) -> str:
    return anyio_backend if isinstance(anyio_backend, str) else str(anyio_backend[0])  # type: ignore[index]


async def test_a_run_killed_after_an_in_place_approval_is_recovered_with_each_call_run_once(
    tmp_path: Path, db: str, anyio_backend: object
) -> None:
    ledger = tmp_path / "ledger.txt"
    _crash(_backend(anyio_backend), db, ledger, "model:2")
    before = _effects(ledger)
    assert sorted(k.split()[1] for k in before) == ["note", "send_money"]  # both ran once before the crash
    async with open_journal(db) as journal:
        (run,) = await journal.unfinished()
        (step,) = run.steps
        assert [r.call_id for r in step.results or ()] == ["note-1", "pay-1"]  # the step's results: both executes'
        assert not any(r.awaiting_approval for r in step.results or ())
        async with Runtime(journal=journal) as rt:
            with anyio.fail_after(30):  # served whole: no call runs, nobody is asked to decide again
                (result,) = await rt.recover(agents=[make_agent(ledger)])
    assert result.ok and result.content == ANSWER and result.run_id == run.run_id
    assert _effects(ledger) == before  # neither the plain call nor the approved one ran again
    assert _tool_messages(result) == [("note-1", "noted paying"), ("pay-1", "sent 5")]  # each result once, in order

    run_id = result.run_id or ""
    async with open_journal(db) as journal:
        again = await replay(journal, run_id)  # no vendor call, no tool call: the step served from the recording
        assert again.content == ANSWER and _tool_messages(again) == _tool_messages(result)
        forked = await fork(journal, run_id, 2, agent=make_agent(ledger))  # step 1 served, step 2 live
        assert forked.content == ANSWER and _tool_messages(forked) == _tool_messages(result)
        assert forked.forked_from == run_id
    assert _effects(ledger) == before


async def test_a_run_decided_in_place_is_replayed_and_forked_from_its_journal(tmp_path: Path) -> None:
    db, ledger, events = tmp_path / "runs.db", tmp_path / "ledger.txt", tmp_path / "events.jsonl"
    agent = make_agent(ledger)
    with JsonlRecorder(events) as jsonl:
        async with SqliteJournal(db) as journal, Runtime([jsonl], journal=journal) as rt:
            async with agent.bind(rt).stream("pay") as run:
                async for event in run:
                    if event.type == "run.awaiting_approval":
                        break
                await run.approve("pay-1")
                result = await run.wait()
    assert result.ok and result.content == ANSWER
    ran = _effects(ledger)
    assert sorted(ran.values()) == [1, 1]
    run_id = result.run_id or ""
    async with SqliteJournal(db) as journal:
        (step, _) = (await journal.load_run(run_id)).steps
        assert [(r.call_id, r.status) for r in step.results or ()] == [
            ("note-1", ToolStatus.ok), ("pay-1", ToolStatus.ok)
        ]
        again = await replay(journal, run_id)
        assert again.content == ANSWER and _tool_messages(again) == _tool_messages(result)
        forked = await fork(journal, run_id, 2, agent=make_agent(ledger))
        assert forked.content == ANSWER and _tool_messages(forked) == _tool_messages(result)
    from_events = await replay(events, run_id)  # the event record tells the step's two executor messages too
    assert from_events.content == ANSWER and _tool_messages(from_events) == _tool_messages(result)
    assert _effects(ledger) == ran


async def test_a_run_killed_while_waiting_in_place_asks_again_and_runs_the_decided_call_for_real(
    tmp_path: Path, db: str, anyio_backend: object
) -> None:
    """The decision was never committed: the recovered run waits for one again (here: times out, so ``denied``);
    the plain call, committed before the wait, is not run again, and the decided call gets its decision — not the
    "awaiting approval" placeholder the first commit stored for it."""
    ledger = tmp_path / "ledger.txt"
    _crash(_backend(anyio_backend), db, ledger, "waiting")
    before = _effects(ledger)
    assert [k.split()[1] for k in before] == ["note"]
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        with anyio.fail_after(30):
            (result,) = await rt.recover(agents=[make_agent(ledger, approval_timeout=0.2)])
    assert _effects(ledger) == before  # note not again; send_money denied (timed out), never run
    (note, pay) = _tool_messages(result)
    assert note == ("note-1", "noted paying")
    assert pay[0] == "pay-1" and "sent" not in pay[1] and "awaiting" not in pay[1].lower(), pay
    async with open_journal(db) as journal:
        (step, _) = (await journal.load_run(result.run_id or "")).steps
        assert [(r.call_id, r.status) for r in step.results or ()] == [
            ("note-1", ToolStatus.ok), ("pay-1", ToolStatus.denied)
        ]
