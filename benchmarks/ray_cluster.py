"""W10 past one machine: RayCluster with 1 and 2 workers against rt.run_many in one process.

Usage::

    python benchmarks/ray_cluster.py            # needs the [ray] extra (make test installs it)
    python benchmarks/ray_cluster.py --smoke    # tiny counts: checks the script, numbers mean nothing
    python benchmarks/ray_cluster.py --smoke --workers 1   # one cluster size only (the test suite's smoke run)

Two workloads, every implementation interleaved in one invocation, ``--reps`` repetitions:

- **scripted**: the W1 tool loop (model → one tool call → model → text) on a zero-latency
  ``ScriptedProvider``: only framework and transport overhead.
- **http**: one OpenAI-wire call per run to a FakeVendor in its own process over loopback HTTP.

Reported: runs/s and CPU per run, and their ratios to the in-process baseline.  CPU counts every
process that works for the runs — the driver, the workers, and Ray's own (raylet, GCS, ...) — read
from ``/proc`` (the FakeVendor's process is left out).  And Ray's fixed costs: ``ray.init``, a
cluster's start, the memory of Ray's processes and of a worker.  Writes ``results/ray.json``.

This machine has 2 cores shared with other work: compare the ratios of one run, not absolutes.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from agentactors import Agent, LLMRequest, OpenAIProvider, Runtime, ScriptedProvider, ToolCall, tool

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


# --- the agents (built once per worker, or once in process) ----------------------------------------


@tool
async def lookup(city: str) -> dict[str, Any]:
    """Weather for a city."""
    return {"city": city, "celsius": 21}


def _loop_model(request: LLMRequest) -> str | ToolCall:
    if request.messages[-1].role == "tool":
        return "It is 21 °C."
    return ToolCall("c1", "lookup", {"city": "Lisbon"})


def scripted_agent() -> Agent:
    return Agent(ScriptedProvider(_loop_model, record=False), tools=[lookup])


def http_agent(base_url: str) -> Agent:
    return Agent(OpenAIProvider("gpt-bench", api_key="sk-bench", base_url=base_url))


# --- /proc accounting -------------------------------------------------------------------------------


def _cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def _rss_mb(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE / 2**20
    except OSError:
        return 0.0


def _ray_processes(exclude: set[int]) -> list[int]:
    """Ray's own processes on this machine (raylet, gcs_server, log monitor, idle workers, ...)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"ray" in cmdline and (b"raylet" in cmdline or b"gcs_server" in cmdline or b"ray/_private" in cmdline
                                  or cmdline.startswith(b"ray::")):
            found.append(int(entry.name))
    return found


class CpuMeter:
    """CPU seconds of the driver, some worker pids, and Ray's own processes, between start and stop."""

    def __init__(self, workers: list[int], exclude: set[int], *, ray: bool = True) -> None:
        self.workers = workers
        # In-process runs do not need Ray: its processes' background CPU is not theirs to pay.
        self.system = _ray_processes(exclude | set(workers) | {os.getpid()}) if ray else []
        self._seen: dict[int, float] = {}  # each process's CPU as last read: it stands once the process is gone

    def sample(self) -> float:
        # A process's CPU only grows; one that exited between two samples (a Ray helper process) reads 0 now, and
        # would make the CPU between them negative: its last reading stands instead.
        seen = self._seen
        for pid in (*self.workers, *self.system):
            seen[pid] = max(seen.get(pid, 0.0), _cpu(pid))
        return time.process_time() + sum(seen.values())


# --- implementations ----------------------------------------------------------------------------------


async def in_process(factory: Callable[[], Agent], inputs: list[str]) -> None:
    async with Runtime() as rt:
        results = await rt.run_many(factory(), inputs)  # the default concurrency, 100
    assert all(r.ok for r in results), next(r.error for r in results if not r.ok)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start_vendor() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentactors", "fakevendor", "--port", str(port), "--no-auto-tools", "--lenient"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the FakeVendor did not start")


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    import ray

    from agentactors.ray import RayCluster

    # A cluster already running in this process (the test suite's) is used as is, and left running.
    owned = not ray.is_initialized()
    t0 = time.perf_counter()
    if owned:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    fixed: dict[str, Any] = {"ray_init_s": time.perf_counter() - t0 if owned else None}
    vendor, base_url = _start_vendor()
    try:
        if not args.smoke:
            await anyio.sleep(1.0)  # let Ray's prestarted workers settle before counting its processes
        system = _ray_processes({os.getpid(), vendor.pid})
        fixed["ray_system_processes"] = len(system)
        fixed["ray_system_rss_mb"] = sum(_rss_mb(p) for p in system)
        workloads: dict[str, tuple[Callable[[], Agent], int]] = {
            "scripted": (scripted_agent, args.runs),
            "http": (lambda: http_agent(base_url), args.http_runs),
        }
        out: dict[str, Any] = {"fixed": fixed, "workloads": {}}
        for name, (factory, runs) in workloads.items():
            inputs = [f"q{i}" for i in range(runs)]
            sizes = {_label(size): size for size in args.workers}
            samples: dict[str, list[dict[str, float]]] = {"in-process": [], **{label: [] for label in sizes}}
            clusters = {}
            starts = {}
            async with AsyncExitStack() as stack:  # clusters nest (each owns a task group): LIFO exits
                for label, size in sizes.items():
                    t = time.perf_counter()
                    cluster = RayCluster(
                        factory if name == "scripted" else _http_factory(base_url),
                        workers=size,
                        worker_options={"num_cpus": 0},
                    )
                    clusters[label] = await stack.enter_async_context(cluster)
                    starts[label] = time.perf_counter() - t
                pids = {label: [s["pid"] for s in await c.stats()] for label, c in clusters.items()}
                for _ in range(args.reps):
                    meter = CpuMeter([], {vendor.pid}, ray=False)
                    samples["in-process"].append(await _timed(meter, runs, in_process, factory, inputs))
                    for label, cluster in clusters.items():
                        meter = CpuMeter(pids[label], {vendor.pid})
                        samples[label].append(await _timed(meter, runs, _cluster_run, cluster, inputs))
                rss = {label: [_rss_mb(p) for p in ps] for label, ps in pids.items()}
            out["workloads"][name] = {
                "runs": runs,
                "results": {label: _summary(s) for label, s in samples.items()},
                "cluster_start_s": starts,
                "worker_rss_mb": rss,
            }
        return out
    finally:
        vendor.kill()
        vendor.wait()
        if owned:
            ray.shutdown()


