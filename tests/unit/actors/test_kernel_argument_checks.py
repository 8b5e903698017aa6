"""Bad arguments to the kernel's public calls are a clear ``TypeError`` / ``ValueError`` at the call.

They used to be taken as they came: ``spawn(mailbox_size=True)``, ``concurrency=2.5``, a NaN restart
window, an int as a name (then shown as ``"<Class>-5"``, the default name of the fifth actor) were
accepted; a NaN ``drain_timeout`` was accepted and made the runtime's exit fail half-way (no ``on_stop``, no
cleanup); a NaN or negative ask or stop ``timeout`` failed deep in anyio, or not at all, differently on
each backend; ``rt.stop("x")`` was an ``AttributeError``.  Nothing is sent, spawned or stopped by a refused call.
"""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.events import InMemoryRecorder

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Echo:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def receive(self, message: Any) -> Any:
        self.seen.append(message)
        return message


BAD_COUNTS = [True, False, 2.5, 1.0, math.nan, "3", None]


@pytest.mark.parametrize("setting", ["mailbox_size", "concurrency", "max_restarts"])
@pytest.mark.parametrize("value", BAD_COUNTS, ids=repr)
async def test_spawn_refuses_a_count_that_is_not_an_int(setting: str, value: Any) -> None:
    async with Runtime() as rt:
        rt.spawn(Echo())  # a spec with the defaults exists: True == 1 must not find it
        before = rt.stats().actors
        with pytest.raises(TypeError, match=setting):
            rt.spawn(Echo(), **{setting: value})
        assert rt.stats().actors == before


@pytest.mark.parametrize(("setting", "value"), [("mailbox_size", 0), ("concurrency", -1), ("max_restarts", -1)])
async def test_spawn_refuses_a_count_out_of_range(setting: str, value: int) -> None:
    async with Runtime() as rt:
        with pytest.raises(ValueError, match=setting):
            rt.spawn(Echo(), **{setting: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "error"),
    [(math.nan, ValueError), (0, ValueError), (-1.0, ValueError), (True, TypeError), ("60", TypeError)],
)
async def test_spawn_refuses_a_bad_restart_window(value: Any, error: type[Exception]) -> None:
    async with Runtime() as rt:
        with pytest.raises(error, match="restart_window"):
            rt.spawn(Echo, on_failure="restart", restart_window=value)


async def test_spawn_takes_an_int_restart_window_and_an_infinite_one() -> None:
    async with Runtime() as rt:
        assert not rt.spawn(Echo, on_failure="restart", restart_window=60).stopped
        assert not rt.spawn(Echo, on_failure="restart", restart_window=math.inf).stopped


@pytest.mark.parametrize("name", [5, b"x", ("a",)], ids=repr)
async def test_spawn_refuses_a_name_that_is_not_a_string(name: Any) -> None:
    async with Runtime() as rt:
        with pytest.raises(TypeError, match="name"):
            rt.spawn(Echo(), name=name)


@pytest.mark.parametrize(
    ("within", "error"),
    [(math.nan, ValueError), (-1, ValueError), (-math.inf, ValueError), (True, TypeError), ("1", TypeError)],
    ids=repr,
)
@pytest.mark.parametrize("direct", [True, False])
async def test_ask_refuses_a_bad_timeout_and_sends_nothing(within: Any, error: type[Exception], direct: bool) -> None:
    async with Runtime() as rt:
        actor = Echo()
        ref = rt.spawn(actor, direct=direct)
        with pytest.raises(error, match="timeout"):
            await ref.ask("x", timeout=within)
        await rt.wait_idle()
        assert actor.seen == []
        assert await ref.ask("y", timeout=1) == "y"  # good ones still work: an int, a float, zero or more
        assert await ref.ask("z", timeout=math.inf) == "z"


@pytest.mark.parametrize(
    ("within", "error"), [(math.nan, ValueError), (-1, ValueError), (True, TypeError), ("1", TypeError)], ids=repr
)
async def test_stop_refuses_a_bad_timeout_and_stops_nothing(within: Any, error: type[Exception]) -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Echo())
        with pytest.raises(error, match="timeout"):
            await rt.stop(ref, timeout=within)
        assert not ref.stopped
        await rt.stop(ref, timeout=0)
        assert ref.stopped


@pytest.mark.parametrize("ref", ["x", None, Echo()], ids=["str", "None", "an actor, not its ref"])
async def test_stop_refuses_what_is_not_an_actor_ref(ref: Any) -> None:
    async with Runtime() as rt:
        with pytest.raises(TypeError, match="ActorRef"):
            await rt.stop(ref)


@pytest.mark.parametrize(
    ("value", "error"), [(math.nan, ValueError), (-1, ValueError), (True, TypeError), ("5", TypeError)], ids=repr
)
def test_runtime_refuses_a_bad_drain_timeout(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="drain_timeout"):
        Runtime(drain_timeout=value)


async def test_an_infinite_drain_timeout_is_taken_and_the_exit_runs_in_full() -> None:
    stopped: list[str] = []

    class Hooked(Echo):
        async def on_start(self) -> None:
            pass

        async def on_stop(self) -> None:
            stopped.append("on_stop")

    recorder = InMemoryRecorder()
    async with Runtime([recorder], drain_timeout=math.inf) as rt:
        ref = rt.spawn(Hooked())
        assert await ref.ask("x") == "x"
    assert stopped == ["on_stop"]
    assert ref.stopped
    await anyio.lowlevel.checkpoint()


@pytest.mark.parametrize("background", [False, True])
async def test_spawn_task_refuses_a_function_that_is_not_async_and_the_runtime_goes_on(background: bool) -> None:
    """A sync function used to be called in the task and fail there (awaiting what it returned): an escalation
    that cancelled the whole runtime and left ``async with`` with a ``TypeError`` nobody made at the call."""
    ran: list[str] = []
    async with Runtime() as rt:
        with pytest.raises(TypeError, match="async"):
            rt.spawn_task(ran.append, "sync", background=background)  # type: ignore[arg-type]
        assert rt.stats().tasks == 0

        done = anyio.Event()

        async def fine(value: str) -> None:
            ran.append(value)
            done.set()

        rt.spawn_task(fine, "async", background=background)
        await done.wait()
        reached = True
    assert reached
    assert ran == ["sync", "async"]  # (called to learn what it returns, as anyio's start_soon does)
