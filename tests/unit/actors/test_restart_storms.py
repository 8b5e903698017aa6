"""Restart storms: an actor whose ``on_start`` (or handler) fails again and again under ``on_failure="restart"``.

Each restart used to start the new incarnation from inside the supervision of the last one's failure
(``start`` → ``failed`` → ``_restart`` → ``start`` ...), a Python frame or three deeper each time: some 330
restarts in a row — a generous ``max_restarts``, or a ``restart_window`` shorter than an ``on_start`` —
ended in a ``RecursionError`` that took the whole runtime down (a group out of ``async with``, every asker
cancelled).  Restarts now follow one another in a loop, each a cancellation point: the limits decide, and
a storm the limits allow is still ended by ``stop()``, a timeout or the runtime's exit.
"""

from __future__ import annotations

from typing import Any, ClassVar

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.errors import ActorStopped, AskTimeout

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class NeverStarts:
    """``on_start`` takes 10 ms, then fails; counted across incarnations."""

    starts: ClassVar[int] = 0
    stops: ClassVar[int] = 0

    async def on_start(self) -> None:
        type(self).starts += 1
        await anyio.sleep(0.01)
        raise ValueError("cannot start")

    async def on_stop(self) -> None:
        type(self).stops += 1

    async def receive(self, message: Any) -> Any:
        return message


class AlwaysFails:
    """Started fine; its handler fails every time, and its next incarnation's ``on_start`` fails too."""

    built: ClassVar[int] = 0

    def __init__(self) -> None:
        type(self).built += 1
        self.first = type(self).built == 1

    async def on_start(self) -> None:
        if not self.first:
            await anyio.sleep(0.01)
            raise ValueError("cannot start again")

    async def receive(self, message: Any) -> Any:
        raise ValueError("boom")


@pytest.fixture(autouse=True)
def _reset() -> None:
    NeverStarts.starts = NeverStarts.stops = 0
    AlwaysFails.built = 0


@pytest.mark.parametrize("direct", [True, False])
async def test_a_thousand_restarts_in_a_row_end_in_a_stop_not_a_crash(direct: bool) -> None:
    with anyio.fail_after(600):
        async with Runtime() as rt:
            ref = rt.spawn(NeverStarts, on_failure="restart", max_restarts=1000, restart_window=3600, direct=direct)
            with pytest.raises(ActorStopped, match="max_restarts=1000"):
                await ref.ask("hello")
            assert ref.stopped
    assert NeverStarts.starts == 1001
    assert NeverStarts.stops == 0  # none of them started: none is stopped


async def test_a_storm_the_window_allows_is_ended_by_a_timeout_and_the_exit() -> None:
    """Each ``on_start`` outlasts the window: no two failures are ever inside it, so the restarts go on."""
    with anyio.fail_after(600):
        async with Runtime(drain_timeout=1) as rt:
            ref = rt.spawn(NeverStarts, on_failure="restart", max_restarts=1, restart_window=0.005, direct=False)
            with pytest.raises(AskTimeout):
                await ref.ask("hello", timeout=10)  # ~1,000 restarts meanwhile
            assert not ref.stopped
        assert ref.stopped
    assert NeverStarts.starts > 900


async def test_a_storm_from_a_handler_then_its_on_starts_ends_in_a_stop() -> None:
    with anyio.fail_after(600):
        async with Runtime() as rt:
            ref = rt.spawn(AlwaysFails, on_failure="restart", max_restarts=500, restart_window=3600)
            with pytest.raises(ValueError, match="boom"):
                await ref.ask("hello")  # the handler's failure is the asker's; the restarts follow in a worker
            await rt.wait_idle()
            assert ref.stopped
            with pytest.raises(ActorStopped):
                await ref.ask("again")
    assert AlwaysFails.built == 501