def _label(size: int) -> str:
    return f"ray {size} worker{'s' if size > 1 else ''}"


def _http_factory(base_url: str) -> Callable[[], Agent]:
    # A function of this module, not functools.partial(http_agent, ...): a partial names the module
    # `functools`, so RayCluster would not ship this module by value when the workers cannot import it
    # (loaded by path, as the test suite's smoke run does).
    def factory() -> Agent:
        return http_agent(base_url)

    return factory


async def _cluster_run(cluster: Any, inputs: list[str]) -> None:
    results = await cluster.run_many(inputs)
    assert all(r.ok for r in results), next(r.error for r in results if not r.ok)


async def _timed(meter: CpuMeter, runs: int, fn: Callable[..., Any], *args: Any) -> dict[str, float]:
    cpu0, t0 = meter.sample(), time.perf_counter()
    await fn(*args)
    wall, cpu = time.perf_counter() - t0, meter.sample() - cpu0
    return {"runs_per_s": runs / wall, "cpu_per_run_us": cpu / runs * 1e6, "wall_s": wall}


def _summary(samples: list[dict[str, float]]) -> dict[str, float]:
    medians = {key: statistics.median(s[key] for s in samples) for key in ("runs_per_s", "cpu_per_run_us", "wall_s")}
    speeds = [s["runs_per_s"] for s in samples]
    return medians | {"runs_per_s_min": min(speeds), "runs_per_s_max": max(speeds)}


def report(data: dict[str, Any]) -> str:
    lines = [
        "| workload | implementation | runs/s (min–max) | CPU/run | runs/s vs in-process | CPU/run vs in-process |",
        "|---|---|---|---|---|---|",
    ]
    for name, w in data["workloads"].items():
        base = w["results"]["in-process"]
        for label, r in w["results"].items():
            lines.append(
                f"| {name} ({w['runs']} runs) | {label} | {r['runs_per_s']:,.0f} "
                f"({r['runs_per_s_min']:,.0f}–{r['runs_per_s_max']:,.0f}) | {r['cpu_per_run_us']:,.0f} µs | "
                f"{r['runs_per_s'] / base['runs_per_s']:.2f}× | {r['cpu_per_run_us'] / base['cpu_per_run_us']:.2f}× |"
            )
    fixed = data["fixed"]
    w = data["workloads"]["scripted"]
    init = "already running" if fixed["ray_init_s"] is None else f"{fixed['ray_init_s']:.1f} s"
    starts = " / ".join(f"{seconds:.1f} s ({label[4:]})" for label, seconds in w["cluster_start_s"].items())
    largest = list(w["worker_rss_mb"].values())[-1]
    lines += [
        "",
        f"Ray's fixed costs: ray.init {init}; {fixed['ray_system_processes']} Ray processes "
        f"holding {fixed['ray_system_rss_mb']:.0f} MB RSS before any worker; a cluster starts in {starts}; "
        f"a worker holds {statistics.mean(largest):.0f} MB RSS.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--http-runs", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny counts, to check the script")
    parser.add_argument("--out", default=str(RESULTS / "ray.json"))
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument("--workers", default="1,2", help="the cluster sizes to compare, e.g. 1,2")
    args = parser.parse_args(argv)
    args.workers = sorted({int(n) for n in str(args.workers).split(",") if n.strip()})
    if not args.workers or min(args.workers) < 1:
        parser.error("--workers takes positive cluster sizes, e.g. 1,2")
    if args.smoke:
        args.runs, args.http_runs, args.reps = 50, 20, 1
    data = anyio.run(bench, args, backend=args.backend)
    data["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0], "shared": True}
    data["backend"] = args.backend
    print(report(data))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
