"""Virtual time past 2**24 s: the clock still jumps to the next timer.

Past 2**24 s a float's spacing exceeds asyncio's clock_resolution (1e-9), so ``time() + clock_resolution``
equals ``time()``: ``VirtualTimeLoop`` used to jump to a timer exactly at ``now`` that asyncio then never
considered due, and spun at 100% CPU forever.  trio's MockClock handles it; both backends are checked.

Each scenario runs in a subprocess with a real-time bound, so a regression fails here instead of hanging
the suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCENARIO = textwrap.dedent("""
    import sys
    import anyio
    from agentactors.testing import virtual_backends

    async def main() -> None:
        start = anyio.current_time()
        await anyio.sleep(1e8)
        assert anyio.current_time() - start >= 1e8, anyio.current_time()
        # Sleeps that add up past 2**24 s one by one, and timers at the same far instant.
        for _ in range(40):
            await anyio.sleep(1e6)
        for _ in range(100):
            await anyio.sleep(0.5)
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(anyio.sleep, 1e-9)
        with anyio.move_on_after(1e-12):
            await anyio.sleep(10)
        print("ok", anyio.current_time())

    options = dict(virtual_backends())[sys.argv[1]]
    anyio.run(main, backend=sys.argv[1], backend_options=options)
""")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_virtual_time_moves_past_two_to_the_24_seconds(backend: str) -> None:
    try:
        done = subprocess.run([sys.executable, "-c", SCENARIO, backend], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"virtual time stopped moving on {backend}: the loop spun instead of jumping to its timer")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok "), done.stdout
