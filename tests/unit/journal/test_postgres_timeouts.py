"""A PostgresJournal call ends — with psycopg's typed error, within a bound — on a database that never answers.

Journal commits are shielded from cancellation (one happens whole or not at all), so a commit stuck on a row
lock another transaction holds, or on a server that stopped answering, would be a hang nobody can cancel.  The
connection is made so that it cannot be (:mod:`agentactors._postgres`): the server's ``lock_timeout`` and
``statement_timeout``, TCP keepalives, and a deadline of our own for a server that never answers at all.

A real server: the session's for a held row lock, a module's own to freeze (``SIGSTOP`` every process of it,
``SIGCONT`` after).  Real sockets and threads: the real clock (each test also has pytest's timeout, so one that
regressed fails instead of hanging the suite).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import psycopg
import pytest

from agentactors import PostgresJournal
from agentactors._postgres import KEEPALIVES, answer_bound
from agentactors.loop.tape import Commit
from agentactors.messages import Message
from tests.support.postgres import PostgresServer, postgres_dsn, postgres_server  # noqa: F401  (fixtures)
from tests.support.postgres_faults import frozen, own_postgres_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

INPUTS = (Message.user("go"),)


@contextmanager
def row_locked(dsn: str, sql: str) -> Iterator[None]:
    """Another connection holds the rows ``sql`` selects ``FOR UPDATE`` (its transaction open) for the block."""
    with psycopg.connect(dsn) as holder:
        assert holder.execute(sql + " FOR UPDATE").fetchall()
        try:
            yield
        finally:
            holder.rollback()


async def test_a_commit_behind_a_held_row_lock_fails_within_lock_timeout_and_the_next_one_lands(
    postgres_dsn: str,  # noqa: F811
) -> None:
    async with PostgresJournal(postgres_dsn, lock_timeout=0.5) as journal:
        await journal.commit("r1", "a", INPUTS, Commit(begin=True))
        with row_locked(postgres_dsn, "SELECT * FROM agentactors_runs WHERE run_id = 'r1'"):
            started = time.monotonic()
            with pytest.raises(psycopg.errors.LockNotAvailable):
                await journal.commit("r1", "a", INPUTS, Commit(end="cancelled"))
            assert 0.4 <= time.monotonic() - started < 5
            assert (await journal.load_run("r1")).status == "running"  # nothing of it was written
            with pytest.raises(psycopg.errors.LockNotAvailable):  # a claim waits for the row too
                await journal.claim("r1")
        await journal.commit("r1", "a", INPUTS, Commit(end="cancelled"))
        assert (await journal.load_run("r1")).status == "cancelled"


async def test_a_statement_past_statement_timeout_is_cancelled_by_the_server(postgres_dsn: str) -> None:  # noqa: F811
    async with PostgresJournal(postgres_dsn, statement_timeout=0.5, lock_timeout=None) as journal:
        await journal.commit("r1", "a", INPUTS, Commit(begin=True))
        with row_locked(postgres_dsn, "SELECT * FROM agentactors_runs WHERE run_id = 'r1'"):
            started = time.monotonic()
            with pytest.raises(psycopg.errors.QueryCanceled):  # the server's answer: before our own deadline
                await journal.commit("r1", "a", INPUTS, Commit(end="cancelled"))
            assert 0.4 <= time.monotonic() - started < (answer_bound(0.5) or 0)
        await journal.commit("r1", "a", INPUTS, Commit(end="cancelled"))


async def test_calls_to_a_frozen_server_fail_within_the_bound_and_the_journal_goes_on(
    own_postgres_server: PostgresServer,  # noqa: F811
) -> None:
    dsn = await anyio.to_thread.run_sync(own_postgres_server.new_database)
    bound = answer_bound(0.5)
    assert bound is not None
    async with PostgresJournal(dsn, statement_timeout=0.5, connect_timeout=1) as journal:
        await journal.commit("r1", "a", INPUTS, Commit(begin=True))
        with frozen(own_postgres_server):
            started = time.monotonic()
            with pytest.raises(psycopg.OperationalError, match="did not answer within"):
                await journal.commit("r1", "a", INPUTS, Commit(end="cancelled"))  # shielded: it ends by itself
            assert bound <= time.monotonic() - started < bound + 3
            # The connection was thrown away; a new one cannot be made to a frozen server: connect_timeout.
            started = time.monotonic()
            with pytest.raises(ConnectionError, match="could not connect"):
                await journal.load_run("r1")
            assert time.monotonic() - started < 5
        # Continued: the journal goes on over a new connection.  (The cut-off commit reached the server's socket
        # before it froze, so it may have landed: its outcome is unknown, as on any dropped connection.)
        assert (await journal.load_run("r1")).status in ("running", "cancelled")
        await journal.commit("r1", "a", INPUTS, Commit(end="finished"))
        assert (await journal.load_run("r1")).status == "finished"


async def test_the_connection_is_made_with_keepalives_and_the_timeouts(postgres_dsn: str) -> None:  # noqa: F811
    async with PostgresJournal(postgres_dsn, statement_timeout=12, lock_timeout=3.5) as journal:
        await journal.park("k", "1")
        conn: Any = journal._worker.conn
        assert conn is not None
        shown = {name: conn.execute(f"SHOW {name}").fetchone()[0]
                 for name in ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout")}
        assert shown == {"statement_timeout": "12s", "lock_timeout": "3500ms",
                         "idle_in_transaction_session_timeout": "12s"}
        params = conn.info.get_parameters()
        assert {key: params.get(key) for key in KEEPALIVES} == {key: str(v) for key, v in KEEPALIVES.items()}


async def test_the_dsn_keepalives_win_and_none_leaves_the_server_settings(postgres_dsn: str) -> None:  # noqa: F811
    dsn = postgres_dsn + "?keepalives_idle=77&options=-c%20lock_timeout%3D4321"
    async with PostgresJournal(dsn, statement_timeout=None, lock_timeout=None) as journal:
        await journal.park("k", "1")
        conn: Any = journal._worker.conn
        assert conn is not None and conn.answer_timeout is None
        assert conn.info.get_parameters()["keepalives_idle"] == "77"
        assert conn.execute("SHOW lock_timeout").fetchone()[0] == "4321ms"
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "0"


@pytest.mark.parametrize(
    ("option", "value"),
    [("statement_timeout", 0), ("statement_timeout", -1.0), ("lock_timeout", float("nan")),
     ("lock_timeout", float("inf")), ("statement_timeout", 2147484), ("connect_timeout", None),
     ("connect_timeout", True), ("lock_timeout", "5")],
)
def test_timeouts_are_checked_when_the_journal_is_made(option: str, value: Any) -> None:
    with pytest.raises(ValueError, match=option):
        PostgresJournal("postgresql://u:pw@127.0.0.1:1/db", **{option: value})
