"""Whether an actor may be asked directly is stated at spawn (``direct=``), and a direct actor's ``on_start``.

``direct=False``: every handler runs in a worker task, never in an asker's.  ``direct=True`` (the default)
with an ``on_start``: the first ask runs ``on_start`` in the asker's task, in the runtime's own context,
then its handler; asks arriving while ``on_start`` awaits queue and are served after.  An asker that gives
up during ``on_start`` leaves the actor unstarted (the next message runs ``on_start`` again); an
``on_start`` that raises is supervised as it would be in a worker.
"""

from __future__ import annotations

import contextvars
from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.actors.ref import cell_of
from agentactors.errors import ActorStopped, AskTimeout
from agentactors.events import InMemoryRecorder

pytestmark = pytest.mark.anyio

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("direct_spawn_var", default="unset")


def _tasks() -> int:
    rt = Runtime.current()
    assert rt is not None
    return rt.stats().tasks


class Starting:
    """Records where ``on_start`` and the handlers ran; ``gate`` holds on_start; ``fail`` raises in it."""

    built = 0

    def __init__(self, gate: anyio.Event | None = None, fail: int = 0) -> None:
        type(self).built += 1
        self.incarnation = type(self).built
        self.gate = gate
        self.fail = fail
        self.starts: list[tuple[int, str]] = []  # (runtime tasks, VAR) seen by on_start
        self.started = 0  # on_start runs that completed
        self.stopped = 0
        self.handled: list[tuple[Any, int, str]] = []  # (message, runtime tasks, VAR)

    async def on_start(self) -> None:
        self.starts.append((_tasks(), VAR.get()))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            self.fail -= 1
            raise ValueError("on_start failed")
        self.started += 1

    async def on_stop(self) -> None:
        self.stopped += 1

    async def receive(self, message: Any) -> Any:
        self.handled.append((message, _tasks(), VAR.get()))
        return (self.incarnation, message)


# -- direct=False ----------------------------------------------------------------------------------


async def test_a_non_direct_actor_never_runs_a_handler_in_the_askers_task() -> None:
    class Hookless:
        def __init__(self) -> None:
            self.tasks: list[int] = []

        async def receive(self, message: Any) -> Any:
            self.tasks.append(anyio.get_current_task().id)
            return message

    class WithStart(Hookless):
        async def on_start(self) -> None:
            self.tasks.append(anyio.get_current_task().id)

    async with Runtime() as rt:
        asker = anyio.get_current_task().id
        hookless, with_start = Hookless(), WithStart()
        refs = [rt.spawn(hookless, direct=False), rt.spawn(with_start, direct=False, concurrency=4)]
        for i in range(5):
            for ref in refs:
                assert await ref.ask(i) == i
                await rt.wait_idle()  # idle, started, nothing queued: a direct actor would run it here
                assert rt.stats().tasks == 0
        assert len(hookless.tasks) == 5 and asker not in hookless.tasks  # every handler in a worker
        assert len(with_start.tasks) == 6 and asker not in with_start.tasks  # on_start too


async def test_spawn_keeps_one_shared_setting_per_distinct_direct_flag() -> None:
    async with Runtime() as rt:
        a, b = rt.spawn(Starting()), rt.spawn(Starting())
        c = rt.spawn(Starting(), direct=False)
        assert cell_of(a).spec is cell_of(b).spec  # shared, not one per actor
        assert cell_of(c).spec is not cell_of(a).spec
        assert (cell_of(a).spec.direct, cell_of(c).spec.direct) == (True, False)


# -- on_start of a direct actor --------------------------------------------------------------------


async def test_the_first_ask_runs_on_start_in_the_askers_task_in_the_runtimes_context() -> None:
    async with Runtime() as rt:
        actor = Starting()
        ref = rt.spawn(actor)
        assert not cell_of(ref).started
        VAR.set("asker")
        assert await ref.ask("first") == (actor.incarnation, "first")
        assert actor.starts == [(0, "unset")]  # no worker task, and not the asker's contextvars
        assert actor.handled == [("first", 0, "asker")]  # the handler does see the asker's
        assert await ref.ask("second") == (actor.incarnation, "second")
        assert actor.started == 1 and len(actor.starts) == 1
        assert rt.stats().tasks == 0
    assert actor.stopped == 1


async def test_an_actor_without_on_start_is_started_at_spawn() -> None:
    class NoHooks:
        async def receive(self, message: Any) -> Any:
            return message

    async with Runtime() as rt:
        ref = rt.spawn(NoHooks())
        assert cell_of(ref).started


async def test_asks_and_tells_arriving_while_on_start_awaits_queue_and_follow_in_order() -> None:
    gate = anyio.Event()
    async with Runtime() as rt:
        actor = Starting(gate)
        ref = rt.spawn(actor)
        answers: dict[str, Any] = {}

        async def asker(key: str) -> None:
            answers[key] = await ref.ask(key)

        async with anyio.create_task_group() as tg:
            tg.start_soon(asker, "first")
            await anyio.wait_all_tasks_blocked()
            assert actor.starts == [(0, "unset")]  # in the first asker's task
            tg.start_soon(asker, "second")
            await anyio.wait_all_tasks_blocked()
            await ref.tell("told")
            stats = rt.stats()
            assert (stats.queued, stats.tasks, stats.busy) == (2, 0, 0)  # nobody starts a second on_start
            gate.set()
        await rt.wait_idle()
        assert [m for m, _, _ in actor.handled] == ["first", "second", "told"]
        assert actor.handled[0][1] == 0  # the first asker's own task
        assert answers == {"first": (actor.incarnation, "first"), "second": (actor.incarnation, "second")}
        assert len(actor.starts) == 1 and actor.started == 1


