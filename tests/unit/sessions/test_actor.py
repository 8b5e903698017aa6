"""The commit rule: what a turn's outcome does to the session's history (docs/sessions.md, "Commit").

Virtual time on both backends (MemoryStore: no threads, no sockets).
"""

from __future__ import annotations

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.errors import (
    ErrorKind,
    ProviderError,
    RunDeadlineExceeded,
    SessionConflictError,
    SessionFormatError,
    ToolStatusError,
)
from agentactors.events import InMemoryRecorder, SessionCommitted
from agentactors.loop.result import RunResult
from agentactors.messages import LLMRequest, Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore, SessionRecord
from agentactors.sessions.actor import committable
from agentactors.tools.registry import tool
from agentactors.tools.results import ToolStatus

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def _users(request: LLMRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "user"]


def echo_model(request: LLMRequest) -> str:
    return "seen: " + " | ".join(_users(request))


@tool
async def lookup(q: str) -> str:
    """Look up."""
    return f"found {q}"


def test_committable_is_the_documented_rule() -> None:
    base = RunResult("a", [Message.user("q"), Message.assistant("a")])
    assert committable(base)
    assert committable(RunResult("a", [], bounded=True))
    assert not committable(RunResult("a", [], cancelled=True))
    assert not committable(RunResult("a", [], generation_failed=True))
    assert not committable(RunResult("a", [], bounded=True, error=RuntimeError("x")))


async def test_an_answered_turn_is_committed_with_its_run_id() -> None:
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k")
        result = await session.send("one")
        assert session.history == result.messages == (Message.user("one"), Message.assistant("seen: one"))
        assert session.version == 1
    committed = [e for e in rec.events if isinstance(e, SessionCommitted)]
    assert [(e.key, e.version, e.turn_run_id, e.messages, e.paused) for e in committed] == [
        ("k", 1, result.run_id, 2, False)
    ]


async def test_a_bounded_turn_without_an_error_is_committed() -> None:
    provider = ScriptedProvider(lambda r: [ToolCall(f"c{len(r.messages)}", "lookup", {"q": "x"})])
    async with Runtime() as rt:
        session = rt.session(Agent(provider, tools=[lookup], max_steps=2), "k")
        result = await session.send("go")
        assert result.bounded and result.error is None
        assert session.history == result.messages and session.version == 1


async def test_a_failed_turn_leaves_the_history_exactly_as_it_was() -> None:
    failure = ProviderError("vendor down", provider="scripted", kind=ErrorKind.transient)
    provider = ScriptedProvider(["first answer", failure])
    async with Runtime() as rt:
        session = rt.session(Agent(provider), "k")
        await session.send("one")
        before = session.history
        result = await session.send("two")
        assert result.generation_failed and result.error is failure
        assert session.history is before and session.version == 1


async def test_a_turn_past_its_deadline_is_not_committed() -> None:
    async def slow(request: LLMRequest) -> str:
        await anyio.sleep(10)
        return "late"

    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(slow)), "k")
        result = await session.send("one", deadline=1.0)
        assert isinstance(result.error, RunDeadlineExceeded)
        assert session.history == () and session.version is None


async def test_a_turn_that_raises_is_not_committed_and_the_session_goes_on() -> None:
    @tool
    async def broken() -> str:
        """Fail."""
        raise RuntimeError("boom")

    provider = ScriptedProvider([ToolCall("c1", "broken", {}), "after"])
    agent = Agent(provider, tools=[broken], on_tool_status={ToolStatus.error: "raise"})
    async with Runtime() as rt:
        session = rt.session(agent, "k")
        with pytest.raises(ToolStatusError):
            await session.send("one")
        assert session.history == () and session.version is None
        plain = rt.session(Agent(ScriptedProvider(echo_model)), "k")  # same session, another agent
        assert (await plain.send("two")).content == "seen: two"
        assert session.version == 1


async def test_cancelling_the_caller_mid_turn_commits_nothing() -> None:
    started = anyio.Event()

    async def model(request: LLMRequest) -> str:
        if _users(request)[-1] == "hang":
            started.set()
            await anyio.sleep_forever()
        return echo_model(request)

    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(model)), "k")
        await session.send("one")
        before = session.history
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send, "hang")
            await started.wait()
            tg.cancel_scope.cancel()
        assert session.history is before and session.version == 1
        result = await session.send("two")
        assert result.content == "seen: one | two"  # the cancelled turn left no trace
        assert session.version == 2


class SlowStore(MemoryStore):
    """A store whose commits take time (a slow disk), to cancel a caller while one is written."""

    __slots__ = ("entered",)

    def __init__(self) -> None:
        super().__init__()
        self.entered = anyio.Event()

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        self.entered.set()
        await anyio.sleep(5)
        return await super().commit(record, expected_version=expected_version)


async def test_a_cancellation_during_the_commit_waits_for_it() -> None:
    store = SlowStore()
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=store)
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send, "one")
            await store.entered.wait()
            tg.cancel_scope.cancel()
        # Committed all the same (the caller got its result or the cancellation): the store and the session agree.
        stored = await store.load("k")
        assert stored is not None and stored.version == 1
        assert session.history == stored.messages and session.version == 1
        # Through the mailbox too (a turn queued behind another is handled by a worker task).
        store.entered = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send, "two")
            await store.entered.wait()
            tg.start_soon(session.send, "three")
            await anyio.sleep(1)
            tg.cancel_scope.cancel()
        stored = await store.load("k")
        assert stored is not None and stored.version == 2  # "two" committed; "three", queued, never ran
        assert [m.content for m in session.history if m.role == "user"] == ["one", "two"]


async def test_a_conflicting_commit_raises_and_the_next_turn_reloads() -> None:
    store = MemoryStore()
    async with Runtime() as first, Runtime() as second:
        a = first.session(Agent(ScriptedProvider(echo_model)), "k", store=store)
        b = second.session(Agent(ScriptedProvider(echo_model)), "k", store=store)
        await a.send("a1")
        await b.send("b1")  # b loads a's turn: version 2
        with pytest.raises(SessionConflictError, match="at version 2, not 1") as info:
            await a.send("a2")  # a still holds version 1
        assert info.value.key == "k"
        stored = await store.load("k")
        assert stored is not None and [m.content for m in stored.messages if m.role == "user"] == ["a1", "b1"]
        result = await a.send("a3")  # reloaded first: nothing lost, the refused turn not there
        assert result.content == "seen: a1 | b1 | a3"
        assert a.version == 3


class FailingStore(MemoryStore):
    __slots__ = ("fail_commit", "fail_load")

    def __init__(self) -> None:
        super().__init__()
        self.fail_load: BaseException | None = None
        self.fail_commit: BaseException | None = None

    async def load(self, key: str) -> SessionRecord | None:
        if self.fail_load is not None:
            raise self.fail_load
        return await super().load(key)

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        if self.fail_commit is not None:
            raise self.fail_commit
        return await super().commit(record, expected_version=expected_version)


async def test_store_failures_reach_the_caller_and_the_session_tries_again() -> None:
    store = FailingStore()
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=store)
        store.fail_load = SessionFormatError("stored session 'k' is in format 9", key="k", found=9)
        with pytest.raises(SessionFormatError):
            await session.send("one")
        store.fail_load = None
        store.fail_commit = OSError("disk full")
        with pytest.raises(OSError, match="disk full"):
            await session.send("one")
        assert session.history == ()
        store.fail_commit = None
        assert (await session.send("two")).content == "seen: two"
        assert session.version == 1
