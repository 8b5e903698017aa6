"""A handler (or ``on_start``) in a worker that raises a ``BaseException`` that is not a failure nor a cancellation.

``KeyboardInterrupt``, ``SystemExit`` or a ``BaseException`` of the user's own (``pytest.fail()`` raises
one) out of a worker used to leave the task group as it pleased the backend: on trio the runtime left
``async with`` with a ``BaseExceptionGroup`` around it (an ``except KeyboardInterrupt`` around the program
missed it), on asyncio the interrupt left the event loop itself, past the runtime's exit.  Now it is an
escalation: the actor halts, the runtime is cancelled and the exception leaves ``async with Runtime()``
bare, on both backends, after the exit ran; an asker waiting for that handler gets ``ActorStopped``.

``GeneratorExit`` raised by a handler or ``on_start`` too: it used to go on as it was (as if the worker's
coroutine were being closed) and leave the runtime wrapped in a group.  It is no failure either (see
:mod:`agentactors.actors.worker` for why it escalates rather than being supervised).

A handler run directly, in the asker's own task, raises it in that task, as any code the asker runs.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.errors import ActorStopped

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Custom(BaseException):
    """A ``BaseException`` of the user's own."""


KINDS = pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit, GeneratorExit, Custom])


class Raiser:
    """``"boom"`` raises ``kind``; ``on_start`` raises it too when ``on_start_raises``."""

    def __init__(self, kind: type[BaseException], on_start_raises: bool = False) -> None:
        self.kind = kind
        self.on_start_raises = on_start_raises
        self.stopped = False

    async def on_start(self) -> None:
        await anyio.lowlevel.checkpoint()
        if self.on_start_raises:
            raise self.kind()

    async def on_stop(self) -> None:
        self.stopped = True

    async def receive(self, message: Any) -> Any:
        await anyio.lowlevel.checkpoint()
        if message == "boom":
            raise self.kind()
        return message


@KINDS
async def test_out_of_an_asks_handler_in_a_worker_it_leaves_the_block_bare(kind: type[BaseException]) -> None:
    actor = Raiser(kind)
    with pytest.raises(kind) as raised:
        async with Runtime() as rt:
            ref = rt.spawn(actor, direct=False)
            assert await ref.ask("warm-up") == "warm-up"
            with pytest.raises(ActorStopped):
                await ref.ask("boom")
            await anyio.sleep_forever()  # the escalation cancels the block
    assert type(raised.value) is kind
    assert ref.stopped and actor.stopped  # the exit ran: the actor was stopped in order


@KINDS
async def test_out_of_a_tells_handler_it_leaves_the_block_bare(kind: type[BaseException]) -> None:
    with pytest.raises(kind) as raised:
        async with Runtime() as rt:
            ref = rt.spawn(Raiser(kind))
            await ref.tell("boom")
            await anyio.sleep_forever()
    assert type(raised.value) is kind


@KINDS
async def test_out_of_on_start_in_a_worker_it_leaves_the_block_bare(kind: type[BaseException]) -> None:
    with pytest.raises(kind) as raised:
        async with Runtime() as rt:
            ref = rt.spawn(Raiser(kind, on_start_raises=True), direct=False)
            with pytest.raises(ActorStopped):
                await ref.ask("hello")
            await anyio.sleep_forever()
    assert type(raised.value) is kind


@KINDS
async def test_out_of_a_direct_handler_it_is_the_askers_and_the_actor_goes_on(kind: type[BaseException]) -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Raiser(kind))
        with pytest.raises(kind):
            await ref.ask("boom")
        assert await ref.ask("after") == "after"
        assert rt.stats().busy == 0
