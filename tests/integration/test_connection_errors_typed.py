"""A journal or session store that cannot reach its database raises its owner's error — and still a
``ConnectionError``.

Before, a PostgreSQL server that did not accept the connection (stopped, restarting, refusing the password, a port
nothing listens on) and a SQLite path SQLite cannot open (its directory missing, a directory, a file that is not a
database) raised a plain ``ConnectionError``: outside the library's tree, so the ``except JournalError`` around a
journaled run and the ``except SessionError`` around a turn that ``docs/durability.md`` recommends missed the most
common outage of all — a server restarting.  Now each owner raises a class of its own that is both its typed error
and a ``ConnectionError`` (:class:`~agentactors.journal.postgres.PostgresJournalConnectionError`,
:class:`~agentactors.sessions.postgres.PostgresStoreConnectionError`, and SQLite's
:class:`~agentactors.journal.sqlite.SqliteJournalConnectionError`,
:class:`~agentactors.sessions.sqlite.SqliteStoreConnectionError`): ``except ConnectionError`` catches it still, its
text is what it was, and for PostgreSQL it has neither cause nor context (psycopg's error holds the failed
connection, which lists the password) while SQLite's keeps sqlite3's error as its cause.

Real servers and files on real threads: the real clock, generous bounds.  A server of the test's own is stopped
(``pg_ctl stop -m immediate``, as a restart or a crash leaves it) under an open journal and store.
"""

from __future__ import annotations

import pickle
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import psycopg
import pytest

from agentactors import Agent, PostgresJournal, Runtime, ScriptedProvider, SqliteJournal
from agentactors.errors import SessionError
from agentactors.journal import JournalError
from agentactors.sessions import PostgresStore, SqliteStore
from tests.support.chains import leaks
from tests.support.postgres import PASSWORD, USER, PostgresServer, postgres_server  # noqa: F401  (fixture)
from tests.support.postgres_faults import own_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

WRONG = "wrong-PW-canary-7a6b5c4d"  # not key-shaped: only our own care hides it


def _closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _classes(owner: str) -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
    """The owner's connection error class, its base (the owner's typed error) and the tree's class above it."""
    if owner == "pg-journal":
        from agentactors.journal.postgres import PostgresJournalConnectionError, PostgresJournalError

        return PostgresJournalConnectionError, PostgresJournalError, JournalError
    if owner == "pg-store":
        from agentactors.sessions.postgres import PostgresStoreConnectionError, PostgresStoreError

        return PostgresStoreConnectionError, PostgresStoreError, SessionError
    if owner == "sqlite-journal":
        from agentactors.journal.sqlite import SqliteJournalConnectionError, SqliteJournalError

        return SqliteJournalConnectionError, SqliteJournalError, JournalError
    from agentactors.sessions.sqlite import SqliteStoreConnectionError, SqliteStoreError

    return SqliteStoreConnectionError, SqliteStoreError, SessionError


def _assert_pg_connection_error(exc: BaseException, owner: str, dsn: str, password: str) -> None:
    """``exc`` is the PostgreSQL owner's connection error: typed, a ``ConnectionError``, its text as before, the
    password nowhere, neither cause nor context."""
    from agentactors._postgres import safe_dsn

    cls, base, tree = _classes(owner)
    assert type(exc) is cls and isinstance(exc, base) and isinstance(exc, tree), type(exc).__mro__
    assert isinstance(exc, ConnectionError) and not isinstance(exc, psycopg.Error)
    what = "PostgresJournal" if owner == "pg-journal" else "PostgresStore"
    said = (f"{what} could not connect to {safe_dsn(dsn)}: ", f"{what} could not connect: its DSN cannot be parsed (")
    assert str(exc).startswith(said), str(exc)
    assert getattr(exc, "dsn", None) == safe_dsn(dsn) and getattr(exc, "sqlstate", "?") is None
    assert exc.__cause__ is None and exc.__context__ is None
    assert not leaks(exc, password), leaks(exc, password)
    back = pickle.loads(pickle.dumps(exc))  # Ray ships errors: the same class, text and attributes come back
    assert type(back) is cls and str(back) == str(exc) and back.dsn == exc.dsn  # type: ignore[attr-defined]


