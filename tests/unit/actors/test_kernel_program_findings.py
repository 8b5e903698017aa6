"""What random kernel programs (``test_kernel_programs.py``) found, each shrunk to its smallest program."""

from __future__ import annotations

from typing import Any, ClassVar

import anyio
import pytest

from agentactors.actors import Runtime
from agentactors.errors import ActorStopped

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Echo:
    async def receive(self, message: Any) -> Any:
        return message


async def _ask_as_the_runtime_closes() -> list[Any]:
    outcomes: list[Any] = []
    ending = anyio.Event()

    async def last_task() -> None:
        try:
            await anyio.sleep(1000)
        finally:
            ending.set()  # the runtime's last task ends: its group closes now

    async def ask(ref: Any) -> None:
        await ending.wait()
        try:
            outcomes.append(await ref.ask("x"))
        except ActorStopped:
            outcomes.append("stopped")

    with anyio.fail_after(100):
        async with anyio.create_task_group() as tg:
            async with Runtime(drain_timeout=0.5) as rt:
                ref = rt.spawn(Echo(), direct=False)
                rt.spawn_task(last_task, background=True)
                tg.start_soon(ask, ref)
    assert rt.stats().actors == 0
    return outcomes


async def test_an_ask_that_arrives_as_the_runtime_exits_gets_an_answer_or_actor_stopped() -> None:
    # An ask from a task outside the runtime, made while its exit waits for its task group: the worker it
    # needs could no longer start (trio: "Nursery is closed to new arrivals"), and that RuntimeError reached
    # the asker.  It is answered as any message still queued at the exit is: ActorStopped.  (The asker wakes
    # in the scheduling round the group closes in, ahead of the exit or after it as trio's scheduler draws
    # it: twenty rounds all but surely hit the window.)
    for _ in range(20):
        assert await _ask_as_the_runtime_closes() in (["x"], ["stopped"])


async def test_the_exit_waits_for_an_on_stop_that_a_stop_call_elsewhere_is_running() -> None:
    # rt.stop(ref) from a task outside the runtime had started the actor's on_stop when the runtime was left: the
    # exit's own finalize found the actor finalizing and went on, so `async with` was left with the hook still
    # running (and the actor still counted live by rt.stats()).  The exit waits for it, within its hooks' bound.
    finished: list[float] = []

    class SlowStop:
        async def receive(self, message: Any) -> Any:
            return message

        async def on_stop(self) -> None:
            await anyio.sleep(0.5)
            finished.append(anyio.current_time())

    with anyio.fail_after(100):
        async with anyio.create_task_group() as tg:
            async with Runtime(drain_timeout=5) as rt:
                ref = rt.spawn(SlowStop())
                tg.start_soon(rt.stop, ref)
                await anyio.sleep(0.1)  # the stop's on_stop is running now
            assert finished, "the runtime was left while an on_stop was still running"
            assert rt.stats().actors == 0


async def test_the_exit_cuts_off_at_its_bound_an_on_stop_that_a_stop_call_elsewhere_is_running() -> None:
    # The same, with a hook that does not return: the exit bounds every on_stop (max(drain_timeout, 0.1) s, then
    # cut off, logged) — this one too, though it runs in the task of the stop() call, not the runtime's.
    seen: list[tuple[str, float]] = []

    class NeverStops:
        async def receive(self, message: Any) -> Any:
            return message

        async def on_stop(self) -> None:
            try:
                await anyio.sleep(500)
            except anyio.get_cancelled_exc_class():
                seen.append(("cut off", anyio.current_time()))
                raise

    with anyio.fail_after(1000):
        async with anyio.create_task_group() as tg:
            async with Runtime(drain_timeout=0.5) as rt:
                ref = rt.spawn(NeverStops())
                tg.start_soon(rt.stop, ref)
                await anyio.sleep(0.1)
    assert [what for what, _ in seen] == ["cut off"]
    assert seen[0][1] == pytest.approx(0.6)  # at the exit's bound for its hooks
    assert rt.stats().actors == 0


class Incarnations:
    """Each object an incarnation: ``on_start`` takes a second; what ran on which one is recorded."""

    log: ClassVar[list[tuple[str, int]]] = []
    built = 0

    def __init__(self) -> None:
        type(self).built += 1
        self.number = type(self).built
        self.ready = False

    async def on_start(self) -> None:
        await anyio.sleep(1)
        self.ready = True
        type(self).log.append(("started", self.number))

    async def on_stop(self) -> None:
        type(self).log.append(("stopped", self.number))

    async def receive(self, message: Any) -> Any:
        type(self).log.append((f"handled {message[0]}" + ("" if self.ready else " before on_start"), self.number))
        await anyio.sleep(message[1])
        if message[0] == "boom":
            raise Boom(message)
        return message


class Boom(Exception):
    pass


