"""Tools that misbehave become results: stray cancellations, SystemExit, odd BaseExceptions, unreadable errors,
unrenderable and unencodable results, stuck sync tools.  What is not the tool's to stop still propagates.

docs/reliability.md ("Tool outcomes") states the rules these tests hold the executor to.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors.actors import Runtime, worker_threads
from agentactors.events import EventSink, InMemoryRecorder, use_sink
from agentactors.messages import ToolCall
from agentactors.tools import ToolStatus, tool
from agentactors.tools.executor import ToolExecutorActor

pytestmark = pytest.mark.anyio


def call(call_id: str, name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments)


def recording() -> tuple[InMemoryRecorder, EventSink]:
    rec = InMemoryRecorder()
    return rec, EventSink([rec], run_id="run-1")


def stray_cancellation(anyio_backend_name: str) -> BaseException:
    """A cancellation exception no cancel scope asked for, as a leaking library raises it.

    On trio the cancellation class has no public constructor: what a leaking asyncio library would
    raise there is asyncio's ``CancelledError``, an ordinary BaseException to trio.
    """
    return asyncio.CancelledError("leaked by a library") if anyio_backend_name == "trio" else (
        anyio.get_cancelled_exc_class()("leaked by a library")
    )


class Custom(BaseException):
    """A BaseException subclass of the tool author's own."""


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ itself fails")


# --- raised BaseExceptions -------------------------------------------------------------------------


async def test_a_stray_cancellation_from_a_tool_is_an_error_result(anyio_backend_name: str) -> None:
    leaked = stray_cancellation(anyio_backend_name)

    @tool(timeout=None)
    async def leaky() -> str:
        await anyio.lowlevel.checkpoint()
        raise leaked

    @tool
    async def leaky_with_timeout() -> str:
        await anyio.lowlevel.checkpoint()
        raise leaked

    @tool
    async def leaky_at_once() -> str:
        raise leaked  # before its first await: the executor's first step meets it

    rec, sink = recording()
    ex = ToolExecutorActor([leaky, leaky_with_timeout, leaky_at_once])
    with use_sink(sink):
        results = await ex.execute([call("a", "leaky"), call("b", "leaky_with_timeout"), call("c", "leaky_at_once")])
        single = await ex.execute([call("d", "leaky_with_timeout")])
    for result in (*results, *single):
        assert result.status is ToolStatus.error, result
        assert result.content == f"Error: {type(leaked).__name__}: leaked by a library"
    assert [e.status for e in rec.of_type("tools.finished")] == [ToolStatus.error] * 4
    await anyio.lowlevel.checkpoint()  # the executor's caller goes on: nothing was cancelled


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # asyncio futures exist on asyncio only
async def test_a_future_cancelled_by_someone_else_is_the_tools_error_on_asyncio() -> None:
    @tool
    async def waits_on_a_library() -> str:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        loop.call_soon(future.cancel)  # the library gives up on its own future
        await future
        return "never"

    (result,) = await ToolExecutorActor([waits_on_a_library]).execute([call("1", "waits_on_a_library")])
    assert result.status is ToolStatus.error and result.content.startswith("Error: CancelledError")


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: SystemExit(2), "Error: SystemExit: 2"),
        (lambda: SystemExit("usage: cli [-h] path"), "Error: SystemExit: usage: cli [-h] path"),
        (lambda: Custom("author's own"), "Error: Custom: author's own"),
        (lambda: Unprintable(), "Error: Unprintable (its message could not be read)"),
        (
            lambda: BaseExceptionGroup("many", [SystemExit(1), Custom("x")]),
            "Error: BaseExceptionGroup: many (2 sub-exceptions) — SystemExit: 1; Custom: x",
        ),
    ],
)
async def test_base_exceptions_the_process_does_not_owe_the_tool_are_error_results(
    make: Callable[[], BaseException], expected: str
) -> None:
    @tool
    async def async_raiser() -> str:
        raise make()

    @tool
    def sync_raiser() -> str:
        raise make()

    ex = ToolExecutorActor([async_raiser, sync_raiser])
    results = await ex.execute([call("1", "async_raiser"), call("2", "sync_raiser")])
    (alone,) = await ex.execute([call("3", "sync_raiser")])
    for result in (*results, alone):
        assert result.status is ToolStatus.error
        assert result.content == expected


