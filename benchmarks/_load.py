"""W8 (scheduling) and W9 (overload): one ProviderActor under more load than it can serve at once.

Both use the in-process ScriptedProvider with a fixed latency (no HTTP: the point is the actor's
queue, not the transport), a run of three model calls (model → tool → model → tool → model), and
the real clock.  ``run.py`` drives them; nothing here asserts on speed.

* **W8** — 1,000 runs started at once through 16 slots, 50 ms a call: p50 / p99 run latency and
  throughput, ``scheduling="oldest_run"`` against ``"fifo"`` in the same invocation, interleaved.
* **W9** — runs offered at 3× what the actor can serve (16 slots, 100 ms a call: 160 calls/s, so
  ~53 runs/s) for 30 s, with ``max_wait`` set: goodput (runs that finished ok per second, and
  as a share of capacity), p99 latency of the runs that finished, how fast a shed request is
  refused, and how many runs were cut after they had started (work wasted).  Rows: oldest_run and
  fifo with ``max_wait=1.0``, and oldest_run with no bound (the queue only grows).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import anyio

from agentactors import (
    Agent,
    LLMRequest,
    Overloaded,
    ProviderActor,
    RunResult,
    Runtime,
    ScriptedProvider,
    ToolCall,
    tool,
)

__all__ = ["w8_scheduling", "w9_overload"]


@tool
async def next_step(n: int) -> int:
    """One tool step of a three-call run."""
    return n + 1


def three_calls(request: LLMRequest) -> Any:
    """model → tool → model → tool → model: the third call answers."""
    results = sum(m.role == "tool" for m in request.messages)
    return "done" if results == 2 else [ToolCall(f"c{results}", "next_step", {"n": results})]


def _pct(samples: list[float], q: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- W8 ----------------------------------------------------------------------------------------------


async def _w8_once(policy: str, runs: int, latency: float, slots: int) -> dict[str, Any]:
    async with Runtime() as rt:
        ref = ProviderActor.shared(
            rt, ScriptedProvider(three_calls, latency=latency), max_concurrency=slots, scheduling=policy
        )
        agent = Agent(ref, tools=[next_step], nudges=False)
        latencies: list[float] = []
        ok = 0
        start = time.perf_counter()

        async def one() -> None:
            nonlocal ok
            result = await agent.run("go")
            latencies.append(time.perf_counter() - start)
            ok += result.ok

        async with anyio.create_task_group() as tg:
            for _ in range(runs):
                tg.start_soon(one)
        wall = time.perf_counter() - start
    return {"p50": _pct(latencies, 0.5), "p99": _pct(latencies, 0.99), "wall": wall, "runs_per_s": runs / wall,
            "ok": ok}


def w8_scheduling(*, reps: int, smoke: bool) -> dict[str, Any]:
    runs, latency, slots = (100, 0.01, 16) if smoke else (1_000, 0.05, 16)
    samples: dict[str, list[dict[str, Any]]] = {"fifo": [], "oldest_run": []}
    for _ in range(reps):
        for policy in samples:  # interleaved: a change in the machine's load hits both alike
            samples[policy].append(anyio.run(_w8_once, policy, runs, latency, slots))
    out: dict[str, Any] = {"runs": runs, "latency": latency, "slots": slots, "calls_per_run": 3, "results": {}}
    for policy, reps_ in samples.items():
        out["results"][policy] = {
            key: statistics.median(r[key] for r in reps_) for key in ("p50", "p99", "wall", "runs_per_s")
        } | {"ok": min(r["ok"] for r in reps_), "n": len(reps_)}
    fifo = out["results"]["fifo"]
    for row in out["results"].values():
        row["p50_vs_fifo"] = row["p50"] / fifo["p50"]
        row["throughput_vs_fifo"] = row["runs_per_s"] / fifo["runs_per_s"]
    return out


# --- W9 ----------------------------------------------------------------------------------------------


async def _w9_once(
    policy: str, max_wait: float | None, *, duration: float, offered: float, latency: float, slots: int
) -> dict[str, Any]:
    finished: list[tuple[float, RunResult]] = []
    async with Runtime() as rt:
        ref = ProviderActor.shared(
            rt, ScriptedProvider(three_calls, latency=latency), max_concurrency=slots, scheduling=policy,
            max_wait=max_wait,
        )
        agent = Agent(ref, tools=[next_step], nudges=False)

        async def one() -> None:
            t0 = time.perf_counter()
            result = await agent.run("go")
            finished.append((time.perf_counter() - t0, result))

        start = time.perf_counter()
        offered_runs = 0
        with anyio.move_on_after(duration + (max_wait or 0.0) * 3 + 5.0):  # unbounded queues are cut off here
            async with anyio.create_task_group() as tg:
                while (now := time.perf_counter() - start) < duration:
                    due = int(now * offered) + 1
                    while offered_runs < due:
                        tg.start_soon(one)
                        offered_runs += 1
                    await anyio.sleep(1.0 / offered)
        wall = time.perf_counter() - start
    wall = max(wall, 1e-9)
    ok = [lat for lat, r in finished if r.ok]
    refused = [(lat, r) for lat, r in finished if isinstance(r.error, Overloaded)]
    at_once = [lat for lat, r in refused if r.steps == 1]
    return {
        "offered": offered_runs,
        "ok": len(ok),
        "goodput": len(ok) / wall,
        "p50": _pct(ok, 0.5),
        "p99": _pct(ok, 0.99),
        "refused": len(refused),
        "refused_after_start": len(refused) - len(at_once),  # runs cut mid-way: their earlier calls were wasted
        "refuse_p50": _pct(at_once, 0.5),
        "refuse_p99": _pct(at_once, 0.99),
        "unfinished": offered_runs - len(finished),
        "wall": wall,
    }


def w9_overload(*, smoke: bool) -> dict[str, Any]:
    slots, latency = 16, 0.1
    capacity_calls = slots / latency  # 160 calls/s
    capacity_runs = capacity_calls / 3
    offered = 3 * capacity_runs
    duration = 0.5 if smoke else 30.0
    out: dict[str, Any] = {
        "duration": duration, "slots": slots, "latency": latency, "capacity_runs_per_s": capacity_runs,
        "offered_runs_per_s": offered, "rows": [],
    }
    for policy, max_wait in (("oldest_run", 1.0), ("fifo", 1.0), ("oldest_run", None)):
        row = anyio.run(
            lambda p=policy, m=max_wait: _w9_once(p, m, duration=duration, offered=offered, latency=latency,
                                                   slots=slots)
        )
        row |= {"scheduling": policy, "max_wait": max_wait, "goodput_vs_capacity": row["goodput"] / capacity_runs}
        out["rows"].append(row)
    return out
