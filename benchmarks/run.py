"""agentactors benchmarks: every workload runs all implementations interleaved, in one invocation.

Usage::

    python benchmarks/run.py                 # everything (make bench)
    python benchmarks/run.py --only W1,W2    # some workloads
    python benchmarks/run.py --smoke         # tiny counts: checks the harness, numbers mean nothing

Prints a markdown table, writes ``benchmarks/results/latest.json`` and PNG charts
of W1, W3 and W6.  Speed is reported as medians with min–max over repetitions
and as ratios to a baseline measured in the same run (this machine is shared and
noisy; absolute numbers travel badly).  Nothing here asserts on speed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _load as L  # noqa: E402
import _partial as P  # noqa: E402
import _sessions as S  # noqa: E402
import _workloads as W  # noqa: E402

RESULTS = HERE / "results"


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    return info


def summarize(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "n": len(samples)}


def child(workload: str, **kwargs: Any) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter (memory figures need a clean process)."""
    cmd = [sys.executable, str(HERE / "_workloads.py"), workload, json.dumps(kwargs)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:] or ["failed"]}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def fmt_us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:,.1f} µs" if us < 100 else f"{us:,.0f} µs"


def spread(s: dict[str, float], f: Callable[[float], str] = fmt_us) -> str:
    return f"{f(s['median'])} ({f(s['min'])}–{f(s['max'])})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="W1,W2,W3,W4,W5,W6,W7,W8,W9,W11,W13")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny counts, to check the harness")
    parser.add_argument("--out", default=str(RESULTS / "latest.json"))
    parser.add_argument("--no-charts", action="store_true")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other workloads' results already in --out (re-run some, keep the rest)")
    args = parser.parse_args(argv)
    smoke = args.smoke
    reps = 1 if smoke else max(3, args.reps)
    only = {w.strip().upper() for w in args.only.split(",") if w.strip()}
    report: dict[str, Any] = {"machine": machine(), "smoke": smoke, "reps": reps, "workloads": {}}
    md: list[str] = [f"# agentactors benchmarks — {report['machine']['date']}", ""]

    if "W1" in only:
        res = W.w1_tool_loop(reps=reps, smoke=smoke)
        report["workloads"]["W1"] = res
        base = res["sequential"]["naive anyio actors"]["median"]
        rows = []
        for name, s in res["sequential"].items():
            if "error" in s:
                rows.append([name, s["error"], "", "", ""])
                continue
            conc = res["concurrent"].get(name, {})
            rows.append([
                name,
                spread(s),
                f"{s['median'] / base:.2f}×",
                spread(conc, lambda x: f"{x:,.2f} s") if "median" in conc else conc.get("error", "—"),
                f"{1 / s['median']:,.0f}",
            ])
        md += ["## W1 tool loop (model → tool → model → text, zero-latency model)", "",
               table(["implementation", "per run, sequential (min–max)", "× naive anyio actors",
                      f"{res['concurrent_runs']:,} concurrent runs", "runs/s"], rows), ""]

    if "W2" in only:
        res = W.w2_messaging(reps=reps, smoke=smoke)
        report["workloads"]["W2"] = res
        rows = [[r["impl"], r["backend"], f"{r['tells_per_s']:,.0f}", fmt_us(r["ask_p50"]), fmt_us(r["ask_p99"])]
                for r in res["rows"]]
        md += ["## W2 messaging", "", table(["implementation", "backend", "tells/s", "ask p50", "ask p99"], rows), ""]

    if "W3" in only:
        n = 200 if smoke else 10_000
        res = {"runs": n, "latency": 0.05, "results": {}}
        for impl in ("agentactors", "plain asyncio"):
            res["results"][impl] = child("w3", impl=impl, runs=n, latency=0.05)
        report["workloads"]["W3"] = res
        rows = [[k, f"{v.get('wall', float('nan')):.2f} s", f"{v.get('completed', 0):,}/{n:,}",
                 f"{v.get('rss_growth_mb', float('nan')):.1f} MB"] if "error" not in v else [k, str(v["error"]), "", ""]
                for k, v in res["results"].items()]
        md += [f"## W3 many agents ({n:,} concurrent runs, 50 ms model latency)", "",
               table(["implementation", "wall", "completed", "peak RSS growth"], rows), ""]

    if "W4" in only:
        n = 2_000 if smoke else 100_000
        res = {"agents": n, "results": {impl: child("w4", impl=impl, n=n) for impl in ("agentactors", "autogen-core")}}
        report["workloads"]["W4"] = res
        rows = [[k, f"{v['bytes_per_agent'] / 1024:.2f} KB", f"{v['spawn_s']:.3f} s"] if "error" not in v
                else [k, str(v["error"]), ""] for k, v in res["results"].items()]
        md += [f"## W4 idle agents ({n:,})", "", table(["implementation", "memory per idle agent", "spawn time"], rows),
               ""]

    if "W5" in only:
        # In a fresh interpreter: client CPU per request measured in this process after W1 counted what the
        # peers W1 imported left behind (their heaps, their threads) — 0.20x became 0.29x at concurrency 1.
        res = child("w5", reps=reps, smoke=smoke)
        if "error" in res:
            raise RuntimeError(f"W5 failed in its child process: {res['error']}")
        report["workloads"]["W5"] = res
        rows = [[r["impl"], r["mode"], str(r["concurrency"]), f"{r['cpu_us']:,.0f} µs", f"{r['rps']:,.0f}",
                 f"{r['cpu_ratio']:.2f}×" if r.get("cpu_ratio") else "1.00×"] for r in res["rows"]]
        md += ["## W5 HTTP path (FakeVendor in another process)", "",
               table(["client", "mode", "concurrency", "client CPU / request", "requests/s",
                      "CPU × baseline (asyncio: official SDK; trio: raw httpx)"], rows), ""]

    if "W7" in only:
        res = W.w7_streaming(reps=reps, smoke=smoke)
        report["workloads"]["W7"] = res
        rows = [[r["impl"], f"{r['cpu_us_per_delta']:,.1f} µs", f"{r['deltas']:,}",
                 f"{r['cpu_ratio']:.2f}×" if r.get("cpu_ratio") else "—"] for r in res["rows"]]
        md += [f"## W7 streaming CPU ({res['runs']:,} concurrent streamed runs, FakeVendor in another process)", "",
               table(["client", "client CPU / text delta", "deltas", "× official SDK"], rows), ""]

    if "W6" in only:
        res = W.w6_chain(smoke=smoke)
        report["workloads"]["W6"] = res
        rows = [[str(res["runs"]), f"{res['fault_rate']:.0%}", f"{res['goodput']:.1%}",
                 str(res["primary_calls_while_open"]), f"{res['p50']:.2f} s", f"{res['p99']:.2f} s",
                 str(res["failovers"]), str(res["breaker_opens"])]]
        md += ["## W6 chain under faults", "",
               table(["runs", "fault rate", "goodput", "primary calls while open", "p50", "p99", "failovers",
                      "breaker opens"], rows), ""]

    if "W8" in only:
        res = L.w8_scheduling(reps=reps, smoke=smoke)
        report["workloads"]["W8"] = res
        rows = [[policy, f"{r['p50']:.2f} s", f"{r['p99']:.2f} s", f"{r['runs_per_s']:,.1f}",
                 f"{r['p50_vs_fifo']:.2f}×", f"{r['throughput_vs_fifo']:.2f}×"] for policy, r in res["results"].items()]
        md += [f"## W8 scheduling ({res['runs']:,} runs × 3 model calls, {res['slots']} slots, "
               f"{res['latency'] * 1000:.0f} ms a call, all started at once)", "",
               table(["scheduling", "run latency p50", "p99", "runs/s", "p50 × fifo", "throughput × fifo"], rows), ""]

    if "W9" in only:
        res = L.w9_overload(smoke=smoke)
        report["workloads"]["W9"] = res

        def ms(x: float) -> str:
            return "—" if x != x else f"{x * 1000:,.2f} ms"

        rows = [[r["scheduling"], "none" if r["max_wait"] is None else f"{r['max_wait']:g} s",
                 f"{r['goodput']:.1f}/s ({r['goodput_vs_capacity']:.0%})", f"{r['p50']:.2f} s", f"{r['p99']:.2f} s",
                 f"{r['refused']:,}", f"{r['refused_after_start']:,}", ms(r["refuse_p50"]), ms(r["refuse_p99"]),
                 f"{r['unfinished']:,}"] for r in res["rows"]]
        md += [f"## W9 overload ({res['offered_runs_per_s']:.0f} runs/s offered for {res['duration']:g} s, "
               f"3× the {res['capacity_runs_per_s']:.0f} runs/s one actor serves)", "",
               table(["scheduling", "max_wait", "goodput", "ok p50", "ok p99", "refused", "refused mid-run",
                      "refused in (p50)", "(p99)", "unfinished at cut-off"], rows), ""]

    if "W11" in only:
        res = S.w11_sessions(reps=reps, smoke=smoke)
        report["workloads"]["W11"] = res
        w1 = report["workloads"].get("W1", {}).get("sequential", {}).get("agentactors", {}).get("median")
        rows = []
        for name, s in res["latency"].items():
            rows.append([name, spread(s), f"{s['vs_agent_run']:.2f}×",
                         f"{s['vs_history_by_hand']:.2f}×" if "vs_history_by_hand" in s else "—",
                         f"{s['median'] / w1:.2f}×" if w1 else "—"])
        md += [f"## W11 sessions: turn latency ({res['turns']['memory']:,} turns with MemoryStore, "
               f"{res['turns']['sqlite']:,} with SqliteStore, sequential)", "",
               table(["turn", "per turn (min–max)", "× agent.run", "× agent.run(history by hand)", "× W1"], rows), ""]
        rows = []
        for kind, m in res["memory"].items():
            if "error" in m:
                rows.append([kind, str(m["error"]), "", "", "", "", ""])
                continue
            rows.append([kind, f"{m['create_s']:.1f} s ({m['turns_per_s']:,.0f}/s)",
                         f"{m['peak_rss_growth_mb']:.1f} MB", f"{m['active_bytes_per_session'] / 1024:.2f} KB",
                         f"{m['idle_bytes_per_session'] / 1024:.3f} KB", f"{m['idle_blocks_per_session']:.3f}",
                         f"{m['db_mb']:.1f} MB" if kind == "sqlite" else "—"])
        md += [f"## W11 sessions: memory ({res['sessions']:,} sessions, one turn each, then idle and deactivated)", "",
               table(["store", "created + one turn each", "peak RSS growth", "RSS / active session",
                      "RSS / deactivated session", "Python blocks / deactivated session", "database file"], rows),
               ""]

    if "W13" in only:
        res = P.w13_partial(reps=reps, smoke=smoke)
        report["workloads"]["W13"] = res
        rows = [[kind, spread(r, lambda x: f"{x:,.2f} s"), f"{r['vs_plain']:.2f}×", f"{r['partials']:,}",
                 f"{r['worst_stall'] * 1000:,.1f} ms"] for kind, r in res["rows"].items()]
        md += [f"## W13 partial output ({res['bytes'] / 1e6:.1f} MB typed list, {res['records']:,} records, "
               f"{res['deltas']:,} deltas)", "",
               table(["consumer", "whole run (min–max)", "× plain text", "partial values", "longest loop stall"],
                     rows), ""]

    text = "\n".join(md)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.merge and out.exists():
        previous = json.loads(out.read_text())
        merged = dict(previous.get("workloads", {}))
        merged.update(report["workloads"])
        report["workloads"] = merged
        report["markdown_previous"] = previous.get("markdown")
    report["markdown"] = text
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwrote {out}")
    if not args.no_charts:
        for path in W.charts(report, out.parent):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    t0 = time.perf_counter()
    code = main()
    print(f"(benchmarks took {time.perf_counter() - t0:,.0f} s)")
    sys.exit(code)
