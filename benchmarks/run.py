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

import _coldstart as C  # noqa: E402
import _load as L  # noqa: E402
import _page as page  # noqa: E402
import _partial as P  # noqa: E402
import _sessions as S  # noqa: E402
import _w12 as W12  # noqa: E402
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
    info["versions"] = page.versions()
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


def _w1(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    md: list[str] = []
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
    return md


def _w2(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    md: list[str] = []
    res = W.w2_messaging(reps=reps, smoke=smoke)
    report["workloads"]["W2"] = res
    rows = [[r["impl"], r["backend"], f"{r['tells_per_s']:,.0f}", fmt_us(r["ask_p50"]), fmt_us(r["ask_p99"])]
            for r in res["rows"]]
    md += ["## W2 messaging", "", table(["implementation", "backend", "tells/s", "ask p50", "ask p99"], rows), ""]
    return md


def _w3(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    md: list[str] = []
    n = 200 if smoke else 10_000
    res: dict[str, Any] = {"runs": n, "latency": 0.05, "results": {}}
    for impl in ("agentactors", "plain asyncio"):
        res["results"][impl] = child("w3", impl=impl, runs=n, latency=0.05)
    # What one waiting run holds (the issue's measure: tracemalloc, W3's agent, every run waiting on its model at
    # once), each backend in a fresh process: benchmarks/_waiting_run_memory.py.
    waiting = {backend: _waiting_run(backend, 200 if smoke else 2_000) for backend in ("asyncio", "trio")}
    res["waiting_run"] = waiting
    report["workloads"]["W3"] = res
    rows = [[k, f"{v.get('wall', float('nan')):.2f} s", f"{v.get('completed', 0):,}/{n:,}",
             f"{v.get('rss_growth_mb', float('nan')):.1f} MB"] if "error" not in v else [k, str(v["error"]), "", ""]
            for k, v in res["results"].items()]
    md += [f"## W3 many agents ({n:,} concurrent runs, 50 ms model latency)", "",
           table(["implementation", "wall", "completed", "peak RSS growth"], rows), "",
           "What a run waiting on its model holds (tracemalloc; its task, frames, messages, events — and the "
           "harness model's own wait on an event):", "",
           table(["backend", "runs waiting", "bytes per waiting run"],
                 [[b, f"{w.get('runs', 0):,}", f"{w['bytes_per_waiting_run']:,.0f} B" if "error" not in w
                   else str(w["error"])] for b, w in waiting.items()]), ""]
    return md


def _waiting_run(backend: str, runs: int) -> dict[str, Any]:
    cmd = [sys.executable, str(HERE / "_waiting_run_memory.py"), "memory", "--runs", str(runs), "--backend", backend,
           "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:] or ["failed"]}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _w4(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    md: list[str] = []
    n = 2_000 if smoke else 100_000
    res: dict[str, Any] = {
        "agents": n, "results": {impl: child("w4", impl=impl, n=n) for impl in ("agentactors", "autogen-core")}
    }
    report["workloads"]["W4"] = res
    rows = [[k, f"{v['bytes_per_agent'] / 1024:.2f} KB", f"{v['spawn_s']:.3f} s"] if "error" not in v
            else [k, str(v["error"]), ""] for k, v in res["results"].items()]
    md += [f"## W4 idle agents ({n:,})", "", table(["implementation", "memory per idle agent", "spawn time"], rows),
           ""]
    return md


def _w5(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    md: list[str] = []
    # In a fresh interpreter: client CPU per request measured in this process after W1 counted what the
    # peers W1 imported left behind (their heaps, their threads) — 0.20x became 0.29x at concurrency 1.
    res = child("w5", reps=reps, smoke=smoke)
    if "error" in res:
        raise RuntimeError(f"W5 failed in its child process: {res['error']}")
    report["workloads"]["W5"] = res
    rows = [[r["impl"], r["mode"], str(r["concurrency"]), f"{r['cpu_us']:,.0f} µs", f"{r['rps']:,.0f}",
             f"{r['cpu_ratio']:.2f}×" if r.get("cpu_ratio") else "1.00×",
             f"{r['trio_vs_asyncio']:.2f}×" if r.get("trio_vs_asyncio") else ""] for r in res["rows"]]
    md += ["## W5 HTTP path (FakeVendor in another process; the https rows through its TLS)", "",
           table(["client", "mode", "concurrency", "client CPU / request", "requests/s",
                  "CPU × baseline (official SDK; trio over HTTP: raw httpx)",
                  "agentactors trio ÷ asyncio (goal ≤ 1.3×)"], rows), ""]
    return md


def _w7(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    md: list[str] = []
    res = W.w7_streaming(reps=reps, smoke=smoke)
    report["workloads"]["W7"] = res
    rows = [[r["impl"], f"{r['cpu_us_per_delta']:,.1f} µs", f"{r['deltas']:,}",
             f"{r['cpu_ratio']:.2f}×" if r.get("cpu_ratio") else "—"] for r in res["rows"]]
    md += [f"## W7 streaming CPU ({res['runs']:,} concurrent streamed runs, FakeVendor in another process)", "",
           table(["client", "client CPU / text delta", "deltas", "× official SDK"], rows), ""]
    return md


def _w6(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    md: list[str] = []
    res = W.w6_chain(smoke=smoke)
    report["workloads"]["W6"] = res
    rows = [[str(res["runs"]), f"{res['fault_rate']:.0%}", f"{res['goodput']:.1%}",
             str(res["primary_calls_while_open"]), f"{res['p50']:.2f} s", f"{res['p99']:.2f} s",
             str(res["failovers"]), str(res["breaker_opens"])]]
    md += ["## W6 chain under faults", "",
           table(["runs", "fault rate", "goodput", "primary calls while open", "p50", "p99", "failovers",
                  "breaker opens"], rows), ""]
    return md


def _w8(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    md: list[str] = []
    res = L.w8_scheduling(reps=reps, smoke=smoke)
    report["workloads"]["W8"] = res
    rows = [[policy, f"{r['p50']:.2f} s", f"{r['p99']:.2f} s", f"{r['runs_per_s']:,.1f}",
             f"{r['p50_vs_fifo']:.2f}×", f"{r['throughput_vs_fifo']:.2f}×"] for policy, r in res["results"].items()]
    md += [f"## W8 scheduling ({res['runs']:,} runs × 3 model calls, {res['slots']} slots, "
           f"{res['latency'] * 1000:.0f} ms a call, all started at once)", "",
           table(["scheduling", "run latency p50", "p99", "runs/s", "p50 × fifo", "throughput × fifo"], rows), ""]
    return md


def _w9(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    md: list[str] = []
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
    return md


def _w11(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    md: list[str] = []
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
    return md


def _w13(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    md: list[str] = []
    res = P.w13_partial(reps=reps, smoke=smoke)
    report["workloads"]["W13"] = res
    rows = [[kind, spread(r, lambda x: f"{x:,.2f} s"), f"{r['vs_plain']:.2f}×", f"{r['partials']:,}",
             f"{r['worst_stall'] * 1000:,.1f} ms"] for kind, r in res["rows"].items()]
    md += [f"## W13 partial output ({res['bytes'] / 1e6:.1f} MB typed list, {res['records']:,} records, "
           f"{res['deltas']:,} deltas)", "",
           table(["consumer", "whole run (min–max)", "× plain text", "partial values", "longest loop stall"],
                 rows), ""]
    return md


def _w12(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    runs = os.environ.get("AGENTACTORS_BENCH_W12_RUNS")  # set by --w12-runs
    pace = json.loads(os.environ.get("AGENTACTORS_BENCH_W12_VENDOR") or "{}")  # set by --w12-interval/--w12-chunks
    res = W12.w12_streams(reps=reps, smoke=smoke, runs=int(runs) if runs else None, vendor=pace or None)
    report["workloads"]["W12"] = res

    def opt(x: float | None, f: str) -> str:
        return "—" if x is None else format(x, f)

    rows = []
    for r in res["rows"]:
        if "error" in r:
            rows.append([r["impl"], str(r["error"])] + [""] * 9)
            continue
        rows.append([r["impl"], f"{r['cpu_us_per_delta']:,.1f} µs", opt(r.get("cpu_vs_best_peer"), ".2f"),
                     f"{r['peak_kb_per_run']:,.1f} KB", opt(r["steady_kb_per_run"], ",.1f"),
                     opt(r.get("mem_vs_best_peer"), ".2f"), f"{r['lag_p99_ms']:,.1f} ms",
                     f"{r['ttft_p50_s']:.2f} s / {r['ttft_p99_s']:.2f} s",
                     f"{r['stream_p50_s']:.2f} s",
                     f"{r['deltas']:,}" + (f" ({r['failed']:,} failed: {r['first_failure']})" if r["failed"] else ""),
                     f"{r['vendor_cpu_share']:.0%}"])
    v = res["vendor"]
    md = [f"## W12 {res['runs']:,} concurrent streaming runs (FakeVendor in another process: {v['chunks']} deltas "
          f"of {v['words']} words, {v['interval']:g} s apart, after {v['first']:g} s; runs started over "
          f"{v['ramp']:g} s; {res['delta_rate_per_s']:,.0f} deltas/s in all when every run is live)", "",
          table(["implementation", "client CPU / delta", "× best peer", "peak RSS / live run",
                 "steady RSS / live run (KB)", "memory × best peer", "loop lag p99", "first token p50 / p99",
                 f"stream length p50 (ideal {res['ideal_stream_s']:g} s)", "deltas", "vendor CPU (of a core)"],
                rows),
          "", "Goals (measured, not asserted): CPU and memory ≤ 0.5× the best peer's, loop lag p99 < 50 ms. "
          "A vendor near 100 % of a core is the bottleneck: stream lengths over the ideal say by how much.", ""]
    return md


def _w1i(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    cmd = [sys.executable, str(HERE / "w1_independent.py"), "--json", "-"] + (["--smoke"] if smoke else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"w1_independent.py failed: {out.stderr[-2000:]}")
    res = json.loads(out.stdout[out.stdout.index("{"):])
    report["workloads"]["W1I"] = res
    return ["## W1 tool loop, independent harness (benchmarks/w1_independent.py: each framework in a fresh "
            f"process, interleaved, best of {res['rounds']})", "", res["markdown"], ""]


def _cold(reps: int, smoke: bool, report: dict[str, Any]) -> list[str]:
    res = C.cold_start(smoke=smoke)
    report["workloads"]["COLD"] = res
    rows = [[r["impl"], f"{r['import_s'] * 1000:,.0f} ms" if r.get("import_s") else r.get("error", "—"),
             f"{r['first_run_s'] * 1000:,.0f} ms" if r.get("first_run_s") else r.get("run_error", "—")]
            for r in res["rows"]]
    top = ", ".join(f"{m} {us / 1000:,.0f} ms" for m, us in res["agentactors_importtime_top"][:8])
    return [f"## Import time and cold start (fresh process each, best of {res['best_of']})", "",
            table(["framework", "`import` (process start to imported)",
                   "process start to first answer (FakeVendor)"], rows), "",
            f"agentactors' costliest imports (`-X importtime`, cumulative): {top}", ""]


WORKLOADS: dict[str, Callable[[int, bool, dict[str, Any]], list[str]]] = {
    "W1": _w1, "W1I": _w1i, "W2": _w2, "W3": _w3, "W4": _w4, "W5": _w5, "W7": _w7, "W6": _w6, "W8": _w8,
    "W9": _w9, "W11": _w11, "W12": _w12, "W13": _w13, "COLD": _cold,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny counts, to check the harness")
    parser.add_argument("--out", default=str(RESULTS / "latest.json"),
                        help="the JSON report; the charts and index.html go beside it")
    parser.add_argument("--no-charts", action="store_true")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other workloads' results already in --out (re-run some, keep the rest)")
    parser.add_argument("--w12-runs", type=int, default=None,
                        help="W12's concurrent runs (default 10,000)")
    parser.add_argument("--w12-interval", type=float, default=None,
                        help="W12: seconds between a stream's deltas (default: runs / 1,000, at least 1: "
                             "1,000 deltas/s in all)")
    parser.add_argument("--w12-chunks", type=int, default=None,
                        help="W12: deltas a stream (default 20; 6 past 1,000 runs)")
    args = parser.parse_args(argv)
    if args.w12_runs is not None:
        os.environ["AGENTACTORS_BENCH_W12_RUNS"] = str(args.w12_runs)
    pace = {k: v for k, v in (("interval", args.w12_interval), ("chunks", args.w12_chunks)) if v is not None}
    if pace:
        os.environ["AGENTACTORS_BENCH_W12_VENDOR"] = json.dumps(pace)
    smoke = args.smoke
    reps = 1 if smoke else max(3, args.reps)
    only = {w.strip().upper() for w in args.only.split(",") if w.strip()}
    unknown = only - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; known: {', '.join(WORKLOADS)}")
    report: dict[str, Any] = {"machine": machine(), "smoke": smoke, "reps": reps, "workloads": {}, "seconds": {}}
    md: list[str] = [f"# agentactors benchmarks — {report['machine']['date']}", ""]
    for key, workload in WORKLOADS.items():
        if key in only:
            t0 = time.perf_counter()
            md += workload(reps, smoke, report)
            report["seconds"][key] = round(time.perf_counter() - t0, 2)

    text = "\n".join(md)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.merge and out.exists():
        previous = json.loads(out.read_text())
        merged = dict(previous.get("workloads", {}))
        merged.update(report["workloads"])
        report["workloads"] = merged
        previous_seconds = dict(previous.get("seconds", {}))
        previous_seconds.update(report["seconds"])
        report["seconds"] = previous_seconds
        # The page is drawn from the markdown: the re-run workloads' sections replace theirs, the rest stay.
        text = merge_markdown(previous.get("markdown") or "", text)
    report["markdown"] = text
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwrote {out}")
    print("seconds per workload: " + ", ".join(f"{k} {v:g}" for k, v in report["seconds"].items()))
    if not args.no_charts:
        for path in W.charts(report, out.parent):
            print(f"wrote {path}")
        print(f"wrote {page.write(report, out.parent)}")
    return 0


def _sections(markdown: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """``markdown``'s lines before its first ``## `` heading, and each section (its heading, its lines)."""
    head: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line in markdown.splitlines():
        if line.startswith("## "):
            sections.append((line, [line]))
        elif sections:
            sections[-1][1].append(line)
        else:
            head.append(line)
    return head, sections


def merge_markdown(previous: str, new: str) -> str:
    """``previous`` with each section ``new`` has (by heading) replaced by ``new``'s, in place; ``new``'s other
    sections appended.  A heading names its workload and its parameters, so a workload re-run with other
    parameters keeps both sections."""
    head, old_sections = _sections(previous)
    new_head, new_sections = _sections(new)
    fresh = dict(new_sections)
    lines = new_head or head
    for heading, body in old_sections:
        lines += fresh.pop(heading, body)
    for heading, body in new_sections:
        if heading in fresh:
            lines += body
    return "\n".join(lines)


if __name__ == "__main__":
    t0 = time.perf_counter()
    code = main()
    print(f"(benchmarks took {time.perf_counter() - t0:,.0f} s)")
    sys.exit(code)
