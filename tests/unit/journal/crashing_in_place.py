"""A journaled run whose step 1 is decided in place, killed (SIGKILL) later in the run:
``python -m tests.unit.journal.crashing_in_place BACKEND DB LEDGER WHERE`` (DB: a SQLite file or a
PostgreSQL DSN).

Step 1 asks for two calls: ``note`` (a plain tool) and ``send_money`` (``approval="wait"``: the run waits in place
for a person).  ``note`` runs in the step's first executor message, ``send_money`` in a second one once approved
(``run.approve``) — the two commit the step's results one after the other.  Step 2 answers with what both said.
WHERE is ``model:2`` (the process is killed at the step-2 model call, after the approved call's results were
committed) or ``waiting`` (killed while the run waits for the decision, after the first executor message's commit).
Every side effect goes to LEDGER (``<idempotency key> <tool>``); the provider answers from the conversation alone, so
the process that recovers answers the remaining step the same way.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio

from agentactors import Agent, LLMRequest, LLMResponse, Runtime, ToolCall, ToolContext, tool
from agentactors.providers.port import stream_from_complete
from tests.unit.journal.crashing import open_journal


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class Model:
    """Step 1 calls ``note`` and ``send_money``; step 2 answers with the tool results it reads, in order (it streams its
    answer in one piece)."""

    name = "in-place"
    default_model = "m"

    def __init__(self, kill_at_model: int | None = None) -> None:
        self.kill_at_model = kill_at_model

    async def complete(self, request: LLMRequest) -> LLMResponse:
        step = sum(1 for m in request.messages if m.role == "assistant") + 1
        if step == self.kill_at_model:
            _kill()
        if step == 1:
            return LLMResponse(
                "", (ToolCall("note-1", "note", {"text": "paying"}), ToolCall("pay-1", "send_money", {"amount": 5}))
            )
        return LLMResponse(" + ".join(m.content for m in request.messages if m.role == "tool"))

    def stream(self, request: LLMRequest) -> Any:
        return stream_from_complete(self, request)  # a streamed run (agent.stream) streams its steps

    async def aclose(self) -> None:
        return None


def make_agent(ledger: Path, kill_at_model: int | None = None, approval_timeout: float | None = None) -> Agent[Any]:
    @tool
    async def note(ctx: ToolContext, text: str) -> str:
        """Write a note."""
        with ledger.open("a") as file:
            file.write(f"{ctx.idempotency_key} note\n")
        return f"noted {text}"

    @tool(requires_approval=True, approval="wait", approval_timeout=approval_timeout)
    async def send_money(ctx: ToolContext, amount: int) -> str:
        """Send money."""
        with ledger.open("a") as file:
            file.write(f"{ctx.idempotency_key} send_money\n")
        return f"sent {amount}"

    return Agent(Model(kill_at_model), tools=[note, send_money], name="payer")


async def main(db: str, ledger: str, where: str) -> None:
    agent = make_agent(Path(ledger), kill_at_model=2 if where == "model:2" else None)
    async with open_journal(db) as journal, Runtime(journal=journal) as rt:
        async with agent.bind(rt).stream("pay") as run:
            async for event in run:
                if event.type == "run.awaiting_approval":
                    break
            if where == "waiting":
                _kill()
            await run.approve("pay-1")
            result = await run.wait()
    print(result.run_id, result.content)  # not reached: the process is killed first


if __name__ == "__main__":
    backend, db_path, ledger_path, at = sys.argv[1:5]
    anyio.run(main, db_path, ledger_path, at, backend=backend)
