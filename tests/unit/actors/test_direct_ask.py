"""The direct ask: an ask to a started, open actor with an empty mailbox and a free handler slot runs its
handler in the asker's task (in a copy of the asker's context) instead of through the mailbox.

What must hold: the path is taken (no worker task); contextvars stay isolated both ways; a
``concurrency=1`` actor never runs two handlers at once and keeps per-sender order with tells and asks
arriving during a direct handler; supervision, ``stop`` (drain or not), runtime shutdown, ``AskTimeout``
and the asker's cancellation behave as through the mailbox.
"""

from __future__ import annotations

import contextvars
from typing import Any

import anyio
import pytest
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors.actors import Runtime
from agentactors.actors.ref import ActorRef, cell_of
from agentactors.errors import ActorStopped, AskTimeout
from agentactors.events import InMemoryRecorder
from agentactors.testing import VirtualTimeLoop

pytestmark = pytest.mark.anyio

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("direct_ask_var", default="unset")
HANDLER_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("direct_ask_handler_var", default="unset")


class Probe:
    """Records what it sees; ``("wait", event)`` waits for the event, ``("sleep", s)`` sleeps, ``"boom"`` raises."""

    built = 0

    def __init__(self) -> None:
        type(self).built += 1
        self.incarnation = type(self).built
        self.handled: list[Any] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.cancelled: list[Any] = []
        self.tasks_seen: list[int] = []
        self.started = 0
        self.stopped = 0

    async def on_start(self) -> None:
        self.started += 1

    async def on_stop(self) -> None:
        self.stopped += 1

    async def receive(self, message: Any) -> Any:
        rt = Runtime.current()
        assert rt is not None
        self.tasks_seen.append(rt.stats().tasks)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if message == "boom":
                raise ValueError("boom")
            if isinstance(message, tuple) and message[0] == "wait":
                await message[1].wait()
            elif isinstance(message, tuple) and message[0] == "sleep":
                await anyio.sleep(message[1])
            self.handled.append(message)
            return (self.incarnation, message)
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(message)
            raise
        finally:
            self.in_flight -= 1


async def warm(rt: Runtime, ref: ActorRef) -> None:
    """Start the actor (its first ask runs on_start, in the asker's task) and let it go idle."""
    await ref.ask("warm-up")
    await rt.wait_idle()
    assert rt.stats().tasks == 0


async def test_an_ask_to_an_idle_started_actor_runs_without_a_worker_task() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe)
        actor: Probe = ref.actor
        await ref.ask("first")
        assert actor.tasks_seen == [0]  # not started yet: the asker runs on_start, then the handler
        assert actor.started == 1
        await rt.wait_idle()
        for i in range(5):
            assert await ref.ask(i) == (actor.incarnation, i)
        assert actor.tasks_seen == [0, 0, 0, 0, 0, 0]  # handled in the asker's task
        stats = rt.stats()
        assert (stats.tasks, stats.busy, stats.queued) == (0, 0, 0)
        assert cell_of(ref).mailbox is None  # idle: no buffer
        assert cell_of(ref).slots == 0


async def test_a_direct_handler_counts_as_busy() -> None:
    busy: list[int] = []

    class Busy:
        async def receive(self, message: Any) -> None:
            rt = Runtime.current()
            assert rt is not None
            busy.append(rt.stats().busy)

    async with Runtime() as rt:
        ref = rt.spawn(Busy())
        await warm(rt, ref)
        await ref.ask("x")
        assert busy == [1, 1]
        assert rt.stats().busy == 0


async def test_the_handler_sees_the_askers_contextvars_and_its_changes_stay_inside() -> None:
    seen: list[tuple[str, str]] = []

    class Setter:
        async def receive(self, message: str) -> str:
            seen.append((VAR.get(), HANDLER_VAR.get()))
            VAR.set("changed-by-handler")
            HANDLER_VAR.set(message)
            await anyio.lowlevel.checkpoint()  # across a suspension, too
            return VAR.get()

    async with Runtime() as rt:
        ref = rt.spawn(Setter())
        await warm(rt, ref)
        VAR.set("asker")
        assert await ref.ask("one") == "changed-by-handler"
        assert (VAR.get(), HANDLER_VAR.get()) == ("asker", "unset")
        assert await ref.ask("two") == "changed-by-handler"
        assert seen == [("unset", "unset"), ("asker", "unset"), ("asker", "unset")]
        assert ref.actor is not None and rt.stats().tasks == 0


