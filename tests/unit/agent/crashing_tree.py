"""A journaled delegation tree that kills its own process (SIGKILL) inside its last leaf's tool:
``python -m tests.unit.agent.crashing_tree DB LEDGER``.

The boss asks three workers at once; each worker asks one leaf; each leaf calls ``note``, which writes a line to
LEDGER with its idempotency key.  The tree is :data:`RUNS` runs, and every ``as_tool`` says ``max_runs=RUNS``:
a recovery that counted a run twice would refuse one.  ``agents(ledger, kill=True)`` kills at the third note;
every model answers from the conversation alone, so the process that recovers answers the same way.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from agentactors import Agent, LLMRequest, LLMResponse, Runtime, SqliteJournal, ToolCall, ToolContext, tool

WORKERS = 3
RUNS = 2 * WORKERS  # the workers and their leaves


class _Model:
    default_model = "m"
    name = "tree-model"

    def __init__(self, answer: Callable[[list[str]], LLMResponse]) -> None:
        self._answer = answer

    async def complete(self, request: LLMRequest) -> LLMResponse:
        results = [m.content for m in request.messages if m.role == "tool"]
        return self._answer(results)

    async def aclose(self) -> None:
        return None


def _boss(results: list[str]) -> LLMResponse:
    if not results:
        return LLMResponse("", tuple(ToolCall(f"w{i}", "worker", {"input": f"part {i}"}) for i in range(WORKERS)))
    return LLMResponse(" | ".join(results))


def _worker(results: list[str]) -> LLMResponse:
    return (
        LLMResponse(f"worker: {results[-1]}") if results else LLMResponse("", (ToolCall("l1", "leaf", {"input": "x"}),))
    )


def _leaf(results: list[str]) -> LLMResponse:
    return LLMResponse(f"leaf: {results[-1]}") if results else LLMResponse("", (ToolCall("n1", "note", {}),))


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def agents(ledger: Path, *, kill: bool = False) -> list[Agent[Any]]:
    """The boss (first), a worker and a leaf; with ``kill``, the third note kills the process."""

    @tool
    async def note(ctx: ToolContext) -> str:
        """Write it down."""
        with ledger.open("a") as file:
            file.write(f"{ctx.idempotency_key}\n")
        if kill and _lines(ledger) == WORKERS:
            await anyio.sleep(0.3)  # the other leaves commit what they did
            os.kill(os.getpid(), signal.SIGKILL)
        return "noted"

    leaf = Agent(_Model(_leaf), tools=[note], name="leaf")
    worker = Agent(_Model(_worker), tools=[leaf.as_tool(max_runs=RUNS)], name="worker")
    boss = Agent(_Model(_boss), tools=[worker.as_tool(max_runs=RUNS)], name="boss")
    return [boss, worker, leaf]


async def main(db: str, ledger: str) -> None:
    boss, *_ = agents(Path(ledger), kill=True)
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        await boss.bind(rt).run("go")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
