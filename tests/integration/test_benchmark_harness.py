"""The benchmark harness runs end to end in smoke mode (tiny counts; the numbers mean nothing).

Peers are absent from the test environment by design (they live only in .venv-bench), so
this also checks that a missing peer is reported, not fatal.  Nothing here asserts on speed.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import ROOT


# The smoke run starts every workload's processes (FakeVendors, fresh interpreters, session stores): ~30 s on an
# idle two-core machine, a few minutes when it is busy.
@pytest.mark.timeout(420)
@pytest.mark.soak  # every workload's load run, smoke-sized: `make soak`, which CI runs
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
    assert set(report["workloads"]) == {
        "W1", "W1I", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W11", "W12", "W13", "COLD"
    }
    w1 = report["workloads"]["W1"]["sequential"]
    for impl in ("plain asyncio loop", "naive anyio actors", "agentactors"):
        assert w1[impl]["median"] > 0, impl
    w3 = report["workloads"]["W3"]["results"]["agentactors"]
    assert w3["completed"] == report["workloads"]["W3"]["runs"]
    for backend, waiting in report["workloads"]["W3"]["waiting_run"].items():  # the measure, both backends
        assert waiting["completed"] == waiting["runs"] and waiting["bytes_per_waiting_run"] > 0, backend
    assert report["workloads"]["W4"]["results"]["agentactors"]["bytes_per_agent"] > 0
    w5 = {(r["impl"], r["mode"], r["concurrency"]): r for r in report["workloads"]["W5"]["rows"]}
    ours = {"agentactors (h11, asyncio)", "agentactors (aiohttp, asyncio)", "agentactors (httpx, asyncio)",
            "agentactors (h11, trio)", "agentactors (httpx, trio)", "agentactors (h11, asyncio, https)",
            "agentactors (h11, trio, https)"}
    assert ours <= {impl for impl, _, _ in w5}
    for mode in ("json", "stream"):
        for concurrency in (1, 32):  # the figure, at both concurrencies: trio's CPU over asyncio's
            for scheme in ("", ", https"):  # over HTTP, and over HTTPS (a FakeVendor serving TLS)
                trio, asyncio_ = (w5[(f"agentactors (h11, {backend}{scheme})", mode, concurrency)]
                                  for backend in ("trio", "asyncio"))
                assert trio["trio_vs_asyncio"] == pytest.approx(trio["cpu_us"] / asyncio_["cpu_us"])
                assert trio["scheme"] == asyncio_["scheme"] == ("https" if scheme else "http")
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
    _check_new_workloads(report)
    _check_page(tmp_path / "index.html", report)


def _check_new_workloads(report: dict[str, Any]) -> None:
    w12 = report["workloads"]["W12"]
    rows = {r["impl"]: r for r in w12["rows"]}
    assert set(rows) == {"agentactors (asyncio)", "agentactors (trio)"}  # smoke: no peers
    for name, row in rows.items():
        assert "error" not in row and row["failed"] == 0, (name, row)
        assert row["deltas"] == w12["runs"] * w12["vendor"]["chunks"], name  # every streamed delta reached the run
        assert row["cpu_us_per_delta"] > 0 and row["peak_kb_per_run"] > 0, name
        assert 0 < row["ttft_p50_s"] <= row["ttft_p99_s"], name
        assert row["lag_p99_ms"] >= row["lag_p50_ms"] >= 0, name
        assert row["vendor_cpu_share"] > 0, name  # the vendor's CPU, read from /proc, is in the table
    w1i = report["workloads"]["W1I"]["results"]
    for impl in ("plain loop", "naive anyio actors", "agentactors"):
        assert w1i[impl]["best_us"] > 0, impl
    if importlib.util.find_spec("pydantic_ai") is None:  # the peers live in .venv-bench only
        assert w1i["pydantic-ai"]["error"] == "not installed"  # a missing peer is reported, not fatal
    cold = {r["impl"]: r for r in report["workloads"]["COLD"]["rows"]}
    assert cold["agentactors"]["import_s"] > 0
    assert cold["agentactors"]["first_run_s"] > 0  # a fresh process answered, against a FakeVendor
    top = dict(report["workloads"]["COLD"]["agentactors_importtime_top"])
    # The packages import agentactors loads, by cost: its core dependency attrs among them; httpx is imported
    # when an HTTP provider is made, never by the import (tests/unit/test_import_cost.py).
    assert "attrs" in top and "httpx" not in top and "agentactors" not in top


def test_w12s_default_pace_keeps_a_thousand_deltas_a_second() -> None:
    paths = list(sys.path)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _w12  # type: ignore[import-not-found]  # benchmarks/ is not a package; it puts itself on the path too
    finally:
        sys.path[:] = paths
        sys.modules.pop("_w12", None)
    assert _w12.default_pace(1_000) == _w12.VENDOR  # 20 deltas a second apart
    ten_k = _w12.default_pace(10_000)  # the README's 10,000 streams: a delta every 10 s, six a stream
    assert (ten_k["interval"], ten_k["chunks"]) == (10.0, 6)
    for runs in (200, 1_000, 2_500, 10_000):
        pace = _w12.default_pace(runs)
        assert runs / pace["interval"] <= _w12.DELTAS_PER_S


def test_a_merged_run_keeps_the_other_workloads_sections_on_the_page() -> None:
    # `run.py --only W1 --merge` kept every workload's numbers but drew the page from W1's markdown alone.
    paths = list(sys.path)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import run  # type: ignore[import-not-found]
    finally:
        sys.path[:] = paths
        sys.modules.pop("run", None)
    previous = "# bench — day 1\n\n## W1 loop\nold W1\n\n## W2 messaging\nW2 table\n\n## W3 many\nW3 table\n"
    merged = run.merge_markdown(previous, "# bench — day 2\n\n## W1 loop\nnew W1\n\n## W9 new\nW9 table\n")
    lines = merged.splitlines()
    assert lines[0] == "# bench — day 2"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == ["## W1 loop", "## W2 messaging", "## W3 many", "## W9 new"]
    assert "new W1" in lines and "old W1" not in lines and "W2 table" in lines and "W9 table" in lines


def _check_page(page: Path, report: dict[str, Any]) -> None:
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and text.rstrip().endswith("</html>")
    for heading in ("W1 tool loop", "W1 tool loop, independent harness", "W5 HTTP path", "W12 ", "W13 partial output",
                    "Import time and cold start", "Machine and versions"):
        assert f"<h2>{heading}" in text, heading
    assert f"<td>{report['machine']['versions']['agentactors']}</td>" in text
    assert "<table>" in text and "| implementation |" not in text  # the markdown tables are rendered
    if importlib.util.find_spec("matplotlib") is not None:  # the bench extra's: plots embedded beside the tables
        assert text.count("data:image/png;base64,") >= 10
