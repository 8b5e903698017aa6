"""Replay, fork and recovery of runs that ended cancelled or interrupted (docs/durability.md, "How a run ended").

A run cancelled through its handle (``rt.run_ref(id).cancel()``, a stream's ``run.cancel()``) or interrupted
(``run.interrupt()``) ended: its journal says so, ``recover()`` never runs it again, and a replay ends it the same
way at the same point — the same steps and messages, no model asked — where before it asked the replay provider for
the call the recording does not hold (``ReplayDivergedError``), or ended ``bounded`` with no error.  A fork from a
step before the end runs live from there.  A child run that ended so, inside a parent a crash cut, is served as it
ended when the recovered parent starts it again: never run again.

SQLite and PostgreSQL; real files, threads and a server: the real clock, generous bounds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, JsonlRecorder, Runtime, ToolCall, ToolContext, tool
from agentactors.errors import RunInterruptedError
from agentactors.journal import fork, replay
from agentactors.journal.codec import response_from_json
from agentactors.loop.result import RunResult
from agentactors.loop.tape import Ending
from agentactors.messages import LLMRequest
from agentactors.providers.scripted import ScriptedProvider
from tests.support.journals import journal_on, sql
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the journal is: a SQLite file, or a new database of the test server (its DSN)."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn



class Shop:
    """Two tool steps, then an answer.  ``hold``: where the run waits until ``release`` is set — ``"call <n>"`` (model
    call n) or ``"tool <n>"`` (the tool of step n); ``asked``: the model calls made; ``ran``: the tool calls run."""

    def __init__(self, hold: str | None = None) -> None:
        self.hold = hold
        self.holding = anyio.Event()
        self.release = anyio.Event()
        self.asked = 0
        self.ran = 0

    def agent(self, name: str = "shop") -> Agent[Any]:
        @tool
        async def lookup(ctx: ToolContext) -> str:
            """Look it up."""
            self.ran += 1
            if self.hold == f"tool {self.ran}":
                self.holding.set()
                await self.release.wait()
            return f"found {self.ran}"

        async def model(request: LLMRequest) -> Any:
            self.asked += 1
            done = sum(1 for m in request.messages if m.role == "tool")
            if self.hold == f"call {done + 1}":
                self.holding.set()
                await self.release.wait()
            if done < 2:
                return [ToolCall(f"c{done + 1}", "lookup", {})]
            return "done"

        return Agent(ScriptedProvider(model), tools=[lookup], name=name)


async def _ended(db: str, shop: Shop, how: str) -> RunResult[Any]:
    """A run of ``shop`` held where it says, then cancelled through ``rt.run_ref`` (``how="cancel"``), through its
    stream's handle (``"stream-cancel"``) or interrupted (``"interrupt"``): its result."""
    out: dict[str, RunResult[Any]] = {}
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        agent = shop.agent().bind(rt)
        if how == "stream-cancel":
            async with agent.stream("order a lamp", runtime=rt) as run:
                with anyio.fail_after(20):
                    await shop.holding.wait()
                run.cancel()
                return await run.wait()
        async with anyio.create_task_group() as tg:

            async def go() -> None:
                out["result"] = await agent.run("order a lamp")

            tg.start_soon(go)
            with anyio.fail_after(20):
                await shop.holding.wait()
            ((run_id,),) = sql(db, "SELECT run_id FROM agentactors_runs")
            handle = rt.run_ref(str(run_id))
            if how == "cancel":
                handle.cancel()
            else:
                await handle.interrupt("enough")
                shop.release.set()
    return out["result"]


def _same(replayed: RunResult[Any], original: RunResult[Any]) -> None:
    assert (replayed.content, replayed.messages, replayed.steps, replayed.tool_calls) == (
        original.content, original.messages, original.steps, original.tool_calls
    )
    assert (replayed.cancelled, replayed.bounded, replayed.ok) == (original.cancelled, original.bounded, original.ok)


@pytest.mark.parametrize("hold", ["call 1", "tool 1", "call 3"])
@pytest.mark.parametrize("how", ["cancel", "stream-cancel"])
async def test_a_cancelled_run_is_journaled_cancelled_and_replays_cancelled(db: str, how: str, hold: str) -> None:
    shop = Shop(hold)
    original = await _ended(db, shop, how)
    assert original.cancelled
    asked, ran = shop.asked, shop.ran
    async with journal_on(db) as journal:
        recorded = await journal.load_run(original.run_id or "")
        assert recorded.status == "cancelled" and recorded.cut_short == Ending("cancelled")
        assert await journal.unfinished() == []
        seen = InMemoryRecorder()
        again = await replay(journal, recorded.run_id, recorders=[seen])
        _same(again, original)
        assert (shop.asked, shop.ran) == (asked, ran)  # nothing asked, nothing run
        assert [e.type for e in seen.events if e.type == "run.finished"] == ["run.finished"]


