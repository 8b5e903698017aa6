"""Sessions addressed by where their store keeps them: store objects of one file (one database) reach one session.

A service that builds a store object per request (``SqliteStore("sessions.db")`` in a handler) got a new session
per request when sessions were addressed by the store object's ``id()``: its ``cost_limit`` did not hold across
requests, and two concurrent requests of one user activated two actors for one stored session, whose commits then
conflicted.  A store that can say where its records live (``store.address``) is addressed by that instead; one that
cannot is addressed by identity, as before.

Stores of one's own run on virtual time (no threads); SQLite and PostgreSQL on the real clock (threads, files and a
server).
"""

from __future__ import annotations

import gc
import logging
import os
import sqlite3
import sys
import weakref
from pathlib import Path
from typing import Any

import anyio
import psycopg.conninfo
import pytest

from agentactors import Agent, CostLimitExceeded, LLMResponse, Runtime, ScriptedProvider
from agentactors.errors import SessionConflictError
from agentactors.messages import LLMRequest
from agentactors.sessions import MemoryStore, PostgresStore, SessionStore, SqliteStore
from agentactors.sessions.registry import Sessions
from agentactors.sessions.store import SessionRecord, check_store, store_address
from tests.support.postgres import PASSWORD, PostgresServer, postgres_dsn, postgres_server  # noqa: F401
from tests.support.prices import STEP, USAGE, gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = pytest.mark.anyio


def echo_model(request: LLMRequest) -> str:
    return "seen: " + " | ".join(m.content for m in request.messages if m.role == "user")


async def slow_echo(request: LLMRequest) -> str:
    await anyio.sleep(0.05)  # long enough for the other request's turn to arrive while this one runs
    return echo_model(request)


def priced() -> ScriptedProvider:
    """Every call answers and costs ``STEP``."""
    return ScriptedProvider(lambda r: LLMResponse("ok", usage=USAGE), name="openai", model="gpt-4o")


class Named:
    """A store of one's own over the records it is given, at the ``address`` it is given; counts what it is asked."""

    def __init__(self, records: MemoryStore, address: Any) -> None:
        self.records = records
        self.address = address
        self.calls = 0
        self.closed = 0

    async def load(self, key: str) -> SessionRecord | None:
        self.calls += 1
        return await self.records.load(key)

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        self.calls += 1
        return await self.records.commit(record, expected_version=expected_version)

    async def delete(self, key: str, *, expected_version: int | None = None) -> bool:
        self.calls += 1
        return await self.records.delete(key, expected_version=expected_version)

    async def aclose(self) -> None:
        self.closed += 1


class Anonymous:
    """A store of one's own that says nothing of where it keeps its records (no ``address``): the port as it was."""

    def __init__(self, records: MemoryStore) -> None:
        self.records = records

    async def load(self, key: str) -> SessionRecord | None:
        return await self.records.load(key)

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        return await self.records.commit(record, expected_version=expected_version)

    async def delete(self, key: str, *, expected_version: int | None = None) -> bool:
        return await self.records.delete(key, expected_version=expected_version)

    async def aclose(self) -> None:
        pass


async def _until_idle(rt: Runtime) -> None:
    registry = Sessions.of(rt)
    with anyio.fail_after(30):
        while registry.stats()["active"]:  # noqa: ASYNC110  (polled: the sweeper's work, on the real clock)
            await anyio.sleep(0.02)


def _open(store: SqliteStore) -> bool:
    """Whether ``store`` has a connection open, read anew (for mypy, as ``_stats``)."""
    return store._conn is not None


def _stats(rt: Runtime) -> dict[str, int]:
    """The registry's counts, read anew (mypy keeps a value asserted once narrowed across awaits)."""
    return Sessions.of(rt).stats()


# -- what each store's address is ---------------------------------------------------------------------------------


def test_a_sqlite_file_is_addressed_by_its_resolved_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "data" / "sessions.db"
    real.parent.mkdir()
    (tmp_path / "link").symlink_to(real.parent)
    expected = ("sqlite", os.path.realpath(real))
    assert SqliteStore(real).address == expected
    assert SqliteStore(str(real)).address == expected
    assert SqliteStore(tmp_path / "link" / "sessions.db").address == expected  # a symlink names the same file
    monkeypatch.chdir(tmp_path / "data")
    relative = SqliteStore("sessions.db")
    assert relative.address == expected  # resolved when the store is made...
    monkeypatch.chdir(tmp_path)
    assert relative.address == expected  # ...as its connections are: a later chdir changes neither
    assert SqliteStore("other.db").address != expected
    assert store_address(SqliteStore(real)) == store_address(SqliteStore(real))


