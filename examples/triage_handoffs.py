"""A triage agent handing conversations off to specialists.

``triage`` answers nothing itself: it reads the request and hands the conversation to ``billing`` or
``tech`` (``Agent(..., handoffs=[...])``).  The specialist continues the same run with its own system
prompt, tools and output type; ``result.agent`` says who answered and ``result.handoffs`` the way there.
``tech`` can hand a billing question back through triage by name (``handoffs=["triage"]``): agents are
immutable, so a way back is named, not held.

Runs offline: ScriptedProviders play the models (a callable script decides from the request the way a
real model would).  Swap in ``OpenAIProvider(model=...)`` etc. to talk to a real vendor.

    python examples/triage_handoffs.py
"""

from __future__ import annotations

from typing import Literal

import anyio
import attrs

from agentactors import Agent, InMemoryRecorder, LLMRequest, RunResult, Runtime, ScriptedProvider, ToolCall, tool

INVOICES = {"A-17": 40.0, "B-02": 125.5}


@tool(read_only=True)
async def invoice_total(number: str) -> float:
    """The total of an invoice, in EUR.

    Args:
        number: the invoice number, e.g. "A-17".
    """
    return INVOICES[number]


@attrs.frozen
class Ticket:
    """What the tech desk answers with: a typed result."""

    component: Literal["router", "laptop", "phone"]
    action: Literal["restart", "replace", "escalate"]


def triage_model(request: LLMRequest) -> object:
    question = request.messages[-1].content.lower()
    target = "transfer_to_billing" if "invoice" in question else "transfer_to_tech"
    return [ToolCall("h1", target, {})]


def billing_model(request: LLMRequest) -> object:
    last = request.messages[-1]
    if last.role == "tool" and last.name == "invoice_total":
        return f"Invoice A-17 comes to {last.content} EUR."
    return [ToolCall("b1", "invoice_total", {"number": "A-17"})]


def tech_model(request: LLMRequest) -> object:
    return ToolCall("t1", "final_result", {"component": "router", "action": "restart"})


billing = Agent(
    ScriptedProvider(billing_model, name="billing-model"),
    name="billing",
    system="You answer questions about invoices. Look totals up; never guess.",
    tools=[invoice_total],
)
tech = Agent(
    ScriptedProvider(tech_model, name="tech-model"),
    name="tech",
    system="You diagnose hardware problems and open a ticket.",
    output_type=Ticket,
    handoffs=["triage"],  # back to triage, by name, for what is not theirs
)
triage: Agent[object] = Agent(  # its runs answer with the output of the desk they end at: a str or a Ticket
    ScriptedProvider(triage_model, name="triage-model"),
    name="triage",
    system="Route each request to the right desk. Do not answer yourself.",
    handoffs=[billing, tech],
)


async def main() -> list[RunResult[object]]:
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]):
        results = [
            await triage.run("How much is invoice A-17?"),
            await triage.run("My router keeps dropping the connection."),
        ]
    for result in results:
        print(f"{' -> '.join(('triage', *result.handoffs))}: {result.output!r}")
    handoffs = [e for e in recorder.events if e.type == "agent.handoff"]
    print(f"{len(handoffs)} handoffs recorded: " + ", ".join(f"{e.from_agent}->{e.to_agent}" for e in handoffs))
    return results


if __name__ == "__main__":
    anyio.run(main)
