"""A ``JsonlRecorder`` opened again on a file whose last line a crash cut off mid-write (a restart).

The new recorder appended its first record onto the cut line, and ``read_jsonl`` tolerated a cut line only as
the file's last: every run in the file — the one before the crash and the one after — was unreadable
(``EventRecordError`` from ``read_jsonl``, ``read_run`` and ``Explanation.from_jsonl``), and the first record
after the restart was lost in the glued line.  Now the recorder starts on a fresh line, after a marker line
(no ``type``: every reader skips it) saying the line before it was cut; the reader skips a cut line that such a
marker follows, with the same note as a cut last line.  A bad line that no restart explains is still an error.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from agentactors import Agent, LLMResponse, Runtime, ScriptedProvider, StopReason, ToolCall, Usage, tool
from agentactors.events import Event, EventRecordError, JsonlRecorder, read_jsonl
from agentactors.explain import Explanation
from agentactors.journal.jsonl import read_run


def _event(n: int, run: str = "r") -> Event:
    return Event("tools.progress", run, n, 0.0, None, {"note": "é" * 30}, None)


def _crash(path: Path, cut: int = 40) -> None:
    """The writer killed mid-line: the file's last ``cut`` bytes never reached the disk."""
    path.write_bytes(path.read_bytes()[:-cut])


def test_a_recorder_opened_on_a_cut_file_starts_on_a_fresh_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    with JsonlRecorder(path) as recorder:
        for n in (1, 2, 3):
            recorder.record(_event(n))
    _crash(path)
    with JsonlRecorder(path) as recorder:
        recorder.record(_event(4, "r2"))
    skipped: list[str] = []
    events = list(read_jsonl(path, skipped=skipped))
    assert [(e.run_id, e.seq) for e in events] == [("r", 1), ("r", 2), ("r2", 4)], "the record after it is whole"
    assert skipped == ["line 3 was skipped: the record ends in the middle of it (a crash?)"]
    lines = path.read_bytes().split(b"\n")
    assert "type" not in json.loads(lines[3]), "the marker line is no event: older readers skip it"


def test_a_cut_line_the_restart_marked_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "runs.jsonl"
    with JsonlRecorder(path) as recorder:
        recorder.record(_event(1))
        recorder.record(_event(2))
    _crash(path)
    JsonlRecorder(path).close()  # a restart that records nothing still marks the cut line
    with JsonlRecorder(path) as recorder:
        recorder.record(_event(3))
    with caplog.at_level(logging.WARNING, logger="agentactors.events"):
        assert [e.seq for e in read_jsonl(path)] == [1, 3]
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}, line 2 was skipped: the record ends in the middle of it (a crash?)"
    ]


def test_a_file_that_ends_whole_gets_no_marker(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    for n in (1, 2):
        with JsonlRecorder(path) as recorder:
            recorder.record(_event(n))
    path.write_bytes(path.read_bytes()[:-1])  # cut just before the newline: the line itself is whole
    with JsonlRecorder(path) as recorder:
        recorder.record(_event(3))
    skipped: list[str] = []
    assert [e.seq for e in read_jsonl(path, skipped=skipped)] == [1, 2, 3]
    assert skipped == []


def test_a_cut_file_rotated_in_under_the_recorder_is_marked_too(tmp_path: Path) -> None:
    path, other = tmp_path / "runs.jsonl", tmp_path / "other.jsonl"
    with JsonlRecorder(other) as recorder:
        recorder.record(_event(1))
        recorder.record(_event(2))
    _crash(other)
    with JsonlRecorder(path) as recorder:
        recorder.record(_event(9))
        recorder.flush()
        other.replace(path)  # another writer's cut file now at the path: the recorder follows it
        recorder.record(_event(3))
    assert [e.seq for e in read_jsonl(path, skipped=[])] == [1, 3]


def test_a_bad_line_no_restart_explains_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    with JsonlRecorder(path) as recorder:
        recorder.record(_event(1))
        recorder.record(_event(2))
    _crash(path)
    with JsonlRecorder(path) as recorder:  # line 3: the restart's marker
        recorder.record(_event(3))
    with path.open("ab") as file:  # then a bad line in the middle, after a good one: no restart explains it
        file.write(b"{not json\n" + json.dumps({"type": "x", "run_id": "r", "seq": 5}).encode() + b"\n")
    seen: list[int] = []
    with pytest.raises(EventRecordError, match="line 5: not a JSON event record") as info:
        for event in read_jsonl(path, skipped=[]):
            seen.append(event.seq)
    assert seen == [1, 3] and info.value.line == 5


@tool
async def lookup(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 21 C"


def _agent() -> Agent:
    provider = ScriptedProvider(
        [
            LLMResponse("", (ToolCall("c1", "lookup", {"city": "Lisbon"}),), StopReason.tool_use, Usage(10, 5)),
            LLMResponse("done", (), StopReason.end_turn, Usage(30, 12)),
        ],
        name="p",
        model="m",
    )
    return Agent(provider, tools=[lookup], name="w")


@pytest.mark.anyio
async def test_both_runs_read_back_after_a_crash_and_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    with JsonlRecorder(path) as recorder:
        async with Runtime(recorders=[recorder]):
            first = await _agent().run("weather?")
    _crash(path)
    with JsonlRecorder(path) as recorder:
        async with Runtime(recorders=[recorder]):
            second = await _agent().run("weather?")
    for result in (first, second):
        assert result.run_id is not None
        run = read_run(path, result.run_id)
        assert run.status == "finished" and run.content == "done" and len(run.steps) == 2
        explanation = Explanation.from_jsonl(path, result.run_id)
        assert explanation.run_id == result.run_id and explanation.steps == 2
        assert any("was skipped: the record ends in the middle of it" in note for note in explanation.notes)
