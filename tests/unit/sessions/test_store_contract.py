"""A session store (or agent) of the user's own that breaks its contract: a typed error naming it, at once.

A store's ``load`` that returned something else than a :class:`SessionRecord` (a dict, say), a record of another
key, or one with version 0 (what a record not stored yet has), was taken as it was: the turn failed later with an
``AttributeError`` from deep in the actor, or the session went on holding another conversation's history under
its key (and committed onto it).  A ``commit`` returning something else than the record it stored left the actor
holding it.  Each is now refused where the actor meets it — a ``TypeError`` (not a record) or ``ValueError``
(another key, no stored version) naming the store — and the session reloads before its next turn.
A prompt given as bytes was read as a sequence of ints (``"Message objects, not int"``): it is refused as bytes.
An agent given to ``open_session`` without ``run`` / ``resume`` failed at its first turn with an ``AttributeError``
(it is refused when the session is opened), and one whose ``run`` returned something else than a ``RunResult``
failed in the actor with an ``AttributeError`` (``'int' object has no attribute 'cancelled'``): a ``TypeError``
naming the agent, nothing committed.

Virtual time on both backends (stores in memory: no threads, no sockets).
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.loop.result import RunResult
from agentactors.messages import LLMRequest, Message
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore, SessionRecord, open_session
from agentactors.sessions.actor import commit_recovered
from agentactors.sessions.journaled import SessionTurn

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def echo_model(request: LLMRequest) -> str:
    return "seen: " + " | ".join(m.content for m in request.messages if m.role == "user")


class Loads(MemoryStore):
    """A ``MemoryStore`` whose ``load`` returns ``answer`` once (then what it stored)."""

    __slots__ = ("answer",)

    def __init__(self, answer: Any) -> None:
        super().__init__()
        self.answer = answer

    async def load(self, key: str) -> Any:
        answer, self.answer = self.answer, None
        return answer if answer is not None else await super().load(key)


class Commits(MemoryStore):
    """A ``MemoryStore`` whose ``commit`` stores the record but returns ``answer(stored)`` once."""

    __slots__ = ("answer",)

    def __init__(self, answer: Any) -> None:
        super().__init__()
        self.answer = answer

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> Any:
        stored = await super().commit(record, expected_version=expected_version)
        answer, self.answer = self.answer, None
        return stored if answer is None else answer(stored)


OTHER = SessionRecord("other", (Message.user("secret of another user"), Message.assistant("ok")), 3)


@pytest.mark.parametrize(
    ("answer", "error", "match"),
    [
        ({"messages": []}, TypeError, "Loads.load.. returned a dict, not a SessionRecord"),
        (OTHER, ValueError, "Loads.load.. returned the record of session 'other' for session 'k'"),
        (SessionRecord("k", (Message.user("x"),), 0), ValueError, "version 0"),
    ],
    ids=["not-a-record", "another-key", "version-0"],
)
async def test_a_store_whose_load_breaks_the_contract_is_a_typed_error(
    answer: Any, error: type[Exception], match: str
) -> None:
    store = Loads(answer)
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=store)
        with pytest.raises(error, match=match):
            await session.send("one")
        assert session.history == () and "k" not in store
        assert (await session.send("two")).content == "seen: two"  # the next turn loads again
        assert session.version == 1


@pytest.mark.parametrize(
    ("answer", "error", "match"),
    [
        (lambda stored: None.__class__, TypeError, "Commits.commit.. returned a type, not a SessionRecord"),
        (lambda stored: attrs.evolve(stored, key="other"), ValueError, "record of session 'other'"),
        (lambda stored: attrs.evolve(stored, version=0), ValueError, "version 0"),
    ],
    ids=["not-a-record", "another-key", "version-0"],
)
async def test_a_store_whose_commit_breaks_the_contract_is_a_typed_error_and_the_session_reloads(
    answer: Any, error: type[Exception], match: str
) -> None:
    store = Commits(answer)
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k", store=store)
        with pytest.raises(error, match=match):
            await session.send("one")
        assert session.history == () and session.version is None  # nothing adopted of what it returned
        # It did store the turn: the next turn reloads and goes on from it.
        assert (await session.send("two")).content == "seen: one | two"
        assert session.version == 2


async def test_a_prompt_of_bytes_is_refused_as_bytes() -> None:
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(echo_model)), "k")
        for prompt in (b"hello", bytearray(b"hello"), memoryview(b"hello")):
            with pytest.raises(TypeError, match=r"not (bytes|bytearray|memoryview)$"):
                await session.send(prompt)  # type: ignore[arg-type]
        assert session.version is None


class Odd:
    """An agent whose ``run`` and ``resume`` answer something else than a ``RunResult``."""

    name = "odd"

    async def run(self, prompt: Any, **options: Any) -> Any:
        return 5

    async def resume(self, state: Any, decisions: Any, **options: Any) -> Any:
        return 5


async def test_an_agent_that_is_not_one_is_refused_when_the_session_is_opened() -> None:
    async with Runtime() as rt:
        for agent in (None, "agent", object()):
            with pytest.raises(TypeError, match=r"run.*resume"):
                open_session(agent, "k", runtime=rt, store=None, idle_timeout=60.0)


async def test_a_run_that_answers_no_run_result_is_a_type_error_and_commits_nothing() -> None:
    async with Runtime() as rt:
        session = open_session(Odd(), "k", runtime=rt, store=None, idle_timeout=60.0)
        with pytest.raises(TypeError, match=r"'odd'.*returned int, not a RunResult"):
            await session.send("one")
        assert session.version is None and session.history == ()


async def test_a_recovered_turn_committed_to_a_store_that_breaks_the_contract_is_a_type_error() -> None:
    """``rt.recover(sessions=store)`` commits through the same port: an AttributeError (``'type' object has no
    attribute 'version'``) before."""
    store = Commits(lambda stored: None.__class__)
    result = RunResult("seen: one", [Message.user("one"), Message.assistant("seen: one")], run_id="run-1")
    with pytest.raises(TypeError, match=r"Commits.commit.. returned a type, not a SessionRecord"):
        await commit_recovered(store, SessionTurn("k", None, 0), result, (Message.user("one"),))
