"""What a waiting run holds, and what one W1 run costs: two figures to compare trees by.

    python benchmarks/_waiting_run_memory.py memory [--runs 2000] [--top 15]
    python benchmarks/_waiting_run_memory.py w1 [--runs 2000] [--reps 7]
    python benchmarks/_waiting_run_memory.py compare TREE_A TREE_B [--rounds 5]

(``--backend trio`` runs ``memory`` and ``w1`` on trio; asyncio is the default, as in ``make bench``.)

``memory``: ``--runs`` runs of the W3 agent (model -> tool -> model) start at once in one runtime
(``rt.run_many``, as W3 does), and every model call waits on one event until all of them are
waiting; tracemalloc's growth from before the batch to that moment, divided by the runs, is what
one waiting run holds (its task, coroutine frames, messages, state, events).  ``--top`` prints the
biggest allocation sites of that growth, grouped by traceback.  ``--at 2`` measures runs waiting on
their second model call (after the tool step) instead of their first.

``w1``: W1's sequential tool loop (``agent.run`` in a runtime, model -> tool -> model), in CPU time
(``time.process_time``: the machine may be shared) per run, best of ``--reps`` repetitions.

``compare``: both figures for two source trees, each run as a child process with ``PYTHONPATH`` at
the tree, the trees alternated ``--rounds`` times; best-of per tree, and B's W1 time over A's.
Use a worktree for the older tree: ``git worktree add /tmp/base <rev>``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
from typing import Any

import anyio
import anyio.lowlevel

PROMPT = "What is 2 + 3?"
EXPECTED = "The answer is 5."


def _agent_parts(gate: Any = None, at: int = 1) -> tuple[Any, Any]:
    """The W1/W3 model (``scripted``) and its ``add`` tool; with ``gate``, model call number ``at`` of
    each run waits on it (``gate`` holds the event and counts the waiting calls)."""
    from agentactors import LLMRequest, ToolCall, tool

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def answer(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return f"The answer is {last.content}."
        return [ToolCall("call_1", "add", {"a": 2, "b": 3})]

    if gate is None:
        return answer, add

    async def gated(request: LLMRequest) -> Any:
        if (request.messages[-1].role == "tool") == (at == 2):
            gate.waiting += 1
            if gate.waiting == gate.expected:
                gate.all_waiting.set()
            await gate.event.wait()
        return answer(request)

    return gated, add


class _Gate:
    def __init__(self, expected: int = 0) -> None:
        self.event = anyio.Event()  # set: the waiting model calls answer
        self.waiting = 0
        self.expected = expected
        self.all_waiting = anyio.Event()  # set when ``expected`` calls wait


async def _memory(runs: int, top: int, at: int) -> dict[str, Any]:
    from agentactors import Agent, ProviderActor, Runtime, ScriptedProvider

    gate = _Gate(runs)
    model, add = _agent_parts(gate, at)
    async with Runtime() as rt:
        provider = ProviderActor.shared(rt, ScriptedProvider(model, record=False), max_concurrency=runs + 10)
        agent = Agent(provider, tools=[add])
        # Warm up: every lazily built cache (request skeletons, tool specs, kernel bookkeeping) made once.
        warm = _Gate()
        warm.event.set()
        gate_event, gate.event = gate.event, warm.event
        await rt.run_many(agent, [PROMPT] * 20, concurrency=20)
        gate.event, gate.waiting, gate.all_waiting = gate_event, 0, anyio.Event()
        results: list[Any] = []

        async def batch() -> None:
            results.extend(await rt.run_many(agent, [PROMPT] * runs, concurrency=runs))

        gc.collect()
        tracemalloc.start(25)
        before_snap = tracemalloc.take_snapshot()
        before = tracemalloc.get_traced_memory()[0]
        async with anyio.create_task_group() as tg:
            tg.start_soon(batch)
            await gate.all_waiting.wait()
            for _ in range(10):  # whatever the runs do after their model call starts, done
                await anyio.lowlevel.checkpoint()
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
            snap = tracemalloc.take_snapshot() if top else None
            tracemalloc.stop()
            gate.event.set()
        ok = sum(r.content == EXPECTED for r in results)
    out: dict[str, Any] = {"runs": runs, "bytes_per_waiting_run": held / runs, "completed": ok}
    if snap is not None:
        filters = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen*")]
        stats = snap.filter_traces(filters).compare_to(before_snap.filter_traces(filters), "traceback")
        # Grouped by the innermost line of ours each allocation came through (a task's bookkeeping in
        # anyio is charged to the line that started the task), its callers after it.
        sites: dict[tuple[str, ...], list[float]] = {}
        for stat in stats:
            frames = [_where(f) for f in reversed(stat.traceback)]  # innermost first
            ours = tuple(f for f in frames if "agentactors/" in f or "_waiting_run" in f)[:4] or (frames[0],)
            site = sites.setdefault(ours, [0.0, 0.0])
            site[0] += stat.size_diff / runs
            site[1] += stat.count_diff / runs
        ranked = sorted(sites.items(), key=lambda kv: -kv[1][0])[:top]
        lines = [f"{size:7.1f} B {count:5.2f} blk  " + " <- ".join(key) for key, (size, count) in ranked]
        out["top"] = lines
    return out


def _where(frame: Any) -> str:
    name = frame.filename
    cut = name.rfind("agentactors/")
    return f"{name[cut:] if cut >= 0 else os.path.basename(name)}:{frame.lineno}"


async def _w1(runs: int, reps: int) -> dict[str, Any]:
    from agentactors import Agent, Runtime, ScriptedProvider

    model, add = _agent_parts()
    samples = []
    async with Runtime():
        agent = Agent(ScriptedProvider(model, record=False), tools=[add])
        out = await agent.run(PROMPT)
        if out.content != EXPECTED:
            raise RuntimeError(f"W1 answered {out.content!r}")
        for _ in range(reps):
            gc.collect()
            t0 = time.process_time()
            for _ in range(runs):
                await agent.run(PROMPT)
            samples.append((time.process_time() - t0) / runs * 1e6)
    return {"w1_us": min(samples), "w1_samples_us": [round(s, 1) for s in samples]}


def _child(tree: str, mode: str, args: list[str]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=tree)
    done = subprocess.run([sys.executable, __file__, mode, "--json", *args], env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{mode} in {tree} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _compare(a: str, b: str, rounds: int, runs: int, w1_runs: int, reps: int) -> dict[str, Any]:
    mem: dict[str, list[float]] = {a: [], b: []}
    w1: dict[str, list[float]] = {a: [], b: []}
    for i in range(rounds):
        for tree in (a, b) if i % 2 == 0 else (b, a):
            mem[tree].append(_child(tree, "memory", ["--runs", str(runs)])["bytes_per_waiting_run"])
            w1[tree].append(_child(tree, "w1", ["--runs", str(w1_runs), "--reps", str(reps)])["w1_us"])
    return {
        "trees": [a, b],
        "bytes_per_waiting_run": {t: round(min(v)) for t, v in mem.items()},
        "w1_us_best": {t: round(min(v), 1) for t, v in w1.items()},
        "w1_us_all": {t: [round(x, 1) for x in v] for t, v in w1.items()},
        "w1_ratio_b_over_a": round(min(w1[b]) / min(w1[a]), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["memory", "w1", "compare"])
    parser.add_argument("trees", nargs="*")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--top", type=int, default=0)
    parser.add_argument("--at", type=int, choices=[1, 2], default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.mode == "memory":
        result = anyio.run(_memory, args.runs or 2000, args.top, args.at, backend=args.backend)
    elif args.mode == "w1":
        result = anyio.run(_w1, args.runs or 2000, args.reps, backend=args.backend)
    else:
        if len(args.trees) != 2:
            parser.error("compare takes two trees")
        result = _compare(*args.trees, args.rounds, args.runs or 2000, 2000, args.reps)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        if key == "top":
            print("top allocation sites (by traceback):")
            print("\n".join("  " + line for line in value))
        else:
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
