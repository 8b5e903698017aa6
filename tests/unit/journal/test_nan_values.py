"""NaN and its kin in what a run journals, on SQLite and PostgreSQL: read back, never accepted and then unloadable.

A run journals its model's responses (tool calls whose arguments a model wrote: ``NaN``, ``1e999``; a custom
provider's usage: ``None``, NaN, ``"12"``), its tools' results, its usage.  Python's ``json`` writes and reads
``NaN`` and ``Infinity``; ``int(NaN)`` does not — a usage count of NaN was written and the run could never be
loaded, replayed or recovered again.  Now Usage holds counts only; the rest reads back as it was written.  The
session codec is checked the same way (a session turn on a real SQLite file).  Real files and a real server.
"""

from __future__ import annotations

import math
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, LLMRequest, LLMResponse, Runtime, ToolCall, replay, tool
from agentactors.journal import SqliteJournal
from agentactors.messages import StopReason, Usage
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import SqliteStore
from agentactors.tools import ToolStatus
from tests.support.journals import Make
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio


HOSTILE_USAGE = Usage(input_tokens=math.nan, output_tokens="12", cache_read_tokens=None)  # type: ignore[arg-type]




@tool
async def stats(p: float) -> dict[str, float]:
    """Statistics of a probability (a ratio that is NaN when undefined)."""
    return {"p": p, "ratio": math.nan, "top": math.inf}


def model(request: LLMRequest) -> Any:
    """NaN arguments (refused), then good ones (the tool returns a NaN: its error, JSON cannot carry it), then the
    answer."""
    last = request.messages[-1]
    if last.role == "user":
        calls = (ToolCall.from_raw("c1", "stats", '{"p": NaN}'), ToolCall("c2", "stats", {"p": math.inf}))
        return LLMResponse("", calls, StopReason.tool_use, usage=HOSTILE_USAGE,
                           provider_data={"vendor": {"score": math.nan, "limit": -math.inf}})
    if last.tool_call_id == "c2":
        return LLMResponse("", (ToolCall("c3", "stats", {"p": 0.5}),), StopReason.tool_use, usage=Usage(7, 3))
    return LLMResponse("done", usage=Usage(5, 1))


def same(a: Any, b: Any) -> bool:
    """Equal, a NaN equal to a NaN (which ``==`` never says)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


async def test_nan_in_arguments_results_and_usage_is_journaled_and_read_back(make: Make) -> None:
    with anyio.fail_after(60):
        async with make() as journal, Runtime(journal=journal):
            result = await Agent(ScriptedProvider(model), tools=[stats], name="nan").run("go")
        assert result.content == "done" and result.error is None
        statuses = [m.content.splitlines()[0] for m in result.messages if m.role == "tool"]
        assert statuses[0].startswith("Invalid arguments") and statuses[1].startswith("Invalid arguments")
        assert "NaN" in result.messages[-2].content  # the tool's own NaN: its error says JSON cannot carry it
        assert result.usage == Usage(12, 4)  # NaN and None read as none reported, "12" too
        async with make() as journal:
            recorded = await journal.load_run(result.run_id or "")  # raised: int(NaN) on the usage
            first = recorded.steps[0]
            assert first.response.usage == Usage()
            assert same(first.response.tool_calls[0].arguments, {"p": math.nan})
            assert first.response.tool_calls[1].arguments == {"p": math.inf}
            assert same(first.response.provider_data, {"vendor": {"score": math.nan, "limit": -math.inf}})
            assert first.results is not None and [r.status for r in first.results] == [ToolStatus.invalid] * 2
            second = recorded.steps[1]
            assert second.results is not None and second.results[0].content == result.messages[-2].content
            again = await replay(journal, result.run_id or "")
        assert again.content == "done" and again.usage == result.usage


async def test_a_usage_an_older_version_journaled_as_nan_loads(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with anyio.fail_after(60):
        async with SqliteJournal(path) as journal, Runtime(journal=journal):
            result = await Agent(ScriptedProvider(["hello"]), name="old").run("hi")
        # what an older version wrote for Usage(input_tokens=NaN, "12")
        with closing(sqlite3.connect(path)) as conn, conn:
            (text,) = conn.execute("SELECT response FROM agentactors_steps").fetchone()
            assert '"usage"' not in text
            conn.execute(
                "UPDATE agentactors_steps SET response = ?",
                (text[:-1] + ', "usage": {"input_tokens": NaN, "output_tokens": "12"}}',),
            )
        async with SqliteJournal(path) as journal:
            recorded = await journal.load_run(result.run_id or "")
        assert recorded.steps[0].response.usage == Usage(0, 12)


async def test_a_session_turn_holding_nan_is_committed_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with anyio.fail_after(30):
        async with Runtime() as rt:
            session = rt.session(Agent(ScriptedProvider(model), tools=[stats]), "k", store=SqliteStore(path))
            result = await session.send("go")
            assert result.ok and result.content == "done"
            history = session.history
        async with Runtime() as rt:  # another runtime, a new store on the file
            again = await rt.session(Agent(ScriptedProvider([])), "k", store=SqliteStore(path)).refresh()
    assert len(again.history) == len(history)
    for stored, kept in zip(again.history, history, strict=True):
        assert stored.content == kept.content and stored.role == kept.role
        assert len(stored.tool_calls) == len(kept.tool_calls)
        for a, b in zip(stored.tool_calls, kept.tool_calls, strict=True):
            assert a.id == b.id and same(a.arguments, b.arguments)
