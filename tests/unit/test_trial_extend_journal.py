"""A journal of one's own, written against the loop's port (``open_run`` -> a ``Tape`` with a ``StepWriter``).

With ``load_run`` beside it, ``replay`` and ``fork`` read what it committed.  One whose ``open_run`` answers
something else than a ``Tape`` or ``None`` failed the run with ``AttributeError: 'str' object has no attribute
'run_id'`` from inside the run's controller, naming neither the journal nor its method; now it is a
``TypeError`` naming both, before the run starts.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import Agent, Runtime, ScriptedProvider, ToolCall, fork, replay, tool
from agentactors.journal.records import RecordedRun, RecordedStep
from agentactors.loop.tape import Commit, Tape
from agentactors.messages import LLMResponse, Message
from agentactors.tools.results import ToolResult

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Writer:
    """One run's live steps, kept in memory: what a journal's ``StepWriter`` does with each ``Commit``."""

    def __init__(self, run: dict[str, Any]) -> None:
        self.run = run

    async def commit(self, commit: Commit) -> None:
        for number, response in commit.responses:
            self.run["responses"][number] = response
        if commit.results is not None:
            self.run["results"][commit.results[0]] = commit.results[1]
        if commit.end is not None:
            self.run["status"] = commit.end


class Mine:
    """A journal of one's own: the loop's port and ``load_run``, enough for ``replay`` and ``fork``."""

    def __init__(self, answer: object = None) -> None:
        self.runs: dict[str, dict[str, Any]] = {}
        self.answer = answer  # what open_run answers instead of a tape (None: a tape)

    def open_run(
        self, run_id: str | None, agent: str | None, inputs: tuple[Message, ...], *,
        parent_run_id: str | None, resumed: bool,
    ) -> Tape | None:
        if self.answer is not None:
            return self.answer  # type: ignore[return-value]
        if run_id is None:
            return None  # (not kept: as the SQL journals do)
        run: dict[str, Any] = {"agent": agent, "inputs": inputs, "responses": {}, "results": {}, "status": "running"}
        self.runs[run_id] = run
        return Tape(writer=Writer(run))

    async def load_run(self, run_id: str) -> RecordedRun:
        run = self.runs[run_id]
        responses: dict[int, LLMResponse] = run["responses"]
        results: dict[int, tuple[ToolResult, ...]] = run["results"]
        steps = tuple(RecordedStep(n, responses[n], results.get(n)) for n in sorted(responses))
        return RecordedRun(run_id, run["agent"], run["inputs"], steps, status=run["status"])


def _agent(*script: Any) -> Agent[str]:
    return Agent(ScriptedProvider(list(script)), tools=[add], name="adder")


async def test_a_journal_of_ones_own_records_a_run_that_replay_and_fork_read() -> None:
    journal = Mine()
    async with Runtime(journal=journal) as rt:
        result = await _agent([ToolCall("c1", "add", {"a": 1, "b": 2})], "3").bind(rt).run("add 1 and 2")
    assert result.ok and result.content == "3", result.error
    [run_id] = journal.runs
    assert journal.runs[run_id]["status"] == "finished"
    again = await replay(journal, run_id)  # no model asked, no tool run
    assert again.content == "3"
    forked = await fork(journal, run_id, 2, agent=_agent("forked"))  # step 1 reused, step 2 live
    assert forked.content == "forked"


@pytest.mark.parametrize("answer", ["a tape", 42, object()])
async def test_an_open_run_answering_no_tape_is_a_type_error_naming_the_journal(answer: object) -> None:
    provider = ScriptedProvider(["never asked"])
    async with Runtime(journal=Mine(answer)) as rt:
        with pytest.raises(TypeError) as caught:
            await Agent(provider, name="adder").bind(rt).run("hi")
    text = str(caught.value)
    assert "Mine.open_run()" in text and type(answer).__name__ in text and "Tape" in text, text
    assert provider.requests == []  # the run never started


async def test_recover_on_a_journal_without_recover_names_what_it_needs() -> None:
    # The loop's port (open_run) is enough to record, replay and fork; recovery is the JournalStore's recover().
    async with Runtime(journal=Mine()) as rt:
        with pytest.raises(TypeError) as caught:
            await rt.recover()
    text = str(caught.value)
    assert "Mine" in text and "recover()" in text and "JournalStore" in text, text
