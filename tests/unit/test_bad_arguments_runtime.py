"""``Runtime(...)`` refuses, when it is made, an argument it could not use — naming the parameter.

Before: ``Runtime(InMemoryRecorder())`` (one recorder, not a list) was "'InMemoryRecorder' object is not
iterable"; ``Runtime([InMemoryRecorder])`` (the class) was accepted and every event was a logged recorder
failure; ``Runtime(journal=1)`` or ``journal="runs.db"`` (a path, not a journal) was accepted and every run
then failed with ``AttributeError: ... has no attribute 'open_run'``.  Valid forms keep working.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ScriptedProvider, SqliteJournal


def _id(value: object) -> str:
    # Stable across processes (pytest-xdist): no address in an id.
    if isinstance(value, type):
        return f"class-{value.__name__}"
    if isinstance(value, list):
        return "[" + ",".join(_id(v) for v in value) + "]"
    return repr(value) if isinstance(value, int | float | str | None) else type(value).__name__


BAD: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"recorders": InMemoryRecorder()}, TypeError, "recorders takes a list"),
    ({"recorders": None}, TypeError, "recorders takes a list"),
    ({"recorders": "jsonl"}, TypeError, "recorders takes a list"),
    ({"recorders": [InMemoryRecorder]}, TypeError, "class InMemoryRecorder"),
    ({"recorders": [1]}, TypeError, "record"),
    ({"journal": 1}, TypeError, "journal"),
    ({"journal": "runs.db"}, TypeError, "journal"),
    ({"journal": SqliteJournal}, TypeError, "journal"),
    ({"drain_timeout": math.nan}, ValueError, "drain_timeout"),
    ({"drain_timeout": True}, TypeError, "drain_timeout"),
    ({"cost_limit": -1}, ValueError, "cost_limit"),
]


@pytest.mark.parametrize(
    ("kwargs", "error", "says"), BAD, ids=[f"{next(iter(k))}={_id(next(iter(k.values())))}" for k, _, _ in BAD]
)
def test_runtime_refuses_bad_argument_when_made(kwargs: dict[str, Any], error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        Runtime(**kwargs)


@pytest.mark.anyio
async def test_runtime_keeps_valid_arguments(tmp_path: Any) -> None:
    rec = InMemoryRecorder()
    Runtime((rec,))
    Runtime(iter([rec]))  # any iterable of recorders
    Runtime(drain_timeout=0)
    async with SqliteJournal(tmp_path / "runs.db") as journal, Runtime([rec], journal=journal) as rt:
        result = await Agent(ScriptedProvider(["ok"])).run("hi", runtime=rt)
    assert result.ok and result.content == "ok"
    assert any(e.type == "run.started" for e in rec.events)
