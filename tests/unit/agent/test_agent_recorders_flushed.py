"""An agent's own recorders (``Agent(..., recorders=[...])``) are flushed when the runtime that ran it exits.

A runtime flushed only the recorders it was given: a ``JsonlRecorder`` attached to an agent kept the last runs'
records in its buffer after ``async with Runtime()`` was left — lost if the process then ended without closing it.
Now every agent that ran in a runtime has its recorders flushed at that runtime's exit, each once, alongside the
runtime's own; the runtime holds the agent weakly (a dropped agent is not kept alive for it).
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, JsonlRecorder, Runtime, ScriptedProvider

pytestmark = pytest.mark.anyio


class Flushing:
    def __init__(self) -> None:
        self.flushed = 0
        self.events = 0

    def record(self, event: object) -> None:
        self.events += 1

    def flush(self) -> None:
        self.flushed += 1


class BrokenFlush(Flushing):
    def flush(self) -> None:
        raise OSError("disk full")


async def test_an_agents_jsonl_recorder_is_flushed_when_the_runtime_exits(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    with JsonlRecorder(path) as jsonl:
        agent = Agent(ScriptedProvider(["one", "two"]), recorders=[jsonl])
        with anyio.fail_after(10):
            async with Runtime():
                await agent.run("hi")
                await agent.run("hi")
                assert path.read_text() == "", "buffered while the runtime runs"
        assert path.read_text().count('"run.finished"') == 2, "both runs' records are on disk once it has left"


async def test_each_recorder_is_flushed_once_whoever_holds_it(caplog: pytest.LogCaptureFixture) -> None:
    shared, own, runtimes, broken = Flushing(), Flushing(), Flushing(), BrokenFlush()
    first = Agent(ScriptedProvider("a"), name="first", recorders=[shared, own, runtimes, broken])
    second = Agent(ScriptedProvider("b"), name="second", recorders=[shared, InMemoryRecorder()])
    unused = Flushing()
    Agent(ScriptedProvider("c"), name="idle", recorders=[unused])
    with anyio.fail_after(10):
        async with Runtime(recorders=[runtimes]):
            await first.run("hi")
            await second.run("hi")
            await first.run("hi")
            assert (shared.flushed, own.flushed, runtimes.flushed) == (0, 0, 0)
    assert (shared.flushed, own.flushed, runtimes.flushed) == (1, 1, 1), "once each, a raising flush aside"
    assert shared.events > 0 and own.events > 0
    assert unused.flushed == 0, "an agent that never ran in the runtime is not its business"
    assert any("disk full" in r.getMessage() for r in caplog.records)


async def test_an_agents_recorders_are_flushed_by_each_runtime_it_ran_in() -> None:
    recorder = Flushing()
    agent = Agent(ScriptedProvider(["one", "two", "three"]), recorders=[recorder])
    with anyio.fail_after(10):
        async with Runtime():
            await agent.run("hi")
        assert recorder.flushed == 1
        async with Runtime():
            await agent.run("hi")
        assert recorder.flushed == 2
        await agent.run("hi")  # no runtime: the private one it makes for the run exits with the run
        assert recorder.flushed == 3


async def test_the_runtime_does_not_keep_an_agent_it_ran_alive() -> None:
    recorder = Flushing()
    agent = Agent(ScriptedProvider("ok"), recorders=[recorder])
    gone = weakref.ref(agent)
    with anyio.fail_after(10):
        async with Runtime():
            await agent.run("hi")
            del agent
            gc.collect()
            assert gone() is None, "the runtime holds no strong reference to an agent that ran in it"
    assert recorder.flushed == 0, "a dropped agent's recorders went with it"
