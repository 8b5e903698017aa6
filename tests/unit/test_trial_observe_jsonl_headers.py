"""A trial of reading a damaged JSONL record: a header field of the wrong kind is a typed error, never dropped.

``read_jsonl`` skips lines that are no event records (blank lines, a summary line without a ``type``).  A line
that names a ``type`` of the wrong kind is a damaged event: read as nothing, it vanished from the explanation
without a word.  A ``step`` or ``parent_run_id`` of another kind is an older record's payload key of that name
(before such keys were prefixed): read back into the payload, never lost.
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


def test_an_older_records_payload_step_or_parent_is_read_back_into_the_payload(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(
        _line(type="run.started", seq=1)
        + _line(type="tools.progress", seq=2, step="downloading")  # ctx.emit(..., step="downloading"), written old
        + _line(type="x.y", seq=3, step=True, parent_run_id=["p"])
    )
    _, progress, odd = read_jsonl(path)
    assert (progress.step, progress.data["step"]) == (None, "downloading")
    assert (odd.step, odd.parent_run_id, odd.data["step"], odd.data["parent_run_id"]) == (None, None, True, ["p"])
    event = event_from_dict({"type": "step.started", "step": 3, "parent_run_id": "p"})
    assert (event.step, event.parent_run_id) == (3, "p")
    assert event_from_dict({"type": "run.started", "step": None}).step is None
