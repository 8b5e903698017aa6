"""A chat service keeping one session per user in SQLite, with a refund that waits for a person's approval.

Each user's conversation is a session (``rt.session(agent, f"user:{name}", store=SqliteStore(path))``):
a virtual actor that loads the user's history from the database file on their first message, runs
their turns one at a time, commits each turn to the file, and leaves memory when the user goes quiet.
The refund tool is ``@tool(requires_approval=True)``: when the model calls it, the turn *pauses* and the
pause is stored with the session.  The service then restarts (a new ``Runtime``, the same file) and a
supervisor approves the refund there — the paused turn resumes, the tool runs, the answer is committed.
A second approval of the same refund is refused (``SessionConflictError``): the tool runs once.

Runs offline: a ScriptedProvider plays the model.  Swap in a real provider; nothing else changes.

    python examples/chat_sessions.py
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import anyio

from agentactors import (
    Agent,
    AgentSession,
    InMemoryRecorder,
    LLMRequest,
    Runtime,
    ScriptedProvider,
    SessionConflictError,
    SessionPausedError,
    SqliteStore,
    ToolCall,
    tool,
)

REFUNDS: list[tuple[str, float]] = []


@tool(requires_approval=True)
async def issue_refund(order: str, amount: float) -> str:
    """Refund an order. Needs a supervisor's approval.

    Args:
        order: the order number.
        amount: the amount to refund, in euros.
    """
    REFUNDS.append((order, amount))
    return f"refund of {amount:.2f} EUR for order {order} issued"


def model(request: LLMRequest) -> Any:
    """The scripted 'model': remembers names from the conversation, asks for refunds, reports tool results."""
    last = request.messages[-1]
    if last.role == "tool":
        return f"Done: {last.content}." if not last.is_error else "The refund was not approved, sorry."
    said = last.content
    if match := re.match(r"Hi, I'm (\w+)", said):
        return f"Hello {match[1]}! How can I help?"
    if said == "What's my name?":
        names = [m[1] for m in (re.match(r"Hi, I'm (\w+)", x.content) for x in request.messages) if m]
        return f"You are {names[-1]}." if names else "You haven't told me."
    if match := re.match(r"Refund order (\d+) \((\d+) EUR\)", said):
        return [ToolCall(f"refund-{match[1]}", "issue_refund", {"order": match[1], "amount": float(match[2])})]
    return "I can greet you, remember your name and refund orders."


class ChatService:
    """One session per user, in a SQLite file; the service's whole state is the file."""

    def __init__(self, rt: Runtime, path: Path) -> None:
        self.rt = rt
        self.store = SqliteStore(path)  # the runtime closes it when it exits
        self.agent = Agent(ScriptedProvider(model), tools=[issue_refund], name="support")

    def session(self, user: str) -> AgentSession:
        return self.rt.session(self.agent, f"user:{user}", store=self.store, idle_timeout=300)

    async def chat(self, user: str, text: str) -> str:
        try:
            result = await self.session(user).send(text)
        except SessionPausedError as exc:
            return f"(waiting for a supervisor on {[c.id for c in exc.pending]})"
        if result.paused:
            calls = ", ".join(f"{c.name}{c.arguments}" for c in result.pending_approvals)
            return f"(needs approval: {calls})"
        return result.content

    async def decide(self, user: str, decisions: dict[str, bool | str]) -> str:
        try:
            return (await self.session(user).resolve(decisions)).content
        except SessionConflictError as exc:
            return f"(refused: {exc})"


async def main(path: Path | None = None) -> dict[str, Any]:
    REFUNDS.clear()
    with tempfile.TemporaryDirectory() as tmp:
        db = path or Path(tmp) / "chat.db"
        out: dict[str, Any] = {"said": []}

        def show(who: str, text: str) -> None:
            print(f"{who:>12}: {text}")
            out["said"].append((who, text))

        # -- the first process: two users chat; Alice asks for a refund, which pauses her turn.
        async with Runtime() as rt:
            service = ChatService(rt, db)
            for user, text in [("alice", "Hi, I'm Alice"), ("bob", "Hi, I'm Bob"), ("alice", "What's my name?")]:
                show(user, text)
                show("support", await service.chat(user, text))
            show("alice", "Refund order 42 (30 EUR)")
            show("support", await service.chat("alice", "Refund order 42 (30 EUR)"))
            show("alice", "Hello?")
            show("support", await service.chat("alice", "Hello?"))
        print("-- the service restarts: sessions deactivated, the file keeps them --")

        # -- the second process: a supervisor approves the refund; Bob comes back.
        recorder = InMemoryRecorder()
        async with Runtime(recorders=[recorder]) as rt:
            service = ChatService(rt, db)
            show("supervisor", "approve refund-42")
            show("support", await service.decide("alice", {"refund-42": True}))
            show("supervisor", "approve refund-42 (again)")
            show("support", await service.decide("alice", {"refund-42": True}))
            show("bob", "What's my name?")
            show("support", await service.chat("bob", "What's my name?"))
            alice = service.session("alice")
            out["alice_history"] = [(m.role, m.content) for m in alice.history]
            out["alice_version"] = alice.version
        out["refunds"] = list(REFUNDS)
        out["events"] = [f"{e.type} {e.key}" for e in recorder.events if e.type.startswith("session.")]
    print("alice's conversation, as committed:")
    for role, content in out["alice_history"]:
        print(f"  {role:>9}: {content or '(tool call)'}")
    print("session events of the second process:")
    for line in out["events"]:
        print(f"  {line}")
    print(f"refunds issued: {out['refunds']}")
    return out




if __name__ == "__main__":
    anyio.run(main)
