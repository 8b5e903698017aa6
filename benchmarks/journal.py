"""A journaled W1-style run vs a plain one: what committing each step to a SqliteJournal costs.

``python benchmarks/journal.py [N]`` prints the row and writes benchmarks/results/journal.json.
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

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000

def provider():
    def answer(req: object) -> object:
        return [ToolCall("c1", "lookup", {"key": "a"})] if len(req.messages) < 3 else "done"  # type: ignore[attr-defined]

    return ScriptedProvider(answer, record=False)

async def bench(journal):
    async with Runtime(journal=journal) as rt:
        agent = Agent(provider(), tools=[lookup]).bind(rt)
        await agent.run("q")
        t = time.perf_counter()
        for _ in range(N):
            await agent.run("q")
        return (time.perf_counter() - t) / N * 1e6

async def main():
    plain = min([await bench(None) for _ in range(3)])
    d = tempfile.mkdtemp()
    j = SqliteJournal(os.path.join(d, "j.db"))
    journaled = min([await bench(j) for _ in range(3)])
    await j.aclose()
    print(f"W1-style run (1 tool call + answer), {N} sequential runs, best of 3")
    print(f"  plain:     {plain:8.1f} us/run")
    print(f"  journaled: {journaled:8.1f} us/run  (SqliteJournal, WAL, synchronous=NORMAL; 4 commits a run)")

    class R:
        journal = None

    cost = timeit.timeit(lambda: open_tape(R, "r", None, (), None, False), number=200000) / 200000 * 1e9
    print(f"  open_tape with no journal (the cost a plain run pays): {cost:.0f} ns")
    out = Path(__file__).parent / "results" / "journal.json"
    out.parent.mkdir(exist_ok=True)
    row = {"runs": N, "plain_us": plain, "journaled_us": journaled, "open_tape_ns": cost}
    out.write_text(json.dumps(row, indent=2))

anyio.run(main)