async def test_runtime_current_is_the_actors_runtime_in_a_direct_handler() -> None:
    class WhichRuntime:
        async def receive(self, message: Any) -> Runtime | None:
            return Runtime.current()

    async with Runtime() as outer:
        ref = outer.spawn(WhichRuntime())
        await warm(outer, ref)
        async with Runtime() as inner:
            assert Runtime.current() is inner
            assert await ref.ask("which") is outer
            assert Runtime.current() is inner


async def test_a_tell_queued_before_an_ask_keeps_the_ask_behind_it() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe)
        actor: Probe = ref.actor
        await warm(rt, ref)
        await ref.tell("told")
        assert await ref.ask("asked") == (actor.incarnation, "asked")
        assert actor.handled == ["warm-up", "told", "asked"]
        assert actor.tasks_seen[1:] == [1, 1]  # both through the worker the tell started


@pytest.mark.virtual_time
async def test_messages_arriving_during_a_direct_handler_queue_and_follow_in_order() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe)
        actor: Probe = ref.actor
        await warm(rt, ref)
        gate = anyio.Event()
        answers: dict[str, Any] = {}

        async def asker(key: str, message: Any) -> None:
            answers[key] = await ref.ask(message)

        async with anyio.create_task_group() as tg:
            tg.start_soon(asker, "direct", ("wait", gate))
            await anyio.wait_all_tasks_blocked()
            assert actor.tasks_seen[-1] == 0  # the direct path
            await ref.tell("t1")
            tg.start_soon(asker, "a2", "a2")
            await anyio.wait_all_tasks_blocked()
            await ref.tell("t3")
            await anyio.wait_all_tasks_blocked()
            stats = rt.stats()
            assert (stats.busy, stats.queued, stats.tasks) == (1, 3, 0)
            assert actor.handled == ["warm-up"]
            gate.set()
        await rt.wait_idle()
        assert actor.handled == ["warm-up", ("wait", gate), "t1", "a2", "t3"]
        assert actor.max_in_flight == 1
        assert answers == {"direct": (actor.incarnation, ("wait", gate)), "a2": (actor.incarnation, "a2")}
        stats = rt.stats()
        assert (stats.tasks, stats.busy, stats.queued) == (0, 0, 0)


async def test_a_concurrent_actor_runs_direct_handlers_side_by_side_up_to_its_concurrency() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe, concurrency=2)
        actor: Probe = ref.actor
        await warm(rt, ref)
        gate = anyio.Event()
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(ref.ask, ("wait", gate))
                await anyio.wait_all_tasks_blocked()
            assert actor.tasks_seen[1:] == [0, 0]  # two direct; the third queued (both slots taken)
            assert (rt.stats().busy, rt.stats().queued) == (2, 1)
            gate.set()
        assert actor.max_in_flight == 2
        assert len(actor.handled) == 4


# -- supervision -------------------------------------------------------------------------------------


async def test_resume_raises_to_the_asker_and_the_actor_goes_on_directly() -> None:
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]) as rt:
        ref = rt.spawn(Probe)
        actor: Probe = ref.actor
        await warm(rt, ref)
        with pytest.raises(ValueError, match="boom"):
            await ref.ask("boom")
        assert await ref.ask("after") == (actor.incarnation, "after")
        assert actor.tasks_seen[1:] == [0, 0]
        assert ref.actor is actor
    assert not [e for e in recorder.events if e.type == "actor.failed"]  # the asker got the error


