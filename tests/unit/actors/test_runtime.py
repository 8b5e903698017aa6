"""The actor runtime: ask/tell, ordering, backpressure, timeouts, contextvars, stopping, accounting.

Scenarios 1, 2, 5, 6, 7 and 8 of docs/actors.md (3 — restart — is in test_actor_supervision.py).
"""

from __future__ import annotations

import contextvars
import gc
import tracemalloc
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors.actors import Actor, ActorRef, Runtime
from agentactors.actors.ref import cell_of
from agentactors.errors import ActorStopped, AskTimeout
from agentactors.events import EventSink, InMemoryRecorder, use_sink

pytestmark = pytest.mark.anyio

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("test_actor_runtime_var", default="unset")


class Recorder:
    """Records messages in handling order and the largest number of handlers running at once."""

    def __init__(self, delay: float = 0.0) -> None:
        self.seen: list[Any] = []
        self.running = 0
        self.max_running = 0
        self.delay = delay

    async def receive(self, message: Any) -> Any:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            await anyio.lowlevel.checkpoint()  # give others a chance to overlap, if they could
            if self.delay:
                await anyio.sleep(self.delay)
            self.seen.append(message)
            return ("ok", message)
        finally:
            self.running -= 1


@pytest.mark.soak  # a load test (its 10,000 is its point): `make soak`, which CI runs
async def test_scenario_1_ten_thousand_concurrent_asks_one_at_a_time_in_order() -> None:
    actor = Recorder()
    senders, per_sender = 100, 100  # 10,000 asks, all in flight at once
    answers: dict[tuple[int, int], Any] = {}
    async with Runtime() as rt:
        ref = rt.spawn(actor, concurrency=1)

        async def sender(k: int) -> None:
            # Each sender has all its asks outstanding at once; they were sent in order i = 0, 1, ...
            async with anyio.create_task_group() as tg:
                for i in range(per_sender):
                    tg.start_soon(ask_one, k, i)
                    await anyio.lowlevel.checkpoint()  # the ask is enqueued before the next is started

        async def ask_one(k: int, i: int) -> None:
            answers[(k, i)] = await ref.ask((k, i))

        async with anyio.create_task_group() as tg:
            for k in range(senders):
                tg.start_soon(sender, k)

    assert len(answers) == senders * per_sender
    assert all(answers[key] == ("ok", key) for key in answers)
    assert actor.max_running == 1
    for k in range(senders):
        order = [i for (s, i) in actor.seen if s == k]
        assert order == sorted(order), f"sender {k} was handled out of order"
        assert len(order) == per_sender


async def test_per_sender_order_of_tells_with_backpressure_and_several_senders() -> None:
    actor = Recorder()
    async with Runtime() as rt:
        ref = rt.spawn(actor, mailbox_size=3)

        async def sender(k: int) -> None:
            for i in range(200):
                await ref.tell((k, i))

        async with anyio.create_task_group() as tg:
            for k in range(8):
                tg.start_soon(sender, k)
    assert len(actor.seen) == 8 * 200
    for k in range(8):
        assert [i for (s, i) in actor.seen if s == k] == list(range(200))


async def test_scenario_2_handler_error_goes_to_the_asker_and_the_actor_survives() -> None:
    class Flaky:
        def __init__(self) -> None:
            self.count = 0

        async def receive(self, message: str) -> int:
            self.count += 1
            if message == "boom":
                raise ValueError("boom from the handler")
            return self.count

    async with Runtime() as rt:
        ref = rt.spawn(Flaky)
        assert await ref.ask("a") == 1
        with pytest.raises(ValueError, match="boom from the handler"):
            await ref.ask("boom")
        assert await ref.ask("b") == 3  # same state: resumed, not restarted