# -- PostgreSQL: a port nothing listens on, a password refused ------------------------------------------------------


async def test_a_journaled_run_on_a_refused_server_is_a_journal_error_and_a_connection_error() -> None:
    dsn = f"postgresql://{USER}:{WRONG}@127.0.0.1:{_closed_port()}/postgres"
    with anyio.fail_after(60):
        with pytest.raises(JournalError) as caught:  # what docs/durability.md recommends around a journaled run
            async with PostgresJournal(dsn, connect_timeout=2) as journal, Runtime(journal=journal):
                await Agent(ScriptedProvider(["answer"]), name="a").run("go")
    _assert_pg_connection_error(caught.value, "pg-journal", dsn, WRONG)
    assert "refused" in str(caught.value) or "could not connect" in str(caught.value)


async def test_a_store_on_a_refused_server_is_a_session_error_and_a_connection_error() -> None:
    dsn = f"postgresql://{USER}:{WRONG}@127.0.0.1:{_closed_port()}/postgres"
    with anyio.fail_after(60):
        async with PostgresStore(dsn, connect_timeout=2) as store, Runtime() as rt:
            session = rt.session(Agent(ScriptedProvider(["answer"])), "k", store=store)
            with pytest.raises(SessionError) as caught:
                await session.send("go")
            with pytest.raises(ConnectionError) as again:  # what caught it before catches it still
                await store.load("k")
    _assert_pg_connection_error(caught.value, "pg-store", dsn, WRONG)
    _assert_pg_connection_error(again.value, "pg-store", dsn, WRONG)


@pytest.mark.parametrize("owner", ["pg-journal", "pg-store"])
async def test_a_refused_password_and_an_unparseable_dsn_are_typed_too(
    postgres_server: PostgresServer, owner: str  # noqa: F811
) -> None:
    refused = f"postgresql://{USER}:{WRONG}@127.0.0.1:{postgres_server.port}/postgres"
    unparseable = f"postgresql://{USER}:{WRONG}%zz@127.0.0.1:1/postgres"
    for dsn in (refused, unparseable):
        made = (PostgresJournal if owner == "pg-journal" else PostgresStore)(dsn, connect_timeout=2)
        with anyio.fail_after(60):
            with pytest.raises(JournalError if owner == "pg-journal" else SessionError) as caught:
                await (made.unfinished() if isinstance(made, PostgresJournal) else made.load("s1"))
            await made.aclose()
        _assert_pg_connection_error(caught.value, owner, dsn, WRONG)
    assert "password authentication failed" in str(caught.value) or "cannot be parsed" in str(caught.value)


# -- PostgreSQL: the server stops under an open journal and store (a restart, a crash) -----------------------------


@pytest.fixture
def stoppable_server() -> Iterator[PostgresServer]:
    """A server of this test's own, which the test stops; removed at the end."""
    with own_server() as server:
        yield server


async def test_a_server_that_stopped_is_typed_for_a_journaled_run_and_a_turn(
    stoppable_server: PostgresServer,
) -> None:
    dsn = stoppable_server.dsn()
    async with (
        PostgresJournal(dsn, connect_timeout=2) as journal,
        PostgresStore(dsn, connect_timeout=2) as store,
        Runtime(journal=journal) as rt,
        Runtime() as unjournaled,  # a turn of a journaled runtime would meet the journal's failure first
    ):
        agent = Agent(ScriptedProvider(lambda r: f"seen {len(r.messages)}"), name="a").bind(rt)
        session = unjournaled.session(Agent(ScriptedProvider(lambda r: f"seen {len(r.messages)}")), "k", store=store)
        assert (await session.send("one")).content == "seen 1"  # both connected, both working
        assert (await agent.run("go")).content == "seen 1"
        await anyio.to_thread.run_sync(stoppable_server.stop)  # as a restart or a crash leaves it: nothing listens
        with anyio.fail_after(60):
            with pytest.raises(JournalError) as run_failed:
                await agent.run("again")
            with pytest.raises(SessionError) as turn_failed:
                await session.send("two")
    _assert_pg_connection_error(run_failed.value, "pg-journal", dsn, PASSWORD)
    _assert_pg_connection_error(turn_failed.value, "pg-store", dsn, PASSWORD)


