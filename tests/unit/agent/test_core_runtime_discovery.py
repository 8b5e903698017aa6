"""Which runtime a run uses: runtime=, a bound agent, the current one, a private one — and the warning a server gets.

A web server runs request handlers in tasks that do not inherit its lifespan's context: the lifespan's Runtime
is not ``Runtime.current()`` there.  These tests build that situation without a server: the "lifespan" is one
task that enters the runtime and waits; the "handlers" are its siblings, started before it, which never see its
context.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, JsonlRecorder, LLMRequest, ProviderActor, Runtime, ScriptedProvider
from agentactors.events import RunFinished

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def lifespan(**runtime_kwargs: Any) -> AsyncIterator[tuple[Runtime, anyio.abc.TaskGroup]]:
    """A runtime entered by a task of its own, and a task group whose tasks (the handlers) do not see it."""
    rt = Runtime(**runtime_kwargs)
    entered, leave = anyio.Event(), anyio.Event()

    async def hold() -> None:
        async with rt:
            entered.set()
            await leave.wait()

    async with anyio.create_task_group() as tg:
        handlers: list[Any] = []
        async with anyio.create_task_group() as requests:
            tg.start_soon(hold)
            await entered.wait()
            handlers.append(requests)
            yield rt, requests
        leave.set()


def counting_provider(max_seen: list[int], gate: anyio.Event | None = None) -> ScriptedProvider:
    """A model that notes how many of its calls are in flight at once."""
    in_flight = [0]

    async def answer(request: LLMRequest) -> str:
        in_flight[0] += 1
        max_seen[0] = max(max_seen[0], in_flight[0])
        try:
            await anyio.sleep(0.01)
            if gate is not None:
                await gate.wait()
        finally:
            in_flight[0] -= 1
        return "ok"

    return ScriptedProvider(answer)


async def test_handlers_do_not_see_the_lifespan_runtime_as_current() -> None:
    async with lifespan() as (rt, requests):
        seen: list[Runtime | None] = []

        async def handler() -> None:
            seen.append(Runtime.current())

        requests.start_soon(handler)
    assert seen == [None] and rt.closed


async def test_a_bound_agent_shares_the_lifespan_providers_budget_and_recorders() -> None:
    recorder = InMemoryRecorder()
    max_seen = [0]
    provider = counting_provider(max_seen)
    results: list[str] = []
    async with lifespan(recorders=[recorder]) as (rt, requests):
        ProviderActor.shared(rt, provider, max_concurrency=2)
        agent = Agent(provider).bind(rt)

        async def handler() -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # a bound agent never warns
                results.append((await agent.run("hi")).content)

        for _ in range(6):
            requests.start_soon(handler)
    assert results == ["ok"] * 6
    assert max_seen[0] == 2, "the shared ProviderActor's max_concurrency held across the handlers"
    assert sum(isinstance(e, RunFinished) for e in recorder.events) == 6, "the runtime's recorders saw every run"


async def test_runtime_argument_reaches_the_runtime_from_a_handler() -> None:
    recorder = InMemoryRecorder()
    max_seen = [0]
    provider = counting_provider(max_seen)
    agent = Agent(provider)
    async with lifespan(recorders=[recorder]) as (rt, requests):
        ProviderActor.shared(rt, provider, max_concurrency=1)

        async def handler() -> None:
            assert (await agent.run("hi", runtime=rt)).content == "ok"
            async with agent.stream("hi", runtime=rt) as run:
                assert [t async for t in run.text_stream()] == ["ok"]

        for _ in range(3):
            requests.start_soon(handler)
    assert max_seen[0] == 1
    assert sum(isinstance(e, RunFinished) for e in recorder.events) == 6


async def test_a_handler_that_finds_no_runtime_warns_once_per_agent_naming_the_fix() -> None:
    agent = Agent(ScriptedProvider(lambda request: "ok"))
    other = Agent(ScriptedProvider(lambda request: "ok"))
    async with lifespan() as (_rt, requests):
        caught: list[warnings.WarningMessage] = []

        async def handler() -> None:
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                for _ in range(3):
                    assert (await agent.run("hi")).content == "ok"  # still served, by a private runtime
                async with other.stream("hi") as run:
                    await run.wait()
            caught.extend(got)

        requests.start_soon(handler)
    runtime_warnings = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(runtime_warnings) == 2, "once for each agent, not once per run"
    message = str(runtime_warnings[0].message)
    assert "runtime=" in message and "bind" in message
    assert runtime_warnings[0].filename == __file__, "the warning points at the caller's line"
    assert runtime_warnings[1].filename == __file__


async def test_no_runtime_anywhere_is_silent() -> None:
    assert Runtime.running_in_process() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        agent = Agent(ScriptedProvider(lambda request: "ok"))
        assert (await agent.run("hi")).content == "ok"
        async with agent.stream("hi") as run:
            await run.wait()
        assert [t async for t in agent.stream("hi").text_stream()] == ["ok"]


async def test_overlapping_runs_with_no_runtime_anywhere_are_silent_too() -> None:
    """Two runs at once each open a private runtime: neither is a user's runtime the other fails to see (the
    warning said one was running and advised bind(); under warnings-as-errors the second run raised)."""
    assert Runtime.running_in_process() == 0

    async def slow(request: LLMRequest) -> str:
        await anyio.sleep(0.01)
        return "ok"

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        agents = [Agent(ScriptedProvider(slow)) for _ in range(3)]
        answers: list[str] = []

        async def one(agent: Agent[str]) -> None:
            answers.append((await agent.run("hi")).content)
            async with agent.stream("hi") as run:
                answers.append((await run.wait()).content)

        async with anyio.create_task_group() as tg:
            for agent in agents:
                tg.start_soon(one, agent)
    assert answers == ["ok"] * 6
    assert Runtime.running_in_process() == 0


async def test_inside_async_with_the_current_runtime_is_used_without_a_warning() -> None:
    recorder = InMemoryRecorder()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        async with Runtime(recorders=[recorder]):
            assert (await Agent(ScriptedProvider("ok")).run("hi")).content == "ok"
    assert any(isinstance(e, RunFinished) for e in recorder.events)


async def test_running_runtimes_are_counted_process_wide() -> None:
    assert Runtime.running_in_process() == 0
    async with Runtime():
        assert Runtime.running_in_process() == 1
        async with Runtime():
            assert Runtime.running_in_process() == 2
        assert Runtime.running_in_process() == 1
    assert Runtime.running_in_process() == 0


async def test_a_bound_agent_after_its_runtime_closed_is_a_clear_error() -> None:
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(["a", "b", "c"])).bind(rt)
        assert (await agent.run("hi")).content == "a"
        assert agent.runtime is rt
    with pytest.raises(RuntimeError, match="bound to is not running: it has closed"):
        await agent.run("again")
    with pytest.raises(RuntimeError, match="has closed"):
        async with agent.stream("again"):
            pass
    with pytest.raises(RuntimeError, match="passed as runtime= is not running: it has closed"):
        await Agent(ScriptedProvider("x")).run("hi", runtime=rt)


async def test_a_runtime_never_entered_is_a_clear_error_and_bind_checks_its_argument() -> None:
    agent = Agent(ScriptedProvider("x")).bind(Runtime())
    with pytest.raises(RuntimeError, match="was never entered"):
        await agent.run("hi")
    with pytest.raises(TypeError, match="takes a Runtime"):
        Agent(ScriptedProvider("x")).bind("rt")  # type: ignore[arg-type]


async def test_bind_returns_a_bound_copy_with_the_same_configuration() -> None:
    agent = Agent(ScriptedProvider("x"), system="Be brief.", max_steps=3, name="helper")
    async with Runtime() as rt:
        bound = agent.bind(rt)
    assert bound is not agent and agent.runtime is None and bound.runtime is rt
    assert (bound.system, bound.max_steps, bound.name, bound.provider) == ("Be brief.", 3, "helper", agent.provider)
    assert "bound" in repr(bound) and "bound" not in repr(agent)


@asynccontextmanager
async def runtime_in_another_thread(
    backend: str, **runtime_kwargs: Any
) -> AsyncIterator[tuple[Runtime, threading.Thread]]:
    """A Runtime entered by the event loop of a thread of its own (``backend``), until the block ends."""
    ready, done = threading.Event(), threading.Event()
    box: list[Runtime] = []

    def other_loop() -> None:
        async def main() -> None:
            async with Runtime(**runtime_kwargs) as rt:
                box.append(rt)
                ready.set()
                await anyio.to_thread.run_sync(done.wait)

        anyio.run(main, backend=backend)

    thread = threading.Thread(target=other_loop, name=f"runtime-{backend}")
    thread.start()
    try:
        with anyio.fail_after(30):
            await anyio.to_thread.run_sync(ready.wait)
        yield box[0], thread
    finally:
        done.set()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(thread.join, 30)


@pytest.mark.parametrize("host", ["asyncio", "trio"])
async def test_a_bound_agent_runs_from_another_threads_event_loop_in_the_runtimes_loop(host: str) -> None:
    seen: list[int] = []

    def model(request: LLMRequest) -> str:
        seen.append(threading.get_ident())
        return f"ok: {request.messages[-1].content}"

    recorder = InMemoryRecorder()
    agent = Agent(ScriptedProvider(model), name="helper")
    async with runtime_in_another_thread(host, recorders=[recorder]) as (rt, thread):
        bound = agent.bind(rt)
        first = await bound.run("one")  # this test's loop is another thread's: the run is handed over
        second = await agent.run("two", runtime=rt)  # runtime= the same
        both = [await bound.run(p) for p in ("a", "b")]

        async def where() -> tuple[int, bool]:
            return threading.get_ident(), Runtime.current() is rt

        assert await rt.call(where) == (thread.ident, True)  # Runtime.call crosses too

        async def fails() -> None:
            raise ValueError("from the runtime's loop")

        with pytest.raises(ValueError, match="from the runtime's loop"):
            await rt.call(fails)
    assert (first.content, second.content) == ("ok: one", "ok: two")
    assert [r.content for r in both] == ["ok: a", "ok: b"]
    assert seen == [thread.ident] * 4 and thread.ident != threading.get_ident()
    # The runtime's recorders saw the runs: they ran in it, not in a private runtime.
    finished = [e for e in recorder.events if isinstance(e, RunFinished)]
    assert {e.run_id for e in finished} == {first.run_id, second.run_id, *(r.run_id for r in both)}


@pytest.mark.parametrize("host", ["asyncio", "trio"])
async def test_cancelling_the_caller_in_another_thread_cancels_the_run_in_the_runtimes_loop(host: str) -> None:
    started = threading.Event()
    ended: list[str] = []

    async def slow(request: LLMRequest) -> str:
        started.set()
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            ended.append("cancelled")
            raise
        return "too late"

    recorder = InMemoryRecorder()
    async with runtime_in_another_thread(host, recorders=[recorder]) as (rt, _):
        bound = Agent(ScriptedProvider(slow)).bind(rt)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    await bound.run("wait")

                tg.start_soon(run)
                await anyio.to_thread.run_sync(started.wait)
                tg.cancel_scope.cancel()
        # The caller left only once the run had ended in the runtime's loop.
        assert ended == ["cancelled"]
        (finished,) = [e for e in recorder.events if isinstance(e, RunFinished)]
        assert finished.cancelled is True
        assert (await Agent(ScriptedProvider("fine")).bind(rt).run("again")).content == "fine"  # still serving


@pytest.mark.parametrize("host", ["asyncio", "trio"])
async def test_from_another_thread_other_calls_are_refused_with_the_way_and_a_closed_runtime_says_so(
    host: str,
) -> None:
    agent = Agent(ScriptedProvider(["streamed", "ok"]))
    async with runtime_in_another_thread(host) as (rt, _):
        bound = agent.bind(rt)
        with pytest.raises(RuntimeError, match=r"another thread.s event loop.*rt\.call"):
            async with bound.stream("hi"):
                pass

        async def consume() -> str:  # the way: run the stream in the runtime's loop
            async with bound.stream("hi") as run:
                return "".join([text async for text in run.text_stream()])

        assert await rt.call(consume) == "streamed"
    with pytest.raises(RuntimeError, match="not running: it has closed"):
        await bound.run("late")
    with pytest.raises(RuntimeError, match="not running"):
        await rt.call(consume)


@pytest.mark.parametrize("host", ["asyncio", "trio"])
async def test_a_batch_in_a_runtime_of_another_thread_is_refused_with_the_way_and_so_is_a_closed_one(
    host: str,
) -> None:
    # Only run() crosses threads by itself: a batch given another thread's runtime is refused, as stream() is.
    agent = Agent(ScriptedProvider(lambda request: "ok"))
    async with runtime_in_another_thread(host) as (rt, thread):
        with pytest.raises(RuntimeError, match=r"passed as runtime=.*another thread.s event loop.*rt\.call"):
            await agent.run_many(["a", "b"], runtime=rt)
        with pytest.raises(RuntimeError, match=r"another thread.s event loop"):
            await agent.run_many([], runtime=rt)  # nothing to run: still the wrong runtime
        with pytest.raises(RuntimeError, match=r"another thread.s event loop"):
            await rt.run_many(agent, ["a"])
        with pytest.raises(RuntimeError, match=r"another thread.s event loop"):
            agent.as_completed(["a"], runtime=rt)

        async def batch() -> list[tuple[str, int]]:  # the way: the batch runs in the runtime's loop
            results = await agent.run_many(["a", "b"], runtime=rt)
            return [(r.content, threading.get_ident()) for r in results]

        assert await rt.call(batch) == [("ok", thread.ident), ("ok", thread.ident)]
    with pytest.raises(RuntimeError, match="passed as runtime= is not running: it has closed"):
        await agent.run_many(["late"], runtime=rt)
    with pytest.raises(RuntimeError, match="passed as runtime= is not running: it has closed"):
        await agent.run_many([], runtime=rt)
    with pytest.raises(RuntimeError, match="not running: it has closed"):
        agent.as_completed(["late"], runtime=rt)


class Flushing:
    def __init__(self) -> None:
        self.flushed = 0

    def record(self, event: object) -> None:
        pass

    def flush(self) -> None:
        self.flushed += 1


class BrokenFlush(Flushing):
    def flush(self) -> None:
        raise OSError("disk full")


async def test_a_runtime_flushes_its_recorders_when_it_exits(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    flushing, broken, plain = Flushing(), BrokenFlush(), InMemoryRecorder()
    jsonl = JsonlRecorder(tmp_path / "events.jsonl")
    async with Runtime(recorders=[broken, flushing, plain, jsonl]):
        await Agent(ScriptedProvider("ok")).run("hi")
        assert flushing.flushed == 0
        assert (tmp_path / "events.jsonl").read_text() == "", "buffered until flushed"
    assert flushing.flushed == 1, "flushed even though another recorder's flush raised"
    assert "run.finished" in (tmp_path / "events.jsonl").read_text()
    assert any("disk full" in r.getMessage() for r in caplog.records)
    jsonl.close()
