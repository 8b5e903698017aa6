"""Frames: one cancel scope for a task's many direct asks, which a halt cancels as it cancels a direct ask's own.

``ask_in`` is what a run's loop uses for its provider and executor.  A halt must still cancel the handler
running in the asker's task and make the ask raise ``ActorStopped``; anything that is not a halt propagates
unchanged; and an ask that cannot run directly is an ordinary ask.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors.actors.frame import ask_in, open_frame
from agentactors.actors.runtime import Runtime
from agentactors.errors import ActorStopped

pytestmark = pytest.mark.anyio


class Waits:
    """Answers a message with itself; ``"wait"`` waits until cancelled, ``"fail"`` raises."""

    def __init__(self) -> None:
        self.waiting = anyio.Event()
        self.cancelled = 0
        self.starts = 0

    async def on_start(self) -> None:
        self.starts += 1

    async def receive(self, message: Any) -> Any:
        if message == "wait":
            self.waiting.set()
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                self.cancelled += 1
                raise
        if message == "fail":
            raise ValueError("the handler failed")
        return message


async def test_a_halt_cancels_the_handler_running_in_the_frame_and_the_ask_raises_actor_stopped() -> None:
    actor = Waits()
    outcome: list[object] = []
    async with Runtime() as rt:
        ref = rt.spawn(actor)
        assert await ref.ask("warm") == "warm"  # started: the frame's asks run directly

        async def asker() -> None:
            frame = open_frame(ref)
            with frame.scope:
                try:
                    await ask_in(frame, ref, "wait")
                except ActorStopped as exc:
                    outcome.append(str(exc))
                # The frame stays cancelled: this await is cancelled, and the frame's edge absorbs it.
                await anyio.lowlevel.checkpoint()
                outcome.append("not reached")
            outcome.append(frame.halted)

        with anyio.fail_after(5):  # a halt that did not reach the handler: the asker would wait forever
            async with anyio.create_task_group() as tg:
                tg.start_soon(asker)
                await actor.waiting.wait()
                stats = rt.stats()
                assert (stats.busy, stats.tasks) == (1, 0)  # running in the asker's task, seen busy
                await rt.stop(ref, drain=False)
        assert actor.cancelled == 1
        assert outcome == [f"actor {ref.name!r} was stopped while handling the message", True]
        assert rt.stats().busy == 0


async def test_a_cancellation_that_is_not_a_halt_propagates_and_gives_the_slot_back() -> None:
    actor = Waits()
    async with Runtime() as rt:
        ref = rt.spawn(actor)
        await ref.ask("warm")
        frame = open_frame(ref, deadline=anyio.current_time() + 0.05)
        with frame.scope:
            await ask_in(frame, ref, "wait")
        assert frame.scope.cancelled_caught and not frame.halted
        assert actor.cancelled == 1
        assert rt.stats().busy == 0
        assert await ask_in(None, ref, "again") == "again"  # the actor goes on


async def test_a_handler_failure_in_a_frame_is_supervised_like_a_direct_asks() -> None:
    actor = Waits()
    async with Runtime() as rt:
        ref = rt.spawn(actor, on_failure="resume")
        await ref.ask("warm")
        frame = open_frame(ref)
        with frame.scope:
            with pytest.raises(ValueError, match="the handler failed"):
                await ask_in(frame, ref, "fail")
            assert await ask_in(frame, ref, "next") == "next"
        assert not frame.scope.cancel_called and not ref.stopped and rt.stats().busy == 0


async def test_an_ask_that_cannot_run_directly_is_an_ordinary_ask() -> None:
    actor = Waits()
    async with Runtime() as rt:
        ref = rt.spawn(actor)
        frame = open_frame(ref)
        with frame.scope:
            # Not started: the ordinary ask runs on_start first.
            assert await ask_in(frame, ref, "first") == "first"
            assert actor.starts == 1
        # Busy (concurrency 1, a handler running): the message queues and is answered after it.
        answers: list[str] = []
        async with anyio.create_task_group() as tg:

            async def waiter() -> None:
                with pytest.raises(ActorStopped):
                    await ref.ask("wait")

            tg.start_soon(waiter)
            await actor.waiting.wait()
            frame = open_frame(ref)

            async def queued() -> None:
                with frame.scope:
                    try:
                        await ask_in(frame, ref, "queued")
                    except ActorStopped as exc:
                        answers.append(str(exc))

            tg.start_soon(queued)
            await anyio.wait_all_tasks_blocked()
            assert rt.stats().queued == 1
            await rt.stop(ref, drain=False)
        # Rejected from the mailbox, not cancelled in the frame.
        assert answers == [f"actor {ref.name!r} stopped before handling the message (stopped)"] and not frame.halted


async def test_a_plain_object_with_ask_is_asked_as_it_is() -> None:
    class Asks:
        async def ask(self, message: Any) -> Any:
            return ("asked", message)

    frame = open_frame(Asks())
    with frame.scope:
        assert await ask_in(frame, Asks(), "m") == ("asked", "m")


async def test_a_restart_after_a_failure_in_a_frame_is_the_same_as_after_a_direct_asks() -> None:
    incarnations: list[Waits] = []

    def make() -> Waits:
        incarnations.append(Waits())
        return incarnations[-1]

    async with Runtime() as rt:
        ref = rt.spawn(make, on_failure="restart")
        await ref.ask("warm")
        frame = open_frame(ref)
        with frame.scope:
            with pytest.raises(ValueError, match="the handler failed"):
                await ask_in(frame, ref, "fail")
            # The slot passed to a worker that restarts the actor; the next ask waits for it and is answered.
            assert await ask_in(frame, ref, "after") == "after"
        assert len(incarnations) == 2 and incarnations[1].starts == 1
        assert not frame.scope.cancel_called and rt.stats().busy == 0