async def test_argparse_exiting_inside_a_tool_is_an_error_result() -> None:
    import argparse

    @tool
    def cli(argv: list[str]) -> str:
        parser = argparse.ArgumentParser(prog="cli")
        parser.add_argument("--count", type=int, required=True)
        return str(parser.parse_args(argv).count)

    (result,) = await ToolExecutorActor([cli]).execute([call("1", "cli", argv=["--nope"])])
    assert result.status is ToolStatus.error and result.content.startswith("Error: SystemExit: 2")


async def test_keyboard_interrupt_from_a_tool_propagates_from_every_path() -> None:
    @tool
    async def async_interrupt() -> str:
        raise KeyboardInterrupt

    @tool
    def sync_interrupt() -> str:
        raise KeyboardInterrupt

    @tool
    async def slow() -> str:
        await anyio.sleep(10)
        return "never"

    ex = ToolExecutorActor([async_interrupt, sync_interrupt, slow])
    for name in ("async_interrupt", "sync_interrupt"):
        with pytest.raises(KeyboardInterrupt):
            await ex.execute([call("1", name)])
        # In a step of several calls, raised in the asker's task (the others cancelled), not in a child's.
        with anyio.fail_after(5), pytest.raises(KeyboardInterrupt):
            await ex.execute([call("1", "slow"), call("2", name)])


async def test_a_real_cancellation_still_propagates_and_is_recorded_as_cancelled() -> None:
    entered = anyio.Event()

    @tool(timeout=None)
    async def long() -> str:
        entered.set()
        await anyio.sleep(100)
        return "never"

    rec, sink = recording()
    ex = ToolExecutorActor([long])
    outcome: list[Any] = []
    with use_sink(sink):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                outcome.append(await ex.execute([call("1", "long")]))

            tg.start_soon(run)
            await entered.wait()
            tg.cancel_scope.cancel()
    assert outcome == []
    assert [e.status for e in rec.of_type("tools.finished")] == [ToolStatus.cancelled]


async def test_a_policy_raising_a_base_exception_denies_and_an_interrupt_propagates() -> None:
    @tool
    async def act() -> str:
        return "done"

    def exiting_policy(c: ToolCall, ctx: Any) -> None:
        raise SystemExit(1)

    ex = ToolExecutorActor([act], tool_policy=exiting_policy)
    (result,) = await ex.execute([call("1", "act")])
    assert result.status is ToolStatus.denied and "could not decide (SystemExit)" in result.content

    def interrupting_policy(c: ToolCall, ctx: Any) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await ToolExecutorActor([act], tool_policy=interrupting_policy).execute([call("1", "act")])

    class Verdict:
        def __str__(self) -> str:
            raise RuntimeError("unreadable reason")

    # A misbehaving policy, on purpose: its verdict is neither None nor a str (nor an approval).
    (refused,) = await ToolExecutorActor([act], tool_policy=lambda c, ctx: Verdict()).execute([call("1", "act")])  # type: ignore[arg-type, return-value]
    assert refused.status is ToolStatus.denied and "could not decide (RuntimeError)" in refused.content


# --- results that cannot be rendered or sent -----------------------------------------------------


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


async def test_results_that_cannot_be_rendered_are_error_results() -> None:
    circular: list[Any] = []
    circular.append(circular)

    class Dumps:
        def model_dump(self, mode: str) -> Any:
            raise RuntimeError("pydantic-like failure")

    cases: dict[str, Any] = {"deep": _nested(100_000), "circular": circular, "dumps": Dumps()}

    @tool
    async def odd(kind: str) -> Any:
        return cases[kind]

    ex = ToolExecutorActor([odd])
    results = await ex.execute([call(kind, "odd", kind=kind) for kind in cases])
    assert [r.status for r in results] == [ToolStatus.error] * 3
    assert results[0].content == "Error: TypeError: the tool returned a list that cannot be sent as JSON"
    assert results[2].content == "Error: TypeError: the tool returned a Dumps that cannot be sent as JSON"


