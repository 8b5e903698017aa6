"""W14 hedged requests: call latency p50 / p99 and the extra requests sent, with and without ``with_hedge``.

Against the FakeVendor (real HTTP on 127.0.0.1, the OpenAI wire through ``OpenAIProvider``) with a heavy latency
tail: each request the vendor receives is answered after a log-normal time around ``--median`` (``sigma`` 0.25),
and one in ``--tail-every`` requests (default 20: 5 %) takes ``--tail-factor`` times as long — a busy replica, a
slow queue: bad luck, not the request, so a second copy usually is fast.  The draws are a seeded stream taken
in the order requests arrive, a hedge's copy included.  ``--calls`` calls, ``--concurrency`` at once, on real
time (asyncio): no hedge; ``with_hedge(after=<fixed>)``; ``with_hedge(after="p95")`` (the member's own recent
latencies); each with ``max_extra`` as given.  A losing copy is cancelled: its connection is closed, and the
vendor sees it go (``disconnected`` below).

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

from agentactors import LLMRequest, Message, OpenAIProvider, ScriptedProvider
from agentactors.resilience import with_hedge
from agentactors.testing import FakeReply, FakeVendor, RecordedRequest

HERE = Path(__file__).resolve().parent
REQUEST = LLMRequest([Message.user("hi")])


class TailedLatency:
    """The FakeVendor's handler: each request it receives waits a drawn latency (a seeded stream of draws).

    It runs on the vendor's server thread, one request at a time (the handler is called under the vendor's
    lock), so the draws are taken in the order requests arrive.
    """

    def __init__(self, seed: int, median: float, tail_every: int, tail_factor: float) -> None:
        self.rng = random.Random(seed)
        self.median = median
        self.tail_every = tail_every
        self.tail_factor = tail_factor
        self.requests = 0

    def draw(self) -> float:
        latency = self.median * self.rng.lognormvariate(0.0, 0.25)
        if self.rng.randrange(self.tail_every) == 0:
            latency *= self.tail_factor
        return latency

    def __call__(self, request: RecordedRequest) -> FakeReply:
        self.requests += 1
        return FakeReply("ok", latency=self.draw(), input_tokens=8, output_tokens=1)


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


async def run(args: argparse.Namespace, vendor: FakeVendor) -> dict[str, Any]:
    configs: list[tuple[str, dict[str, Any] | None]] = [
        ("no hedge", None),
        (f"after={args.after * 1000:g} ms", {"after": args.after}),
        ("after=p95", {"after": "p95"}),
    ]
    rows: dict[str, Any] = {}
    for label, hedge in configs:
        tail = TailedLatency(args.seed, args.median, args.tail_every, args.tail_factor)
        vendor.on(tail)
        provider: Any = OpenAIProvider(
            model="gpt-4o-mini", base_url=vendor.openai_base_url, api_key="sk-bench")
        if hedge is not None:
            provider = with_hedge(provider, max_extra=args.max_extra, window=args.calls, **hedge)
        try:
            # A warm-up, so the percentile has latencies to go on (and the first calls pay no import costs).
            await measure(provider, args.warmup, args.concurrency)
            before, gone = tail.requests, len(vendor.disconnects)
            latencies = await measure(provider, args.calls, args.concurrency)
            sent, disconnected = tail.requests - before, len(vendor.disconnects) - gone
        finally:
            await provider.aclose()
        rows[label] = {
            "p50_ms": percentile(latencies, 50) * 1000,
            "p99_ms": percentile(latencies, 99) * 1000,
            "p999_ms": percentile(latencies, 99.9) * 1000,
            "mean_ms": statistics.fmean(latencies) * 1000,
            "requests": sent,
            "extra_requests_pct": 100 * (sent - args.calls) / args.calls,
            "disconnected": disconnected,
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
    # The vendor keeps no bodies and only the last records (its disconnects are counted from them).
    with FakeVendor(record_bodies=False, max_records=4 * (args.calls + args.warmup)) as vendor:
        rows = anyio.run(run, args, vendor)
    overhead = anyio.run(call_overhead, 200 if args.smoke else 5000)
    print(f"W14 hedged requests, FakeVendor over HTTP: {args.calls} calls, {args.concurrency} at once, "
          f"median {args.median * 1000:g} ms, "
          f"1 in {args.tail_every} x{args.tail_factor:g}, max_extra={args.max_extra:g}\n")
    print("| configuration | p50 ms | p99 ms | p99.9 ms | mean ms | extra requests | losers disconnected |")
    print("|---|---|---|---|---|---|---|")
    for label, r in rows.items():
        print(f"| {label} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['p999_ms']:.1f} | {r['mean_ms']:.1f} | "
              f"{r['extra_requests_pct']:.1f} % | {r['disconnected']} |")
    print(f"\nper call, a zero-latency provider, sequential (best of 5): plain {overhead['plain_us']:.1f} us, "
          f"hedged (no hedge sent: the timer task) {overhead['hedge_us']:.1f} us")
    if not args.smoke:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"args": vars(args), "rows": rows, "overhead": overhead}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
