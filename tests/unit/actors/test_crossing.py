"""``Crossing.outcome``: the caller's side of a call handed to another thread's loop.

A caller cancelled while it waits asks the runtime's loop to cancel the hosted call, and waits for it
there.  When that loop has already ended, its scheduler refuses the request (asyncio: ``Event loop is
closed``; trio: ``RunFinishedError``); nothing of the call runs any more, so the caller's cancellation
goes on — it used to be replaced by that ``RuntimeError``, which a cancelled scope does not absorb.

Real threads (a loop that has ended is one that ran in a thread).  The cancellations are made by hand,
not by a clock.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest

from agentactors.actors.crossing import Crossing, Waker, current_waker

pytestmark = pytest.mark.anyio


async def _an_ended_loops_waker(backend: str) -> Waker:
    """The thread-safe scheduler of a ``backend`` event loop that ran in another thread and has ended."""
    wakers: list[Waker] = []

    async def take() -> None:
        wakers.append(current_waker())

    thread = threading.Thread(target=anyio.run, args=(take,), kwargs={"backend": backend})
    thread.start()
    await anyio.to_thread.run_sync(thread.join)
    (waker,) = wakers
    with pytest.raises(RuntimeError):  # what the test stands on: an ended loop refuses to be woken
        waker(lambda: None)
    return waker


@pytest.mark.parametrize("host", ["asyncio", "trio"])
async def test_a_cancelled_caller_whose_runtime_loop_has_ended_gets_its_cancellation(host: str) -> None:
    wake_host = await _an_ended_loops_waker(host)
    crossing = Crossing(current_waker())
    with anyio.CancelScope() as scope:
        scope.cancel()
        await crossing.outcome(wake_host)  # cancelled at once: the runtime's loop cannot be told
    assert scope.cancelled_caught  # the cancellation, absorbed by its own scope: no RuntimeError


async def test_a_caller_cancelled_after_the_hosted_call_ended_asks_nothing_of_the_runtimes_loop() -> None:
    """The call ended in the runtime's loop; the wake-up it sent has not run in the caller's loop yet."""
    wake_ups: list[Any] = []
    asked: list[Any] = []

    def wake_host(fn: Any) -> None:
        asked.append(fn)
        raise RuntimeError("the runtime's loop was asked")  # (and nothing would wake the caller: no hang here)

    crossing = Crossing(wake_ups.append)  # the caller's loop, as it stands before it runs what it was sent
    crossing.finish(result="answer")
    assert len(wake_ups) == 1
    with anyio.CancelScope() as scope:
        scope.cancel()
        await crossing.outcome(wake_host)
    assert scope.cancelled_caught and asked == []  # nothing left to cancel there, nothing to wait for


async def test_an_outcome_that_arrived_is_returned_and_an_error_raised() -> None:
    calls: list[Any] = []

    def wake_host(fn: Any) -> None:
        calls.append(fn)

    crossing = Crossing(current_waker())
    crossing.finish(result=42)
    with anyio.fail_after(5):
        assert await crossing.outcome(wake_host) == 42
    failing = Crossing(current_waker())
    failing.finish(error=KeyError("inside"))
    with anyio.fail_after(5), pytest.raises(KeyError, match="inside"):
        await failing.outcome(wake_host)
    assert calls == []  # nobody was cancelled: nothing was asked of the runtime's loop
