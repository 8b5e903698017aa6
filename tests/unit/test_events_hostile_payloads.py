"""A JSONL record takes any payload: every event becomes one line its readers take back, and the run goes on.

An event's payload is whatever its emitter put in it — a tool's own ``ctx.emit("tools.progress", ...)`` may
carry a structure that holds itself, a value nested a thousand levels deep, text decoded with
``surrogateescape``, a NaN, an object whose ``repr`` raises.  None of them may fail the run, lose the event
(a recorder that raises is skipped for that event) or leave a line ``read_jsonl`` / ``Explanation.from_jsonl``
refuse.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anyio
import pytest

import agentactors.events
from agentactors import Agent, Runtime, ScriptedProvider
from agentactors._json import MAX_DOCUMENT_DEPTH
from agentactors.events import EventSink, JsonlRecorder, read_jsonl, to_jsonable
from agentactors.explain import Explanation
from agentactors.messages import ToolCall
from agentactors.tools import ToolContext, tool

pytestmark = pytest.mark.anyio


class _ReprRaises:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class _StrRaises(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")


def _recursive() -> dict[str, Any]:
    loop: dict[str, Any] = {"name": "loop"}
    loop["self"] = loop
    return loop


def _deep(levels: int) -> list[Any]:
    top: list[Any] = []
    cur = top
    for _ in range(levels):
        nxt: list[Any] = []
        cur.append(nxt)
        cur = nxt
    return top


HOSTILE: dict[str, Any] = {
    "recursive": _recursive(),
    "deep": _deep(5000),
    "lone_surrogate": "caf\udce9",  # bytes decoded with surrogateescape
    "surrogate_key": {"\udcff": 1},
    "nan": math.nan,
    "infinity": -math.inf,
    "repr_raises": _ReprRaises(),
    "str_raises": _StrRaises(),
    "huge_int": 10**5000,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_payload_is_one_line_read_back(tmp_path: Path, name: str) -> None:
    path = tmp_path / "events.jsonl"
    with JsonlRecorder(path) as jsonl:
        jsonl.record(agentactors.events.make_event("tools.progress", "r", 1, 0.5, 1, {"value": HOSTILE[name]}))
    raw = path.read_bytes()
    assert raw.count(b"\n") == 1, "exactly one line"
    text = raw.decode("utf-8")  # strict: the file is UTF-8 throughout
    json.loads(text, parse_constant=_refuse)  # strict JSON: no NaN / Infinity spelled the Python way
    (event,) = read_jsonl(path)
    assert (event.type, event.run_id, event.seq, event.step) == ("tools.progress", "r", 1, 1)
    assert "value" in event.data
    explanation = Explanation.from_jsonl(path, "r")
    assert explanation.notes == (), "the line is whole: nothing was skipped"


def _refuse(constant: str) -> Any:
    raise AssertionError(f"{constant} is not JSON")


def test_what_the_record_keeps_of_hostile_values(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with JsonlRecorder(path) as jsonl:
        EventSink([jsonl], run_id="r").emit("tools.progress", **HOSTILE)
    (event,) = read_jsonl(path)
    assert event.data["recursive"] == {"name": "loop", "self": "<recursive>"}
    assert event.data["lone_surrogate"] == "caf\udce9", "escaped in the file, the same text read back"
    assert event.data["surrogate_key"] == {"\udcff": 1}
    assert (event.data["nan"], event.data["infinity"]) == ("nan", "-inf")
    assert "its repr could not be read" in event.data["repr_raises"]
    assert event.data["str_raises"] == {"error": "_StrRaises", "message": "(its message could not be read)"}
    assert "4300 digits" in event.data["huge_int"]
    deep = event.data["deep"]
    depth = 0
    while isinstance(deep, list):
        deep, depth = deep[0], depth + 1
    assert deep == "<nested too deep>" and depth == MAX_DOCUMENT_DEPTH - 1


def test_to_jsonable_is_total_and_keeps_the_values_it_can() -> None:
    shared = [1, 2]
    assert to_jsonable({"a": shared, "b": shared}) == {"a": [1, 2], "b": [1, 2]}, "shared is not recursive"
    assert to_jsonable(_recursive())["self"] == "<recursive>"
    assert math.isnan(to_jsonable(math.nan)), "a float stays a float; only the record line spells NaN"


def test_a_line_longer_than_a_record_line_may_be_keeps_its_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real bound (64 Mi bytes, what the readers accept) made small: the same code path, without 64 MB.
    monkeypatch.setattr(agentactors.events, "MAX_TEXT_CHARS", 4000)
    path = tmp_path / "events.jsonl"
    with JsonlRecorder(path) as jsonl:
        sink = EventSink([jsonl], run_id="r")
        sink.emit("tools.progress", text="é" * 3000)  # 3000 characters, 6000 UTF-8 bytes
        sink.emit("tools.progress", text="small")
    first, second = path.read_bytes().splitlines()
    assert len(first) <= 4000
    kept = json.loads(first)
    assert (kept["type"], kept["run_id"], kept["seq"]) == ("tools.progress", "r", 1)
    assert "longer than a record line may be" in kept["omitted"] and "text" not in kept
    assert json.loads(second)["text"] == "small"


@tool
async def noisy(ctx: ToolContext) -> str:
    """Reports progress with payloads JSON has no form for."""
    for name, value in HOSTILE.items():
        ctx.emit("tools.progress", **{name: value})
    return "done"


async def test_a_run_whose_tool_emits_hostile_payloads_is_recorded_whole(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    agent = Agent(ScriptedProvider([[ToolCall("c1", "noisy", {})], "finished"]), tools=[noisy])
    with anyio.fail_after(10):
        with JsonlRecorder(path) as jsonl:
            async with Runtime(recorders=[jsonl]):
                result = await agent.run("go")
    assert result.content == "finished"
    assert result.run_id is not None
    progress = [e for e in read_jsonl(path, run_id=result.run_id) if e.type == "tools.progress"]
    assert len(progress) == len(HOSTILE), "no event lost"
    assert [next(iter(k for k in e.data if k in HOSTILE)) for e in progress] == list(HOSTILE)
    explanation = Explanation.from_jsonl(path, result.run_id)
    assert explanation.answer == "finished" and explanation.notes == ()



@pytest.mark.parametrize("own_step", [None, 4])
def test_a_payload_key_named_as_a_header_field_reads_back_as_the_payload_had_it(own_step: int | None) -> None:
    """``run.resumed`` carries the paused run's ``step``: in a flat JSONL record it was lost beside the event's own
    step, or — the event having none — read back as the event's step, the payload without it."""
    from agentactors.events import event_from_dict, event_to_dict, make_event

    event = make_event("run.resumed", "run-2", 7, 1.5, own_step, {"from_run_id": "run-1", "step": 2, "time": "t"})
    back = event_from_dict(json.loads(json.dumps(event_to_dict(event))))
    assert back.step == own_step and back.run_id == "run-2" and back.seq == 7 and back.time == 1.5
    assert back.data == {"from_run_id": "run-1", "step": 2, "time": "t"}
