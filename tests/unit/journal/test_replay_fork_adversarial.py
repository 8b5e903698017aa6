"""Replay and fork pushed at their edges, on SQLite and a real PostgreSQL: paused runs, changed tools, forks of
forks, many forks of one run at once.

* A run that paused for approval is replayed paused — by the recorded agent too (which has no tools, so nothing
  told it a call may wait): never a run that silently went on past the pause.
* An agent whose tools changed replays a run the same (its tools never run: every result is the recording's), or
  raises :class:`~agentactors.journal.ReplayDivergedError` where it cannot run as the recorded one did.
* A fork, recorded as JSONL, is forked again and replayed from that record.
* Forks of one run at the same time each get their own run and answer; the recording is not changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, JsonlRecorder, Runtime, ToolCall, ToolContext, fork, replay, tool
from agentactors.journal import ReplayDivergedError
from agentactors.providers.scripted import ScriptedProvider
from tests.support.journals import Make
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio





@tool(requires_approval=True)
async def refund(ctx: ToolContext, cents: int) -> str:
    """Refund, once a person said yes."""
    return f"refunded {cents}"


@tool
async def look(ctx: ToolContext, what: str) -> str:
    """Look at something."""
    return f"seen {what}"


@tool
async def other(ctx: ToolContext) -> str:
    """A tool the recorded agent did not have."""
    return "other"


def _clerk(*answers: Any, tools: tuple[Any, ...] = (refund, look)) -> Agent[Any]:
    return Agent(ScriptedProvider(list(answers)), tools=list(tools), name="clerk")


PAUSING: list[Any] = [
    [ToolCall("l1", "look", {"what": "order"})],
    [ToolCall("r1", "refund", {"cents": 5}), ToolCall("l2", "look", {"what": "card"})],  # r1 waits; l2 runs
    "Refunded 5.",
]


async def test_a_paused_run_is_replayed_paused_even_by_the_recorded_agent(make: Make) -> None:
    with anyio.fail_after(60):
        async with make() as journal, Runtime(journal=journal):
            paused = await _clerk(*PAUSING).run("refund me")
        assert paused.paused
        async with make() as journal:
            by_recording = await replay(journal, paused.run_id or "")  # the agent rebuilt from the recording
            by_agent = await replay(journal, paused.run_id or "", agents=[_clerk()])
    for again in (by_recording, by_agent):
        assert again.paused and again.steps == paused.steps == 2
        assert again.messages == paused.messages and again.content == paused.content
        assert again.resume_state is not None and paused.resume_state is not None
        assert [c.id for c in again.resume_state.pending] == [c.id for c in paused.resume_state.pending] == ["r1"]


async def test_changed_tools_replay_the_same_or_diverge_typed(make: Make) -> None:
    with anyio.fail_after(60):
        async with make() as journal, Runtime(journal=journal):
            paused = await _clerk(*PAUSING).run("refund me")
            resumed = await _clerk("Refunded 5.").resume(paused, {"r1": True})
        async with make() as journal:
            # Every result is the recording's: tools renamed or gone change nothing of what the run did.
            for tools in ((other,), ()):
                again = await replay(journal, resumed.run_id or "", agent=_clerk(tools=tools))
                assert (again.content, again.messages, again.steps) == (resumed.content, resumed.messages, 3)
            # Without the tool that needs approval nothing makes the run pause where it paused: it asks the model
            # for the next step, which the recording does not hold.
            with pytest.raises(ReplayDivergedError):
                await replay(journal, paused.run_id or "", agent=_clerk(tools=(look, other)))


async def test_forks_of_a_fork_from_its_jsonl_record(make: Make, tmp_path: Path) -> None:
    record = tmp_path / "fork.jsonl"
    script: list[Any] = [[ToolCall("l1", "look", {"what": "a"})], [ToolCall("l2", "look", {"what": "b"})], "done"]
    with anyio.fail_after(60):
        async with make() as journal, Runtime(journal=journal):
            original = await _clerk(*script).run("go")
        async with make() as journal:
            with JsonlRecorder(record) as jsonl:
                first = await fork(
                    journal, original.run_id or "", 2,
                    agent=_clerk([ToolCall("l7", "look", {"what": "q"})], "first fork"), recorders=[jsonl],
                )
    assert first.content == "first fork" and first.steps == 3
    for at, seen in ((1, []), (2, ["seen a"]), (3, ["seen a", "seen q"])):
        second = await fork(record, first.run_id or "", at, agent=_clerk("second fork"))
        assert second.forked_from == first.run_id and second.content == "second fork" and second.steps == at
        assert [m.content for m in second.messages if m.role == "tool"] == seen
    again = await replay(record, first.run_id or "")
    assert (again.content, again.messages, again.steps) == (first.content, first.messages, first.steps)


async def test_forks_of_one_run_at_the_same_time_each_go_their_own_way(make: Make) -> None:
    with anyio.fail_after(60):
        async with make() as journal, Runtime(journal=journal):
            paused = await _clerk(*PAUSING).run("refund me")
            resumed = await _clerk([ToolCall("l3", "look", {"what": "bank"})], "Refunded 5.").resume(
                paused, {"r1": True}
            )
        answers: dict[int, Any] = {}
        async with make() as journal:
            before = await journal.load_run(resumed.run_id or "")

            async def one(i: int) -> None:
                answers[i] = await fork(journal, resumed.run_id or "", 4, agent=_clerk(f"answer {i}"))

            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(one, i)
            after = await journal.load_run(resumed.run_id or "")
    assert {i: r.content for i, r in answers.items()} == {i: f"answer {i}" for i in range(8)}
    assert len({r.run_id for r in answers.values()}) == 8 and resumed.run_id not in {r.run_id for r in answers.values()}
    assert all(r.forked_from == resumed.run_id and r.steps == 4 for r in answers.values())
    assert all(r.messages[: len(resumed.messages) - 1] == resumed.messages[:-1] for r in answers.values())
    assert after == before and after.content == "Refunded 5."


async def test_a_run_resumed_after_a_handoff_is_replayed_by_the_recorded_agent(make: Make) -> None:
    # Paused by the agent it handed off to, resumed through the first one: the agent rebuilt from the recording
    # (no handoffs) resumes as the one that paused, instead of failing the resume's check with a ValueError.
    billing = Agent(
        ScriptedProvider([[ToolCall("r1", "refund", {"cents": 5})], "Refunded."]), tools=[refund], name="billing"
    )
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", handoffs=[billing])
    with anyio.fail_after(60):
        async with make() as journal, Runtime(journal=journal):
            paused = await triage.run("refund me")
            resumed = await triage.resume(paused, {"r1": True})
        async with make() as journal:
            again = await replay(journal, resumed.run_id or "")
    assert paused.resume_state is not None and paused.resume_state.agent == "billing"
    assert (again.content, again.messages, again.steps) == (resumed.content, resumed.messages, resumed.steps)
