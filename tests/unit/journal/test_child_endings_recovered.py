"""A delegated child that ended ``raised`` or ``paused`` inside a parent a crash cut (docs/durability.md, "Recovery
and exactly-once"): the recovered parent's tool starts the child again and it is served whole from its recording,
ending as it did — the parent's tool reads what it read live, no model is asked and no tool runs again.

Before, such a child was resumed as one the crash had cut: its journal row was not leased to the recoverer (only a
``running`` child is), its begin commit failed the owner check, and the parent's tool read a misleading
``LeaseLostError`` ("taken over by another recoverer").  A child that ended at a point its recording does not hold
(a model call that failed, a response the journal refused) is not run past it either: it ends there with a
``ReplayDivergedError``, where before it asked its model again and went on with nothing committed.

SQLite and PostgreSQL; real files, threads and a server: the real clock, generous bounds.
"""

from __future__ import annotations

import datetime
from typing import Any

import anyio
import pytest

from agentactors import Agent, LLMResponse, Runtime, ToolCall, ToolStatus, tool
from agentactors.loop.result import RunResult
from agentactors.messages import LLMRequest
from agentactors.providers.scripted import ScriptedProvider
from tests.support.journals import journal_on, sql
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio




class Family:
    """A parent whose one tool runs the child agent, then answers with what the tool said; the child looks something
    up, then ends as ``how`` says:

    * ``"raise"``: its tool fails and ``on_tool_status`` routes the error to ``"raise"`` (the run raises
      ``ToolStatusError`` after its tool step is committed);
    * ``"pause"``: it asks for a tool that requires approval (the run pauses; as a delegated run's pause, the
      parent's tool reads a ``DelegationError``);
    * ``"refused"``: its second response holds a value the journal cannot keep (the run raises
      ``JournalFormatError``: nothing of that response is recorded);
    * ``"failed"``: its second model call fails (the run finishes without an answer: that call is not recorded).

    ``asked``/``ran``: the child's model calls and tool calls; ``heard``: the tool results the parent's model read.
    """

    def __init__(self, how: str) -> None:
        self.how = how
        self.asked = 0
        self.ran = 0
        self.heard: list[str] = []
        self.child = self._child()

    def _child(self) -> Agent[Any]:
        @tool
        async def lookup() -> str:
            """Look it up."""
            self.ran += 1
            if self.how == "raise":
                raise RuntimeError("the shelf is empty")
            return "found"

        @tool(requires_approval=True)
        async def buy() -> str:
            """Buy it."""
            self.ran += 1
            return "bought"

        async def model(request: LLMRequest) -> Any:
            self.asked += 1
            if not any(m.role == "tool" for m in request.messages):
                return [ToolCall("c1", "lookup", {})]
            if self.how == "pause":
                return [ToolCall("c2", "buy", {})]
            if self.how == "refused":
                return LLMResponse("a lamp", provider_data={"at": datetime.date(2024, 1, 1)})
            if self.how == "failed":
                raise ValueError("the model broke")
            return "a lamp"

        routes = {ToolStatus.error: "raise"} if self.how == "raise" else None
        return Agent(ScriptedProvider(model), tools=[lookup, buy], name="child", on_tool_status=routes)

    def parent(self) -> Agent[Any]:
        async def model(request: LLMRequest) -> Any:
            tools = [m for m in request.messages if m.role == "tool"]
            if not tools:
                return [ToolCall("d1", "child", {"input": "order a lamp"})]
            self.heard.append(tools[-1].content)
            return f"parent heard: {tools[-1].content}"

        return Agent(ScriptedProvider(model), tools=[self.child.as_tool()], name="parent")


