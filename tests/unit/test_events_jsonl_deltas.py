"""A ``JsonlRecorder``'s file grows linearly with a run's length, and reads back the same events.

Each ``llm.request`` record held the step's whole request, every message of the conversation so far: a run of N
steps wrote N²/2 messages (a 2,000-step run about 1 GB, each step encoding the whole history inside the run).  A
request that goes on from the run's previous one is now written as the messages it adds (``messages_from``: the
previous request's seq and how many of its messages it keeps), with a whole copy at the run's request 1, 2, 4, 8…;
``read_jsonl`` rebuilds the whole request, so every reader gets the events a recorder in memory got.  Virtual time,
both backends.
"""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, JsonlRecorder, Message, Runtime, ToolCall, replay, tool
from agentactors.agent import handoff
from agentactors.events import Event, event_from_dict, event_to_dict, read_jsonl, to_jsonable
from agentactors.explain import Explanation
from agentactors.journal import jsonl
from agentactors.journal.codec import message_from_event
from agentactors.journal.jsonl import read_run, run_from_events
from agentactors.messages import LLMRequest
from agentactors.providers.scripted import ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool
async def lookup(n: int) -> str:
    """Look it up."""
    await anyio.sleep(0.01)  # virtual time: runs side by side take turns
    return f"page {n} " + "x" * 40


def _model(steps: int, calls: int = 1, *, then: Any = "done") -> Any:
    state = {"step": 0}

    def answer(request: LLMRequest) -> Any:
        step = state["step"]
        state["step"] += 1
        if step < steps:
            return [ToolCall(f"c{step}-{k}", "lookup", {"n": step * 10 + k}) for k in range(calls)]
        return then

    return answer


def _agent(
    steps: int, *, calls: int = 1, budget: int | None = None, recorders: list[Any], name: str = "a"
) -> Agent[Any]:
    return Agent(
        ScriptedProvider(_model(steps, calls)), tools=[lookup], max_steps=steps + 5, name=name, system="You look.",
        context_budget_chars=budget, recorders=recorders,
    )


async def _recorded(path: Path, steps: int, **kw: Any) -> tuple[InMemoryRecorder, str]:
    memory = InMemoryRecorder()
    with JsonlRecorder(path, **kw.pop("jsonl", {})) as jsonl:
        result = await _agent(steps, recorders=[memory, jsonl], **kw).run("go")
    assert result.run_id is not None
    return memory, result.run_id


def _same(read: list[Event], recorded: list[Event]) -> None:
    """The events read back are those a recorder in memory got (as JSON: requests via to_jsonable)."""
    assert [event_to_dict(e) for e in read] == [event_to_dict(e) for e in recorded]
    assert [type(e) for e in read] == [type(e) for e in recorded]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


# --- bytes --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [None, 3000])
async def test_the_bytes_written_grow_linearly_with_the_runs_length(tmp_path: Path, budget: int | None) -> None:
    """With a context budget too: once the conversation outgrows it, each request drops and trims older messages
    (written whole, each request of the run was as long as the budget allows, its messages ever more stubs)."""
    sizes = {}
    for steps in (50, 200):
        path = tmp_path / f"{steps}.jsonl"
        await _recorded(path, steps, budget=budget)
        sizes[steps] = path.stat().st_size
    # 4x the steps: ~4x the bytes (quadratic was ~16x).
    assert sizes[200] / sizes[50] < 5, sizes


async def test_full_requests_writes_every_request_whole_as_before(tmp_path: Path) -> None:
    path = tmp_path / "full.jsonl"
    memory, _ = await _recorded(path, 20, jsonl={"full_requests": True})
    assert _records(path) == [event_to_dict(e) for e in memory.events]