# -- SQLite: a path SQLite cannot open ------------------------------------------------------------------------------


def _bad_paths(tmp_path: Path) -> dict[str, tuple[str, str, str]]:
    """What is at each bad path: SQLite's reason for it, and its name for the failure."""
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("hello, not a database " * 100)
    (tmp_path / "a-dir").mkdir()
    return {
        "missing directory": (str(tmp_path / "nowhere" / "runs.db"), "unable to open database file", "SQLITE_CANTOPEN"),
        "a directory": (str(tmp_path / "a-dir"), "unable to open database file", "SQLITE_CANTOPEN"),
        "not a database": (str(not_a_db), "file is not a database", "SQLITE_NOTADB"),
    }


def _assert_sqlite_connection_error(exc: BaseException, owner: str, path: str, reason: str, name: str) -> None:
    cls, base, tree = _classes(owner)
    assert type(exc) is cls and isinstance(exc, base) and isinstance(exc, tree), type(exc).__mro__
    assert isinstance(exc, ConnectionError)
    assert str(exc) == f"could not open the SQLite database {path!r}: {reason}"  # the text it had
    assert isinstance(exc.__cause__, sqlite3.DatabaseError)  # sqlite3's error, as documented
    assert getattr(exc, "path", None) == path and getattr(exc, "sqlite_errorname", None) == name
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls and str(back) == str(exc) and back.path == path  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["missing directory", "a directory", "not a database"])
async def test_a_journaled_run_at_a_bad_path_is_a_journal_error_and_a_connection_error(
    tmp_path: Path, kind: str
) -> None:
    path, reason, name = _bad_paths(tmp_path)[kind]
    with anyio.fail_after(30):
        with pytest.raises(JournalError) as caught:
            async with SqliteJournal(path) as journal, Runtime(journal=journal):
                await Agent(ScriptedProvider(["answer"]), name="a").run("go")
    _assert_sqlite_connection_error(caught.value, "sqlite-journal", path, reason, name)


@pytest.mark.parametrize("kind", ["missing directory", "a directory", "not a database"])
async def test_a_store_at_a_bad_path_is_a_session_error_and_a_connection_error(tmp_path: Path, kind: str) -> None:
    path, reason, name = _bad_paths(tmp_path)[kind]
    with anyio.fail_after(30):
        async with SqliteStore(path) as store, Runtime() as rt:
            session = rt.session(Agent(ScriptedProvider(["answer"])), "k", store=store)
            with pytest.raises(SessionError) as caught:
                await session.send("go")
            with pytest.raises(ConnectionError) as again:  # what caught it before catches it still
                await store.load("k")
    _assert_sqlite_connection_error(caught.value, "sqlite-store", path, reason, name)
    _assert_sqlite_connection_error(again.value, "sqlite-store", path, reason, name)


def test_the_connection_errors_are_drawn_beside_their_owners_errors() -> None:
    """Each is exported by its owner's module and is both that owner's error and a ``ConnectionError``."""
    import agentactors.journal.postgres as journal_postgres
    import agentactors.journal.sqlite as journal_sqlite
    import agentactors.sessions.postgres as sessions_postgres
    import agentactors.sessions.sqlite as sessions_sqlite

    for module, name in (
        (journal_postgres, "PostgresJournalConnectionError"),
        (sessions_postgres, "PostgresStoreConnectionError"),
        (journal_sqlite, "SqliteJournalConnectionError"),
        (sessions_sqlite, "SqliteStoreConnectionError"),
    ):
        assert name in module.__all__
        cls = getattr(module, name)
        assert issubclass(cls, ConnectionError) and issubclass(cls, JournalError | SessionError)