async def test_restart_rebuilds_the_actor_and_queued_messages_go_to_the_new_one() -> None:
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]) as rt:
        ref = rt.spawn(Probe, on_failure="restart")
        old: Probe = ref.actor
        await warm(rt, ref)

        gate = anyio.Event()

        async def failing() -> None:
            with pytest.raises(ValueError, match="boom"):
                await ref.ask(("wait", gate))

        # A message that waits, then a "boom" via the direct path with a tell queued behind it.
        old_receive = old.receive

        async def receive(message: Any) -> Any:
            if isinstance(message, tuple) and message[0] == "wait":
                await message[1].wait()
                raise ValueError("boom")
            return await old_receive(message)

        old.receive = receive  # type: ignore[method-assign]
        async with anyio.create_task_group() as tg:
            tg.start_soon(failing)
            await anyio.wait_all_tasks_blocked()
            await ref.tell("queued")
            gate.set()
        await rt.wait_idle()
        new: Probe = ref.actor
        assert new is not old
        assert old.stopped == 1 and new.started == 1
        assert new.handled == ["queued"]  # handled by the rebuilt actor, after the restart
        assert len(cell_of(ref).restarts) == 1
        assert await ref.ask("next") == (new.incarnation, "next")
        assert rt.stats().busy == 0
    assert [e.type for e in recorder.events if e.type in ("actor.failed", "actor.restarted")] == [
        "actor.failed",
        "actor.restarted",
    ]


async def test_restart_via_direct_asks_stops_after_max_restarts() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe, on_failure="restart", max_restarts=2)
        for _ in range(2):
            await warm(rt, ref)
            with pytest.raises(ValueError):
                await ref.ask("boom")
            await rt.wait_idle()
            assert not ref.stopped
        await warm(rt, ref)
        assert rt.stats().tasks == 0
        with pytest.raises(ValueError):
            await ref.ask("boom")  # the third restart within the window: the actor stops instead
        with pytest.raises(ActorStopped):
            await ref.ask("after")
        assert ref.stopped


async def test_stop_policy_stops_the_actor_before_the_asker_sees_the_error() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe, on_failure="stop")
        actor: Probe = ref.actor
        await warm(rt, ref)
        with pytest.raises(ValueError, match="boom"):
            await ref.ask("boom")
        assert ref.stopped
        with pytest.raises(ActorStopped):
            await ref.ask("after")
        await rt.wait_idle()
        assert actor.stopped == 1  # finalized (on_stop ran) by a runtime task
        assert rt.stats().actors == 0


async def test_escalate_from_a_direct_ask_leaves_the_block_as_the_bare_exception() -> None:
    reached: list[str] = []
    rt = Runtime()
    with pytest.raises(ValueError, match="boom") as info:
        async with rt:
            ref = rt.spawn(Probe, on_failure="escalate")
            await warm(rt, ref)

            async def side() -> None:
                try:
                    await ref.ask("boom")
                except ValueError:
                    reached.append("asker got it")
                    raise

            rt.spawn_task(side)
            await anyio.sleep_forever()  # cancelled by the escalation
    assert type(info.value) is ValueError
    assert reached == ["asker got it"]
    assert ref.stopped


# -- stopping ----------------------------------------------------------------------------------------


async def test_stop_with_drain_waits_for_a_direct_handler() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe)
        actor: Probe = ref.actor
        await warm(rt, ref)
        gate = anyio.Event()
        answers: list[Any] = []
        stopped = anyio.Event()

        async def stopper() -> None:
            await rt.stop(ref, drain=True)
            stopped.set()

        async with anyio.create_task_group() as tg:

            async def asker() -> None:
                answers.append(await ref.ask(("wait", gate)))

            tg.start_soon(asker)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(stopper)
            await anyio.wait_all_tasks_blocked()
            assert not stopped.is_set()
            with pytest.raises(ActorStopped):
                await ref.ask("rejected")
            gate.set()
        assert stopped.is_set()
        assert answers == [(actor.incarnation, ("wait", gate))]
        assert actor.stopped == 1 and actor.cancelled == []


@pytest.mark.virtual_time
async def test_stop_with_drain_times_out_and_cancels_a_stuck_direct_handler() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe)
        actor: Probe = ref.actor
        await warm(rt, ref)
        outcome: list[str] = []

        async def asker() -> None:
            try:
                await ref.ask(("sleep", 100.0))
            except ActorStopped:
                outcome.append(f"stopped at {anyio.current_time() - start:g}")

        start = anyio.current_time()
        async with anyio.create_task_group() as tg:
            tg.start_soon(asker)
            await anyio.wait_all_tasks_blocked()
            await rt.stop(ref, drain=True, timeout=2.0)
        assert outcome == ["stopped at 2"]
        assert actor.cancelled == [("sleep", 100.0)]
        assert actor.stopped == 1


