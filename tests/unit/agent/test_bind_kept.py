"""What a runtime keeps of the agents bound to it (``Runtime.keep_bound``): with a journal, the latest binding of
each name strongly — so ``agent.bind(rt)`` written as a statement is still there for ``rt.recover()`` — but no more
than the most recently bound names (a service naming an agent per user binds without bound); without a journal,
nothing strongly."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from agentactors import Agent, Runtime, ScriptedProvider
from agentactors.actors import runtime as runtime_module
from agentactors.journal.sqlite import SqliteJournal

pytestmark = pytest.mark.anyio


def _agent(name: str) -> Agent[str]:
    return Agent(ScriptedProvider(["ok"]), name=name)


async def test_the_latest_binding_of_each_name_is_kept_and_no_more_names_than_the_bound(tmp_path: Path) -> None:
    most = runtime_module._MOST_KEPT
    async with SqliteJournal(tmp_path / "runs.db") as journal, Runtime(journal=journal) as rt:
        first = weakref.ref(_agent("payer").bind(rt))
        latest = weakref.ref(_agent("payer").bind(rt))
        gc.collect()
        assert first() is None and latest() is not None  # one per name: the latest
        per_user = [weakref.ref(_agent(f"user-{i}").bind(rt)) for i in range(most + 50)]
        gc.collect()
        alive = [ref() is not None for ref in per_user]
        assert alive == [False] * 50 + [True] * most  # the names bound last
        assert latest() is None  # "payer", bound before them, is held weakly again
        assert sum(1 for _ in rt.bound) == most


async def test_without_a_journal_nothing_is_kept() -> None:
    async with Runtime() as rt:
        bound = weakref.ref(_agent("payer").bind(rt))
        gc.collect()
        assert bound() is None and not list(rt.bound)
