"""Journaled runs of every kind — a delegated child, a resumed run, a session's turn, a handed-off run — killed by
SIGKILL mid-run in a real process, and recovered here with each side effect once.

Real processes, files and threads: the real clock.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest

from agentactors import InMemoryRecorder, Message, Runtime, SqliteJournal, SqliteStore
from agentactors.sessions import SessionRecord

from .crashing_kinds import STEPS, agents

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]


def _crash(kind: str, db: Path, ledger: Path, where: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.journal.crashing_kinds", kind, str(db), str(ledger), where],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )
    assert done.returncode == -9, (done.stdout, done.stderr)  # killed, not finished


def _effects(ledger: Path) -> list[tuple[str, int]]:
    lines = ledger.read_text().split("\n") if ledger.exists() else []
    return [(key, int(cents)) for key, cents in (line.split() for line in lines if line)]


def _runs(db: Path) -> dict[str, tuple[str, str | None]]:
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT run_id, status, parent_run_id FROM agentactors_runs").fetchall()
    return {str(r[0]): (str(r[1]), r[2]) for r in rows}


def _check_once(effects: list[tuple[str, int]], run_id: str, where: str) -> None:
    """Each charge's side effect once per key, keys naming ``run_id``; a cut call repeated with its own key."""
    assert sorted(set(effects)) == sorted((f"{run_id}:call-{n}", 100 * n) for n in range(1, STEPS + 1))
    repeated = [k for k, n in Counter(k for k, _ in effects).items() if n > 1]
    assert repeated == ([f"{run_id}:call-{where.split(':')[1]}"] if where.startswith("tool:") else [])


@pytest.mark.parametrize("where", ["model:1", "tool:1", "model:2", "tool:3", "model:4"])
async def test_a_child_killed_mid_run_goes_on_inside_its_recovered_parent(tmp_path: Path, where: str) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    _crash("child", db, ledger, where)
    (parent_id,) = [r for r, (status, parent) in _runs(db).items() if parent is None]
    (child_id,) = [r for r, (status, parent) in _runs(db).items() if parent == parent_id]
    before = _effects(ledger)
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        bound = [a.bind(rt) for a in agents("child", ledger)]
        assert [r.run_id for r in await journal.unfinished()] == [parent_id]  # never the child on its own
        (result,) = await rt.recover()
        assert await rt.recover() == []
    assert bound and result.run_id == parent_id and result.content == f"the payer said: charged {STEPS} times"
    (child,) = result.children
    assert child.run_id == child_id and child.content == f"charged {STEPS} times"  # the same child, its own id
    effects = _effects(ledger)
    assert effects[: len(before)] == before
    _check_once(effects, child_id, where)
    assert _runs(db) == {parent_id: ("finished", None), child_id: ("finished", parent_id)}


@pytest.mark.parametrize("where", ["tool:1", "model:2", "tool:2", "model:4"])
async def test_a_resumed_run_killed_mid_run_is_resumed_again(tmp_path: Path, where: str) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    _crash("resumed", db, ledger, where)
    statuses = _runs(db)
    assert sorted(s for s, _ in statuses.values()) == ["paused", "running"]
    (resumed_id,) = [r for r, (s, _) in statuses.items() if s == "running"]
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        bound = [a.bind(rt) for a in agents("resumed", ledger)]  # held: the runtime holds bound agents weakly
        (recorded,) = await journal.unfinished()
        assert recorded.resume is not None and recorded.resume[1] == {"call-1": True}
        (result,) = await rt.recover()
        assert await rt.recover() == []
    assert bound and result.run_id == resumed_id and result.ok and result.content == f"charged {STEPS} times"
    assert result.steps == STEPS + 1  # the paused run's counters went on, as a resume's do
    _check_once(_effects(ledger), resumed_id, where)


async def test_a_session_turn_is_journaled_step_by_step_and_its_side_effects_recovered(tmp_path: Path) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    _crash("session", db, ledger, "tool:2")
    (run_id,) = _runs(db)
    with closing(sqlite3.connect(db)) as conn:  # steps 1 and 2 committed (2 without its results: the crash came in it)
        steps = conn.execute(
            "SELECT step, results IS NOT NULL FROM agentactors_steps WHERE run_id = ? ORDER BY step", (run_id,)
        ).fetchall()
    assert steps == [(1, 1), (2, 0)]
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        (payer,) = (a.bind(rt) for a in agents("session", ledger))
        (result,) = await rt.recover()
        session = payer.session("customer-1", store=SqliteStore(db))
        await session.refresh()
        # The turn never committed: the session's history is as it was; the recovered run's result is recover()'s.
        assert session.history == ()
    assert result.run_id == run_id and result.content == f"charged {STEPS} times"
    _check_once(_effects(ledger), run_id, "tool:2")


@pytest.mark.parametrize("kind", ["session", "session-later"])
async def test_a_recovered_session_turn_is_committed_to_its_session(tmp_path: Path, kind: str) -> None:
    """With ``sessions=``, the turn the crash cut joins the conversation as the session would have committed it:
    a user who asks again is answered by a model that sees it (and its tools do not run again)."""
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    _crash(kind, db, ledger, "tool:2")
    (run_id,) = _runs(db)
    store = SqliteStore(db)
    before = await store.load("customer-1")
    recorder = InMemoryRecorder()
    async with SqliteJournal(db) as journal, Runtime(journal=journal, recorders=[recorder]) as rt:
        (payer,) = (a.bind(rt) for a in agents(kind, ledger))
        (result,) = await rt.recover(sessions=store)
        assert await rt.recover(sessions=store) == []  # nothing left: committed once
        session = payer.session("customer-1", store=store)
        await session.refresh()
        assert session.history == result.messages
        assert session.version == (1 if before is None else before.version + 1)
        earlier = () if before is None else before.messages
        assert session.history[: len(earlier)] == earlier
        assert session.history[len(earlier)] == Message.user("pay")
        assert session.history[-1].content == f"charged {STEPS} times"
        committed = [e.data for e in recorder.events if e.type == "session.committed"]
        assert committed and committed[0]["recovered"] is True and committed[0]["turn_run_id"] == run_id
    assert result.run_id == run_id and result.ok
    _check_once(_effects(ledger), run_id, "tool:2")


