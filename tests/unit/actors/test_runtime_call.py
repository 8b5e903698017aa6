"""``rt.call(fn, *args)``: run a coroutine in a runtime's context from a task that is not the runtime's.

A Ray actor method (or a server's handler) runs in a task of its own: ``Runtime.current()`` is a
contextvar set where ``async with Runtime()`` was entered, so such a task sees no runtime.
``rt.call`` runs ``fn`` in the runtime's context, in the calling task: cancellation is the caller's.
From another thread's event loop the call is handed to the runtime's loop (its thread, its context).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors import Agent, Runtime, ScriptedProvider
from agentactors.gateway import ProviderActor

pytestmark = pytest.mark.anyio

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


async def test_a_foreign_task_sees_no_runtime_and_call_gives_it_one() -> None:
    provider = ScriptedProvider(lambda request: "hi")
    agent = Agent(provider)
    seen: dict[str, object] = {}
    handed: list[Runtime] = []
    ready = anyio.Event()
    finished = anyio.Event()

    async def inside() -> str:
        seen["current"] = Runtime.current()
        result = await agent.run("hello")
        return result.content

    async def foreign() -> None:  # started before the runtime existed: Ray's task, say
        await ready.wait()
        rt = handed[0]
        seen["before"] = Runtime.current()
        seen["content"] = await rt.call(inside)
        seen["after"] = Runtime.current()
        finished.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(foreign)
        async with Runtime() as rt:
            handed.append(rt)
            ready.set()
            with anyio.fail_after(5):
                await finished.wait()
            # The foreign task's run used this runtime's one shared ProviderActor.
            assert ProviderActor.shared(rt, provider).actor.provider is provider
            assert provider.calls == 1
    assert seen == {"before": None, "current": rt, "content": "hi", "after": None}


async def test_call_runs_in_the_runtimes_context_and_changes_do_not_leak_back() -> None:
    MARK.set("runtime")
    async with Runtime() as rt:
        MARK.set("caller")

        async def probe(x: int) -> tuple[str, int]:
            seen = MARK.get()
            MARK.set("changed inside")
            return seen, x * 2

        assert await rt.call(probe, 21) == ("runtime", 42)
        assert MARK.get() == "caller"


async def test_cancelling_the_caller_cancels_the_call() -> None:
    finished = []
    started = anyio.Event()

    async def slow() -> None:
        started.set()
        try:
            await anyio.sleep(30)
        finally:
            finished.append("cancelled at its checkpoint")

    async with Runtime() as rt:
        with anyio.move_on_after(5) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(rt.call, slow)
                await started.wait()
                tg.cancel_scope.cancel()
        assert not scope.cancelled_caught
    assert finished == ["cancelled at its checkpoint"]


async def test_the_runtimes_exit_ends_a_call_still_running() -> None:
    errors: list[BaseException] = []
    started = anyio.Event()

    async def forever() -> None:
        started.set()
        await anyio.sleep_forever()

    async def foreign(rt: Runtime) -> None:
        try:
            await rt.call(forever)
        except RuntimeError as exc:
            errors.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            async with Runtime(drain_timeout=0.01) as rt:
                tg.start_soon(foreign, rt)
                await started.wait()
    assert len(errors) == 1 and "closed" in str(errors[0])


async def test_call_outside_a_running_runtime_is_an_error() -> None:
    async def nothing() -> None:
        return None

    rt = Runtime()
    with pytest.raises(RuntimeError, match="not running"):
        await rt.call(nothing)
    async with rt:
        pass
    with pytest.raises(RuntimeError, match="not running"):
        await rt.call(nothing)


async def test_an_exception_from_fn_reaches_the_caller() -> None:
    async def boom() -> None:
        raise ValueError("boom")

    async with Runtime() as rt:
        with pytest.raises(ValueError, match="boom"):
            await rt.call(boom)


def _in_a_thread_loop(backend: str, fn: Callable[[], Awaitable[Any]], out: list[Any]) -> threading.Thread:
    """A thread running its own event loop (``backend``) that awaits ``fn()`` and puts its outcome in ``out``."""

    async def main() -> None:
        try:
            out.append(await fn())
        except BaseException as exc:  # the outcome under test, exceptions included
            out.append(exc)

    thread = threading.Thread(target=anyio.run, args=(main,), kwargs={"backend": backend})
    thread.start()
    return thread


@pytest.mark.parametrize("guest", ["asyncio", "trio"])
async def test_from_another_threads_loop_the_call_runs_in_the_runtimes_loop_and_context(guest: str) -> None:
    MARK.set("runtime")
    out: list[Any] = []
    async with Runtime() as rt:

        async def probe(x: int) -> tuple[str, int, bool, int]:
            await anyio.lowlevel.checkpoint()
            seen = MARK.get()
            MARK.set("changed inside")
            return seen, threading.get_ident(), Runtime.current() is rt, x * 2

        async def guest_side() -> Any:
            MARK.set("guest")
            result = await rt.call(probe, 21)
            return result, MARK.get()

        thread = _in_a_thread_loop(guest, guest_side, out)
        await anyio.to_thread.run_sync(thread.join)
        (outcome,) = out
        assert outcome == (("runtime", threading.get_ident(), True, 42), "guest")
        assert rt.stats().tasks == 0  # the task that hosted it has ended


@pytest.mark.parametrize("guest", ["asyncio", "trio"])
async def test_from_another_threads_loop_the_drain_waits_for_the_call_and_the_exit_ends_it(guest: str) -> None:
    started = threading.Event()
    out: list[Any] = []

    async def forever() -> None:
        started.set()
        await anyio.sleep_forever()

    with anyio.fail_after(10):
        async with Runtime(drain_timeout=0.05) as rt:
            thread = _in_a_thread_loop(guest, lambda: rt.call(forever), out)
            await anyio.to_thread.run_sync(started.wait)
            assert rt.stats().tasks == 1  # hosted by a task of the runtime: the drain counts it
        await anyio.to_thread.run_sync(thread.join)
    (error,) = out
    assert isinstance(error, RuntimeError) and "closed" in str(error)
