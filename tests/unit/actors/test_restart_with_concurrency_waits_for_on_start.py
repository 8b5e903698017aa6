"""A restart of an actor with ``concurrency > 1``: no message reaches the new incarnation before its ``on_start``.

One worker restarts the actor (``on_stop`` of the old object, then ``on_start`` of the new one, which may
await); another worker of the same actor, finishing a handler meanwhile, must not take the next queued
message and hand it to the new, not yet started object.  It leaves the queue to the restarting worker.
"""

from __future__ import annotations

from typing import Any, ClassVar

import anyio
import pytest

from agentactors.actors import Runtime

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Slow:
    """``on_start`` takes a second; ``receive`` records whether it ran, on which incarnation."""

    seen: ClassVar[list[tuple[Any, bool, int]]] = []
    built = 0

    def __init__(self) -> None:
        type(self).built += 1
        self.incarnation = type(self).built
        self.ready = False

    async def on_start(self) -> None:
        await anyio.sleep(1)
        self.ready = True

    async def receive(self, message: Any) -> Any:
        if message == "boom":
            raise ValueError("boom")
        if message == "slow":
            await anyio.sleep(0.5)
        type(self).seen.append((message, self.ready, self.incarnation))
        return message


@pytest.mark.parametrize("direct", [True, False])
async def test_a_message_queued_during_a_restart_waits_for_the_new_on_start(direct: bool) -> None:
    Slow.seen, Slow.built = [], 0
    async with Runtime() as rt:
        ref = rt.spawn(Slow, concurrency=2, on_failure="restart", direct=direct)
        with anyio.fail_after(20):
            await ref.ask("warm-up")
            await rt.wait_idle()
            async with anyio.create_task_group() as tg:
                tg.start_soon(ref.tell, "slow")  # through a worker: it is still handling it when the restart begins
                await anyio.sleep(0.1)
                with pytest.raises(ValueError):
                    await ref.ask("boom")  # the restart begins: the new on_start takes a second
                await anyio.sleep(0.01)
                assert await ref.ask("after") == "after"  # queued behind the restart
    assert ("after", True, 2) in Slow.seen
    assert all(ready for _, ready, _ in Slow.seen), Slow.seen
