"""A recorder that raises never breaks the run — even when its exception cannot be printed.

``FanOut`` logs a failing recorder once (its exception's text, redacted) and goes on.  An exception whose
``__str__`` raises made that log line raise in turn, out of the ``except`` block and into the code that
emitted the event: the run failed because of a recorder.
"""

from __future__ import annotations

import logging

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ScriptedProvider
from agentactors.events import Event

pytestmark = pytest.mark.anyio


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")


class _Broken:
    def __init__(self) -> None:
        self.calls = 0

    def record(self, event: Event) -> None:
        self.calls += 1
        raise _Unprintable()


async def test_a_recorder_raising_an_unprintable_exception_does_not_break_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken, memory = _Broken(), InMemoryRecorder()
    with anyio.fail_after(10), caplog.at_level(logging.WARNING, logger="agentactors.events"):
        async with Runtime(recorders=[broken, memory]):
            result = await Agent(ScriptedProvider(["fine"])).run("hi")
    assert result.content == "fine"
    assert broken.calls == len(memory.events) > 2, "the others got every event; it was asked each time"
    (warning,) = [r for r in caplog.records if "recorder _Broken raised" in r.getMessage()]
    assert "_Unprintable" in warning.getMessage()
