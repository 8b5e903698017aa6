"""``Explanation.from_jsonl`` on a record whose events hold odd values: an explanation, never a crash.

A record is data someone else wrote — a hand-edited file, another version's, a tool's own events — so a value
of the wrong kind (a response that is a string, an attempt that is not a number, a tool without a name, a
message of a role no request holds) counts as absent; a request that cannot be rebuilt is left out, and a
note says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentactors.explain import Explanation

USER = {"role": "user", "content": "hi"}


def _event(type: str, seq: int, **fields: Any) -> dict[str, Any]:
    return {"type": type, "run_id": "r", "seq": seq, "time": float(seq), **fields}


def _request(**fields: Any) -> dict[str, Any]:
    return {"messages": [USER], **fields}


ODD: dict[str, list[dict[str, Any]]] = {
    "response is a string": [_event("llm.request", 2, step=1, request=_request()),
                             _event("llm.response", 3, step=1, response="oops")],
    "response tool_calls hold a number": [_event("llm.request", 2, step=1, request=_request()),
                                          _event("llm.response", 3, step=1, response={"tool_calls": [5]})],
    "attempt is text": [_event("retry.scheduled", 2, step=1, provider="p", attempt="second", delay=1)],
    "delay is text": [_event("retry.scheduled", 2, step=1, provider="p", attempt=1, delay="soon")],
    "attempts is a list": [_event("retry.exhausted", 2, step=1, provider="p", attempts=[1])],
    "messages is a number": [_event("llm.request", 2, step=1, request={"messages": 5})],
    "tools is a string": [_event("llm.request", 2, step=1, request=_request(tools="lookup"))],
}

UNREBUILDABLE: dict[str, dict[str, Any]] = {
    "a tool without a name": _request(tools=[{"description": "d"}]),
    "a tool choice of no mode": _request(tool_choice={"mode": "__class__"}),
    "a message of no role": {"messages": [{"role": "wizard", "content": "x"}]},
}


def _write(path: Path, events: list[dict[str, Any]]) -> None:
    started = _event("run.started", 1, agent={"not": "a name"})
    finished = _event("run.finished", 99, content="the answer", served_by=["p"])
    path.write_text("".join(json.dumps(e) + "\n" for e in [started, *events, finished]))


@pytest.mark.parametrize("case", sorted(ODD))
def test_odd_values_count_as_absent(tmp_path: Path, case: str) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, ODD[case])
    explanation = Explanation.from_jsonl(path, "r")
    assert explanation.answer == "the answer"
    assert explanation.agent is None and explanation.served_by is None, "values of the wrong kind are absent"
    assert str(explanation)


@pytest.mark.parametrize("case", sorted(UNREBUILDABLE))
def test_a_request_that_cannot_be_rebuilt_is_left_out_with_a_note(tmp_path: Path, case: str) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, [_event("llm.request", 2, step=1, request=UNREBUILDABLE[case]),
                  _event("llm.response", 3, step=1, response={"content": "the answer"}, provider="p")])
    explanation = Explanation.from_jsonl(path, "r")
    assert explanation.request is None and explanation.served_by == "p"
    assert any("a recorded request could not be rebuilt" in note for note in explanation.notes)
    assert "no request produced an answer" in str(explanation)


def test_a_note_on_the_request_and_one_on_a_cut_line_are_both_kept(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, [_event("llm.request", 2, step=1, request=UNREBUILDABLE["a message of no role"]),
                  _event("llm.response", 3, step=1, response={}, provider="p")])
    with path.open("a") as f:
        f.write('{"type": "run.fin')
    notes = Explanation.from_jsonl(path, "r").notes
    assert len(notes) == 2 and "could not be rebuilt" in notes[0] and "line 5 was skipped" in notes[1]


def test_a_last_line_cut_inside_a_utf8_character_is_skipped_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, [])
    with path.open("ab") as f:
        f.write('{"type": "tools.progress", "run_id": "r", "text": "é'.encode()[:-1])
    explanation = Explanation.from_jsonl(path, "r")
    assert explanation.answer == "the answer"
    assert explanation.notes == ("line 3 was skipped: the record ends in the middle of it (a crash?)",)
