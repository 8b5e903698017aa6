"""A session whose load from its store fails: its events pair up, and the session goes on once the store reads.

``session.deactivated`` used to be emitted for a session whose first load had failed — at the sweep or at the
runtime's exit — although no ``session.activated`` ever was: a tracer counting live sessions went negative, and
one pairing the events saw a deactivation of nothing.  A session that never loaded was never active, so it emits
neither; the failure itself reaches the caller of the turn (the store's error).

Virtual time on both backends (a ``MemoryStore`` that fails on demand: no threads, no sockets).
"""

from __future__ import annotations

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.errors import SessionFormatError
from agentactors.events import InMemoryRecorder, SessionEvent
from agentactors.messages import LLMRequest
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore
from agentactors.sessions.store import SessionRecord

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def echo_model(request: LLMRequest) -> str:
    return "seen: " + " | ".join(m.content for m in request.messages if m.role == "user")


class FailingLoads(MemoryStore):
    """A ``MemoryStore`` whose next ``failures`` loads raise (a damaged record, an unreachable database)."""

    __slots__ = ("failures",)

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def load(self, key: str) -> SessionRecord | None:
        if self.failures:
            self.failures -= 1
            raise SessionFormatError(f"stored session {key!r} does not decode", key=key)
        return await super().load(key)


def _events(rec: InMemoryRecorder) -> list[tuple[str, str | None]]:
    return [(e.type, e.get("reason")) for e in rec.events if isinstance(e, SessionEvent)]


@pytest.mark.parametrize("idle_timeout", [10.0, 1e9], ids=["swept-idle", "at-runtime-exit"])
async def test_a_session_that_never_loaded_emits_no_deactivation(idle_timeout: float) -> None:
    rec = InMemoryRecorder()
    store = FailingLoads(failures=1)
    async with Runtime(recorders=[rec]) as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=store, idle_timeout=idle_timeout)
        with pytest.raises(SessionFormatError, match="'k'"):
            await session.send("one")
        await anyio.sleep(20)
    assert _events(rec) == []


async def test_a_session_whose_first_load_failed_activates_at_the_next_turn_and_pairs_its_events() -> None:
    rec = InMemoryRecorder()
    store = FailingLoads(failures=2)
    async with Runtime(recorders=[rec]) as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=store, idle_timeout=10)
        for _ in range(2):
            with pytest.raises(SessionFormatError):
                await session.send("lost")
        assert (await session.send("one")).content == "seen: one"  # nothing of the failed turns
        await anyio.sleep(20)  # swept idle
        with pytest.raises(SessionFormatError):  # a refresh of an inactive session whose load fails: nothing either
            store.failures = 1
            await session.refresh()
        await anyio.sleep(20)
        assert (await session.send("two")).content == "seen: one | two"
    assert _events(rec) == [
        ("session.activated", None),
        ("session.committed", None),
        ("session.deactivated", "idle"),
        ("session.activated", None),
        ("session.committed", None),
        ("session.deactivated", "runtime_exit"),
    ]


async def test_a_reload_that_fails_after_activation_still_deactivates_what_activated() -> None:
    rec = InMemoryRecorder()
    store = FailingLoads(failures=0)
    async with Runtime(recorders=[rec]) as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=store, idle_timeout=10)
        await session.send("one")
        store.failures = 1
        with pytest.raises(SessionFormatError):
            await session.refresh()  # the session was active: its deactivation is still owed
        assert session.version == 1  # what it last loaded is kept
        await anyio.sleep(20)
    assert _events(rec) == [
        ("session.activated", None),
        ("session.committed", None),
        ("session.deactivated", "idle"),
    ]


async def test_every_store_that_fails_to_close_at_the_runtime_exit_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """The registry raised the first store's error to the runtime (which logs it) and dropped the others unseen."""

    class Unclosable(MemoryStore):
        __slots__ = ("name",)

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

        async def aclose(self) -> None:
            raise OSError(f"cannot close {self.name}")

    caplog.set_level("WARNING")
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(echo_model))
        for name in ("first", "second", "third"):
            await rt.session(agent, "k", store=Unclosable(name)).send("hi")
    logged = caplog.text
    assert all(f"cannot close {name}" in logged for name in ("first", "second", "third")), logged
