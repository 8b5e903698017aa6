"""The runtime's and batches' task group: the backend's lightest, with anyio's task-group semantics on both backends."""

from __future__ import annotations

import math

import anyio
import pytest

from agentactors._containment import is_cancellation
from agentactors._task_group import TaskGroup, open_task_group

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


async def test_a_task_is_the_backends_own_without_anyios_handle(anyio_backend_name: str) -> None:
    """anyio 4.14+ wraps each task's coroutine in a handle's (~2.5 KB a task on asyncio): a batch's are not.

    On trio the task runs the given coroutine; on asyncio, the coroutine inside the task's own cancel scope.
    """
    seen: list[str] = []

    async def child() -> None:
        if anyio_backend_name == "trio":
            import trio

            seen.append(trio.lowlevel.current_task().coro.cr_code.co_name)
        else:
            import asyncio

            task = asyncio.current_task()
            assert task is not None
            seen.append(task.get_coro().cr_code.co_name)  # type: ignore[union-attr]

    async with open_task_group() as group:
        group.start_soon(child)
    assert seen == (["child"] if anyio_backend_name == "trio" else ["_scoped"])


async def test_inside_a_task_a_cancellation_of_the_group_or_around_it_is_a_real_one() -> None:
    """The code in a task tells the batch's cancellation from a stray one (``_containment``), whichever cancelled it."""
    seen: list[tuple[str, bool]] = []

    async def sleeper(name: str) -> None:
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
            group.start_soon(sleeper, "by the group")
            group.start_soon(stopper, group)
    with anyio.move_on_after(1) as outer:
        async with open_task_group() as group:
            group.start_soon(sleeper, "around it")
    assert outer.cancelled_caught
    assert seen == [("by the group", True), ("around it", True)]


async def test_a_task_sees_the_deadline_around_the_group() -> None:
    seen: list[float] = []

    async def child() -> None:
        seen.append(anyio.current_effective_deadline())

    with anyio.fail_after(30) as scope:
        async with open_task_group() as group:
            group.start_soon(child)
    assert seen == [scope.deadline]
    async with open_task_group() as group:
        group.start_soon(child)
    assert seen[1] == math.inf


async def test_a_task_started_from_inside_a_deadline_keeps_the_groups_own() -> None:
    """A runtime's tasks are started from any task of its loop: an actor's worker started by a call inside
    ``fail_after`` must not die with that call's deadline (it lives as long as the runtime)."""
    seen: list[float] = []

    async def child() -> None:
        seen.append(anyio.current_effective_deadline())

    async with open_task_group() as group:
        with anyio.fail_after(5):  # noqa: ASYNC100 - the deadline start_soon is called under is the point
            group.start_soon(child)
    assert seen == [math.inf]


async def test_a_task_has_the_name_it_was_given(anyio_backend_name: str) -> None:
    names: list[str] = []

    async def child() -> None:
        if anyio_backend_name == "trio":
            import trio

            names.append(trio.lowlevel.current_task().name)
        else:
            import asyncio

            task = asyncio.current_task()
            assert task is not None
            names.append(task.get_name())

    async with open_task_group() as group:
        group.start_soon(child, name="stream:provider")
    assert names == ["stream:provider"]


async def test_a_task_started_into_a_cancelled_group_is_cancelled_at_its_first_checkpoint() -> None:
    reached: list[str] = []

    async def child() -> None:
        reached.append("started")
        await anyio.sleep(100)
        reached.append("slept")

    with anyio.fail_after(10):
        async with open_task_group() as group:
            group.cancel()
            group.start_soon(child)
    assert reached == ["started"]


async def test_cancel_ends_every_task_and_is_absorbed() -> None:
    ended: list[str] = []

    async def sleeper(name: str) -> None:
        try:
            await anyio.sleep(100)
        finally:
            ended.append(name)

    async def stopper(group_box: list[object]) -> None:
        await anyio.sleep(1)
        group_box[0].cancel()  # type: ignore[attr-defined]

    box: list[object] = [None]
    with anyio.fail_after(10):
        async with open_task_group() as group:
            box[0] = group
            group.start_soon(sleeper, "a")
            group.start_soon(sleeper, "b")
            group.start_soon(stopper, box)
    assert sorted(ended) == ["a", "b"]


async def test_an_outer_cancellation_leaves_as_the_backends_own_exception_not_a_group() -> None:
    caught: list[BaseException] = []
    with anyio.move_on_after(1) as scope:
        try:
            async with open_task_group() as group:
                for _ in range(3):
                    group.start_soon(anyio.sleep, 100)
        except BaseException as exc:
            caught.append(exc)
            raise
    assert scope.cancelled_caught
    assert type(caught[0]) is anyio.get_cancelled_exc_class()


async def test_a_task_cancelled_natively_cancels_the_group_on_asyncio(anyio_backend_name: str) -> None:
    """``task.cancel()`` on a batch's task (asyncio) ends it and, as in anyio's group, cancels the others."""
    if anyio_backend_name != "asyncio":
        return  # trio has no per-task cancel
    import asyncio

    ended: list[str] = []
    tasks: list[asyncio.Task[object]] = []

    async def sleeper(name: str) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.append(task)
        try:
            await anyio.sleep(100)
        finally:
            ended.append(name)

    async def canceller() -> None:
        await anyio.sleep(1)
        tasks[0].cancel()

    with anyio.fail_after(10):
        async with open_task_group() as group:
            group.start_soon(sleeper, "a")
            group.start_soon(sleeper, "b")
            group.start_soon(canceller)
    assert sorted(ended) == ["a", "b"]


async def test_a_failing_task_cancels_the_others_and_leaves_in_a_group() -> None:
    ended: list[str] = []

    async def sleeper() -> None:
        try:
            await anyio.sleep(100)
        finally:
            ended.append("sleeper")

    async def failing() -> None:
        await anyio.sleep(1)
        raise LookupError("boom")

    with anyio.fail_after(10), pytest.raises(BaseExceptionGroup) as info:
        async with open_task_group() as group:
            group.start_soon(sleeper)
            group.start_soon(failing)
    assert info.group_contains(LookupError)
    assert ended == ["sleeper"]
