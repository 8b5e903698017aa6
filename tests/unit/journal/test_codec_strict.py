"""A stored step of the wrong shape is the run's :class:`JournalFormatError`, never an answer made of defaults.

The journal's codec filled what a stored response lacked with defaults: ``{"role": "user"}`` (a message where a
response belongs) loaded as ``LLMResponse(content='', stop_reason=end_turn)``, and the run replayed to an empty
answer, ``ok=False`` and no error; ``"tool_calls": {}`` read as no call.  A JSONL record's decoders did the same
(``doc.get("content") or ""``, ``bool("false")``).  Each shape here loaded before; now it names the run — on a
SQLite journal, a real PostgreSQL journal and a JSONL record — while a sound run beside it still loads, and what
every version wrote (the oldest step documents, a ``null`` content a custom provider's ``None`` became, keys of a
later version) still loads.  Real files, servers and threads: the real clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, JsonlRecorder, Runtime, ToolCall, replay, tool
from agentactors.journal import JournalFormatError
from agentactors.journal.codec import message_from_event, response_from_event, response_from_json
from agentactors.journal.jsonl import read_run
from agentactors.messages import LLMResponse, StopReason, Usage
from agentactors.providers.scripted import ScriptedProvider
from tests.support.journals import sql
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

from .crashing import open_journal

pytestmark = pytest.mark.anyio


@tool
async def look(what: str) -> str:
    """Look at something."""
    return f"seen {what}"


def _agent() -> Agent[Any]:
    return Agent(ScriptedProvider([[ToolCall("l1", "look", {"what": "order"})], "Looked."]), tools=[look], name="eye")


#: A step's stored response, damaged: each loaded as an answer before (the first ones as an empty one).
DAMAGED_STEPS: dict[str, str] = {
    "a message where the response belongs": '{"role": "user"}',
    "an empty object": "{}",
    "no stop reason": '{"content": "x"}',
    "no content": '{"stop_reason": "end_turn"}',
    "tool calls an object": '{"content": "", "stop_reason": "tool_use", "tool_calls": {}}',
    "tool calls a string": '{"content": "", "stop_reason": "tool_use", "tool_calls": "l1"}',
    "a tool call not an object": '{"content": "", "stop_reason": "tool_use", "tool_calls": [5]}',
    "a stop reason unknown": '{"content": "x", "stop_reason": "nope"}',
    "a stop reason a list": '{"content": 5, "stop_reason": ["x"], "tool_calls": {}}',
    "content a number": '{"content": 5, "stop_reason": "end_turn"}',
    "reasoning a number": '{"content": "x", "stop_reason": "end_turn", "reasoning": 1}',
    "model a number": '{"content": "x", "stop_reason": "end_turn", "model": 4}',
    "usage a list": '{"content": "x", "stop_reason": "end_turn", "usage": [1]}',
    "usage of unknown counts": '{"content": "x", "stop_reason": "end_turn", "usage": {"tokens": 1}}',
    "provider data a list of pairs": '{"content": "x", "stop_reason": "end_turn", "provider_data": [["a", 1]]}',
    "steers an object": '{"content": "x", "stop_reason": "end_turn", "steers": {}}',
    "not an object": "[]",
    "null": "null",
}


async def _two_runs(db: str) -> tuple[str, str]:
    """Two runs of the same agent journaled in ``db`` (a tool step, then the answer): their ids."""
    async with open_journal(db) as journal, Runtime(journal=journal):
        victim = await _agent().run("look")
        good = await _agent().run("look again")
    assert victim.content == good.content == "Looked."
    return victim.run_id or "", good.run_id or ""


@pytest.mark.parametrize("case", sorted(DAMAGED_STEPS))
async def test_a_step_of_the_wrong_shape_is_the_runs_format_error(db: str, case: str) -> None:
    victim, good = await _two_runs(db)
    for step in (1, 2):  # the tool step (its results were served by its calls' ids) and the answer
        sql(db, "UPDATE agentactors_steps SET response = ? WHERE run_id = ? AND step = ?", DAMAGED_STEPS[case],
            victim, step)
    with anyio.fail_after(30):
        async with open_journal(db) as journal:
            with pytest.raises(JournalFormatError, match=f"run {victim!r}'s stored response") as raised:
                await journal.load_run(victim)
            assert "it was left as it is" in str(raised.value)
            with pytest.raises(JournalFormatError, match=repr(victim)):
                await replay(journal, victim)
            recorded = await journal.load_run(good)  # the run beside it: as it was
            assert recorded.steps[-1].response.content == "Looked."
            assert (await replay(journal, good)).content == "Looked."


#: What a version of the library wrote that this one must go on reading: (the stored document, what it reads as).
WRITTEN: dict[str, tuple[str, LLMResponse]] = {
    # the oldest: the defaults left out (no usage, no calls), as every version wrote them
    "the fields at their defaults left out": (
        '{"content": "Looked.", "stop_reason": "end_turn"}', LLMResponse("Looked.")
    ),
    # a custom provider's content=None, let through before the value types were checked
    "a null content": ('{"content": null, "stop_reason": "end_turn"}', LLMResponse("")),
    # a later version's key, and the step's own ones
    "keys this version does not know": (
        '{"content": "Looked.", "stop_reason": "end_turn", "cited": [1], "steers": [], "steers_after": [],'
        ' "ended": {"how": "sideways"}}',
        LLMResponse("Looked."),
    ),
    # an older version's usage: counts written as strings of digits, a NaN kept as a string
    "an older usage": (
        '{"content": "Looked.", "stop_reason": "max_tokens", "usage": {"input_tokens": "12", "output_tokens": "NaN"}}',
        LLMResponse("Looked.", stop_reason=StopReason.max_tokens, usage=Usage(12, 0)),
    ),
}


@pytest.mark.parametrize("case", sorted(WRITTEN))
async def test_what_a_version_wrote_still_loads(db: str, case: str) -> None:
    victim, _ = await _two_runs(db)
    stored, expected = WRITTEN[case]
    sql(db, "UPDATE agentactors_steps SET response = ? WHERE run_id = ? AND step = 2", stored, victim)
    async with open_journal(db) as journal:
        recorded = await journal.load_run(victim)
    assert recorded.steps[1].response == expected


# --- a JSONL record ---------------------------------------------------------------------------------------------


async def _recorded(path: Path) -> tuple[str, str]:
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[jsonl]):
            victim = await _agent().run("look")
            good = await _agent().run("look again")
    return victim.run_id or "", good.run_id or ""


def _edit(path: Path, run_id: str, kind: str, edit: Any) -> None:
    """``edit(event)`` applied to the first ``kind`` event of ``run_id`` in the record at ``path``."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        event = json.loads(line)
        if event.get("type") == kind and event.get("run_id") == run_id:
            edit(event)
            lines[i] = json.dumps(event)
            break
    else:
        raise AssertionError(f"no {kind} of {run_id} in {path}")
    path.write_text("\n".join(lines) + "\n")


