"""``rt.stop`` while a worker runs the actor's ``on_start`` (or a restart's): the halt cancels it.

An ``on_start`` run by a worker (a tell, a ``direct=False`` actor, a restart a worker performs) must be
cancelled by the halt as a handler is: ``stop`` returns within its drain ``timeout`` (``drain=False``: at
once) instead of waiting for an ``on_start`` that may never return, and the queued messages are rejected.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.errors import ActorStopped

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Stuck:
    """An actor whose ``on_start`` never returns on its own (the first incarnation's only, with ``fail_first``)."""

    built = 0

    def __init__(self, fail_first: bool = False) -> None:
        type(self).built += 1
        self.incarnation = type(self).built
        self.fail_first = fail_first
        self.started = False
        self.cancelled = False

    async def on_start(self) -> None:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise

    async def receive(self, message: Any) -> Any:
        return message


@pytest.mark.parametrize("drain", [True, False])
async def test_stop_cancels_an_on_start_a_worker_runs(drain: bool) -> None:
    async with Runtime(drain_timeout=1) as rt:
        ref = rt.spawn(Stuck, direct=False)
        actor: Stuck = ref.actor
        await ref.tell("first")  # a worker starts the actor: its on_start never returns
        await anyio.sleep(0.1)
        with anyio.fail_after(10):
            await rt.stop(ref, drain=drain, timeout=1)
        assert actor.cancelled
        assert ref.stopped
        with pytest.raises(ActorStopped):
            await ref.ask("late")


async def test_an_ask_queued_behind_a_stuck_worker_on_start_gets_actor_stopped_when_stopped() -> None:
    async with Runtime(drain_timeout=1) as rt:
        ref = rt.spawn(Stuck, direct=False)
        answers: list[object] = []

        async def ask() -> None:
            try:
                answers.append(await ref.ask("q"))
            except ActorStopped as exc:
                answers.append(exc)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                await anyio.sleep(0.1)
                await rt.stop(ref, drain=False)
        assert len(answers) == 1 and isinstance(answers[0], ActorStopped)


async def test_stop_cancels_the_on_start_of_a_restart_a_worker_runs_for_a_direct_ask() -> None:
    class Failing(Stuck):
        async def on_start(self) -> None:
            if self.incarnation > 1:  # the restarted incarnation's on_start hangs
                await Stuck.on_start(self)

        async def receive(self, message: Any) -> Any:
            if message == "boom":
                raise ValueError("boom")
            return message

    async with Runtime(drain_timeout=1) as rt:
        Stuck.built = 0
        ref = rt.spawn(Failing, on_failure="restart")
        await ref.ask("warm-up")  # started, directly
        with pytest.raises(ValueError):
            await ref.ask("boom")  # direct: a worker takes over the slot and restarts; on_start hangs
        await anyio.sleep(0.1)
        with anyio.fail_after(10):
            await rt.stop(ref, drain=False)
        assert ref.actor.cancelled
