"""An async tool's timeout holds however the tool waits: armed at its first wait, counted from the call's start."""

from __future__ import annotations

import time
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors.messages import ToolCall
from agentactors.tools.executor import ToolExecutorActor
from agentactors.tools.registry import tool
from agentactors.tools.results import ToolStatus

pytestmark = pytest.mark.anyio


def _call(name: str) -> ToolCall:
    return ToolCall("c1", name, {})


@pytest.mark.virtual_time
async def test_a_tool_that_opens_its_own_scopes_before_waiting_still_times_out() -> None:
    @tool(timeout=3)
    async def nested() -> str:
        with anyio.CancelScope():
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.sleep, 50)
                with anyio.move_on_after(100):
                    await anyio.sleep(100)
        return "never"

    start = anyio.current_time()
    (result,) = await ToolExecutorActor([nested]).execute([_call("nested")])
    assert result.status is ToolStatus.timeout
    assert anyio.current_time() - start == pytest.approx(3)


@pytest.mark.virtual_time
async def test_waiting_and_finishing_in_time_is_ok() -> None:
    @tool(timeout=3)
    async def brief() -> int:
        with anyio.move_on_after(10):
            await anyio.sleep(1)
        await anyio.lowlevel.checkpoint()
        return 7

    @tool(timeout=3)
    async def instant() -> int:
        return 8

    ex = ToolExecutorActor([brief, instant])
    assert [r.content for r in await ex.execute([_call("brief")])] == ["7"]
    assert [r.content for r in await ex.execute([_call("instant")])] == ["8"]
    # The scope a finished call used is gone: a later wait in the same task is not cut short.
    start = anyio.current_time()
    await anyio.sleep(10)
    assert anyio.current_time() - start == pytest.approx(10)


@pytest.mark.virtual_time
async def test_a_tool_that_swallows_its_timeout_and_returns_keeps_its_value() -> None:
    @tool(timeout=1)
    async def stubborn() -> str:
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class():
            return "kept"
        return "slept"

    (result,) = await ToolExecutorActor([stubborn]).execute([_call("stubborn")])
    assert (result.status, result.content) == (ToolStatus.ok, "kept")


async def test_the_deadline_counts_from_the_calls_start_not_its_first_wait() -> None:
    @tool(timeout=0.01)
    async def busy_then_wait() -> str:
        time.sleep(0.03)  # noqa: ASYNC251 - blocking work before the first wait uses up the whole timeout
        await anyio.sleep(60)
        return "never"

    start = time.monotonic()
    (result,) = await ToolExecutorActor([busy_then_wait]).execute([_call("busy_then_wait")])
    assert result.status is ToolStatus.timeout
    assert time.monotonic() - start < 10  # not the 60 s the call would take


async def test_an_enclosing_cancellation_still_propagates() -> None:
    started = anyio.Event()

    @tool(timeout=30)
    async def waits() -> str:
        started.set()
        await anyio.sleep(30)
        return "never"

    ex = ToolExecutorActor([waits])
    with anyio.move_on_after(5) as outer:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ex.execute, [_call("waits")])
            await started.wait()
            outer.cancel()
    assert outer.cancelled_caught


async def test_timeouts_hold_after_the_start_hook_resolved_the_backend() -> None:
    # Real time: the sync tool waits on a worker thread, which an autojumping clock would skip past.
    @tool(timeout=0.05)
    async def hang() -> str:
        await anyio.sleep(10)
        return "never"

    @tool(timeout=10)
    def sync_quick() -> str:
        return "quick"

    ex = ToolExecutorActor([hang, sync_quick])
    await ex.on_start()
    (result,) = await ex.execute([_call("hang")])
    assert result.status is ToolStatus.timeout
    (result,) = await ex.execute([_call("sync_quick")])
    assert (result.status, result.content) == (ToolStatus.ok, "quick")


# -- a tool whose body has no await ends in its first step: it runs with no scope and no timer --------------


async def _helper() -> int:
    return 1


class _Tools:
    async def no_wait(self, a: int) -> int:
        """Doubles."""
        return 2 * a


def test_never_waits_is_read_from_the_functions_own_body() -> None:
    import functools

    @tool
    async def plain(a: int) -> int:
        """Adds one."""
        return a + 1

    @tool
    async def awaits() -> int:
        """Awaits."""
        return await _helper()

    @tool
    async def with_async_with() -> None:
        """Opens a lock."""
        async with anyio.Lock():
            pass

    @tool
    async def with_async_for(items: list[int]) -> int:
        """Iterates."""

        async def gen() -> Any:
            for i in items:
                yield i

        return sum([i async for i in gen()])

    @tool
    async def inner_only() -> str:
        """Defines an awaiting function but never awaits itself."""

        async def later() -> None:
            await anyio.sleep(1)

        del later
        return "ok"

    @tool
    def sync() -> int:
        """Sync."""
        return 1

    async def partial_target(a: int, b: int) -> int:
        return a + b

    assert plain.never_waits and inner_only.never_waits
    assert tool(_Tools().no_wait).never_waits  # a bound method: its function's body
    assert not awaits.never_waits and not with_async_with.never_waits and not with_async_for.never_waits
    assert not sync.never_waits
    assert not tool(functools.partial(partial_target, b=1), name="part").never_waits  # not judged: may wait


@pytest.mark.virtual_time
async def test_a_tool_that_never_waits_answers_fails_and_is_validated_as_any() -> None:
    @tool(timeout=1)
    async def div(a: int, b: int) -> float:
        """Divides."""
        return a / b

    assert div.never_waits
    executor = ToolExecutorActor([div])
    ok, failed, invalid = await executor.execute(
        [ToolCall("c1", "div", {"a": 6, "b": 3}), ToolCall("c2", "div", {"a": 1, "b": 0}),
         ToolCall("c3", "div", {"a": "x", "b": 1})]
    )
    assert (ok.status, ok.content) == (ToolStatus.ok, "2.0")
    assert failed.status is ToolStatus.error and "ZeroDivisionError" in failed.content
    assert invalid.status is ToolStatus.invalid


async def test_a_tool_wrongly_judged_never_waits_is_an_error_not_a_call_without_its_timeout() -> None:
    @tool(timeout=1)
    async def waits() -> str:
        """Waits."""
        await anyio.lowlevel.checkpoint()
        return "late"

    waits.never_waits = True  # as if the bytecode check were wrong on some interpreter
    (result,) = await ToolExecutorActor([waits]).execute([_call("waits")])
    assert result.status is ToolStatus.error
    assert "tool 'waits' waited, though its body has no await" in result.content
