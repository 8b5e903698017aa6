"""A live steer, interrupt or cancel that reaches a *recovered* run while its recorded steps are being served
(docs/durability.md, "Steers").

A recovered run first serves the steps its journal holds, then goes on live.  A steer arriving meanwhile is about
now, not about the recorded past: it waits for the first live boundary and is journaled with the first live model
response, exactly as a steer in a fresh run is — so a second crash and recovery, a replay and a fork all read it
where the recovered run did.  Before, the loop took it at a recorded boundary and the journal dropped it: a second
recovery, a replay or a fork ran without it (and a replay's messages were not the recovered run's).  An interrupt
waits as well (the recorded steps are done work: the run ends at the first live boundary, its result and its
journal agreeing), and a cancellation ends the run ``cancelled``.

SQLite and PostgreSQL; real files, threads and a server: the real clock, generous bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ToolCall, ToolContext, tool
from agentactors.errors import RunInterruptedError
from agentactors.events import Event
from agentactors.journal import fork, replay
from agentactors.loop.live import Interrupt, Steer, each_live_run, live_run
from agentactors.messages import LLMRequest, Message
from agentactors.providers.scripted import ScriptedProvider
from tests.support.journals import journal_on, sql
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio

STEER = "gift wrap it"


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the journal is: a SQLite file, or a new database of the test server (its DSN)."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn



def _crashed(db: str) -> None:
    """What SIGKILL leaves: the runs' ends never written, the dead process's lease free."""
    sql(db, "UPDATE agentactors_runs SET status = 'running', ended = NULL, content = NULL, owner = NULL,"
            " lease_until = NULL")


class Shop:
    """Three tool steps, then an answer naming the user messages the model read.  ``hang``: the tool that hangs, or
    ``"call <n>"``: the model call that does (the process dies inside it); ``ran``: each real tool call, with its
    idempotency key."""

    def __init__(self) -> None:
        self.hang: str | None = None
        self.hanging = anyio.Event()
        self.ran: list[tuple[str, str]] = []

    def agent(self) -> Agent[Any]:
        def make(name: str) -> Any:
            async def body(ctx: ToolContext) -> str:
                self.ran.append((name, ctx.idempotency_key))
                if self.hang == name:
                    self.hanging.set()
                    await anyio.sleep_forever()
                return f"{name} done"

            body.__name__ = name
            body.__doc__ = f"{name.capitalize()} the order."
            return tool(body)

        async def model(request: LLMRequest) -> Any:
            done = sum(1 for m in request.messages if m.role == "tool")
            users = [m.content for m in request.messages if m.role == "user"]
            if self.hang == f"call {done + 1}":
                self.hanging.set()
                await anyio.sleep_forever()
            if done < 3:
                name = ("lookup", "charge", "ship")[done]
                return [ToolCall(f"c{done + 1}", name, {})]
            return "done: " + " / ".join(users)

        return Agent(ScriptedProvider(model), tools=[make("lookup"), make("charge"), make("ship")], name="shop")


class OnEvent:
    """A recorder that calls ``act(rt, event)`` once, on the first event ``when(event)`` says: in the run's own task,
    at the moment the event is told — a control message arriving exactly there."""

    def __init__(self, when: Callable[[Event], bool], act: Callable[[Event], None]) -> None:
        self.when = when
        self.act = act
        self.done = False
        self.rt: Any = None  # the runtime whose run it addresses

    def record(self, event: Event) -> None:
        if not self.done and self.when(event):
            self.done = True
            self.act(event)


def _replayed(call_id: str) -> Callable[[Event], bool]:
    return lambda e: e.type == "tools.finished" and e.data.get("replayed") is True and e.data["call_id"] == call_id


async def _first_crash(db: str, shop: Shop, hang: str) -> str:
    """A fresh run whose process dies inside tool ``hang``: its run id."""
    shop.hang = hang
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        agent = shop.agent().bind(rt)
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.run, "order a lamp")
            with anyio.fail_after(20):
                await shop.hanging.wait()
            tg.cancel_scope.cancel()
        (run_id,) = [r for (r,) in sql(db, "SELECT run_id FROM agentactors_runs")]
    _crashed(db)
    shop.hanging = anyio.Event()
    return str(run_id)


async def _recover_crashing(db: str, shop: Shop, hang: str, recorder: Any) -> None:
    """Recover the journal's run with ``recorder`` watching; the process dies again inside tool ``hang``."""
    shop.hang = hang
    async with journal_on(db) as journal, Runtime(recorders=[recorder], journal=journal) as rt:
        _held = shop.agent().bind(rt)  # (held: a runtime keeps its bound agents weakly)
        recorder.rt = rt
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.recover)
            with anyio.fail_after(20):
                await shop.hanging.wait()
            tg.cancel_scope.cancel()
    _crashed(db)
    shop.hanging = anyio.Event()