@pytest.mark.parametrize(
    "path", [":memory:", "", "file::memory:", "file::memory:?cache=shared", "file:m1?mode=memory&cache=shared"]
)
def test_a_private_in_memory_sqlite_database_is_addressed_by_identity(path: str) -> None:
    a, b = SqliteStore(path), SqliteStore(path)
    assert a.address is None and b.address is None  # each object is its own database
    assert store_address(a) == store_address(a) and store_address(a) != store_address(b)


def test_a_sqlite_uri_naming_a_file_is_addressed_by_the_uri_where_it_was_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # How SQLite reads a "file:" name depends on how it was built (a URI, or a file of that name): two stores of
    # one URI, made in one directory, open the same file either way; nothing else is promised to be the same.
    monkeypatch.chdir(tmp_path)
    uri = "file:sessions.db?mode=rwc"
    assert SqliteStore(uri).address == SqliteStore(uri).address is not None
    assert SqliteStore(uri).address != SqliteStore("file:sessions.db").address
    before = SqliteStore(uri).address
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert SqliteStore(uri).address != before  # another directory, another file


def test_a_memory_store_and_a_store_without_an_address_are_addressed_by_identity() -> None:
    records = MemoryStore()
    assert MemoryStore().address is None
    assert store_address(records) != store_address(MemoryStore())
    plain = Anonymous(records)
    assert check_store(plain) is plain and isinstance(plain, SessionStore)  # the address is optional
    assert store_address(plain) == store_address(plain) != store_address(Anonymous(records))
    assert store_address(Named(records, None)) != store_address(Named(records, None))  # None: by identity too
    assert store_address(Named(records, ("mine", 1))) == store_address(Named(MemoryStore(), ("mine", 1)))


@pytest.mark.virtual_time
async def test_an_address_that_is_not_hashable_is_refused_where_the_session_is_opened() -> None:
    async with Runtime() as rt:
        with pytest.raises(TypeError, match="address"):
            rt.session(Agent(ScriptedProvider(echo_model)), "k", store=Named(MemoryStore(), ["not", "hashable"]))


# -- stores of one's own (virtual time) ---------------------------------------------------------------------------


@pytest.mark.virtual_time
async def test_store_objects_of_one_address_reach_one_session_served_by_the_first() -> None:
    records = MemoryStore()
    first, second = Named(records, ("mine", "db")), Named(records, ("mine", "db"))
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(echo_model))
        one = rt.session(agent, "u", store=first, idle_timeout=5)
        assert (await one.send("a")).ok
        two = rt.session(agent, "u", store=second, idle_timeout=5)
        assert two.active and two.history == one.history and two.version == 1  # the same session, active
        assert two.budget is one.budget
        assert (await two.send("b")).content == "seen: a | b"
        assert _stats(rt)["active"] == 1 and _stats(rt)["stores"] == 1
        assert second.calls == 0  # the first object of the address serves its active sessions
        await anyio.sleep(10)
        assert not one.active and _stats(rt)["stores"] == 0
        assert (first.closed, second.closed) == (1, 0)  # the one that served is closed, as it was
        assert (await rt.session(agent, "u", store=second).send("c")).content == "seen: a | b | c"
        assert second.calls > 0 and _stats(rt)["stores"] == 1  # activated again: the requester's store serves
    assert (first.closed, second.closed) == (1, 1)


@pytest.mark.virtual_time
async def test_store_objects_without_an_address_are_separate_sessions_as_before() -> None:
    records = MemoryStore()
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(echo_model))
        one = rt.session(agent, "u", store=Anonymous(records))
        assert (await one.send("a")).ok
        other = rt.session(agent, "u", store=Anonymous(records))
        assert not other.active and other.budget is not one.budget
        assert (await other.send("b")).content == "seen: a | b"  # its own actor, loaded from the same records
        assert _stats(rt)["active"] == 2 and _stats(rt)["stores"] == 2


