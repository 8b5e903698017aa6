"""An actor whose ``on_start`` fails in a worker, under a policy that stops it, is finalized by that worker.

It leaves the runtime's actors (``rt.stats().actors``), ``actor.stopped`` is recorded, and the queued asks
get ``ActorStopped`` — without waiting for a later ``rt.stop`` or the runtime's exit.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.errors import ActorStopped
from agentactors.events import InMemoryRecorder

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class BadStart:
    async def on_start(self) -> None:
        raise RuntimeError("cannot start")

    async def receive(self, message: Any) -> Any:
        return message


@pytest.mark.parametrize("policy", ["stop", "resume"])
async def test_the_worker_finalizes_an_actor_its_failed_on_start_stopped(policy: Any) -> None:
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]) as rt:
        ref = rt.spawn(BadStart, on_failure=policy, direct=False, name="bad")
        with anyio.fail_after(10):
            with pytest.raises(ActorStopped):
                await ref.ask("hello")
            await rt.wait_idle()
        assert ref.stopped
        assert rt.stats().actors == 0
        assert any(e.type == "actor.stopped" for e in recorder.events)
