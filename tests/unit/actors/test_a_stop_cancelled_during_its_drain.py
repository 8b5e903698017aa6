"""``rt.stop(ref)`` whose caller is cancelled while the drain waits.

``stop`` says: the actor is stopping by then, and "once its drain is over [...] halted; its ``on_stop`` runs
where it would have".  Nothing did it: the cancelled caller left before the halt, and a stopping actor that went
idle stayed stopping — never halted, ``on_stop`` not run, still counted in ``rt.stats()`` — until another
``stop`` or the runtime's exit.  Now the runtime finishes the stop in a task of its own: the drain goes on
(within the same bound), then the halt and ``on_stop``.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.errors import ActorStopped

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Slow:
    def __init__(self) -> None:
        self.release = anyio.Event()
        self.started = anyio.Event()
        self.log: list[str] = []
        self.stopped = anyio.Event()

    async def on_start(self) -> None:
        pass

    async def on_stop(self) -> None:
        self.log.append("on_stop")
        self.stopped.set()

    async def receive(self, message: Any) -> Any:
        self.started.set()
        await self.release.wait()
        self.log.append(f"handled {message}")
        return message


async def test_the_drain_goes_on_and_the_actor_is_halted_and_finalized() -> None:
    actor = Slow()
    async with Runtime(drain_timeout=60) as rt:
        ref = rt.spawn(actor)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, "first")
            await actor.started.wait()
            with anyio.move_on_after(1):
                await rt.stop(ref)  # cancelled while it drains
            assert ref.stopped and actor.log == []
            actor.release.set()
        with anyio.fail_after(5):  # (virtual time: never, unless on_stop never runs)
            await actor.stopped.wait()
        assert actor.log == ["handled first", "on_stop"]
        assert rt.stats().actors == 0


async def test_past_the_drain_bound_the_handler_is_cancelled_and_on_stop_runs() -> None:
    actor = Slow()
    async with Runtime(drain_timeout=10) as rt:
        ref = rt.spawn(actor)
        async with anyio.create_task_group() as tg:

            async def asker() -> None:
                with pytest.raises(ActorStopped):  # the halt, at the end of the drain, cancelled it
                    await ref.ask("never done")

            tg.start_soon(asker)
            await actor.started.wait()
            start = anyio.current_time()
            with anyio.move_on_after(1):
                await rt.stop(ref)
        with anyio.fail_after(30):
            await actor.stopped.wait()
        assert anyio.current_time() - start == pytest.approx(10, abs=0.2)  # the stop's own bound, not more
        assert actor.log == ["on_stop"]
