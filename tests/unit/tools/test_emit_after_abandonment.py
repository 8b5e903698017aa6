"""``ToolContext.emit`` from a sync tool's thread its call abandoned (timed out, cancelled) is dropped.

The docstring promises it: nothing of a call reaches the recorders after its ``tools.finished`` (nor after
its run's ``run.finished``).  The thread checks (``anyio.from_thread.check_cancelled``), and so does the
loop when it delivers the event: the call may be abandoned between the thread's check and the delivery.

Real worker threads: real time, with generous bounds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.from_thread
import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ScriptedProvider, ToolCall, ToolContext, tool
from agentactors.events import EventSink, use_sink
from agentactors.tools import ToolStatus
from agentactors.tools.executor import ToolExecutorActor

pytestmark = pytest.mark.anyio


class _Gates:
    """The tool's thread waits for ``release`` before emitting, and sets ``done`` once it has emitted."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.done = threading.Event()
        self.errors: list[BaseException] = []


@pytest.fixture
def gates() -> Iterator[_Gates]:
    g = _Gates()
    yield g
    g.release.set()  # never leave a thread waiting


def _slow_tool(g: _Gates) -> Any:
    @tool(timeout=0.2)
    def slow(ctx: ToolContext) -> str:
        """Slow, reporting progress after its caller left."""
        try:
            g.release.wait(30)
            ctx.emit("tools.progress", pct=50)
        except BaseException as exc:  # emit must not raise in an abandoned thread
            g.errors.append(exc)
        finally:
            g.done.set()
        return "late"

    return slow


async def _thread_done(g: _Gates) -> None:
    # Waited for in a worker thread: the loop stays free to deliver what the tool's thread sends it.
    assert await anyio.to_thread.run_sync(g.done.wait, 30)


def _after_finished(rec: InMemoryRecorder) -> list[str]:
    types = [e.type for e in rec.events]
    return types[types.index("tools.finished") + 1 :]


async def test_an_abandoned_threads_event_is_dropped(gates: _Gates) -> None:
    rec = InMemoryRecorder()
    ex = ToolExecutorActor([_slow_tool(gates)])
    with use_sink(EventSink([rec], run_id="run-1")):
        (result,) = await ex.execute([ToolCall("c1", "slow", {})])
        assert result.status is ToolStatus.timeout
        gates.release.set()
        await _thread_done(gates)
    assert gates.errors == []
    assert rec.of_type("tools.progress") == []
    assert "tools.progress" not in _after_finished(rec)


async def test_the_loop_drops_it_when_the_call_was_abandoned_after_the_threads_check(
    gates: _Gates, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race: the thread's check passed, then the call was abandoned before the loop delivered the event.
    monkeypatch.setattr(anyio.from_thread, "check_cancelled", lambda: None)
    rec = InMemoryRecorder()
    ex = ToolExecutorActor([_slow_tool(gates)])
    with use_sink(EventSink([rec], run_id="run-1")):
        (result,) = await ex.execute([ToolCall("c1", "slow", {})])
        assert result.status is ToolStatus.timeout
        gates.release.set()
        await _thread_done(gates)
    assert gates.errors == []
    assert rec.of_type("tools.progress") == []


async def test_nothing_of_the_call_arrives_after_the_run_finished(gates: _Gates) -> None:
    rec = InMemoryRecorder()
    agent = Agent(
        ScriptedProvider([[ToolCall("c1", "slow", {})], "final"]), tools=[_slow_tool(gates)], recorders=[rec]
    )
    async with Runtime():
        result = await agent.run("go")
        gates.release.set()
        await _thread_done(gates)
    assert result.content == "final"
    assert rec.events[-1].type == "run.finished"
    assert rec.of_type("tools.progress") == []


async def test_a_call_still_running_delivers_its_events(gates: _Gates) -> None:
    rec = InMemoryRecorder()
    gates.release.set()
    ex = ToolExecutorActor([_slow_tool(gates)])
    with use_sink(EventSink([rec], run_id="run-1")):
        (result,) = await ex.execute([ToolCall("c1", "slow", {})])
    assert result.status is ToolStatus.ok
    assert [e.type for e in rec.events] == ["tools.started", "tools.progress", "tools.finished"]
