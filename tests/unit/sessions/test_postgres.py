"""PostgresStore against a real PostgreSQL server: one transaction per commit, optimistic versions, formats, no leak.

The same behaviour as SqliteStore's tests check, on a server several processes share.  A real server, threads
and processes: the real clock.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import anyio
import psycopg
import pytest

from agentactors import Agent, Runtime
from agentactors._json import MAX_DEPTH
from agentactors.errors import SessionConflictError, SessionFormatError
from agentactors.loop.pause import PausedRun
from agentactors.messages import Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore, PostgresStore, SessionStore, SqliteStore
from agentactors.sessions.store import SessionRecord
from tests.support.postgres import PASSWORD, PostgresServer, postgres_dsn, postgres_server  # noqa: F401

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
HISTORY = (Message.user("hi"), Message.assistant("hello"))


async def test_commit_load_append_delete(postgres_dsn: str) -> None:  # noqa: F811
    async with PostgresStore(postgres_dsn) as store:
        assert isinstance(store, SessionStore)
        assert await store.load("k") is None
        call = ToolCall("c1", "refund", {"amount": 5, "nested": {"deep": [1, 2, {"x": None}]}})
        pause = PausedRun("run-1", (*HISTORY, Message.assistant("", [call])), (call,), (), (call,))
        first = await store.commit(SessionRecord("k", HISTORY), expected_version=None)
        assert first == SessionRecord("k", HISTORY, 1)
        longer = (*HISTORY, Message.user("again"), Message.assistant("sure"))
        second = await store.commit(SessionRecord("k", longer, 0, pause, "run-1", kept=2), expected_version=1)
        assert second.version == 2 and await store.load("k") == second
        assert repr(store).endswith(", open)")
    with psycopg.connect(postgres_dsn) as conn:  # the turn was appended: two rows of messages, not one rewritten
        starts = [r[0] for r in conn.execute("SELECT start FROM agentactors_messages WHERE key = 'k' ORDER BY start")]
    assert starts == [0, 2]
    async with PostgresStore(postgres_dsn) as again:  # another connection (another process) reads the same
        assert await again.load("k") == second
        assert not await again.delete("k", expected_version=1)
        assert await again.delete("k", expected_version=2)
        assert await again.load("k") is None and not await again.delete("k")


async def test_conflicts_are_typed_and_write_nothing(postgres_dsn: str) -> None:  # noqa: F811
    async with PostgresStore(postgres_dsn) as a, PostgresStore(postgres_dsn) as b:
        await a.commit(SessionRecord("k", HISTORY), expected_version=None)
        with pytest.raises(SessionConflictError, match="already exists"):
            await b.commit(SessionRecord("k", ()), expected_version=None)
        await a.commit(SessionRecord("k", (*HISTORY, Message.user("a"))), expected_version=1)
        with pytest.raises(SessionConflictError, match="at version 2, not 1"):
            await b.commit(SessionRecord("k", (*HISTORY, Message.user("b"))), expected_version=1)
        assert (await b.load("k")) == SessionRecord("k", (*HISTORY, Message.user("a")), 2)
        await a.delete("k")
        with pytest.raises(SessionConflictError, match="no longer stored"):
            await b.commit(SessionRecord("k", HISTORY), expected_version=2)


async def test_many_sessions_committed_at_once_all_land(postgres_dsn: str) -> None:  # noqa: F811
    async with PostgresStore(postgres_dsn) as store:
        async with anyio.create_task_group() as tg:
            for n in range(40):
                record = SessionRecord(f"user:{n}", (Message.user(str(n)),))
                tg.start_soon(partial(store.commit, record, expected_version=None))
        for n in range(40):
            loaded = await store.load(f"user:{n}")
            assert loaded is not None and loaded.messages == (Message.user(str(n)),) and loaded.version == 1


_RACER = """
import sys, anyio
from agentactors.errors import SessionConflictError
from agentactors.messages import Message
from agentactors.sessions import PostgresStore
from agentactors.sessions.store import SessionRecord

