"""run_many / as_completed: one result per input, in input order, whatever a run raises.

The machinery (agentactors.agent.batch.run_batch) is driven directly with runs that raise every kind of
exception, and through agents whose provider or tools misbehave.  A real cancellation and a
KeyboardInterrupt stop the batch, with every slot filled and reachable from the exception.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.batch import results_of, run_batch
from agentactors.agent.core import Agent
from agentactors.loop.result import RunResult
from agentactors.messages import LLMRequest, Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools import tool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Custom(BaseException):
    pass


def stray(anyio_backend_name: str) -> BaseException:
    """A cancellation no scope asked for (on trio, asyncio's CancelledError: a plain BaseException there)."""
    if anyio_backend_name == "trio":
        return asyncio.CancelledError("leaked")
    return anyio.get_cancelled_exc_class()("leaked")


def prepare(item: str) -> tuple[Message, ...]:
    return (Message.user(item),)


def _user(request: LLMRequest) -> str:
    return next(m.content for m in request.messages if m.role == "user")


# --- the machinery, driven directly --------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_whatever_a_run_raises_its_slot_gets_a_failed_result_and_the_rest_go_on(
    anyio_backend_name: str, concurrency: int
) -> None:
    raised: dict[str, BaseException] = {
        "exception": ValueError("plain"),
        "exit": SystemExit(3),
        "custom": Custom("own"),
        "stray": stray(anyio_backend_name),
        "group": BaseExceptionGroup("both", [SystemExit(1), ValueError("v")]),
    }
    inputs = ["a", *raised, "z"]

    async def run(messages: tuple[Message, ...]) -> RunResult:
        await anyio.sleep(0.1)
        key = messages[0].content
        if key in raised:
            raise raised[key]
        return RunResult(f"ran {key}", messages)

    progress: list[tuple[int, int, int]] = []
    results = await run_batch(
        inputs, prepare, run, concurrency=concurrency, progress=lambda *a: progress.append(a)
    )
    assert len(results) == len(inputs)
    for item, result in zip(inputs, results, strict=True):
        assert result.messages == (Message.user(item),)  # results[i] is inputs[i]'s
        if item in raised:
            assert result.error is raised[item] and not result.ok and not result.cancelled
        else:
            assert result.content == f"ran {item}" and result.ok
    assert progress[-1] == (len(inputs), len(raised), len(inputs))


