"""The backend seam: a checkpoint from a known scope is anyio's ``checkpoint_if_cancelled``, on both backends."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors import _backend
from agentactors._backend import backend_function, loop_clock, one_shot_event, scope_checkpoint

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

Check = Callable[[Any], Awaitable[None]]


async def _both(depth: int, cancelled: int | None, shielded: int | None) -> tuple[bool, bool]:
    """Enter ``depth`` nested scopes (outermost first), cancel / shield the given ones, then check from the innermost:
    (what the seam's check does, what anyio's ``checkpoint_if_cancelled`` does) — each True when it raised."""
    anyio_checkpoint = backend_function("checkpoint_if_cancelled", anyio.lowlevel.checkpoint_if_cancelled)
    check: Check = scope_checkpoint(anyio_checkpoint)
    seen: list[bool] = []
    for checker in (lambda inner: check(inner), lambda inner: anyio_checkpoint()):
        raised = True
        fresh = [anyio.CancelScope(shield=i == shielded) for i in range(depth)]
        if cancelled is not None:
            fresh[cancelled].cancel()

        async def nest(i: int, fresh: list[anyio.CancelScope] = fresh, checker: Any = checker) -> None:
            nonlocal raised
            if i == len(fresh):
                await checker(fresh[-1])
                raised = False
                return
            with fresh[i]:
                await nest(i + 1)

        await nest(0)
        seen.append(raised)
    return seen[0], seen[1]


@pytest.mark.parametrize(
    ("depth", "cancelled", "shielded", "raises"),
    [
        (1, None, None, False),  # nothing cancelled: returns at once
        (1, 0, None, True),  # the frame's own scope
        (3, 0, None, True),  # the outermost of three
        (3, 1, None, True),  # one in the middle
        (3, 0, 1, False),  # cancelled outside a shielded one: not seen
        (3, 0, 2, False),  # the innermost itself shielded
        (3, 2, 2, True),  # a shielded scope cancelled itself
    ],
)
async def test_a_check_from_the_innermost_scope_does_what_anyios_checkpoint_does(
    depth: int, cancelled: int | None, shielded: int | None, raises: bool
) -> None:
    ours, theirs = await _both(depth, cancelled, shielded)
    assert (ours, theirs) == (raises, raises)


async def test_on_asyncio_the_walk_starts_from_the_scope_on_trio_the_backend_finds_it(anyio_backend_name: str) -> None:
    check = scope_checkpoint(backend_function("checkpoint_if_cancelled", anyio.lowlevel.checkpoint_if_cancelled))
    if anyio_backend_name == "asyncio":
        assert check is _backend._walk_from  # anyio's asyncio scopes keep their parent: the lookup is skipped
    else:
        assert check is not _backend._walk_from  # trio's scopes are trio's: its own checkpoint_if_cancelled


async def test_scopes_without_a_parent_link_get_the_backends_own_checkpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """A later anyio whose scopes keep no ``_parent_scope``: the public function, the scope ignored."""

    class Opaque:
        __slots__ = ("cancel_called", "shield")

    calls: list[str] = []

    async def checkpoint() -> None:
        calls.append("checked")

    monkeypatch.setattr(anyio, "CancelScope", Opaque)  # the module the seam reads it from
    check = scope_checkpoint(checkpoint)
    assert check is not _backend._walk_from
    await check(object())
    assert calls == ["checked"]


@pytest.mark.parametrize("missing", ["_parent_scope", "_cancel_called", "_shield"])
async def test_scopes_without_one_of_the_slots_the_walk_reads_get_the_backends_own_checkpoint(
    monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    """The walk reads three of anyio's slots: a later anyio missing any of them gets the public function."""
    slots = tuple(name for name in ("_parent_scope", "_cancel_called", "_shield") if name != missing)

    def flag(self: Any) -> bool:
        return False

    Opaque = type("Opaque", (), {"__slots__": slots, "cancel_called": property(flag), "shield": property(flag)})

    async def checkpoint() -> None:
        pass

    monkeypatch.setattr(anyio, "CancelScope", Opaque)
    assert scope_checkpoint(checkpoint) is not _backend._walk_from


async def test_a_check_with_nothing_cancelled_is_done_at_once_and_can_be_awaited_by_many(
    anyio_backend_name: str,
) -> None:
    check = scope_checkpoint(backend_function("checkpoint_if_cancelled", anyio.lowlevel.checkpoint_if_cancelled))
    with anyio.CancelScope() as scope:
        first, second = check(scope), check(scope)
        if anyio_backend_name == "asyncio":
            assert first is second  # one done future, no coroutine made per check
        await first
        await second
        await check(scope)


async def test_a_one_shot_event_wakes_its_waiter_set_before_or_during_the_wait(anyio_backend_name: str) -> None:
    new_event = one_shot_event()
    assert (new_event is type(anyio.Event())) == (anyio_backend_name == "trio")  # asyncio: a future, no deque
    early = new_event()
    early.set()
    early.set()  # idempotent
    with anyio.fail_after(1):
        await early.wait()
    late = new_event()
    woken: list[bool] = []

    async def waiter() -> None:
        await late.wait()
        woken.append(True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.sleep(1)
        assert woken == []
        late.set()
    assert woken == [True]


async def test_a_one_shot_event_whose_wait_was_cancelled_can_still_be_set() -> None:
    event = one_shot_event()()
    with anyio.move_on_after(1) as scope:
        await event.wait()
    assert scope.cancelled_caught
    event.set()  # the waiter left: nothing to wake, nothing raised


async def test_the_loop_clock_is_anyios_clock_virtual_time_included() -> None:
    """Virtual time (asyncio's VirtualTimeLoop, trio's MockClock): the loop's own clock, moved by a sleep."""
    clock = loop_clock()
    before, anyio_before = clock(), anyio.current_time()
    assert before == anyio_before
    await anyio.sleep(5)
    assert clock() - before == anyio.current_time() - anyio_before == 5


def test_on_a_plain_asyncio_loop_the_clock_is_time_monotonic_and_on_a_loop_of_its_own_its_method() -> None:
    import asyncio
    import time

    from agentactors.testing import VirtualTimeLoop

    async def found() -> tuple[Any, float, float]:
        clock = loop_clock()
        return clock, clock(), anyio.current_time()

    plain = asyncio.new_event_loop()
    try:
        clock, ours, theirs = plain.run_until_complete(found())
    finally:
        plain.close()
    assert clock is time.monotonic  # one C call: the base loop's time() is monotonic()
    assert abs(ours - theirs) < 1  # the same clock, read twice
    virtual = VirtualTimeLoop()
    try:
        clock, ours, theirs = virtual.run_until_complete(found())
    finally:
        virtual.close()
    assert clock is not time.monotonic and ours == theirs == 0.0
