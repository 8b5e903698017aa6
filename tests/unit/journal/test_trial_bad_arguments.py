"""Arguments of the wrong kind to ``replay``, ``fork``, ``explain_fork`` and ``rt.recover()`` are a ``TypeError``
saying which argument, before anything is read or run.

They were an ``AttributeError`` from deep inside (``'str' object has no attribute 'provider'`` for ``agent="shop"``,
``... 'bound'`` for ``runtime="rt"``, ``... 'forked_from'``), a ``RunNotRecordedError`` for a run id that is no
string (``holds no run 5``), or nothing at all: ``agents="shop"`` was read as the agents ``'s'``, ``'h'``... and
``recover(agents=[1])`` dropped the 1 — each found no agent, and the run was replayed by one made from the
recording, or left unrecovered, with no word of the mistake.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agentactors import Agent, Runtime, SqliteJournal, fork, replay
from agentactors.journal import explain_fork
from agentactors.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.anyio


def _shop() -> Agent[Any]:
    return Agent(ScriptedProvider(["Sunny."]), name="shop")


async def _journaled(path: Path) -> str:
    async with SqliteJournal(path) as journal, Runtime(journal=journal):
        result = await _shop().run("Weather?")
    return result.run_id or ""


Call = Callable[[SqliteJournal, str], Awaitable[object]]

WRONG: dict[str, tuple[Call, str]] = {
    "replay: a run id that is no string": (lambda j, r: replay(j, 5), "run_id"),  # type: ignore[arg-type]
    "replay: an agent that is a name": (lambda j, r: replay(j, r, agent="shop"), "agent"),  # type: ignore[arg-type]
    "replay: a runtime that is no Runtime": (lambda j, r: replay(j, r, runtime="rt"), "runtime"),  # type: ignore[arg-type]
    "replay: agents given as a string": (lambda j, r: replay(j, r, agents="shop"), "agents"),  # type: ignore[arg-type]
    "replay: agents holding a non-agent": (lambda j, r: replay(j, r, agents=[_shop(), 1]), "agents"),  # type: ignore[list-item]
    "fork: a run id that is no string": (lambda j, r: fork(j, None, 2, agent=_shop()), "run_id"),  # type: ignore[arg-type]
    "fork: an agent that is a name": (lambda j, r: fork(j, r, 1, agent="shop"), "agent"),  # type: ignore[arg-type]
    "fork: a runtime that is no Runtime": (lambda j, r: fork(j, r, 1, runtime="rt"), "runtime"),  # type: ignore[arg-type]
    "fork: agents given as a string": (lambda j, r: fork(j, r, 1, agents="shop"), "agents"),  # type: ignore[arg-type]
    "explain_fork: no RunResult": (lambda j, r: explain_fork("run-1", j), "forked"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("case", sorted(WRONG))
async def test_a_wrong_kind_of_argument_is_a_type_error_naming_it(tmp_path: Path, case: str) -> None:
    path = tmp_path / "runs.db"
    run_id = await _journaled(path)
    call, named = WRONG[case]
    async with SqliteJournal(path) as journal:
        with pytest.raises(TypeError, match=rf"^{named} "):
            await call(journal, run_id)


@pytest.mark.parametrize("agents", ["shop", [1], [_shop(), object()]])  # (an object with a name runs as one)
async def test_recover_refuses_agents_that_are_not_agents(tmp_path: Path, agents: Any) -> None:
    async with SqliteJournal(tmp_path / "runs.db") as journal, Runtime(journal=journal) as rt:
        with pytest.raises(TypeError, match=r"^agents "):
            await rt.recover(agents=agents)


async def test_an_unnamed_agent_is_an_agent_for_recover_and_replay(tmp_path: Path) -> None:
    # Agent.name defaults to None: a runtime's bound agents are handed to recover() whatever their names, and an
    # unnamed agent's run is found by the unnamed agent.  (A first version of the argument check took a missing
    # name for "not an Agent": one unnamed bound agent made every recovery raise.)
    unnamed = Agent(ScriptedProvider(["Sunny.", "Sunny."]))
    path = tmp_path / "runs.db"
    async with SqliteJournal(path) as journal, Runtime(journal=journal) as rt:
        run_id = (await unnamed.run("Weather?")).run_id or ""
        kept = unnamed.bind(rt)
        assert await rt.recover() == [] and kept is not None
        assert await rt.recover(agents=[unnamed, _shop()]) == []
        assert (await replay(journal, run_id, agents=[unnamed])).content == "Sunny."
        assert (await fork(journal, run_id, 1, agent=unnamed)).content == "Sunny."