async def test_a_failed_tell_is_an_actor_failed_event_and_the_actor_goes_on() -> None:
    rec = InMemoryRecorder()

    class Fails(Actor):
        async def receive(self, message: Any) -> Any:
            if message == "bad":
                raise RuntimeError("tell failed")
            return message

    async with Runtime(recorders=[rec]) as rt:
        ref = rt.spawn(Fails(), name="fails")
        await ref.tell("bad")
        assert await ref.ask("good") == "good"
    failed = rec.of_type("actor.failed")
    assert len(failed) == 1
    assert failed[0].actor == "fails"
    assert isinstance(failed[0].error, RuntimeError)
    assert failed[0].policy == "resume"
    assert {"actor.started", "actor.stopped"} <= set(rec.types)


async def test_scenario_5_a_full_mailbox_makes_the_sender_wait_and_try_tell_refuse() -> None:
    release = anyio.Event()
    handled: list[int] = []

    class Slow:
        async def receive(self, message: int) -> None:
            await release.wait()
            handled.append(message)

    sent = 0
    async with Runtime() as rt:
        ref = rt.spawn(Slow(), mailbox_size=2)

        async def sender() -> None:
            nonlocal sent
            for i in range(10):
                await ref.tell(i)
                sent += 1

        async with anyio.create_task_group() as tg:
            tg.start_soon(sender)
            # Let every task run until it blocks: counting checkpoints races the scheduler (trio
            # shuffles ready tasks), waiting for quiescence does not.
            await anyio.wait_all_tasks_blocked()
            # One message is being handled, two fill the mailbox: the sender waits on the fourth.
            assert sent == 3
            assert rt.stats().queued == 2
            assert ref.try_tell(99) is False
            release.set()
        # The sender is done once its last message is in the mailbox, not handled: let it drain.
        await rt.wait_idle()
        assert ref.try_tell(10) is True
    assert handled == list(range(11))


async def test_try_tell_to_a_stopped_actor_is_a_dead_letter() -> None:
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt:
        ref = rt.spawn(Recorder(), name="gone")
        await rt.stop(ref)
        assert ref.try_tell("x") is False
        await ref.tell("y")  # does not raise
        with pytest.raises(ActorStopped):
            await ref.ask("z")
    letters = rec.of_type("actor.dead_letter")
    assert [e.message_type for e in letters] == ["str", "str"]
    assert all(e.actor == "gone" for e in letters)
    # The payload itself is not recorded (it may be large or secret).
    assert all("x" not in str(e.data.values()) for e in letters)


@pytest.mark.virtual_time
async def test_scenario_6_ask_timeout_at_exactly_the_timeout_and_the_handler_is_cancelled() -> None:
    observed: list[str] = []

    class Stuck:
        async def receive(self, message: Any) -> None:
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                observed.append("cancelled")
                raise

    async with Runtime() as rt:
        ref = rt.spawn(Stuck())
        start = anyio.current_time()
        with pytest.raises(AskTimeout):
            await ref.ask("x", timeout=0.1)
        assert anyio.current_time() - start == pytest.approx(0.1)
        await rt.wait_idle()
        assert observed == ["cancelled"]
        assert rt.stats().tasks == 0


@pytest.mark.virtual_time
async def test_an_ask_that_times_out_before_it_starts_is_skipped() -> None:
    handled: list[str] = []

    class Busy:
        async def receive(self, message: str) -> str:
            await anyio.sleep(1.0)
            handled.append(message)
            return message

    async with Runtime() as rt:
        ref = rt.spawn(Busy())
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, "first")
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(AskTimeout):
                await ref.ask("second", timeout=0.5)  # still queued behind "first" at 0.5 s
        assert await ref.ask("third") == "third"
    assert handled == ["first", "third"]


async def test_asker_cancellation_cancels_the_handler_and_the_actor_goes_on() -> None:
    started = anyio.Event()
    observed: list[str] = []

    class Work:
        async def receive(self, message: str) -> str:
            if message == "block":
                started.set()
                try:
                    await anyio.sleep_forever()
                except anyio.get_cancelled_exc_class():
                    observed.append("cancelled")
                    raise
            return message

    async with Runtime() as rt:
        ref = rt.spawn(Work())
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, "block")
            await started.wait()
            tg.cancel_scope.cancel()
        assert await ref.ask("next") == "next"
        await rt.wait_idle()
        assert observed == ["cancelled"]
        stats = rt.stats()
        assert (stats.tasks, stats.busy, stats.queued) == (0, 0, 0)