def _steer_at(when: Callable[[Event], bool]) -> OnEvent:
    recorder: OnEvent

    def act(event: Event) -> None:
        run = live_run(recorder.rt, event.run_id or "")
        assert run is not None
        run.control(Steer(Message.user(STEER)))

    recorder = OnEvent(when, act)
    return recorder


async def test_a_steer_during_recorded_steps_survives_a_second_crash_and_replays(db: str) -> None:
    """Recovered after a crash in ``charge`` (step 2), the run is steered while its step 1 is served; it crashes
    again in ``ship`` (step 3, live).  The second recovery must read the steer before step 3, as the first did:
    before, it answered without it, and a replay or a fork from step 3 did not see it either."""
    shop = Shop()
    run_id = await _first_crash(db, shop, hang="charge")
    await _recover_crashing(db, shop, "ship", _steer_at(_replayed("c1")))
    shop.hang = None
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        agent = shop.agent().bind(rt)
        (recovered,) = await rt.recover()
        assert recovered.run_id == run_id
        assert recovered.content == f"done: order a lamp / {STEER}"
        recorded = await journal.load_run(run_id)
        assert [s.steers for s in recorded.steps] == [(), (), (Message.user(STEER),), ()]
        # ship ran twice (cut once), with one key; charge twice (cut once), with one key
        assert [n for n, _ in shop.ran].count("ship") == 2 and len({k for n, k in shop.ran if n == "ship"}) == 1
        seen = InMemoryRecorder()
        again = await replay(journal, run_id, recorders=[seen])
        assert again.content == recovered.content and again.messages == recovered.messages
        assert [e.data["text"] for e in seen.events if e.type == "run.steered"] == [STEER]
        forked = await fork(journal, run_id, 3, agent=agent)
        assert forked.content == recovered.content


async def test_a_steer_during_recorded_steps_is_read_by_the_first_live_call(db: str) -> None:
    """The steer waits for the first live boundary (before step 3 here) and is committed with step 3's response:
    where a replay puts it back, so the replayed messages are the recovered run's."""
    shop = Shop()
    run_id = await _first_crash(db, shop, hang="charge")
    steer = _steer_at(_replayed("c1"))
    seen = InMemoryRecorder()
    shop.hang = None
    async with journal_on(db) as journal, Runtime(recorders=[steer, seen], journal=journal) as rt:
        _held = shop.agent().bind(rt)  # (held: a runtime keeps its bound agents weakly)
        steer.rt = rt
        (recovered,) = await rt.recover()
        assert recovered.content == f"done: order a lamp / {STEER}"
        (taken,) = [e for e in seen.events if e.type == "run.steered"]
        assert taken.step == 2  # after step 2 (served, then its tool run live), before step 3's call
        recorded = await journal.load_run(run_id)
        assert [s.steers for s in recorded.steps] == [(), (), (Message.user(STEER),), ()]
        again = await replay(journal, run_id)
        assert again.messages == recovered.messages


async def test_a_steer_at_the_boundary_after_the_last_recorded_step_is_journaled(db: str) -> None:
    """The crash came inside model call 3: the recording ends with step 2's results, and a steer arriving as they
    are told again is taken at the boundary between the last recorded step and the first live one — committed
    with response 3, it survives the crash inside ``ship`` that follows."""
    shop = Shop()
    run_id = await _first_crash(db, shop, hang="call 3")
    await _recover_crashing(db, shop, "ship", _steer_at(_replayed("c2")))
    shop.hang = None
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        _held = shop.agent().bind(rt)  # (held: a runtime keeps its bound agents weakly)
        (recovered,) = await rt.recover()
        assert recovered.content == f"done: order a lamp / {STEER}"
        recorded = await journal.load_run(run_id)
        assert [s.steers for s in recorded.steps] == [(), (), (Message.user(STEER),), ()]
        again = await replay(journal, run_id)
        assert again.content == recovered.content and again.messages == recovered.messages


async def test_an_interrupt_during_recorded_steps_ends_the_run_at_the_first_live_boundary(db: str) -> None:
    """An interrupt while step 1 is served: the recorded steps are work done, and the process died inside step 3's
    ``ship`` (its response committed: the call had started).  The run ends after the step it was in — ``ship`` run
    again, same key, no further model call — its result and its journal agreeing.  Before, it ended after step 1:
    its result without the steps the journal holds, and the call the crash cut never run again."""
    shop = Shop()
    run_id = await _first_crash(db, shop, hang="ship")
    recorder: OnEvent

    def act(event: Event) -> None:
        run = live_run(recorder.rt, event.run_id or "")
        assert run is not None
        run.control(Interrupt("enough"))

    recorder = OnEvent(_replayed("c1"), act)
    shop.hang = None
    async with journal_on(db) as journal, Runtime(recorders=[recorder], journal=journal) as rt:
        _held = shop.agent().bind(rt)  # (held: a runtime keeps its bound agents weakly)
        recorder.rt = rt
        (recovered,) = await rt.recover()
        assert isinstance(recovered.error, RunInterruptedError)
        assert recovered.steps == 3 and [n for n, _ in shop.ran] == ["lookup", "charge", "ship", "ship"]
        assert len({k for n, k in shop.ran if n == "ship"}) == 1
        assert [m.role for m in recovered.messages].count("tool") == 3
        assert (await journal.unfinished()) == []
        recorded = await journal.load_run(run_id)
        assert recorded.status == "finished" and len(recorded.steps) == 3 and recorded.steps[2].results is not None


