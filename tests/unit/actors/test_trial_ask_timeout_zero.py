"""``ask(timeout=0)`` has expired before anything is sent: ``AskTimeout`` at once, on both backends, on every path.

Found by a trial of ``docs/actors.md``: a zero timeout is valid ("a number of seconds, zero or more"), but what it
did depended on the backend and on timing.  On asyncio the message was queued, a worker handled it in the same loop
iteration and the answer was returned (anyio delivers the deadline's cancellation at the asker's next yield, after
the worker ran); on trio the asker was cancelled at its first checkpoint, so the direct actor's message was skipped
(``AskTimeout``, never handled) — while a worker actor's first message, started in time, was handled and answered.
One program, two outcomes, and a handler that ran or not by chance.

Also: ``spawn(direct=...)`` and ``spawn(quiet=...)`` take a bool; ``direct="no"`` was taken as ``True``
(a direct actor), ``direct=None`` as ``False``, silently.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors.actors import Runtime
from agentactors.errors import ActorStopped, AskTimeout

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Echo:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def receive(self, message: Any) -> Any:
        self.seen.append(message)
        return message


class Starting(Echo):
    async def on_start(self) -> None:
        await anyio.lowlevel.checkpoint()


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "mailbox"])
@pytest.mark.parametrize("actor_class", [Echo, Starting], ids=["started", "with_on_start"])
@pytest.mark.parametrize("zero", [0, 0.0], ids=["int", "float"])
async def test_a_zero_timeout_expires_before_anything_is_sent(
    direct: bool, actor_class: type[Echo], zero: float
) -> None:
    async with Runtime() as rt:
        actor = actor_class()
        ref = rt.spawn(actor, direct=direct)
        with pytest.raises(AskTimeout, match="within 0s"):
            await ref.ask("never", timeout=zero)
        await anyio.sleep(1)
        await rt.wait_idle()
        assert actor.seen == []  # not sent, so never handled
        assert await ref.ask("next") == "next"  # the actor is untouched
        assert rt.stats().queued == 0


async def test_a_zero_timeout_to_a_stopped_actor_is_actor_stopped() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Echo())
        await rt.stop(ref)
        with pytest.raises(ActorStopped):
            await ref.ask("x", timeout=0)


async def test_a_zero_timeout_is_still_a_cancellation_point() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Echo())
        with anyio.CancelScope() as scope:
            scope.cancel()
            await ref.ask("x", timeout=0)
            pytest.fail("not a cancellation point")  # pragma: no cover
        assert scope.cancelled_caught


@pytest.mark.parametrize("setting", ["direct", "quiet"])
@pytest.mark.parametrize("value", ["no", None, 0, 1], ids=repr)
async def test_spawn_refuses_a_flag_that_is_not_a_bool(setting: str, value: Any) -> None:
    async with Runtime() as rt:
        rt.spawn(Echo())  # a spec with the defaults exists: 1 == True must not find it
        before = rt.stats().actors
        with pytest.raises(TypeError, match=setting):
            rt.spawn(Echo(), **{setting: value})
        assert rt.stats().actors == before
