"""``rt.call`` from another thread's loop while the runtime closes and its event loop ends.

The caller checks that the runtime runs, then hands the call to the runtime's loop.  If the runtime
closed and its asyncio loop stopped in between, ``call_soon_threadsafe`` still accepted the hand-over
(a stopped loop is not a closed one), nothing ever ran it, and the caller waited for ever.  Now the
hand-over is registered with the runtime under a lock: the runtime's exit fails those it finds, and one
made after the exit is refused at once — ``RuntimeError`` either way, as for a call the exit cut short.

Real threads, real clocks: the pause between the check and the hand-over is made by hand (the caller's
check is wrapped to wait until the runtime's loop has ended); the bounds are generous.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import anyio
import pytest

from agentactors.actors import Runtime

pytestmark = pytest.mark.anyio

BOUND = 10.0  # seconds: far beyond the few milliseconds the refusal takes, far below the suite's timeout


async def _one() -> int:
    return 1


def _run_host(backend: str, main: Callable[[], object], release: threading.Event) -> None:
    """Run ``main`` in a ``backend`` loop of this thread; an asyncio loop stays open (stopped) until ``release``."""
    if backend == "trio":
        anyio.run(main, backend="trio")  # type: ignore[arg-type]
        release.wait(BOUND)
        return
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(main())  # type: ignore[arg-type]
        release.wait(BOUND)  # stopped, not closed: call_soon_threadsafe still accepts callbacks
    finally:
        loop.close()


@pytest.mark.parametrize("host", ["asyncio", "trio"])
async def test_a_call_handed_over_after_the_runtime_and_its_loop_ended_fails_at_once(
    host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    caller = threading.get_ident()
    handed: list[Runtime] = []
    entered, checked, ended, release = (threading.Event() for _ in range(4))

    async def main() -> None:
        async with Runtime() as rt:
            handed.append(rt)
            entered.set()
            while not checked.is_set():  # noqa: ASYNC110 - another thread sets it: no event of this loop
                await anyio.sleep(0.005)

    original = Runtime._check_running

    def check_then_pause(self: Runtime) -> None:
        original(self)
        if threading.get_ident() == caller:  # the caller passed the check: let the runtime close meanwhile
            checked.set()
            assert ended.wait(BOUND)

    thread = threading.Thread(target=_run_host, args=(host, main, release))
    thread.start()
    try:
        assert await anyio.to_thread.run_sync(entered.wait, BOUND)
        (rt,) = handed

        def wait_ended() -> None:
            assert checked.wait(BOUND)
            while thread.is_alive() and rt.running:
                threading.Event().wait(0.005)
            threading.Event().wait(0.05)  # the runtime's loop has stopped by now (its main returned)
            ended.set()

        watcher = threading.Thread(target=wait_ended)
        watcher.start()
        monkeypatch.setattr(Runtime, "_check_running", check_then_pause)
        with anyio.fail_after(BOUND), pytest.raises(RuntimeError, match="not running"):
            await rt.call(_one)
        await anyio.to_thread.run_sync(watcher.join)
    finally:
        ended.set()
        release.set()
        await anyio.to_thread.run_sync(thread.join)
