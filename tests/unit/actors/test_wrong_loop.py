"""An actor used from an event loop that is not its runtime's: refused, typed, naming ``Runtime.call``.

A runtime's actors, task group and cancel scopes belong to the event loop that entered it.  An ask or a
tell made from another thread's loop used to run the handler in the wrong thread beside the runtime's own
handlers, start workers in the runtime's task group from the wrong thread, wait for events the other
thread would set (a hang), or fail half-way with whatever the foreign library said (``no running event
loop``, ``must be called from async context``, even a ``TrioInternalError`` in the runtime's loop).  Now
each is refused before it touches the actor, with a ``WrongEventLoopError`` (a ``RuntimeError``) naming the way across
(``await rt.call(ref.ask, message)``), and that way works.  A runtime that has closed answers as a stopped
actor does (``ActorStopped``, dead letters), whichever loop asks.

Every host backend with every foreign one.  Real threads: no virtual time; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import pytest
import trio

from agentactors.actors import Runtime
from agentactors.actors.frame import ask_in, hold, open_frame
from agentactors.actors.ref import ActorRef
from agentactors.errors import ActorStopped, WrongEventLoopError

pytestmark = pytest.mark.anyio

FOREIGN = pytest.mark.parametrize("foreign", ["asyncio", "trio"])


class Counter:
    """Answers ``("handled", thread)`` and counts what it handled; ``"count?"`` answers the count."""

    def __init__(self) -> None:
        self.handled: list[Any] = []

    async def receive(self, message: Any) -> Any:
        if message == "count?":
            return len(self.handled)
        self.handled.append(message)
        await anyio.lowlevel.checkpoint()
        return "handled", threading.get_ident()


def _in_another_loop(foreign: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``fn()`` in a new event loop of ``foreign``'s library, in this thread, bounded."""

    async def bounded() -> Any:
        with anyio.fail_after(10):  # a hang is a failure, not a stuck suite
            return await fn()

    if foreign == "asyncio":
        return asyncio.run(bounded())
    return trio.run(bounded)


async def _from_thread(foreign: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    """``fn()`` awaited in another thread's event loop: what it returned, or what it raised."""
    outcome: list[Any] = []

    def other() -> None:
        try:
            outcome.append(_in_another_loop(foreign, fn))
        except BaseException as exc:  # the outcome under test, exceptions included
            outcome.append(exc)

    await anyio.to_thread.run_sync(other)
    return outcome[0]


def _refused(outcome: Any) -> bool:
    return (
        type(outcome) is WrongEventLoopError
        and "another event loop" in str(outcome)
        and "Runtime.call" in str(outcome)
    )


@FOREIGN
async def test_an_ask_from_another_threads_loop_is_refused_and_rt_call_is_the_way(foreign: str) -> None:
    async with Runtime() as rt:
        direct, queued = rt.spawn(Counter(), name="direct"), rt.spawn(Counter(), name="queued", direct=False)
        for ref in (direct, queued):
            outcome = await _from_thread(foreign, lambda ref=ref: ref.ask("hello"))  # type: ignore[misc]
            assert _refused(outcome), outcome
            assert "ref.ask" in str(outcome)
            assert await ref.ask("count?") == 0  # refused before it reached the actor
            # The way the error names: the ask is handed to the runtime's loop, and handled in its thread.
            answer = await _from_thread(foreign, lambda ref=ref: rt.call(ref.ask, "across"))  # type: ignore[misc]
            assert answer == ("handled", threading.get_ident())
        assert rt.stats().tasks == 0


@FOREIGN
async def test_a_tell_or_try_tell_from_another_threads_loop_is_refused(foreign: str) -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Counter())
        outcome = await _from_thread(foreign, lambda: ref.tell("hello"))
        assert _refused(outcome) and "ref.tell" in str(outcome), outcome

        async def try_tell() -> bool:
            return ref.try_tell("hello")

        outcome = await _from_thread(foreign, try_tell)
        assert _refused(outcome), outcome
        assert await ref.ask("count?") == 0
        assert rt.stats().queued == 0 and rt.stats().tasks == 0


async def test_a_try_tell_from_a_plain_thread_is_refused() -> None:
    """No event loop at all in the calling thread: refused the same way (the loop's thread is not this one)."""
    async with Runtime() as rt:
        ref = rt.spawn(Counter())
        outcome: list[Any] = []

        def plain() -> None:
            try:
                outcome.append(ref.try_tell("hello"))
            except BaseException as exc:  # the outcome under test
                outcome.append(exc)

        await anyio.to_thread.run_sync(plain)
        assert _refused(outcome[0]), outcome
        assert await ref.ask("count?") == 0
        # The way from a thread without a loop: a token of the runtime's loop, the ask made there.
        token = anyio.lowlevel.current_token()
        answer = await anyio.to_thread.run_sync(lambda: anyio.from_thread.run(ref.ask, "across", token=token))
        assert answer == ("handled", threading.get_ident())


