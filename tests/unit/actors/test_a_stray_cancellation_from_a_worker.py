"""A handler or ``on_start`` in a worker that raises a cancellation no cancel scope asked for (a *stray* one).

On asyncio a library may raise ``CancelledError`` of its own (a future someone else cancelled, an inner
``wait_for``): :mod:`agentactors._containment` calls that the call's own failure.  Out of a worker's handler it
used to end the worker task as cancelled, which the runtime's task group takes as a cancellation of the group:
every other actor's handler was cancelled, the asks queued behind it were left waiting, and the runtime left
``async with`` with an error group.  Now the worker answers it as the handler's failure — the asker gets that
exception (as it does from a handler run directly, in its own task), the actor's policy applies — and every
other actor, the block and the runtime go on.  A real cancellation (the runtime's exit, a stop) still ends the
worker as before.

trio has no stray cancellation (``trio.Cancelled`` cannot be made by user code: trying raises ``TypeError``,
an ordinary failure), so on trio the test shows the same outcome through that failure.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.errors import ActorStopped
from agentactors.events import InMemoryRecorder

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def stray() -> BaseException:
    """A cancellation exception raised by hand: stray on asyncio; on trio making one raises ``TypeError``."""
    return anyio.get_cancelled_exc_class()()


class Strays:
    def __init__(self, in_on_start: bool = False) -> None:
        self.in_on_start = in_on_start
        self.starts = 0
        self.seen: list[Any] = []

    async def on_start(self) -> None:
        self.starts += 1
        await anyio.lowlevel.checkpoint()
        if self.in_on_start and self.starts == 1:
            raise stray()

    async def receive(self, message: Any) -> Any:
        await anyio.lowlevel.checkpoint()
        self.seen.append(message)
        if message == "stray":
            raise stray()
        return message


@pytest.mark.parametrize("policy", ["resume", "restart"])
async def test_a_stray_cancellation_from_an_asks_handler_fails_that_ask_only(policy: str) -> None:
    recorder = InMemoryRecorder()
    reached = False
    async with Runtime([recorder]) as rt:
        ref = rt.spawn(Strays, direct=False, on_failure=policy)  # type: ignore[arg-type]
        other = rt.spawn(Strays(), direct=False)
        answers: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:

            async def ask(target: Any, message: str) -> None:
                try:
                    answers[message] = await target.ask(message)
                except BaseException as exc:  # (the stray one is the asker's to see, not to propagate here)
                    answers[message] = type(exc)

            tg.start_soon(ask, ref, "stray")
            tg.start_soon(ask, ref, "queued behind it")
            tg.start_soon(ask, other, "another actor")
        assert answers["stray"] in (anyio.get_cancelled_exc_class(), TypeError)
        assert answers["queued behind it"] == "queued behind it"
        assert answers["another actor"] == "another actor"
        assert not ref.stopped and await ref.ask("after") == "after"
        reached = True
    assert reached  # the block was not cancelled (a cancelled one leaves quietly: its exit absorbs it)
    failed = [event for event in recorder.events if event.type == "actor.failed"]
    assert policy == "resume" or failed  # (resume: the asker got it; no event for an ask)


async def test_a_stray_cancellation_from_a_tells_handler_is_an_actor_failed_event() -> None:
    recorder = InMemoryRecorder()
    reached = False
    async with Runtime([recorder]) as rt:
        ref = rt.spawn(Strays(), direct=False)
        await ref.tell("stray")
        assert await ref.ask("after") == "after"
        reached = True
    assert reached
    assert [event.type for event in recorder.events if event.type == "actor.failed"] == ["actor.failed"]


async def test_a_stray_cancellation_from_on_start_in_a_worker_is_an_on_start_failure() -> None:
    reached = False
    async with Runtime() as rt:
        actor = Strays(in_on_start=True)
        ref = rt.spawn(actor, direct=False)  # resume: an on_start failure stops the actor
        with pytest.raises(ActorStopped):
            await ref.ask("x")
        assert ref.stopped
        other = rt.spawn(Strays(), direct=False)
        assert await other.ask("still running") == "still running"
        reached = True
    assert reached


async def test_a_real_cancellation_still_ends_the_worker() -> None:
    started = anyio.Event()

    class Stuck:
        async def receive(self, message: Any) -> Any:
            started.set()
            await anyio.sleep_forever()

    async with Runtime() as rt:
        ref = rt.spawn(Stuck(), direct=False)
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                with pytest.raises(ActorStopped):
                    await ref.ask("x")

            tg.start_soon(ask)
            await started.wait()
            await rt.stop(ref, drain=False)
        assert ref.stopped


class StrayOnStop:
    def __init__(self, log: list[str], name: str, stray_on_stop: bool) -> None:
        self.log, self.name, self.stray_on_stop = log, name, stray_on_stop
        self.stopping = anyio.Event()

    async def on_start(self) -> None:
        pass

    async def on_stop(self) -> None:
        self.log.append(f"on_stop {self.name}")
        self.stopping.set()
        await anyio.lowlevel.checkpoint()
        if self.stray_on_stop:
            raise stray()

    async def receive(self, message: Any) -> Any:
        await anyio.lowlevel.checkpoint()
        if message == "fail":
            raise ValueError("fail")
        return message


async def test_a_stray_cancellation_from_an_on_stop_a_worker_runs_is_an_on_stop_failure() -> None:
    log: list[str] = []
    recorder = InMemoryRecorder()
    reached = False
    async with Runtime([recorder]) as rt:
        first = StrayOnStop(log, "a", True)
        ref = rt.spawn(first, direct=False, on_failure="stop")
        with pytest.raises(ValueError, match="fail"):
            await ref.ask("fail")  # the stop policy halts it: its worker runs on_stop
        await first.stopping.wait()
        await rt.wait_idle()  # (the worker, after on_stop: the runtime's own task)
        assert rt.stats().actors == 0
        other = rt.spawn(StrayOnStop(log, "b", False), direct=False)
        assert await other.ask("still running") == "still running"
        reached = True
    assert reached and log == ["on_stop a", "on_stop b"]
    phases = [event.data.get("phase") for event in recorder.events if event.type == "actor.failed"]
    assert "on_stop" in phases


async def test_a_stray_cancellation_from_an_on_stop_at_the_exit_lets_the_exit_finish() -> None:
    log: list[str] = []
    cleaned: list[str] = []

    async def cleanup(value: str) -> None:
        cleaned.append(value)

    async with Runtime() as rt:
        rt.service("svc", lambda: "svc", cleanup=cleanup)
        for name, strays in (("a", True), ("b", False)):
            await rt.spawn(StrayOnStop(log, name, strays)).ask("start")
    assert sorted(log) == ["on_stop a", "on_stop b"]
    assert cleaned == ["svc"]


async def test_a_native_cancel_of_a_worker_task_is_no_stray_one(anyio_backend_name: str) -> None:
    """``task.cancel()`` on a worker (asyncio: what ``asyncio.run`` does to the tasks left at its end) still ends
    the worker, as a cancellation of a runtime task does (it cancels the runtime): it is not taken for a handler's
    failure, which would let the worker go on serving.  trio has no per-task cancel."""
    if anyio_backend_name != "asyncio":
        return
    import asyncio

    tasks: list[asyncio.Task[Any]] = []
    handled: list[str] = []

    class Sleeper:
        async def receive(self, message: Any) -> Any:
            task = asyncio.current_task()
            assert task is not None
            tasks.append(task)
            await anyio.sleep(100)
            handled.append(message)

    reached = False
    with anyio.fail_after(50):
        async with Runtime() as rt:
            ref = rt.spawn(Sleeper(), direct=False)
            await ref.tell("first")
            await ref.tell("second")
            await anyio.wait_all_tasks_blocked()
            tasks[0].cancel()
            await anyio.sleep(200)
            reached = True
    assert not reached and handled == []  # the runtime was cancelled: "second" was never started
    assert len(tasks) == 1
