"""``explain()`` of a run resumed after an approval pause tells the step it finished as it was.

The resumed run's first step is the paused one: its model call was made by the paused run, and the resumed run
runs the calls a person decided on (approved ones run, denied ones answered with a refusal).  It used to read
"step k: tried nothing; failed (no answer)" — a failure that never happened.  Now that step names the run it
went on from, the decisions and the tool results they produced; the header says the run was resumed; the timeline
has the resumption.  Live events and a JSONL record alike, both backends.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentactors import (
    Agent,
    Explanation,
    InMemoryRecorder,
    JsonlRecorder,
    Runtime,
    ToolCall,
    ToolContext,
    explain,
    tool,
)
from agentactors.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.anyio


@tool(requires_approval=True)
async def refund(ctx: ToolContext, cents: int) -> str:
    """Refund, once a person said yes."""
    return f"refunded {cents}"


@tool(requires_approval=True)
async def wipe(ctx: ToolContext) -> str:
    """Wipe the account, once a person said yes."""
    return "wiped"


@tool
async def look(ctx: ToolContext, what: str) -> str:
    """Look at something."""
    return f"seen {what}"


async def _paused_and_resumed(path: Path) -> tuple[object, object, InMemoryRecorder]:
    provider = ScriptedProvider([
        [ToolCall("l1", "look", {"what": "order"})],  # step 1
        [ToolCall("r1", "refund", {"cents": 5}), ToolCall("w1", "wipe", {})],  # step 2: pauses
        "Refunded 5; the account was kept.",  # step 3
    ])
    agent = Agent(provider, tools=[refund, wipe, look], name="clerk")
    recorder = InMemoryRecorder()
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[recorder, jsonl]) as rt:
            paused = await agent.run("refund me", runtime=rt)
            resumed = await agent.resume(paused, {"r1": True, "w1": "not without a ticket"}, runtime=rt)
    assert paused.steps == 2 and resumed.steps == 3 and resumed.error is None
    return paused, resumed, recorder


def _check(explanation: Explanation, paused_id: str) -> None:
    text = str(explanation)
    assert "tried nothing" not in text and "no answer" not in text, text
    first, last = explanation.path
    assert first.step == 2 and first.resumed_from == paused_id and first.error is None
    assert first.approved == ("refund",) and first.denied == ("wipe",)
    assert first.tools == ("refund → ok", "wipe → denied")
    line = first.describe()
    assert line.startswith(f"step 2: resumed from run {paused_id}")
    assert "approved refund" in line and "denied wipe" in line and "refund → ok" in line and "wipe → denied" in line
    assert last.step == 3 and last.served_by == "scripted"
    assert explanation.resumed_from == paused_id
    assert f"resumed from run {paused_id}" in text.splitlines()[0]
    assert any(f"resumed run {paused_id} at step 2: approved refund; denied wipe" in t for t in explanation.timeline)


async def test_explain_tells_the_step_a_resumed_run_finished_live_and_from_its_record(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    paused, resumed, recorder = await _paused_and_resumed(path)
    paused_id, run_id = paused.run_id, resumed.run_id  # type: ignore[attr-defined]
    live = explain(resumed, recorder.events)  # type: ignore[arg-type]
    _check(live, paused_id)
    recorded = Explanation.from_jsonl(path, run_id)
    _check(recorded, paused_id)
    assert recorded.path == live.path and recorded.timeline == live.timeline


async def test_the_paused_run_itself_is_still_told_as_before(tmp_path: Path) -> None:
    paused, _, recorder = await _paused_and_resumed(tmp_path / "events.jsonl")
    explanation = explain(paused, recorder.events)  # type: ignore[arg-type]
    assert explanation.resumed_from is None
    assert [p.resumed_from for p in explanation.path] == [None, None]
    assert [p.served_by for p in explanation.path] == ["scripted", "scripted"]
