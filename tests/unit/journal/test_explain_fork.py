"""explain beside a fork: what changed in the context from the fork step on, and which answer differs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    JsonlRecorder,
    ModelSettings,
    Runtime,
    SqliteJournal,
    ToolCall,
    ToolContext,
    explain,
    fork,
    tool,
)
from agentactors.explain import Explanation
from agentactors.journal.compare import explain_fork
from agentactors.providers.scripted import ScriptedProvider

from .conftest import Ledger, record, script

pytestmark = pytest.mark.anyio


def _frugal(ledger: Ledger) -> Agent[object]:
    provider = ScriptedProvider(
        [[ToolCall("c9", "charge", {"cents": 100})], "Charged 100 instead."], model="frugal-model"
    )
    return Agent(provider, tools=ledger.tools(), name="shop", system="You are frugal.")


async def test_a_fork_from_jsonl_beside_its_original(tmp_path: Path, ledger: Ledger) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    events = InMemoryRecorder()
    forked = await fork(
        rec.path, rec.result.run_id or "", 2, agent=_frugal(Ledger()),
        settings=ModelSettings(temperature=0.0), recorders=[events],
    )
    cmp = await explain_fork(forked, rec.path, events=events.events)
    assert (cmp.original_run_id, cmp.fork_run_id, cmp.at_step, cmp.at_step_inferred) == (
        rec.result.run_id, forked.run_id, 2, False,
    )
    changed = {c.what: (c.original, c.fork) for c in cmp.changes}
    assert changed["system prompt"] == ("'You shop.'", "'You are frugal.'")
    assert changed["temperature"] == ("(default)", "0.0")
    assert "tools offered" not in changed and cmp.not_compared == ()  # both sides recorded every request
    assert [(s.step, s.reused, s.differs) for s in cmp.steps] == [(1, True, False), (2, False, True), (3, False, True)]
    assert cmp.steps[0].original == 'lookup({"city":"Lisbon"}) → ok \'sunny in Lisbon\''
    assert cmp.steps[1].original == 'charge({"cents":250}) → ok \'charged 250\''
    assert cmp.steps[1].fork == 'charge({"cents":100}) → ok \'charged 100\''
    assert cmp.answer_differs and (cmp.original_answer, cmp.fork_answer) == (
        "Charged 250 for sunny Lisbon.", "Charged 100 instead.",
    )
    text = str(cmp)
    assert f"fork {forked.run_id} of run {rec.result.run_id} (live from step 2)" in text
    assert "system prompt: 'You shop.' → 'You are frugal.'" in text and "the answer differs:" in text


async def test_explain_shows_the_comparison_when_its_events_hold_both_runs(tmp_path: Path, ledger: Ledger) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    with JsonlRecorder(rec.path) as jsonl:  # the fork's events appended to the original's record
        forked = await fork(rec.path, rec.result.run_id or "", 3, agent=_frugal(Ledger()), recorders=[jsonl])
    from_file = Explanation.from_jsonl(rec.path, forked.run_id or "")
    assert from_file.fork is not None and from_file.fork.at_step == 3
    # 1-2 reused; 3 and 4 live: another charge, another answer
    assert [(s.reused, s.differs) for s in from_file.fork.steps] == [
        (True, False), (True, False), (False, True), (False, True),
    ]
    assert "beside its original:" in str(from_file)
    plain = Explanation.from_jsonl(rec.path, rec.result.run_id or "")
    assert plain.fork is None  # the original is no fork

    both = InMemoryRecorder()
    async with Runtime(recorders=[both]):
        original = await Agent(ScriptedProvider(script()), tools=Ledger().tools(), name="shop").run("Charge me.")
    path = tmp_path / "both.jsonl"  # fork reads a JSONL record or a journal; one recorder sees both runs
    with JsonlRecorder(path) as jsonl:
        for event in both.events:
            jsonl.record(event)
    forked_too = await fork(path, original.run_id or "", 2, agent=_frugal(Ledger()), recorders=[both])
    explained = explain(forked_too, both.events)
    assert explained.fork is not None and explained.fork.original_run_id == original.run_id
    assert explained.fork.answer_differs and "the answer differs" in str(explained)
    assert explain(original, both.events).fork is None


async def test_a_fork_of_a_journaled_run_says_what_the_journal_did_not_record(tmp_path: Path, ledger: Ledger) -> None:
    async with SqliteJournal(tmp_path / "runs.db") as journal, Runtime(journal=journal):
        original = await Agent(ScriptedProvider(script()), tools=ledger.tools(), name="shop").run("Charge me.")
    async with SqliteJournal(tmp_path / "runs.db") as journal:
        events = InMemoryRecorder()
        forked = await fork(journal, original.run_id or "", 2, agent=_frugal(Ledger()), recorders=[events])
        with_events = await explain_fork(forked, journal, events=events.events)
        result_only = await explain_fork(forked, journal)
    assert with_events.at_step == 2 and not with_events.at_step_inferred
    assert "system prompt" in with_events.not_compared and "temperature" in with_events.not_compared
    assert "not compared (one side did not record it)" in str(with_events)
    # From the result alone the fork step is not known: the first step whose model output differs is shown.
    assert result_only.at_step == 2 and result_only.at_step_inferred
    assert [s.differs for s in result_only.steps] == [False, True, True] and result_only.answer_differs
    with pytest.raises(ValueError, match="not a fork"):
        await explain_fork(original, journal)


async def test_a_fork_of_a_resumed_run_is_compared_step_for_step(tmp_path: Path) -> None:
    # A resumed run's steps go on from the paused run's step (3 and 4 here) in its events, in its journal and in
    # fork's at_step, and its conversation holds the paused run's steps: the fork's side is counted the same way
    # as the original's, so each step stands beside its own.
    @tool(requires_approval=True)
    async def refund(ctx: ToolContext, cents: int) -> str:
        """Refund, once a person said yes."""
        return f"refunded {cents}"

    @tool
    async def look(ctx: ToolContext) -> str:
        """Look at the order."""
        return "seen"

    tools: list[Any] = [refund, look]
    script_ = [[ToolCall("l1", "look", {})], [ToolCall("r1", "refund", {"cents": 5})],
               [ToolCall("l2", "look", {})], "Refunded 5."]
    agent = Agent(ScriptedProvider(script_), tools=tools, name="clerk")
    async with SqliteJournal(tmp_path / "runs.db") as journal, Runtime(journal=journal):
        paused = await agent.run("refund me")
        resumed = await agent.resume(paused, {"r1": True})
    async with SqliteJournal(tmp_path / "runs.db") as journal:
        events = InMemoryRecorder()
        forked = await fork(
            journal, resumed.run_id or "", 4,
            agent=Agent(ScriptedProvider(["Refunded, all done."]), tools=tools, name="clerk"), recorders=[events],
        )
        with_events = await explain_fork(forked, journal, events=events.events)
        result_only = await explain_fork(forked, journal)
    for cmp in (with_events, result_only):
        assert [(s.step, s.reused, s.differs) for s in cmp.steps] == [(3, True, False), (4, False, True)], str(cmp)
        assert cmp.steps[0].original == "look({}) → ok 'seen'"
        assert cmp.steps[1].original == "answered 'Refunded 5.'"
        assert cmp.steps[1].fork == "answered 'Refunded, all done.'"
    assert (with_events.at_step, with_events.at_step_inferred) == (4, False)
    assert (result_only.at_step, result_only.at_step_inferred) == (4, True)


async def test_a_forked_call_renamed_for_a_reused_id_shows_its_result(tmp_path: Path, ledger: Ledger) -> None:
    """The fork's live model sends the id a reused step's call had (``c1``): the run renames it (``c1_2``) and its
    result carries the new id, while the recorded response keeps the vendor's.  The comparison showed that call as
    ``(no result)``; it matches a result by the fresh id too."""
    rec = await record(tmp_path / "events.jsonl", ledger)
    reusing = Agent(
        ScriptedProvider([[ToolCall("c1", "charge", {"cents": 100})], "Charged 100 instead."]),
        tools=Ledger().tools(), name="shop", system="You shop.",
    )
    events = InMemoryRecorder()
    forked = await fork(rec.path, rec.result.run_id or "", 2, agent=reusing, recorders=[events])
    assert [c.id for c in forked.tool_calls] == ["c1", "c1_2"]
    cmp = await explain_fork(forked, rec.path, events=events.events)
    assert cmp.steps[1].fork == 'charge({"cents":100}) → ok \'charged 100\''