@pytest.mark.parametrize("how", ["cancel", "stream-cancel"])
async def test_a_cancel_between_steps_replays_with_the_same_steps(db: str, how: str) -> None:
    """Cancelled as step 1's tool results are told (from a recorder: the results are then committed, the cancellation
    delivered at the boundary after the step), the run ends before step 2 opened: its replay ends there too, not
    inside a step 2 it never began."""
    shop = Shop()
    cancel: list[Any] = []

    class CancelAfterTools:
        rt: Any = None

        def record(self, event: Any) -> None:
            if event.type == "tools.finished" and cancel:
                handle = cancel.pop()
                (handle or self.rt.run_ref(event.run_id)).cancel()

    canceller = CancelAfterTools()
    async with journal_on(db) as journal, Runtime(recorders=[canceller], journal=journal) as rt:
        canceller.rt = rt
        agent = shop.agent().bind(rt)
        if how == "cancel":
            cancel.append(None)
            original = await agent.run("order a lamp")
        else:
            async with agent.stream("order a lamp", runtime=rt) as run:
                cancel.append(run)
                original = await run.wait()
        assert original.cancelled and original.steps == 1
        recorded = await journal.load_run(original.run_id or "")
        assert recorded.status == "cancelled" and recorded.ending == Ending("cancelled", between=True)
        again = await replay(journal, original.run_id or "")
        _same(again, original)


@pytest.mark.parametrize("hold", ["call 1", "tool 1", "tool 2"])
async def test_an_interrupted_run_replays_interrupted_the_same_way(db: str, hold: str) -> None:
    shop = Shop(hold)
    original = await _ended(db, shop, "interrupt")
    assert isinstance(original.error, RunInterruptedError)
    asked, ran = shop.asked, shop.ran
    async with journal_on(db) as journal:
        recorded = await journal.load_run(original.run_id or "")
        assert recorded.status == "finished" and await journal.unfinished() == []
        assert recorded.ending == Ending("interrupted", reason="enough")
        seen = InMemoryRecorder()
        again = await replay(journal, recorded.run_id, recorders=[seen])
        _same(again, original)
        assert isinstance(again.error, RunInterruptedError)
        assert (again.error.reason, again.error.step, str(again.error)) == (
            original.error.reason, original.error.step, str(original.error)
        )
        assert [e.type for e in seen.events].count("run.interrupted") == 1
        assert (shop.asked, shop.ran) == (asked, ran)
        # the same agent given to replay ends it the same way too
        again = await replay(journal, recorded.run_id, agent=shop.agent())
        _same(again, original)


@pytest.mark.parametrize("how", ["cancel", "interrupt"])
async def test_a_fork_before_the_end_runs_live_from_there(db: str, how: str) -> None:
    shop = Shop("tool 2")
    original = await _ended(db, shop, how)
    live = Shop()
    async with journal_on(db) as journal:
        forked = await fork(journal, original.run_id or "", 2, agent=live.agent())
        assert forked.ok and forked.content == "done" and forked.steps == 3
        assert live.asked == 2 and live.ran == 1  # steps 2 and 3 live, step 2's tool with them


async def test_a_row_written_before_endings_were_kept_replays_as_before(db: str) -> None:
    """An interrupted run's row without the ``"ended"`` key (as an older version wrote it) still loads: its replay
    runs as it did then (the rebuilt agent, as many steps as recorded: ``bounded``)."""
    shop = Shop("tool 1")
    original = await _ended(db, shop, "interrupt")
    run_id = original.run_id or ""
    for step, doc in sql(db, "SELECT step, response FROM agentactors_steps WHERE run_id = ?", run_id):
        value = json.loads(doc)
        value.pop("ended", None)
        sql(db, "UPDATE agentactors_steps SET response = ? WHERE run_id = ? AND step = ?", json.dumps(value), run_id,
            step)
    async with journal_on(db) as journal:
        recorded = await journal.load_run(run_id)
        assert recorded.status == "finished" and recorded.ending is None
        again = await replay(journal, run_id)
        assert again.bounded and again.error is None and again.steps == 1


# --- a child that ended so, inside a parent a crash cut -------------------------------------------------------


class Delegating:
    """A parent whose one tool runs the child agent (``shop``), then answers with what the child said."""

    def __init__(self, shop: Shop) -> None:
        self.shop = shop
        self.child = shop.agent("child")
        self.parent_asked = 0

    def agent(self) -> Agent[Any]:
        async def model(request: LLMRequest) -> Any:
            self.parent_asked += 1
            tools = [m for m in request.messages if m.role == "tool"]
            if not tools:
                return [ToolCall("d1", "child", {"input": "order a lamp"})]
            return f"parent heard: {tools[-1].content}"

        return Agent(ScriptedProvider(model), tools=[self.child.as_tool()], name="parent")


