"""``explain()`` says how a run ended: an answer, cancelled, its deadline passed, paused, raised.

It never did: a run cancelled mid-tool, one stopped by its deadline and one that raised all read like a run
still going (an empty answer, no line on the timeline).  Now :attr:`Explanation.status` and
:attr:`Explanation.error` (the error's type, HTTP status and kind: no message text) come from ``run.finished``,
and the timeline has a line for a cancellation, a deadline passed, a pause and a raise.  Live events and a
JSONL record alike, both backends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    Explanation,
    InMemoryRecorder,
    JsonlRecorder,
    LLMRequest,
    LLMResponse,
    Runtime,
    StopReason,
    ToolCall,
    ToolStatus,
    Usage,
    explain,
    tool,
)
from agentactors.providers.scripted import ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool
async def slow(x: str) -> str:
    """Takes its time."""
    await anyio.sleep(100)
    return "never"


@tool
async def broken(x: str) -> str:
    """Fails."""
    raise RuntimeError("the disk at /secret/place is gone")


@tool(requires_approval=True)
async def refund(cents: int) -> str:
    """Refund, once a person said yes."""
    return f"refunded {cents}"


def _calling(name: str, args: dict[str, Any]) -> ScriptedProvider:
    def answer(request: LLMRequest) -> LLMResponse:
        if request.messages[-1].role == "tool":
            return LLMResponse("fin", (), StopReason.end_turn, Usage(1, 1))
        return LLMResponse("", (ToolCall("c1", name, args),), StopReason.tool_use, Usage(1, 1))

    return ScriptedProvider(answer, name="p", model="m")


def _run_id(recorder: InMemoryRecorder) -> str:
    (run_id,) = {e.run_id for e in recorder.events if e.type == "run.started"}
    assert run_id is not None
    return run_id


async def test_a_run_that_answered_ended_ok(tmp_path: Path) -> None:
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]):
        result = await Agent(_calling("slow", {"x": "a"}), tools=[slow], name="w").run("hi", deadline=1000)
    explanation = explain(result, recorder.events)
    assert explanation.status == "ok" and explanation.error is None
    assert not any("the run ended" in line or "cancelled" in line for line in explanation.timeline)
    assert "  ended: ok" in explanation.lines()


async def test_a_cancelled_run_says_so(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    recorder = InMemoryRecorder()
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[recorder, jsonl]):
            with anyio.move_on_after(0.3):
                await Agent(_calling("slow", {"x": "a"}), tools=[slow], name="w").run("cancel me")
    explanation = Explanation.from_jsonl(path, _run_id(recorder))
    assert explanation.status == "cancelled" and explanation.error is None
    assert explanation.timeline[-1] == "+ 0.300s       : the run was cancelled"
    assert "  ended: cancelled" in explanation.lines()


async def test_a_run_past_its_deadline_says_so(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    recorder = InMemoryRecorder()
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[recorder, jsonl]):
            result = await Agent(_calling("slow", {"x": "a"}), tools=[slow], name="w").run("deadline me", deadline=0.3)
    assert result.error is not None
    for explanation in (explain(result, recorder.events), Explanation.from_jsonl(path, _run_id(recorder))):
        assert explanation.status == "failed" and explanation.error == "RunDeadlineExceededError"
        assert any(line.endswith(": the run passed its deadline of 0.30s") for line in explanation.timeline)
        assert explanation.timeline[-1].endswith(": the run ended failed (RunDeadlineExceededError)")
        assert "  ended: failed (RunDeadlineExceededError)" in explanation.lines()


async def test_a_paused_run_says_what_it_waits_for(tmp_path: Path) -> None:
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]):
        result = await Agent(_calling("refund", {"cents": 5}), tools=[refund], name="w").run("refund me")
    assert result.paused
    explanation = explain(result, recorder.events)
    assert explanation.status == "paused" and explanation.error is None
    assert any(line.endswith(": paused: refund awaits a person's decision") for line in explanation.timeline)
    assert explanation.timeline[-1].endswith(": the run ended paused")


async def test_a_run_that_raised_names_the_error_without_its_text(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    recorder = InMemoryRecorder()
    agent = Agent(_calling("broken", {"x": "a"}), tools=[broken], name="w", on_tool_status={ToolStatus.error: "raise"})
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[recorder, jsonl]):
            with pytest.raises(Exception) as info:
                await agent.run("break")
    explanation = Explanation.from_jsonl(path, _run_id(recorder))
    assert type(info.value).__name__ == "ToolStatusError"
    assert explanation.status == "raised" and explanation.error == "ToolStatusError status error"
    assert explanation.timeline[-1].endswith(": the run raised ToolStatusError status error")
    assert "/secret/place" not in str(explanation)


async def test_a_record_cut_before_the_run_ended_has_no_status(tmp_path: Path) -> None:
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]):
        result = await Agent(_calling("slow", {"x": "a"}), tools=[slow], name="w").run("hi", deadline=1000)
    events = [e for e in recorder.events if e.type != "run.finished"]
    explanation = explain(result, events)
    assert explanation.status == "ok", "the result says how it ended"
    path = tmp_path / "runs.jsonl"
    with JsonlRecorder(path) as jsonl:
        for event in events:
            jsonl.record(event)
    recorded = Explanation.from_jsonl(path, _run_id(recorder))
    assert recorded.status is None and "  ended: not recorded" in recorded.lines()