@FOREIGN
async def test_a_frames_ask_and_hold_from_another_threads_loop_are_refused(foreign: str) -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Counter())

        async def framed() -> Any:
            frame = open_frame(ref)
            with frame.scope:
                return await ask_in(frame, ref, "hello")

        assert _refused(await _from_thread(foreign, framed))

        async def held() -> Any:
            frame = open_frame(None)  # a frame of this thread's own (open_frame(ref) would refuse already)
            with frame.scope:
                return hold(frame, ref)

        assert _refused(await _from_thread(foreign, held))
        assert await ref.ask("count?") == 0
        assert rt.stats().busy == 0


@FOREIGN
async def test_spawn_stop_and_wait_idle_from_another_threads_loop_are_refused(foreign: str) -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Counter())

        async def spawn() -> ActorRef:
            return rt.spawn(Counter())

        async def spawn_task() -> None:
            rt.spawn_task(anyio.sleep, 0)

        assert _refused(await _from_thread(foreign, spawn))
        assert _refused(await _from_thread(foreign, spawn_task))
        assert _refused(await _from_thread(foreign, lambda: rt.stop(ref)))
        assert _refused(await _from_thread(foreign, rt.wait_idle))
        assert not ref.stopped and rt.stats().actors == 1 and rt.stats().tasks == 0


@FOREIGN
async def test_service_from_another_threads_loop_is_refused_and_builds_nothing(foreign: str) -> None:
    """``service`` used to build (and register a cleanup for) a value in the wrong thread, unchecked."""
    built: list[int] = []

    def build() -> str:
        built.append(threading.get_ident())
        return "value"

    async def service() -> str:
        return rt.service("key", build)

    async with Runtime() as rt:
        outcome = await _from_thread(foreign, service)
        assert _refused(outcome), outcome
        assert "rt.call" in str(outcome)
        assert built == []  # refused before build() ran
        assert await _from_thread(foreign, lambda: rt.call(service)) == "value"  # the way across works
        assert built == [threading.get_ident()]  # built in the runtime's thread


@FOREIGN
async def test_after_the_runtime_closed_another_threads_loop_finds_the_actor_stopped(foreign: str) -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Counter())
    outcome = await _from_thread(foreign, lambda: ref.ask("hello"))
    assert isinstance(outcome, ActorStopped), outcome
    assert await _from_thread(foreign, lambda: ref.tell("hello")) is None  # a dead letter, as for any stopped actor

    async def try_tell() -> bool:
        return ref.try_tell("hello")

    assert await _from_thread(foreign, try_tell) is False


# -- a second event loop in the same thread ------------------------------------------------------------------


@pytest.mark.parametrize("host", ["asyncio", "trio"])
@FOREIGN
def test_a_later_loop_in_the_same_thread_finds_a_closed_runtimes_actors_stopped(host: str, foreign: str) -> None:
    async def first() -> ActorRef:
        async with Runtime() as rt:
            ref = rt.spawn(Counter())
        return ref

    ref = anyio.run(first, backend=host)
    outcome: Any
    try:
        outcome = _in_another_loop(foreign, lambda: ref.ask("hello"))
    except BaseException as exc:  # the outcome under test
        outcome = exc
    assert isinstance(outcome, ActorStopped), outcome


def test_a_runtime_left_open_in_an_idle_loop_refuses_work_from_another_loop_of_its_thread() -> None:
    """A runtime entered in a loop that is not running now (a session-scoped fixture's loop, say).

    Work that needs the runtime's own tasks (a worker for a queued message, a call handed over) used to be
    scheduled in that idle loop: the asker waited for ever, the tell was never handled.  Refused instead,
    and nothing is left queued; the runtime then exits cleanly in its own loop.
    """
    home = asyncio.new_event_loop()
    try:
        opened: asyncio.Future[tuple[Runtime, ActorRef]] = home.create_future()
        leave = asyncio.Event()

        async def lifetime() -> int:  # the fixture's task: enters the runtime, waits, leaves it
            count = -1
            async with Runtime() as rt:
                ref = rt.spawn(Counter(), direct=False)
                opened.set_result((rt, ref))
                await leave.wait()
                count = await ref.ask("count?")
            return count

        task = home.create_task(lifetime())
        rt, ref = home.run_until_complete(opened)  # the home loop stops here: idle, the runtime open

        async def nothing() -> None:
            return None

        for label, fn in (
            ("ask", lambda: ref.ask("hello")),
            ("tell", lambda: ref.tell("hello")),
            ("call", lambda: rt.call(nothing)),
        ):
            try:
                outcome = asyncio.run(asyncio.wait_for(fn(), 10))
            except BaseException as exc:  # the outcome under test
                outcome = exc
            assert type(outcome) is WrongEventLoopError and "another event loop" in str(outcome), (label, outcome)
        assert rt.stats().queued == 0 and rt.stats().tasks == 0
        leave.set()
        assert home.run_until_complete(task) == 0  # nothing of it reached the actor; the exit is clean
    finally:
        home.close()
