"""Sessions given what a database cannot keep as it is, or handed a stored row they cannot read.

* a model answer holding a lone surrogate (half an emoji: a vendor's ``"\\ud83d"`` escape cut short) is a
  Python ``str`` no UTF-8 column can hold: the turn used to be lost to a ``UnicodeEncodeError`` from the
  driver — paid for, not committed, and not one of the commit's documented errors;
* a stored cell that is not valid UTF-8 used to surface as ``sqlite3.OperationalError`` from the fetch,
  not as the typed :class:`~agentactors.errors.SessionFormatError` a record that does not decode is;
* a session key with a lone surrogate (or a NUL, which PostgreSQL's text cannot hold) worked in a ``MemoryStore``
  and failed at the first turn in a database: it is refused when the session is opened, in every store alike;
* a ``resolve`` through the handle of an agent that cannot resume the pause claimed it first, then failed:
  the pause was consumed with nothing run;
* a session handle used from another thread's event loop ran the turn in that loop, or failed half-way with
  that loop's errors (``TrioInternalError``, ``AttributeError``) — and could crash the runtime's loop.

Real SQLite files in ``tmp_path`` (worker threads): the real clock, but for the ``MemoryStore`` test on
virtual time.  Each test is bounded.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
import trio

from agentactors import Agent, Runtime
from agentactors.errors import SessionFormatError
from agentactors.messages import LLMRequest, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore, SqliteStore
from agentactors.tools.registry import tool

pytestmark = pytest.mark.anyio

HALF_AN_EMOJI = "a 🙂 and half of one: \ud83d"


async def test_an_answer_with_a_lone_surrogate_is_committed_and_read_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with anyio.fail_after(10):
        async with Runtime() as rt:
            session = rt.session(Agent(ScriptedProvider([HALF_AN_EMOJI, "next"])), "k", store=SqliteStore(path))
            result = await session.send("hi")  # raised UnicodeEncodeError: the turn was lost
            assert result.ok and session.version == 1
            assert (await session.send("again")).ok, "the turn after it appends to the same stored history"
        async with Runtime() as rt:  # another runtime, a new store object on the file: the store is the truth
            again = await rt.session(Agent(ScriptedProvider([])), "k", store=SqliteStore(path)).refresh()
            assert [m.content for m in again.history] == ["hi", HALF_AN_EMOJI, "again", "next"]
            assert again.version == 2


@pytest.mark.parametrize("cell", ["document", "messages"])
async def test_a_stored_cell_that_is_not_utf8_is_a_session_format_error(tmp_path: Path, cell: str) -> None:
    path = tmp_path / "s.db"
    calls: list[LLMRequest] = []

    def model(request: LLMRequest) -> str:
        calls.append(request)
        return "answer"

    with anyio.fail_after(10):
        async with Runtime() as rt:
            assert (await rt.session(Agent(ScriptedProvider(model)), "k", store=SqliteStore(path)).send("hi")).ok
        table = "agentactors_sessions" if cell == "document" else "agentactors_messages"
        raw = sqlite3.connect(path, isolation_level=None)
        try:  # damaged by something else than this library: the bytes are not UTF-8
            raw.execute(f"UPDATE {table} SET body = CAST(X'FFFE' AS TEXT) WHERE key = 'k'")
        finally:
            raw.close()
        store = SqliteStore(path)
        try:
            with pytest.raises(SessionFormatError, match="'k'"):  # was sqlite3.OperationalError
                await store.load("k")
        finally:
            await store.aclose()
        async with Runtime() as rt:
            session = rt.session(Agent(ScriptedProvider(model)), "k", store=SqliteStore(path))
            with pytest.raises(SessionFormatError):
                await session.send("more")
            assert len(calls) == 1, "no model call on a session that could not be read"
            assert session.history == ()
            other = rt.session(Agent(ScriptedProvider(model)), "other", store=SqliteStore(path))
            assert (await other.send("hi")).ok, "the other sessions of the file are untouched"


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
async def test_a_session_key_with_a_lone_surrogate_or_a_nul_is_refused_when_opened(
    tmp_path: Path, store_kind: str
) -> None:
    with anyio.fail_after(10):
        async with Runtime() as rt:
            store = MemoryStore() if store_kind == "memory" else SqliteStore(tmp_path / "s.db")
            agent = Agent(ScriptedProvider(["answer"]))
            with pytest.raises(ValueError, match="UTF-8"):
                rt.session(agent, "user-\udc80", store=store)
            with pytest.raises(ValueError, match="NUL"):  # PostgreSQL's text cannot hold it: no store takes it
                rt.session(agent, "a\x00b", store=store)
            for key in ("a/b\\c", "..", "é☃𝄞", "\x01\x7f", "x" * 2048):  # odd but storable: each its own session
                session = rt.session(Agent(ScriptedProvider(["answer"])), key, store=store)
                assert (await session.send("hi")).ok and session.version == 1
                assert session.key == key


@pytest.mark.virtual_time
async def test_a_resolve_through_another_agents_handle_claims_nothing() -> None:
    """Two agents take turns on one session; the pause is the first one's.  The second one's handle used to
    claim the pause, then fail in ``agent.resume`` (wrong agent): the pause consumed, nothing run, the
    person's decision lost for good."""
    sent: list[int] = []

    @tool(requires_approval=True)
    async def send_money(amount: int) -> str:
        """Send money."""
        sent.append(amount)
        return f"sent {amount}"

    def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return f"result: {last.content}"
        return [ToolCall("pay1", "send_money", {"amount": 5})]

    payer = Agent(ScriptedProvider(model), tools=[send_money], name="payer")
    other = Agent(ScriptedProvider(model), tools=[send_money], name="other")
    with anyio.fail_after(10):
        async with Runtime() as rt:
            by_payer, by_other = rt.session(payer, "k"), rt.session(other, "k")
            assert (await by_payer.send("pay 5")).paused
            with pytest.raises(ValueError, match="'payer'"):
                await by_other.resolve({"pay1": True})
            assert by_payer.paused and [c.id for c in by_payer.pending_approvals] == ["pay1"], "nothing claimed"
            assert by_payer.version == 1 and sent == []
            result = await by_payer.resolve({"pay1": True})
    assert result.ok and result.content == "result: sent 5" and sent == [5]


