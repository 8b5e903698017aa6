"""The demo's vendor child process (:class:`agentactors._demo.vendor.VendorProcess`) as a real process.

Real processes, real clocks, generous bounds: a loaded two-core machine starts a Python child slowly.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import anyio
import anyio.to_thread
import httpx
import pytest

from agentactors._demo.vendor import VendorGone, VendorProcess
from tests.unit._demo._child_probe import PROBE

pytestmark = pytest.mark.anyio

KEY = "probe-key-0123456789"


async def test_the_child_has_the_c_json_accelerator_and_not_the_package_dir_on_its_path() -> None:
    # Caught nothing for months: with the package directory itself on the child's sys.path,
    # agentactors/_json.py shadowed the standard library's C `_json`, and json silently fell back to Python.
    async with VendorProcess(faults=None, latency=0.0, api_key=KEY, model=PROBE) as vendor:
        async with httpx.AsyncClient(timeout=60) as client:
            response = await client.post(
                f"{vendor.base_url}/v1/chat/completions",
                headers={"authorization": f"Bearer {KEY}"},
                json={"model": "m", "messages": [{"role": "user", "content": "probe"}]},
            )
    assert response.status_code == 200, response.text
    found = json.loads(response.json()["choices"][0]["message"]["content"])
    assert found["package_dir_on_path"] == []
    assert found["c_scanstring"] is True, found
    assert found["json_module"] is None or "agentactors" not in found["json_module"], found


def _wait_ended(vendor: VendorProcess) -> None:
    deadline = time.monotonic() + 60
    while vendor.returncode is None and time.monotonic() < deadline:
        time.sleep(0.02)


def _pid_of(vendor: VendorProcess) -> int:
    pid = vendor.pid
    assert pid is not None
    return pid


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
async def test_a_child_killed_mid_run_is_reported_as_gone_not_as_a_broken_pipe() -> None:
    async with VendorProcess(faults=None, latency=0.0, api_key=KEY) as vendor:
        os.kill(_pid_of(vendor), signal.SIGKILL)
        await anyio.to_thread.run_sync(_wait_ended, vendor)
        with pytest.raises(VendorGone, match="SIGKILL"):
            await vendor.log()
        with pytest.raises(VendorGone, match="SIGKILL"):
            vendor.outage(wire="openai", duration=1.0)
    assert isinstance(VendorGone("x"), RuntimeError)  # what run_fleet documents for a vendor failure


KILLED_AT_START = "tests.unit._demo._killed_at_start:model"  # kills the vendor child that imports it


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
async def test_a_child_killed_before_it_was_ready_says_how_it_ended() -> None:
    # The message said only "did not start: (empty stderr)", as for a child still starting past the bound.
    with pytest.raises(RuntimeError, match=r"did not start: it ended \(killed by SIGKILL\) before it was ready"):
        async with VendorProcess(faults=None, latency=0.0, api_key=KEY, model=KILLED_AT_START):
            pass


async def test_the_child_is_gone_once_the_block_is_left() -> None:
    async with VendorProcess(faults=None, latency=0.0, api_key=KEY) as vendor:
        pid = _pid_of(vendor)
        assert vendor.returncode is None
    assert vendor.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped, not a zombie


@pytest.mark.skipif(sys.platform == "win32", reason="SIGSTOP")
async def test_a_child_that_stops_answering_is_reported_within_the_bound_and_still_ended() -> None:
    """A hung child (here: stopped) used to hold the demo forever on its request log, after every run had
    ended; and SIGTERM, which a stopped process does not act on, did not end it."""
    started = time.monotonic()
    with pytest.raises(VendorGone, match="stopped answering"):
        async with VendorProcess(faults=None, latency=0.0, api_key=KEY) as vendor:
            pid = _pid_of(vendor)
            os.kill(pid, signal.SIGSTOP)
            await vendor.log(settle_within=0.0, answer_within=1.0)
    assert time.monotonic() - started < 120  # the answer bound, the stop bound, a slow machine's margin
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # ended and reaped


@pytest.mark.skipif(sys.platform == "win32", reason="SIGSTOP")
async def test_cancelling_the_wait_for_a_hung_childs_log_takes_effect_at_once_and_ends_the_child() -> None:
    """Ctrl-C while the demo waited for a hung child's request log took effect only once the log's bound
    (63 s) had passed, then the stop's (10 s): cancelling the wait must end it, and the child, within seconds."""
    with anyio.CancelScope() as scope:
        async with VendorProcess(faults=None, latency=0.0, api_key=KEY) as vendor:
            pid = _pid_of(vendor)
            os.kill(pid, signal.SIGSTOP)
            started = time.monotonic()
            scope.deadline = anyio.current_time() + 0.5
            await vendor.log(settle_within=0.0)  # the default answer bound: 60 s
    elapsed = time.monotonic() - started
    assert scope.cancelled_caught
    assert elapsed < 8, elapsed  # 0.5 s, then a second's grace and the kill; a slow machine's margin
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
