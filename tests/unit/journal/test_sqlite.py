"""SqliteJournal: each step committed in its own transaction before the next one starts; WAL mode.

Real files and worker threads: the real clock.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from agentactors import Agent, Runtime, SqliteJournal, ToolCall, ToolContext, tool
from agentactors.providers.scripted import ScriptedProvider

from .conftest import Ledger, script

pytestmark = pytest.mark.anyio


def _rows(path: Path) -> tuple[list[tuple[str, str]], list[tuple[int, bool, bool]]]:
    with closing(sqlite3.connect(path)) as conn:
        runs = conn.execute("SELECT run_id, status FROM agentactors_runs").fetchall()
        steps = conn.execute(
            "SELECT step, response IS NOT NULL, results IS NOT NULL FROM agentactors_steps ORDER BY step"
        ).fetchall()
    return runs, [(int(n), bool(r), bool(t)) for n, r, t in steps]


async def test_each_step_is_committed_before_the_next_one_starts(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    seen: list[object] = []

    @tool
    async def peek(ctx: ToolContext) -> str:
        """Look at the journal from another connection while the run is at this step."""
        seen.append((ctx.step, _rows(path)))
        return "looked"

    provider = ScriptedProvider([[ToolCall("c1", "peek", {})], [ToolCall("c2", "peek", {})], "done"])
    async with SqliteJournal(path) as journal, Runtime(journal=journal):
        result = await Agent(provider, tools=[peek], name="peeker").run("go")
    run = result.run_id
    assert seen == [
        (1, ([(run, "running")], [(1, True, False)])),  # step 1's calls committed before they ran
        (2, ([(run, "running")], [(1, True, True), (2, True, False)])),  # step 1 whole before step 2
    ]
    assert _rows(path) == ([(run, "finished")], [(1, True, True), (2, True, True), (3, True, False)])
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_what_the_journal_holds_reads_back_whole(tmp_path: Path, ledger: Ledger) -> None:
    async with SqliteJournal(tmp_path / "runs.db") as journal, Runtime(journal=journal):
        result = await Agent(ScriptedProvider(script()), tools=ledger.tools(), name="shop").run("Charge me.")
        recorded = await journal.load_run(result.run_id or "")
        assert await journal.unfinished() == []
    assert recorded.status == "finished" and recorded.finished and recorded.agent == "shop"
    assert recorded.content == result.content and recorded.inputs == result.messages[:1]
    assert [s.number for s in recorded.steps] == [1, 2, 3]
    assert [c.name for s in recorded.steps for c in s.response.tool_calls] == ["lookup", "charge"]
    assert recorded.steps[1].results is not None and recorded.steps[1].results[0].content == "charged 250"
    assert recorded.steps[2].results is None and recorded.steps[2].response.content == result.content


async def test_idempotency_keys_name_the_run_and_the_call(tmp_path: Path, ledger: Ledger) -> None:
    result = await Agent(ScriptedProvider(script()), tools=ledger.tools()).run("Charge me.")
    assert ledger.charges[1] == (f"{result.run_id}:c2", 250)
    assert ToolContext(call_id="c", tool_name="t", run_id="r").idempotency_key == "r:c"


async def test_runs_delegated_to_are_journaled_with_their_parent_and_a_raising_run_is_ended(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    child = Agent(ScriptedProvider(["child answer"]), name="child")
    parent = Agent(
        ScriptedProvider([[ToolCall("c1", "child", {"input": "hi"})], "parent answer"]),
        tools=[child.as_tool()],
        name="parent",
    )
    async with SqliteJournal(path) as journal, Runtime(journal=journal):
        result = await parent.run("go")
    runs, _ = _rows(path)
    (kid,) = result.children
    assert sorted(runs) == sorted([(result.run_id, "finished"), (kid.run_id, "finished")])
    with closing(sqlite3.connect(path)) as conn:
        parent = conn.execute("SELECT parent_run_id FROM agentactors_runs WHERE run_id = ?", (kid.run_id,)).fetchone()
    assert parent == (result.run_id,)

    @tool
    async def boom() -> str:
        """Fails."""
        raise RuntimeError("no")

    from agentactors import ToolStatus
    from agentactors.errors import ToolStatusError

    routes = {ToolStatus.error: "raise"}
    agent = Agent(ScriptedProvider([ToolCall("c1", "boom", {})]), tools=[boom], on_tool_status=routes)
    async with SqliteJournal(path) as journal, Runtime(journal=journal):
        with pytest.raises(ToolStatusError):
            await agent.run("go")
        assert await journal.unfinished() == []
    with closing(sqlite3.connect(path)) as conn:
        statuses = sorted(r[0] for r in conn.execute("SELECT status FROM agentactors_runs"))
        rows = conn.execute("SELECT results FROM agentactors_steps WHERE results IS NOT NULL")
        results = [json.loads(r[0]) for r in rows]
    assert statuses == ["finished", "finished", "raised"]  # the parent, its child, the raising run
    assert any(r[0]["status"] == "error" for r in results)
