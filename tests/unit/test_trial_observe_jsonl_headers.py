"""A trial of reading a damaged JSONL record: a header field of the wrong kind is a typed error, never dropped.

``read_jsonl`` skips lines that are no event records (blank lines, a summary line without a ``type``).  A line
that names a ``type`` of the wrong kind, or whose ``step`` or ``parent_run_id`` is of the wrong kind, is a damaged
event: read as nothing (or as an event of no step, of no parent), it vanished from the explanation without a word.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentactors.events import EventRecordError, event_from_dict, read_jsonl


def _line(**fields: Any) -> bytes:
    return json.dumps({"run_id": "r", "time": 0.0, **fields}).encode() + b"\n"


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (_line(type=7, seq=2), "'type'"),
        (_line(type=["run.finished"], seq=2), "'type'"),
        (_line(type="step.started", seq=2, step="two"), "'step' is an integer"),
        (_line(type="step.started", seq=2, step=True), "'step' is an integer"),
        (_line(type="step.started", seq=2, step=1.5), "'step' is an integer"),
        (_line(type="run.started", seq=2, parent_run_id=12), "'parent_run_id' is a string"),
    ],
)
def test_a_header_of_the_wrong_kind_is_a_typed_error_naming_its_line(tmp_path: Path, bad: bytes, match: str) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(_line(type="run.started", seq=1) + bad + _line(type="run.finished", seq=3))
    with pytest.raises(EventRecordError, match=match) as info:
        list(read_jsonl(path))
    assert info.value.line == 2


def test_lines_that_are_no_event_records_are_still_skipped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    summary = json.dumps({"summary": "3 runs"}).encode() + b"\n"
    untyped = json.dumps({"type": None, "note": "no type"}).encode() + b"\n"
    path.write_bytes(_line(type="run.started", seq=1) + summary + untyped + b"[1, 2]\n" + _line(type="x.y", seq=2))
    assert [e.seq for e in read_jsonl(path)] == [1, 2]


def test_event_from_dict_refuses_a_step_or_parent_of_the_wrong_kind() -> None:
    with pytest.raises(ValueError, match="'step' is an integer"):
        event_from_dict({"type": "step.started", "step": "1"})
    with pytest.raises(ValueError, match="'parent_run_id' is a string"):
        event_from_dict({"type": "run.started", "parent_run_id": ["p"]})
    event = event_from_dict({"type": "step.started", "step": 3, "parent_run_id": "p"})
    assert (event.step, event.parent_run_id) == (3, "p")
    assert event_from_dict({"type": "run.started", "step": None}).step is None
