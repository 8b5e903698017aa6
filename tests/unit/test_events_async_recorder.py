"""A recorder is synchronous: an ``async def record`` is refused with a clear error, never silently dropped.

``FanOut`` called ``record(event)`` and dropped what it returned: an async recorder's coroutine was never
awaited (a ``RuntimeWarning`` at garbage collection, the first time only) and the recorder never saw one
event — a run "recorded" to nowhere.  Now attaching one is a ``TypeError`` naming it, before any run; and a
``record`` that returns an awaitable anyway (a sync callable handing back a coroutine) is closed, logged once
as a failing recorder, and the other recorders still get every event, in order.
"""

from __future__ import annotations

import gc
import logging
import warnings
from collections.abc import Coroutine
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ScriptedProvider
from agentactors.events import Event, EventSink, FanOut

pytestmark = pytest.mark.anyio


class _Async:
    def __init__(self) -> None:
        self.calls = 0

    async def record(self, event: Event) -> None:
        self.calls += 1


class _HandsBackCoroutine:
    def __init__(self) -> None:
        self.calls = 0

    def record(self, event: Event) -> Coroutine[Any, Any, None]:
        self.calls += 1
        return self._later(event)

    async def _later(self, event: Event) -> None:
        raise AssertionError("never awaited, never run")


def test_an_async_recorder_is_refused_when_attached() -> None:
    with pytest.raises(TypeError, match="_Async"):
        FanOut([_Async()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="_Async"):
        Runtime(recorders=[_Async()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="record"):
        FanOut([object()])  # type: ignore[list-item]


def test_adding_an_async_recorder_to_a_fanout_is_refused() -> None:
    with pytest.raises(TypeError, match="_Async"):
        FanOut([InMemoryRecorder()]).with_recorders([_Async()])  # type: ignore[list-item]


async def test_an_agents_async_recorder_fails_the_run_at_its_start_with_a_clear_error() -> None:
    agent = Agent(ScriptedProvider(["hi"]), recorders=[_Async()])  # type: ignore[list-item]
    with anyio.fail_after(10):
        async with Runtime():
            with pytest.raises(TypeError, match="_Async"):
                await agent.run("x")


def test_a_record_returning_a_coroutine_is_closed_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    odd, memory = _HandsBackCoroutine(), InMemoryRecorder()
    sink = EventSink([odd, memory], run_id="r")  # type: ignore[list-item]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" would be an error here
        with caplog.at_level(logging.WARNING, logger="agentactors.events"):
            for i in range(5):
                sink.emit("tools.progress", n=i)
        gc.collect()
    assert odd.calls == 5
    assert [e.data["n"] for e in memory.events] == [0, 1, 2, 3, 4], "the others got every event, in order"
    (warning,) = [r for r in caplog.records if "_HandsBackCoroutine" in r.getMessage()]
    assert "awaitable" in warning.getMessage()