@pytest.mark.parametrize("how", ["cancel", "interrupt"])
async def test_a_child_that_ended_so_is_served_as_it_ended_in_its_recovered_parent(db: str, how: str) -> None:
    """The child ended (cancelled or interrupted through its handle), its parent's process died before the parent's
    tool step was committed.  Recovered, the parent's tool starts the child again: it gets the child's recording and
    ends as the child did, at the same point — before, a handle-cancelled or interrupted child (journaled
    ``finished``) went on past its recording, asking its model again."""
    shop = Shop("tool 1")
    parent = Delegating(shop)
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        agent = parent.agent().bind(rt)
        _child = parent.child.bind(rt)
        out: dict[str, RunResult[Any]] = {}
        async with anyio.create_task_group() as tg:

            async def go() -> None:
                out["result"] = await agent.run("shop for me")

            tg.start_soon(go)
            with anyio.fail_after(20):
                await shop.holding.wait()
            ((child_id,),) = sql(db, "SELECT run_id FROM agentactors_runs WHERE parent_run_id IS NOT NULL")
            handle = rt.run_ref(str(child_id))
            if how == "cancel":
                handle.cancel()
            else:
                await handle.interrupt("enough")
                shop.release.set()
        first = out["result"]
    (child_first,) = first.children
    # The crash: the parent's tool step and end never committed (its results row and status as SIGKILL leaves them).
    parent_id = first.run_id
    sql(db, "UPDATE agentactors_steps SET results = NULL WHERE run_id = ? AND step = 1", parent_id)
    sql(db, "DELETE FROM agentactors_steps WHERE run_id = ? AND step > 1", parent_id)
    sql(db, "UPDATE agentactors_runs SET status = 'running', ended = NULL, content = NULL, owner = NULL,"
            " lease_until = NULL WHERE run_id = ?", parent_id)
    asked, ran = shop.asked, shop.ran
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        _held = parent.agent().bind(rt), parent.child.bind(rt)  # (held: a runtime keeps bound agents weakly)
        with anyio.fail_after(30):
            (recovered,) = await rt.recover()
        assert recovered.content == first.content
        (child,) = recovered.children
        assert child.run_id == child_first.run_id
        _same(child, child_first)
        assert (shop.asked, shop.ran) == (asked, ran)  # the child was not run again
        assert await journal.unfinished() == []


@pytest.mark.parametrize("hold", ["call 1", "tool 1", "call 3"])
@pytest.mark.parametrize("how", ["cancel", "stream-cancel"])
async def test_a_cancelled_run_replays_cancelled_from_its_jsonl_record(tmp_path: Path, how: str, hold: str) -> None:
    """A JSONL record says only ``cancelled`` (its ``run.finished``): the replay is cancelled where the record
    stops — before, it asked for the model call the record does not hold, or ended ``bounded``."""
    shop = Shop(hold)
    path = tmp_path / "events.jsonl"
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[jsonl]) as rt:
            agent = shop.agent().bind(rt)
            async with agent.stream("order a lamp", runtime=rt) as run:
                with anyio.fail_after(20):
                    await shop.holding.wait()
                if how == "cancel":
                    rt.run_ref(run.run_id or "").cancel()
                else:
                    run.cancel()
                original = await run.wait()
    assert original.cancelled
    again = await replay(path, original.run_id or "")
    _same(again, original)


@pytest.mark.parametrize("hold", ["call 1", "call 2"])
async def test_an_interrupted_run_replays_interrupted_from_its_jsonl_record(tmp_path: Path, hold: str) -> None:
    """A JSONL record tells the interrupt by its ``run.interrupted`` event: the replay ends interrupted after the same
    step, no model asked past the record — before, it asked for the call the record does not hold.  (Interrupted
    during a model call: a record knows a tool step's results only from the call that followed them.)"""
    shop = Shop(hold)
    path = tmp_path / "events.jsonl"
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[jsonl]) as rt:
            agent = shop.agent().bind(rt)
            async with agent.stream("order a lamp", runtime=rt) as run:
                with anyio.fail_after(20):
                    await shop.holding.wait()
                await rt.run_ref(run.run_id or "").interrupt("enough")
                shop.release.set()
                original = await run.wait()
    assert isinstance(original.error, RunInterruptedError)
    asked, ran = shop.asked, shop.ran
    again = await replay(path, original.run_id or "")
    _same(again, original)
    assert isinstance(again.error, RunInterruptedError) and again.error.step == original.error.step
    assert (shop.asked, shop.ran) == (asked, ran)


async def test_the_ending_is_a_key_an_older_reader_ignores(db: str) -> None:
    """The mark is one key of the last response's document: the response decodes from it as before (what an older
    version reads), the run row's status is one every version knows, and no other row changed."""
    shop = Shop("tool 2")
    original = await _ended(db, shop, "interrupt")
    run_id = original.run_id or ""
    rows = sql(db, "SELECT step, response FROM agentactors_steps WHERE run_id = ? ORDER BY step", run_id)
    docs = [json.loads(doc) for _, doc in rows]
    assert [("ended" in d) for d in docs] == [False, True]
    assert docs[-1]["ended"] == {"how": "interrupted", "reason": "enough"}
    assert sql(db, "SELECT status FROM agentactors_runs WHERE run_id = ?", run_id) == [("finished",)]
    async with journal_on(db) as journal:
        recorded = await journal.load_run(run_id)
    assert [response_from_json(d) for d in docs] == [s.response for s in recorded.steps]