async def test_stop_without_drain_cancels_a_direct_handler() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe)
        actor: Probe = ref.actor
        await warm(rt, ref)
        gate = anyio.Event()
        errors: list[BaseException] = []

        async def asker() -> None:
            try:
                await ref.ask(("wait", gate))
            except ActorStopped as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(asker)
            await anyio.wait_all_tasks_blocked()
            await ref.tell("queued-then-dropped")
            await rt.stop(ref, drain=False)
        assert len(errors) == 1
        assert actor.cancelled == [("wait", gate)]
        assert "queued-then-dropped" not in actor.handled
        assert actor.stopped == 1


@pytest.mark.virtual_time
async def test_leaving_the_runtime_cancels_a_direct_handler_after_the_drain_timeout() -> None:
    actor = Probe()
    start = anyio.current_time()
    async with Runtime(drain_timeout=3.0) as rt:
        ref = rt.spawn(actor)
        await warm(rt, ref)

        async def asker() -> None:
            await ref.ask(("sleep", 100.0))

        rt.spawn_task(asker)
        await anyio.wait_all_tasks_blocked()
        assert actor.tasks_seen[-1] == 1  # the asker's own (runtime) task; no worker
    assert anyio.current_time() - start == pytest.approx(3.0)
    assert actor.cancelled == [("sleep", 100.0)]
    assert actor.stopped == 1


# -- timeouts and cancellation -------------------------------------------------------------------------


@pytest.mark.virtual_time
async def test_ask_timeout_cancels_the_direct_handler_and_the_actor_goes_on() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe)
        actor: Probe = ref.actor
        await warm(rt, ref)
        start = anyio.current_time()
        with pytest.raises(AskTimeout):
            await ref.ask(("sleep", 10.0), timeout=1.5)
        assert anyio.current_time() - start == pytest.approx(1.5)
        assert actor.cancelled == [("sleep", 10.0)]
        assert await ref.ask(("sleep", 1.0), timeout=2.0) == (actor.incarnation, ("sleep", 1.0))
        assert actor.tasks_seen[1:] == [0, 0]
        stats = rt.stats()
        assert (stats.tasks, stats.busy, stats.queued) == (0, 0, 0)


@pytest.mark.virtual_time
async def test_an_answer_finished_at_the_deadline_without_a_checkpoint_is_returned() -> None:
    class Shielded:
        async def receive(self, seconds: float) -> str:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(seconds)
            return "done"

    async with Runtime() as rt:
        ref = rt.spawn(Shielded())
        await warm_shielded(rt, ref)
        assert await ref.ask(1.0, timeout=1.0) == "done"
        # Shielded past the deadline: the asker cannot leave its own task's handler behind, so it
        # waits for it — and still gets AskTimeout, not a late answer.
        start = anyio.current_time()
        with pytest.raises(AskTimeout):
            await ref.ask(2.0, timeout=1.0)
        assert anyio.current_time() - start == pytest.approx(2.0)
        assert rt.stats().busy == 0


async def warm_shielded(rt: Runtime, ref: ActorRef) -> None:
    await ref.ask(0.0)
    await rt.wait_idle()


@pytest.mark.virtual_time
async def test_cancelling_the_asker_cancels_the_direct_handler() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe)
        actor: Probe = ref.actor
        await warm(rt, ref)
        with anyio.move_on_after(2.0) as scope:
            await ref.ask(("sleep", 50.0))
        assert scope.cancelled_caught
        assert actor.cancelled == [("sleep", 50.0)]
        assert await ref.ask("again") == (actor.incarnation, "again")
        stats = rt.stats()
        assert (stats.tasks, stats.busy, stats.queued) == (0, 0, 0)


async def test_an_already_cancelled_asker_does_not_run_the_handler() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Probe)
        actor: Probe = ref.actor
        await warm(rt, ref)
        with anyio.CancelScope() as scope:
            scope.cancel()
            await ref.ask("never")
        assert actor.handled == ["warm-up"]
        assert rt.stats().busy == 0


# -- property: exclusion and order on virtual time -------------------------------------------------------

Op = tuple[str, float, float]  # (kind, handler seconds, ask timeout)

ops = st.lists(
    st.tuples(
        st.sampled_from(["tell", "ask", "ask", "ask_timeout", "pause"]),
        st.sampled_from([0.0, 0.5, 1.0, 2.0]),
        st.sampled_from([0.25, 1.5, 3.0]),
    ),
    min_size=1,
    max_size=20,
)


