"""Journaled runs of other kinds that kill their own process (SIGKILL) at a chosen point:
``python -m tests.unit.journal.crashing_kinds KIND DB LEDGER WHERE``.

KIND is ``child`` (a boss delegates to a payer through ``as_tool``: the payer's run is a child), ``child-done``
(the boss's step also calls ``settle``, which waits for the payer to finish, then kills: WHERE is ignored), ``resumed``
(a run paused for approval, resumed, and the resumed run killed), ``session`` (a session's turn, its history in
a SqliteStore), ``session-later`` (the same, the session holding an earlier exchange), ``session-resolved`` (a
session's turn paused for approval, resolved, and the resumed run killed) or ``handoff`` (a triage agent hands
the run to the payer).  WHERE is ``tool:N`` (inside the payer's charge at step N, after its side effect) or
``model:N`` (at the payer's N-th model step).  Every side effect goes to LEDGER with its idempotency key; every
provider answers from the conversation alone, so the process that recovers answers the remaining steps the same
way.
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
    Message,
    Runtime,
    SqliteJournal,
    SqliteStore,
    ToolCall,
    ToolContext,
    tool,
)
from agentactors.providers.port import stream_from_complete
from agentactors.sessions import SessionRecord

STEPS = 3  # the payer's steps that charge; the next one answers


class _Model:
    """A provider answering from the conversation alone; it streams its answer in one piece (a session streams)."""

    default_model = "m"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        raise NotImplementedError

    def stream(self, request: LLMRequest) -> Any:
        return stream_from_complete(self, request)

    async def aclose(self) -> None:
        return None


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class Payer(_Model):
    """Step n of the payer's own turn (its assistant messages since the last user message, + 1) charges n*100
    until STEPS, then answers.  With ``approve``, step 1 calls ``approved_charge`` (which needs approval)."""

    name = "payer-model"

    def __init__(self, kill_at: int | None = None, approve: bool = False) -> None:
        self.kill_at = kill_at
        self.approve = approve

    async def complete(self, request: LLMRequest) -> LLMResponse:
        messages = list(request.messages)
        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        step = sum(1 for m in messages[last_user:] if m.role == "assistant" and not _handoff(m)) + 1
        if step == self.kill_at:
            _kill()
        if step <= STEPS:
            name = "approved_charge" if self.approve and step == 1 else "charge"
            return LLMResponse("", (ToolCall(f"call-{step}", name, {"cents": 100 * step}),))
        return LLMResponse(f"charged {STEPS} times")


def _handoff(message: Any) -> bool:
    return any(c.name.startswith("transfer_to_") for c in message.tool_calls)


class Boss(_Model):
    """Step 1 asks the payer (a delegated run, call ``ask-1``); step 2 answers with what it said."""

    name = "boss-model"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        tools = [m for m in request.messages if m.role == "tool"]
        if not tools:
            return LLMResponse("", (ToolCall("ask-1", "payer", {"input": "pay"}),))
        return LLMResponse(f"the payer said: {tools[-1].content}")


class BossWithSettle(_Model):
    """Step 1 asks the payer and calls ``settle`` in the same step; step 2 answers with what both said."""

    name = "boss-model"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        tools = [m for m in request.messages if m.role == "tool"]
        if not tools:
            calls = (ToolCall("ask-1", "payer", {"input": "pay"}), ToolCall("settle-1", "settle", {}))
            return LLMResponse("", calls)
        return LLMResponse("; ".join(m.content for m in tools))


class Triage(_Model):
    """Hands every conversation to the payer."""

    name = "triage-model"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse("", (ToolCall("hand-1", "transfer_to_payer", {}),))


def agents(kind: str, ledger: Path, where: str = "") -> list[Agent[Any]]:
    """The agents of ``kind`` (the first one is the one a run starts with), killing at ``where``."""
    spot, _, number = where.partition(":")
    kill_in_tool = int(number) if spot == "tool" else None

    async def charge_(ctx: ToolContext, cents: int) -> str:
        with ledger.open("a") as file:
            file.write(f"{ctx.idempotency_key} {cents}\n")
        if ctx.call_id == f"call-{kill_in_tool}":  # the payer's step N (a run's steps count the handoff too)
            _kill()  # the side effect happened; its result is never committed
        return f"charged {cents}"

    @tool
    async def charge(ctx: ToolContext, cents: int) -> str:
        """Charge the card."""
        return await charge_(ctx, cents)

    @tool(requires_approval=True)
    async def approved_charge(ctx: ToolContext, cents: int) -> str:
        """Charge the card, once a person said yes."""
        return await charge_(ctx, cents)

    model = Payer(int(number) if spot == "model" else None, approve=kind in ("resumed", "session-resolved"))
    payer = Agent(model, tools=[charge, approved_charge], name="payer")
    if kind == "child":
        return [Agent(Boss(), tools=[payer.as_tool()], name="boss"), payer]
    if kind == "child-done":

        @tool
        async def settle() -> str:
            """Settle the books once the payer is done (this process dies there, the first time)."""
            # The ledger is a file the payer's tool writes: polled, there is no event to wait on.
            while _lines(ledger) < STEPS:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            if spot == "settle":
                await anyio.sleep(0.2)  # the payer's run commits its end
                _kill()  # the child finished; the boss's step never committed
            return "settled"

        return [Agent(BossWithSettle(), tools=[payer.as_tool(), settle], name="boss"), payer]
    if kind == "handoff":
        return [Agent(Triage(), handoffs=[payer], name="triage"), payer]
    return [payer]


async def main(kind: str, db: str, ledger: str, where: str) -> None:
    first, *_ = agents(kind, Path(ledger), where)
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        agent = first.bind(rt)
        if kind.startswith("session"):
            store = SqliteStore(db)
            if kind == "session-later":
                earlier = (Message.user("hello"), Message.assistant("hi"))
                await store.commit(SessionRecord("customer-1", earlier), expected_version=None)
            session = agent.session("customer-1", store=store)
            if kind == "session-resolved":
                paused = await session.send("pay")
                assert paused.paused, paused
                result = await session.resolve({paused.pending_approvals[0].id: True})
            else:
                result = await session.send("pay")
        elif kind == "resumed":
            paused = await agent.run("pay")
            assert paused.paused, paused
            result = await agent.resume(paused, {paused.pending_approvals[0].id: True})
        else:
            result = await agent.run("pay")
    print(result.run_id, result.content)


def _lines(path: Path) -> int:
    """How many lines ``path`` holds (none when it does not exist yet)."""
    return len(path.read_text().splitlines()) if path.exists() else 0


if __name__ == "__main__":
    kind, db, ledger, where = sys.argv[1:5]
    anyio.run(main, kind, db, ledger, where)
