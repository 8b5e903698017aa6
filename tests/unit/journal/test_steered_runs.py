"""A steered run in a journal: replay, fork and recovery of it (docs/durability.md, "Steers"; docs/loop.md, "Live
runs").

A steer joins the conversation at a step boundary, and a run that would have ended on its answer goes on one more
step for it.  The steers a boundary took are committed with the next model response (in its step row's document),
and a replayed, forked or recovered run takes them back at the same boundary — going on past an answer for them as
the recorded run did.  Before, the journal kept no steer: a replay ended at step 1's answer, a fork from a later
step built its conversation without the steer, a recovered turn dropped the steer and the call its step had started.
SQLite and PostgreSQL; real files, threads and a server: the real clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, JsonlRecorder, Runtime, ToolCall, ToolContext, tool
from agentactors.journal import fork, replay
from agentactors.journal.codec import response_from_json
from agentactors.messages import LLMRequest, Message
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import SqliteStore
from tests.support.journals import journal_on, sql
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio



_calling: anyio.Event | None = None  # set while a model call of the run being steered is under way


async def _answers_what_it_read(request: LLMRequest) -> str:
    if _calling is not None:
        _calling.set()
    await anyio.sleep(0.05)  # slow enough for a steer to arrive during the call
    return "ok " + " / ".join(m.content for m in request.messages if m.role == "user")


async def _steered(rt: Runtime, agent: Agent[Any]) -> Any:
    """A run steered during its first model call: it goes on one step for the steer."""
    global _calling
    session = rt.session(agent, "k")
    _calling = calling = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def steer() -> None:
            with anyio.fail_after(10):
                await calling.wait()
            await session.steer("also this")

        tg.start_soon(steer)
        try:
            result = await session.send("first")
        finally:
            _calling = None
    assert result.content == "ok first / also this"
    return result


async def test_a_replayed_steered_run_returns_the_recorded_answer(db: str) -> None:
    calls = 0

    async def model(request: LLMRequest) -> str:
        nonlocal calls
        calls += 1
        return await _answers_what_it_read(request)

    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        agent = Agent(ScriptedProvider(model), name="clerk").bind(rt)
        result = await _steered(rt, agent)
        before = calls
        seen = InMemoryRecorder()
        again = await replay(journal, result.run_id or "", recorders=[seen])
        assert calls == before
        assert again.content == result.content and again.messages == result.messages
        assert [e.data["text"] for e in seen.events if e.type == "run.steered"] == ["also this"]


async def test_a_fork_after_a_steer_reads_the_steer(db: str) -> None:
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        agent = Agent(ScriptedProvider(_answers_what_it_read), name="clerk").bind(rt)
        result = await _steered(rt, agent)
        forked = await fork(journal, result.run_id or "", 2, runtime=rt)
        assert forked.content == result.content


async def test_a_recovered_steered_turn_keeps_the_steer_and_runs_its_cut_call_again(db: str, tmp_path: Path) -> None:
    """A turn steered during its first model call ("ship it too"), its second step's ``ship`` cut by a crash.  The
    recovered turn must read the steer again and run the cut call again (same key); it answers "ok first" instead,
    and the history it commits holds neither the steer nor the shipment that ran."""
    sessions = tmp_path / "sessions.db"
    shipped: list[str] = []
    crashing, hanging, called = True, anyio.Event(), anyio.Event()

    @tool
    async def ship(ctx: ToolContext) -> str:
        """Ship the order."""
        shipped.append(ctx.idempotency_key)
        if crashing:
            hanging.set()
            await anyio.sleep_forever()
        return "shipped"

    async def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return f"done: {last.content}"
        if last.content == "ship it too":
            return [ToolCall("s1", "ship", {})]
        called.set()
        await anyio.sleep(0.2)  # the steer arrives meanwhile
        return f"ok {last.content}"

    def clerk() -> Agent[Any]:
        return Agent(ScriptedProvider(model), tools=[ship], name="clerk")

    async with journal_on(db) as journal, SqliteStore(sessions) as store, Runtime(journal=journal) as rt:
        session = rt.session(clerk().bind(rt), "k", store=store)
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send, "first")
            await called.wait()
            await session.steer("ship it too")
            with anyio.fail_after(10):
                await hanging.wait()
            tg.cancel_scope.cancel()  # the process dies inside ``ship``
    # What SIGKILL leaves: the run's end never written, the dead process's lease free.
    sql(db, "UPDATE agentactors_runs SET status = 'running', ended = NULL, content = NULL, owner = NULL,"
                   " lease_until = NULL")
    crashing = False
    async with journal_on(db) as journal, SqliteStore(sessions) as store, Runtime(journal=journal) as rt:
        agent = clerk().bind(rt)
        (recovered,) = await rt.recover(sessions=store)
        session = rt.session(agent, "k", store=store)
        await session.refresh()
    assert len(shipped) == 2 and shipped[0] == shipped[1]  # the cut call again, with the same key
    assert recovered.content == "done: shipped"
    assert [m.content for m in session.history if m.role == "user"] == ["first", "ship it too"]


async def test_a_steered_run_replays_and_forks_from_its_jsonl_record(tmp_path: Path) -> None:
    """A JSONL record's ``run.steered`` events are the steers: a replay and a fork from the file read them too."""
    path = tmp_path / "runs.jsonl"
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[jsonl]) as rt:
            agent = Agent(ScriptedProvider(_answers_what_it_read), name="clerk").bind(rt)
            result = await _steered(rt, agent)
    again = await replay(path, result.run_id or "")
    assert again.content == result.content and again.messages == result.messages
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(_answers_what_it_read), name="clerk").bind(rt)
        forked = await fork(path, result.run_id or "", 2, runtime=rt)
    assert forked.content == result.content


