"""A database password never shows: not in an error (its text, args, attributes, notes, its cause or its suppressed
context), a repr, or a log record — whatever fails: a wrong password, a refused or unparseable DSN, a statement or
lock timeout, the watchdog that cuts off a server that stopped answering.

Against the real PostgreSQL of :mod:`tests.support.postgres`.  The leaks these close: the ``ConnectionError`` raised
``from None`` still kept psycopg's error as its ``__context__`` — and that error holds the failed connection, whose
repr lists every connection option, the password (from the DSN or ``PGPASSWORD``) included; libpq's message about
a DSN it cannot parse quotes the part it stopped at (``invalid percent-encoded token: "<password>%zz"``,
``missing "=" after "<the rest of a password with a space>"``), which no scrub could find in a DSN it cannot parse;
``sslpassword`` (the client key's) was shown by ``repr``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import psycopg
import pytest

from agentactors import PostgresJournal
from agentactors.loop.tape import Commit
from agentactors.messages import Message
from agentactors.sessions import PostgresStore
from tests.support.chains import leaks
from tests.support.postgres import USER, PostgresServer, postgres_dsn, postgres_server  # noqa: F401  (fixtures)
from tests.support.postgres_faults import frozen, own_postgres_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

WRONG = "wrong-PW-canary-4f3e2d1c"  # not key-shaped: only our own care hides it
INPUTS = (Message.user("go"),)
_LOGGERS = ("psycopg", "agentactors")


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG)
    return caplog


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [t for r in caplog.records for t in (r.getMessage(), r.exc_text or "", caplog.handler.format(r))]


def dsns(server: PostgresServer) -> dict[str, str]:
    port = server.port
    return {
        "url": f"postgresql://{USER}:{WRONG}@127.0.0.1:{port}/postgres",
        "keywords": f"host=127.0.0.1 port={port} user={USER} password={WRONG} dbname=postgres",
        "quoted": f"host=127.0.0.1 port={port} user={USER} password='{WRONG}' dbname=postgres",
        "refused": f"postgresql://{USER}:{WRONG}@127.0.0.1:9/postgres",
    }


@pytest.mark.parametrize("kind", ["url", "keywords", "quoted", "refused"])
@pytest.mark.parametrize("owner", [PostgresJournal, PostgresStore])
async def test_a_failed_connection_shows_no_password(
    postgres_server: PostgresServer, debug_logs: pytest.LogCaptureFixture, kind: str, owner: type  # noqa: F811
) -> None:
    store = owner(dsns(postgres_server)[kind], connect_timeout=2)
    assert WRONG not in repr(store) and "***" in repr(store)
    with pytest.raises(ConnectionError) as caught:
        await (store.unfinished() if owner is PostgresJournal else store.load("s1"))
    assert ("password authentication failed" in str(caught.value)) is (kind != "refused")
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert not leaks(caught.value, WRONG)
    assert not [t for t in logged(debug_logs) if WRONG in t]
    await store.aclose()


async def test_a_password_from_the_environment_shows_nowhere(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    monkeypatch.setenv("PGPASSWORD", WRONG)
    journal = PostgresJournal(f"postgresql://{USER}@127.0.0.1:{postgres_server.port}/postgres", connect_timeout=2)
    with pytest.raises(ConnectionError) as caught:
        await journal.unfinished()
    assert not leaks(caught.value, WRONG)


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        # libpq stops at the bad escape and quotes the token: the password, here.
        (f"postgresql://{USER}:{WRONG}%zz@127.0.0.1:1/postgres", "invalid percent-encoded token"),
        # An unquoted space ends the value; libpq quotes the rest as a keyword with no "=".
        (f"host=127.0.0.1 port=1 user={USER} password={WRONG} tail-{WRONG} dbname=postgres", 'missing "="'),
        # A password with a quote or a line break: libpq's quoted token holds them too — what comes after the
        # first quote is the DSN's, whatever it holds.
        (f'postgresql://{USER}:pa"ss{WRONG}%@127.0.0.1:1/postgres', "invalid percent-encoded token"),
        (f"postgresql://{USER}:a\n{WRONG}%zz@127.0.0.1:1/postgres", "invalid percent-encoded token"),
        (f'postgresql://{USER}:="{WRONG}%zz@127.0.0.1:1/postgres', "invalid percent-encoded token"),
        # libpq quotes the whole URI here.
        (f'postgresql://{USER}:ab"{WRONG}@[::1/postgres', "IPv6 host address"),
        (f"postgresql://{USER}:ab\n{WRONG}@[::1/postgres", "IPv6 host address"),
        # Not a URI (an unknown scheme): the whole of it is a keyword with no "=".
        (f"mysql://{USER}:{WRONG}@127.0.0.1:1/postgres", 'missing "="'),
    ],
)
@pytest.mark.parametrize("owner", [PostgresJournal, PostgresStore])
async def test_a_dsn_that_cannot_be_parsed_shows_no_part_of_its_password(dsn: str, shown: str, owner: type) -> None:
    store = owner(dsn, connect_timeout=1)
    assert WRONG not in repr(store)
    with pytest.raises(ConnectionError, match=shown) as caught:
        await (store.unfinished() if owner is PostgresJournal else store.load("s1"))
    assert not leaks(caught.value, WRONG)
    assert "cannot be parsed" in str(caught.value) and '"…"' in str(caught.value)
    await store.aclose()


def test_the_client_keys_password_is_not_shown_either() -> None:
    journal = PostgresJournal(f"host=127.0.0.1 user={USER} sslpassword={WRONG} password={WRONG}x")
    assert WRONG not in repr(journal)


@contextmanager
def row_locked(dsn: str) -> Iterator[None]:
    with psycopg.connect(dsn) as holder:
        assert holder.execute("SELECT * FROM agentactors_runs WHERE run_id = 'r1' FOR UPDATE").fetchall()
        try:
            yield
        finally:
            holder.rollback()


@pytest.mark.parametrize("bound", ["statement", "lock"])
async def test_a_timed_out_statement_shows_no_password(
    postgres_dsn: str, debug_logs: pytest.LogCaptureFixture, bound: str  # noqa: F811
) -> None:
    password = str(psycopg.conninfo.conninfo_to_dict(postgres_dsn)["password"])
    options = {"statement_timeout": 0.3, "lock_timeout": None} if bound == "statement" else {"lock_timeout": 0.3}
    async with PostgresJournal(postgres_dsn, **options) as journal:
        await journal.commit("r1", "a", INPUTS, Commit(begin=True))
        with row_locked(postgres_dsn):
            expected = psycopg.errors.QueryCanceled if bound == "statement" else psycopg.errors.LockNotAvailable
            with pytest.raises(expected) as caught:
                await journal.commit("r1", "a", INPUTS, Commit(end="cancelled"))
        assert not leaks(caught.value, password)
        assert password not in repr(journal)
    assert not [t for t in logged(debug_logs) if password in t]


async def test_the_watchdogs_cut_off_shows_no_password(
    own_postgres_server: PostgresServer, debug_logs: pytest.LogCaptureFixture  # noqa: F811
) -> None:
    dsn = await anyio.to_thread.run_sync(own_postgres_server.new_database)
    password = str(psycopg.conninfo.conninfo_to_dict(dsn)["password"])
    async with PostgresJournal(dsn, statement_timeout=0.5, connect_timeout=1) as journal:
        await journal.commit("r1", "a", INPUTS, Commit(begin=True))
        with frozen(own_postgres_server):
            started = time.monotonic()
            with pytest.raises(psycopg.OperationalError, match="did not answer within") as cut:
                await journal.commit("r1", "a", INPUTS, Commit(end="cancelled"))
            assert time.monotonic() - started < 5
            with pytest.raises(ConnectionError) as reconnect:  # a frozen server: connect_timeout
                await journal.load_run("r1")
        assert not leaks(cut.value, password) and not leaks(reconnect.value, password)
    assert not [t for t in logged(debug_logs) if password in t]
