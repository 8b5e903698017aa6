"""Virtual actors: activation on the first turn, deactivation when idle, one sweeper, the runtime's exit.

Virtual time on both backends (MemoryStore: no threads, no sockets).
"""

from __future__ import annotations

import gc
import math
import weakref
from typing import Any

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.events import InMemoryRecorder, SessionActivated, SessionDeactivated, SessionEvent
from agentactors.messages import LLMRequest
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore
from agentactors.sessions.registry import Sessions
from agentactors.sessions.store import SessionRecord, store_address

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def echo_model(request: LLMRequest) -> str:
    return "seen: " + " | ".join(m.content for m in request.messages if m.role == "user")


def _session_events(rec: InMemoryRecorder) -> list[tuple[str, str, str | None]]:
    return [(e.type, e.key, e.get("reason")) for e in rec.events if isinstance(e, SessionEvent)]


async def test_an_idle_session_deactivates_and_the_next_turn_reloads_it() -> None:
    rec = InMemoryRecorder()
    store = MemoryStore()
    async with Runtime(recorders=[rec]) as rt:
        agent = Agent(ScriptedProvider(echo_model))
        session = rt.session(agent, "k", store=store, idle_timeout=10)
        # Locals: mypy would hold session.active and session.history to these checks across the awaits below.
        active, history = session.active, session.history
        assert not active and history == ()
        await session.send("one")
        actors = rt.stats().actors
        assert session.active and len(session.history) == 2
        await anyio.sleep(9.5)
        assert session.active  # not yet
        await anyio.sleep(1)
        active_now: bool = session.active  # a fresh read, for the same reason
        assert not active_now
        assert session.version is None and not session.paused  # nothing of the session in memory...
        assert len(session.history) == 2  # ...but this handle keeps the history it last saw
        assert rt.session(agent, "k", store=store).history == ()  # a new handle has seen nothing
        assert rt.stats().actors == actors - 1  # its actor is gone
        assert Sessions.of(rt).get((store_address(store), "k")) is None
        result = await session.send("two")
        assert result.content == "seen: one | two"  # reloaded from the store
        assert session.version == 2
    assert _session_events(rec) == [
        ("session.activated", "k", None),
        ("session.committed", "k", None),
        ("session.deactivated", "k", "idle"),
        ("session.activated", "k", None),
        ("session.committed", "k", None),
        ("session.deactivated", "k", "runtime_exit"),
    ]
    activated = [e for e in rec.events if isinstance(e, SessionActivated)]
    assert [(e.version, e.messages, e.paused) for e in activated] == [(None, 0, False), (1, 2, False)]
    deactivated = [e for e in rec.events if isinstance(e, SessionDeactivated)]
    assert [e.version for e in deactivated] == [1, 2]


async def test_a_turn_longer_than_the_idle_timeout_keeps_its_session() -> None:
    async def slow(request: LLMRequest) -> str:
        await anyio.sleep(100)
        return echo_model(request)

    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(slow)), "k", idle_timeout=10)
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send, "one")
            tg.start_soon(session.send, "two")  # queued behind: still not idle
            await anyio.sleep(150)
            assert session.active and session.version == 1
        assert session.version == 2
        await anyio.sleep(9.5)
        assert session.active
        await anyio.sleep(1)
        assert not session.active  # idle_timeout after the last turn ended


class _SlowCommits(MemoryStore):
    """A store whose commits take 5 s (a busy database)."""

    __slots__ = ()

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        await anyio.sleep(5)
        return await super().commit(record, expected_version=expected_version)


