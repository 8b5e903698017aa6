"""``rt.wait_idle()`` called from a handler (or ``on_start``) of one of the runtime's own actors.

It waits until no handler runs — that very handler included — so it used to wait forever (the drain's own
bound does not apply: ``wait_idle`` has none).  Its docstring said "don't"; it is now a ``RuntimeError`` at the
call.  Another task of the loop waits as before, for handlers of any actor, direct ones included.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Waits:
    async def receive(self, message: Any) -> Any:
        rt = Runtime.current()
        assert rt is not None
        try:
            await rt.wait_idle()
        except RuntimeError as exc:
            return str(exc)
        return "waited"


@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("concurrency", [1, 3])
async def test_wait_idle_from_an_actors_own_handler_is_refused(direct: bool, concurrency: int) -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Waits(), direct=direct, concurrency=concurrency)
        with anyio.fail_after(1):  # (virtual time: a hang is a TimeoutError here)
            answer = await ref.ask("x")
        assert "wait_idle()" in answer and "itself" in answer


async def test_wait_idle_from_another_task_waits_for_a_direct_handler() -> None:
    release = anyio.Event()
    order: list[str] = []

    class Holds:
        async def receive(self, message: Any) -> Any:
            await release.wait()
            order.append("handled")

    async with Runtime() as rt:
        ref = rt.spawn(Holds())
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, "x")
            await anyio.wait_all_tasks_blocked()

            async def waiter() -> None:
                await rt.wait_idle()
                order.append("idle")

            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            release.set()
        assert order == ["handled", "idle"]
