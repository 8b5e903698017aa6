"""A key deleted and created again is another conversation: a runtime still holding the old one must not commit
onto it.

Versions restart at 1 when a session is created, so after ``store.delete(key)`` and a new conversation under
the same key, the stored version can be the very one an actor elsewhere still holds (the ABA problem of
optimistic versions).  Its next commit then passed the version check: over a ``MemoryStore`` it replaced the new
conversation (its turns silently lost); over a SQL store it appended its turn to the new conversation's messages
(two conversations spliced into one).  Each creation gets an origin the store keeps (``SessionRecord.origin``);
a commit naming another origin is a ``SessionConflictError``, nothing written, and the session reloads.

Virtual time for the ``MemoryStore`` runs; a real SQLite file and the real PostgreSQL server for theirs.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agentactors import Agent, Runtime
from agentactors.errors import SessionConflictError, SessionFormatError
from agentactors.loop.result import RunResult
from agentactors.messages import LLMRequest, Message
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore, PostgresStore, SessionRecord, SessionStore, SqliteStore
from agentactors.sessions.actor import commit_recovered
from agentactors.sessions.format import dump_record, load_record
from agentactors.sessions.journaled import SessionTurn
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401

pytestmark = pytest.mark.anyio


def echo_model(request: LLMRequest) -> str:
    return "seen: " + " | ".join(m.content for m in request.messages if m.role == "user")


async def _deleted_and_recreated(make: Callable[[], SessionStore]) -> None:
    """Runtime ``a`` holds version 1 of ``k``; ``k`` is deleted and created again (version 1) through ``b``."""
    agent = Agent(ScriptedProvider(echo_model))
    async with Runtime() as a, Runtime() as b:
        store_a, store_b = make(), make()
        held = a.session(agent, "k", store=store_a)
        await held.send("a1")
        assert await store_b.delete("k")
        other = b.session(agent, "k", store=store_b)
        await other.send("b1")
        assert other.version == held.version == 1  # the same version: only the origin tells them apart
        with pytest.raises(SessionConflictError, match="created again"):
            await held.send("a2")
        stored = await store_b.load("k")
        assert stored is not None and [m.content for m in stored.messages] == ["b1", "seen: b1"]
        again = await held.send("a3")  # the session reloaded: the turn runs on the new conversation
        assert again.content == "seen: b1 | a3" and held.version == 2
        assert await other.refresh() and [m.content for m in other.history] == ["b1", "seen: b1", "a3", "seen: b1 | a3"]


@pytest.mark.virtual_time
async def test_a_memory_store_session_recreated_elsewhere_is_not_overwritten() -> None:
    store = MemoryStore()
    await _deleted_and_recreated(lambda: store)


async def test_a_sqlite_session_recreated_elsewhere_is_not_spliced(tmp_path: Path) -> None:
    await _deleted_and_recreated(lambda: SqliteStore(tmp_path / "s.db"))


async def test_a_postgres_session_recreated_elsewhere_is_not_spliced(postgres_dsn: str) -> None:  # noqa: F811
    await _deleted_and_recreated(lambda: PostgresStore(postgres_dsn))


@asynccontextmanager
async def _stores(kind: str, tmp_path: Path, dsn: str | None) -> AsyncIterator[SessionStore]:
    if kind == "memory":
        yield MemoryStore()
    elif kind == "sqlite":
        async with SqliteStore(tmp_path / "s.db") as store:
            yield store
    else:
        assert dsn is not None
        async with PostgresStore(dsn) as store:
            yield store


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_the_store_keeps_an_origin_per_creation_and_checks_it(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    hi = (Message.user("hi"),)
    dsn = request.getfixturevalue("postgres_dsn") if kind == "postgres" else None
    async with _stores(kind, tmp_path, dsn) as store:
        first = await store.commit(SessionRecord("k", hi), expected_version=None)
        assert first.origin  # given by the store at the creation
        second = await store.commit(SessionRecord("k", hi * 2, kept=1, origin=first.origin), expected_version=1)
        assert second.origin == first.origin and (await store.load("k")) == second
        loaded = await store.load("k")
        assert loaded is not None and loaded.origin == first.origin
        # A record naming no origin (a caller of the port that does not track it) keeps the stored one.
        third = await store.commit(SessionRecord("k", hi * 3, kept=2), expected_version=2)
        assert third.origin == first.origin
        await store.delete("k")
        recreated = await store.commit(SessionRecord("k", hi), expected_version=None)
        assert recreated.origin and recreated.origin != first.origin
        with pytest.raises(SessionConflictError, match="created again"):
            await store.commit(SessionRecord("k", hi * 2, kept=1, origin=first.origin), expected_version=1)
        assert await store.load("k") == recreated  # nothing written


@pytest.mark.virtual_time
async def test_a_recovered_turn_is_not_committed_onto_a_recreated_session() -> None:
    store = MemoryStore()
    old = await store.commit(SessionRecord("k", (Message.user("a1"),)), expected_version=None)
    turn = SessionTurn("k", old.version, 1, old.origin)
    assert SessionTurn.from_json(turn.to_json()).origin == old.origin  # what the journal keeps
    await store.delete("k")
    new = await store.commit(SessionRecord("k", (Message.user("b1"),)), expected_version=None)
    inputs = (Message.user("a1"), Message.user("a2"))
    result = RunResult("ok", [*inputs, Message.assistant("ok")], run_id="run-1")
    assert not await commit_recovered(store, turn, result, inputs)
    assert await store.load("k") == new


@pytest.mark.parametrize("origin", [5, "", ["x"]], ids=["number", "empty", "list"])
def test_a_corrupted_origin_is_a_typed_error_naming_the_key(origin: object) -> None:
    doc = json.loads(dump_record(SessionRecord("k", (Message.user("hi"),), origin="abc")))
    assert doc["origin"] == "abc" and load_record(json.dumps(doc), key="k", version=1).origin == "abc"
    doc["origin"] = origin
    with pytest.raises(SessionFormatError, match="'k'") as info:
        load_record(json.dumps(doc), key="k", version=1)
    assert info.value.key == "k"
