"""A stored session record that is damaged (or hostile) is refused when it is loaded, with the store's typed error.

Every field of a stored document is checked for its type when it is read: a record that loads is one every
part of the library can use.  Before, a few fields were taken as they were, or coerced into something else:

* the record's ``run_id`` (any JSON value: ``5``, a list) — and ``SessionRecord(run_id=5)`` was accepted too;
* a pause's ``run_id``, ``answer``, ``agent``, ``handoffs`` (a string ``"abc"`` became ``("a", "b", "c")``),
  ``step`` (``"3"`` became 3, ``2.5`` became 2), ``output_step`` and ``reasons`` (``5`` became ``"5"``), its
  lists (a ``{}`` read as none);
* a message's ``is_error`` and a tool result's ``truncated`` / ``refused`` / ``awaiting_approval`` (``"false"``
  read as ``True``), a result's ``original_chars``;
* a call's ``arguments`` and ``provider_data`` (a list of pairs became a dict), a message's ``tool_calls`` (a
  ``{}`` read as none), a ``{"$tuple": "abc"}`` tag (read as ``("a", "b", "c")``);
* a document with neither ``messages`` nor ``message_count`` (read as an empty conversation — which the next turn
  then committed over the real one).

Each is now a :class:`~agentactors.errors.SessionFormatError` naming the key, from ``load_record`` and from every
store's ``load`` (the row left as it is).  ``MemoryStore`` keeps the records themselves: a damaged one cannot be
built (``SessionRecord`` checks its fields), so it cannot be stored.

The pure checks are synchronous; the SQLite file and the PostgreSQL server are real (threads, sockets: the real
clock).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentactors import Agent, Runtime
from agentactors.errors import SessionFormatError
from agentactors.loop.pause import PausedRun
from agentactors.messages import LLMRequest, Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore, PostgresStore, SqliteStore
from agentactors.sessions.format import dump_record, load_record
from agentactors.sessions.store import SessionRecord
from agentactors.tools.results import ToolResult, ToolStatus
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401

CALL0 = ToolCall("c0", "lookup", {"order": 42}, provider_data={"w": {"sig": "x"}})
HISTORY = (
    Message.user("where is my order?"),
    Message.assistant("", [CALL0]),
    Message.tool("c0", "shipped", name="lookup"),
    Message.assistant("it shipped"),
)
CALL1, CALL2 = ToolCall("c1", "refund", {"amount": 5}), ToolCall("c2", "lookup", {"order": 7})
RAN = ToolResult("c2", "lookup", ToolStatus.ok, "found", 5, 0.25)
PAUSE = PausedRun(
    "run-2", (*HISTORY, Message.user("refund it"), Message.assistant("", [CALL1, CALL2])), (CALL1, CALL2), (RAN,),
    (CALL1,), {"c1": "money"}, 3, tool_calls=(CALL0, CALL1, CALL2), answer="ok", agent="support",
    handoffs=("triage",),
)
RECORD = SessionRecord("k", HISTORY, 1, PAUSE, "run-2")


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A damage: the value at ``path`` (dots; a number is a list index) set to ``value``."""
    *parents, last = path.split(".")

    def damage(doc: dict[str, Any]) -> None:
        node: Any = doc
        for step in parents:
            node = node[int(step)] if step.isdigit() else node[step]
        node[int(last) if last.isdigit() else last] = value

    return damage


def _drop_messages(doc: dict[str, Any]) -> None:
    del doc["messages"]
    doc["paused"] = None  # (a pause sharing the history would not load without it: the damage alone, here)


DAMAGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "run_id-int": _set("run_id", 5),
    "run_id-list": _set("run_id", ["run-2"]),
    "pause-run_id": _set("paused.run_id", 5),
    "pause-answer": _set("paused.answer", 5),
    "pause-agent": _set("paused.agent", ["support"]),
    "pause-handoffs-str": _set("paused.handoffs", "abc"),
    "pause-handoffs-int": _set("paused.handoffs", [1]),
    "pause-step-str": _set("paused.step", "3"),
    "pause-step-float": _set("paused.step", 2.5),
    "pause-step-negative": _set("paused.step", -1),
    "pause-step-bool": _set("paused.step", True),
    "pause-output_step": _set("paused.output_step", "no"),
    "pause-reasons-value": _set("paused.reasons", {"c1": 5}),
    "pause-reasons-list": _set("paused.reasons", [["c1", "money"]]),
    "pause-results-dict": _set("paused.results", {}),
    "pause-usage-list": _set("paused.usage", []),
    "pause-result-truncated": _set("paused.results.0.truncated", "no"),
    "pause-result-refused": _set("paused.results.0.refused", 0),
    "pause-result-awaiting": _set("paused.results.0.awaiting_approval", "false"),
    "pause-result-original_chars": _set("paused.results.0.original_chars", "5"),
    "message-is_error": _set("messages.3.is_error", "false"),
    "message-tool_calls-dict": _set("messages.1.tool_calls", {}),
    "call-arguments-pairs": _set("messages.1.tool_calls.0.arguments", [["order", 42]]),
    "call-provider_data-pairs": _set("messages.1.tool_calls.0.provider_data", [["w", 1]]),
    "tuple-tag-str": _set("messages.1.tool_calls.0.arguments", {"order": {"$tuple": "abc"}}),
    "dict-tag-list": _set("messages.1.tool_calls.0.arguments", {"order": {"$dict": [["$a", 1]]}}),
    "no-messages": _drop_messages,
}


