"""A store commits only what it can load back: the JSON policy at commit and at load, corrupted cells typed.

The deepest record the policy allows is committed to a ``SqliteStore`` and loaded by a *new process*; one level
deeper is refused at the commit (nothing written); a row tampered past the policy, or with a version that is
not an integer, is a ``SessionFormatError`` naming the key — never a bare ``RecursionError`` or ``ValueError``,
and never a version silently read as another.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, Runtime, tool
from agentactors._json import MAX_DEPTH, MAX_INT_DIGITS
from agentactors.errors import SessionFormatError
from agentactors.messages import Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore, SqliteStore
from agentactors.sessions.format import dump_record, load_record
from agentactors.sessions.store import SessionRecord

pytestmark = pytest.mark.anyio

# Built the same way here and in the child process that loads it back.
DEEPEST = textwrap.dedent(
    """
    from agentactors._json import MAX_DEPTH
    from agentactors.loop.pause import PausedRun
    from agentactors.messages import Message, ToolCall

    def deepest(depth=MAX_DEPTH):
        # Containers nested `depth` deep, alternating tuples and one-key "$" dicts: the codec's tags double
        # the stored depth, so this is the deepest document the policy lets a store write.
        value = {"$leaf": b"bytes"}
        for i in range(depth - 1):
            value = (value,) if i % 2 else {"$k": value}
        return value

    def deepest_record(key="k", depth=MAX_DEPTH):
        # Each free-form value (a call's arguments, provider_data) `depth` deep, counting its own dict.
        inner = deepest(depth - 1)
        history = (Message.user("hi"), Message.assistant("", [ToolCall("c0", "t", {"a": inner})]))
        history += (Message.tool("c0", "ok", name="t"), Message.assistant("yes", provider_data={"w": inner}))
        call = ToolCall("c1", "refund", {"a": inner}, provider_data={"w": inner})
        pause = PausedRun("run-2", (*history, Message.assistant("", [call])), (call,), (), (call,), {"c1": "money"})
        return history, pause
    """
)
namespace: dict[str, Any] = {}
exec(DEEPEST, namespace)  # the same source the child runs
deepest_record = namespace["deepest_record"]


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


async def test_the_deepest_record_the_policy_allows_loads_in_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    history, pause = deepest_record()
    async with SqliteStore(path) as store:
        await store.commit(SessionRecord("k", history, 0, None, "run-1"), expected_version=None)
        await store.commit(SessionRecord("k", history, 0, pause, "run-2", len(history)), expected_version=1)
    child = DEEPEST + textwrap.dedent(
        f"""
        import sys, anyio
        from agentactors.sessions import SqliteStore

        async def main():
            async with SqliteStore({str(path)!r}) as store:
                record = await store.load("k")
            history, pause = deepest_record()
            assert record.version == 2 and record.messages == history and record.paused == pause, record
            print("loaded", len(record.messages))

        anyio.run(main, backend=sys.argv[1])
        """
    )
    for backend in ("asyncio", "trio"):
        out = await anyio.run_process([sys.executable, "-c", child, backend], check=False)
        assert out.returncode == 0, out.stderr.decode()
        assert out.stdout.decode().strip() == "loaded 4"


@pytest.mark.parametrize("store_kind", ["sqlite", "dump"])
async def test_one_level_deeper_is_refused_at_the_commit_and_nothing_is_written(
    tmp_path: Path, store_kind: str
) -> None:
    history, pause = deepest_record(depth=MAX_DEPTH + 1)
    if store_kind == "dump":
        with pytest.raises(SessionFormatError, match="'k' cannot be stored: a stored value nests deeper than 64"):
            dump_record(SessionRecord("k", history))
        return
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        await store.commit(SessionRecord("k", (Message.user("before"),)), expected_version=None)
        with pytest.raises(SessionFormatError, match="'k' cannot be stored") as info:
            await store.commit(SessionRecord("k", history, 0, None, None, 0), expected_version=1)
        assert info.value.key == "k"
        with pytest.raises(SessionFormatError, match="cannot be stored"):
            await store.commit(SessionRecord("k", (Message.user("before"),), 0, pause, None, 1), expected_version=1)
        record = await store.load("k")
        assert record is not None and record.version == 1 and record.messages == (Message.user("before"),)


async def test_an_integer_too_long_is_refused_at_the_commit(tmp_path: Path) -> None:
    call = ToolCall("c", "t", {"n": 10**MAX_INT_DIGITS})
    async with SqliteStore(tmp_path / "s.db") as store:
        with pytest.raises(SessionFormatError, match=f"more than {MAX_INT_DIGITS} digits"):
            await store.commit(SessionRecord("k", (Message.assistant("", [call]),)), expected_version=None)
        assert await store.load("k") is None


async def _insert(path: Path, key: str, version: Any, body: str) -> None:
    async with SqliteStore(path) as store:
        await store.load(key)  # creates the tables
    conn = _raw(path)
    try:
        conn.execute("INSERT INTO agentactors_sessions (key, version, body, updated) VALUES (?, ?, ?, 0)",
                     (key, version, body))
    finally:
        conn.close()


def _whole(args: str) -> str:
    return '{"format": 2, "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "name": "t", "arguments": ' + \
        args + "}]}], \"paused\": null, \"run_id\": null}"


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ('{"a": ' * 600 + "{}" + "}" * 600, "nests deeper than 64"),  # parses; the codec refuses it
        ("[" * 50_000 + "]" * 50_000, "nested too deep to read"),  # past the parser's own recursion
        ('{"n": ' + "1" * 5000 + "}", "not JSON"),  # past int_max_str_digits
    ],
    ids=["deep", "past-recursion", "digits"],
)
async def test_a_row_tampered_past_the_policy_is_a_typed_error_naming_the_key(
    tmp_path: Path, args: str, match: str
) -> None:
    path = tmp_path / "s.db"
    await _insert(path, "alice", 1, _whole(args))
    async with SqliteStore(path) as store:
        with pytest.raises(SessionFormatError, match=match) as info:
            await store.load("alice")
    assert info.value.key == "alice" and "'alice'" in str(info.value)


@pytest.mark.parametrize("cell", ["abc", 2.5, 0, -1, None], ids=["text", "real", "zero", "negative", "null"])
async def test_a_corrupted_version_cell_is_a_typed_error_never_coerced(tmp_path: Path, cell: Any) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        await store.commit(SessionRecord("k", (Message.user("hi"),)), expected_version=None)
    conn = _raw(path)
    try:
        if cell is None:
            conn.execute("PRAGMA ignore_check_constraints = ON")
            conn.execute("UPDATE agentactors_sessions SET version = ?", ("",))  # NOT NULL: the nearest to null
        else:
            conn.execute("UPDATE agentactors_sessions SET version = ?", (cell,))
    finally:
        conn.close()
    async with SqliteStore(path) as store:
        with pytest.raises(SessionFormatError, match="'k' has a corrupted version") as info:
            await store.load("k")
        assert info.value.key == "k"
        with pytest.raises(SessionFormatError, match="corrupted version"):  # a commit is refused the same way
            await store.commit(SessionRecord("k", (Message.user("again"),)), expected_version=2)


async def test_a_version_cell_at_the_integer_limit_is_corrupted_and_never_bumped_past_it(tmp_path: Path) -> None:
    """2**63 - 1, set by hand: ``version + 1`` would overflow (SQLite makes it a REAL, the session then never loads
    again); it is refused as corrupted, before the bump, and the cell is left as it is."""
    path = tmp_path / "s.db"
    top = 2**63 - 1
    async with SqliteStore(path) as store:
        await store.commit(SessionRecord("k", (Message.user("hi"),)), expected_version=None)
    conn = _raw(path)
    try:
        conn.execute("UPDATE agentactors_sessions SET version = ?", (top,))
    finally:
        conn.close()
    async with SqliteStore(path) as store:
        with pytest.raises(SessionFormatError, match=f"'k' has a corrupted version {top}") as info:
            await store.load("k")
        assert info.value.key == "k"
        with pytest.raises(SessionFormatError, match="corrupted version"):
            await store.commit(SessionRecord("k", (Message.user("again"),)), expected_version=top)
    conn = _raw(path)
    try:
        assert conn.execute("SELECT version, typeof(version) FROM agentactors_sessions").fetchone() == (top, "integer")
    finally:
        conn.close()


@tool
def lookup(order: dict[str, Any]) -> str:
    """Look an order up."""
    return "found"


async def test_a_turn_past_the_policy_is_not_committed_and_the_session_goes_on(tmp_path: Path) -> None:
    value: Any = {}
    for _ in range(600):
        value = {"a": value}
    deep = ToolCall("c1", "lookup", {"order": value})  # built past the wires' bounds (a scripted model)
    agent = Agent(ScriptedProvider([[deep], "done", "again"]), tools=[lookup])
    path = tmp_path / "s.db"
    async with Runtime() as rt:
        session = rt.session(agent, "k", store=SqliteStore(path))
        with pytest.raises(SessionFormatError, match="'k' cannot be stored"):
            await session.send("go")
        assert (await session.send("next")).content == "again"
        assert session.version == 1
    async with Runtime() as rt:
        session = await rt.session(agent, "k", store=SqliteStore(path)).refresh()
        assert [m.content for m in session.history] == ["next", "again"]


async def test_memory_store_keeps_objects_and_is_not_bounded() -> None:
    # MemoryStore encodes nothing: what it keeps it returns (the policy guards what is written as JSON).
    history, _ = deepest_record(depth=MAX_DEPTH + 1)
    store = MemoryStore()
    await store.commit(SessionRecord("k", history), expected_version=None)
    record = await store.load("k")
    assert record is not None and record.messages == history


def test_the_whole_document_of_the_deepest_record_round_trips() -> None:
    history, pause = deepest_record()
    record = SessionRecord("k", history, 3, pause, "run-2")
    assert load_record(dump_record(record), key="k", version=3) == record
    assert json.loads(dump_record(record))["paused"]["base"] == len(history)  # the pause keeps only its own
