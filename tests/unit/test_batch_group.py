"""The batch's task group: the backend's lightest group, with anyio's task-group semantics on both backends."""

from __future__ import annotations

import anyio
import pytest

from agentactors._batch_group import open_batch_group

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


async def test_on_trio_a_task_is_the_function_itself_without_anyios_wrapper(anyio_backend_name: str) -> None:
    """On trio the batch's task runs the given coroutine directly (anyio 4.14+ wraps each in a handle's scope)."""
    seen: list[str] = []

    async def child() -> None:
        if anyio_backend_name == "trio":
            import trio

            seen.append(trio.lowlevel.current_task().coro.cr_code.co_name)

    async with open_batch_group() as group:
        group.start_soon(child)
    assert seen == (["child"] if anyio_backend_name == "trio" else [])


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
        async with open_batch_group() as group:
            box[0] = group
            group.start_soon(sleeper, "a")
            group.start_soon(sleeper, "b")
            group.start_soon(stopper, box)
    assert sorted(ended) == ["a", "b"]


async def test_an_outer_cancellation_leaves_as_the_backends_own_exception_not_a_group() -> None:
    caught: list[BaseException] = []
    with anyio.move_on_after(1) as scope:
        try:
            async with open_batch_group() as group:
                for _ in range(3):
                    group.start_soon(anyio.sleep, 100)
        except BaseException as exc:
            caught.append(exc)
            raise
    assert scope.cancelled_caught
    assert type(caught[0]) is anyio.get_cancelled_exc_class()


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
        async with open_batch_group() as group:
            group.start_soon(sleeper)
            group.start_soon(failing)
    assert info.group_contains(LookupError)
    assert ended == ["sleeper"]