async def test_a_session_active_in_the_recovering_runtime_reloads_and_its_next_turn_goes_through(
    tmp_path: Path,
) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    _crash("session", db, ledger, "tool:2")
    store = SqliteStore(db)
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        (payer,) = (a.bind(rt) for a in agents("session", ledger))
        session = payer.session("customer-1", store=store)
        await session.refresh()  # active here, at the version before the cut turn
        assert session.history == ()
        (result,) = await rt.recover(sessions=store)
        after = await session.send("thanks")  # no SessionConflictError: the actor reloaded first
        assert after.ok and session.history[: len(result.messages)] == result.messages
        assert session.version == 2
    run_id = result.run_id or ""
    # The next turn charges on its own (this payer charges on every turn), under its own run's keys.
    _check_once([e for e in _effects(ledger) if e[0].startswith(f"{run_id}:")], run_id, "tool:2")


async def test_a_recovered_resolved_session_turn_is_committed_over_its_claim(tmp_path: Path) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    _crash("session-resolved", db, ledger, "tool:2")
    statuses = _runs(db)
    (resumed_id,) = [r for r, (s, _) in statuses.items() if s == "running"]
    store = SqliteStore(db)
    claimed = await store.load("customer-1")
    assert claimed is not None and claimed.paused is None  # the pause was claimed before the crash
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        (payer,) = (a.bind(rt) for a in agents("session-resolved", ledger))
        (result,) = await rt.recover(sessions=store)
        session = payer.session("customer-1", store=store)
        await session.refresh()
        assert session.version == claimed.version + 1 and not session.paused
        assert session.history == result.messages and session.history[-1].content == f"charged {STEPS} times"
    assert result.run_id == resumed_id and result.ok
    _check_once(_effects(ledger), resumed_id, "tool:2")


async def test_a_session_that_moved_on_keeps_its_history_and_the_recovered_turn_is_only_returned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    _crash("session", db, ledger, "tool:2")
    (run_id,) = _runs(db)
    store = SqliteStore(db)
    # Meanwhile a replica answered the user's next message: the session is at version 1 without the cut turn.
    other = (Message.user("are you there?"), Message.assistant("yes"))
    await store.commit(SessionRecord("customer-1", other), expected_version=None)
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        bound = [a.bind(rt) for a in agents("session", ledger)]  # held: the runtime holds bound agents weakly
        with caplog.at_level("WARNING", logger="agentactors.sessions"):
            (result,) = await rt.recover(sessions=store)
        stored = await store.load("customer-1")
    await store.aclose()  # the test's own store (no session of the runtime used it): closed by its owner
    assert bound
    assert stored is not None and stored.messages == other and stored.version == 1  # nothing overwritten
    assert result.run_id == run_id and result.ok
    assert any(run_id in r.getMessage() and "moved on" in r.getMessage() for r in caplog.records)


async def test_recover_refuses_what_is_not_a_session_store_before_running_anything(tmp_path: Path) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    _crash("session", db, ledger, "tool:2")
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        (payer,) = (a.bind(rt) for a in agents("session", ledger))
        with pytest.raises(TypeError):
            await rt.recover(sessions="runs.db")
    assert payer is not None and _runs(db) and all(s == "running" for s, _ in _runs(db).values())


@pytest.mark.parametrize("where", ["tool:1", "model:3"])
async def test_a_handed_off_run_is_recovered_with_the_agent_it_was_handed_to(tmp_path: Path, where: str) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    _crash("handoff", db, ledger, where)
    (run_id,) = _runs(db)
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        bound = [a.bind(rt) for a in agents("handoff", ledger)]
        (result,) = await rt.recover()
    assert bound and result.run_id == run_id and result.agent == "payer" and result.handoffs == ("payer",)
    assert result.content == f"charged {STEPS} times"
    _check_once(_effects(ledger), run_id, where)


async def test_a_child_that_finished_before_the_crash_is_served_whole_from_its_recording(tmp_path: Path) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    _crash("child-done", db, ledger, "settle:1")  # the parent's step never committed; its child had finished
    runs = _runs(db)
    (parent_id,) = [r for r, (_, parent) in runs.items() if parent is None]
    (child_id,) = [r for r, (_, parent) in runs.items() if parent == parent_id]
    assert runs[child_id][0] == "finished" and runs[parent_id][0] == "running"
    before = _effects(ledger)
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        bound = [a.bind(rt) for a in agents("child-done", ledger)]
        (result,) = await rt.recover()
    assert bound and result.content == f"charged {STEPS} times; settled"  # both calls of the step again
    (child,) = result.children
    assert child.run_id == child_id and child.content == f"charged {STEPS} times"
    assert _effects(ledger) == before  # the child's tools did not run again: no charge at all
    assert sorted(before) == sorted((f"{child_id}:call-{n}", 100 * n) for n in range(1, STEPS + 1))
