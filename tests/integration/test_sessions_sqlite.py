"""Sessions on a real SQLite file: durable turns, deactivation, two runtimes and two processes on one file.

Worker threads and files: the real clock, short timeouts (docs/architecture.md, "Conventions").
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

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.errors import ErrorKind, ProviderError, SessionConflictError, SessionFormatError
from agentactors.events import Event
from agentactors.messages import LLMRequest, Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import SqliteStore
from agentactors.sessions.codec import messages_to_json
from agentactors.sessions.format import FORMAT
from agentactors.tools.registry import tool
from tests.support.paths import ROOT

pytestmark = pytest.mark.anyio


def _users(request: LLMRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "user"]


def echo_model(request: LLMRequest) -> str:
    return "seen: " + " | ".join(_users(request))


def _stored_users(path: Path, key: str) -> list[str]:
    """The user messages in the file itself: the turns' messages are kept beside the document, a piece a commit."""
    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT body FROM agentactors_sessions WHERE key = ?", (key,)).fetchone()
        pieces = conn.execute("SELECT body FROM agentactors_messages WHERE key = ? ORDER BY start", (key,)).fetchall()
    finally:
        conn.close()
    if row is None:
        return []
    messages = [m for (piece,) in pieces for m in json.loads(piece)]
    assert len(messages) == json.loads(row[0])["message_count"]
    return [m["content"] for m in messages if m["role"] == "user"]


