"""The runtime's cancel scopes: anyio's asyncio scope with lists for its two sets, and anyio's behaviour in full.

Every behaviour is run twice on asyncio — with anyio's own class and with the lean one — and must come
out the same; on trio the class is anyio's own.
"""

from __future__ import annotations

import gc
import math
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest

from agentactors import _lean_scope
from agentactors._containment import is_cancellation
from agentactors._lean_scope import scope_class

pytestmark = [pytest.mark.anyio]


def _classes() -> list[Any]:
    stock = type(anyio.CancelScope())
    lean = scope_class()
    return [stock, lean]


async def test_on_asyncio_the_lean_class_is_used_with_this_anyio(anyio_backend_name: str) -> None:
    """A fallback to anyio's class would be silent (heavier, never wrong): this anyio must get the lean one."""
    cls = scope_class()
    stock = type(anyio.CancelScope())
    assert isinstance(cls(), anyio.CancelScope)
    scope: Any = cls()
    if anyio_backend_name == "trio":
        assert cls is stock
    else:
        assert cls is not stock and issubclass(cls, stock)
        assert type(scope._tasks) is _lean_scope._Few and type(scope._child_scopes) is _lean_scope._Few


def test_a_class_laid_out_otherwise_gets_anyios_own() -> None:
    """A later anyio whose scope has other fields, other defaults or no sets is not subclassed: its own is used."""
    stock = anyio.run(_stock_class, backend="asyncio")

    class MoreFields(stock):  # type: ignore[valid-type,misc]
        __slots__ = ("_extra",)

    class NoOwnInit(stock):  # type: ignore[valid-type,misc]
        __slots__ = ()

    class OtherDefaults(stock):  # type: ignore[valid-type,misc]
        __slots__ = ()

        def __init__(self, deadline: float = math.inf, shield: bool = False) -> None:
            stock.__init__(self, deadline, shield)
            me: Any = self
            me._cancelling_at_enter = 7

    class NoSets(stock):  # type: ignore[valid-type,misc]
        __slots__ = ()

        def __init__(self, deadline: float = math.inf, shield: bool = False) -> None:
            stock.__init__(self, deadline, shield)
            me: Any = self
            me._tasks = []

    for cls in (OtherDefaults, NoSets):
        cls.__slots__ = stock.__slots__  # (read by the check as the class's layout; the instances' is stock's)
    for cls in (MoreFields, NoOwnInit, OtherDefaults, NoSets):
        assert _lean_scope._checked(cls) is cls, cls
    lean = _lean_scope._checked(stock)
    assert lean is not stock and issubclass(lean, stock)


async def _stock_class() -> Any:
    return type(anyio.CancelScope())


def test_an_entered_lean_scope_holds_a_quarter_kilobyte_less() -> None:
    """What W3's waiting runs hold twice each: two scopes nested in one task, anyio's against the lean ones.

    asyncio's only: trio's scopes are trio's own, without sets (the class is anyio's there: first test).
    """
    anyio.run(_two_nested_scopes_each, backend="asyncio")


async def _two_nested_scopes_each() -> None:
    def held(cls: Any) -> int:
        scopes = [(cls(), cls()) for _ in range(200)]
        for outer, inner in scopes:
            outer.__enter__()
            inner.__enter__()
        gc.collect()
        size = tracemalloc.get_traced_memory()[0]
        for outer, inner in reversed(scopes):
            inner.__exit__(None, None, None)
            outer.__exit__(None, None, None)
        return size

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        stock = held(type(anyio.CancelScope())) - base
        base = tracemalloc.get_traced_memory()[0]
        lean = held(scope_class()) - base
    finally:
        tracemalloc.stop()
    assert (stock - lean) / 200 > 2 * 250, (stock / 200, lean / 200)


async def _same_on_both(scenario: Callable[[Any], Awaitable[Any]]) -> Any:
    outcomes = [await scenario(cls) for cls in _classes()]
    assert outcomes[0] == outcomes[1]
    return outcomes[1]


@pytest.mark.virtual_time
async def test_a_cancelled_scope_reaches_nested_scopes_and_a_task_group_inside() -> None:
    async def scenario(cls: Any) -> Any:
        seen: list[Any] = []

        async def child() -> None:
            try:
                await anyio.sleep(100)
            except BaseException as exc:
                seen.append(("child", is_cancellation(exc)))
                raise

        with anyio.fail_after(10):
            with cls() as outer:
                with anyio.CancelScope() as nested, cls() as innermost:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(child)
                        await anyio.sleep(0.05)
                        outer.cancel()
                        await anyio.sleep(100)
        seen.append((outer.cancelled_caught, nested.cancelled_caught, innermost.cancelled_caught))
        return seen

    assert await _same_on_both(scenario) == [("child", True), (True, False, False)]


@pytest.mark.virtual_time
async def test_cancellation_is_level_triggered_and_a_shield_inside_holds() -> None:
    async def scenario(cls: Any) -> Any:
        seen: list[str] = []
        with anyio.fail_after(10):
            with cls() as scope:
                scope.cancel()
                try:
                    await anyio.sleep(100)
                except anyio.get_cancelled_exc_class():
                    seen.append("first")
                    with cls(shield=True):
                        await anyio.sleep(0.01)
                        seen.append("shielded")
                    try:
                        await anyio.sleep(100)
                    except anyio.get_cancelled_exc_class():
                        seen.append("again")
                        raise
        seen.append(str(scope.cancelled_caught))
        return seen

    assert await _same_on_both(scenario) == ["first", "shielded", "again", "True"]


@pytest.mark.virtual_time
async def test_deadlines_nest_and_move_as_anyios_do() -> None:
    async def scenario(cls: Any) -> Any:
        start = anyio.current_time()
        with anyio.fail_after(10):
            with cls(deadline=start + 0.2) as outer:
                inner_deadline = 0.0
                with anyio.move_on_after(0.05) as inner:
                    inner_deadline = anyio.current_effective_deadline() - start
                    await anyio.sleep(100)
                effective = anyio.current_effective_deadline() - start
                outer.deadline = start + 0.1
                await anyio.sleep(100)
        elapsed = anyio.current_time() - start
        return (
            inner.cancelled_caught, outer.cancelled_caught, round(inner_deadline, 2), round(effective, 2),
            0.09 < elapsed < 5, math.isnan(elapsed),
        )

    assert await _same_on_both(scenario) == (True, True, 0.05, 0.2, True, False)


def test_a_thread_calling_back_into_the_loop_inside_a_lean_scope() -> None:
    """``from_thread`` adds its task to the scope's collections: cancelling the scope reaches it, as anyio's.

    asyncio's only: that bookkeeping is the asyncio backend's (trio's scopes are trio's own).
    """
    seen, caught = anyio.run(_thread_scenario, backend="asyncio")
    assert seen[0] == "called back" and caught is True


async def _thread_scenario() -> Any:

    async def scenario(cls: Any) -> Any:
        seen: list[str] = []

        async def called_back() -> str:
            return "called back"

        async def waits_in_the_loop() -> None:
            try:
                await anyio.sleep(100)
            except anyio.get_cancelled_exc_class():
                seen.append("the loop's task cancelled")
                raise

        def in_thread() -> None:
            seen.append(anyio.from_thread.run(called_back))
            try:
                anyio.from_thread.run(waits_in_the_loop)
            except BaseException as exc:
                seen.append(type(exc).__name__)

        with anyio.fail_after(10):
            with cls() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(anyio.to_thread.run_sync, in_thread)
                    await anyio.sleep(0.2)
                    scope.cancel()
        return seen, scope.cancelled_caught

    return await _same_on_both(scenario)
