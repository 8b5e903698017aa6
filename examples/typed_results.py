"""Typed results: a support agent that triages a ticket into a validated value, not a paragraph.

Runs offline: a ScriptedProvider plays the model.  Its first answer picks a category outside the allowed
set, the agent sends it back with the issue, and the second answer validates.  A pydantic model is the
output type; its ``action`` is a constrained pick (``Literal``).  Auto chooses the strategy for the model
about to be called — a forced output tool here; ``NativeOutput`` / ``PromptedOutput`` for models without
one.  The last part streams a second triage and prints its partial values as they arrive.

    python examples/typed_results.py
"""

from __future__ import annotations

from typing import Literal

import anyio
from pydantic import BaseModel, Field

from agentactors import Agent, InMemoryRecorder, ModelRetry, OutputContext, RunResult, ScriptedProvider, ToolCall


class Triage(BaseModel):
    """How to handle a support ticket."""

    action: Literal["refund", "replace", "escalate"]
    reason: str = Field(description="one sentence the customer will read")
    priority: int = Field(ge=1, le=3)


def polite(value: Triage, ctx: OutputContext) -> Triage:
    """Checks no schema can express: the reason is addressed to the customer."""
    if "idiot" in value.reason.lower():
        raise ModelRetry("the reason is read by the customer: keep it polite")
    return value


def model() -> ScriptedProvider:
    return ScriptedProvider(
        [
            ToolCall("c1", "final_result", {"action": "money back", "reason": "It broke.", "priority": 2}),
            ToolCall("c2", "final_result", {"action": "replace", "reason": "The kettle arrived cracked; a new "
                                            "one ships today.", "priority": 2}),
        ]
    )


async def main() -> RunResult[Triage]:
    recorder = InMemoryRecorder()
    agent = Agent(model(), system="You triage support tickets.", output_type=Triage, output_validator=polite,
                  recorders=[recorder])
    result = await agent.run("My new kettle arrived with a crack in it.")
    triage = result.output  # a Triage, typed as one
    print(f"action: {triage.action}  priority: {triage.priority}")
    print(f"reason: {triage.reason}")
    for event in recorder.events:
        if event.type == "output.strategy":
            print(f"strategy: {event.strategy} ({event.reason})")
        elif event.type == "output.invalid":
            print(f"refused attempt {event.attempt}: {' '.join(event.issues)}")

    streaming = Agent(ScriptedProvider([ToolCall("c1", "final_result", {
        "action": "escalate", "reason": "A second crack means a bad batch.", "priority": 1})]), output_type=Triage)
    async with streaming.stream("The replacement is cracked too.") as run:
        shown = None
        async for partial in run.partial_output():  # more and more complete values, then the validated one
            if partial != shown:  # (the validated value repeats the last partial when nothing was left to come)
                print(f"partial: {partial.action} / {partial.reason!r}")
            shown = partial
    return result


if __name__ == "__main__":
    anyio.run(main)
