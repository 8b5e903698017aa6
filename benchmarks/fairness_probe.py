"""Does any W1 implementation hop to a worker thread?  Run in .venv-bench, where the peers live:

    .venv-bench/bin/python benchmarks/fairness_probe.py

Every W1 implementation of both harnesses does a few runs with ``threading.Thread.start`` recorded; each is set up
and run on an event loop of its own, whose worker threads (asyncio's executor, anyio's) are made at their first
use.  A peer handed a plain ``def`` runs it in a worker thread — a cost agentactors, handed ``async def``s, does
not pay — so every implementation must start none.  Prints what each started; exits 1 if any did.
(tests/integration/test_benchmark_fairness.py checks the same rule from the source, without the peers.)
"""

import asyncio
import json
import sys
import threading

sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent))
import _peers
import _workloads
import w1_independent as independent

started = []
_start = threading.Thread.start
def start(self, *a, **kw):
    started.append(self.name)
    return _start(self, *a, **kw)
threading.Thread.start = start

async def harness(factory):
    del started[:]
    impl = factory()
    async with impl:
        for _ in range(3):
            assert await impl.run(_workloads.PROMPT) == _workloads.EXPECTED
        return list(started)

async def fresh(build):
    del started[:]
    run = await build()
    for _ in range(3):
        assert await run() == independent.ANSWER
    return list(started)

out = {}
for name, factory in _peers.PEERS.items():
    out["run.py " + name] = asyncio.run(harness(factory))
for name, build in independent.FRAMEWORKS.items():
    out["w1_independent.py " + name] = asyncio.run(fresh(build))
print(json.dumps(out, indent=1))
sys.exit(1 if any(out.values()) else 0)
