"""A sleep of years on virtual time is one jump, on asyncio as on trio.

asyncio caps each wait of its loop at a day (``MAXIMUM_SELECT_TIMEOUT``): ``VirtualTimeLoop`` jumped a day
at a time, so ``anyio.sleep(1e15)`` took some 10**10 turns of the loop (hours of CPU).  Each scenario runs in
a subprocess with a real-time bound, so a regression fails here instead of hanging the suite.
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
        await anyio.sleep(1e15)
        assert anyio.current_time() - start >= 1e15, anyio.current_time()
        # A far deadline that never strikes, around a short sleep, and one that does, after a far sleep.
        with anyio.fail_after(1e12):
            await anyio.sleep(5)
        with anyio.move_on_after(3e13) as scope:
            await anyio.sleep(1e14)
        assert scope.cancelled_caught
        print("ok", anyio.current_time())

    options = dict(virtual_backends())[sys.argv[1]]
    anyio.run(main, backend=sys.argv[1], backend_options=options)
""")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_sleep_of_years_is_one_jump_of_the_virtual_clock(backend: str) -> None:
    try:
        done = subprocess.run([sys.executable, "-c", SCENARIO, backend], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a long virtual sleep on {backend} took more than 30 s of real time")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok "), done.stdout
