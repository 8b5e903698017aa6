"""A task of the runtime (``rt.spawn_task``, background or not) that raises a ``BaseException`` that is no failure.

``KeyboardInterrupt``, ``SystemExit`` or the user's own out of such a task used to leave the task group as it
pleased the backend: on asyncio it left the event loop itself, past the runtime's exit (no ``on_stop``, no
cleanup ran); on trio the runtime left ``async with`` with a ``BaseExceptionGroup`` around it, which an
``except KeyboardInterrupt`` misses.  It now escalates as one out of a worker's handler does: the runtime is
cancelled, its exit runs in order, and the exception leaves ``async with Runtime()`` bare, on both backends.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Custom(BaseException):
    """A ``BaseException`` of the user's own."""


class Hooked:
    def __init__(self) -> None:
        self.stopped = False

    async def on_start(self) -> None:
        pass

    async def on_stop(self) -> None:
        self.stopped = True

    async def receive(self, message: Any) -> Any:
        return message


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit, Custom])
@pytest.mark.parametrize("background", [False, True])
async def test_it_leaves_the_block_bare_after_the_exit_ran(kind: type[BaseException], background: bool) -> None:
    actor = Hooked()
    cleaned: list[str] = []

    async def cleanup(value: str) -> None:
        cleaned.append(value)

    async def boom() -> None:
        await anyio.lowlevel.checkpoint()
        raise kind("from a task")

    with pytest.raises(kind) as raised:
        async with Runtime() as rt:
            rt.service("svc", lambda: "svc", cleanup=cleanup)
            await rt.spawn(actor).ask("start")
            rt.spawn_task(boom, background=background)
            await anyio.sleep_forever()  # the escalation cancels the block
    assert type(raised.value) is kind and raised.value.args == ("from a task",)
    assert actor.stopped and cleaned == ["svc"]