async def main(dsn, name, turns):
    conflicts = 0
    async with PostgresStore(dsn) as store:
        for n in range(int(turns)):
            while True:
                record = await store.load("shared")
                messages = record.messages if record else ()
                new = SessionRecord("shared", (*messages, Message.user(f"{name}-{n}")), kept=len(messages))
                try:
                    await store.commit(new, expected_version=record.version if record else None)
                    break
                except SessionConflictError:
                    conflicts += 1
    print(conflicts)

anyio.run(main, *sys.argv[1:4])
"""


def _race(dsn: str, turns: int) -> list[tuple[int, str, str]]:
    """Two processes, each committing ``turns`` turns to one session (reloading on a conflict), at once."""
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, dsn, name, str(turns)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for name in ("a", "b")
    ]
    outputs = [p.communicate(timeout=120) for p in racers]
    return [(p.returncode, out, err) for p, (out, err) in zip(racers, outputs, strict=True)]


async def test_two_processes_racing_one_session_lose_no_turn(postgres_dsn: str) -> None:  # noqa: F811
    turns = 25
    outputs = await anyio.to_thread.run_sync(_race, postgres_dsn, turns)
    assert all(code == 0 for code, _, _ in outputs), outputs
    async with PostgresStore(postgres_dsn) as store:
        record = await store.load("shared")
    assert record is not None and record.version == 2 * turns
    texts = [m.content for m in record.messages]
    for name in ("a", "b"):  # every turn of each, once, in its own order
        assert [t for t in texts if t.startswith(name)] == [f"{name}-{n}" for n in range(turns)]


async def test_a_value_past_the_json_limits_is_refused_and_nothing_written(postgres_dsn: str) -> None:  # noqa: F811
    deep: object = 1
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    call = ToolCall("c1", "t", {"x": deep})
    async with PostgresStore(postgres_dsn) as store:
        with pytest.raises(SessionFormatError):
            await store.commit(SessionRecord("k", (Message.assistant("", [call]),)), expected_version=None)
        with pytest.raises(TypeError):
            await store.commit(SessionRecord("k", (Message.assistant("", [ToolCall("c", "t", {"x": object()})]),)),
                               expected_version=None)
        assert await store.load("k") is None


async def test_bad_rows_are_typed_errors_naming_the_key_and_left_alone(postgres_dsn: str) -> None:  # noqa: F811
    async with PostgresStore(postgres_dsn) as store:
        await store.commit(SessionRecord("bad-body", HISTORY), expected_version=None)
        await store.commit(SessionRecord("bad-version", HISTORY), expected_version=None)
        await store.commit(SessionRecord("newer", HISTORY), expected_version=None)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute("UPDATE agentactors_sessions SET body = '{not json' WHERE key = 'bad-body'")
            conn.execute("UPDATE agentactors_sessions SET version = 0 WHERE key = 'bad-version'")
            conn.execute("UPDATE agentactors_sessions SET body = %s WHERE key = 'newer'", (json.dumps({"format": 99}),))
        with pytest.raises(SessionFormatError, match="bad-body"):
            await store.load("bad-body")
        with pytest.raises(SessionFormatError, match="corrupted version 0"):
            await store.load("bad-version")
        with pytest.raises(SessionFormatError, match="bad-version"):
            await store.commit(SessionRecord("bad-version", HISTORY), expected_version=1)
        with pytest.raises(SessionFormatError, match="99"):
            await store.load("newer")
        with psycopg.connect(postgres_dsn) as conn:
            assert conn.execute("SELECT version FROM agentactors_sessions WHERE key = 'bad-version'").fetchone() == (0,)


NUL_KEY = "user:\x00:1"


async def test_a_nul_in_a_key_is_refused_alike_by_every_store_and_a_nul_in_text_is_kept(
    postgres_dsn: str, tmp_path: Path  # noqa: F811
) -> None:
    """PostgreSQL's ``TEXT`` cannot hold NUL: a key with one was a ``psycopg.DataError`` from the driver (SQLite and
    a MemoryStore kept it).  Every store now refuses it, typed, before any I/O — and one that refused it is fine
    for the next call.  A NUL in the conversation (content, arguments, a pause, a run id) is JSON's ``\\u0000``
    in the document: kept whole by both databases."""
    call = ToolCall("c\x001", "t\x00", {"a\x00": "b\x00"})
    history = (Message.user("before\x00after"), Message.assistant("\x00", [call]))
    pause = PausedRun("run\x00", history, (call,), (), (call,))
    stores: list[SessionStore] = [MemoryStore(), SqliteStore(tmp_path / "s.db"), PostgresStore(postgres_dsn)]
    for store in stores:
        try:
            refused: list[Callable[[], Awaitable[object]]] = [
                partial(store.load, NUL_KEY),
                partial(store.delete, NUL_KEY),
                partial(store.delete, NUL_KEY, expected_version=1),
                partial(store.load, "\x00"),
            ]
            for attempt in refused:
                with pytest.raises(ValueError, match="NUL") as caught:
                    await attempt()
                assert not isinstance(caught.value, psycopg.Error), store
            with pytest.raises(ValueError, match="NUL"):  # the record itself: a commit never reaches the driver
                SessionRecord(NUL_KEY, HISTORY)
            stored = await store.commit(SessionRecord("k", history, 0, pause, "run\x00"), expected_version=None)
            assert await store.load("k") == stored, store
            loaded = await store.load("k")
            assert loaded is not None and loaded.paused == pause and loaded.run_id == "run\x00"
            assert loaded.messages[0].content == "before\x00after", "no character lost or replaced"
        finally:
            await store.aclose()


async def test_a_session_with_a_nul_in_its_key_is_refused_when_opened(postgres_dsn: str) -> None:  # noqa: F811
    async with Runtime() as rt:
        with pytest.raises(ValueError, match="NUL"):
            rt.session(Agent(ScriptedProvider(["never"])), NUL_KEY, store=PostgresStore(postgres_dsn))


async def test_a_database_with_a_newer_layout_is_refused(postgres_dsn: str) -> None:  # noqa: F811
    async with PostgresStore(postgres_dsn) as store:
        await store.load("k")
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE agentactors_meta SET value = 2 WHERE name = 'layout'")
    store = PostgresStore(postgres_dsn)
    with pytest.raises(SessionFormatError, match="has layout 2"):
        await store.load("k")
    await store.aclose()


async def test_sessions_through_a_runtime_survive_the_runtime(postgres_dsn: str) -> None:  # noqa: F811
    agent = Agent(ScriptedProvider(["first answer", "second answer"]), name="chat")
    async with Runtime() as rt:
        session = rt.session(agent, "user:1", store=PostgresStore(postgres_dsn))
        await session.send("one")
    async with Runtime() as rt:
        again = rt.session(agent, "user:1", store=PostgresStore(postgres_dsn))
        result = await again.send("two")
        assert result.content == "second answer"
        assert [m.content for m in again.history] == ["one", "first answer", "two", "second answer"]


async def test_the_password_never_leaks(postgres_server: PostgresServer) -> None:  # noqa: F811
    wrong = postgres_server.dsn(password="hunter2-wrong")
    store = PostgresStore(wrong)
    assert "hunter2" not in repr(store) and "***" in repr(store)
    assert PASSWORD not in repr(PostgresStore(postgres_server.dsn()))
    with pytest.raises(ConnectionError) as caught:
        await store.load("k")
    text = "".join(str(e) for e in (caught.value, caught.value.__cause__, caught.value.__context__) if e)
    assert "hunter2" not in text and "password authentication failed" in text
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


async def test_a_missing_extra_is_an_import_error_naming_it(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # what `import psycopg` does without the extra
    with pytest.raises(ImportError, match=r"agentactors\[postgres\]"):
        await PostgresStore(postgres_dsn).load("k")


def test_importing_agentactors_does_not_import_psycopg() -> None:
    code = "import sys, agentactors as a; a.PostgresStore, a.PostgresJournal; print('psycopg' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


async def test_a_key_every_store_keeps_works_in_every_store_and_a_longer_one_is_refused_alike(
    postgres_dsn: str, tmp_path: Path  # noqa: F811
) -> None:
    """PostgreSQL's primary-key index holds at most ~2.7 KB a row: a longer key that does not compress (a digest,
    a token, a long path) was a ``psycopg.errors.ProgramLimitExceeded`` at the session's first commit — after its
    turn ran, and at every turn after — where a MemoryStore or a SQLite file kept it.  A key is now at most
    2,048 bytes of UTF-8 in every store: at the bound it is kept by all three, one byte past it is refused by all
    three, typed, before any I/O (and when the session is opened)."""
    import secrets

    longest = [secrets.token_hex(1024), "é" * 1024, "𝄞" * 512]  # 2,048 bytes each, incompressible or multi-byte
    too_long = [secrets.token_hex(1024) + "x", "é" * 1024 + "x", "𝄞" * 513]
    stores: list[SessionStore] = [MemoryStore(), SqliteStore(tmp_path / "s.db"), PostgresStore(postgres_dsn)]
    for store in stores:
        try:
            for key in longest:
                stored = await store.commit(SessionRecord(key, HISTORY), expected_version=None)
                stored = await store.commit(SessionRecord(key, HISTORY + HISTORY, kept=2), expected_version=1)
                assert await store.load(key) == stored, store
                assert await store.delete(key), store
            for key in too_long:
                for attempt in (partial(store.load, key), partial(store.delete, key)):
                    with pytest.raises(ValueError, match="2048 bytes") as caught:
                        await attempt()
                    assert not isinstance(caught.value, psycopg.Error), store
                with pytest.raises(ValueError, match="2048 bytes"):
                    SessionRecord(key, HISTORY)
        finally:
            await store.aclose()
    async with Runtime() as rt:
        with pytest.raises(ValueError, match="2048 bytes"):
            rt.session(Agent(ScriptedProvider(["never"])), too_long[0], store=PostgresStore(postgres_dsn))


def _message_keys(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [k for (k,) in conn.execute("SELECT key FROM agentactors_messages ORDER BY key, start")]


async def test_deleting_a_session_row_by_hand_deletes_its_messages(postgres_dsn: str) -> None:  # noqa: F811
    """Expiring old sessions is a ``DELETE`` of their rows: their messages, the bulk of the data, stayed behind for
    ever.  They go with the row now (``ON DELETE CASCADE``); a session created again on the key holds its new
    messages only."""
    longer = (*HISTORY, Message.user("again"), Message.assistant("sure"))
    async with PostgresStore(postgres_dsn) as store:
        for key in ("old", "kept"):
            first = await store.commit(SessionRecord(key, HISTORY), expected_version=None)
            await store.commit(SessionRecord(key, longer, kept=2), expected_version=first.version)
    with psycopg.connect(postgres_dsn) as conn:
        conn.execute("DELETE FROM agentactors_sessions WHERE key = 'old'")
    assert _message_keys(postgres_dsn) == ["kept", "kept"]
    async with PostgresStore(postgres_dsn) as store:
        assert await store.load("old") is None
        again = (Message.user("new"),)
        await store.commit(SessionRecord("old", again), expected_version=None)
        assert await store.load("old") == SessionRecord("old", again, 1)
        assert await store.load("kept") == SessionRecord("kept", longer, 2)


async def test_a_database_of_the_previous_version_loses_its_orphans_and_nothing_else(
    postgres_dsn: str,  # noqa: F811
) -> None:
    """A database made by the previous version has no foreign key, and may hold the messages of rows deleted by
    hand: opened by this version, it gets the key and loses those orphans once — every session's messages stay."""
    async with PostgresStore(postgres_dsn) as store:
        await store.commit(SessionRecord("live", HISTORY), expected_version=None)
    with psycopg.connect(postgres_dsn) as conn:  # what the previous version left
        conn.execute("ALTER TABLE agentactors_messages DROP CONSTRAINT agentactors_messages_session")
        conn.execute("INSERT INTO agentactors_messages VALUES ('gone', 0, %s)", (json.dumps([{"role": "user"}]),))
    assert _message_keys(postgres_dsn) == ["gone", "live"]
    async with PostgresStore(postgres_dsn) as store:
        assert await store.load("live") == SessionRecord("live", HISTORY, 1)
    assert _message_keys(postgres_dsn) == ["live"]
    with psycopg.connect(postgres_dsn) as conn:
        conn.execute("DELETE FROM agentactors_sessions")
    assert _message_keys(postgres_dsn) == []
