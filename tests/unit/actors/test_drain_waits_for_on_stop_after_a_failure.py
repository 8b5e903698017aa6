"""An actor that stops on a failure runs ``on_stop`` in its last worker's task: the drain waits for it.

Under ``on_failure="stop"`` (or a restart limit reached) the worker that saw the failure finalizes the
actor — runs its ``on_stop`` — as it ends.  That task is still the runtime's work: ``rt.wait_idle()`` and
the drain of leaving ``async with Runtime()`` wait for it (at most ``drain_timeout``) rather than
cancelling the ``on_stop`` at once.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class SlowStop:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def on_start(self) -> None:
        pass

    async def on_stop(self) -> None:
        try:
            await anyio.sleep(0.5)
        except anyio.get_cancelled_exc_class():
            self.log.append("on_stop cancelled")
            raise
        self.log.append("on_stop done")

    async def receive(self, message: Any) -> Any:
        raise ValueError("boom")


async def test_wait_idle_waits_for_the_on_stop_a_failed_actors_worker_runs() -> None:
    log: list[str] = []
    with anyio.fail_after(20):
        async with Runtime(drain_timeout=5) as rt:
            ref = rt.spawn(lambda: SlowStop(log), on_failure="stop", direct=False)
            await ref.tell("boom")
            await anyio.sleep(0.1)  # the worker failed and is running on_stop
            await rt.wait_idle()
            log.append("idle")
    assert log == ["on_stop done", "idle"]


async def test_leaving_the_runtime_drains_the_on_stop_a_failed_actors_worker_runs() -> None:
    log: list[str] = []
    with anyio.fail_after(20):
        async with Runtime(drain_timeout=5) as rt:
            ref = rt.spawn(lambda: SlowStop(log), on_failure="stop", direct=False)
            await ref.tell("boom")
            await anyio.sleep(0.1)
    assert log == ["on_stop done"]