@pytest.mark.parametrize("direct", [True, False])
async def test_a_failure_during_a_restart_neither_orphans_the_new_incarnation_nor_starts_it_twice(direct: bool) -> None:
    # concurrency=2, on_failure="restart": two handlers of the same incarnation fail half a second apart.  The
    # first failure restarts the actor (the new on_start takes a second); the second came from the incarnation
    # already replaced, and restarted the actor again over the one being started: that one's on_start
    # completed, the actor was marked started (with the third incarnation's on_start still running: messages
    # reached it before its on_start), and the second incarnation never got its on_stop.  A failure of an
    # incarnation that was replaced meanwhile is answered and recorded, and restarts nothing.
    Incarnations.log, Incarnations.built = [], 0
    async with Runtime() as rt:
        ref = rt.spawn(Incarnations, concurrency=2, on_failure="restart", direct=direct)
        with anyio.fail_after(100):
            await ref.ask(("warm-up", 0))
            async with anyio.create_task_group() as tg:

                async def fails(after: float) -> None:
                    with pytest.raises(Boom):
                        await ref.ask(("boom", after))

                tg.start_soon(fails, 0.2)  # both handlers run on the first incarnation by then
                tg.start_soon(fails, 0.7)
            await anyio.sleep(0.6)  # the restart's on_start runs until 1.0 after the first failure
            assert await ref.ask(("after", 0)) == ("after", 0)
    log = Incarnations.log
    assert not [entry for entry in log if "before on_start" in entry[0]], log
    started = [n for what, n in log if what == "started"]
    stopped = [n for what, n in log if what == "stopped"]
    assert len(started) == len(set(started)), f"an on_start ran twice: {log}"
    assert sorted(started) == sorted(stopped), f"on_stop must run once for every incarnation started: {log}"
    assert started == [1, 2], log  # the second failure restarted nothing


@pytest.mark.parametrize("direct", [True, False])
async def test_a_sender_let_in_from_the_line_is_served_by_a_free_slot_at_once(direct: bool) -> None:
    # concurrency=2, mailbox_size=1.  A worker that takes a message lets the first sender waiting for room put
    # its message in; whether that one needs a worker of its own was decided counting the taking worker as
    # free, so it waited behind a handler while the actor's second slot stayed empty.
    release, served = anyio.Event(), anyio.Event()
    seen: list[str] = []

    class Hold:
        async def receive(self, message: str) -> str:
            seen.append(message)
            if message == "hold":
                await release.wait()
            else:
                served.set()
            return message

    async with Runtime() as rt:
        ref = rt.spawn(Hold(), concurrency=2, mailbox_size=1, direct=direct)
        assert ref.try_tell("hold")  # queued: its worker has not run yet
        with anyio.fail_after(10):
            await ref.tell("next")  # the mailbox is full: it waits for room, let in as the worker takes "hold"
            await served.wait()
        assert seen == ["hold", "next"]  # served beside "hold", which still waits
        release.set()


async def test_a_handler_telling_its_own_full_actor_with_a_free_slot_does_not_hang() -> None:
    # What the random program found: the same, with the busy handler telling its own actor (concurrency=2, so
    # not refused: another slot can serve) into its full mailbox.  Nothing was served: a hang.
    class TellsItself:
        ref: Any = None

        async def receive(self, message: str) -> str:
            if message == "tell yourself":
                await self.ref.tell("inner")
            return message

    actor = TellsItself()
    async with Runtime() as rt:
        ref = actor.ref = rt.spawn(actor, concurrency=2, mailbox_size=1, direct=False)
        assert ref.try_tell("tell yourself")
        with anyio.fail_after(10):
            await ref.tell("queued")  # the mailbox is full: it waits for room, let in as the worker takes the first
            await rt.wait_idle()


class StartsSlowly(Incarnations):
    async def receive(self, message: Any) -> Any:
        type(self).log.append((f"handled {message}" + ("" if self.ready else " before on_start"), self.number))
        if message == "boom":
            raise Boom(message)
        return message


async def test_a_worker_that_finds_a_restart_under_way_leaves_the_start_to_it() -> None:
    # Two workers start for two queued messages of a started actor (concurrency=2).  The first fails at once
    # and restarts the actor (the new on_start takes a second); the second, running only now, found the actor
    # not started and ran the same new incarnation's on_start itself, beside the restart's: twice.
    StartsSlowly.log, StartsSlowly.built = [], 0
    async with Runtime() as rt:
        ref = rt.spawn(StartsSlowly, concurrency=2, on_failure="restart", direct=False)
        with anyio.fail_after(100):
            assert await ref.ask("warm-up") == "warm-up"
            await rt.wait_idle()
            assert ref.try_tell("boom") and ref.try_tell("next")  # a worker each: neither has run yet
            await rt.wait_idle()
    log = StartsSlowly.log
    started = [n for what, n in log if what == "started"]
    assert started == [1, 2], log
    assert not [entry for entry in log if "before on_start" in entry[0]], log
    assert sorted(started) == sorted(n for what, n in log if what == "stopped"), log


class _Pong:
    async def receive(self, message: Any) -> str:
        return "pong"


class _AsksInItsCleanup:
    """A handler the exit cancels, which asks another actor from a shielded cleanup."""

    def __init__(self, other: Any, out: list[str]) -> None:
        self.other, self.out = other, out

    async def receive(self, message: Any) -> None:
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    self.out.append(await self.other.ask("ping"))
                except ActorStopped:
                    self.out.append("stopped")


async def test_a_shielded_ask_from_a_handler_the_exit_cancelled_is_served_and_the_exit_returns() -> None:
    # The exit waits for the cancelled handler; its ask needs a worker of the other actor.  Refusing every worker
    # while the exit closes left the ask queued for a halt that comes only after that wait: the exit never returned.
    out: list[str] = []
    with anyio.fail_after(60):
        async with Runtime(drain_timeout=0.2) as rt:
            other = rt.spawn(_Pong(), name="other", direct=False)
            asker = rt.spawn(_AsksInItsCleanup(other, out), name="asker", direct=False)
            await asker.tell("go")
            await anyio.sleep(0.05)
    assert out == ["pong"]