def _response(to: Any) -> Any:
    def edit(event: dict[str, Any]) -> None:
        event["response"] = to(event["response"]) if callable(to) else to
    return edit


def _without(*names: str) -> Any:
    return lambda doc: {k: v for k, v in doc.items() if k not in names}


def _with(**fields: Any) -> Any:
    return lambda doc: {**doc, **fields}


def _input(**fields: Any) -> Any:
    def edit(event: dict[str, Any]) -> None:
        messages = event["request"]["messages"]
        messages[-1] = {**messages[-1], **fields}
    return edit


#: (the event it damages, the damage): each loaded before, as a default.
DAMAGED_EVENTS: dict[str, tuple[str, Any]] = {
    "a message where the response belongs": ("llm.response", _response({"role": "user"})),
    "a response without its stop reason": ("llm.response", _response(_without("stop_reason"))),
    "a response without its content": ("llm.response", _response(_without("content"))),
    "a response's calls an object": ("llm.response", _response(_with(tool_calls={}))),
    "a response's content a list": ("llm.response", _response(_with(content=[]))),
    "a response's stop reason false": ("llm.response", _response(_with(stop_reason=False))),
    "a response's usage a string": ("llm.response", _response(_with(usage="12"))),
    "a response's reasoning a number": ("llm.response", _response(_with(reasoning=0))),
    "a call's arguments a list of pairs": (
        "llm.response", _response(lambda d: {**d, "tool_calls": [{**d["tool_calls"][0], "arguments": [["a", 1]]}]})
    ),
    "an input without its role": ("llm.request", _input(role=None)),
    "an input's is_error a string": ("llm.request", _input(is_error="false")),
    "an input's content zero": ("llm.request", _input(content=0)),
    "an input's calls an object": ("llm.request", _input(tool_calls={})),
}


@pytest.mark.parametrize("case", sorted(DAMAGED_EVENTS))
async def test_a_recorded_event_of_the_wrong_shape_is_the_runs_format_error(tmp_path: Path, case: str) -> None:
    path = tmp_path / "events.jsonl"
    victim, good = await _recorded(path)
    _edit(path, victim, *DAMAGED_EVENTS[case])
    with pytest.raises(JournalFormatError) as raised:
        read_run(path, victim)
    assert repr(victim) in str(raised.value) and str(path) in str(raised.value), raised.value
    with pytest.raises(JournalFormatError):
        await replay(str(path), victim)
    assert read_run(path, good).steps[-1].response.content == "Looked."
    assert (await replay(str(path), good)).content == "Looked."


def test_what_a_record_held_of_an_older_version_still_reads() -> None:
    """``null`` where a version before the value types were checked let a custom provider's ``None`` through: the
    field's default, as it meant; a key of a later version: left alone."""
    recorded = {
        "content": None, "tool_calls": [], "stop_reason": None, "usage": None, "model": None, "provider": None,
        "raw_stop_reason": None, "reasoning": None, "provider_data": None, "response_id": None, "cited": [1],
    }
    assert response_from_event(recorded) == LLMResponse("")
    message = message_from_event({"role": "user", "content": None, "tool_calls": None, "is_error": None})
    assert message.content == "" and not message.is_error
    assert response_from_json({"content": "x", "stop_reason": "end_turn", "later": {}}) == LLMResponse("x")
