"""Reading a long run from its events (a fork's original for ``explain``/``compare_fork``) costs what the run holds.

Each ``llm.request`` event of a recorder's holds the step's whole request; read back as JSON and decoded every
time, a run of N steps read N²/2 messages.  Counted: the messages decoded and the requests turned into JSON.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ToolCall, tool
from agentactors.events import to_jsonable
from agentactors.journal import jsonl
from agentactors.journal.codec import message_from_event
from agentactors.journal.jsonl import run_from_events
from agentactors.messages import LLMRequest
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.results import ToolStatus

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

STEPS = 150


@tool
async def lookup(n: int) -> str:
    """Look it up."""
    return f"page {n}"


def _model(steps: int, calls: int) -> Any:
    state = {"step": 0}

    def answer(request: LLMRequest) -> Any:
        step = state["step"]
        state["step"] += 1
        if step < steps:
            return [ToolCall(f"c{step}-{k}", "lookup", {"n": step * 10 + k}) for k in range(calls)]
        return "done"

    return answer


@pytest.mark.parametrize("calls", [1, 3])
async def test_a_long_runs_events_are_read_decoding_each_message_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch, calls: int
) -> None:
    recorder = InMemoryRecorder()
    agent = Agent(ScriptedProvider(_model(STEPS, calls)), tools=[lookup], max_steps=STEPS + 5, recorders=[recorder])
    async with Runtime() as rt:
        result = await agent.run("go", runtime=rt)
    decoded, requests = [0], [0]

    def decode(doc: Any) -> Any:
        decoded[0] += 1
        return message_from_event(doc)

    def jsonable(value: Any) -> Any:
        requests[0] += isinstance(value, LLMRequest)
        return to_jsonable(value)

    monkeypatch.setattr(jsonl, "message_from_event", decode)
    monkeypatch.setattr(jsonl, "to_jsonable", jsonable)
    assert result.run_id is not None
    run = run_from_events(recorder.events, result.run_id)
    # What the run told, whole: every tool step's results, each from the request that followed it (in the order
    # its calls finished).
    assert len(run.steps) == STEPS + 1
    for n, step in enumerate(run.steps[:-1]):
        assert step.results is not None
        assert sorted((r.call_id, r.status, r.content) for r in step.results) == [
            (f"c{n}-{k}", ToolStatus.ok, f"page {n * 10 + k}") for k in range(calls)
        ]
    assert run.steps[-1].results is None and run.content == "done"
    assert [m.content for m in run.inputs] == ["go"]
    # Linear: the first request decoded (its input), not every request's whole conversation (~STEPS² messages).
    assert requests[0] <= 1
    assert decoded[0] <= 10, decoded[0]
