"""PostgresJournal against a real server: each step committed before the next starts, read back whole, typed errors.

Recovery after SIGKILL (test_recovery.py), leases (test_leases.py) and parking (test_parking.py) run on this
journal too.  A real server and threads: the real clock.
"""

from __future__ import annotations

import sys
from typing import Any

import psycopg
import pytest

from agentactors import Agent, PostgresJournal, Runtime, ToolCall, ToolContext, fork, replay, tool
from agentactors._json import MAX_DEPTH
from agentactors.journal import JournalFormatError, JournalStore, RunNotRecordedError
from agentactors.providers.scripted import ScriptedProvider
from tests.support.postgres import PASSWORD, PostgresServer, postgres_dsn, postgres_server  # noqa: F401

from .conftest import Ledger, script

pytestmark = pytest.mark.anyio


def _rows(dsn: str) -> tuple[list[tuple[str, str]], list[tuple[int, bool, bool]]]:
    with psycopg.connect(dsn) as conn:
        runs = conn.execute("SELECT run_id, status FROM agentactors_runs").fetchall()
        steps = conn.execute(
            "SELECT step, response IS NOT NULL, results IS NOT NULL FROM agentactors_steps ORDER BY step"
        ).fetchall()
    return [(str(a), str(b)) for a, b in runs], [(int(n), bool(r), bool(t)) for n, r, t in steps]


async def test_each_step_is_committed_before_the_next_one_starts(postgres_dsn: str) -> None:  # noqa: F811
    seen: list[object] = []

    @tool
    async def peek(ctx: ToolContext) -> str:
        """Look at the journal from another connection while the run is at this step."""
        seen.append((ctx.step, _rows(postgres_dsn)))
        return "looked"

    provider = ScriptedProvider([[ToolCall("c1", "peek", {})], [ToolCall("c2", "peek", {})], "done"])
    async with PostgresJournal(postgres_dsn) as journal, Runtime(journal=journal):
        assert isinstance(journal, JournalStore)
        result = await Agent(provider, tools=[peek], name="peeker").run("go")
    run = result.run_id
    assert seen == [
        (1, ([(run, "running")], [(1, True, False)])),  # step 1's calls committed before they ran
        (2, ([(run, "running")], [(1, True, True), (2, True, False)])),  # step 1 whole before step 2
    ]
    assert _rows(postgres_dsn) == ([(run, "finished")], [(1, True, True), (2, True, True), (3, True, False)])


async def test_what_the_journal_holds_reads_back_whole_and_replays(postgres_dsn: str, ledger: Ledger) -> None:  # noqa: F811
    async with PostgresJournal(postgres_dsn) as journal, Runtime(journal=journal):
        result = await Agent(ScriptedProvider(script()), tools=ledger.tools(), name="shop").run("Charge me.")
    async with PostgresJournal(postgres_dsn) as journal:  # another connection: what was committed
        recorded = await journal.load_run(result.run_id or "")
        assert await journal.unfinished() == []
        with pytest.raises(RunNotRecordedError, match="no run 'nope'") as missing:
            await journal.load_run("nope")
        assert PASSWORD not in str(missing.value)
        again = await replay(journal, result.run_id or "", agent=Agent(ScriptedProvider([]), tools=ledger.tools(),
                                                                     name="shop"))
        forked = await fork(journal, result.run_id or "", 3, agent=Agent(ScriptedProvider(["other"]),
                                                                         tools=ledger.tools(), name="shop"))
    assert recorded.status == "finished" and recorded.agent == "shop" and recorded.content == result.content
    assert recorded.inputs == result.messages[:1] and [s.number for s in recorded.steps] == [1, 2, 3]
    assert recorded.steps[1].results is not None and recorded.steps[1].results[0].content == "charged 250"
    assert again.content == result.content and forked.content == "other"
    assert len(ledger.charges) == 2  # replay and fork ran no recorded tool again


async def test_a_response_past_the_json_policy_is_not_journaled_and_its_tools_never_run(
    postgres_dsn: str,  # noqa: F811
) -> None:
    deep: Any = 1
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    provider = ScriptedProvider([[ToolCall("c1", "t", {"x": deep})], "never"])
    ran: list[Any] = []

    @tool
    async def t(x: Any) -> str:
        """Must not run: the response that asks for it could not be committed first."""
        ran.append(x)
        return "ran"

    async with PostgresJournal(postgres_dsn) as journal, Runtime(journal=journal):
        # The journal's own typed error, raised by the run (not a failed model step blaming the vendor).
        with pytest.raises(JournalFormatError, match=r"model call 1.*nests deeper"):
            await Agent(provider, tools=[t], name="deep").run("go")
    assert ran == [] and _rows(postgres_dsn)[1] == []  # nothing of that step was written
    assert [status for _, status in _rows(postgres_dsn)[0]] == ["raised"]


async def test_a_damaged_row_is_a_typed_error_naming_the_run(postgres_dsn: str, ledger: Ledger) -> None:  # noqa: F811
    async with PostgresJournal(postgres_dsn) as journal, Runtime(journal=journal):
        result = await Agent(ScriptedProvider(script()), tools=ledger.tools(), name="shop").run("Charge me.")
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE agentactors_steps SET response = '{\"content\": 1, \"stop_reason\": \"nope\"}'")
    async with PostgresJournal(postgres_dsn) as journal:
        with pytest.raises(JournalFormatError, match=f"{result.run_id}.*does not decode"):
            await journal.load_run(result.run_id or "")
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM agentactors_steps")
        conn.execute("UPDATE agentactors_runs SET inputs = %s", ("[" * 300 + "]" * 300,))
    async with PostgresJournal(postgres_dsn) as journal:
        with pytest.raises(JournalFormatError, match="nests deeper"):
            await journal.load_run(result.run_id or "")


async def test_the_password_never_leaks_and_a_missing_extra_names_it(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    journal = PostgresJournal(postgres_server.dsn(password="hunter2-wrong"))
    assert "hunter2" not in repr(journal) and "***" in repr(journal)
    with pytest.raises(ConnectionError) as caught:
        await journal.unfinished()
    assert "hunter2" not in str(caught.value) and caught.value.__cause__ is None
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ImportError, match=r"agentactors\[postgres\]"):
        await PostgresJournal(postgres_server.dsn()).unfinished()


async def test_a_session_turn_records_which_turn_it_is_and_a_damaged_mark_is_typed(
    postgres_dsn: str,  # noqa: F811
) -> None:
    from agentactors import PostgresStore
    from agentactors.sessions.journaled import SessionTurn

    agent = Agent(ScriptedProvider(["first", "second"]), name="chat")
    async with PostgresJournal(postgres_dsn) as journal, Runtime(journal=journal) as rt:
        session = agent.session("user:7", runtime=rt, store=PostgresStore(postgres_dsn))
        one = await session.send("hello")
        two = await session.send("again")
        assert (await journal.load_run(one.run_id or "")).session == SessionTurn("user:7", None, 0)
        # The second turn started on version 1, whose history is the first turn's two messages.
        assert (await journal.load_run(two.run_id or "")).session == SessionTurn("user:7", 1, 2)
        plain = await agent.run("no session", runtime=rt)
        assert (await journal.load_run(plain.run_id or "")).session is None
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE agentactors_runs SET origin = %s WHERE run_id = %s",
                     ('{"session": {"key": 5}}', one.run_id))
    async with PostgresJournal(postgres_dsn) as journal:
        with pytest.raises(JournalFormatError, match=f"{one.run_id}.*origin"):
            await journal.load_run(one.run_id or "")
