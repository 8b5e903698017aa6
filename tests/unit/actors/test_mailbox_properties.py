"""Property: whatever the mailbox size, senders, mix of tell / ask / timed-out ask, the mailbox keeps its promises.

* every tell and every answered ask is handled exactly once, and in send order per sender;
* an ask that timed out was not completed after its deadline (it was skipped, or its handler was
  cancelled; a handler that finishes at the very instant of the deadline may complete);
* when everything is done the runtime holds no task, no busy handler and no queued message.

Runs on virtual time on both backends (a handler "works" for a drawn number of virtual seconds).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors.actors import Runtime
from agentactors.errors import AskTimeout
from agentactors.testing import VirtualTimeLoop

Op = tuple[str, float, float]  # (kind, handler seconds, ask timeout)

ops = st.lists(
    st.tuples(
        st.sampled_from(["tell", "ask", "ask_timeout", "try_tell"]),
        st.sampled_from([0.0, 0.5, 1.0, 2.0]),
        st.sampled_from([0.25, 1.5, 3.0]),
    ),
    min_size=1,
    max_size=25,
)


async def _scenario(mailbox_size: int, senders: list[list[Op]]) -> None:
    handled: list[tuple[int, int]] = []
    handled_at: dict[tuple[int, int], float] = {}

    class Worker:
        async def receive(self, message: tuple[int, int, float]) -> tuple[int, int]:
            sender, i, seconds = message
            await anyio.sleep(seconds)
            handled.append((sender, i))
            handled_at[(sender, i)] = anyio.current_time()
            return sender, i

    must_handle: set[tuple[int, int]] = set()
    timed_out: dict[tuple[int, int], float] = {}  # message -> its deadline

    async with Runtime() as rt:
        ref = rt.spawn(Worker(), mailbox_size=mailbox_size)

        async def send(sender: int, script: list[Op]) -> None:
            for i, (kind, seconds, timeout) in enumerate(script):
                message = (sender, i, seconds)
                if kind == "tell":
                    await ref.tell(message)
                    must_handle.add((sender, i))
                elif kind == "try_tell":
                    if ref.try_tell(message):
                        must_handle.add((sender, i))
                elif kind == "ask":
                    assert await ref.ask(message) == (sender, i)
                    must_handle.add((sender, i))
                else:
                    deadline = anyio.current_time() + timeout
                    try:
                        assert await ref.ask(message, timeout=timeout) == (sender, i)
                        must_handle.add((sender, i))
                    except AskTimeout:
                        assert anyio.current_time() == pytest.approx(deadline)
                        timed_out[(sender, i)] = deadline

        async with anyio.create_task_group() as tg:
            for sender, script in enumerate(senders):
                tg.start_soon(send, sender, script)
        await rt.wait_idle()
        stats = rt.stats()
        assert (stats.tasks, stats.busy, stats.queued) == (0, 0, 0)

    assert len(handled) == len(set(handled)), "a message was handled twice"
    assert must_handle <= set(handled)
    for key, deadline in timed_out.items():
        if key in handled_at:
            assert handled_at[key] == pytest.approx(deadline), f"{key} completed after its ask timed out"
    for sender in range(len(senders)):
        order = [i for (s, i) in handled if s == sender]
        assert order == sorted(order), f"sender {sender} out of order: {order}"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=60, deadline=None)
@given(mailbox_size=st.integers(min_value=1, max_value=4), senders=st.lists(ops, min_size=1, max_size=4))
def test_mailbox_delivers_once_in_order_and_cleans_up(backend: str, mailbox_size: int, senders: list[list[Op]]) -> None:
    options: dict[str, Any]
    if backend == "trio":
        options = {"clock": trio.testing.MockClock(autojump_threshold=0)}
    else:
        options = {"loop_factory": VirtualTimeLoop}
    anyio.run(_scenario, mailbox_size, senders, backend=backend, backend_options=options)
