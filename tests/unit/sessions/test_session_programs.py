"""Property: generated operation sequences on a journaled session keep what docs/sessions.md and docs/durability.md
promise.

A program (drawn by hypothesis) runs on one session of a ``SqliteStore`` in a runtime with a ``SqliteJournal``
(and, on a smaller budget, ``PostgresStore`` with ``PostgresJournal``): turns whose model answers text, calls a
tool, pauses for approval (``approval="pause"``), waits in place (``approval="wait"``, timed out), fails with a
``ProviderError`` or is slow; resolves (approve, deny, twice, an unknown call id); sends while paused; two
concurrent sends in one runtime; a rival runtime on the same store; the store and runtime closed and opened again;
a crash (a turn cut inside its tool: what SIGKILL leaves, then ``rt.recover(sessions=store)`` in a new runtime);
replay of a finished run.

Checked after every operation:

* the history holds every committed turn's prompt once, in order (no turn lost or duplicated);
* after a reopen the history is the one before;
* a recovered turn keeps its run id and runs no journaled tool again (tool executions counted per idempotency
  key: each once, the call the crash cut twice);
* every stored record loads again; errors are the documented typed ones;
* a replay of a finished run returns its content without calling the model;
* no leaked connection or task (warnings and unraisable exceptions are failures).

SQLite and PostgreSQL run on worker threads: the real clock.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentactors import Agent, Runtime, ToolCall, ToolContext, tool
from agentactors.errors import (
    ErrorKind,
    ProviderError,
    RunFinishedError,
    RunNotFoundError,
    SessionConflictError,
    SessionPausedError,
)
from agentactors.journal import JournalStore, PostgresJournal, SqliteJournal, fork, load_run, replay
from agentactors.messages import LLMRequest
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import PostgresStore, SqliteStore
from tests.support.journals import sql
from tests.support.postgres import PostgresServer, postgres_server  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(120)

KEY = "user:1"

SENDS = ("text", "tool", "pause", "wait", "fail", "slow")
OTHERS = ("approve", "deny", "twice", "unknown", "concurrent", "rival", "race", "reopen", "crash", "replay", "fork",
          "idle", "cancel", "delete", "steer", "crash_wait")
ops = st.lists(st.sampled_from(SENDS + OTHERS), min_size=1, max_size=12)


@attrs.define
class World:
    """What the program did, and what the model and tools saw."""

    model_calls: int = 0
    effects: Counter[str] = attrs.field(factory=Counter)  # tool executions per idempotency key
    hang: bool = False  # the next ``hang`` call waits (a crash cuts it) instead of returning
    hanging: anyio.Event = attrs.field(factory=anyio.Event)
    cut: set[str] = attrs.field(factory=set)  # the idempotency keys of the calls a crash cut
    cancelled: set[str] = attrs.field(factory=set)  # the runs ended cancelled by a caller who gave up


def make_agent(world: World) -> Agent[Any]:
    @tool
    async def charge(ctx: ToolContext, cents: int) -> str:
        """Charge the card."""
        world.effects[ctx.idempotency_key] += 1
        return f"charged {cents}"

    @tool(requires_approval=True)
    async def refund(ctx: ToolContext, cents: int) -> str:
        """Refund the card (a person approves it; the run pauses)."""
        world.effects[ctx.idempotency_key] += 1
        if world.hang:  # a crash inside the resolved turn
            world.hanging.set()
            await anyio.sleep_forever()
        return f"refunded {cents}"

    @tool(requires_approval=True, approval="wait", approval_timeout=0.01)
    async def wire(ctx: ToolContext, cents: int) -> str:
        """Wire money (a person approves it in place; nobody does: denied when the wait ends)."""
        world.effects[ctx.idempotency_key] += 1
        return f"wired {cents}"

    @tool(requires_approval=True, approval="wait", approval_timeout=0.3)
    async def hold(ctx: ToolContext, cents: int) -> str:
        """Hold money (a person approves it in place; the process dies while it waits, nobody answers after)."""
        world.effects[ctx.idempotency_key] += 1
        return f"held {cents}"

    @tool
    async def hang(ctx: ToolContext) -> str:
        """A side effect the process dies inside (the first time)."""
        world.effects[ctx.idempotency_key] += 1
        if world.hang:
            world.hanging.set()
            await anyio.sleep_forever()
        return "hung up"

    async def model(request: LLMRequest) -> Any:
        world.model_calls += 1
        last = request.messages[-1]
        if last.role == "tool":
            prompt = [m.content for m in request.messages if m.role == "user"][-1]
            if prompt.startswith("crash ") and last.content.startswith("charged"):  # step 2: the tool it dies in
                return [ToolCall(f"h{prompt.split()[1]}", "hang", {})]
            return "done: " + last.content
        kind, _, n = last.content.partition(" ")
        if kind == "tool":
            return [ToolCall(f"c{n}", "charge", {"cents": int(n)})]
        if kind == "pause":
            return [ToolCall(f"r{n}", "refund", {"cents": int(n)})]
        if kind == "wait":
            return [ToolCall(f"w{n}", "wire", {"cents": int(n)})]
        if kind == "crash_wait":
            return [ToolCall(f"c{n}", "charge", {"cents": int(n)}), ToolCall(f"s{n}", "hold", {"cents": int(n)})]
        if kind == "crash":
            return [ToolCall(f"c{n}", "charge", {"cents": int(n)})]
        if kind == "fail":
            return ProviderError("the vendor is down", provider="scripted", kind=ErrorKind.request)
        if kind in ("slow", "steer"):
            await anyio.sleep(0.01 if kind == "slow" else 0.05)
        return f"ok {last.content}"

    return Agent(ScriptedProvider(model), tools=[charge, refund, wire, hold, hang], name="clerk")


@attrs.define
class Backend:
    """Where the session and the journal live: each call a new object on the same database."""

    store: Callable[[], SqliteStore | PostgresStore]
    journal: Callable[[], JournalStore]
    db: str  # the journal's database, for ``sql``


@attrs.define
class Expect:
    """The model of the session: its committed prompts, in order, and its pause."""

    prompts: list[str] = attrs.field(factory=list)
    paused: str | None = None  # the pending call id
    paused_prompt: str = ""
    finished: list[tuple[str, str]] = attrs.field(factory=list)  # (run id, content) of runs that answered


def user_prompts(history: tuple[Any, ...]) -> list[str]:
    return [m.content for m in history if m.role == "user"]


async def run_program(backend: Backend, program: list[str]) -> None:
    world = World()
    expect = Expect()
    n = 0

    outer = AsyncExitStack()  # replaced at each reopen and crash: closed in the finally below
    try:
        journal = await outer.enter_async_context(backend.journal())
        store = await outer.enter_async_context(backend.store())
        rt = await outer.enter_async_context(Runtime(journal=journal))
        agent = make_agent(world).bind(rt)
        session = rt.session(agent, KEY, store=store)

        async def check() -> None:
            assert user_prompts(session.history) == expect.prompts, (session.history, expect.prompts)
            assert session.paused == (expect.paused is not None)
            probe = backend.store()
            async with probe:  # every stored record loads again, in another store object
                record = await probe.load(KEY)
            if record is None:
                assert expect.prompts == [] and expect.paused is None
            else:
                assert record.messages == session.history and record.version == session.version
                assert (record.paused is not None) == (expect.paused is not None)

        async def reopen() -> None:
            nonlocal journal, store, rt, agent, session, outer
            before = session.history
            await outer.aclose()
            outer = AsyncExitStack()
            journal = await outer.enter_async_context(backend.journal())
            store = await outer.enter_async_context(backend.store())
            rt = await outer.enter_async_context(Runtime(journal=journal))
            agent = make_agent(world).bind(rt)
            session = rt.session(agent, KEY, store=store)
            await session.refresh()
            assert session.history == before

        for op in program:
            n += 1
            if op in SENDS:
                prompt = f"{op} {n}"
                calls = world.model_calls
                if expect.paused is not None:
                    with pytest.raises(SessionPausedError) as paused:
                        await session.send(prompt)
                    assert [c.id for c in paused.value.pending] == [expect.paused]
                    assert world.model_calls == calls  # refused before the model was called
                    await check()
                    continue
                try:
                    result = await session.send(prompt)
                except ProviderError:
                    assert op == "fail"
                else:
                    if op == "fail":
                        assert not result.ok and result.error is not None
                    elif op == "pause":
                        assert result.paused and [c.id for c in result.pending_approvals] == [f"r{n}"]
                        expect.paused, expect.paused_prompt = f"r{n}", prompt
                    else:
                        assert result.ok, result
                        expect.prompts.append(prompt)
                        expect.finished.append((result.run_id or "", result.content))
                        if op == "tool":
                            assert world.effects[f"{result.run_id}:c{n}"] == 1
                        if op == "wait":  # nobody answered: denied when the wait ended, the tool never ran
                            assert world.effects[f"{result.run_id}:w{n}"] == 0
            elif op in ("approve", "deny", "twice", "unknown"):
                if expect.paused is None or op == "unknown":
                    # No pause: SessionConflictError (resolved already, or never paused).  A decision for a call
                    # the pause does not hold: ValueError.  Either way nothing changes.
                    version, calls = session.version, world.model_calls
                    expected = ValueError if expect.paused is not None else SessionConflictError
                    with pytest.raises(expected):
                        await session.resolve({"nope": True})
                    assert session.version == version and world.model_calls == calls
                    await check()
                    continue
                result = await session.resolve({expect.paused: op != "deny"})
                assert result.ok, result
                ran = world.effects[f"{result.run_id}:{expect.paused}"]
                assert ran == (0 if op == "deny" else 1)
                expect.prompts.append(expect.paused_prompt)
                expect.finished.append((result.run_id or "", result.content))
                expect.paused = None
                if op == "twice":
                    with pytest.raises(SessionConflictError):
                        await session.resolve({f"r{expect.paused_prompt.split()[1]}": True})
            elif op == "concurrent":
                if expect.paused is not None:
                    continue
                other = rt.session(agent, KEY, store=store)  # another handle: the same actor, turns queue
                a, b = f"text {n}a", f"text {n}b"
                async with anyio.create_task_group() as tg:
                    tg.start_soon(session.send, a)
                    tg.start_soon(other.send, b)
                tail = user_prompts(session.history)[-2:]
                assert sorted(tail) == [a, b]
                expect.prompts.extend(tail)
            elif op == "rival":
                if expect.paused is not None:
                    continue
                async with backend.store() as rival_store, Runtime() as rival:
                    theirs = rival.session(make_agent(world), KEY, store=rival_store)
                    await theirs.refresh()  # active in both runtimes at the same version
                    await session.send(f"text {n}a")
                    expect.prompts.append(f"text {n}a")
                    with pytest.raises(SessionConflictError):
                        await theirs.send(f"text {n}b")  # refused at its commit, nothing overwritten
                    await theirs.send(f"text {n}c")  # reloaded: goes on
                    expect.prompts.append(f"text {n}c")
                await session.refresh()  # this runtime reads what the rival committed
            elif op == "race":
                if expect.paused is not None:
                    continue
                async with backend.store() as rival_store, Runtime() as rival:
                    theirs = rival.session(make_agent(world), KEY, store=rival_store)
                    await theirs.refresh()  # both active at the same version, both send at once
                    await session.refresh()
                    outcomes: dict[str, Any] = {}

                    async def send(handle: Any, prompt: str, outcomes: dict[str, Any] = outcomes) -> None:
                        try:
                            outcomes[prompt] = await handle.send(prompt)
                        except SessionConflictError as e:
                            outcomes[prompt] = e

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(send, session, f"text {n}a")
                        tg.start_soon(send, theirs, f"text {n}b")
                    won = [p for p, o in outcomes.items() if not isinstance(o, BaseException)]
                    assert len(won) == 1, outcomes  # the first to commit wins, the second is refused
                    expect.prompts.extend(won)
                await session.refresh()
            elif op == "reopen":
                await reopen()
            elif op == "idle":  # deactivated when idle, then activated again from the store by the next call
                before = session.history
                idle = rt.session(agent, KEY, store=store, idle_timeout=0.01)
                await idle.refresh()
                with anyio.fail_after(5):
                    while idle.active:  # the sweeper's deadline passes  # noqa: ASYNC110 (nothing to wait on)
                        await anyio.sleep(0.01)
                await session.refresh()
                assert session.history == before
            elif op == "cancel":  # the caller of send() gave up: nothing committed
                if expect.paused is not None:
                    continue
                before, version = session.history, session.version
                with anyio.move_on_after(0.002):
                    await session.send(f"slow {n}")
                world.cancelled |= {r for (r,) in sql(backend.db, "SELECT run_id FROM agentactors_runs"
                                                                  " WHERE status = 'cancelled'")}
                assert session.history == before and session.version == version
            elif op == "delete":  # another process deletes the session while this runtime holds it
                async with backend.store() as other_store:
                    await other_store.delete(KEY)
                held, was_paused = session.version, expect.paused is not None
                expect.prompts, expect.paused = [], None
                # The held version is no longer stored: refused, nothing written, reloaded.  (A runtime holding a
                # pause reads the store before it refuses a turn: it finds the session gone and goes on.)
                if held is not None and not was_paused:
                    with pytest.raises(SessionConflictError):
                        await session.send(f"text {n}")
                result = await session.send(f"text {n}z")
                assert result.ok
                expect.prompts.append(f"text {n}z")
                expect.finished.append((result.run_id or "", result.content))
            elif op == "steer":
                if expect.paused is not None:
                    continue
                steered: list[bool] = []

                async def steer(text: str, session: Any = session, steered: list[bool] = steered) -> None:
                    await anyio.sleep(0.01)
                    try:
                        await session.steer(text)
                    except (RunNotFoundError, RunFinishedError):
                        steered.append(False)
                    else:
                        steered.append(True)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(steer, f"also {n}")
                    result = await session.send(f"steer {n}")
                assert result.ok
                tail = user_prompts(session.history)[len(expect.prompts):]
                assert tail == ([f"steer {n}", f"also {n}"] if steered == [True] else [f"steer {n}"]), (tail, steered)
                expect.prompts.extend(tail)
                if steered != [True]:  # a steered run is not replayed: tests/unit/journal/test_steered_runs.py
                    expect.finished.append((result.run_id or "", result.content))
            elif op == "fork":
                if not expect.finished:
                    continue
                run_id, content = expect.finished[n % len(expect.finished)]
                recorded = await load_run(journal, run_id)
                if recorded.resume is not None or not recorded.steps:
                    continue
                at = recorded.first_step + n % len(recorded.steps)
                calls = world.model_calls
                forked = await fork(journal, run_id, at, runtime=rt)
                assert forked.forked_from == run_id and forked.run_id != run_id
                if not forked.paused:
                    assert forked.content == content  # the model and tools answer the same way again
                assert world.model_calls > calls  # live from the fork step
            elif op in ("crash", "crash_wait"):
                resolving = expect.paused
                if op == "crash_wait" and resolving is not None:
                    continue
                prompt = f"{op} {n}" if resolving is None else expect.paused_prompt
                world.hang, world.hanging = True, anyio.Event()
                async with anyio.create_task_group() as tg:
                    if resolving is None:
                        tg.start_soon(session.send, prompt)
                    else:  # inside the resolved turn's approved tool
                        tg.start_soon(session.resolve, {resolving: True})
                    if op == "crash":
                        await world.hanging.wait()
                    else:  # while the run waits in place for a person (``charge`` ran beside the wait)
                        with anyio.fail_after(5):
                            while not any(k.endswith(f":c{n}") for k in world.effects):  # noqa: ASYNC110
                                await anyio.sleep(0.005)
                        await anyio.sleep(0.02)
                    tg.cancel_scope.cancel()  # the process dies inside its tool
                world.hang = False
                (run_id,) = {r for (r,) in sql(backend.db, "SELECT run_id FROM agentactors_runs"
                                                            " WHERE status = 'cancelled'")} - world.cancelled
                # What SIGKILL leaves: the end row never written, the dead process's lease free.
                sql(backend.db, "UPDATE agentactors_runs SET status = 'running', ended = NULL, content = NULL,"
                                " owner = NULL, lease_until = NULL WHERE run_id = ?", run_id)
                if op == "crash_wait":  # the waiting step's other call ran and was committed with the wait
                    cut = ""
                    assert world.effects[f"{run_id}:c{n}"] == 1 and world.effects[f"{run_id}:s{n}"] == 0
                else:
                    cut = f"{run_id}:h{n}" if resolving is None else f"{run_id}:{resolving}"
                    assert world.effects[cut] == 1
                    world.cut.add(cut)
                if resolving is None:
                    assert world.effects[f"{run_id}:c{n}"] == 1
                before = session.history
                await outer.aclose()
                outer = AsyncExitStack()
                journal = await outer.enter_async_context(backend.journal())
                store = await outer.enter_async_context(backend.store())
                rt = await outer.enter_async_context(Runtime(journal=journal))
                agent = make_agent(world).bind(rt)
                (recovered,) = await rt.recover(sessions=store)
                assert recovered.run_id == run_id and recovered.ok, recovered
                if resolving is None:
                    assert world.effects[f"{run_id}:c{n}"] == 1  # journaled: not run again
                if cut:
                    assert world.effects[cut] == 2  # cut: run again, same key
                else:  # waited again, nobody answered: denied, never ran
                    assert world.effects[f"{run_id}:s{n}"] == 0
                assert await rt.recover() == []
                session = rt.session(agent, KEY, store=store)
                await session.refresh()
                assert session.history[: len(before)] == before
                expect.prompts.append(prompt)
                expect.finished.append((run_id, recovered.content))
                expect.paused = None
            elif op == "replay":
                if not expect.finished:
                    continue
                run_id, content = expect.finished[n % len(expect.finished)]
                calls, effects = world.model_calls, Counter(world.effects)
                again = await replay(journal, run_id)
                assert again.content == content
                assert world.model_calls == calls and world.effects == effects  # no vendor call, no tool call
            await check()
    finally:
        await outer.aclose()
    # Every tool execution once per idempotency key, but the calls a crash cut: twice, with the same key.
    assert all(count == (2 if key in world.cut else 1) for key, count in world.effects.items()), world.effects


def run_on(backend_name: str, backend: Backend, program: list[str]) -> None:
    unraisable: list[Any] = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            anyio.run(run_program, backend, program, backend=backend_name)
            gc.collect()
    finally:
        sys.unraisablehook = old_hook
    assert not [str(w.message) for w in caught], "warnings"
    assert not [repr(u.exc_value) for u in unraisable], "unraisable exceptions"


def sqlite_backend(where: Path) -> Backend:
    runs, sessions = where / "runs.db", where / "sessions.db"
    return Backend(lambda: SqliteStore(sessions), lambda: SqliteJournal(runs), str(runs))


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=int(os.environ.get("SESSION_PROGRAMS", "20")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(program=ops)
def test_sqlite_session_programs_keep_the_documented_promises(backend: str, program: list[str]) -> None:
    with tempfile.TemporaryDirectory() as where:
        run_on(backend, sqlite_backend(Path(where)), program)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=int(os.environ.get("SESSION_PROGRAMS_PG", "5")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(program=ops)
def test_postgres_session_programs_keep_the_documented_promises(
    backend: str, program: list[str], postgres_server: PostgresServer  # noqa: F811
) -> None:
    dsn = postgres_server.new_database()  # one database an example
    try:
        run_on(backend, Backend(lambda: PostgresStore(dsn), lambda: PostgresJournal(dsn), dsn), program)
    finally:
        postgres_server.drop_database(dsn)