async def test_a_concurrent_actor_serves_what_queued_during_on_start_up_to_its_concurrency() -> None:
    gate = anyio.Event()
    release = anyio.Event()

    class Holding(Starting):
        async def receive(self, message: Any) -> Any:
            self.handled.append((message, _tasks(), VAR.get()))
            await release.wait()
            return message

    async with Runtime() as rt:
        actor = Holding(gate)
        ref = rt.spawn(actor, concurrency=3)
        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(ref.ask, i)
                await anyio.wait_all_tasks_blocked()
            gate.set()
            await anyio.wait_all_tasks_blocked()
            stats = rt.stats()
            assert (stats.busy, stats.queued) == (3, 1)  # the starter plus two workers; one waits
            release.set()
        assert sorted(m for m, _, _ in actor.handled) == [0, 1, 2, 3]


@pytest.mark.virtual_time
async def test_an_asker_cancelled_during_on_start_leaves_the_actor_unstarted_and_the_next_ask_starts_it() -> None:
    gate = anyio.Event()
    async with Runtime() as rt:
        actor = Starting(gate)
        ref = rt.spawn(actor)
        with anyio.move_on_after(1.0) as scope:
            await ref.ask("never")
        assert scope.cancelled_caught
        assert not cell_of(ref).started and actor.started == 0
        assert actor.handled == []
        assert rt.stats().busy == 0 and cell_of(ref).slots == 0
        gate.set()
        assert await ref.ask("next") == (actor.incarnation, "next")  # on_start runs again, completes
        assert len(actor.starts) == 2 and actor.started == 1
        assert [m for m, _, _ in actor.handled] == ["next"]


@pytest.mark.virtual_time
async def test_what_queued_behind_a_cancelled_on_start_is_served_by_a_worker_that_starts_over() -> None:
    gate = anyio.Event()
    async with Runtime() as rt:
        actor = Starting(gate)
        ref = rt.spawn(actor)
        answers: list[Any] = []

        async def second() -> None:
            answers.append(await ref.ask("second"))

        async with anyio.create_task_group() as tg:
            with anyio.move_on_after(1.0):
                tg.start_soon(second)  # queues behind the first asker, which is in on_start
                await ref.ask("first")
            assert not cell_of(ref).started
            await anyio.wait_all_tasks_blocked()
            assert rt.stats().tasks == 1  # a worker took over, and runs on_start again
            gate.set()
        assert answers == [(actor.incarnation, "second")]
        assert [(m, tasks) for m, tasks, _ in actor.handled] == [("second", 1)]
        assert [tasks for tasks, _ in actor.starts] == [0, 1]
        assert actor.started == 1


@pytest.mark.virtual_time
async def test_an_ask_timeout_during_on_start_is_an_ask_timeout_and_the_actor_stays_unstarted() -> None:
    gate = anyio.Event()
    async with Runtime() as rt:
        actor = Starting(gate)
        ref = rt.spawn(actor)
        start = anyio.current_time()
        with pytest.raises(AskTimeout):
            await ref.ask("slow", timeout=2.0)
        assert anyio.current_time() - start == pytest.approx(2.0)
        assert not cell_of(ref).started
        gate.set()
        assert await ref.ask("after", timeout=2.0) == (actor.incarnation, "after")


async def test_stopping_during_a_direct_on_start_cancels_it_and_on_stop_does_not_run() -> None:
    gate = anyio.Event()
    async with Runtime() as rt:
        actor = Starting(gate)
        ref = rt.spawn(actor)
        errors: list[BaseException] = []

        async def asker() -> None:
            try:
                await ref.ask("x")
            except ActorStopped as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(asker)
            await anyio.wait_all_tasks_blocked()
            await rt.stop(ref, drain=False)
        assert len(errors) == 1
        assert actor.started == 0 and actor.stopped == 0  # never started: nothing to stop
        assert rt.stats().actors == 0


async def test_on_start_raising_in_the_first_askers_task_stops_a_resuming_actor() -> None:
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]) as rt:
        actor = Starting(fail=1)
        ref = rt.spawn(actor)
        with pytest.raises(ActorStopped):
            await ref.ask("x")
        assert ref.stopped
        assert actor.handled == []
        await rt.wait_idle()
        assert rt.stats().actors == 0
    failed = [e for e in recorder.events if e.type == "actor.failed"]
    assert [(e.phase, e.policy) for e in failed] == [("on_start", "stop")]


async def test_on_start_raising_under_restart_hands_the_message_to_the_new_incarnation() -> None:
    recorder = InMemoryRecorder()
    first = Starting.built + 1

    def build() -> Starting:
        return Starting(fail=1 if Starting.built + 1 == first else 0)

    async with Runtime(recorders=[recorder]) as rt:
        ref = rt.spawn(build, on_failure="restart")
        old: Starting = ref.actor
        assert await ref.ask("x") == (old.incarnation + 1, "x")  # answered by the rebuilt actor
        new: Starting = ref.actor
        assert new is not old and new.started == 1
        assert old.handled == [] and [m for m, _, _ in new.handled] == ["x"]
        assert new.starts[0][0] == 1  # the restart ran in a worker, not in the asker's task
        assert await ref.ask("y") == (new.incarnation, "y")
    assert [e.type for e in recorder.events if e.type in ("actor.failed", "actor.restarted")] == [
        "actor.failed",
        "actor.restarted",
    ]
