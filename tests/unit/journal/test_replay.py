"""replay(): a recorded run again with no vendor call and no tool call, the same result and events.

Real files and worker threads: the real clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ToolCall, ToolContext, replay, tool
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


async def test_a_resumed_run_is_journaled_and_replayed_from_its_pause(tmp_path: Path, ledger: Ledger) -> None:
    charged: list[str] = []

    @tool(requires_approval=True)
    async def refund(ctx: ToolContext, cents: int) -> str:
        """Refund, once a person said yes."""
        charged.append(ctx.idempotency_key)
        return f"refunded {cents}"

    provider = ScriptedProvider([[ToolCall("r1", "refund", {"cents": 5})], "Refunded 5."])
    agent = Agent(provider, tools=[refund], name="clerk")
    async with SqliteJournal(tmp_path / "runs.db") as journal, Runtime(journal=journal):
        paused = await agent.run("refund me")
        resumed = await agent.resume(paused, {"r1": True})
        recorded = await journal.load_run(resumed.run_id or "")
    assert recorded.resume is not None and recorded.resume[0].run_id == paused.run_id
    assert recorded.resume[1] == {"r1": True} and recorded.status == "finished"
    assert [r.content for r in recorded.resumed_results or ()] == ["refunded 5"]  # the paused step: step 0
    assert charged == [f"{resumed.run_id}:r1"]
    async with SqliteJournal(tmp_path / "runs.db") as source:
        again = await replay(source, resumed.run_id or "", agents=[agent])
    assert charged == [f"{resumed.run_id}:r1"] and provider.calls == 2  # no tool, no model call
    assert (again.content, again.messages, again.steps) == (resumed.content, resumed.messages, resumed.steps)


async def test_a_delegated_run_is_replayed_inside_its_parent_or_on_its_own(tmp_path: Path) -> None:
    child_provider = ScriptedProvider(["42"])
    child = Agent(child_provider, name="oracle")
    parent_provider = ScriptedProvider([[ToolCall("ask", "oracle", {"input": "the answer?"})], "It says 42."])
    parent = Agent(parent_provider, tools=[child.as_tool()], name="asker")
    async with SqliteJournal(tmp_path / "runs.db") as journal, Runtime(journal=journal):
        original = await parent.run("ask the oracle")
        (kid,) = original.children
        recorded = await journal.load_run(original.run_id or "")
    assert [c.run_id for c in recorded.children] == [kid.run_id] and recorded.children[0].parent_call_id == "ask"
    async with SqliteJournal(tmp_path / "runs.db") as source:
        again = await replay(source, original.run_id or "")
        alone = await replay(source, kid.run_id or "")
    assert (again.content, again.messages) == (original.content, original.messages)
    assert again.children == ()  # the delegating tool step was served: the child did not run again
    assert alone.content == "42" and alone.messages == kid.messages
    assert (parent_provider.calls, child_provider.calls) == (2, 1)  # nothing asked again
