from __future__ import annotations

import anyio
import pytest

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


async def test_sleep_jumps_virtual_clock() -> None:
    start = anyio.current_time()
    await anyio.sleep(3600)
    assert anyio.current_time() - start == pytest.approx(3600)


async def test_fail_after_fires_on_virtual_time() -> None:
    start = anyio.current_time()
    with pytest.raises(TimeoutError):
        with anyio.fail_after(2.5):
            await anyio.sleep(100)
    assert anyio.current_time() - start == pytest.approx(2.5)


async def test_concurrent_sleepers_wake_in_order() -> None:
    woke: list[float] = []

    async def sleeper(d: float) -> None:
        await anyio.sleep(d)
        woke.append(d)

    async with anyio.create_task_group() as tg:
        for d in (3.0, 1.0, 2.0):
            tg.start_soon(sleeper, d)
    assert woke == [1.0, 2.0, 3.0]