class Deactivations:
    """A recorder that lets a test wait for the next ``session.deactivated`` (the sweeper's, on the real clock)."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    def record(self, event: Event) -> None:
        if event.type == "session.deactivated":
            self.event.set()


# --- one runtime ----------------------------------------------------------------------------------


async def test_turns_are_committed_in_order_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=SqliteStore(path))
        async with anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(session.send, f"m{i}")
                await anyio.lowlevel.checkpoint()
        assert session.version == 5
        assert [m.content for m in session.history if m.role == "assistant"] == [
            "seen: " + " | ".join(f"m{j}" for j in range(i + 1)) for i in range(5)
        ]
    assert _stored_users(path, "k") == [f"m{i}" for i in range(5)]


async def test_sessions_on_one_file_run_concurrently(tmp_path: Path) -> None:
    arrived = {"a": anyio.Event(), "b": anyio.Event()}

    async def model(request: LLMRequest) -> str:
        me = _users(request)[-1]
        arrived[me].set()
        await arrived["b" if me == "a" else "a"].wait()
        return f"{me} done"

    async with Runtime() as rt:
        store = SqliteStore(tmp_path / "s.db")
        agent = Agent(ScriptedProvider(model))
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(rt.session(agent, "a", store=store).send, "a")
                tg.start_soon(rt.session(agent, "b", store=store).send, "b")
    assert _stored_users(tmp_path / "s.db", "a") == ["a"] and _stored_users(tmp_path / "s.db", "b") == ["b"]


async def test_a_deactivated_session_is_reloaded_from_the_file(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    deactivations = Deactivations()
    async with Runtime(recorders=[deactivations]) as rt:
        agent = Agent(ScriptedProvider(echo_model))
        session = rt.session(agent, "k", store=store, idle_timeout=0.05)
        await session.send("one")
        with anyio.fail_after(5):
            await deactivations.event.wait()
        assert not session.active
        assert rt.session(agent, "k", store=store).history == ()  # nothing in memory but what a handle saw
        assert (await session.send("two")).content == "seen: one | two"
    assert store._conn is None  # the runtime closed the store it used


async def test_cancelled_and_failed_turns_leave_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    started = anyio.Event()

    async def model(request: LLMRequest) -> str:
        last = _users(request)[-1]
        if last == "hang":
            started.set()
            await anyio.sleep_forever()
        if last == "fail":
            raise ProviderError("vendor down", provider="scripted", kind=ErrorKind.transient)
        return echo_model(request)

    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(model)), "k", store=SqliteStore(path))
        await session.send("one")
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send, "hang")
            await started.wait()
            tg.cancel_scope.cancel()
        assert (await session.send("fail")).generation_failed
        assert _stored_users(path, "k") == ["one"] and session.version == 1
        assert (await session.send("two")).content == "seen: one | two"
    assert _stored_users(path, "k") == ["one", "two"]


# --- two runtimes, two processes ------------------------------------------------------------------


async def test_two_runtimes_racing_one_session_lose_no_turn(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    both = {"a": anyio.Event(), "b": anyio.Event()}

    async def model(request: LLMRequest) -> str:
        me = _users(request)[-1]
        if me in both:
            both[me].set()
            await both["b" if me == "a" else "a"].wait()  # both turns started from the same version
        return echo_model(request)

    outcomes: dict[str, str] = {}
    async with Runtime() as first, Runtime() as second:
        agent = Agent(ScriptedProvider(model))
        a = first.session(agent, "k", store=SqliteStore(path))
        b = second.session(agent, "k", store=SqliteStore(path))
        await a.send("start")

        async def send(session: Any, name: str) -> None:
            try:
                await session.send(name)
                outcomes[name] = "committed"
            except SessionConflictError:
                outcomes[name] = "conflict"

        async with anyio.create_task_group() as tg:
            tg.start_soon(send, a, "a")
            tg.start_soon(send, b, "b")
        assert sorted(outcomes.values()) == ["committed", "conflict"]
        winner = next(k for k, v in outcomes.items() if v == "committed")
        loser = a if winner == "b" else b
        assert _stored_users(path, "k") == ["start", winner]
        result = await loser.send("after")  # reloaded before this turn: the winner's turn is in it
        assert result.content == f"seen: start | {winner} | after"
    assert _stored_users(path, "k") == ["start", winner, "after"]


CHILD = textwrap.dedent(
    """
    import sys
    import anyio
    from agentactors.actors.runtime import Runtime
    from agentactors.agent.core import Agent
    from agentactors.errors import SessionConflictError
    from agentactors.providers.scripted import ScriptedProvider
    from agentactors.sessions import SqliteStore

    path, key, prefix, turns = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

    async def main() -> None:
        async with Runtime() as rt:
            session = rt.session(Agent(ScriptedProvider(lambda request: "ok")), key, store=SqliteStore(path))
            conflicts = 0
            for i in range(turns):
                while True:
                    try:
                        await session.send(f"{prefix}{i}")
                        break
                    except SessionConflictError:
                        conflicts += 1  # reloaded: send it again
            print(len(session.history), conflicts)

    anyio.run(main)
    """
)


def _child(path: Path, key: str, prefix: str, turns: int) -> list[str]:
    return [sys.executable, "-c", CHILD, str(path), key, prefix, str(turns)]


async def test_a_second_process_commits_and_this_one_sees_the_conflict_then_its_turn(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=SqliteStore(path))
        await session.send("here")
        done = await anyio.run_process(_child(path, "k", "there", 1), cwd=ROOT)
        assert done.stdout.decode().split() == ["4", "0"]  # it loaded this process's turn, and added its own
        with pytest.raises(SessionConflictError):
            await session.send("lost?")  # this runtime still held version 1
        assert _stored_users(path, "k") == ["here", "there0"]
        assert (await session.send("again")).content == "seen: here | there0 | again"


async def test_two_processes_interleaving_turns_on_one_session_lose_none(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    turns = 15
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=SqliteStore(path))
        await session.send("init")  # the file and the session exist before the child starts

        async def mine() -> None:
            for i in range(turns):
                while True:
                    try:
                        await session.send(f"p{i}")
                        break
                    except SessionConflictError:
                        pass
                await anyio.sleep(0.005)

        outputs: list[bytes] = []

        async def theirs() -> None:
            outputs.append((await anyio.run_process(_child(path, "k", "c", turns), cwd=ROOT)).stdout)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(theirs)
                tg.start_soon(mine)
    users = _stored_users(path, "k")
    assert users[0] == "init" and len(users) == 1 + 2 * turns
    assert [u for u in users if u.startswith("p")] == [f"p{i}" for i in range(turns)]
    assert [u for u in users if u.startswith("c")] == [f"c{i}" for i in range(turns)]


# --- formats --------------------------------------------------------------------------------------


async def _insert(path: Path, key: str, body: str, version: int = 1) -> None:
    async with SqliteStore(path) as store:
        await store.load(key)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("INSERT INTO agentactors_sessions VALUES (?, ?, ?, 0)", (key, version, body))
    finally:
        conn.close()


async def test_a_session_stored_in_format_1_goes_on_and_is_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    old = (Message.user("from v1"), Message.assistant("old answer"))
    await _insert(path, "k", json.dumps({"format": 1, "history": messages_to_json(old)}), version=3)
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=SqliteStore(path))
        assert (await session.send("now")).content == "seen: from v1 | now"
        assert session.version == 4
    conn = sqlite3.connect(path)
    try:
        assert json.loads(conn.execute("SELECT body FROM agentactors_sessions").fetchone()[0])["format"] == FORMAT
    finally:
        conn.close()


async def test_a_session_stored_by_a_newer_version_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    body = json.dumps({"format": FORMAT + 1, "messages": [], "memory": "what a later version keeps"})
    await _insert(path, "k", body)
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=SqliteStore(path))
        with pytest.raises(SessionFormatError, match="newer than this agentactors reads"):
            await session.send("hi")
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT body FROM agentactors_sessions").fetchone()[0] == body
    finally:
        conn.close()


# --- approvals ------------------------------------------------------------------------------------

REFUNDS: list[int] = []


@tool(requires_approval=True)
async def refund(amount: int) -> str:
    """Refund an amount."""
    REFUNDS.append(amount)
    return f"refunded {amount}"


def refund_model(request: LLMRequest) -> Any:
    last = request.messages[-1]
    if last.role == "tool":
        return f"tool said: {last.content}"
    return [ToolCall("c1", "refund", {"amount": 5})]


async def test_a_pause_survives_the_runtime_and_is_resolved_once_from_the_file(tmp_path: Path) -> None:
    REFUNDS.clear()
    path = tmp_path / "s.db"
    agent = Agent(ScriptedProvider(refund_model), tools=[refund])
    async with Runtime() as rt:
        result = await rt.session(agent, "k", store=SqliteStore(path)).send("refund me")
        assert result.paused
    async with Runtime() as first, Runtime() as second:
        a = first.session(agent, "k", store=SqliteStore(path))
        b = second.session(agent, "k", store=SqliteStore(path))
        outcomes: list[str] = []

        async def resolve(session: Any) -> None:
            try:
                outcomes.append((await session.resolve({"c1": True})).content)
            except SessionConflictError:
                outcomes.append("conflict")

        async with anyio.create_task_group() as tg:
            tg.start_soon(resolve, a)
            tg.start_soon(resolve, b)
        assert sorted(outcomes) == ["conflict", "tool said: refunded 5"]
        assert REFUNDS == [5]  # the tool ran once
    assert _stored_users(path, "k") == ["refund me"]
    async with Runtime() as rt:
        session = rt.session(agent, "k", store=SqliteStore(path))
        with pytest.raises(SessionConflictError, match="no pause to resolve"):
            await session.resolve({"c1": True})
        assert [m.role for m in session.history] == ["user", "assistant", "tool", "assistant"]