@pytest.mark.virtual_time
async def test_a_cost_limit_holds_across_store_objects_of_one_address() -> None:
    records = MemoryStore()
    async with Runtime() as rt:
        agent = Agent(priced())
        first = rt.session(agent, "u", store=Named(records, "db"), cost_limit=1.5 * STEP, idle_timeout=5)
        assert (await first.send("one")).ok
        del first
        await anyio.sleep(10)  # deactivated; the request that set the limit is over, its store object let go
        again = rt.session(agent, "u", store=Named(records, "db"))  # the next request: a new store object
        assert not again.active and again.budget.limit == 1.5 * STEP and again.budget.calls == 1
        second = await again.send("two")
        assert isinstance(second.error, CostLimitExceeded) and second.error.scope == "session 'u'"
        third = await rt.session(agent, "u", store=Named(records, "db")).send("three")
        assert isinstance(third.error, CostLimitExceeded) and third.steps == 0


@pytest.mark.virtual_time
async def test_a_kept_budget_keeps_an_identity_addressed_store_and_lets_an_addressed_one_go() -> None:
    """A budget kept past its session's deactivation is found by the slot's address.  An identity is an ``id()``,
    which another store could get once the first is collected — and find this session's budget: the runtime keeps
    the store object with the budget.  An address names the records, whichever object reaches them: the request's
    store object is let go."""
    records = MemoryStore()
    async with Runtime() as rt:
        agent = Agent(priced())
        anonymous, named = Anonymous(records), Named(records, "db")
        refs = weakref.ref(anonymous), weakref.ref(named)
        for key, store in (("a", anonymous), ("n", named)):
            assert (await rt.session(agent, key, store=store, cost_limit=STEP, idle_timeout=5).send("hi")).ok
        del anonymous, named, store
        await anyio.sleep(10)
        assert _stats(rt)["active"] == 0
        gc.collect()
        assert refs[0]() is not None and refs[1]() is None


# -- SQLite (real threads and files) ------------------------------------------------------------------------------


def _stored_version(path: Path, key: str) -> int:
    """The version of ``key`` in the file, read by a connection of its own."""
    conn = sqlite3.connect(path)
    try:
        (version,) = conn.execute("SELECT version FROM agentactors_sessions WHERE key = ?", (key,)).fetchone()
    finally:
        conn.close()
    return int(version)


async def test_two_sqlite_store_objects_of_one_file_share_one_actor_and_one_budget(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(slow_echo))
        # Two requests of one user at once, each with the store object its handler made.
        one = rt.session(agent, "user-1", store=SqliteStore(path), cost_limit=1.0)
        two = rt.session(agent, "user-1", store=SqliteStore(path), cost_limit=1.0)
        assert two.budget is one.budget and two.budget.limit == 1.0
        results: dict[str, Any] = {}

        async def request(name: str, session: Any) -> None:
            results[name] = await session.send(name)

        async with anyio.create_task_group() as tg:  # serialised by the session's one actor: no conflict
            tg.start_soon(request, "a", one)
            await anyio.sleep(0.01)
            tg.start_soon(request, "b", two)
        assert results["a"].content == "seen: a" and results["b"].content == "seen: a | b"
        assert one.version == two.version == 2 and _stats(rt)["active"] == 1 and _stats(rt)["stores"] == 1
        assert one.budget.calls == 2
        with pytest.raises(ValueError, match="already has a limit"):
            rt.session(agent, "user-1", store=SqliteStore(path), cost_limit=2.0)  # one session, one limit
    assert _stored_version(path, "user-1") == 2


async def test_concurrent_requests_through_new_store_objects_never_conflict(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(slow_echo))
        failures: list[BaseException] = []

        async def request(n: int) -> None:
            async with SqliteStore(path) as store:  # a store per request, closed by its owner after it
                try:
                    assert (await rt.session(agent, "user-1", store=store).send(f"m{n}")).ok
                except SessionConflictError as exc:
                    failures.append(exc)

        async with anyio.create_task_group() as tg:
            for n in range(5):
                tg.start_soon(request, n)
        assert failures == []
        final = rt.session(agent, "user-1", store=SqliteStore(path))
        assert final.version == 5 and len(final.history) == 10


async def test_private_in_memory_sqlite_stores_stay_separate() -> None:
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(echo_model))
        a, b = SqliteStore(":memory:"), SqliteStore(":memory:")
        assert (await rt.session(agent, "k", store=a).send("one")).content == "seen: one"
        other = rt.session(agent, "k", store=b)
        assert not other.active
        assert (await other.send("two")).content == "seen: two"  # its own database: nothing of a's
        assert _stats(rt)["active"] == 2 and _stats(rt)["stores"] == 2


