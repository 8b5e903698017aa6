"""A session turn's own cost over its run (benchmark W11): what the turn does once, and what it no longer does.

Each test pins one saving that must not change what a turn does: the committed record is built once (with its
origin) and ``MemoryStore`` returns it as stored without building it again (:func:`stored_record`: the same data);
a commit through ``MemoryStore``'s own ``commit`` — which never suspends — is not wrapped in a shielded scope,
while one that can suspend (a subclass's, a patched one) still is; the session's budgets and its listing for
``steer`` are done by the actor around the run, with no wrapper agent in between.

Virtual time on both backends (MemoryStore: no threads, no sockets).
"""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.gateway.cost_budget import CostBudget, entered
from agentactors.loop.pause import PausedRun
from agentactors.loop.result import RunResult
from agentactors.messages import LLMRequest, Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore, SessionRecord, open_session
from agentactors.sessions.journaled import SessionTurn, current_turn, turn_running
from agentactors.sessions.registry import Sessions
from agentactors.sessions.store import stored_record

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def _echo(request: LLMRequest) -> str:
    return "seen: " + " | ".join(m.content for m in request.messages if m.role == "user")


# -- the record: built once, stored as it is ------------------------------------------------------------


async def test_a_memory_store_turn_builds_its_record_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A turn built its record three times (turn_record, attrs.evolve for the origin, MemoryStore.commit's copy),
    # each running every validator again: a good part of a turn's own cost.
    built: list[SessionRecord] = []
    init = SessionRecord.__init__

    def counted(self: SessionRecord, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        init(self, *args, **kwargs)

    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(_echo)), "k")
        await session.send("one")
        origin = (await session.store.load("k")).origin  # type: ignore[union-attr]
        monkeypatch.setattr(SessionRecord, "__init__", counted)
        result = await session.send("two")
        monkeypatch.undo()
        assert len(built) == 1
        stored = await session.store.load("k")
        assert stored is not None and stored.version == 2 and stored.origin == origin  # the session's origin kept
        assert stored.messages == result.messages == session.history
        assert stored.run_id == result.run_id and stored.kept == 0


def test_stored_record_is_the_record_constructed_at_its_version() -> None:
    calls = (ToolCall("call-1", "transfer", {"amount": 500}),)
    pause = PausedRun("run-2", (Message.user("Pay."), Message.assistant("", list(calls))), calls, (), calls,
                      tool_calls=calls)
    child = RunResult("c", [Message.user("c")])
    for record in (
        SessionRecord("k", [Message.user("q"), Message.assistant("a")], 0, None, "run-1", 1, origin="o1"),
        SessionRecord("k", (Message.user("q"),), 0, pause, "run-2", 1, children=[child]),
    ):
        stored = stored_record(record, 3, "o2")
        built = SessionRecord(
            record.key, record.messages, 3, record.paused, record.run_id, origin="o2", children=record.children
        )
        # Every field, compared or not (a field added to the record must be copied here too).
        names = [a.name for a in attrs.fields(SessionRecord)]
        assert names == ["key", "messages", "version", "paused", "run_id", "kept", "origin", "children"]
        for name in names:
            assert getattr(stored, name) is getattr(built, name) or getattr(stored, name) == getattr(built, name)
        assert stored == built and type(stored) is SessionRecord
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            stored.version = 4  # type: ignore[misc]


@pytest.mark.parametrize("version", [0, -1, True, 1.0, None])
def test_stored_record_refuses_a_version_no_store_gives(version: Any) -> None:
    with pytest.raises(ValueError, match="version is an int >= 1"):
        stored_record(SessionRecord("k"), version, "o")


@pytest.mark.parametrize("origin", ["", None, 7])
def test_stored_record_refuses_an_origin_no_store_gives(origin: Any) -> None:
    with pytest.raises(ValueError, match="origin is a non-empty str"):
        stored_record(SessionRecord("k"), 1, origin)


def test_stored_record_takes_only_a_record() -> None:
    with pytest.raises(TypeError, match="not dict"):
        stored_record({"key": "k"}, 1, "o")  # type: ignore[arg-type]


# -- the shield: only where a commit can suspend ----------------------------------------------------------


async def _turn_cancelled_in_its_commit(store: MemoryStore, writing: anyio.Event) -> None:
    """Send a turn, cancel it once its (slow) commit started, and check the commit ended anyway."""
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(_echo)), "k", store=store)
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send, "one")
            await writing.wait()
            tg.cancel_scope.cancel()
        stored = await store.load("k")
        assert stored is not None and stored.version == 1
        assert session.history == stored.messages and session.version == 1


