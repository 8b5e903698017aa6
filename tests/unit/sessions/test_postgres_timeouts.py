"""A PostgresStore call ends — with psycopg's typed error, within a bound — on a database that never answers.

A session shields its commits from cancellation (it must know whether its turn was stored), so a commit stuck on
a row another transaction holds locked, or on a server that stopped answering, would be a hang nobody can
cancel.  The store's connection is made so that it cannot be (:mod:`agentactors._postgres`).  A real server:
the session's for a held row lock, a module's own to freeze (``SIGSTOP``, ``SIGCONT`` after).  The real clock.
"""

from __future__ import annotations

import time

import anyio
import psycopg
import pytest

from agentactors import Agent, Runtime
from agentactors._postgres import answer_bound
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import PostgresStore, SessionRecord
from tests.support.postgres import PostgresServer, postgres_dsn, postgres_server  # noqa: F401  (fixtures)
from tests.support.postgres_faults import frozen, own_postgres_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def test_a_turn_behind_a_held_row_lock_fails_within_lock_timeout_and_the_session_goes_on(
    postgres_dsn: str,  # noqa: F811
) -> None:
    store = PostgresStore(postgres_dsn, lock_timeout=0.5)
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(lambda r: f"seen {len(r.messages)}")), "k", store=store)
        await session.send("one")
        with psycopg.connect(postgres_dsn) as holder:  # another transaction holds the session's row
            assert holder.execute("SELECT * FROM agentactors_sessions WHERE key = 'k' FOR UPDATE").fetchall()
            started = time.monotonic()
            with pytest.raises(psycopg.errors.LockNotAvailable):
                await session.send("two")
            assert 0.4 <= time.monotonic() - started < 5
            holder.rollback()
        assert session.version == 1
        assert (await session.send("three")).content == "seen 3"
        assert session.version == 2


async def test_a_commit_to_a_frozen_server_fails_within_the_bound_and_the_store_goes_on(
    own_postgres_server: PostgresServer,  # noqa: F811
) -> None:
    dsn = await anyio.to_thread.run_sync(own_postgres_server.new_database)
    bound = answer_bound(0.5)
    assert bound is not None
    async with PostgresStore(dsn, statement_timeout=0.5, connect_timeout=1) as store:
        first = await store.commit(SessionRecord("k"), expected_version=None)
        with frozen(own_postgres_server):
            started = time.monotonic()
            with pytest.raises(psycopg.OperationalError, match="did not answer within"):
                await store.commit(SessionRecord("k"), expected_version=1)
            assert bound <= time.monotonic() - started < bound + 3
        # Continued: a new connection.  (A transaction the server never saw end is rolled back: version 1.)
        assert await store.load("k") == first
        assert (await store.commit(SessionRecord("k"), expected_version=1)).version == 2