async def _scenario(concurrency: int, senders: list[list[Op]]) -> None:
    handled: list[tuple[int, int]] = []
    direct: list[tuple[int, int]] = []
    state = {"in_flight": 0, "max": 0}

    class Worker:
        async def receive(self, message: tuple[int, int, float]) -> tuple[int, int]:
            sender, i, seconds = message
            rt = Runtime.current()
            assert rt is not None
            if rt.stats().tasks == 0:
                direct.append((sender, i))
            state["in_flight"] += 1
            state["max"] = max(state["max"], state["in_flight"])
            try:
                await anyio.sleep(seconds)
            finally:
                state["in_flight"] -= 1
            handled.append((sender, i))
            return sender, i

    must_handle: set[tuple[int, int]] = set()
    async with Runtime() as rt:
        ref = rt.spawn(Worker(), concurrency=concurrency)
        await ref.ask((-1, 0, 0.0))  # started: later asks may go direct
        await rt.wait_idle()

        async def send(sender: int, script: list[Op]) -> None:
            for i, (kind, seconds, timeout) in enumerate(script):
                message = (sender, i, seconds)
                if kind == "pause":
                    await anyio.sleep(seconds)
                elif kind == "tell":
                    await ref.tell(message)
                    must_handle.add((sender, i))
                elif kind == "ask":
                    assert await ref.ask(message) == (sender, i)
                    must_handle.add((sender, i))
                else:
                    deadline = anyio.current_time() + timeout
                    try:
                        assert await ref.ask(message, timeout=timeout) == (sender, i)
                        must_handle.add((sender, i))
                    except AskTimeout:
                        assert anyio.current_time() == pytest.approx(deadline)

        async with anyio.create_task_group() as tg:
            for sender, script in enumerate(senders):
                tg.start_soon(send, sender, script)
        await rt.wait_idle()
        stats = rt.stats()
        assert (stats.tasks, stats.busy, stats.queued) == (0, 0, 0)

    assert state["max"] <= concurrency
    assert len(handled) == len(set(handled)), "a message was handled twice"
    assert must_handle <= set(handled)
    if concurrency == 1:
        for sender in range(len(senders)):
            order = [i for (s, i) in handled if s == sender]
            assert order == sorted(order), f"sender {sender} out of order: {order}"
    first_ask = next(
        ((s, i) for s, script in enumerate(senders) for i, op in enumerate(script) if op[0] == "ask"), None
    )
    if len(senders) == 1 and first_ask is not None and all(op[0] != "tell" for op in senders[0]):
        assert first_ask in direct  # a lone asker with nothing queued ahead always goes direct


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=60, deadline=None)
@given(concurrency=st.sampled_from([1, 1, 2]), senders=st.lists(ops, min_size=1, max_size=4))
def test_direct_asks_never_break_exclusion_or_order(backend: str, concurrency: int, senders: list[list[Op]]) -> None:
    options: dict[str, Any]
    if backend == "trio":
        options = {"clock": trio.testing.MockClock(autojump_threshold=0)}
    else:
        options = {"loop_factory": VirtualTimeLoop}
    anyio.run(_scenario, concurrency, senders, backend=backend, backend_options=options)


async def test_a_direct_handler_finishing_during_a_restart_does_not_start_the_new_actor_twice() -> None:
    gate = anyio.Event()

    class SlowStart(Probe):
        async def on_start(self) -> None:
            if self.incarnation > first:
                await gate.wait()
            self.started += 1

    first = Probe.built + 1
    async with Runtime() as rt:
        ref = rt.spawn(SlowStart, concurrency=2, on_failure="restart")
        await warm(rt, ref)
        release_b = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, ("wait", release_b))  # direct, slot 1
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(ValueError):
                await ref.ask("boom")  # direct, slot 2; a worker restarts the actor, stuck in on_start
            await anyio.wait_all_tasks_blocked()
            new: Probe = ref.actor
            await ref.tell("queued")
            release_b.set()  # the direct handler leaves while the new actor is still starting
            await anyio.wait_all_tasks_blocked()
            gate.set()
        await rt.wait_idle()
        assert new.started == 1
        assert new.handled == ["queued"]
        assert new.max_in_flight == 1
