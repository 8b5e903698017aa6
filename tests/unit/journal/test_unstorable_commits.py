"""A model response the journal cannot store is the journal's failure, never the vendor's.

The response that asks for tools is committed before any of its calls runs.  When that commit is refused — a value
JSON cannot keep in the vendor's opaque ``provider_data``, a document over the store's size limit — the run must
raise the journal's own :class:`~agentactors.journal.JournalFormatError` saying what could not be stored, and end
``raised`` in the journal: not a failed model step whose ``ProviderError`` (kind ``request``) blames the vendor,
and never something a resilient chain retries, moves to a fallback or counts in a breaker.  End to end, through
``with_fallback(with_circuit_breaker(with_retry(...)), ...)``, on SQLite and a real PostgreSQL, both transports
(``complete`` and streaming).
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

from agentactors import Agent, InMemoryRecorder, LLMResponse, Runtime, ToolCall, tool
from agentactors.errors import ProviderError
from agentactors.journal import JournalFormatError, JournalStore, PostgresJournal, SqliteJournal
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import with_circuit_breaker, with_fallback, with_retry
from tests.support.chains import chain_texts
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio

Make = Callable[[], JournalStore]
Statuses = Callable[[], list[str]]


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Make, Statuses]:
    if request.param == "sqlite":
        path = tmp_path / "runs.db"

        def sqlite_statuses() -> list[str]:
            with closing(sqlite3.connect(path)) as conn:
                return [r[0] for r in conn.execute("SELECT status FROM agentactors_runs")]

        return (lambda: SqliteJournal(path)), sqlite_statuses
    dsn = request.getfixturevalue("postgres_dsn")

    def pg_statuses() -> list[str]:
        with psycopg.connect(dsn) as conn:
            return [str(r[0]) for r in conn.execute("SELECT status FROM agentactors_runs")]

    return (lambda: PostgresJournal(dsn)), pg_statuses


def _never_ran() -> tuple[Any, list[str]]:
    ran: list[str] = []

    @tool
    async def charge(cents: int) -> str:
        """Must not run: the response asking for it was not committed."""
        ran.append(f"charged {cents}")
        return "charged"

    return charge, ran


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
async def test_an_unstorable_tool_step_response_is_a_journal_error_the_chain_never_sees(
    db: tuple[Make, Statuses], streamed: bool
) -> None:
    make, statuses = db
    charge, ran = _never_ran()
    asks = LLMResponse(
        "", (ToolCall("c1", "charge", {"cents": 5}),), provider_data={"at": datetime.date(2024, 1, 1)}
    )
    first = ScriptedProvider([asks, "never"])
    second = ScriptedProvider(["the fallback answered"])
    breaker = with_circuit_breaker(with_retry(first), consecutive_failures=1, count_mid_stream=True)
    spare = with_circuit_breaker(with_retry(second), consecutive_failures=1)
    chain = with_fallback(breaker, spare)
    events = InMemoryRecorder()
    on_token = (lambda _text: None) if streamed else None
    with anyio.fail_after(60):
        async with make() as journal, Runtime(recorders=[events], journal=journal):
            with pytest.raises(JournalFormatError) as caught:
                await Agent(chain, tools=[charge], name="odd").run("go", on_token=on_token)
        async with make() as other:  # nothing left for a recoverer: the caller saw the run raise
            assert await other.unfinished() == []
    # The journal's own error, saying what it could not store; no vendor error anywhere in its chain.
    assert "provider_data" in str(caught.value) and "date" in str(caught.value)
    assert "model call 1" in str(caught.value)
    assert not any("ProviderError" in t for t in chain_texts(caught.value))
    assert not isinstance(caught.value, ProviderError)
    # Not retried, not moved to the fallback, not counted by a breaker; the tool never ran.
    assert (first.calls, second.calls, ran) == (1, 0, [])
    stats = breaker.stats_for()
    assert (stats.failures, stats.consecutive_failures) == (0, 0)
    moved = [e.type for e in events.events if e.type.startswith(("retry.", "fallback.", "breaker."))]
    assert [t for t in moved if t != "breaker.ignored"] == []
    assert statuses() == ["raised"]


async def test_a_response_over_the_stores_limit_is_a_journal_error_naming_it(
    db: tuple[Make, Statuses], monkeypatch: pytest.MonkeyPatch
) -> None:
    make, statuses = db
    charge, ran = _never_ran()
    monkeypatch.setattr("agentactors.journal._rows.MAX_TEXT_CHARS", 2_000)  # the limit, made small to reach
    big = LLMResponse("x" * 5_000, (ToolCall("c1", "charge", {"cents": 5}),))
    provider = ScriptedProvider(["never"])
    chain = with_fallback(with_retry(ScriptedProvider([big])), with_retry(provider))
    with anyio.fail_after(60):
        async with make() as journal, Runtime(journal=journal):
            with pytest.raises(JournalFormatError, match=r"model call 1.*over 2,000 characters"):
                await Agent(chain, tools=[charge], name="big").run("go")
    assert (provider.calls, ran) == (0, [])
    assert statuses() == ["raised"]
