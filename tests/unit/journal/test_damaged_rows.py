"""A journal row edited by hand into something malformed: every use of it loads or is a typed error, never a crash.

Whatever a person (or a bad migration) writes into a journal's rows, each way in — ``load_run``, ``replay`` (with
and without the agent), ``fork``, ``unfinished`` and ``rt.recover()`` — must either work or raise a
:class:`~agentactors.journal.JournalError` naming the run, within a bound: never a ``RecursionError``, an
untyped ``ValueError``/``TypeError`` from deep inside an agent, nor a hang.  On SQLite and a real PostgreSQL; real
files, servers and threads: the real clock.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, Runtime, ToolCall, ToolContext, fork, replay, tool
from agentactors.journal import JournalError, JournalFormatError
from agentactors.providers.scripted import ScriptedProvider
from tests.support.journals import sql
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

from .crashing import open_journal

pytestmark = pytest.mark.anyio






@tool(requires_approval=True)
async def refund(ctx: ToolContext, cents: int) -> str:
    """Refund, once a person said yes."""
    return f"refunded {cents}"


@tool
async def look(ctx: ToolContext, what: str) -> str:
    """Look at something."""
    return f"seen {what}"


def _clerk(*answers: Any) -> Agent[Any]:
    return Agent(ScriptedProvider(list(answers)), tools=[refund, look], name="clerk")


async def _runs(db: str) -> tuple[str, str]:
    """A run that paused for approval, and the run that resumed it: their ids."""
    agent = _clerk(
        [ToolCall("l1", "look", {"what": "order"})], [ToolCall("r1", "refund", {"cents": 5})],
        [ToolCall("l2", "look", {"what": "card"})], "Refunded 5.",
    )
    async with open_journal(db) as journal, Runtime(journal=journal):
        paused = await agent.run("refund me")
        resumed = await agent.resume(paused, {"r1": True})
    return paused.run_id or "", resumed.run_id or ""


async def _every_way_in(db: str, run_id: str, at_step: int) -> list[str]:
    """Each way into the run: what it did (``ok`` or the JournalError's class); anything else fails the test."""
    done: list[str] = []
    ways: dict[str, Any] = {
        "load": lambda j: j.load_run(run_id),
        "replay": lambda j: replay(j, run_id, agents=[_clerk()]),
        "replay-recorded-agent": lambda j: replay(j, run_id),
        "fork": lambda j: fork(j, run_id, at_step, agent=_clerk("forked")),
        "unfinished": lambda j: j.unfinished(),
    }
    for name, way in ways.items():
        with anyio.fail_after(30):
            async with open_journal(db) as journal:
                try:
                    await way(journal)
                except JournalError as exc:
                    done.append(f"{name}: {type(exc).__name__}")
                else:
                    done.append(f"{name}: ok")
    left = "UPDATE agentactors_runs SET status = 'running', owner = NULL, lease_until = NULL WHERE run_id = ?"
    sql(db, left, run_id)  # as a crashed process's run: recover() takes it
    with anyio.fail_after(30):
        async with open_journal(db) as journal, Runtime(journal=journal) as rt:
            try:
                await rt.recover(agents=[_clerk("recovered", "recovered", "recovered")])
            except JournalError as exc:
                done.append(f"recover: {type(exc).__name__}")
            else:
                done.append("recover: ok")
    return done


# (what is edited, the statement, whether it applies to the paused run or the resumed one)
EDITS = [
    ("no input", "UPDATE agentactors_runs SET inputs = '[]' WHERE run_id = ?", "paused"),
    ("inputs not a list", "UPDATE agentactors_runs SET inputs = '{}' WHERE run_id = ?", "paused"),
    ("inputs not JSON", "UPDATE agentactors_runs SET inputs = 'nope' WHERE run_id = ?", "resumed"),
    ("origin not an object", "UPDATE agentactors_runs SET origin = '[1]' WHERE run_id = ?", "resumed"),
    ("pause not a pause", "UPDATE agentactors_runs SET origin = '{\"resume\": {}}' WHERE run_id = ?", "resumed"),
    ("its own parent", "UPDATE agentactors_runs SET parent_run_id = run_id WHERE run_id = ?", "paused"),
    ("response not JSON", "UPDATE agentactors_steps SET response = '{' WHERE run_id = ? AND step = 1", "resumed"),
    ("calls not a list", "UPDATE agentactors_steps SET response = '{\"tool_calls\": 5}' WHERE run_id = ?", "paused"),
    ("results not a list", "UPDATE agentactors_steps SET results = '{}' WHERE run_id = ? AND step = 1", "paused"),
    ("a step missing", "DELETE FROM agentactors_steps WHERE run_id = ? AND step = 1", "resumed"),
    ("a step renumbered", "UPDATE agentactors_steps SET step = 9 WHERE run_id = ? AND step = 1", "paused"),
    ("a step negative", "UPDATE agentactors_steps SET step = -1 WHERE run_id = ? AND step = 2", "resumed"),
    ("an unknown status", "UPDATE agentactors_runs SET status = 'exploded' WHERE run_id = ?", "resumed"),
]

#: A step's results that are not its calls' (step 1 of the paused run asked for ``l1``): each loaded as valid,
#: ``recover()`` ran the tool again and overwrote the row, and a replay blamed the agent.
MISMATCHED = [
    ("results emptied", "UPDATE agentactors_steps SET results = '[]' WHERE run_id = ? AND step = 1"),
    ("a result for another call", "UPDATE agentactors_steps SET results = REPLACE(results, '\"l1\"', '\"zz\"')"
     " WHERE run_id = ? AND step = 1"),
    ("a call's id changed", "UPDATE agentactors_steps SET response = REPLACE(response, '\"l1\"', '\"r1\"')"
     " WHERE run_id = ? AND step = 1"),
    ("a result twice", "UPDATE agentactors_steps SET results = SUBSTR(results, 1, LENGTH(results) - 1) || ', '"
     " || SUBSTR(results, 2) WHERE run_id = ? AND step = 1"),
]
EDITS += [(what, statement, "paused") for what, statement in MISMATCHED]


@pytest.mark.parametrize(("what", "statement", "which"), EDITS, ids=[e[0] for e in EDITS])
async def test_a_damaged_row_loads_or_is_a_typed_error_every_way_in(
    db: str, what: str, statement: str, which: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="agentactors.journal")  # the warnings naming a damaged run: expected
    paused, resumed = await _runs(db)
    run_id = paused if which == "paused" else resumed
    sql(db, statement, run_id)
    done = await _every_way_in(db, run_id, 1 if which == "paused" else 3)
    assert len(done) == 6, done


async def test_a_run_without_its_input_is_a_format_error_naming_it(db: str) -> None:
    paused, _ = await _runs(db)
    sql(db, "UPDATE agentactors_runs SET inputs = '[]' WHERE run_id = ?", paused)
    with anyio.fail_after(30):
        async with open_journal(db) as journal:
            with pytest.raises(JournalFormatError, match=f"{paused}.*no input"):
                await journal.load_run(paused)


async def test_a_cycle_of_parents_is_a_format_error_not_a_recursion(db: str) -> None:
    paused, resumed = await _runs(db)
    sql(db, "UPDATE agentactors_runs SET parent_run_id = ? WHERE run_id = ?", resumed, paused)
    sql(db, "UPDATE agentactors_runs SET parent_run_id = ? WHERE run_id = ?", paused, resumed)
    with anyio.fail_after(30):
        async with open_journal(db) as journal:
            for run_id in (paused, resumed):
                with pytest.raises(JournalFormatError, match="its own parent"):
                    await journal.load_run(run_id)


async def test_an_agent_name_that_is_not_text_is_a_format_error(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")  # SQLite keeps any type in any column; PostgreSQL's TEXT does not
    paused, _ = await _runs(db)
    sql(db, "UPDATE agentactors_runs SET agent = ? WHERE run_id = ?", b"clerk", paused)
    with anyio.fail_after(30):
        async with open_journal(db) as journal:
            with pytest.raises(JournalFormatError, match=f"{paused}.*agent"):
                await journal.load_run(paused)
            with pytest.raises(JournalFormatError):
                await replay(journal, paused)


@pytest.mark.parametrize(("what", "statement"), MISMATCHED, ids=[e[0] for e in MISMATCHED])
async def test_results_that_are_not_the_steps_calls_are_a_format_error_naming_run_and_step(
    db: str, what: str, statement: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="agentactors.journal")
    paused, _ = await _runs(db)
    sql(db, statement, paused)
    stored = sql(db, "SELECT results FROM agentactors_steps WHERE run_id = ? AND step = 1", paused)
    left = "UPDATE agentactors_runs SET status = 'running', owner = NULL, lease_until = NULL WHERE run_id = ?"
    sql(db, left, paused)
    with anyio.fail_after(30):
        async with open_journal(db) as journal:
            with pytest.raises(JournalFormatError, match=f"{paused}.*step 1"):
                await journal.load_run(paused)
        async with open_journal(db) as journal, Runtime(journal=journal) as rt:
            with pytest.raises(JournalError):
                await rt.recover(agents=[_clerk("recovered", "recovered", "recovered")])
    # Left as it is: no tool ran again over it.
    assert sql(db, "SELECT results FROM agentactors_steps WHERE run_id = ? AND step = 1", paused) == stored


async def test_a_stored_value_nesting_too_deep_is_a_format_error_naming_the_run(db: str) -> None:
    paused, _ = await _runs(db)
    deep = "[" * 100 + "]" * 100
    sql(db, "UPDATE agentactors_steps SET response = REPLACE(response, '\"order\"', ?) WHERE run_id = ? AND step = 1",
        deep, paused)
    with anyio.fail_after(30):
        async with open_journal(db) as journal:
            with pytest.raises(JournalFormatError, match=f"run '{paused}'.*response.*nests deeper") as caught:
                await journal.load_run(paused)
    assert str(caught.value).count(paused) == 1



async def test_results_under_ids_the_loop_renamed_still_load_and_replay(db: str) -> None:
    """The pairing check knows the call-id rule: a reused, an empty and an over-long id run under fresh ones."""
    long_id = "x" * 45
    agent = _clerk(
        [
            ToolCall("c1", "look", {"what": "a"}),
            ToolCall("c1", "look", {"what": "b"}),
            ToolCall("", "look", {"what": "c"}),
        ],
        [ToolCall("c1", "look", {"what": "d"}), ToolCall(long_id, "look", {"what": "e"})],
        "Seen.",
    )
    with anyio.fail_after(30):
        async with open_journal(db) as journal, Runtime(journal=journal):
            result = await agent.run("look")
        assert result.content == "Seen."
        run_id = result.run_id or ""
        async with open_journal(db) as journal:
            recorded = await journal.load_run(run_id)
            assert [len(s.results or ()) for s in recorded.steps] == [3, 2, 0]
            assert {r.call_id for s in recorded.steps for r in s.results or ()} >= {"c1", "c1_2", "call_2"}
            again = await replay(journal, run_id)
    assert again.content == "Seen."
