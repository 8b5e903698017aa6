"""``AgentRun``, used the ways a consumer gets wrong: read slowly or not at all, waited on before it was
entered or after entering failed, cancelled then waited on, iterated twice, used after its runtime closed, read
from another thread's loop.  Each ends at once with the result or a clear error — never a hang.

Both backends; virtual time where no thread is involved (a hang then shows as ``fail_after``'s timeout).
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
import pytest

from agentactors import Agent, Runtime, ScriptedProvider
from agentactors.errors import RunFinishedError
from agentactors.messages import LLMRequest
from tests.support.foreign_loop import from_thread
from tests.support.trickle import Trickle

pytestmark = pytest.mark.anyio

ANSWER = "one two three four five six seven eight nine ten"


# --- a consumer that reads slowly, or not at all until the run has finished -----------------------------------


@pytest.mark.virtual_time
async def test_a_consumer_that_reads_nothing_until_the_run_finished_still_gets_every_piece() -> None:
    """The handle buffers the run's events without bound (docs/loop.md, "Streaming"): the run never waits for its
    reader, and a reader that comes late loses nothing — plain or debounced."""
    with anyio.fail_after(5):
        async with Runtime():
            async with Agent(Trickle([ANSWER], step=2)).stream("count") as run:
                await run.wait()  # the run finished: every event is in the buffer
                pieces = [t async for t in run.text_stream()]
            async with Agent(Trickle([ANSWER], step=2)).stream("count") as late:
                await late.wait()
                joined = [t async for t in late.text_stream(min_interval=10.0)]
    assert len(pieces) == len(ANSWER) // 2 and "".join(pieces) == ANSWER == run.result.content
    assert "".join(joined) == ANSWER and len(joined) <= 2  # the first piece at once, the rest joined


@pytest.mark.virtual_time
async def test_a_reader_slower_than_the_run_gets_the_whole_answer_in_order() -> None:
    taken: list[str] = []
    with anyio.fail_after(60):  # virtual seconds: ~17 pieces, 1 s each
        async with Runtime():
            async with Agent(Trickle([ANSWER], step=3)).stream("count") as run:
                async for text in run.text_stream():
                    taken.append(text)
                    await anyio.sleep(1)  # a slow UI: the run is done long before it has read the second piece
    assert "".join(taken) == ANSWER and run.result.ok


# --- wait() and result of a handle that never ran --------------------------------------------------------------


@pytest.mark.virtual_time
async def test_wait_on_a_handle_never_entered_says_so_instead_of_waiting_for_ever() -> None:
    run = Agent(ScriptedProvider(["never"])).stream("q")
    with anyio.fail_after(5):
        with pytest.raises(RuntimeError, match="never entered"):
            await run.wait()
    with pytest.raises(RuntimeError, match="never entered"):
        run.result  # noqa: B018


@pytest.mark.virtual_time
async def test_wait_after_entering_failed_raises_what_entering_raised() -> None:
    async with Runtime() as rt:
        pass
    run = Agent(ScriptedProvider(["never"])).stream("q", runtime=rt)  # closed: entering fails
    with pytest.raises(RuntimeError, match="has closed") as entering:
        async with run:
            pass
    with anyio.fail_after(5):
        with pytest.raises(RuntimeError, match="has closed") as waiting:
            await run.wait()
    assert waiting.value is entering.value
    assert run.done
    with pytest.raises(RuntimeError, match="has closed"):
        run.result  # noqa: B018


# --- cancel then wait; iterate twice; after the runtime closed ---------------------------------------------------


@pytest.mark.virtual_time
async def test_wait_after_cancel_returns_the_cancelled_result_and_cancel_stays_idempotent() -> None:
    started = anyio.Event()

    async def model(request: LLMRequest) -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError

    with anyio.fail_after(5):
        async with Runtime():
            async with Agent(ScriptedProvider(model)).stream("q") as run:
                await started.wait()
                run.cancel()
                first = await run.wait()
                run.cancel()
                assert await run.wait() is first
    assert first.cancelled and not first.ok and run.result is first


@pytest.mark.virtual_time
async def test_iterating_a_run_twice_gives_the_events_once_then_ends_at_once() -> None:
    with anyio.fail_after(5):
        async with Runtime():
            async with Agent(ScriptedProvider(["hi"])).stream("q") as run:
                first = [e.type async for e in run]
                second = [e.type async for e in run]
                text = [t async for t in run.text_stream()]
    assert first[0] == "run.started" and first[-1] == "run.finished"
    assert second == [] and text == []


@pytest.mark.virtual_time
async def test_a_handle_used_after_its_runtime_closed_answers_from_its_result() -> None:
    with anyio.fail_after(5):
        async with Runtime():
            async with Agent(ScriptedProvider(["hi"])).stream("q") as run:
                await run.wait()
        assert (await run.wait()).content == "hi" == run.result.content
        assert run.done and run.state().finished
        assert [t async for t in run.text_stream()] == []
        assert [v async for v in run.partial_output()] == ["hi"]  # no piece left to read: the final value
        run.cancel()  # no effect once finished
        with pytest.raises(RunFinishedError):
            await run.steer("too late")
        with pytest.raises(RuntimeError, match="only once"):
            async with run:
                pass


# --- read from another thread's event loop -----------------------------------------------------------------------


@pytest.mark.parametrize("foreign", ["asyncio", "trio"])
@pytest.mark.parametrize("view", ["events", "text", "debounced", "partial"])
async def test_reading_the_stream_from_another_threads_loop_is_refused_at_once(foreign: str, view: str) -> None:
    """The run's events are written and woken in the runtime's loop: read from another loop, the reader waited for
    ever (asyncio in asyncio, trio in trio), failed with that loop's own error, or broke the run's recorder (a
    trio runtime).  Refused at once, naming the way; the run and its stream are untouched."""
    gate = anyio.Event()

    async def model(request: LLMRequest) -> str:
        await gate.wait()
        return "hello world"

    async def read(run: Any) -> list[Any]:
        if view == "events":
            return [e async for e in run]
        if view == "text":
            return [t async for t in run.text_stream()]
        if view == "debounced":
            return [t async for t in run.text_stream(min_interval=0.1)]
        return [v async for v in run.partial_output()]

    with anyio.fail_after(10):
        async with Runtime():
            async with Agent(ScriptedProvider(model)).stream("q") as run:
                outcome = await from_thread(foreign, lambda: read(run))
                gate.set()
                text = [t async for t in run.text_stream()]
    assert isinstance(outcome, RuntimeError) and "rt.call" in str(outcome), outcome
    assert "".join(text) == "hello world" and run.result.ok


@pytest.mark.parametrize("view", ["debounced", "partials"])
async def test_a_view_left_early_closes_the_generator_inside_it(view: str) -> None:
    """A consumer leaving a debounced ``text_stream`` (or ``partial_output``) early — a cancelled HTTP response —
    closed only the outer generator: the inner one was left to the garbage collector, which trio reports as an
    async generator never exhausted (a ResourceWarning the suite fails on)."""
    import gc

    async with Runtime():
        async with Agent(Trickle([ANSWER], step=2)).stream("count") as run:
            pieces = run.text_stream(min_interval=0.001) if view == "debounced" else run.partial_output()
            async for _ in pieces:
                break
            await pieces.aclose()
            gc.collect()
        gc.collect()


@pytest.mark.parametrize("view", ["plain", "debounced", "partials"])
async def test_a_view_its_consumer_left_is_closed_by_the_runs_exit(view: str) -> None:
    """``async for text in run.text_stream(...)`` inside ``async with agent.stream(...) as run:``, left early and
    never closed — the Starlette example's body, when its client went away: the view was left to the garbage
    collector, which trio reports as an async generator never exhausted.  The run's exit closes it."""
    import gc

    async with Runtime():
        async with Agent(Trickle([ANSWER], step=2)).stream("count") as run:
            if view == "partials":
                pieces: Any = run.partial_output()
            else:
                pieces = run.text_stream(min_interval=0.001 if view == "debounced" else None)
            async for _ in pieces:
                break
        gc.collect()
        with pytest.raises(StopAsyncIteration):  # closed: nothing more comes
            await pieces.__anext__()
