"""Supervision: resume / restart (scenario 3 of docs/actors.md) / stop / escalate, and the lifecycle hooks."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.errors import ActorStopped
from agentactors.events import InMemoryRecorder

pytestmark = pytest.mark.anyio


class Counter:
    """Counts messages; ``"boom"`` raises; ``"slow-boom"`` waits for ``gate`` and then raises."""

    gate: anyio.Event | None = None
    built = 0

    def __init__(self) -> None:
        type(self).built += 1
        self.count = 0

    async def receive(self, message: str) -> int:
        if message == "slow-boom":
            assert Counter.gate is not None
            await Counter.gate.wait()
            raise ValueError("slow boom")
        if message == "boom":
            raise ValueError("boom")
        self.count += 1
        return self.count


@pytest.fixture(autouse=True)
def _reset_counter() -> None:
    Counter.built = 0
    Counter.gate = None


async def test_scenario_3_restart_rebuilds_state_from_the_factory() -> None:
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt:
        ref = rt.spawn(Counter, on_failure="restart", max_restarts=3, name="counter")
        assert await ref.ask("a") == 1
        assert await ref.ask("b") == 2
        with pytest.raises(ValueError, match="boom"):
            await ref.ask("boom")
        assert await ref.ask("c") == 1  # fresh state
        assert Counter.built == 2
    restarted = rec.of_type("actor.restarted")
    assert len(restarted) == 1
    assert restarted[0].actor == "counter"
    assert restarted[0].restarts == 1
    assert [e.policy for e in rec.of_type("actor.failed")] == ["restart"]


async def test_scenario_3_too_many_restarts_stop_the_actor_and_pending_asks_get_actor_stopped() -> None:
    Counter.gate = anyio.Event()
    outcomes: dict[int, Any] = {}
    async with Runtime() as rt:
        ref = rt.spawn(Counter, on_failure="restart", max_restarts=2, restart_window=60.0)

        async def ask(i: int, message: str) -> None:
            try:
                outcomes[i] = await ref.ask(message)
            except Exception as exc:
                outcomes[i] = type(exc)

        async with anyio.create_task_group() as tg:
            # Three failures in a row (the third exceeds max_restarts=2), then asks queued behind them.
            for i, message in enumerate(["slow-boom", "slow-boom", "slow-boom", "ok", "ok"]):
                tg.start_soon(ask, i, message)
                await anyio.lowlevel.checkpoint()
            Counter.gate.set()
        assert ref.stopped
        with pytest.raises(ActorStopped):
            await ref.ask("after")
    assert outcomes == {0: ValueError, 1: ValueError, 2: ValueError, 3: ActorStopped, 4: ActorStopped}
    assert Counter.built == 3  # the original and two restarts


@pytest.mark.virtual_time
async def test_failures_outside_the_restart_window_do_not_count() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Counter, on_failure="restart", max_restarts=1, restart_window=10.0)
        for _ in range(4):
            with pytest.raises(ValueError):
                await ref.ask("boom")
            await anyio.sleep(11.0)
        assert not ref.stopped
        with pytest.raises(ValueError):
            await ref.ask("boom")
        with pytest.raises(ValueError):
            await ref.ask("boom")  # second failure within 10 s: over max_restarts=1
        assert ref.stopped


async def test_restart_runs_on_stop_of_the_old_object_and_on_start_of_the_new() -> None:
    log: list[str] = []

    class Hooked:
        made = 0

        def __init__(self) -> None:
            Hooked.made += 1
            self.n = Hooked.made

        async def on_start(self) -> None:
            log.append(f"start {self.n}")

        async def on_stop(self) -> None:
            log.append(f"stop {self.n}")

        async def receive(self, message: str) -> None:
            if message == "boom":
                raise RuntimeError("x")

    async with Runtime() as rt:
        ref = rt.spawn(Hooked, on_failure="restart")
        with pytest.raises(RuntimeError):
            await ref.ask("boom")
        await ref.ask("ok")
    assert log == ["start 1", "stop 1", "start 2", "stop 2"]


async def test_stop_policy_stops_the_actor_on_its_first_failure() -> None:
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt:
        ref = rt.spawn(Counter, on_failure="stop")
        with pytest.raises(ValueError):
            await ref.ask("boom")
        await rt.wait_idle()
        assert ref.stopped
        with pytest.raises(ActorStopped):
            await ref.ask("a")
        assert rt.stats().actors == 0
    assert [e.policy for e in rec.of_type("actor.failed")] == ["stop"]
    assert len(rec.of_type("actor.stopped")) == 1


async def test_escalate_cancels_the_block_and_re_raises_the_bare_exception() -> None:
    reached: list[str] = []
    rt = Runtime()
    with pytest.raises(ValueError, match="boom") as info:
        async with rt:
            ref = rt.spawn(Counter, on_failure="escalate")
            other = rt.spawn(Counter)
            await other.ask("a")
            await ref.tell("boom")
            await anyio.sleep_forever()  # cancelled by the escalation
            reached.append("after sleep")  # pragma: no cover
    assert type(info.value) is ValueError  # bare, not an exception group
    assert reached == []
    assert rt.stats().tasks == 0


async def test_escalate_from_an_ask_also_reaches_the_asker_and_leaves_the_block() -> None:
    got: list[type[BaseException]] = []
    with pytest.raises(ValueError, match="boom"):
        async with Runtime() as rt:
            ref = rt.spawn(Counter, on_failure="escalate")
            try:
                await ref.ask("boom")
            except ValueError as exc:
                got.append(type(exc))
            await anyio.sleep_forever()
    assert got == [ValueError]


async def test_escalation_during_the_drain_still_leaves_the_block() -> None:
    with pytest.raises(ValueError, match="slow boom"):
        async with Runtime(drain_timeout=5.0) as rt:
            Counter.gate = anyio.Event()
            ref = rt.spawn(Counter, on_failure="escalate")
            await ref.tell("slow-boom")
            rt.spawn_task(_set_soon, Counter.gate)


async def _set_soon(event: anyio.Event) -> None:
    await anyio.sleep(0.01)
    event.set()


async def test_an_exception_in_a_runtime_task_escalates() -> None:
    async def broken() -> None:
        raise LookupError("task failed")

    with pytest.raises(LookupError, match="task failed"):
        async with Runtime() as rt:
            rt.spawn_task(broken)
            await anyio.sleep_forever()


async def test_on_start_failure_stops_a_resuming_actor_and_fails_its_asks() -> None:
    rec = InMemoryRecorder()

    class BadStart:
        async def on_start(self) -> None:
            raise OSError("cannot start")

        async def receive(self, message: Any) -> Any:  # pragma: no cover - never reached
            return message

    async with Runtime(recorders=[rec]) as rt:
        ref = rt.spawn(BadStart())
        with pytest.raises(ActorStopped):
            await ref.ask("x")
        assert ref.stopped
    failed = rec.of_type("actor.failed")
    assert [(e.phase, e.policy) for e in failed] == [("on_start", "stop")]


async def test_on_start_failure_under_restart_retries_with_a_new_object() -> None:
    class StartsSecondTime:
        made = 0

        def __init__(self) -> None:
            StartsSecondTime.made += 1
            self.n = StartsSecondTime.made

        async def on_start(self) -> None:
            if self.n == 1:
                raise OSError("first start fails")

        async def receive(self, message: Any) -> int:
            return self.n

    async with Runtime() as rt:
        ref = rt.spawn(StartsSecondTime, on_failure="restart")
        assert await ref.ask("x") == 2


async def test_a_concurrent_actor_starts_once_before_handling_anything() -> None:
    log: list[str] = []

    class Slow:
        async def on_start(self) -> None:
            log.append("start")
            await anyio.sleep(0.01)
            log.append("started")

        async def receive(self, message: int) -> int:
            log.append("handle")
            await anyio.sleep(0.01)
            return message

    async with Runtime() as rt:
        ref = rt.spawn(Slow(), concurrency=8)
        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(ref.ask, i)
        assert rt.stats().tasks <= 8
    assert log[:2] == ["start", "started"]
    assert log.count("start") == 1
    assert log.count("handle") == 8
