from __future__ import annotations

import json
import logging
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from agentactors import Event, InMemoryRecorder, JsonlRecorder, Message, ProviderError
from agentactors.events import EventSink, FanOut, current_sink, emit, use_sink
from agentactors.messages import ToolCall, Usage

pytestmark = pytest.mark.anyio


class Exploding:
    def __init__(self) -> None:
        self.calls = 0

    def record(self, event: Event) -> None:
        self.calls += 1
        raise RuntimeError("recorder down")


async def test_events_carry_run_id_seq_time_step() -> None:
    rec = InMemoryRecorder()
    sink = EventSink([rec], run_id="run-1")
    with use_sink(sink):
        emit("run.started", prompt="hi")
        sink.step = 1
        emit("step.started")
    assert [e.type for e in rec.events] == ["run.started", "step.started"]
    assert [e.seq for e in rec.events] == [1, 2]
    assert all(e.run_id == "run-1" for e in rec.events)
    assert rec.events[0].step is None and rec.events[1].step == 1
    assert rec.events[0].prompt == "hi" and rec.events[0].time == pytest.approx(anyio.current_time(), abs=5)
    with pytest.raises(AttributeError):
        _ = rec.events[0].missing


async def test_raising_recorder_does_not_break_emission(caplog: pytest.LogCaptureFixture) -> None:
    bad, good = Exploding(), InMemoryRecorder()
    sink = EventSink([bad, good], run_id="r")
    with caplog.at_level(logging.WARNING, logger="agentactors.events"), use_sink(sink):
        for i in range(3):
            emit("tick", i=i)
    assert [e.i for e in good.events] == [0, 1, 2]
    assert bad.calls == 3
    assert len([r for r in caplog.records if "recorder" in r.getMessage()]) == 1  # logged once


async def test_no_sink_means_no_work() -> None:
    assert current_sink() is None
    emit("nobody.listens", x=1)  # no error, nothing recorded
    empty = EventSink([], run_id="r")
    assert not empty and empty.emit("x") is None


async def test_sink_travels_into_child_tasks() -> None:
    rec = InMemoryRecorder()
    with use_sink(EventSink([rec], run_id="r2")):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _emit_later("child"))
    assert [e.type for e in rec.events] == ["child"]


async def _emit_later(name: str) -> None:
    await anyio.lowlevel.checkpoint()
    emit(name)


def test_jsonl_recorder_writes_one_object_per_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with JsonlRecorder(path) as rec:
        sink = EventSink(FanOut([rec]), run_id="r")
        sink.emit("llm.request", message=Message.user("hi"))
        sink.emit("retry.scheduled", error=ProviderError("boom", provider="p", kind="transient"), delay=0.5)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["type"] for x in lines] == ["llm.request", "retry.scheduled"]
    assert lines[0]["message"]["content"] == "hi"
    assert lines[1]["error"]["kind"] == "transient" and lines[1]["delay"] == 0.5


# --- what the loop's run events carry (agentactors._event_payloads) -------------------------------------------


def test_run_started_names_lineage_and_resumption_only_when_they_apply() -> None:
    from agentactors import _event_payloads as payloads
    from agentactors.loop.pause import PausedRun

    plain = payloads.run_started("a", 2, True, {"model": "m"})
    assert plain == {"agent": "a", "messages": 2, "native_tools": True, "model": "m"}
    call = ToolCall("c1", "lookup", {})
    paused = PausedRun(None, (), (call,), (), (call,), {"c1": "why"}, step=1, usage=Usage(), tool_calls=(call,),
                       answer="", agent=None, handoffs=())
    child = payloads.run_started("a", 1, False, {}, parent=(3, None, 2), resume_of=paused)
    # A paused run without an id is still named: resumed_from is there, None.
    assert child == {
        "agent": "a", "messages": 1, "native_tools": False, "parent_step": 3, "parent_call_id": None, "depth": 2,
        "resumed_from": None,
    }
    assert payloads.run_resumed(paused, {"c1": True, "c2": "no", "c3": False}) == {
        "from_run_id": None, "step": 1, "approved": ["c1"], "denied": ["c2", "c3"],
    }


def test_run_finished_says_paused_and_handoffs_only_when_they_apply() -> None:
    from agentactors import _event_payloads as payloads
    from agentactors.loop.result import RunResult

    plain = payloads.run_finished(RunResult("hi", (Message.user("q"),), steps=1, served_by="p"))
    assert list(plain) == [
        "content", "steps", "bounded", "generation_failed", "error", "served_by", "usage", "cost", "tool_calls",
    ]
    assert (plain["content"], plain["steps"], plain["served_by"], plain["tool_calls"]) == ("hi", 1, "p", 0)
    handed = payloads.run_finished(RunResult("hi", (), agent="b", handoffs=("b",)))
    assert (handed["handoffs"], handed["final_agent"]) == (("b",), "b") and "paused" not in handed