async def test_a_cancel_during_recorded_steps_ends_the_run_cancelled(db: str) -> None:
    """Cancelled through its handle while its step 1 is served, the recovered run ends as a fresh run cancelled so
    does: its result ``cancelled``, its journal row ended (never recovered again), no tool run."""
    shop = Shop()
    run_id = await _first_crash(db, shop, hang="charge")
    ran = len(shop.ran)
    recorder: OnEvent

    def act(event: Event) -> None:
        run = live_run(recorder.rt, event.run_id or "")
        assert run is not None
        run.cancel()

    recorder = OnEvent(_replayed("c1"), act)
    shop.hang = None
    async with journal_on(db) as journal, Runtime(recorders=[recorder], journal=journal) as rt:
        _held = shop.agent().bind(rt)  # (held: a runtime keeps its bound agents weakly)
        recorder.rt = rt
        (recovered,) = await rt.recover()
        assert recovered.cancelled
        assert len(shop.ran) == ran
        assert (await journal.unfinished()) == []
        # (a handle's cancel is ended "cancelled", as any cancelled run: not recovered again)
        assert (await journal.load_run(run_id)).status == "cancelled"


class SteeredShop(Shop):
    """A recording that went on past an answer: a steer came during model call 2, which answered "A"; the run went on
    for it (call 3: ``charge``), and the process died inside ``charge``."""

    def __init__(self) -> None:
        super().__init__()
        self.rt: Any = None
        self.steer_in_call_2 = False

    def agent(self) -> Agent[Any]:
        base = super().agent()

        async def model(request: LLMRequest) -> Any:
            done = sum(1 for m in request.messages if m.role == "tool")
            users = [m.content for m in request.messages if m.role == "user"]
            if done == 0:
                return [ToolCall("c1", "lookup", {})]
            if done == 1 and STEER not in users:
                if self.steer_in_call_2:
                    (run,) = each_live_run(self.rt)
                    run.control(Steer(Message.user(STEER)))
                return "A (before the steer)"
            if done == 1:
                return [ToolCall("c2", "charge", {})]
            return "done: " + " / ".join(users)

        return Agent(ScriptedProvider(model), tools=base.tools, name="shop")


async def test_an_interrupt_while_a_recording_goes_on_past_an_answer_ends_at_the_first_live_boundary(db: str) -> None:
    """The recording went on past answer "A" for a steer; an interrupt arrives while step 1 is served.  Before, the run
    ended on the superseded "A" as a success, dropped the recorded steps (``charge``, cut by the crash, never run
    again) and left a journal no replay could follow.  Now it goes on through the recording, runs ``charge`` again
    with the same key, and ends interrupted at the first live boundary; its replay ends the same way."""
    shop = SteeredShop()
    shop.steer_in_call_2 = True
    shop.hang = "charge"
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        shop.rt = rt
        agent = shop.agent().bind(rt)
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.run, "order a lamp")
            with anyio.fail_after(20):
                await shop.hanging.wait()
            tg.cancel_scope.cancel()
        (run_id,) = [str(r) for (r,) in sql(db, "SELECT run_id FROM agentactors_runs")]
    _crashed(db)
    shop.hang, shop.hanging, shop.steer_in_call_2 = None, anyio.Event(), False
    recorder: OnEvent

    def act(event: Event) -> None:
        run = live_run(recorder.rt, event.run_id or "")
        assert run is not None
        run.control(Interrupt("enough"))

    recorder = OnEvent(_replayed("c1"), act)
    async with journal_on(db) as journal, Runtime(recorders=[recorder], journal=journal) as rt:
        shop.rt = rt
        _held = shop.agent().bind(rt)  # (held: a runtime keeps its bound agents weakly)
        recorder.rt = rt
        (recovered,) = await rt.recover()
        assert isinstance(recovered.error, RunInterruptedError), (recovered.ok, recovered.content)
        assert recovered.steps == 3
        assert [n for n, _ in shop.ran] == ["lookup", "charge", "charge"]  # the cut call, run again
        assert len({k for n, k in shop.ran if n == "charge"}) == 1  # with the same key
        assert STEER in [m.content for m in recovered.messages if m.role == "user"]  # the recorded steer kept
        assert (await journal.unfinished()) == []
        again = await replay(journal, run_id)
        assert isinstance(again.error, RunInterruptedError) and again.steps == recovered.steps
