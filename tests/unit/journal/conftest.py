"""A recorded run to replay and fork: an agent that calls a tool, then answers, recorded as JSONL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from agentactors import Agent, JsonlRecorder, Runtime, ToolCall, ToolContext, tool
from agentactors.journal import PostgresJournal, SqliteJournal
from agentactors.loop.result import RunResult
from agentactors.providers.scripted import ScriptedProvider
from tests.support.journals import Make


@attrs.define
class Ledger:
    """What the tools did: one entry per real call, with its idempotency key."""

    charges: list[tuple[str, int]] = attrs.field(factory=list)

    def tools(self) -> list[Any]:
        @tool
        async def charge(ctx: ToolContext, cents: int) -> str:
            """Charge the card."""
            self.charges.append((ctx.idempotency_key, cents))
            return f"charged {cents}"

        @tool
        async def lookup(city: str) -> str:
            """Weather for a city."""
            self.charges.append(("lookup", 0))
            return f"sunny in {city}"

        return [charge, lookup]


def script() -> list[Any]:
    return [
        [ToolCall("c1", "lookup", {"city": "Lisbon"})],
        [ToolCall("c2", "charge", {"cents": 250})],
        "Charged 250 for sunny Lisbon.",
    ]


@attrs.define
class Recording:
    path: Path
    result: RunResult[Any]
    ledger: Ledger
    agent: Agent[Any]


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


async def record(path: Path, ledger: Ledger) -> Recording:
    agent = Agent(ScriptedProvider(script()), tools=ledger.tools(), name="shop", system="You shop.")
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[jsonl]):
            result = await agent.run("Charge me for the weather.")
    return Recording(path, result, ledger, agent)


@pytest.fixture(params=["sqlite", "postgres"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Make:
    """A factory of journal objects on one database, SQLite and PostgreSQL (each a new connection: another process,
    or a restart).  A module using it imports the PostgreSQL fixtures (``tests.support.postgres``)."""
    if request.param == "sqlite":
        path = tmp_path / "runs.db"
        return lambda: SqliteJournal(path)
    dsn = request.getfixturevalue("postgres_dsn")
    return lambda: PostgresJournal(dsn)


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the journal is: a SQLite file, or a new database of the test server (its DSN).  A module using it
    imports the PostgreSQL fixtures (``tests.support.postgres``)."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn
