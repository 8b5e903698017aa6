"""A resumed run's steps go by the numbers its events and ``explain()`` give them, in a journal as in ``fork``.

A run resumed after an approval pause goes on from the paused run's step: its first model call is step ``k + 1``
in its events, in ``explain()`` and in ``RunResult.steps``.  The journal stores its steps from 1; what it hands
back (``load_run``), what ``fork`` accepts and what ``explain_fork`` shows are the numbers the user saw — and a
number the run does not have is refused with the ones it has.  On SQLite and on a real PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ToolCall, ToolContext, explain, fork, replay, tool
from agentactors.journal import StepOutOfRangeError
from agentactors.journal.compare import explain_fork
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


TOOLS: list[Any] = [refund, look]


def _script() -> list[Any]:
    return [
        [ToolCall("l1", "look", {"what": "order"})],  # step 1
        [ToolCall("r1", "refund", {"cents": 5})],  # step 2: pauses
        [ToolCall("l2", "look", {"what": "card"})],  # step 3: the resumed run's first model call
        [ToolCall("l3", "look", {"what": "bank"})],  # step 4
        "Refunded 5.",  # step 5
    ]


async def _resumed(make: Make, events: InMemoryRecorder) -> tuple[str, Any]:
    agent = Agent(ScriptedProvider(_script()), tools=TOOLS, name="clerk")
    async with make() as journal, Runtime(recorders=[events], journal=journal):
        paused = await agent.run("refund me")
        resumed = await agent.resume(paused, {"r1": True})
    assert paused.steps == 2 and resumed.steps == 5
    return resumed.run_id or "", resumed


async def test_load_run_and_fork_use_the_step_numbers_of_the_events(make: Make) -> None:
    events = InMemoryRecorder()
    with anyio.fail_after(60):
        run_id, _ = await _resumed(make, events)
        seen = sorted({e.step or 0 for e in events.events if e.run_id == run_id and e.type == "llm.response"})
        assert seen == [3, 4, 5]
        async with make() as journal:
            recorded = await journal.load_run(run_id)
            assert [s.number for s in recorded.steps] == seen
            live = ScriptedProvider(["Refunded, all done."])
            forked_events = InMemoryRecorder()
            forked = await fork(
                journal, run_id, 4, agent=Agent(live, tools=TOOLS, name="clerk"), recorders=[forked_events]
            )
            cmp = await explain_fork(forked, journal, events=forked_events.events)
    # Step 3 (look at the card) was served from the recording; step 4 ran live, and answered.
    assert live.calls == 1 and forked.content == "Refunded, all done." and forked.steps == 4
    assert [m.content for m in forked.messages if m.role == "tool"] == [
        "seen order", "refunded 5", "seen card",
    ]
    forked_at = [e.at_step for e in forked_events.events if e.type == "run.forked"]
    assert forked_at == [4]
    assert sorted({e.step or 0 for e in forked_events.events if e.type == "llm.response"}) == [3, 4]
    assert (cmp.at_step, cmp.at_step_inferred) == (4, False)
    assert [(s.step, s.reused, s.differs) for s in cmp.steps] == [(3, True, False), (4, False, True), (5, False, True)]
    assert "live from step 4" in str(cmp)
    assert explain(forked, forked_events.events).steps == 4


async def test_a_step_the_resumed_run_does_not_have_names_the_ones_it_has(make: Make) -> None:
    with anyio.fail_after(60):
        run_id, _ = await _resumed(make, InMemoryRecorder())
        async with make() as journal:
            agent = Agent(ScriptedProvider(["x"]), tools=TOOLS, name="clerk")
            for at in (0, 1, 2, 6):
                with pytest.raises(StepOutOfRangeError, match=r"3 … 5") as info:
                    await fork(journal, run_id, at, agent=agent)
                assert (info.value.at_step, info.value.steps, info.value.first) == (at, 3, 3)
                assert "resumed" in str(info.value)
            # The resumed run's first step: all live from the paused step's results.
            forked = await fork(journal, run_id, 3, agent=Agent(ScriptedProvider(["fine"]), tools=TOOLS, name="clerk"))
            assert forked.content == "fine" and forked.steps == 3


async def test_replay_of_the_resumed_run_numbers_its_steps_as_the_original(make: Make) -> None:
    events = InMemoryRecorder()
    with anyio.fail_after(60):
        run_id, resumed = await _resumed(make, events)
        async with make() as journal:
            again_events = InMemoryRecorder()
            again = await replay(journal, run_id, recorders=[again_events])
    assert again.messages == resumed.messages and again.steps == resumed.steps == 5

    def numbers(recorder: InMemoryRecorder, rid: str) -> list[int | None]:
        return [e.step for e in recorder.events if e.run_id == rid and e.type == "llm.response"]

    assert numbers(again_events, again.run_id or "") == numbers(events, run_id) == [3, 4, 5]
