"""The benchmark harness runs end to end in smoke mode (tiny counts; the numbers mean nothing).

Peers are absent from the test environment by design (they live only in .venv-bench), so
this also checks that a missing peer is reported, not fatal.  Nothing here asserts on speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT


# The smoke run starts every workload's processes (peers, FakeVendors, session stores): minutes, not the suite's
# default two, on a busy two-core machine.
@pytest.mark.timeout(420)
def test_smoke_run_writes_every_workload(tmp_path: Path) -> None:
    out = tmp_path / "latest.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["smoke"] is True
    assert set(report["workloads"]) == {"W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W11", "W13"}
    w1 = report["workloads"]["W1"]["sequential"]
    for impl in ("plain asyncio loop", "naive anyio actors", "agentactors"):
        assert w1[impl]["median"] > 0, impl
    w3 = report["workloads"]["W3"]["results"]["agentactors"]
    assert w3["completed"] == report["workloads"]["W3"]["runs"]
    assert report["workloads"]["W4"]["results"]["agentactors"]["bytes_per_agent"] > 0
    w5 = {r["impl"] for r in report["workloads"]["W5"]["rows"]}
    assert {"agentactors (aiohttp, asyncio)", "agentactors (httpx, asyncio)", "agentactors (httpx, trio)"} <= w5
    w7 = report["workloads"]["W7"]["rows"]
    assert any(r["impl"].startswith("agentactors") and r["deltas"] > 0 for r in w7)
    w6 = report["workloads"]["W6"]
    assert w6["primary_calls_while_open"] == 0
    assert w6["goodput"] > 0.5
    w11 = report["workloads"]["W11"]
    assert w11["latency"]["session first turn (sqlite)"]["median"] > 0
    for kind in ("sqlite", "memory"):
        assert w11["memory"][kind]["active_at_peak"] == w11["sessions"], kind
        assert w11["memory"][kind]["actors_left"] == 2, kind  # the provider's and the tools': no session's
    assert "| implementation |" in proc.stdout  # the markdown table is printed