async def test_a_record_never_holds_a_short_messages_list_an_older_reader_would_take_for_the_request(
    tmp_path: Path,
) -> None:
    """An older reader ignores keys it does not know: a request's ``messages`` is whole or absent, never the tail."""
    path = tmp_path / "runs.jsonl"
    memory, _ = await _recorded(path, 40)
    full = {e.seq: event_to_dict(e) for e in memory.events if e.type == "llm.request"}
    deltas = 0
    for record in _records(path):
        if record["type"] != "llm.request":
            continue
        request = record["request"]
        if "messages" in request:
            assert request == full[record["seq"]]["request"]
        else:
            deltas += 1
            assert set(request["messages_from"]) == {"seq"} and isinstance(request["messages_delta"], list)
    assert deltas > 30
    # What an older reader (event_from_dict line by line, as read_jsonl was) makes of the file: the steps whose
    # request it cannot read are unknown, never told with a wrong conversation.
    old = [event_from_dict(r) for r in _records(path)]
    run = run_from_events(old, memory.events[0].run_id or "")
    assert [m.content for m in run.inputs] == ["go"]


# --- round trips ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["plain", "budget", "parallel"])
async def test_a_delta_file_reads_back_the_events_a_recorder_in_memory_got(tmp_path: Path, case: str) -> None:
    path = tmp_path / "runs.jsonl"
    kw: dict[str, Any] = {"budget": 1500} if case == "budget" else {"calls": 4} if case == "parallel" else {}
    memory, run_id = await _recorded(path, 40, **kw)
    _same(list(read_jsonl(path)), memory.events)
    _same(list(read_jsonl(path, run_id=run_id)), memory.for_run(run_id))
    assert sum("messages_from" in r.get("request", {}) for r in _records(path)) > 20


async def test_a_handoff_that_filters_the_conversation_reads_back(tmp_path: Path) -> None:
    memory = InMemoryRecorder()
    billing = Agent(ScriptedProvider(_model(6, then="billed")), tools=[lookup], name="billing", system="You bill.")

    def last_two(messages: tuple[Message, ...]) -> list[Message]:
        return list(messages[-2:])

    desk = Agent(
        ScriptedProvider(_model(10, then=[ToolCall("h", "transfer_to_billing", {})])), tools=[lookup],
        handoffs=[handoff(billing, input_filter=last_two)], name="desk", system="You help.", max_steps=30,
    )
    path = tmp_path / "runs.jsonl"
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[memory, jsonl]) as rt:
            result = await desk.run("go", runtime=rt)
    assert result.content == "billed"
    _same(list(read_jsonl(path)), memory.events)


async def test_two_runs_interleaved_in_one_file_read_back(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    memory = InMemoryRecorder()
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[memory, jsonl]) as rt, anyio.create_task_group() as tg:
            for name in ("a", "b", "c"):
                tg.start_soon(functools.partial(_agent(30, recorders=[], name=name).run, "go", runtime=rt))
    runs = {e.run_id for e in memory.events if e.type == "run.started"}
    assert len(runs) == 3
    order = [e.run_id for e in memory.events if e.type == "llm.request"]
    assert sum(a != b for a, b in itertools.pairwise(order)) > 10, "the runs' requests interleave"
    _same(list(read_jsonl(path)), memory.events)
    for run_id in runs:
        assert run_id is not None
        _same(list(read_jsonl(path, run_id=run_id)), memory.for_run(run_id))


class _Rotating:
    """Forwards to a JsonlRecorder, and rotates its file away (``logrotate``'s rename) at given requests."""

    def __init__(self, jsonl: JsonlRecorder, *, flush_at: int, rename_at: int, then_flush: bool) -> None:
        self.jsonl, self.flush_at, self.rename_at, self.requests = jsonl, flush_at, rename_at, 0
        self.then_flush = then_flush

    def record(self, event: Event) -> None:
        self.jsonl.record(event)
        if self.then_flush and self.requests == self.rename_at and event.type != "llm.request":
            self.then_flush = False
            self.jsonl.flush()  # the event after the request: written out with no request of the run held
        if event.type == "llm.request":
            self.requests += 1
            if self.requests == self.flush_at:
                self.jsonl.flush()
            if self.requests == self.rename_at:
                self.jsonl.path.rename(self.jsonl.path.with_suffix(".1"))