async def test_lone_surrogates_are_replaced_and_recorded() -> None:
    @tool
    async def broken_text() -> str:
        return "caf\udce9 and a pair \ud83d\ude00 written as two code points"

    @tool
    async def broken_error() -> str:
        raise ValueError("bad byte \udcff")

    @tool(hint=lambda text: "try again \ud800")
    async def broken_hint() -> str:
        raise ValueError("plain")

    @tool
    async def fine() -> str:
        return "naïve — fine ☕"

    rec, sink = recording()
    ex = ToolExecutorActor([broken_text, broken_error, broken_hint, fine])
    with use_sink(sink):
        text, error, hinted, ok = await ex.execute(
            [call("1", "broken_text"), call("2", "broken_error"), call("3", "broken_hint"), call("4", "fine")]
        )
    assert text.status is ToolStatus.ok
    assert text.content == "caf\ufffd and a pair 😀 written as two code points"
    assert error.content == "Error: ValueError: bad byte \ufffd"
    assert hinted.content.endswith("Hint: try again \ufffd")
    assert ok.content == "naïve — fine ☕"
    for result in (text, error, hinted, ok):
        result.content.encode("utf-8")  # every one of them can be sent
        assert result.size_chars == len(result.content)
    repairs = {(e.call_id, e.surrogates) for e in rec.of_type("tools.surrogates_replaced")}
    assert repairs == {("1", 3), ("2", 1), ("3", 1)}


# --- stuck sync tools ------------------------------------------------------------------------------


async def test_stuck_sync_tools_do_not_starve_the_others_and_are_counted() -> None:
    """45 sync tools stuck past their timeout (more than the 40 threads of anyio's default limiter): the next
    sync tool still runs, and rt.stats() counts the stuck threads until they return."""
    release = threading.Event()
    stuck_calls = 45
    started: list[int] = []  # a call its timeout hit before its thread started is dropped, not abandoned

    @tool(timeout=0.25)
    def stuck(n: int) -> str:
        started.append(n)
        release.wait(10)
        return "late"

    @tool(timeout=2)
    def quick() -> str:
        return "quick"

    rec, sink = recording()
    before = worker_threads().abandoned
    try:
        async with Runtime() as rt:
            ex = ToolExecutorActor([stuck, quick], max_concurrency_per_step=stuck_calls)
            with use_sink(sink):
                for batch in range(3):
                    results = await ex.execute([call(f"s{batch}-{n}", "stuck", n=n) for n in range(15)])
                    assert {r.status for r in results} == {ToolStatus.timeout}
                (result,) = await ex.execute([call("q", "quick")])
            assert result.status is ToolStatus.ok and result.content == "quick"
            assert len(started) > 40  # more than trio's default limiter holds
            assert rt.stats().abandoned_threads == before + len(started)
            abandoned = rec.of_type("tools.thread_abandoned")
            assert len(abandoned) == len(started)
            assert {e.name for e in abandoned} == {"stuck"} and abandoned[-1].alive == before + len(started)
    finally:
        release.set()
    with anyio.fail_after(10):
        while worker_threads().abandoned > before:  # noqa: ASYNC110 - a count the released threads change
            await anyio.sleep(0.01)


def test_an_exception_groups_members_are_named_nested_and_at_most_five() -> None:
    """A tool's own task group fails as a group whose message says only how many failed: the model reads what."""
    from agentactors.redaction import register_secret
    from agentactors.tools.results import format_error

    register_secret("sk-group-member-SECRET-0123456789")
    nested = ExceptionGroup("Exceptions from Trio nursery", [
        ExceptionGroup("inner", [KeyError("k")]), ValueError("key sk-group-member-SECRET-0123456789 refused"),
    ])
    assert format_error(nested) == (
        "Error: ExceptionGroup: Exceptions from Trio nursery (2 sub-exceptions) — KeyError: 'k'; "
        "ValueError: key [REDACTED] refused"
    )
    many = ExceptionGroup("g", [ValueError(str(i)) for i in range(7)])
    assert format_error(many).endswith("— ValueError: 0; ValueError: 1; ValueError: 2; ValueError: 3; "
                                       "ValueError: 4; and more")
