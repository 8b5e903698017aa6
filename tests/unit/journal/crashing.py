"""A journaled run that kills its own process (SIGKILL) at a chosen point: ``python -m tests.unit.journal.crashing``.

Its side effects go to a ledger file, one line per attempt, with the call's idempotency key — the way a payment
API would see them.  The provider is stateless (its answer depends on how far the conversation is), so the
process that recovers the run answers its remaining steps the same way.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio

from agentactors import (
    Agent,
    LLMRequest,
    LLMResponse,
    PostgresJournal,
    Runtime,
    SqliteJournal,
    ToolCall,
    ToolContext,
    tool,
)

STEPS = 3  # steps with a tool call; the next one answers


class Stateless:
    """Step n (n assistant messages so far + 1) calls ``charge`` until STEPS, then answers."""

    name = "stateless"
    default_model = "m"

    def __init__(self, kill_at_model: int | None = None) -> None:
        self.kill_at_model = kill_at_model

    async def complete(self, request: LLMRequest) -> LLMResponse:
        step = sum(1 for m in request.messages if m.role == "assistant") + 1
        if step == self.kill_at_model:
            os.kill(os.getpid(), signal.SIGKILL)
        if step <= STEPS:
            return LLMResponse("", (ToolCall(f"call-{step}", "charge", {"cents": 100 * step}),))
        return LLMResponse(f"charged {STEPS} times")

    async def aclose(self) -> None:
        return None


def make_agent(ledger: Path, kill_in_tool: int | None = None, kill_at_model: int | None = None) -> Agent[Any]:
    @tool
    async def charge(ctx: ToolContext, cents: int) -> str:
        """Charge the card."""
        with ledger.open("a") as file:
            file.write(f"{ctx.idempotency_key} {cents}\n")
        if ctx.step == kill_in_tool:
            os.kill(os.getpid(), signal.SIGKILL)  # the side effect happened; its result is never committed
        return f"charged {cents}"

    return Agent(Stateless(kill_at_model), tools=[charge], name="payer")


def open_journal(target: str, **options: Any) -> SqliteJournal | PostgresJournal:
    """The journal ``target`` names: a PostgreSQL DSN (``postgresql://…``) or a SQLite file."""
    if target.startswith("postgresql://"):
        return PostgresJournal(target, **options)
    return SqliteJournal(target, **options)


async def main(db: str, ledger: str, where: str) -> None:
    kind, _, number = where.partition(":")
    agent = make_agent(
        Path(ledger),
        kill_in_tool=int(number) if kind == "tool" else None,
        kill_at_model=int(number) if kind == "model" else None,
    )
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        result = await agent.bind(rt).run("pay")
    print(result.run_id, result.content)


if __name__ == "__main__":
    db, ledger, where = sys.argv[1:4]
    anyio.run(main, db, ledger, where)
