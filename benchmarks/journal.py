"""A journaled W1-style run vs a plain one: what committing each step to a journal costs.

``python benchmarks/journal.py [N] [--postgres DSN]`` prints the rows and writes benchmarks/results/journal.json:

* sequential: N runs one after the other (each commit is a thread hop and a transaction);
* concurrent: N runs, ``CONCURRENCY`` at a time (commits queued together share a hop and a transaction: the
  journals' group commit, ``agentactors.journal._group``);
* with ``--postgres DSN`` (a database the benchmark may create tables in), the same rows for PostgresJournal.
"""

import json
import os
import sys
import tempfile
import time
import timeit
from pathlib import Path

import anyio

from agentactors import Agent, Runtime, SqliteJournal, ToolCall, tool
from agentactors.loop.tape import open_tape
from agentactors.providers.scripted import ScriptedProvider


@tool
def lookup(key: str) -> str:
    """Look up."""
    return "v-" + key

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
N = int(ARGS[0]) if ARGS else 2000
DSN = sys.argv[sys.argv.index("--postgres") + 1] if "--postgres" in sys.argv else None
CONCURRENCY = 20

def provider():
    def answer(req: object) -> object:
        return [ToolCall("c1", "lookup", {"key": "a"})] if len(req.messages) < 3 else "done"  # type: ignore[attr-defined]

    return ScriptedProvider(answer, record=False)

async def bench(journal, concurrency=1):
    async with Runtime(journal=journal) as rt:
        agent = Agent(provider(), tools=[lookup]).bind(rt)
        await agent.run("q")
        t = time.perf_counter()
        if concurrency == 1:
            for _ in range(N):
                await agent.run("q")
        else:
            async def worker(count):
                for _ in range(count):
                    await agent.run("q")

            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(worker, N // concurrency)
        return (time.perf_counter() - t) / (N // concurrency * concurrency) * 1e6

async def best(journal, concurrency=1):
    return min([await bench(journal, concurrency) for _ in range(3)])

async def main():
    row = {"runs": N, "concurrency": CONCURRENCY}
    row["plain_us"] = await best(None)
    row["plain_concurrent_us"] = await best(None, CONCURRENCY)
    d = tempfile.mkdtemp()
    j = SqliteJournal(os.path.join(d, "j.db"))
    row["journaled_us"] = await best(j)
    row["journaled_concurrent_us"] = await best(j, CONCURRENCY)
    await j.aclose()
    print(f"W1-style run (1 tool call + answer), {N} runs, best of 3, us/run")
    print(f"  plain:                 {row['plain_us']:8.1f}   {CONCURRENCY} at a time: "
          f"{row['plain_concurrent_us']:8.1f}")
    print(f"  SqliteJournal:         {row['journaled_us']:8.1f}   {CONCURRENCY} at a time: "
          f"{row['journaled_concurrent_us']:8.1f}  (WAL, synchronous=NORMAL; 4 commits a run)")
    if DSN is not None:
        from agentactors import PostgresJournal

        p = PostgresJournal(DSN)
        row["postgres_us"] = await best(p)
        row["postgres_concurrent_us"] = await best(p, CONCURRENCY)
        await p.aclose()
        print(f"  PostgresJournal:       {row['postgres_us']:8.1f}   {CONCURRENCY} at a time: "
              f"{row['postgres_concurrent_us']:8.1f}")

    class R:
        journal = None

    cost = timeit.timeit(lambda: open_tape(R, "r", None, (), None, False), number=200000) / 200000 * 1e9
    print(f"  open_tape with no journal (the cost a plain run pays): {cost:.0f} ns")
    row["open_tape_ns"] = cost
    return row

def write(row):
    out = Path(os.environ.get("AGENTACTORS_BENCH_OUT", Path(__file__).parent / "results" / "journal.json"))
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(row, indent=2))

write(anyio.run(main))
