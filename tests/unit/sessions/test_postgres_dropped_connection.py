"""A PostgresStore whose idle connection the server dropped (a restart, a failover, ``pg_terminate_backend``, an
idle killer) opens a new one before the next turn's commit: the turn, whose model and tools already ran, is not
failed by a connection that was dead before it started.

The server's goodbye (a FATAL message) and the end of the stream wait on the idle connection's socket; the store
looks there before using it (:func:`agentactors._postgres._dead`), at no round trip.  A real server: the real clock.
"""

from __future__ import annotations

import anyio
import pytest

from agentactors import Agent, Runtime
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import PostgresStore
from tests.support.postgres import drop_every_other_connection, postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio


async def test_a_turn_after_the_server_dropped_the_idle_connection_commits_over_a_new_one(
    postgres_dsn: str,  # noqa: F811
) -> None:
    with anyio.fail_after(60):
        store = PostgresStore(postgres_dsn)
        async with Runtime() as rt:
            model = ScriptedProvider(lambda request: "a")
            session = rt.session(Agent(model), "k", store=store)
            await session.send("one")
            assert await anyio.to_thread.run_sync(drop_every_other_connection, postgres_dsn) >= 1
            for n in range(3):
                await session.send(f"turn {n}")
                assert session.version == n + 2
            assert model.calls == 4
        async with PostgresStore(postgres_dsn) as other:
            stored = await other.load("k")
        assert stored is not None and stored.version == 4 and len(stored.messages) == 8


async def test_a_load_after_the_server_dropped_the_idle_connection_reads_over_a_new_one(
    postgres_dsn: str,  # noqa: F811
) -> None:
    with anyio.fail_after(60):
        async with PostgresStore(postgres_dsn) as store:
            assert await store.load("k") is None
            assert await anyio.to_thread.run_sync(drop_every_other_connection, postgres_dsn) >= 1
            assert await store.load("k") is None
            assert await store.delete("k") is False