@pytest.mark.parametrize(("flush_at", "rename_at", "then_flush"), [(12, 12, True), (12, 14, False), (21, 21, False)])
async def test_a_file_rotated_mid_run_stands_alone(
    tmp_path: Path, flush_at: int, rename_at: int, then_flush: bool
) -> None:
    """The new file starts with its run's request whole: the first one the recorder still held when it saw the
    file go (a delta of a request written to the old file), or the next it records when it held none of the run's."""
    path = tmp_path / "runs.jsonl"
    memory = InMemoryRecorder()
    rotating = _Rotating(JsonlRecorder(path), flush_at=flush_at, rename_at=rename_at, then_flush=then_flush)
    with rotating.jsonl:
        await _agent(40, recorders=[memory, rotating]).run("go")
    old, new = list(read_jsonl(path.with_suffix(".1"))), list(read_jsonl(path))
    assert old and new
    _same(old + new, memory.events)
    _same(new, memory.events[len(old):])
    requests = [r["request"] for r in _records(path) if r["type"] == "llm.request"]
    assert "messages" in requests[0] and any("messages_from" in r for r in requests[1:])


async def test_a_cut_last_line_and_a_lost_base_are_omitted_never_wrong(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    memory, run_id = await _recorded(path, 40)
    lines = path.read_bytes().splitlines(keepends=True)
    # A base lost (request 16, whole: the deltas of 17…31 go on from it) and the last line cut mid-write.
    lost = next(i for i, line in enumerate(lines) if b'"llm.request"' in line and b'"messages"' in line
                and json.loads(line)["seq"] > memory.of_type("llm.request")[14].seq)
    path.write_bytes(b"".join(lines[:lost] + lines[lost + 1 :])[:-20])
    skipped: list[str] = []
    read = list(read_jsonl(path, skipped=skipped))
    assert skipped
    by_seq = {e.seq: e for e in memory.events}
    omitted = 0
    for e in read:
        if "omitted" in e.data:
            omitted += 1
            assert e.type == "llm.request" and "request" not in e.data
        else:
            assert event_to_dict(e) == event_to_dict(by_seq[e.seq])
    assert 0 < omitted < 20
    # The readers built on it say the steps are unknown rather than fail.
    assert read_run(path, run_id).run_id == run_id
    assert Explanation.from_jsonl(path, run_id).run_id == run_id


# --- readers built on read_jsonl ------------------------------------------------------------------------


async def test_explain_read_run_and_replay_take_a_delta_file_as_a_whole_one(tmp_path: Path) -> None:
    delta, whole = tmp_path / "delta.jsonl", tmp_path / "whole.jsonl"
    memory = InMemoryRecorder()
    with JsonlRecorder(delta) as a, JsonlRecorder(whole, full_requests=True) as b:
        result = await _agent(40, budget=3000, recorders=[memory, a, b]).run("go")
    assert result.run_id is not None
    assert delta.stat().st_size < whole.stat().st_size / 2
    assert str(Explanation.from_jsonl(delta, result.run_id)) == str(Explanation.from_jsonl(whole, result.run_id))
    assert read_run(delta, result.run_id) == read_run(whole, result.run_id)
    again = await replay(delta, result.run_id, agent=_agent(40, budget=3000, recorders=[]))
    assert again.content == result.content and again.steps == result.steps


async def test_a_long_runs_record_is_read_decoding_each_message_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``read_run`` of a record decoded every request's whole conversation (N²/2 messages): the file no longer
    costs that to read, and the reading must not either.  Counted: the messages decoded."""
    path = tmp_path / "runs.jsonl"
    memory, run_id = await _recorded(path, 150, calls=3)
    decoded = [0]

    def decode(doc: Any) -> Any:
        decoded[0] += 1
        return message_from_event(doc)

    walked = [0]

    def jsonable(value: Any) -> Any:
        walked[0] += isinstance(value, dict) and "messages" in value
        return to_jsonable(value)

    monkeypatch.setattr(jsonl, "message_from_event", decode)
    monkeypatch.setattr(jsonl, "to_jsonable", jsonable)
    run = read_run(path, run_id)
    assert walked[0] == 0, "a record's request is JSON already: not walked again"
    assert run == run_from_events(memory.events, run_id)
    assert len(run.steps) == 151 and all(s.results is not None for s in run.steps[:-1])
    # The first request's (its input), and each step's results from the request after it: ~3 a step.
    assert decoded[0] <= 10 + 4 * 150, decoded[0]