async def test_a_store_its_owner_closed_reopens_when_its_session_is_used_again(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(echo_model))
        async with SqliteStore(path) as first:  # request 1: its handler closes its store when it ends
            assert (await rt.session(agent, "u", store=first, idle_timeout=0.5).send("one")).ok
        assert not _open(first)  # closed by its owner; its session is still active here, served by it
        async with SqliteStore(path) as second:  # request 2: another store object of the same file
            session = rt.session(agent, "u", store=second, idle_timeout=0.5)
            assert session.active  # the same session...
            assert (await session.send("two")).content == "seen: one | two"  # ...whose store reopened
            assert _stats(rt)["active"] == 1 and not _open(second)  # the first object served it
        await _until_idle(rt)
        with anyio.fail_after(30):  # closed again once its session deactivated (the sweeper's close follows)
            while _open(first):  # noqa: ASYNC110  (polled: the sweeper's work, on the real clock)
                await anyio.sleep(0.02)
        assert _stats(rt)["stores"] == 0
        async with SqliteStore(path) as third:
            assert (await rt.session(agent, "u", store=third).send("three")).content == "seen: one | two | three"
            assert _open(third)  # activated anew: the requester's store serves it now
        assert _stats(rt)["stores"] == 1  # (closed by its owner; the runtime still closes it at its exit)


# -- PostgreSQL (a real server) -----------------------------------------------------------------------------------


def _with_password(dsn: str, password: str) -> str:
    return dsn.replace(f":{PASSWORD}@", f":{password}@")


def _keywords(dsn: str) -> str:
    """``dsn`` as ``key=value`` pairs, in the reverse order of its URL's."""
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    return psycopg.conninfo.make_conninfo("", **dict(reversed(list(params.items()))))


def test_a_postgres_address_has_no_password() -> None:
    url = f"postgresql://app:{PASSWORD}@db.example:5432/chat?sslpassword=also-secret-here"
    store = PostgresStore(url)
    assert store.address is not None and store.address[0] == "postgres"
    for shown in (repr(store.address), str(store.address), repr(store)):
        assert PASSWORD not in shown and "also-secret-here" not in shown
    assert PostgresStore(url.replace(PASSWORD, "another-one")).address == store.address
    assert PostgresStore("postgresql://app@db.example:5432/chat?sslpassword=x").address == store.address
    assert PostgresStore(_keywords(url)).address == store.address  # the same server, database and user
    assert PostgresStore(url.replace("/chat", "/other")).address != store.address
    assert PostgresStore(url.replace("app:", "admin:")).address != store.address
    assert PostgresStore("not a dsn at all ===").address is None  # unreadable: by identity, never all alike


def test_without_psycopg_a_postgres_store_is_addressed_by_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg.conninfo", None)  # (an import of it raises ImportError)
    store = PostgresStore(f"postgresql://app:{PASSWORD}@db.example:5432/chat")
    assert store.address is None  # not one address for every DSN (nothing could tell them apart)
    assert store_address(store) != store_address(PostgresStore(f"postgresql://app:{PASSWORD}@db.example:5432/chat"))


async def test_postgres_stores_differing_only_in_password_share_sessions(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture  # noqa: F811
) -> None:
    caplog.set_level(logging.DEBUG)
    right = PostgresStore(postgres_dsn)
    stale = PostgresStore(_with_password(postgres_dsn, "a-stale-password"))  # (it could not connect by itself)
    keywords = PostgresStore(_keywords(postgres_dsn))
    assert right.address == stale.address == keywords.address
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(echo_model))
        one = rt.session(agent, "user-1", store=right, cost_limit=1.0)
        assert (await one.send("one")).ok
        two = rt.session(agent, "user-1", store=stale)
        assert two.active and two.budget is one.budget
        assert (await two.send("two")).content == "seen: one | two"  # served by the first store of the address
        three = rt.session(agent, "user-1", store=keywords)
        assert (await three.send("three")).content == "seen: one | two | three"
        assert _stats(rt)["active"] == 1 and _stats(rt)["stores"] == 1
        for shown in (repr(one), repr(right), repr(stale), repr(right.address), repr(Sessions.of(rt).stats())):
            assert PASSWORD not in shown and "a-stale-password" not in shown
    assert stale._worker.conn is None and keywords._worker.conn is None  # never connected
    assert PASSWORD not in caplog.text and "a-stale-password" not in caplog.text