@pytest.mark.parametrize("raised", [SystemExit(2), Custom("own"), ValueError("plain")])
async def test_a_progress_callback_that_raises_is_logged_once_and_ignored_whatever_it_raises(
    raised: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    # A sys.exit() in a progress callback ended the batch with an exception group; the runs' own SystemExit
    # is contained (docs: "a progress callback that raises is logged and ignored").
    calls: list[tuple[int, int, int]] = []

    def progress(*counts: int) -> None:
        calls.append((counts[0], counts[1], counts[2]))
        raise raised

    async def run(messages: tuple[Message, ...]) -> RunResult:
        await anyio.sleep(0.1)
        return RunResult("ok", messages)

    with caplog.at_level("ERROR", logger="agentactors"):
        results = await run_batch(["a", "b", "c"], prepare, run, concurrency=2, progress=progress)
    assert [r.content for r in results] == ["ok", "ok", "ok"]
    assert len(calls) == 3  # still called after each run, its raising ignored
    assert sum("progress callback raised" in record.getMessage() for record in caplog.records) == 1


async def test_a_keyboard_interrupt_in_a_progress_callback_still_stops_the_batch() -> None:
    def progress(*counts: int) -> None:
        raise KeyboardInterrupt

    async def run(messages: tuple[Message, ...]) -> RunResult:
        await anyio.sleep(float(messages[0].content))
        return RunResult("done", messages)

    with pytest.raises(KeyboardInterrupt) as caught:
        await run_batch(["1", "5"], prepare, run, concurrency=2, progress=progress)
    filled = results_of(caught.value)
    assert filled is not None and [r.content for r in filled] == ["done", ""] and filled[1].cancelled


async def test_an_input_that_cannot_become_messages_fails_alone() -> None:
    def picky(item: str) -> tuple[Message, ...]:
        if item == "bad":
            raise RuntimeError("not a prompt")
        return prepare(item)

    async def run(messages: tuple[Message, ...]) -> RunResult:
        return RunResult("ok", messages)

    results = await run_batch(["x", "bad", "y"], picky, run, concurrency=1)
    assert [r.content for r in results] == ["ok", "", "ok"]
    assert isinstance(results[1].error, RuntimeError) and results[1].messages == ()


async def test_a_real_cancellation_propagates_with_every_slot_filled() -> None:
    async def run(messages: tuple[Message, ...]) -> RunResult:
        await anyio.sleep(float(messages[0].content))
        return RunResult("done", messages)

    inputs = ["1", "5", "1", "9", "9"]
    seen: list[list[RunResult] | None] = []
    with anyio.move_on_after(3) as scope:
        try:
            await run_batch(inputs, prepare, run, concurrency=2)
        except anyio.get_cancelled_exc_class() as exc:
            seen.append(results_of(exc))
            raise
    assert scope.cancelled_caught
    (results,) = seen
    assert results is not None
    assert [(r.content, r.cancelled) for r in results] == [
        ("done", False), ("", True), ("done", False), ("", True), ("", True)
    ]
    assert [r.messages[0].content for r in results] == inputs


@pytest.mark.parametrize("where", ["run", "group"])
async def test_a_keyboard_interrupt_stops_the_batch_and_carries_every_result(where: str) -> None:
    async def run(messages: tuple[Message, ...]) -> RunResult:
        key = messages[0].content
        await anyio.sleep(1 if key != "long" else 100)
        if key == "stop":
            raise KeyboardInterrupt if where == "run" else BaseExceptionGroup("g", [KeyboardInterrupt()])
        return RunResult(f"ran {key}", messages)

    inputs = ["a", "long", "b", "stop", "c", "d"]
    with anyio.fail_after(10), pytest.raises(KeyboardInterrupt) as info:
        await run_batch(inputs, prepare, run, concurrency=2)
    results = results_of(info.value)
    carried: object = getattr(info.value, "results", None)  # typed: an `is` against Any would undo the narrowing
    assert results is not None and results is carried
    assert [(r.content, r.cancelled) for r in results] == [
        ("ran a", False), ("", True), ("ran b", False), ("", True), ("", True), ("", True)
    ]
    assert [r.messages[0].content for r in results] == inputs
    assert info.value.__notes__ == ["run_many: 2 of 6 runs had finished; every result is in exc.results"]


async def test_generator_exit_is_not_contained() -> None:
    async def run(messages: tuple[Message, ...]) -> RunResult:
        raise GeneratorExit

    with pytest.raises(BaseExceptionGroup) as info:  # out of the batch's task group, as anyio raises it
        await run_batch(["a"], prepare, run, concurrency=1)
    assert info.group_contains(GeneratorExit)


def test_results_of_follows_the_chain_and_ignores_what_is_not_a_batch() -> None:
    results = [RunResult("x", ())]
    cancelled = ValueError("stand-in for the cancellation")
    cancelled.results = results  # type: ignore[attr-defined]

    def interrupt(*, hide_context: bool) -> None:
        try:
            raise cancelled
        except ValueError:
            if hide_context:
                raise KeyboardInterrupt from None
            raise KeyboardInterrupt  # as asyncio.Runner does it: the context is kept

    with pytest.raises(KeyboardInterrupt) as kept:
        interrupt(hide_context=False)
    assert results_of(kept.value) is results
    with pytest.raises(KeyboardInterrupt) as hidden:
        interrupt(hide_context=True)
    assert results_of(hidden.value) is None  # `from None` cut the chain off on purpose
    odd = ValueError()
    odd.results = ["not", "results"]  # type: ignore[attr-defined]
    assert results_of(odd) is None


# --- through an agent ------------------------------------------------------------------------------


async def test_a_stray_cancellation_from_a_tool_loses_no_run_even_with_concurrency_one(
    anyio_backend_name: str,
) -> None:
    """The issue's case: the tool's CancelledError used to kill the worker; every later input was lost."""
    leaked = stray(anyio_backend_name)

    @tool
    async def lookup(n: int) -> str:
        await anyio.sleep(0.1)
        if n == 1:
            raise leaked
        return f"found {n}"

    def model(request: LLMRequest) -> Any:
        n = int(_user(request))
        results = [m for m in request.messages if m.role == "tool"]
        if not results:
            return ToolCall(f"c{n}", "lookup", {"n": n})
        return f"{n}: {results[-1].content}"

    agent = Agent(ScriptedProvider(model), tools=[lookup])
    async with Runtime() as rt:
        results = await rt.run_many(agent, [str(n) for n in range(5)], concurrency=1)
        streamed = [r async for r in rt.as_completed(agent, [str(n) for n in range(5)], concurrency=1)]
    assert [r.content for r in results] == [
        "0: found 0", f"1: Error: {type(leaked).__name__}: leaked", "2: found 2", "3: found 3", "4: found 4"
    ]
    assert sorted(r.content for r in streamed) == sorted(r.content for r in results)


async def test_runs_whose_provider_raises_base_exceptions_fail_alone(anyio_backend_name: str) -> None:
    raised: dict[str, BaseException] = {"exit": SystemExit(1), "stray": stray(anyio_backend_name), "own": Custom()}

    async def model(request: LLMRequest) -> str:
        await anyio.sleep(0.1)
        key = _user(request)
        if key in raised:
            raise raised[key]
        return f"answer {key}"

    agent = Agent(ScriptedProvider(model))
    inputs = ["a", "exit", "b", "stray", "own", "c"]
    async with Runtime() as rt:
        results = await rt.run_many(agent, inputs, concurrency=1)
        streamed = [r async for r in rt.as_completed(agent, inputs, concurrency=2)]
        await rt.wait_idle()
        assert rt.stats().tasks == 0
    assert len(results) == len(inputs) == len(streamed)
    for item, result in zip(inputs, results, strict=True):
        assert result.messages[0].content == item
        assert (result.content == f"answer {item}") is (item not in raised)
        if item in raised:
            assert result.error is not None and not result.ok
    assert sum(r.ok for r in streamed) == 3


async def test_a_keyboard_interrupt_in_a_tool_stops_run_many_and_agent_run() -> None:
    @tool
    async def step(n: int) -> str:
        await anyio.sleep(0.1 * n)
        if n == 2:
            raise KeyboardInterrupt
        return f"step {n}"

    def model(request: LLMRequest) -> Any:
        n = int(_user(request))
        results = [m for m in request.messages if m.role == "tool"]
        return ToolCall(f"c{n}", "step", {"n": n}) if not results else results[-1].content

    agent = Agent(ScriptedProvider(model), tools=[step])
    inputs = [str(n) for n in range(6)]
    with pytest.raises(KeyboardInterrupt) as info:
        await agent.run_many(inputs, concurrency=2)  # a private runtime: it closes cleanly too
    results = results_of(info.value)
    assert results is not None and len(results) == 6
    assert [r.content for r in results[:2]] == ["step 0", "step 1"]
    assert all(r.cancelled for r in results[2:])
    with pytest.raises(KeyboardInterrupt):
        await agent.run("2")
    async with Runtime() as rt:
        got: list[str] = []
        with pytest.raises(KeyboardInterrupt):
            async with rt.as_completed(agent, inputs, concurrency=2) as stream:
                async for result in stream:
                    got.append(result.content)
        assert got == ["step 0", "step 1"]  # what finished before the interrupt was yielded
        await rt.wait_idle()
        assert rt.stats().tasks == 0


async def test_cancelling_run_many_leaves_nothing_running_and_fills_the_slots() -> None:
    async def model(request: LLMRequest) -> str:
        await anyio.sleep(float(_user(request)))
        return "done"

    agent = Agent(ScriptedProvider(model))
    found: list[list[RunResult] | None] = []
    async with Runtime() as rt:
        with anyio.move_on_after(2):
            try:
                await rt.run_many(agent, ["1", "10", "1", "10"], concurrency=4)
            except anyio.get_cancelled_exc_class() as exc:
                found.append(results_of(exc))
                raise
        await rt.wait_idle()
        assert rt.stats().tasks == 0 and rt.stats().busy == 0
    (results,) = found
    assert results is not None
    assert [(r.content, r.cancelled) for r in results] == [("done", False), ("", True), ("done", False), ("", True)]



async def test_results_of_finds_them_in_a_task_group_of_the_programs_own() -> None:
    """A program with a nursery of its own around the batch (trio's groups are strict) gets the interrupt inside a
    BaseExceptionGroup: ``except* KeyboardInterrupt as group: results_of(group)`` finds the results in its member."""

    async def run(messages: tuple[Message, ...]) -> RunResult:
        if messages[0].content == "stop":
            await anyio.sleep(0.5)
            raise KeyboardInterrupt
        await anyio.sleep(100 if messages[0].content == "long" else 0)
        return RunResult("ran", messages)

    async def beside() -> None:
        await anyio.sleep(100)

    found: list[RunResult] | None = None
    with anyio.fail_after(10):
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(beside)
                await run_batch(["a", "long", "stop"], prepare, run, concurrency=3)
        except* KeyboardInterrupt as group:
            found = results_of(group)
    assert found is not None
    assert [(r.content, r.cancelled) for r in found] == [("ran", False), ("", True), ("", True)]
    interrupt = KeyboardInterrupt()
    interrupt.results = found  # type: ignore[attr-defined]
    nested = BaseExceptionGroup("outer", [ValueError("other"), BaseExceptionGroup("inner", [interrupt])])
    assert results_of(nested) is found
