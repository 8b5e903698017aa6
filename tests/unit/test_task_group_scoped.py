"""``TaskGroup.start_scoped``: a task entering its group scope itself — no wrapping coroutine — with anyio's semantics.

A batch's workers are started so (each of W3's waiting runs held the wrapper's frame, ~0.23 KB); what a
task of the group relies on must hold as for :meth:`start_soon` (tests/unit/test_task_group.py).
"""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest

from agentactors._containment import is_cancellation
from agentactors._task_group import NO_SCOPE, TaskGroup, open_task_group

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


async def test_the_task_runs_the_given_coroutine_itself(anyio_backend_name: str) -> None:
    seen: list[str] = []

    async def worker(scope: Any) -> None:
        with scope if scope is not None else NO_SCOPE:
            if anyio_backend_name == "trio":
                import trio

                seen.append(trio.lowlevel.current_task().coro.cr_code.co_name)
            else:
                import asyncio

                task = asyncio.current_task()
                assert task is not None
                seen.append(task.get_coro().cr_code.co_name)  # type: ignore[union-attr]
            seen.append("no scope" if scope is None else "a scope")

    async with open_task_group() as group:
        group.start_scoped(worker)
    assert seen == ["worker", "no scope" if anyio_backend_name == "trio" else "a scope"]


async def test_a_cancellation_of_the_group_or_around_it_is_a_real_one_inside() -> None:
    seen: list[tuple[str, bool]] = []

    async def sleeper(scope: Any, name: str) -> None:
        with scope if scope is not None else NO_SCOPE:
            try:
                await anyio.sleep(100)
            except BaseException as exc:
                seen.append((name, is_cancellation(exc)))
                raise

    async def stopper(group: TaskGroup) -> None:
        await anyio.sleep(1)
        group.cancel()

    with anyio.fail_after(10):
        async with open_task_group() as group:
            group.start_scoped(sleeper, "by the group")
            group.start_soon(stopper, group)
    with anyio.move_on_after(1) as outer:
        async with open_task_group() as group:
            group.start_scoped(sleeper, "around it")
    assert outer.cancelled_caught
    assert seen == [("by the group", True), ("around it", True)]


async def test_the_deadline_where_the_group_was_entered_holds_inside() -> None:
    seen: list[float] = []

    async def child(scope: Any) -> None:
        with scope if scope is not None else NO_SCOPE:
            seen.append(anyio.current_effective_deadline())

    with anyio.fail_after(30) as around:
        async with open_task_group() as group:
            with anyio.fail_after(5):  # noqa: ASYNC100 - the deadline start_scoped is called under is the point
                group.start_scoped(child)
    async with open_task_group() as group:
        group.start_scoped(child)
    assert seen == [around.deadline, math.inf]


async def test_started_into_a_cancelled_group_it_is_cancelled_at_its_first_checkpoint() -> None:
    reached: list[str] = []

    async def child(scope: Any) -> None:
        with scope if scope is not None else NO_SCOPE:
            reached.append("started")
            await anyio.sleep(100)
            reached.append("slept")

    with anyio.fail_after(10):
        async with open_task_group() as group:
            group.cancel()
            group.start_scoped(child)
    assert reached == ["started"]


async def test_a_failing_task_cancels_the_others_and_leaves_in_a_group() -> None:
    ended: list[str] = []

    async def fails(scope: Any) -> None:
        with scope if scope is not None else NO_SCOPE:
            await anyio.sleep(1)
            raise ValueError("boom")

    async def sleeper(scope: Any) -> None:
        with scope if scope is not None else NO_SCOPE:
            try:
                await anyio.sleep(100)
            finally:
                ended.append("sleeper")

    with anyio.fail_after(10), pytest.raises(BaseExceptionGroup) as caught:
        async with open_task_group() as group:
            group.start_scoped(sleeper)
            group.start_scoped(fails)
    assert ended == ["sleeper"]
    assert [type(e) for e in caught.value.exceptions] == [ValueError]


async def test_start_scoped_outside_the_group_is_refused_and_starts_nothing() -> None:
    started: list[str] = []

    async def child(scope: Any) -> None:
        started.append("started")

    group = open_task_group()
    with pytest.raises(RuntimeError):
        group.start_scoped(child)
    async with group:
        pass
    with pytest.raises(RuntimeError):
        group.start_scoped(child)
    await anyio.sleep(0.1)
    assert started == []