async def test_a_patched_memory_store_commit_that_suspends_is_still_shielded(monkeypatch: pytest.MonkeyPatch) -> None:
    # The shield is skipped for MemoryStore's own commit only (it never suspends): one put in its place — as a test
    # or a wrapper may — is the store's commit as any other, and a cancellation during it waits for it.
    writing = anyio.Event()
    commit = MemoryStore.commit

    async def slow(self: MemoryStore, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        writing.set()
        await anyio.sleep(5)
        return await commit(self, record, expected_version=expected_version)

    monkeypatch.setattr(MemoryStore, "commit", slow)
    await _turn_cancelled_in_its_commit(MemoryStore(), writing)


async def test_a_commit_set_on_the_store_itself_that_suspends_is_still_shielded() -> None:
    # As above, with the commit replaced on the instance (an audit wrapper, mock.patch.object(store, "commit")) of
    # a subclass that has a __dict__: the class's commit is still MemoryStore's, the store's is not.
    class Kept(MemoryStore):
        pass

    writing = anyio.Event()
    store = Kept()
    own = store.commit

    async def audited(record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        writing.set()
        await anyio.sleep(5)
        return await own(record, expected_version=expected_version)

    store.commit = audited  # type: ignore[method-assign]
    await _turn_cancelled_in_its_commit(store, writing)


async def test_a_memory_store_turn_cancelled_in_its_run_commits_nothing() -> None:
    started = anyio.Event()

    async def slow(request: LLMRequest) -> str:
        started.set()
        await anyio.sleep(5)
        return "late"

    store = MemoryStore()
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(_echo)), "k", store=store)
        await session.send("one")
        session = rt.session(Agent(ScriptedProvider(slow)), "k", store=store)
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send, "two")
            await started.wait()
            tg.cancel_scope.cancel()
        stored = await store.load("k")
        assert stored is not None and stored.version == 1 and session.version == 1
        assert [m.content for m in session.history if m.role == "user"] == ["one"]


# -- around the run: the journal's turn, the budgets, the listing, with no wrapper agent -------------------


class _Seeing:
    """An agent of the user's own that reports what its run sees around it."""

    def __init__(self, agent: Agent[Any]) -> None:
        self.agent = agent
        self.seen: list[tuple[Any, ...]] = []

    @property
    def name(self) -> str | None:
        return self.agent.name

    async def run(self, prompt: Any, **options: Any) -> RunResult[Any]:
        listed = tuple(Sessions.of(options["runtime"]).live.values())  # what session.steer finds the run by
        self.seen.append((prompt, listed, tuple(entered()), current_turn(), options))
        return await self.agent.run(prompt, **options)

    async def resume(self, state: Any, decisions: Any, **options: Any) -> RunResult[Any]:
        return await self.agent.resume(state, decisions, **options)


async def test_the_agent_is_called_itself_inside_the_turns_budgets_and_journal_record() -> None:
    seeing = _Seeing(Agent(ScriptedProvider(_echo)))
    mine = CostBudget(1.0, name="mine")
    async with Runtime() as rt:
        session = open_session(seeing, "k", runtime=rt, store=None, idle_timeout=60.0)
        await session.send("one")
        await session.send("two", deps={"d": 1}, cost_limit=mine)
        await session.send("three", cost_limit=0.5)
        assert Sessions.of(rt).live == {}  # nothing listed once the turns are over
    (p1, l1, b1, t1, _), (p2, l2, b2, t2, o2), (p3, l3, b3, t3, _) = seeing.seen
    assert len(l1) == len(l2) == len(l3) == 1 and l1[0] is p1 and l2[0] is p2 and l3[0] is p3
    assert b1 == (session.budget,) and b2 == (session.budget, mine)
    assert b3[0] is session.budget and b3[1].limit == 0.5 and b3[1].name == "turn"
    assert t1 == SessionTurn("k", None, 0) and t2 == SessionTurn("k", 1, 2) and t3 == SessionTurn("k", 2, 4)
    assert [m.content for m in p2] == ["one", "seen: one", "two"]
    assert o2 == {"runtime": rt, "deps": {"d": 1}, "settings": None, "deadline": None, "priority": None}
    assert entered() == () and current_turn() is None  # all left behind the turn


def test_turn_running_blocks_nest_and_leave_nothing_behind() -> None:
    outer, inner = SessionTurn("a", None, 0), SessionTurn("b", 1, 2)
    with turn_running(outer):
        assert current_turn() == outer
        with pytest.raises(RuntimeError), turn_running(inner):
            assert current_turn() == inner
            raise RuntimeError("boom")
        assert current_turn() == outer
    assert current_turn() is None