async def test_a_turn_still_committing_for_a_caller_that_left_keeps_its_session_active() -> None:
    """A queued turn runs in the actor's own task; a caller that gives up leaves at once, while the turn's commit
    (shielded) goes on.  The session counted as idle from that moment and was deactivated mid-commit: the next
    turn activated a second actor on the session, loaded the version before that commit, and — in one runtime,
    one process — failed with ``SessionConflictError`` (its model call spent).  A session whose turn still runs
    is not idle: it deactivates ``idle_timeout`` after the turn is over, and the next turn goes on from it."""

    async def slow(request: LLMRequest) -> str:
        await anyio.sleep(2)
        return echo_model(request)

    store = _SlowCommits()
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(slow)), "k", store=store, idle_timeout=1)

        async def leaves() -> None:
            with anyio.move_on_after(9):  # "two": queued, runs 7-9, commits 9-14; its caller leaves at 9.1
                await session.send("two")

        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send, "one")  # runs 0-2, commits 2-7
            await anyio.sleep(0.1)
            tg.start_soon(leaves)
        await anyio.sleep(11 - anyio.current_time())  # "two" is still committing, and its caller left 1.9 s ago
        assert session.active
        result = await session.send("three")  # behind "two" on the same actor, then on from its commit
        assert result.content == "seen: one | two | three"
        assert session.version == 3
        await anyio.sleep(1.5)
        assert not session.active  # idle_timeout after the last turn ended


async def test_each_turn_restarts_the_idle_clock() -> None:
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", idle_timeout=10)
        for _ in range(5):
            await session.send("again")
            await anyio.sleep(8)
        assert session.active and session.version == 5


async def test_one_sweeper_serves_every_session_and_timeouts_may_differ() -> None:
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(echo_model))
        tasks = rt.stats().tasks
        short = [rt.session(agent, f"s{i}", idle_timeout=5) for i in range(20)]
        long = [rt.session(agent, f"l{i}", idle_timeout=50) for i in range(20)]
        forever = rt.session(agent, "forever", idle_timeout=math.inf)
        for session in (*short, *long, forever):
            await session.send("hi")
        assert rt.stats().tasks == tasks + 1  # one background sweeper, no task per session
        await anyio.sleep(6)
        assert not any(s.active for s in short) and all(s.active for s in long)
        await anyio.sleep(50)
        assert not any(s.active for s in long)
        await anyio.sleep(10_000)
        assert forever.active


async def test_a_session_going_idle_sooner_wakes_the_sleeping_sweeper() -> None:
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(echo_model))
        slow = rt.session(agent, "slow", idle_timeout=1000)
        await slow.send("hi")  # the sweeper now sleeps until t+1000
        quick = rt.session(agent, "quick", idle_timeout=1)
        await quick.send("hi")
        await anyio.sleep(2)
        assert not quick.active and slow.active


async def test_the_runtime_exit_deactivates_every_session_and_closes_their_stores() -> None:
    closed: list[str] = []

    class Store(MemoryStore):
        __slots__ = ("name",)

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

        async def aclose(self) -> None:
            closed.append(self.name)

    rec = InMemoryRecorder()
    a, b = Store("a"), Store("b")
    async with Runtime(recorders=[rec]) as rt:
        agent = Agent(ScriptedProvider(echo_model))
        sessions = [rt.session(agent, "x", store=a), rt.session(agent, "y", store=a), rt.session(agent, "x", store=b)]
        for session in sessions:
            await session.send("hi")
        assert all(s.active for s in sessions)
    assert sorted(closed) == ["a", "b"]
    assert sorted((e.key, e.reason) for e in rec.events if isinstance(e, SessionDeactivated)) == [
        ("x", "runtime_exit"),
        ("x", "runtime_exit"),
        ("y", "runtime_exit"),
    ]
    assert not any(s.active for s in sessions)
    assert [len(s.history) for s in sessions] == [2, 2, 2]  # what each handle last saw; never raising


async def test_many_idle_sessions_leave_the_registry_small() -> None:
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(echo_model))
        for i in range(2000):
            await rt.session(agent, f"s{i}", idle_timeout=1).send("hi")
        registry = Sessions.of(rt)
        assert len(registry.active) == 2000
        await anyio.sleep(2)
        assert registry.active == {} and registry.stats()["idle"] == 0
        assert rt.stats().actors == 1  # the provider's actor: every session's is gone


async def test_the_default_store_belongs_to_the_runtime() -> None:
    agent = Agent(ScriptedProvider(echo_model))
    async with Runtime() as rt:
        first = rt.session(agent, "k")
        await first.send("one")
        assert rt.session(agent, "k").store is first.store  # one default store per runtime
    async with Runtime() as rt:
        again = rt.session(agent, "k")
        assert again.store is not first.store
        assert (await again.send("two")).content == "seen: two"  # a new runtime, a new memory


