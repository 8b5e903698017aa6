"""``read_jsonl`` on a damaged record: a typed error naming the line, or the documented skip — never a crash.

``read_jsonl`` is what a replay, a fork and ``read_run`` load a JSONL record with, so it reads as
``Explanation.from_jsonl`` does: a last line cut off mid-write (the writer was killed) is skipped with a
warning; any other line that is not JSON, not UTF-8, past the JSON policy's limits, or an event whose header
is of the wrong kind is an :class:`~agentactors.events.EventRecordError` that names it — raised after every
event before it was yielded.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from agentactors.errors import AgentActorsError
from agentactors.events import EventRecordError, ToolEvent, read_jsonl
from agentactors.explain import EventRecordError as ExplainsEventRecordError


def _line(**fields: Any) -> bytes:
    return json.dumps({"run_id": "r", "time": 0.0, **fields}).encode() + b"\n"


GOOD = _line(type="run.started", seq=1, agent="a") + _line(type="tools.progress", seq=2, done=1)


def test_a_last_line_cut_mid_write_is_skipped_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(GOOD + _line(type="run.finished", seq=3)[:25])
    with caplog.at_level(logging.WARNING, logger="agentactors.events"):
        events = list(read_jsonl(path))
    assert [e.seq for e in events] == [1, 2]
    assert any("line 3 was skipped" in r.getMessage() for r in caplog.records)


def test_a_last_line_cut_inside_a_utf8_character_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(GOOD + '{"type": "tools.progress", "text": "é'.encode()[:-1])
    assert [e.seq for e in read_jsonl(path)] == [1, 2]


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (b"{not json\n", "line 2: not a JSON event record"),
        (b'{"type": "x", "text": "\xff\xfe"}\n', "line 2: not a JSON event record"),
        (b'{"type": "x", "v": ' + b"[" * 3000 + b"]" * 3000 + b"}\n", "line 2: the line nests deeper than"),
        (_line(type="x", seq="abc"), "line 2: not an event record .*'seq' is an integer"),
        (_line(type="x", seq=[1]), "line 2: not an event record .*'seq' is an integer"),
        (_line(type="x", time="noon"), "line 2: not an event record .*'time' is a number"),
        (json.dumps({"type": "x", "run_id": 7}).encode() + b"\n", "line 2: not an event record .*'run_id'"),
    ],
)
def test_a_bad_line_before_the_end_is_a_typed_error_naming_it(tmp_path: Path, bad: bytes, match: str) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(GOOD[: GOOD.index(b"\n") + 1] + bad + _line(type="run.finished", seq=3))
    seen: list[int] = []
    with pytest.raises(EventRecordError, match=match) as info:
        for event in read_jsonl(path):
            seen.append(event.seq)
    assert seen == [1], "the valid lines before it were read"
    assert info.value.line == 2 and info.value.path == str(path)
    assert isinstance(info.value, ValueError) and isinstance(info.value, AgentActorsError)


def test_explain_and_read_jsonl_raise_the_same_error() -> None:
    assert ExplainsEventRecordError is EventRecordError


def test_an_unknown_type_reads_back_as_its_family(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(_line(type="tools.made_up_later", seq=1, x=1) + _line(type="nobody.knows", seq=2))
    first, second = read_jsonl(path)
    assert isinstance(first, ToolEvent) and first.data == {"x": 1}
    assert second.type == "nobody.knows"


def test_a_nan_time_written_by_the_recorder_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(_line(type="x", seq=1).replace(b'"time": 0.0', b'"time": "nan"'))
    (event,) = read_jsonl(path)
    assert event.time != event.time
