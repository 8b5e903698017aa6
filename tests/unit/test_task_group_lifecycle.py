"""A task group that is not active (not entered yet, or exited) starts no task: ``RuntimeError``, as anyio's.

On asyncio the group is bare tasks (:mod:`agentactors._task_group`); ``start_soon`` after the group's exit used
to start one anyway — a task no one waited for, whose failure no one would see, outliving the structure it was
started in.  trio's nursery refused it already; both now refuse it alike, and before ``async with`` too.
"""

from __future__ import annotations

import anyio
import pytest

from agentactors._task_group import open_task_group

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


async def test_start_soon_after_the_exit_is_refused_and_starts_nothing() -> None:
    ran: list[str] = []

    async def task() -> None:
        ran.append("ran")

    async with open_task_group() as group:
        group.start_soon(task)
    assert ran == ["ran"]
    with pytest.raises(RuntimeError, match=r"not active|closed"):
        group.start_soon(task)
    await anyio.wait_all_tasks_blocked()
    assert ran == ["ran"]


async def test_start_soon_after_an_exit_by_failure_is_refused() -> None:
    async def boom() -> None:
        raise ValueError("boom")

    group = open_task_group()
    with pytest.raises(BaseExceptionGroup):
        async with group:
            group.start_soon(boom)
    with pytest.raises(RuntimeError, match=r"not active|closed"):
        group.start_soon(boom)


async def test_start_soon_before_the_group_is_entered_is_refused() -> None:
    async def task() -> None:
        pass

    group = open_task_group()
    with pytest.raises(RuntimeError, match=r"not active|closed"):
        group.start_soon(task)