async def test_no_task_is_left_after_many_cancellations() -> None:
    class Sleeper:
        async def receive(self, message: float) -> None:
            await anyio.sleep(message)

    async with Runtime() as rt:
        refs = [rt.spawn(Sleeper(), concurrency=c) for c in (1, 4)]
        async with anyio.create_task_group() as tg:
            for i in range(200):
                tg.start_soon(refs[i % 2].ask, 3600.0)
            await anyio.wait_all_tasks_blocked()
            # Never more handlers than the actors' concurrency, however they run (a worker task,
            # or directly in an asker's task), and never more workers than that either.
            stats = rt.stats()
            assert stats.busy == 1 + 4
            assert stats.tasks <= 1 + 4
            assert stats.queued == 200 - (1 + 4)
            tg.cancel_scope.cancel()
        # Timeouts abandon work the same way.
        for ref in refs:
            with pytest.raises(AskTimeout):
                await ref.ask(3600.0, timeout=0.01)
        with anyio.fail_after(5):
            await rt.wait_idle()
        stats = rt.stats()
        assert (stats.tasks, stats.busy, stats.queued) == (0, 0, 0)
        assert stats.actors == 2


async def test_an_asker_cancelled_while_waiting_for_room_sends_nothing() -> None:
    release = anyio.Event()
    handled: list[str] = []

    class Slow:
        async def receive(self, message: str) -> str:
            await release.wait()
            handled.append(message)
            return message

    async with Runtime() as rt:
        ref = rt.spawn(Slow(), mailbox_size=1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, "running")
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(ref.ask, "queued")
            await anyio.wait_all_tasks_blocked()
            with anyio.move_on_after(0.01):
                await ref.ask("waiting for room")
            release.set()
    assert handled == ["running", "queued"]


async def test_an_ask_runs_with_the_askers_contextvars() -> None:
    class Reads:
        async def receive(self, message: str) -> tuple[str, str]:
            before = VAR.get()
            await anyio.lowlevel.checkpoint()  # still the asker's context after a suspension
            VAR.set("changed by the handler")  # stays in the handler's copy
            return before, VAR.get()

    async with Runtime() as rt:
        ref = rt.spawn(Reads())
        results = {}

        async def asker(value: str) -> None:
            VAR.set(value)
            results[value] = await ref.ask("read")
            assert VAR.get() == value

        async with anyio.create_task_group() as tg:
            for value in ("alpha", "beta", "gamma"):
                tg.start_soon(asker, value)
        assert results == {v: (v, "changed by the handler") for v in ("alpha", "beta", "gamma")}
        # A tell runs in the runtime's context, not the sender's.
        VAR.set("sender")
        seen: list[str] = []

        class Tell:
            async def receive(self, message: str) -> None:
                seen.append(VAR.get())

        tref = rt.spawn(Tell())
        await tref.tell("x")
        await rt.wait_idle()
        assert seen == ["unset"]


async def test_the_handler_sees_the_askers_event_sink_and_its_runtime() -> None:
    rec = InMemoryRecorder()
    outside = InMemoryRecorder()

    class Emits:
        async def receive(self, message: str) -> bool:
            rt = Runtime.current()
            assert rt is not None
            rt.emit("test.inside", message=message)
            return True

    async with Runtime(recorders=[outside]) as rt:
        assert Runtime.current() is rt
        ref = rt.spawn(Emits())
        sink = EventSink([rec], run_id="run-1")
        with use_sink(sink):
            await ref.ask("in a run")
        await ref.ask("outside a run")
    assert Runtime.current() is None
    inside = rec.of_type("test.inside")
    assert [(e.run_id, e.message) for e in inside] == [("run-1", "in a run")]
    assert [e.message for e in outside.of_type("test.inside")] == ["outside a run"]