@pytest.mark.parametrize("idle_timeout", [1e-20, 1.0])
async def test_a_session_whose_abandoned_turn_still_commits_is_not_polled(
    idle_timeout: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose caller left while its turn still commits was looked at again a whole ``idle_timeout`` later,
    and again, until the commit ended: with ``idle_timeout=1e-20`` (no later than now, in floats) the sweeper
    re-checked it at every checkpoint — a busy spin holding the event loop (on virtual time, for ever: the clock
    never got to jump).  Such a session is now left out of the sweeper's sight until its turn is over, then goes
    idle: it deactivates ``idle_timeout`` after the commit ends, not up to twice that, and nothing polls it."""
    sweeps = 0
    expire = Sessions._expire

    def counted(self: Sessions, now: float) -> list[object]:
        nonlocal sweeps
        sweeps += 1
        if sweeps > 1000:
            raise RuntimeError("the sweeper spins")
        return expire(self, now)  # type: ignore[return-value]

    monkeypatch.setattr(Sessions, "_expire", counted)

    async def slow(request: LLMRequest) -> str:
        await anyio.sleep(2)
        return echo_model(request)

    rec = InMemoryRecorder()
    store = _SlowCommits()
    async with Runtime(recorders=[rec]) as rt:
        session = rt.session(Agent(ScriptedProvider(slow)), "k", store=store, idle_timeout=idle_timeout)

        async def leaves() -> None:
            with anyio.move_on_after(9):  # "two": runs 7-9, commits 9-14; its caller leaves at 9
                await session.send("two")

        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send, "one")  # runs 0-2, commits 2-7
            await anyio.sleep(0.1)
            tg.start_soon(leaves)
        before = sweeps
        await anyio.sleep(13.9 - anyio.current_time())
        assert _active(session) and sweeps - before <= 2  # not polled while "two" commits
        await anyio.sleep(14 + idle_timeout + 0.05 - anyio.current_time())
        assert not _active(session)  # idle_timeout after the commit ended
        assert (await session.send("three")).content == "seen: one | two | three"
    reasons = [e.reason for e in rec.events if isinstance(e, SessionDeactivated)]
    assert reasons[0] == "idle" and len(reasons) == 2  # (the second: idle too, if the tiny timeout ran out first)


async def test_a_store_is_closed_and_let_go_once_its_last_session_deactivates() -> None:
    """A service that makes a store object per request (``SqliteStore(path)`` in a handler) kept every one of them,
    and its connection, open until the runtime exited: a connection and a store leaked per request.  A store is
    closed, and the runtime holds it no more, once no session of it is active; one used again reopens (the port's
    rule), and a store with an active session stays open."""
    closed: list[str] = []

    class Store(MemoryStore):  # (no __slots__: weakly referenced below)
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

        async def aclose(self) -> None:
            closed.append(self.name)

    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(echo_model))
        registry = Sessions.of(rt)
        refs = []
        for i in range(20):  # a request each: a new store object, a turn, dropped
            store = Store(f"r{i}")
            refs.append(weakref.ref(store))
            assert (await rt.session(agent, "user", store=store, idle_timeout=1).send("hi")).ok
        del store
        shared = Store("shared")
        quick = rt.session(agent, "quick", store=shared, idle_timeout=1)
        slow = rt.session(agent, "slow", store=shared, idle_timeout=10)
        await quick.send("hi")
        await slow.send("hi")
        assert registry.stats()["stores"] == 21 and closed == []
        await anyio.sleep(2)
        assert sorted(closed) == sorted(f"r{i}" for i in range(20))  # "shared" still has an active session
        assert registry.stats()["stores"] == 1
        gc.collect()
        assert all(ref() is None for ref in refs)  # nothing of the runtime holds them
        await anyio.sleep(10)
        assert closed[-1] == "shared" and registry.stats()["stores"] == 0
        assert (await quick.send("again")).content == "seen: hi | again"  # used again: reopened
        assert registry.stats()["stores"] == 1
    assert closed.count("shared") == 2  # at its sessions' deactivation, and at the runtime's exit


def _active(session: Any) -> bool:
    """``session.active`` read anew (an attribute asserted once stays narrowed for mypy, and it changes here)."""
    return bool(session.active)
