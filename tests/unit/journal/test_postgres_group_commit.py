"""Group commit (agentactors.journal._group), on both journals: concurrent runs' commits share transactions, each
keeps its own outcome, and a run still goes on only once its own commit is durable.

GroupCommit alone on virtual time; the journals against a real file and a real server, on the real clock.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import anyio
import psycopg
import pytest

from agentactors import Agent, Runtime, ToolCall, ToolContext, tool
from agentactors.journal._group import GroupCommit
from agentactors.providers.scripted import ScriptedProvider
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

from .crashing import open_journal

pytestmark = pytest.mark.anyio


@pytest.mark.virtual_time
async def test_commits_queued_while_one_is_applied_go_together_each_with_its_outcome() -> None:
    batches: list[list[str]] = []

    async def apply(items: list[str]) -> list[BaseException | None]:
        batches.append(items)
        await anyio.sleep(1)  # the transaction: the others queue meanwhile
        return [ValueError(i) if i.startswith("bad") else None for i in items]

    group: GroupCommit[str] = GroupCommit(apply, "test-group")
    outcomes: dict[str, str] = {}

    async def commit(item: str) -> None:
        try:
            await group.commit(item)
        except ValueError:
            outcomes[item] = "raised"
        else:
            outcomes[item] = "committed"

    async with anyio.create_task_group() as tg:
        tg.start_soon(commit, "first")
        await anyio.sleep(0.1)
        for item in ("a", "bad-b", "c"):
            tg.start_soon(commit, item)
    assert [sorted(b) for b in batches] == [["first"], ["a", "bad-b", "c"]]  # (trio starts tasks in any order)
    assert outcomes == {"first": "committed", "a": "committed", "bad-b": "raised", "c": "committed"}


@pytest.mark.virtual_time
async def test_a_cancelled_commit_still_happens_whole_and_the_queue_goes_on() -> None:
    applied: list[str] = []

    async def apply(items: list[str]) -> list[BaseException | None]:
        await anyio.sleep(1)
        applied.extend(items)
        return [None] * len(items)

    group: GroupCommit[str] = GroupCommit(apply, "test-group-cancel")
    with anyio.move_on_after(0.5):
        await group.commit("x")  # shielded: the deadline passes while it is applied; it ends first
    await group.commit("y")
    assert applied == ["x", "y"]




def _statuses(db: str) -> list[tuple[Any, ...]]:
    query = "SELECT status, COUNT(*) FROM agentactors_runs GROUP BY status"
    if db.startswith("postgresql://"):
        with psycopg.connect(db) as conn:
            return [tuple(r) for r in conn.execute(query).fetchall()]
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(query).fetchall()


async def test_many_concurrent_runs_are_each_committed_whole(db: str) -> None:
    runs = 30

    @tool
    async def note(ctx: ToolContext, n: int) -> str:
        """Note a number."""
        return f"noted {n}"

    def answer(request: Any) -> Any:
        n = int(request.messages[0].content)
        return [ToolCall(f"c{n}", "note", {"n": n})] if len(request.messages) < 3 else f"done {n}"

    agent = Agent(ScriptedProvider(answer), tools=[note], name="many")
    results: dict[int, Any] = {}
    async with open_journal(db) as journal, Runtime(journal=journal):

        async def one(n: int) -> None:
            results[n] = await agent.run(str(n))

        async with anyio.create_task_group() as tg:
            for n in range(runs):
                tg.start_soon(one, n)
        for n, result in results.items():
            recorded = await journal.load_run(result.run_id or "")
            assert recorded.finished and recorded.content == f"done {n}"
            assert [s.results[0].content for s in recorded.steps if s.results] == [f"noted {n}"]
    assert _statuses(db) == [("finished", runs)]
