"""Leaving ``async with Runtime()`` while a direct handler runs in a task that is not the runtime's.

A direct ask runs its handler in the asker's own task, which the runtime's task group does not own: an
asker in a task group around the runtime keeps running it past the drain.  The exit's halt cancels that
handler; the exit must then let it end before the actor's ``on_stop`` runs (as ``rt.stop`` does) and
before ``async with`` is left — nothing of the runtime's actors may run after the block.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.errors import ActorStopped

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@pytest.mark.parametrize("shielded_cleanup", [False, True])
async def test_the_exit_lets_a_cancelled_direct_handler_end_before_on_stop_and_before_leaving(
    shielded_cleanup: bool,
) -> None:
    log: list[str] = []

    class Slow:
        async def on_start(self) -> None:
            pass

        async def on_stop(self) -> None:
            log.append("on_stop")

        async def receive(self, message: Any) -> Any:
            try:
                await anyio.sleep(100)
            finally:
                if shielded_cleanup:  # cleanup that awaits (bounded), as a handler closing a stream does
                    with anyio.CancelScope(shield=True):
                        await anyio.sleep(0.01)
                log.append("handler ended")

    async def asker(ref: Any) -> None:
        try:
            await ref.ask("x")
        except ActorStopped:
            log.append("ActorStopped")

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            async with Runtime(drain_timeout=0.5) as rt:
                ref = rt.spawn(Slow)
                tg.start_soon(asker, ref)  # a task outside the runtime: its handler runs directly there
                await anyio.sleep(0.1)
                assert rt.stats().busy == 1
            log.append("runtime left")
    assert "ActorStopped" in log  # the asker's answer, whenever its task ran again
    assert [entry for entry in log if entry != "ActorStopped"] == ["handler ended", "on_stop", "runtime left"]
