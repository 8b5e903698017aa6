"""A refund that waits for a person, then goes on as a live run: its answer streams, and a note steers it.

Runs offline: a ScriptedProvider plays the model.  The refund tool is ``@tool(requires_approval=True)``:
when the model calls it, the run ends *paused* (nothing refunded) with the call in ``pending_approvals``.
A person approves it; ``agent.resume_stream`` goes on from the pause as a live run — the refund runs, the
answer streams as it is written, and a note the person adds meanwhile (``run.steer``) reaches the model at
the run's next step, which takes it into its answer.

    python examples/approval_live.py
"""

from __future__ import annotations

import anyio

from agentactors import Agent, LLMRequest, RunResult, Runtime, ScriptedProvider, ToolCall, tool

REFUNDED: list[tuple[str, int]] = []


@tool(requires_approval=True)
async def refund(order: str, amount: int) -> str:
    """Refund an order. A person approves every refund first.

    Args:
        order: the order id, e.g. "A-1001".
        amount: how much, in euros.
    """
    REFUNDED.append((order, amount))
    return f"refunded {amount} EUR on {order}"


def model(request: LLMRequest) -> object:
    """The scripted 'model': asks for the refund, confirms it, then (after a steer) adds what it was told."""
    users = [m.content for m in request.messages if m.role == "user"]
    if not any(m.role == "tool" for m in request.messages):
        return [ToolCall("r1", "refund", {"order": "A-1001", "amount": 30})]
    if len(users) == 1:
        return "The refund of 30 EUR on order A-1001 is done; it reaches your card in 3 to 5 days."
    return f"Done: 30 EUR refunded on A-1001. As you asked: {users[-1]}"


async def main() -> RunResult[str]:
    agent = Agent(ScriptedProvider(model), name="desk", tools=[refund])
    async with Runtime():
        paused = await agent.run("Please refund order A-1001, 30 EUR: it arrived broken.")
        for call in paused.pending_approvals:
            print(f"waiting for a person: {call.name}({call.arguments})")
        assert not REFUNDED  # nothing ran before the decision

        decisions = {call.id: True for call in paused.pending_approvals}  # the person approves
        async with agent.resume_stream(paused, decisions) as run:
            # Added while the run goes on: taken at its next step boundary, read by the model once.
            await run.steer("Tell the customer we will send a new one too.")
            async for text in run.text_stream():
                print(text, end="", flush=True)
            print()
        result = run.result
    print(f"refunded: {REFUNDED}; steps: {result.steps}")
    return result


if __name__ == "__main__":
    anyio.run(main)
