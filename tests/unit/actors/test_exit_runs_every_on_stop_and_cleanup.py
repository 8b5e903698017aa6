"""One ``on_stop`` or cleanup that runs past the exit's bound does not skip the others.

The exit used to run the hooks one after another and then the cleanups, all under one bound: an
``on_stop`` still running when it expired was cancelled, the cancellation left the loop, and the other
actors' ``on_stop`` and every cleanup (the shared providers' ``aclose``, the sessions', MCP links') were
skipped, with nothing logged.  Now the hooks run side by side within ``max(drain_timeout, 0.1)``, the
cleanups within a bound of their own after them, and each one cut off is named in a warning.

Virtual time: the clock jumps.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

DRAIN = 5.0


class Stopping:
    def __init__(self, done: list[str], name: str, forever: bool = False) -> None:
        self.done = done
        self.name = name
        self.forever = forever

    async def receive(self, message: Any) -> Any:
        return message

    async def on_stop(self) -> None:
        if self.forever:
            await anyio.sleep_forever()
        await anyio.sleep(1)  # takes a while, well within the bound
        self.done.append(self.name)


async def test_an_on_stop_past_the_bound_does_not_skip_the_others_nor_the_cleanups(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done: list[str] = []

    async def cleanup(value: str) -> None:
        await anyio.sleep(1)
        done.append(f"cleanup {value}")

    with caplog.at_level(logging.WARNING, logger="agentactors.actors"):
        async with Runtime(drain_timeout=DRAIN) as rt:
            rt.service("svc", lambda: "svc", cleanup=cleanup)
            refs = [rt.spawn(Stopping(done, "a"), name="a"), rt.spawn(Stopping(done, "slow", True), name="slow")]
            refs += [rt.spawn(Stopping(done, name), name=name) for name in ("b", "c")]
            for ref in refs:
                await ref.ask("start it")
            start = anyio.current_time()
        took = anyio.current_time() - start
    assert sorted(done) == ["a", "b", "c", "cleanup svc"]
    assert done[-1] == "cleanup svc"  # after every hook
    assert took == pytest.approx(DRAIN + 1)  # the hooks' bound, then the cleanup's own second
    cut = [r.getMessage() for r in caplog.records if "cut off" in r.getMessage()]
    assert len(cut) == 1 and "'slow'" in cut[0] and "on_stop" in cut[0]


async def test_a_cleanup_past_its_bound_is_named_and_the_older_ones_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran: list[str] = []

    async def forever(_: str) -> None:
        await anyio.sleep_forever()

    async def close(value: str) -> None:
        ran.append(value)  # what it does before its first await is done even past the bound
        await anyio.sleep(1)
        ran.append(f"{value} closed")

    with caplog.at_level(logging.WARNING, logger="agentactors.actors"):
        async with Runtime(drain_timeout=DRAIN) as rt:
            rt.service("older", lambda: "older", cleanup=close)
            rt.service("stuck", lambda: "stuck", cleanup=forever)
            start = anyio.current_time()
        took = anyio.current_time() - start
    assert ran == ["older"]  # run, cancelled at its first await: the exit's bound had passed
    assert took == pytest.approx(DRAIN)
    cut = [r.getMessage() for r in caplog.records if "cut off" in r.getMessage()]
    assert len(cut) == 2 and "'stuck'" in cut[0] and "'older'" in cut[1]
