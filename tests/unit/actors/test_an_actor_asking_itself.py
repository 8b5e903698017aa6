"""An actor that asks (or tells, into a full mailbox) itself from its own handler, where it would wait forever.

With ``concurrency=1`` the handler holds the actor's only slot: a message it queues to its own actor is
served only after that handler returns, and the handler waits for that very answer.  The same holds for
``on_start`` (nothing is served before it returns), whatever the concurrency.  That used to hang the asker
for good (or, with a timeout, until an ``AskTimeout`` that named no cause).  It is now an ``ActorDeadlockError`` at the
call, before anything is sent: the actor goes on, and the handler can catch it.  The check runs only where an
ask queues behind a busy actor, never on the direct path.

An actor that can still serve the ask — another free slot — is asked as before: that is no deadlock.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors import ActorRef, Runtime
from agentactors.errors import ActorDeadlockError, ActorError, ActorStopped

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Loopy:
    """``("ask", x)`` asks its own actor ``x`` (``"tell"``: tells it); anything else is answered as it is."""

    def __init__(self) -> None:
        self.ref: ActorRef | None = None
        self.seen: list[Any] = []

    async def receive(self, message: Any) -> Any:
        self.seen.append(message)
        assert self.ref is not None
        if isinstance(message, tuple) and message[0] == "ask":
            try:
                return ("answered", await self.ref.ask(message[1], timeout=message[2] if len(message) > 2 else None))
            except ActorError as exc:
                return ("refused", type(exc), str(exc))
        if isinstance(message, tuple) and message[0] == "tell":
            try:
                for item in message[1]:
                    await self.ref.tell(item)
            except ActorError as exc:
                return ("refused", type(exc), str(exc))
            return "told"
        await anyio.lowlevel.checkpoint()
        return message


def spawn(rt: Runtime, **kwargs: Any) -> tuple[Loopy, ActorRef]:
    actor = Loopy()
    actor.ref = rt.spawn(actor, **kwargs)
    return actor, actor.ref


@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("within", [None, 30.0])
async def test_a_self_ask_with_one_slot_is_refused_at_once_and_sends_nothing(
    direct: bool, within: float | None
) -> None:
    async with Runtime() as rt:
        actor, ref = spawn(rt, direct=direct)
        with anyio.fail_after(1):  # (virtual time: a hang would be a TimeoutError here, not a wait)
            answer = await ref.ask(("ask", "inner", within) if within else ("ask", "inner"))
        assert answer[0] == "refused" and answer[1] is ActorDeadlockError
        assert "itself" in answer[2] and "concurrency" in answer[2]
        assert actor.seen == [("ask", "inner", within) if within else ("ask", "inner")]  # "inner" never sent
        assert await ref.ask("after") == "after"  # the actor goes on
        assert rt.stats().queued == 0


async def test_a_self_tell_into_a_full_mailbox_is_refused_and_what_fit_is_handled() -> None:
    async with Runtime() as rt:
        actor, ref = spawn(rt, mailbox_size=2)
        with anyio.fail_after(1):
            answer = await ref.ask(("tell", ["a", "b", "c"]))
        assert answer[0] == "refused" and answer[1] is ActorDeadlockError
        await rt.wait_idle()
        assert actor.seen == [("tell", ["a", "b", "c"]), "a", "b"]  # "c" was not sent


async def test_a_self_ask_from_on_start_is_refused_whatever_the_concurrency() -> None:
    class StartsBySelfAsking(Loopy):
        async def on_start(self) -> None:
            assert self.ref is not None
            with pytest.raises(ActorDeadlockError, match="itself"):
                await self.ref.ask("from on_start")
            self.seen.append("started")

    async with Runtime() as rt:
        for direct in (True, False):
            actor = StartsBySelfAsking()
            actor.ref = rt.spawn(actor, concurrency=4, direct=direct)
            with anyio.fail_after(1):
                assert await actor.ref.ask("first") == "first"
            assert actor.seen == ["started", "first"]


async def test_a_self_ask_with_a_free_slot_is_served() -> None:
    async with Runtime() as rt:
        _, ref = spawn(rt, concurrency=2)
        with anyio.fail_after(1):
            assert await ref.ask(("ask", "inner")) == ("answered", "inner")


async def test_another_askers_ask_queued_behind_a_busy_actor_is_not_refused() -> None:
    release = anyio.Event()

    class Busy:
        async def receive(self, message: Any) -> Any:
            if message == "hold":
                await release.wait()
            return message

    async with Runtime() as rt:
        ref = rt.spawn(Busy())
        answers: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def holder() -> None:
                answers.append(await ref.ask("hold"))

            tg.start_soon(holder)
            await anyio.wait_all_tasks_blocked()
            assert rt.stats().busy == 1

            async def queued() -> None:
                answers.append(await ref.ask("queued"))

            tg.start_soon(queued)
            await anyio.wait_all_tasks_blocked()
            assert rt.stats().queued == 1  # waiting behind the holder, not refused
            release.set()
        assert sorted(answers) == ["hold", "queued"]


async def test_a_task_the_handler_waits_for_is_not_the_handler() -> None:
    """Only the handler's own task is checked: a child task's ask queues (and a stop ends the wait)."""

    class Spawner:
        def __init__(self) -> None:
            self.ref: ActorRef | None = None

        async def receive(self, message: Any) -> Any:
            assert self.ref is not None
            if message != "outer":
                return message
            async with anyio.create_task_group() as tg:

                async def child() -> None:
                    with pytest.raises(ActorStopped):
                        await self.ref.ask("inner")  # type: ignore[union-attr]

                tg.start_soon(child)
                await anyio.wait_all_tasks_blocked()
                assert Runtime.current().stats().queued == 1  # type: ignore[union-attr]
                await Runtime.current().stop(self.ref, drain=False)  # type: ignore[union-attr]
            return "done"

    async with Runtime() as rt:
        actor = Spawner()
        actor.ref = rt.spawn(actor)
        with pytest.raises(ActorStopped):
            await actor.ref.ask("outer")


async def test_entered_here_tells_the_scopes_own_task_from_any_other() -> None:
    from agentactors._backend import entered_here

    seen: dict[str, bool] = {}
    outer = anyio.CancelScope()
    with outer:
        with anyio.CancelScope() as inner:
            seen["inner, in it"] = entered_here(inner)
            seen["outer, inside a nested scope"] = entered_here(outer)
            async with anyio.create_task_group() as tg:

                async def child() -> None:
                    seen["outer, from a child task"] = entered_here(outer)

                tg.start_soon(child)
        seen["inner, left"] = entered_here(inner)
    seen["outer, left"] = entered_here(outer)
    seen["never entered"] = entered_here(anyio.CancelScope())
    seen["not a scope"] = entered_here(object())
    assert seen == {
        "inner, in it": True,
        "outer, inside a nested scope": True,
        "outer, from a child task": False,
        "inner, left": False,
        "outer, left": False,
        "never entered": False,
        "not a scope": False,
    }