async def _crashed(db: str, family: Family) -> tuple[RunResult[Any], str, str]:
    """The parent run to its end, then its tool step and end undone as a crash before that step's commit leaves
    them (the child's rows as it ended): the first result, the parent's and the child's run ids."""
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        _child = family.child.bind(rt)  # (held: a runtime keeps bound agents weakly)
        first: RunResult[Any] = await family.parent().bind(rt).run("shop for me")
    parent_id = first.run_id
    ((child_id,),) = sql(db, "SELECT run_id FROM agentactors_runs WHERE parent_run_id = ?", parent_id)
    sql(db, "UPDATE agentactors_steps SET results = NULL WHERE run_id = ? AND step = 1", parent_id)
    sql(db, "DELETE FROM agentactors_steps WHERE run_id = ? AND step > 1", parent_id)
    sql(db, "UPDATE agentactors_runs SET status = 'running', ended = NULL, content = NULL, owner = NULL,"
            " lease_until = NULL WHERE run_id = ?", parent_id)
    return first, str(parent_id), str(child_id)


async def _recovered(db: str, family: Family) -> RunResult[Any]:
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        _held = family.parent().bind(rt), family.child.bind(rt)
        with anyio.fail_after(30):
            results: list[RunResult[Any]] = await rt.recover()
        assert await journal.unfinished() == []
    (recovered,) = results
    return recovered


@pytest.mark.parametrize(("how", "status"), [("raise", "raised"), ("pause", "paused")])
async def test_a_child_that_raised_or_paused_is_served_as_it_ended_in_its_recovered_parent(
    db: str, how: str, status: str
) -> None:
    """The parent's tool reads the error it read live (``ToolStatusError``; the paused child's ``DelegationError``),
    the recovered parent answers as the live one did, and the child is neither asked nor run again — before, its
    begin failed the journal's owner check and the tool read ``LeaseLostError``."""
    family = Family(how)
    first, _, child_id = await _crashed(db, family)
    ((recorded,),) = sql(db, "SELECT status FROM agentactors_runs WHERE run_id = ?", child_id)
    assert recorded == status
    (live,) = family.heard
    assert ("ToolStatusError" if how == "raise" else "it asked for approval (buy)") in live
    asked, ran = family.asked, family.ran
    recovered = await _recovered(db, family)
    assert family.heard == [live, live]  # the tool result the live parent's model read, read again
    assert recovered.content == first.content and "LeaseLost" not in recovered.content
    assert (family.asked, family.ran) == (asked, ran)  # no model asked, no tool run again
    (child,) = recovered.children
    (child_first,) = first.children
    assert child.run_id == child_first.run_id == child_id
    assert type(child.error) is type(child_first.error)
    assert (child.paused, child.steps, child.messages) == (child_first.paused, child_first.steps, child_first.messages)
    if how == "pause":
        assert [c.name for c in child.pending_approvals] == ["buy"]
    assert sql(db, "SELECT status FROM agentactors_runs WHERE run_id = ?", child_id) == [(status,)]  # as it ended


@pytest.mark.parametrize(("how", "status"), [("refused", "raised"), ("failed", "finished")])
async def test_a_child_that_ended_past_its_recording_is_not_asked_again(db: str, how: str, status: str) -> None:
    """A child that ended at a model call its recording does not hold (its response refused by the journal, or the
    call failed) ends there when served whole — a ``ReplayDivergedError`` the parent's tool reads as the child's
    failure — instead of asking its model again and going on with nothing committed."""
    family = Family(how)
    _, _, child_id = await _crashed(db, family)
    assert sql(db, "SELECT status FROM agentactors_runs WHERE run_id = ?", child_id) == [(status,)]
    (live,) = family.heard
    assert ("JournalFormatError" if how == "refused" else "the model broke") in live
    asked, ran = family.asked, family.ran
    recovered = await _recovered(db, family)
    assert (family.asked, family.ran) == (asked, ran)  # the call its recording lacks was not asked again
    again = family.heard[-1]
    assert "LeaseLost" not in again and "ReplayDivergedError" in again and f"run {child_id!r}" in again
    assert recovered.content == f"parent heard: {again}"
    (child,) = recovered.children
    assert child.run_id == child_id and not child.ok
    assert sql(db, "SELECT status FROM agentactors_runs WHERE run_id = ?", child_id) == [(status,)]
