"""How long leaving ``async with Runtime()`` may take, whatever its actors do; and a runtime that has closed.

The bound (``Runtime.__aexit__``): the drain (``drain_timeout``), then everything is cancelled; the
handlers still running in askers' tasks are waited for at most ``max(drain_timeout, 0.1)`` more, the
``on_stop`` hooks (side by side) at most that again, and the cleanups at most that again — so at most four
times ``drain_timeout`` (0.3 s more when it is under 0.1 s) for code that lets itself be cancelled.  A direct
handler that shields itself from cancellation does not hold the exit past that (it runs on in its asker's task);
only code the runtime's own tasks run (a worker's handler, a hook) and that refuses cancellation can: no task
can be abandoned under structured concurrency.

Virtual time: the clock jumps.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.actors.frame import ask_in, open_frame
from agentactors.errors import ActorStopped

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

DRAIN = 5.0


class Forever:
    """Never answers; ``shield`` makes it ignore cancellation (for ``hours`` hours, then answer)."""

    def __init__(self, shield: bool = False, on_stop_forever: bool = False) -> None:
        self.shield = shield
        self.on_stop_forever = on_stop_forever

    async def on_start(self) -> None:
        return None

    async def on_stop(self) -> None:
        if self.on_stop_forever:
            await anyio.sleep_forever()

    async def receive(self, message: Any) -> Any:
        if self.shield:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(3 * 3600)
            return message
        await anyio.sleep_forever()


async def _asker(ref: Any, out: list[Any], framed: bool = False) -> None:
    try:
        if framed:
            frame = open_frame(ref)
            with frame.scope:
                await ask_in(frame, ref, "x")
        else:
            await ref.ask("x")
    except ActorStopped as exc:
        out.append(exc)


@pytest.mark.parametrize("how", ["direct", "framed", "mailbox", "tell"])
async def test_a_handler_that_never_returns_holds_the_exit_for_the_drain_only(how: str) -> None:
    stopped: list[Any] = []
    async with anyio.create_task_group() as askers:  # the askers are not the runtime's tasks
        start = anyio.current_time()
        async with Runtime(drain_timeout=DRAIN) as rt:
            ref = rt.spawn(Forever(), direct=how != "mailbox")
            if how == "tell":
                await ref.tell("x")
            else:
                askers.start_soon(_asker, ref, stopped, how == "framed")
            await anyio.sleep(0.5)
        assert anyio.current_time() - start == pytest.approx(0.5 + DRAIN)
    assert len(stopped) == (0 if how == "tell" else 1)


async def test_hooks_and_cleanups_that_never_return_hold_the_exit_for_their_own_bound() -> None:
    async def forever(_: object) -> None:
        await anyio.sleep_forever()

    start = anyio.current_time()
    async with Runtime(drain_timeout=DRAIN) as rt:
        ref = rt.spawn(Forever(on_stop_forever=True))
        rt.service("forever", lambda: object(), cleanup=forever)
        with pytest.raises(TimeoutError):
            with anyio.fail_after(1):
                await ref.ask("x")  # started (on_start ran), so on_stop will run
    # Idle at once: the hooks' bound, then the cleanups' own.
    assert anyio.current_time() - start == pytest.approx(1 + 2 * DRAIN)


async def test_a_direct_handler_that_ignores_cancellation_does_not_hold_the_exit_past_its_bound() -> None:
    answers: list[Any] = []

    async def asker(ref: Any) -> None:
        answers.append(await ref.ask("late"))

    async with anyio.create_task_group() as askers:
        start = anyio.current_time()
        async with Runtime(drain_timeout=DRAIN) as rt:
            ref = rt.spawn(Forever(shield=True))
            askers.start_soon(asker, ref)
            await anyio.sleep(0.5)
        assert anyio.current_time() - start == pytest.approx(0.5 + 2 * DRAIN)
        assert ref.stopped and answers == []
    assert answers == ["late"]  # its asker's task ran it on: hours later, the answer is its asker's


async def test_a_closed_runtime_says_it_has_closed() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Forever())
    with pytest.raises(RuntimeError, match="has closed"):
        rt.spawn(Forever())
    with pytest.raises(RuntimeError, match="has closed"):
        rt.spawn_task(anyio.sleep, 0)
    with pytest.raises(ActorStopped):
        await ref.ask("x")
    await ref.tell("x")  # a dead letter
    assert ref.try_tell("x") is False
    await rt.stop(ref)  # stopped already: returns