def _in_another_loop(foreign: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    """``fn()`` in a new event loop of ``foreign``'s library, in this (worker) thread: its value or its error."""
    try:
        if foreign == "asyncio":

            async def main() -> Any:
                return await fn()

            return asyncio.run(main())
        return trio.run(fn)
    except Exception as exc:
        return exc


@pytest.mark.parametrize("foreign", ["asyncio", "trio"])
async def test_turns_sent_from_another_threads_loop_run_in_the_runtime_and_none_is_lost(
    tmp_path: Path, foreign: str
) -> None:
    async def model(request: LLMRequest) -> str:
        await anyio.lowlevel.checkpoint()
        return "re: " + request.messages[-1].content

    with anyio.fail_after(20):
        async with Runtime() as rt:
            session = rt.session(Agent(ScriptedProvider(model)), "k", store=SqliteStore(tmp_path / "s.db"))

            async def from_afar() -> list[Any]:
                return [await session.send(f"far {i}") for i in range(2)]

            outcome: list[Any] = []

            async def other_thread() -> None:
                outcome.append(await anyio.to_thread.run_sync(_in_another_loop, foreign, from_afar))

            async with anyio.create_task_group() as tg:
                tg.start_soon(other_thread)
                for i in range(2):
                    assert (await session.send(f"near {i}")).ok
            (far,) = outcome
            assert isinstance(far, list) and all(r.ok for r in far), f"the far turns failed: {far!r}"
            assert session.version == 4
            contents = [m.content for m in session.history]
            assert sorted(contents[0::2]) == ["far 0", "far 1", "near 0", "near 1"], "every turn, once"
            assert contents[1::2] == ["re: " + c for c in contents[0::2]], "turns never interleave"
