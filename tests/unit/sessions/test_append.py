"""``SqliteStore`` appends: a commit writes the turn, not the whole history — and files of the old layout go on.

The document (``agentactors_sessions.body``) keeps the pause and the run id and counts the messages; the
messages are kept beside it (``agentactors_messages``), a piece per commit.  A commit whose record extends the
stored history (``SessionRecord.kept``, set by the session actor) writes one piece; anything else — a history
trimmed by the application, a row of the old whole-record layout — is written whole once.  Conflicts and
atomic commits are as before (``test_sqlite.py``, ``tests/integration/test_sessions_sqlite.py``).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import anyio
import pytest

from agentactors import Agent, Runtime, ToolCall, tool
from agentactors.errors import SessionConflictError
from agentactors.loop.pause import PausedRun
from agentactors.messages import Message
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import SqliteStore
from agentactors.sessions.format import FORMAT
from agentactors.sessions.store import SessionRecord

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parent / "data"


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _pieces(path: Path, key: str) -> list[tuple[int, list[str]]]:
    conn = _raw(path)
    try:
        rows = conn.execute("SELECT start, body FROM agentactors_messages WHERE key = ? ORDER BY start", (key,))
        return [(start, [m.get("content", "") for m in json.loads(body)]) for start, body in rows]
    finally:
        conn.close()


def _head(path: Path, key: str) -> dict[str, object]:
    conn = _raw(path)
    try:
        row = conn.execute("SELECT body FROM agentactors_sessions WHERE key = ?", (key,)).fetchone()
        return dict(json.loads(row[0]))
    finally:
        conn.close()


def turn(i: int) -> tuple[Message, ...]:
    return (Message.user(f"q{i}"), Message.assistant(f"a{i}"))


async def test_a_commit_writes_its_turn_only(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        stored = await store.commit(SessionRecord("k", turn(0)), expected_version=None)
        for i in (1, 2):
            history = stored.messages
            record = SessionRecord("k", history + turn(i), 0, None, f"run-{i}", len(history))
            stored = await store.commit(record, expected_version=stored.version)
        assert await store.load("k") == SessionRecord("k", turn(0) + turn(1) + turn(2), 3, None, "run-2")
    assert _pieces(path, "k") == [(0, ["q0", "a0"]), (2, ["q1", "a1"]), (4, ["q2", "a2"])]
    head = _head(path, "k")
    assert head == {"format": FORMAT, "message_count": 6, "paused": None, "run_id": "run-2", "origin": stored.origin}


async def test_a_record_that_does_not_extend_the_history_is_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        first = await store.commit(SessionRecord("k", turn(0) + turn(1)), expected_version=None)
        trimmed = (Message.system("summary"), *turn(2))  # the application trimmed the conversation
        await store.commit(SessionRecord("k", trimmed), expected_version=first.version)
        assert (await store.load("k")) == SessionRecord("k", trimmed, 2)
        # kept = 0 (unknown) on a record that does extend it: written whole too, and right.
        again = (*trimmed, *turn(3))
        await store.commit(SessionRecord("k", again), expected_version=2)
        assert (await store.load("k")) == SessionRecord("k", again, 3)
    assert _pieces(path, "k") == [(0, ["summary", "q2", "a2", "q3", "a3"])]


async def test_a_turn_with_no_new_message_writes_no_piece(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        first = await store.commit(SessionRecord("k", turn(0)), expected_version=None)
        await store.commit(SessionRecord("k", first.messages, 0, None, "run-x", 2), expected_version=1)
        assert await store.load("k") == SessionRecord("k", turn(0), 2, None, "run-x")
    assert _pieces(path, "k") == [(0, ["q0", "a0"])]


async def test_of_two_appends_on_one_version_one_conflicts_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as a, SqliteStore(path) as b:
        base = await a.commit(SessionRecord("k", turn(0)), expected_version=None)
        won = SessionRecord("k", base.messages + turn(1), 0, None, "a", 2)
        lost = SessionRecord("k", base.messages + turn(9), 0, None, "b", 2)
        await a.commit(won, expected_version=1)
        with pytest.raises(SessionConflictError, match="at version 2, not 1"):
            await b.commit(lost, expected_version=1)
        assert await b.load("k") == SessionRecord("k", turn(0) + turn(1), 2, None, "a")
    assert _pieces(path, "k") == [(0, ["q0", "a0"]), (2, ["q1", "a1"])]


async def test_delete_removes_the_pieces_and_a_new_session_starts_clean(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        first = await store.commit(SessionRecord("k", turn(0)), expected_version=None)
        await store.commit(SessionRecord("k", turn(0) + turn(1), 0, None, None, 2), expected_version=first.version)
        assert await store.delete("k")
        assert _pieces(path, "k") == []
    # Pieces a whole-record process left behind when it deleted the row (it knows no pieces): a new
    # session on the key does not inherit them.
    conn = _raw(path)
    try:
        stale = json.dumps([{"role": "user", "content": "stale"}])
        conn.execute("INSERT INTO agentactors_messages VALUES ('k', 0, ?)", (stale,))
    finally:
        conn.close()
    async with SqliteStore(path) as store:
        await store.commit(SessionRecord("k", turn(5)), expected_version=None)
        assert await store.load("k") == SessionRecord("k", turn(5), 1)


async def test_a_pause_keeps_only_what_it_adds_to_the_history(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    call = ToolCall("r1", "refund", {"order": 7})
    history = turn(0) + turn(1)
    pause = PausedRun("run-2", (*history, Message.user("refund"), Message.assistant("", [call])), (call,), (),
                      (call,), {"r1": "money"})
    async with SqliteStore(path) as store:
        await store.commit(SessionRecord("k", history), expected_version=None)
        await store.commit(SessionRecord("k", history, 0, pause, "run-2", 4), expected_version=1)
        assert await store.load("k") == SessionRecord("k", history, 2, pause, "run-2")
    paused = _head(path, "k")["paused"]
    assert isinstance(paused, dict) and paused["base"] == 4
    assert [m.get("content", "") for m in paused["messages"]] == ["refund", ""]


@tool(requires_approval=True)
def refund(order: int) -> str:
    """Refund an order."""
    return f"refunded {order}"


async def test_a_sessions_turns_append_and_its_pause_shows_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    script = ["hello", [ToolCall("r1", "refund", {"order": 7})], "refunded"]
    agent = Agent(ScriptedProvider(script), tools=[refund])
    async with Runtime() as rt:
        session = rt.session(agent, "bob", store=SqliteStore(path))
        await session.send("hi")
        assert (await session.send("refund order 7")).paused
    assert _pieces(path, "bob") == [(0, ["hi", "hello"])]  # the pause wrote no piece
    async with Runtime() as rt:  # a restart: the handle is new, nothing is active
        session = rt.session(agent, "bob", store=SqliteStore(path))
        # Locals: mypy would hold session.paused and its calls to these checks across the refresh below.
        paused, pending = session.paused, session.pending_approvals
        assert not paused and pending == ()
        assert await session.refresh() is session
        assert session.paused and [c.id for c in session.pending_approvals] == ["r1"]
        assert [m.content for m in session.history] == ["hi", "hello"] and session.version == 2
        result = await session.resolve({"r1": True})
        assert result.content == "refunded" and not session.paused
    assert [start for start, _ in _pieces(path, "bob")] == [0, 2]  # the resumed run appended its messages


# --- the old layout --------------------------------------------------------------------------------------


def _old_file(tmp_path: Path) -> Path:
    """A file the whole-record layout wrote (``data/make_layout1_whole_records.py``, run on the old code).

    Its run ids made unique: a process resumes a pause once (``agent.resume``), and this one is resolved
    by the test on each backend.
    """
    path = tmp_path / "old.db"
    conn = _raw(path)
    try:
        script = (DATA / "layout1_whole_records.sql").read_text()
        conn.executescript(script.replace("run-4bbd14-", f"run-{uuid.uuid4().hex[:6]}-"))
    finally:
        conn.close()
    return path


async def test_a_file_written_by_the_whole_record_layout_loads_and_goes_on(tmp_path: Path) -> None:
    path = _old_file(tmp_path)
    lookups = Agent(ScriptedProvider(lambda request: "Anything else?"), name="support")
    async with Runtime() as rt:
        alice = await rt.session(lookups, "user:alice", store=SqliteStore(path)).refresh()
        assert [m.content for m in alice.history if m.role == "user"] == ["Where is order 42?", "Thanks!"]
        assert alice.history[1].tool_calls == (ToolCall("c1", "lookup", {"order": 42}),)
        assert alice.version == 2 and not alice.paused
        await alice.send("Bye")
        assert _head(path, "user:alice")["format"] == FORMAT  # written in the new layout at its next commit
        assert [start for start, _ in _pieces(path, "user:alice")] == [0]  # whole, once
        await alice.send("Really bye")
        assert [start for start, _ in _pieces(path, "user:alice")] == [0, 8]  # then appended
    async with SqliteStore(path) as store:
        record = await store.load("user:alice")
        assert record is not None and record.version == 4 and len(record.messages) == 10


async def test_a_pause_written_by_the_whole_record_layout_is_resolved(tmp_path: Path) -> None:
    path = _old_file(tmp_path)
    agent = Agent(ScriptedProvider(["Refunded."]), tools=[refund], name="billing")
    async with Runtime() as rt:
        bob = await rt.session(agent, "user:bob", store=SqliteStore(path)).refresh()
        assert bob.paused and [c.arguments for c in bob.pending_approvals] == [{"order": 7}]
        result = await bob.resolve({"r1": True})
        assert result.content == "Refunded."
        assert [m.content for m in bob.history][-2:] == ["refunded 7", "Refunded."]
    async with SqliteStore(path) as store:
        record = await store.load("user:bob")
        assert record is not None and record.paused is None and record.messages[-1].content == "Refunded."


async def test_refresh_of_an_active_session_reloads_what_another_process_committed(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    agent = Agent(ScriptedProvider(lambda request: "ok"))
    async with Runtime() as rt:
        session = rt.session(agent, "k", store=SqliteStore(path))
        await session.send("one")
        async with SqliteStore(path) as other:  # another process, say
            current = await other.load("k")
            assert current is not None
            await other.commit(SessionRecord("k", current.messages + turn(9), 0, None, None, 2), expected_version=1)
        assert session.version == 1
        await session.refresh()
        assert session.version == 2 and session.history[-1].content == "a9"
        with anyio.fail_after(5):
            assert (await session.send("three")).content == "ok"
