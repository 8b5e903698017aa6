"""A PostgresJournal whose connection the server dropped (a restart, a failover) opens a new one at the next call.

A connection dropped while idle is found so before it is used (the server's goodbye and end of stream wait on its
socket: :func:`agentactors._postgres._dead`): the next commit goes over a new connection, and fails for no one.
The journal's commits go through the group commit, whose batch answers each commit's error instead of raising:
the connection a commit found dead must still be thrown away, or every later commit fails on it ("the
connection is closed") for as long as the process lives.  A real server, whose backends are terminated from
another connection (``pg_terminate_backend``: what a server restart does to them): the real clock.
"""

from __future__ import annotations

import anyio
import psycopg
import pytest

from agentactors import Agent, PostgresJournal, Runtime
from agentactors.providers.scripted import ScriptedProvider
from tests.support.postgres import drop_every_other_connection, postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio


async def _statuses(dsn: str) -> list[str]:
    def read() -> list[str]:
        with psycopg.connect(dsn) as conn:
            return [str(r[0]) for r in conn.execute("SELECT status FROM agentactors_runs ORDER BY started")]

    return await anyio.to_thread.run_sync(read)


async def test_commits_go_on_over_a_new_connection_after_the_server_dropped_it(postgres_dsn: str) -> None:  # noqa: F811
    with anyio.fail_after(60):
        async with PostgresJournal(postgres_dsn) as journal, Runtime(journal=journal):
            first = await Agent(ScriptedProvider(["one"]), name="a").run("go")
            assert await anyio.to_thread.run_sync(drop_every_other_connection, postgres_dsn) >= 1
            # The connection dropped while idle is found dead before the next commit: no run fails on it.
            for n in range(4):
                result = await Agent(ScriptedProvider([f"again {n}"]), name="a").run("go")
                assert result.content == f"again {n}" and not result.generation_failed
                assert (await journal.load_run(result.run_id or "")).status == "finished"
        assert first.content == "one"
        assert await _statuses(postgres_dsn) == ["finished"] * 5