@pytest.mark.virtual_time
async def test_scenario_7_leaving_the_block_drains_then_cancels_after_the_timeout() -> None:
    drained: list[int] = []
    cancelled: list[str] = []

    class Quick:
        async def receive(self, message: int) -> None:
            await anyio.sleep(0.1)
            drained.append(message)

    class Forever:
        async def receive(self, message: Any) -> None:
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                cancelled.append("forever")
                raise

    start = anyio.current_time()
    rt = Runtime(drain_timeout=1.0)
    async with rt:
        quick = rt.spawn(Quick())
        forever = rt.spawn(Forever())
        for i in range(3):
            await quick.tell(i)
        await forever.tell("x")
        stuck_ask: list[BaseException] = []

        async def ask_forever() -> None:
            try:
                await forever.ask("never answered")
            except BaseException as exc:
                stuck_ask.append(exc)
                raise

        rt.spawn_task(ask_forever)
    assert drained == [0, 1, 2]
    assert cancelled == ["forever"]
    assert anyio.current_time() - start == pytest.approx(1.0)
    stats = rt.stats()
    assert (stats.tasks, stats.actors, stats.queued) == (0, 0, 0)
    with pytest.raises(RuntimeError, match="not running"):
        rt.spawn(Quick())
    with pytest.raises(ActorStopped):
        await quick.ask(1)


async def test_the_body_exception_leaves_the_block_bare_and_nothing_is_left() -> None:
    rt = Runtime()
    with pytest.raises(KeyError):
        async with rt:
            ref = rt.spawn(Recorder(delay=3600))
            await ref.tell("x")
            await anyio.lowlevel.checkpoint()
            raise KeyError("from the body")
    assert rt.stats().tasks == 0


async def test_stop_drains_by_default_and_runs_on_stop() -> None:
    events: list[str] = []

    class Hooks(Actor):
        async def on_start(self) -> None:
            events.append("start")

        async def receive(self, message: str) -> str:
            await anyio.lowlevel.checkpoint()
            events.append(message)
            return message

        async def on_stop(self) -> None:
            events.append("stop")

    async with Runtime() as rt:
        ref = rt.spawn(Hooks())
        for m in ("a", "b", "c"):
            await ref.tell(m)
        await rt.stop(ref)
        assert ref.stopped
        await rt.stop(ref)  # idempotent
        assert rt.stats().actors == 0
    assert events == ["start", "a", "b", "c", "stop"]


async def test_stop_without_drain_rejects_what_is_queued() -> None:
    rec = InMemoryRecorder()
    started = anyio.Event()

    class Blocks:
        async def receive(self, message: str) -> str:
            started.set()
            await anyio.sleep_forever()
            return message

    outcomes: list[Any] = []
    async with Runtime(recorders=[rec]) as rt:
        ref = rt.spawn(Blocks())

        async def ask(message: str) -> None:
            try:
                outcomes.append(await ref.ask(message))
            except ActorStopped as exc:
                outcomes.append(type(exc))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "running")
            await started.wait()
            tg.start_soon(ask, "queued")
            await ref.tell("queued tell")
            await anyio.lowlevel.checkpoint()
            await rt.stop(ref, drain=False)
    assert outcomes == [ActorStopped, ActorStopped]
    assert [e.message_type for e in rec.of_type("actor.dead_letter")] == ["str"]


async def test_an_idle_actor_holds_no_task_and_no_buffer() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Recorder())
        assert rt.stats().tasks == 0
        assert await ref.ask(1) == ("ok", 1)
        await rt.wait_idle()
        assert rt.stats().tasks == 0
        assert cell_of(ref).mailbox is None


async def test_concurrency_n_runs_up_to_n_handlers_at_once() -> None:
    actor = Recorder(delay=0.01)
    async with Runtime() as rt:
        ref = rt.spawn(actor, concurrency=4)
        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(ref.ask, i)
    assert actor.max_running == 4
    assert sorted(actor.seen) == list(range(20))


async def test_spawn_validates_its_arguments() -> None:
    async with Runtime() as rt:
        with pytest.raises(TypeError, match="receive"):
            rt.spawn(object())  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="factory"):
            rt.spawn(Recorder(), on_failure="restart")
        with pytest.raises(ValueError):
            rt.spawn(Recorder, mailbox_size=0)
        with pytest.raises(ValueError):
            rt.spawn(Recorder, on_failure="retry")  # type: ignore[arg-type]
        ref = rt.spawn(Recorder, name="named")
        assert isinstance(ref, ActorRef)
        assert ref.name == "named"
        assert "named" in repr(ref)