def _damaged(name: str) -> str:
    doc = json.loads(dump_record(RECORD))
    DAMAGES[name](doc)
    return json.dumps(doc)


def test_the_undamaged_document_loads() -> None:
    assert load_record(dump_record(RECORD), key="k", version=1) == RECORD


@pytest.mark.parametrize("name", list(DAMAGES))
def test_a_damaged_document_is_a_session_format_error_naming_the_key(name: str) -> None:
    with pytest.raises(SessionFormatError, match="'k'") as info:
        load_record(_damaged(name), key="k", version=1)
    assert info.value.key == "k"


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"run_id": 5}, TypeError),
        ({"run_id": ["r"]}, TypeError),
        ({"paused": "paused"}, TypeError),
        ({"paused": {"run_id": "r"}}, TypeError),
        ({"messages": "hi"}, TypeError),  # (tuple() took its characters)
        ({"messages": {"role": "user"}}, TypeError),
    ],
)
def test_a_record_with_a_field_of_the_wrong_type_cannot_be_built(fields: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        SessionRecord("k", **fields)


@pytest.mark.anyio
async def test_a_memory_store_cannot_be_given_a_damaged_record() -> None:
    store = MemoryStore()
    with pytest.raises(TypeError, match="run_id"):
        await store.commit(SessionRecord("k", HISTORY, 0, None, 5), expected_version=None)  # type: ignore[arg-type]
    assert await store.load("k") is None


@pytest.mark.anyio
async def test_every_store_refuses_a_record_holding_what_is_not_a_message(tmp_path: Path) -> None:
    """``SessionRecord("k", ("hi",))`` was stored by a ``MemoryStore`` (and loaded back, to fail in the next turn's
    run), and failed a database store's commit with an ``AttributeError`` from the encoder."""
    async with SqliteStore(tmp_path / "s.db") as sqlite:
        for store in (MemoryStore(), sqlite):
            with pytest.raises(TypeError, match="Message objects, not str"):
                await store.commit(SessionRecord("k", ("hi",)), expected_version=None)  # type: ignore[arg-type]
            assert await store.load("k") is None
            await store.commit(SessionRecord("k", HISTORY), expected_version=None)
            bad = SessionRecord("k", (*HISTORY, "more"), kept=len(HISTORY))  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="Message objects, not str"):
                await store.commit(bad, expected_version=1)
            loaded = await store.load("k")
            assert loaded is not None and loaded.messages == HISTORY and loaded.version == 1


@pytest.mark.anyio
async def test_a_damaged_sqlite_row_is_refused_when_loaded_and_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        for name in DAMAGES:
            await store.commit(SessionRecord(name, HISTORY), expected_version=None)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for name in DAMAGES:
            conn.execute("UPDATE agentactors_sessions SET body = ? WHERE key = ?", (_damaged(name), name))
            conn.execute("DELETE FROM agentactors_messages WHERE key = ?", (name,))
    finally:
        conn.close()
    async with SqliteStore(path) as store:
        for name in DAMAGES:
            with pytest.raises(SessionFormatError, match=repr(name)) as info:
                await store.load(name)
            assert info.value.key == name
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for name in DAMAGES:
            assert conn.execute("SELECT body FROM agentactors_sessions WHERE key = ?", (name,)).fetchone()[0] == (
                _damaged(name)
            )
    finally:
        conn.close()


@pytest.mark.anyio
async def test_a_damaged_postgres_row_is_refused_when_loaded_and_left_as_it_is(
    postgres_dsn: str,  # noqa: F811
) -> None:
    async with PostgresStore(postgres_dsn) as store:
        for name in DAMAGES:
            await store.commit(SessionRecord(name, HISTORY), expected_version=None)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            for name in DAMAGES:
                conn.execute("UPDATE agentactors_sessions SET body = %s WHERE key = %s", (_damaged(name), name))
                conn.execute("DELETE FROM agentactors_messages WHERE key = %s", (name,))
        for name in DAMAGES:
            with pytest.raises(SessionFormatError, match=repr(name)) as info:
                await store.load(name)
            assert info.value.key == name
    with psycopg.connect(postgres_dsn) as conn:
        for name in DAMAGES:
            row = conn.execute("SELECT body FROM agentactors_sessions WHERE key = %s", (name,)).fetchone()
            assert row is not None and row[0] == _damaged(name)


def echo_model(request: LLMRequest) -> str:
    return "seen: " + " | ".join(m.content for m in request.messages if m.role == "user")


@pytest.mark.anyio
async def test_a_turn_on_a_damaged_session_is_refused_and_commits_nothing_over_it(tmp_path: Path) -> None:
    """A document without its messages was read as an empty conversation, and the next turn replaced it."""
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        await store.commit(SessionRecord("k", HISTORY), expected_version=None)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("UPDATE agentactors_sessions SET body = ?", (_damaged("no-messages"),))
    finally:
        conn.close()
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=SqliteStore(path))
        with pytest.raises(SessionFormatError, match="'k'"):
            await session.send("hello")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        assert conn.execute("SELECT version, body FROM agentactors_sessions").fetchone() == (
            1, _damaged("no-messages"),
        )
    finally:
        conn.close()
