"""Values a database cannot take as they are, on SQLite and PostgreSQL: journaled losslessly, or refused typed.

A Python ``str`` may hold what no UTF-8 database column holds: a lone surrogate (``"\\ud800"``: what a model's
JSON escape ``"\\ud800"`` decodes to), and — PostgreSQL's ``TEXT`` only — a NUL character.  A journaled run
that meets one must go on as it would without a journal (its JSON is written with the surrogate escaped, read
back the same), and a value the journal cannot keep at all (not JSON) must end the run *ended* — never left
``running`` for a later ``recover()`` to run again.  Real files, threads and a real server: the real clock.
"""

from __future__ import annotations

import datetime
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from agentactors import Agent, LLMResponse, Runtime, ToolCall, replay, tool
from agentactors.journal import JournalFormatError, JournalStore, PostgresJournal, SqliteJournal
from agentactors.providers.scripted import ScriptedProvider
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio

Make = Callable[[], JournalStore]
Rows = Callable[[], list[tuple[str, str, str | None]]]


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Make, Rows]:
    """A factory of journal objects on one database, and its runs' rows ``(run_id, status, content)`` as stored."""
    if request.param == "sqlite":
        path = tmp_path / "runs.db"

        def sqlite_rows() -> list[tuple[str, str, str | None]]:
            with closing(sqlite3.connect(path)) as conn:
                return conn.execute("SELECT run_id, status, content FROM agentactors_runs").fetchall()

        return (lambda: SqliteJournal(path)), sqlite_rows
    dsn = request.getfixturevalue("postgres_dsn")

    def pg_rows() -> list[tuple[str, str, str | None]]:
        with psycopg.connect(dsn) as conn:
            return conn.execute("SELECT run_id, status, content FROM agentactors_runs").fetchall()

    return (lambda: PostgresJournal(dsn)), pg_rows


@tool
async def echo(text: str) -> str:
    """Say it back."""
    return f"heard {text}"


async def test_lone_surrogates_are_journaled_losslessly_and_the_run_goes_on(db: tuple[Make, Rows]) -> None:
    make, rows = db
    answer = "done \udfff"
    script: list[Any] = [[ToolCall("c1", "echo", {"text": "half \udc00 a pair"})], answer]
    with anyio.fail_after(60):
        bare = await Agent(ScriptedProvider(list(script)), tools=[echo], name="s").run("hi \ud800")
        async with make() as journal, Runtime(journal=journal):
            result = await Agent(ScriptedProvider(list(script)), tools=[echo], name="s").run("hi \ud800")
        # The journal changes nothing of the run: no failed model step, the same answer and conversation.
        assert not result.generation_failed and result.error is None
        assert result.content == bare.content == answer and result.messages == bare.messages
        async with make() as journal:
            recorded = await journal.load_run(result.run_id or "")
            assert recorded.status == "finished" and recorded.inputs == result.messages[:1]
            assert [c.arguments for c in recorded.steps[0].response.tool_calls] == [{"text": "half \udc00 a pair"}]
            assert recorded.steps[0].results is not None
            assert recorded.steps[0].results[0].content == result.messages[2].content
            assert recorded.steps[1].response.content == answer
            again = await replay(journal, result.run_id or "")
        assert again.content == answer and again.messages == result.messages
    [(_, status, content)] = rows()
    assert status == "finished" and content is not None and content.startswith("done ")


async def test_a_nul_in_the_answer_is_journaled(db: tuple[Make, Rows]) -> None:
    make, rows = db
    with anyio.fail_after(60):
        async with make() as journal, Runtime(journal=journal):
            result = await Agent(ScriptedProvider(["a\x00b"]), name="nul").run("go")
            assert await journal.unfinished() == []
        assert result.content == "a\x00b"
        async with make() as journal:
            recorded = await journal.load_run(result.run_id or "")
    assert recorded.status == "finished" and recorded.steps[0].response.content == "a\x00b"
    assert [status for _, status, _ in rows()] == ["finished"]


async def test_an_answer_the_journal_cannot_keep_ends_the_run_raised_not_running(db: tuple[Make, Rows]) -> None:
    make, rows = db
    # provider_data is opaque: a provider may put anything in it; a datetime is not JSON.
    bad = LLMResponse("the answer", provider_data={"at": datetime.datetime(2024, 1, 1)})
    with anyio.fail_after(60):
        async with make() as journal, Runtime(journal=journal):
            with pytest.raises(JournalFormatError, match="cannot be journaled") as caught:
                await Agent(ScriptedProvider([bad]), name="odd").run("go")
        assert "datetime" in str(caught.value)
        [(run_id, status, _)] = rows()
        assert status == "raised"  # the caller saw it raise: no recoverer runs it again
        async with make() as other:  # another process after a restart: nothing to recover
            assert await other.unfinished() == []
            assert (await other.load_run(run_id)).status == "raised"


async def test_a_tool_step_the_journal_cannot_keep_never_runs_and_the_run_ends(db: tuple[Make, Rows]) -> None:
    make, rows = db
    ran: list[str] = []

    @tool
    async def charge(text: str) -> str:
        """Must not run: the response asking for it was not committed."""
        ran.append(text)
        return "charged"

    asks = LLMResponse("", (ToolCall("c1", "charge", {"text": "x"}),), provider_data={"at": datetime.date(2024, 1, 1)})
    with anyio.fail_after(60):
        async with make() as journal, Runtime(journal=journal):
            with pytest.raises(JournalFormatError, match=r"model call 1 \(in the vendor's provider_data\).*date"):
                await Agent(ScriptedProvider([asks, "never"]), tools=[charge], name="odd").run("go")
        assert ran == []
        async with make() as other:
            assert await other.unfinished() == []
    assert [status for _, status, _ in rows()] == ["raised"]  # the journal's failure, and the run raised it


async def test_parking_refuses_text_no_database_keeps_with_a_typed_error(db: tuple[Make, Rows]) -> None:
    make, _ = db
    with anyio.fail_after(60):
        async with make() as journal:
            with pytest.raises(ValueError, match="parking key"):
                await journal.park("batch:\ud800", "1")
            with pytest.raises(ValueError, match="parking key"):
                await journal.park("batch:\x00", "1")
            with pytest.raises(ValueError, match="parking key"):
                await journal.parked("batch:\x00")
            with pytest.raises(JournalFormatError, match="surrogate"):
                await journal.park("batch:1", '"\ud800"')
            await journal.park("batch:1", '"\\ud800"')  # escaped, it is JSON like any other
            assert await journal.parked("batch:1") == '"\\ud800"'
