"""WorkerThreads: a bounded number of blocking calls at once, slots freed on abandonment, stuck threads counted.

Real threads and a real clock (an autojumping clock would skip past a thread's work); every wait is short
and bounded, and every blocked thread is released before the test ends.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime, WorkerThreads, worker_threads
from agentactors.actors.threads import DEFAULT_LIMIT

pytestmark = pytest.mark.anyio


async def _eventually(check: Callable[[], bool], within: float = 30.0) -> None:
    with anyio.fail_after(within):
        while not check():  # noqa: ASYNC110 - what is checked is changed by worker threads
            await anyio.sleep(0.01)


async def _given_up_once_started(pool: WorkerThreads, fn: Callable[[], object], started: threading.Event,
                                 **kwargs: Any) -> None:
    """``pool.run_sync(fn)``, cancelled once ``fn``'s thread has set ``started`` (a condition, not a clock)."""
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def give_up() -> None:
                await _eventually(started.is_set)
                scope.cancel()

            tg.start_soon(give_up)
            await pool.run_sync(fn, **kwargs)
    assert scope.cancelled_caught


async def test_a_call_returns_its_value_and_raises_its_error() -> None:
    pool = WorkerThreads(2)
    loop_thread = threading.get_ident()
    assert await pool.run_sync(threading.get_ident) != loop_thread

    def boom() -> None:
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        await pool.run_sync(boom)
    assert pool.running == 0 and pool.abandoned == 0


async def test_at_most_limit_calls_run_at_once() -> None:
    pool = WorkerThreads(3)
    live = [0, 0]
    lock = threading.Lock()

    def work() -> None:
        with lock:
            live[0] += 1
            live[1] = max(live[1], live[0])
        time.sleep(0.02)
        with lock:
            live[0] -= 1

    async with anyio.create_task_group() as tg:
        for _ in range(9):
            tg.start_soon(pool.run_sync, work)
    assert live[1] == 3


async def test_an_abandoned_call_frees_its_slot_and_is_counted_until_its_thread_returns() -> None:
    pool = WorkerThreads(1)
    release = threading.Event()
    started = threading.Event()
    reported: list[int] = []

    def stuck() -> str:
        started.set()
        release.wait(60)  # released below: the bound only keeps a failed test from hanging
        return "late"

    await _given_up_once_started(pool, stuck, started, on_abandoned=reported.append)
    assert reported == [1] and pool.abandoned == 1
    # The one slot is free although its thread still runs: the next call is not held up by it.
    assert await pool.run_sync(lambda: "next") == "next"
    release.set()
    await _eventually(lambda: pool.abandoned == 0)


async def test_a_call_given_up_before_its_thread_started_never_runs() -> None:
    pool = WorkerThreads(1)
    release = threading.Event()
    ran: list[str] = []

    def first() -> None:
        release.wait(5)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pool.run_sync, first)
        await _eventually(lambda: pool.running == 1)
        with anyio.move_on_after(0.02):
            await pool.run_sync(lambda: ran.append("second"))  # waits for the only slot, gives up
        release.set()
    await anyio.sleep(0.05)
    assert ran == [] and pool.abandoned == 0


async def test_the_limit_is_checked_and_can_grow_while_callers_wait() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="positive int"):
            WorkerThreads(bad)  # type: ignore[arg-type]
    assert WorkerThreads().limit == DEFAULT_LIMIT == 40
    pool = WorkerThreads(1)
    release = threading.Event()
    done: list[int] = []

    def hold(n: int) -> None:
        release.wait(5)
        done.append(n)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pool.run_sync, lambda: hold(1))
        tg.start_soon(pool.run_sync, lambda: hold(2))
        await _eventually(lambda: pool.running == 1)
        pool.limit = 2  # the waiting caller gets a slot
        await _eventually(lambda: pool.running == 2)
        release.set()
    assert sorted(done) == [1, 2]
    with pytest.raises(ValueError):
        pool.limit = 0
    assert "limit=2" in repr(pool)


async def test_one_pool_per_event_loop_and_the_runtime_reports_its_abandoned_threads() -> None:
    pool = worker_threads()
    assert worker_threads() is pool
    release = threading.Event()
    before = pool.abandoned  # the event loop may be shared with other tests: count from here
    async with Runtime() as rt:
        assert rt.stats().abandoned_threads == before
        for _ in range(3):
            started = threading.Event()

            def stuck(started: threading.Event = started) -> bool:
                started.set()
                return release.wait(60)  # released below

            await _given_up_once_started(pool, stuck, started)
        assert rt.stats().abandoned_threads == before + 3 == pool.abandoned
        release.set()
        await _eventually(lambda: rt.stats().abandoned_threads == before)


def test_stats_outside_any_event_loop_report_no_abandoned_threads() -> None:
    rt = Runtime()
    assert rt.stats().abandoned_threads == 0
