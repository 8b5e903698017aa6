"""A stream with no Runtime running (the handle opens a private one) whose consumer goes away from another task.

A web framework's response body — ``async with agent.stream(p) as run: async for ev in run: yield ...`` — that
it drops when the client goes away is finalised in another task than the one that iterated it (trio: a system
task; asyncio: a task of ``shutdown_asyncgens``' kind); so is a standalone ``agent.stream(p).text_stream()``
dropped half-read, and a handle entered with ``await run.__aenter__()`` and dropped.  The private runtime's
task group was a cancel scope of the consumer's task, left from that other task: trio's cancel scope and
nursery stacks were corrupted (``TrioInternalError``) and asyncio cancelled the caller's own task.  Now the
private runtime lives in a task of its own: each case cancels the run, closes the runtime, and the caller goes
on untouched — on both backends, with warnings and unraisable exceptions as errors.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors import Agent, AgentRun, InMemoryRecorder, LLMRequest, Runtime, StreamEnd, TextDelta
from agentactors.messages import StreamEvent
from tests.support.trickle import Trickle

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.virtual_time,
    # trio warns of any async generator collected before it was exhausted: the one each test drops on purpose
    # (its consumer's, not the library's — one of the library's own, e.g. ``Agent._private``, still fails).
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(tests\.unit\.agent\.test_run_private_runtime_consumer_gone\..*\.events"
        r"|agentactors\.agent\.run\.AgentRun\.(_values|_debounced|_partials))' was garbage collected:ResourceWarning"
    ),
]

ANSWER = "one two three four five six seven"


class SlowTrickle(Trickle):
    """Streams its answer a word every 0.1 s: a run still going when its consumer leaves after one piece."""

    def stream(self, request: LLMRequest) -> Any:
        response = self._next(request)

        async def events() -> AsyncGenerator[StreamEvent, None]:
            for i, word in enumerate(response.content.split(" ")):
                await anyio.sleep(0.1)
                yield TextDelta(word if i == 0 else " " + word)
            yield StreamEnd(response)

        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            gen = events()
            try:
                yield gen
            finally:
                await gen.aclose()

        return cm()


def slow_agent() -> Agent[Any]:
    return Agent(SlowTrickle([ANSWER]))


async def settle() -> None:
    """Let finalisers run: a collected generator's ``aclose()`` is scheduled, then run in its own task."""
    for _ in range(3):
        gc.collect()
        await anyio.sleep(0.5)


def no_loop_errors(caplog: pytest.LogCaptureFixture) -> None:
    """Neither backend logged a failure: asyncio's "Task exception was never retrieved" / "error ... closing of
    asynchronous generator", trio's "Exception ignored during finalization of async generator"."""
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not bad, [r.getMessage() for r in bad]


async def test_a_web_style_generator_dropped_after_one_delta_cancels_its_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handles: list[AgentRun[Any]] = []

    async def events(agent: Agent[Any]) -> AsyncGenerator[str, None]:
        async with agent.stream("hi") as run:
            handles.append(run)
            async for event in run:
                yield event.type

    before = Runtime.running_in_process()
    gen = events(slow_agent())
    async for kind in gen:
        if kind == "llm.text_delta":
            break
    del gen
    await settle()
    (run,) = handles
    assert run.done and run.result.cancelled
    assert Runtime.running_in_process() == before, "the private runtime was closed"
    no_loop_errors(caplog)


async def test_a_web_style_generator_left_by_a_cancelled_scope_then_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The consumer's own scope ends while the generator is suspended inside the stream (a request timeout):
    leaving that scope must not meet the private runtime's scope still open in the same task."""
    handles: list[AgentRun[Any]] = []

    async def events(agent: Agent[Any]) -> AsyncGenerator[str, None]:
        async with agent.stream("hi") as run:
            handles.append(run)
            async for event in run:
                yield event.type

    gen = events(slow_agent())
    with anyio.move_on_after(0.15):
        async for _ in gen:
            pass
    del gen
    await settle()
    (run,) = handles
    assert run.done and run.result.cancelled
    no_loop_errors(caplog)


async def test_a_web_style_generator_closed_by_its_consumer_still_cancels_and_waits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The same task closing the generator (``aclosing``): the run is cancelled and ended by the time it returns."""
    handles: list[AgentRun[Any]] = []

    async def events(agent: Agent[Any]) -> AsyncGenerator[str, None]:
        async with agent.stream("hi") as run:
            handles.append(run)
            async for event in run:
                yield event.type

    before = Runtime.running_in_process()
    async with aclosing(events(slow_agent())) as gen:
        async for kind in gen:
            if kind == "llm.text_delta":
                break
    (run,) = handles
    assert run.done and run.result.cancelled
    assert Runtime.running_in_process() == before
    no_loop_errors(caplog)


@pytest.mark.parametrize("view", ["text", "debounced", "partials"])
async def test_a_standalone_view_dropped_by_its_consumer_cancels_its_run(
    view: str, caplog: pytest.LogCaptureFixture
) -> None:
    """As a web framework uses it: the view is all it holds (the handle lives as long as its view does)."""
    before = Runtime.running_in_process()
    recorder = InMemoryRecorder()
    stream = Agent(SlowTrickle([ANSWER]), recorders=[recorder]).stream("hi")
    if view == "partials":
        gen: AsyncGenerator[Any, None] = stream.partial_output()
    else:
        gen = stream.text_stream(min_interval=0.05 if view == "debounced" else None)
    del stream
    async for _ in gen:
        break
    del gen
    await settle()
    (finished,) = [e for e in recorder.events if e.type == "run.finished"]
    assert finished.data["cancelled"] is True
    assert Runtime.running_in_process() == before
    no_loop_errors(caplog)


async def test_a_handle_entered_by_hand_and_dropped_unfinished_cancels_its_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    before = Runtime.running_in_process()
    seen: list[bool] = []
    run: Any = slow_agent().stream("hi")
    await run.__aenter__()
    async for event in run:
        if event.type == "llm.text_delta":
            break
    state_done = run._state.done  # (the run's end, without the handle: it is dropped below)
    del run, event
    await settle()
    seen.append(state_done.is_set())
    assert seen == [True]
    assert Runtime.running_in_process() == before, "the private runtime was closed"
    no_loop_errors(caplog)


async def test_a_cancelled_consumer_with_a_private_runtime_cancels_the_run_and_propagates() -> None:
    before = Runtime.running_in_process()
    with anyio.move_on_after(0.15) as scope:
        async with slow_agent().stream("hi") as run:
            async for _ in run:
                pass
    assert scope.cancelled_caught
    assert run.done and run.result.cancelled
    assert Runtime.running_in_process() == before


async def test_a_private_stream_read_to_its_end_still_answers() -> None:
    async with slow_agent().stream("hi") as run:
        text = "".join([t async for t in run.text_stream()])
    assert text == ANSWER and run.result.ok and run.result.output == ANSWER
