"""W14 hedged requests: call latency p50 / p99 and the extra requests sent, with and without ``with_hedge``.

A scripted vendor with a heavy latency tail: each request takes a log-normal time around ``--median``
(``sigma`` 0.25), and one in ``--tail-every`` requests (default 20: 5 %) takes ``--tail-factor`` times as
long — a busy replica, a slow queue: bad luck, not the request, so a second copy usually is fast.
``--calls`` calls, ``--concurrency`` at once, on real time (asyncio), the same seeded draws for every
configuration: no hedge; ``with_hedge(after=<fixed>)``; ``with_hedge(after="p95")`` (the member's own
recent latencies); each with ``max_extra`` as given.

    python benchmarks/hedge.py                 # prints a table, writes benchmarks/results/hedge.json
    python benchmarks/hedge.py --smoke         # tiny counts: checks the harness, its numbers mean nothing
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from agentactors import LLMRequest, Message, ScriptedProvider
from agentactors.resilience import with_hedge

HERE = Path(__file__).resolve().parent
REQUEST = LLMRequest([Message.user("hi")])


class TailedVendor:
    """A script: each request sleeps a drawn latency (a seeded stream of draws, shared by nothing else)."""

    def __init__(self, seed: int, median: float, tail_every: int, tail_factor: float) -> None:
        self.rng = random.Random(seed)
        self.median = median
        self.tail_every = tail_every
        self.tail_factor = tail_factor
        self.requests = 0
        self.cancelled = 0

    def draw(self) -> float:
        latency = self.median * self.rng.lognormvariate(0.0, 0.25)
        if self.rng.randrange(self.tail_every) == 0:
            latency *= self.tail_factor
        return latency

    def __call__(self, request: LLMRequest) -> Any:
        self.requests += 1
        latency = self.draw()

        async def answer() -> str:
            try:
                await anyio.sleep(latency)
            except anyio.get_cancelled_exc_class():
                self.cancelled += 1
                raise
            return "ok"

        return answer()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


async def measure(provider: Any, calls: int, concurrency: int) -> list[float]:
    latencies: list[float] = []
    limiter = anyio.Semaphore(concurrency)

    async def one() -> None:
        async with limiter:
            start = time.perf_counter()
            await provider.complete(REQUEST)
            latencies.append(time.perf_counter() - start)

    async with anyio.create_task_group() as tg:
        for _ in range(calls):
            tg.start_soon(one)
    return latencies


async def run(args: argparse.Namespace) -> dict[str, Any]:
    configs: list[tuple[str, dict[str, Any] | None]] = [
        ("no hedge", None),
        (f"after={args.after * 1000:g} ms", {"after": args.after}),
        ("after=p95", {"after": "p95"}),
    ]
    rows: dict[str, Any] = {}
    for label, hedge in configs:
        vendor = TailedVendor(args.seed, args.median, args.tail_every, args.tail_factor)
        provider: Any = ScriptedProvider(vendor, record=False)
        if hedge is not None:
            provider = with_hedge(provider, max_extra=args.max_extra, window=args.calls, **hedge)
        # A warm-up, so the percentile has latencies to go on (and the first calls pay no import costs).
        await measure(provider, args.warmup, args.concurrency)
        before = vendor.requests
        latencies = await measure(provider, args.calls, args.concurrency)
        sent = vendor.requests - before
        rows[label] = {
            "p50_ms": percentile(latencies, 50) * 1000,
            "p99_ms": percentile(latencies, 99) * 1000,
            "p999_ms": percentile(latencies, 99.9) * 1000,
            "mean_ms": statistics.fmean(latencies) * 1000,
            "requests": sent,
            "extra_requests_pct": 100 * (sent - args.calls) / args.calls,
        }
    return rows


async def call_overhead(calls: int) -> dict[str, float]:
    """What the decorator adds to a call that answers at once (the common case: no hedge is sent)."""
    plain = ScriptedProvider(lambda r: "ok", record=False)
    out: dict[str, float] = {}
    for label, provider in (("plain_us", plain), ("hedge_us", with_hedge(plain, after=1.0))):
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls):
                await provider.complete(REQUEST)
            best = min(best, time.perf_counter() - start)
        out[label] = best / calls * 1e6
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--median", type=float, default=0.1, help="seconds")
    parser.add_argument("--tail-every", type=int, default=20)
    parser.add_argument("--tail-factor", type=float, default=20.0)
    parser.add_argument("--after", type=float, default=0.25, help="the fixed hedge delay, seconds")
    parser.add_argument("--max-extra", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--out", default=str(HERE / "results" / "hedge.json"))
    args = parser.parse_args(argv)
    if args.smoke:
        args.calls, args.warmup, args.median, args.after = 60, 30, 0.002, 0.005
    rows = anyio.run(run, args)
    overhead = anyio.run(call_overhead, 200 if args.smoke else 5000)
    print(f"W14 hedged requests: {args.calls} calls, {args.concurrency} at once, median {args.median * 1000:g} ms, "
          f"1 in {args.tail_every} x{args.tail_factor:g}, max_extra={args.max_extra:g}\n")
    print("| configuration | p50 ms | p99 ms | p99.9 ms | mean ms | extra requests |")
    print("|---|---|---|---|---|---|")
    for label, r in rows.items():
        print(f"| {label} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['p999_ms']:.1f} | {r['mean_ms']:.1f} | "
              f"{r['extra_requests_pct']:.1f} % |")
    print(f"\nper call, a zero-latency provider, sequential (best of 5): plain {overhead['plain_us']:.1f} us, "
          f"hedged (no hedge sent: the timer task) {overhead['hedge_us']:.1f} us")
    if not args.smoke:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"args": vars(args), "rows": rows, "overhead": overhead}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
