"""An asker already cancelled raises at its ask before its message is handled — through the mailbox too, on asyncio too.

``ActorRef.ask`` says so ("an ask is a cancellation point: an already-cancelled asker raises before its message is
handled"), and the direct path checks before it runs anything.  The mailbox path (an actor spawned ``direct=False``,
or one busy) did not: it queued the message and started a worker, then waited.  On trio the wait raised at once
and the worker skipped the abandoned message; on asyncio anyio delivers a cancellation of the running task at its
next yield, after the worker that was scheduled first — which handled the message.  A cleanup in a cancelled
``finally`` (a common place for an unshielded ask) had its side effect on asyncio and not on trio.  Found by a trial
of ``docs/actors.md``.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Recording:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def receive(self, message: Any) -> Any:
        self.seen.append(message)
        return message


@pytest.mark.parametrize("within", [None, 5.0], ids=["no_timeout", "timeout"])
async def test_an_already_cancelled_asker_is_never_handled_through_the_mailbox(within: float | None) -> None:
    async with Runtime() as rt:
        actor = Recording()
        ref = rt.spawn(actor, direct=False)
        assert await ref.ask("first") == "first"  # started, idle: the next ask goes to the mailbox, a worker answers
        with anyio.CancelScope() as scope:
            scope.cancel()
            await ref.ask("after cancel", timeout=within)
            pytest.fail("the ask was no cancellation point")  # pragma: no cover
        assert scope.cancelled_caught
        await anyio.sleep(1)
        await rt.wait_idle()
        assert actor.seen == ["first"]
        assert await ref.ask("next") == "next"  # nothing else changed
        assert rt.stats().queued == 0


async def test_an_already_cancelled_asker_is_never_handled_behind_a_busy_handler() -> None:
    async with Runtime() as rt:
        release = anyio.Event()

        class Busy(Recording):
            async def receive(self, message: Any) -> Any:
                if message == "hold":
                    await release.wait()
                return await super().receive(message)

        actor = Busy()
        ref = rt.spawn(actor)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, "hold")
            await anyio.sleep(0.1)  # the one slot is held: the next ask queues
            with anyio.CancelScope() as scope:
                scope.cancel()
                await ref.ask("after cancel")
            assert scope.cancelled_caught
            release.set()
        await rt.wait_idle()
        assert actor.seen == ["hold"]