async def test_a_record_without_steers_reads_as_none_and_an_older_reader_ignores_them(db: str) -> None:
    """The steers live in their step's response document (``"steers"``): no schema change.  A row written before
    steers were kept (no key) reads as a step without steers; the response codec an older version reads a row with
    (:func:`response_from_json`) skips the key — such a version replays the run as if unsteered."""
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        agent = Agent(ScriptedProvider(_answers_what_it_read), name="clerk").bind(rt)
        result = await _steered(rt, agent)
        run_id = result.run_id or ""
        recorded = await journal.load_run(run_id)
    assert [s.steers for s in recorded.steps] == [(), (Message("user", "also this"),)]
    ((doc,),) = sql(db, "SELECT response FROM agentactors_steps WHERE run_id = ? AND step = 2", run_id)
    stored = json.loads(doc)
    assert stored["steers"] and response_from_json(stored) == recorded.steps[1].response
    del stored["steers"]
    sql(db, "UPDATE agentactors_steps SET response = ? WHERE run_id = ? AND step = 2", json.dumps(stored), run_id)
    async with journal_on(db) as journal:
        older = await journal.load_run(run_id)
        assert [s.steers for s in older.steps] == [(), ()]
        assert (await replay(journal, run_id)).content == "ok first"  # the old behaviour: no steer, step 1's answer


async def test_a_steer_is_committed_with_the_response_that_read_it(db: str) -> None:
    """A run steered before a tool step's call: the steer is in the row of the response that asked for the tool,
    committed before the tool ran (one transaction), and a replay serves both."""
    ran: list[str] = []

    @tool
    async def note(ctx: ToolContext) -> str:
        """Note it."""
        ran.append(ctx.idempotency_key)
        return "noted"

    async def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return f"done: {last.content}"
        if last.content == "note it":
            return [ToolCall("n1", "note", {})]
        return await _answers_what_it_read(request)

    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        agent = Agent(ScriptedProvider(model), tools=[note], name="clerk").bind(rt)
        session = rt.session(agent, "k")
        global _calling
        _calling = calling = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:

                async def steer() -> None:
                    with anyio.fail_after(10):
                        await calling.wait()
                    await session.steer("note it")

                tg.start_soon(steer)
                result = await session.send("first")
        finally:
            _calling = None
        assert result.content == "done: noted" and len(ran) == 1
        recorded = await journal.load_run(result.run_id or "")
        assert [s.steers for s in recorded.steps] == [(), (Message("user", "note it"),), ()]
        again = await replay(journal, result.run_id or "")
        assert again.content == result.content and again.messages == result.messages and len(ran) == 1