async def test_spawn_outside_a_running_runtime_is_an_error() -> None:
    rt = Runtime()
    with pytest.raises(RuntimeError, match="not running"):
        rt.spawn(Recorder())


@pytest.mark.soak  # 100,000 actors (the scenario's size): `make soak`, which CI runs
async def test_scenario_8_idle_actors_cost_under_a_kilobyte_each() -> None:
    class Minimal:
        __slots__ = ()

        async def receive(self, message: Any) -> None:
            return None

    count = 100_000
    async with Runtime() as rt:
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            refs = [rt.spawn(Minimal()) for _ in range(count)]
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert rt.stats().actors == count
        assert rt.stats().tasks == 0
        # Includes the list holding the refs (8 bytes each); the bound is deliberately generous.
        assert grown / count < 1024, f"{grown / count:.0f} bytes per idle actor"
        # Spawned actors work.
        assert await refs[-1].ask("x") is None


async def test_concurrent_stops_all_return_and_nothing_queued_is_left_unanswered() -> None:
    actor = Recorder(delay=0.01)
    async with Runtime() as rt:
        ref = rt.spawn(actor)
        for i in range(5):
            await ref.tell(i)

        async def stop(drain: bool) -> None:
            await rt.stop(ref, drain=drain)

        async with anyio.create_task_group() as tg:
            for drain in (True, False, True):
                tg.start_soon(stop, drain)
        assert ref.stopped
        assert rt.stats().actors == 0
        assert rt.stats().tasks == 0


async def test_an_actor_can_stop_itself_without_draining() -> None:
    rec = InMemoryRecorder()

    class Quits:
        async def receive(self, message: str) -> str:
            if message == "quit":
                rt = Runtime.current()
                assert rt is not None
                await rt.stop(me, drain=False)
            return message

    async with Runtime(recorders=[rec]) as rt:
        me = rt.spawn(Quits())
        assert await me.ask("hello") == "hello"
        with pytest.raises(ActorStopped):
            await me.ask("quit")
        await rt.wait_idle()
        assert me.stopped
        assert rt.stats().actors == 0
    assert len(rec.of_type("actor.stopped")) == 1


# --- background tasks -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_background_task_does_not_hold_up_the_drain_and_is_cancelled_at_exit() -> None:
    seen: list[str] = []

    async def serve() -> None:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.lowlevel.checkpoint()  # a shielded close, as a connection's owner does
                seen.append("closed")
            raise

    started = anyio.current_time()
    async with Runtime(drain_timeout=30.0) as rt:
        rt.spawn_task(serve, background=True)
        await anyio.lowlevel.checkpoint()
        assert rt.stats().tasks == 1
        await rt.wait_idle()  # returns at once: a background task is not work to wait for
    assert seen == ["closed"]
    assert anyio.current_time() - started < 5.0  # not the 30 s drain


async def test_the_backend_functions_resolved_once_are_the_running_backends_own() -> None:
    """What the ask and the tool executor call instead of anyio's top-level functions: the same, found once."""
    from agentactors._backend import backend_function

    checkpoint = backend_function("checkpoint_if_cancelled", anyio.lowlevel.checkpoint_if_cancelled)
    clock = backend_function("current_time", anyio.current_time)
    # Found: anyio's backend modules still say which class they are (else the public function is used as is).
    assert checkpoint is not anyio.lowlevel.checkpoint_if_cancelled
    assert clock is not anyio.current_time
    assert abs(clock() - anyio.current_time()) < 1.0
    await checkpoint()  # not cancelled: returns
    with anyio.CancelScope() as scope:
        scope.cancel()
        await checkpoint()
        pytest.fail("a cancelled checkpoint returned")
    assert scope.cancelled_caught
    assert backend_function("no_such_function", anyio.current_time) is anyio.current_time
