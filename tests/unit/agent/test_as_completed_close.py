"""``as_completed`` left early: closing it ends its runs, and so does dropping it.

``aclose()`` and the end of ``async with`` cancel the runs not finished and return once they have ended (nothing
of the iterator runs any more: ``rt.stats().busy == 0`` right after).  An iterator dropped without closing it — a
``break`` and no ``async with``, a web framework's response generator (``async for r in agent.as_completed(ps):
yield r``) dropped by a client that went away and finalised in another task — cancels its runs when it is
collected, as a dropped ``AgentRun`` does: they used to go on spending for nobody, and its unread results'
stream was reported unclosed (``ResourceWarning``, an error here).

``as_completed`` never opens a private runtime (no runtime running is a ``RuntimeError``): its runs live in the
caller's runtime's task group, never in a cancel scope of the consumer's task, so a consumer finalised from
another task leaves no scope behind (what ``agent.stream()`` had to fix: ``agent/_host.py``).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncGenerator

import anyio
import anyio.lowlevel
import pytest

from agentactors import Agent, LLMRequest, RunResult, Runtime, ScriptedProvider

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.virtual_time,
    # trio warns of any async generator collected before it was exhausted: the consumer's, dropped on purpose.
    pytest.mark.filterwarnings(
        r"ignore:Async generator 'tests\.unit\.agent\.test_as_completed_close\..*\.results'"
        r" was garbage collected:ResourceWarning"
    ),
]


class Slow:
    """A model that answers after the prompt's number of seconds, and notes which runs were cancelled."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.answered: list[str] = []

    async def __call__(self, request: LLMRequest) -> str:
        prompt = request.messages[-1].content
        try:
            await anyio.sleep(float(prompt))
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(prompt)
            raise
        self.answered.append(prompt)
        return f"after {prompt}"


def no_loop_errors(caplog: pytest.LogCaptureFixture) -> None:
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not bad, [r.getMessage() for r in bad]


async def settle() -> None:
    """Let finalisers run: a collected generator's ``aclose()`` is scheduled, then run in a task of its own."""
    for _ in range(3):
        gc.collect()
        await anyio.sleep(0.01)


async def test_leaving_async_with_early_returns_once_the_cancelled_runs_ended() -> None:
    model = Slow()
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model)).bind(rt)
        async with agent.as_completed(["1", "50", "60"], concurrency=3) as results:
            async for result in results:
                assert result.content == "after 1"
                break
        # No wait: closed means nothing of it runs any more.
        assert sorted(model.cancelled) == ["50", "60"]
        assert rt.stats().busy == 0 and rt.stats().tasks == 0


async def test_aclose_returns_once_the_cancelled_runs_ended() -> None:
    model = Slow()
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model)).bind(rt)
        results = agent.as_completed(["1", "50", "60", "70"], concurrency=2)
        first = await results.__anext__()
        assert first.content == "after 1"
        await results.aclose()
        assert sorted(model.cancelled) == ["50", "60"]  # "70" never started
        assert rt.stats().busy == 0 and rt.stats().tasks == 0
        with pytest.raises(StopAsyncIteration):
            await results.__anext__()
        await results.aclose()  # again: nothing to do


async def test_aclose_of_a_cancelled_consumer_still_waits_for_the_runs() -> None:
    model = Slow()
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model)).bind(rt)
        with anyio.CancelScope() as scope:
            async with agent.as_completed(["1", "50"], concurrency=2) as results:
                async for _ in results:
                    scope.cancel()
                    await anyio.lowlevel.checkpoint()  # cancelled here: the exit closes under that cancellation
        assert model.cancelled == ["50"]
        assert rt.stats().busy == 0 and rt.stats().tasks == 0


async def test_aclose_before_the_first_result_starts_nothing() -> None:
    model = Slow()
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model)).bind(rt)
        results = agent.as_completed(["1", "2"])
        await results.aclose()
        assert [r async for r in results] == []
        await anyio.sleep(5)
        assert model.cancelled == [] and model.answered == []
        assert rt.stats().tasks == 0


async def test_an_iterator_dropped_after_a_break_cancels_its_runs() -> None:
    model = Slow()
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model)).bind(rt)
        results = agent.as_completed(["1", "50", "60", "70"], concurrency=2)
        async for _result in results:
            break
        del results, _result
        await settle()
        assert sorted(model.cancelled) == ["50", "60"]
        assert rt.stats().busy == 0 and rt.stats().tasks == 0
        await anyio.sleep(100)
        assert model.answered == ["1"]  # "70" never ran


async def test_a_web_style_generator_dropped_after_one_result_cancels_the_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Finalised in another task (trio: a system task; asyncio: one of its own) while suspended at its yield."""
    model = Slow()

    async def results(agent: Agent) -> AsyncGenerator[RunResult, None]:
        async for result in agent.as_completed(["1", "50", "60"], concurrency=3):
            yield result

    async with Runtime() as rt:
        gen = results(Agent(ScriptedProvider(model)).bind(rt))
        async for _ in gen:
            break
        del gen
        await settle()
        assert sorted(model.cancelled) == ["50", "60"]
        assert rt.stats().busy == 0 and rt.stats().tasks == 0
    no_loop_errors(caplog)


async def test_an_iterator_read_to_its_end_then_dropped_leaves_nothing() -> None:
    model = Slow()
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model)).bind(rt)
        got = [r.content async for r in agent.as_completed(["2", "1"])]
        assert got == ["after 1", "after 2"]
        gc.collect()
        assert rt.stats().tasks == 0 and model.cancelled == []
