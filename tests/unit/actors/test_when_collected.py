"""``Runtime.when_collected``: work done in the runtime once an object is garbage-collected.

What the agent layer stops a dropped agent's tool executor with.  The watch holds neither the object nor the
runtime; collection only enqueues (it may happen in any thread, at any point of any code), and the runtime's
own loop runs the work in a task of its own.
"""

from __future__ import annotations

import gc
import threading
import weakref

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.errors import ActorStopped

pytestmark = pytest.mark.anyio


class _Owner:
    pass


class _Echo:
    async def receive(self, message: object) -> object:
        return message


async def _settle() -> None:
    gc.collect()
    for _ in range(5):
        await anyio.lowlevel.checkpoint()


async def test_the_work_runs_in_the_runtime_once_the_owner_is_collected() -> None:
    ran: list[tuple[str, int, object]] = []

    async def work(what: str) -> None:
        ran.append((what, threading.get_ident(), Runtime.current()))

    async with Runtime() as rt:
        owner = _Owner()
        rt.when_collected(owner, work, "gone")
        await _settle()
        assert ran == []  # held: nothing yet
        del owner  # collected here, in the middle of this task: the work only starts later
        assert ran == []
        await _settle()
        assert ran == [("gone", threading.get_ident(), rt)]


async def test_an_actor_stopped_once_its_owner_is_collected() -> None:
    async with Runtime() as rt:
        owner = _Owner()
        ref = rt.spawn(_Echo())
        rt.when_collected(owner, rt.stop, ref)
        assert await ref.ask("hi") == "hi"
        count = rt.stats().actors
        del owner
        await _settle()
        assert rt.stats().actors == count - 1
        with pytest.raises(ActorStopped):
            await ref.ask("hi")


async def test_an_owner_collected_in_another_thread_has_its_work_run_in_the_runtimes() -> None:
    threads: list[int] = []
    done = anyio.Event()

    async def work() -> None:
        threads.append(threading.get_ident())
        done.set()

    async with Runtime() as rt:
        box = [_Owner()]
        rt.when_collected(box[0], work)
        await anyio.to_thread.run_sync(box.clear)  # the last reference dies in a worker thread
        with anyio.fail_after(5):
            await done.wait()
        assert threads == [threading.get_ident()]


async def test_the_watch_keeps_neither_the_owner_nor_the_runtime_alive_and_ends_with_the_runtime() -> None:
    ran: list[str] = []

    async def work() -> None:
        ran.append("ran")

    owner = _Owner()
    async with Runtime() as rt:
        rt.when_collected(owner, work)
    held = weakref.ref(rt)
    del rt
    await _settle()  # (asyncio's loop lets go of the handles that ran in the runtime's context)
    gc.collect()
    assert held() is None  # the owner still lives; the runtime went
    owned = weakref.ref(owner)
    del owner
    await _settle()
    assert owned() is None
    assert ran == []  # the runtime had exited: nothing to do


async def test_misuse_is_refused() -> None:
    async def work() -> None:
        pass

    rt = Runtime()
    with pytest.raises(RuntimeError):
        rt.when_collected(_Owner(), work)  # not entered
    async with rt:
        with pytest.raises(TypeError):
            rt.when_collected(1, work)  # cannot be watched: no weak reference to an int
        with pytest.raises(RuntimeError):
            await anyio.to_thread.run_sync(rt.when_collected, _Owner(), work)  # another thread


async def test_an_owner_collected_while_the_runtime_exits_starts_nothing_and_logs_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An owner let go by a task the exit cancels (a run's frame, a recorder's traceback) is collected while the
    task group closes: its work is not started into a closing task group (trio: "Nursery is closed to new
    arrivals", logged as an error) — the exit stops every actor anyway."""
    ran: list[str] = []

    async def work() -> None:
        ran.append("ran")

    async def holds(owner: _Owner) -> None:
        await anyio.sleep_forever()  # cancelled by the exit: its frame, and the owner with it, go then

    async def lingers() -> None:
        try:
            await anyio.sleep_forever()
        finally:  # the task group goes on waiting for this one while the loop runs its callbacks
            with anyio.CancelScope(shield=True):
                for _ in range(20):
                    gc.collect()  # the cancelled task's frame (the owner in it) goes now, mid-exit
                    await anyio.lowlevel.checkpoint()

    async with Runtime(drain_timeout=0) as rt:
        owner = _Owner()
        rt.when_collected(owner, work)
        rt.spawn_task(lingers)
        rt.spawn_task(holds, owner)
        del owner
        await _settle()
    await _settle()
    assert ran == []
    assert not [r for r in caplog.records if r.levelname == "ERROR"], [r.getMessage() for r in caplog.records]
