"""replay(): a recorded run again with no vendor call and no tool call, the same result and events.

Real files and worker threads: the real clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, replay
from agentactors.journal import ReplayDivergedError, RunNotRecordedError, SqliteJournal
from agentactors.providers.scripted import ScriptedProvider

from .conftest import Ledger, record, script

pytestmark = pytest.mark.anyio


def _types(events: list[Any]) -> list[str]:
    return [e.type for e in events if not e.type.startswith(("actor.", "run.replayed", "run.forked"))]


async def test_replay_from_jsonl_reproduces_the_result_with_no_vendor_and_no_tool_call(
    tmp_path: Path, ledger: Ledger
) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    done = list(ledger.charges)
    events = InMemoryRecorder()
    again = await replay(rec.path, rec.result.run_id or "", recorders=[events])
    assert ledger.charges == done  # no tool ran
    original = rec.result
    assert (again.content, again.steps, again.messages, again.tool_calls) == (
        original.content, original.steps, original.messages, original.tool_calls,
    )
    assert again.ok and again.agent == "shop" and again.run_id != original.run_id
    recorded = [json.loads(line) for line in rec.path.read_text().splitlines()]
    assert _types(events.events) == [r["type"] for r in recorded if not r["type"].startswith("actor.")]
    replayed = [e for e in events.events if e.type == "tools.finished"]
    assert [e.replayed for e in replayed] == [True, True] and [e.status.value for e in replayed] == ["ok", "ok"]
    assert [e.replayed_from for e in events.events if e.type == "run.replayed"] == [original.run_id]


async def test_replay_with_the_agent_never_calls_its_provider_or_its_tools(tmp_path: Path, ledger: Ledger) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    done = list(ledger.charges)
    provider = ScriptedProvider(script())
    agent = Agent(provider, tools=Ledger().tools(), name="shop", system="You shop.")
    events = InMemoryRecorder()
    as_given = Agent(provider, tools=agent.tools, recorders=[events])
    again = await replay(rec.path, rec.result.run_id or "", agent=as_given)
    assert provider.calls == 0 and ledger.charges == done
    assert again.messages == rec.result.messages and again.content == rec.result.content
    requests = [e.request for e in events.events if e.type == "llm.request"]
    assert len(requests) == 3 and [t.name for t in requests[0].tools] == ["charge", "lookup"]


async def test_replay_from_a_journal(tmp_path: Path, ledger: Ledger) -> None:
    journal = SqliteJournal(tmp_path / "runs.db")
    async with journal, Runtime(journal=journal):
        original = await Agent(ScriptedProvider(script()), tools=ledger.tools(), name="shop").run("Charge me.")
    done = list(ledger.charges)
    async with SqliteJournal(tmp_path / "runs.db") as again_from:
        again = await replay(again_from, original.run_id or "")
    assert ledger.charges == done
    assert (again.content, again.messages, again.tool_calls, again.steps) == (
        original.content, original.messages, original.tool_calls, original.steps,
    )


async def test_a_replay_that_asks_past_its_recording_raises(tmp_path: Path, ledger: Ledger) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    lines = rec.path.read_text().splitlines()
    last = max(i for i, line in enumerate(lines) if '"type": "llm.response"' in line)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:last]) + "\n")  # the answer's response is missing
    with pytest.raises(ReplayDivergedError, match="more model calls"):
        await replay(cut, rec.result.run_id or "", agent=rec.agent)  # its max_steps lets it ask a third time
    bounded = await replay(cut, rec.result.run_id or "")  # an agent made from the recording stops where it does
    assert bounded.bounded and bounded.steps == 2
    lookup_only = tmp_path / "no-results.jsonl"
    lookup_only.write_text("\n".join(line for line in lines if '"type": "tools.finished"' not in line) + "\n")
    with pytest.raises(ReplayDivergedError, match="tool step"):
        await replay(lookup_only, rec.result.run_id or "")
    assert len(ledger.charges) == 2  # only the recording run's calls, ever


async def test_an_unknown_run_is_a_typed_error(tmp_path: Path, ledger: Ledger) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    with pytest.raises(RunNotRecordedError, match="nope"):
        await replay(rec.path, "nope")
    with pytest.raises(LookupError):
        async with SqliteJournal(tmp_path / "empty.db") as journal:
            await replay(journal, "nope")
    with pytest.raises(TypeError, match="JSONL path or a journal"):
        await replay(42, "x")  # type: ignore[arg-type]
