"""A session store of one's own whose methods are plain functions, not coroutine functions.

The port (``SessionStore``, docs/sessions.md) says every method is a coroutine function, and ``check_store`` is
where a store is taken (``rt.session(store=)``, ``rt.recover(sessions=)``).  It asked only that the four methods
be callable, so a ``def load`` (a sync database wrapped as it is) failed at the session's first turn with
Python's "object NoneType can't be used in 'await' expression", naming neither the store nor the method — and a
plain ``def aclose`` failed the runtime's exit.  Now it is a ``TypeError`` naming both, when the store is taken.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import Agent, Runtime, ScriptedProvider
from agentactors.sessions import MemoryStore, SessionRecord
from agentactors.sessions.store import check_store

pytestmark = pytest.mark.anyio


class Mine:
    """A store of one's own: ``MemoryStore`` behind the port's four coroutine functions."""

    def __init__(self) -> None:
        self.inner = MemoryStore()

    async def load(self, key: str) -> SessionRecord | None:
        return await self.inner.load(key)

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        return await self.inner.commit(record, expected_version=expected_version)

    async def delete(self, key: str, *, expected_version: int | None = None) -> bool:
        return await self.inner.delete(key, expected_version=expected_version)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _plain(method: str) -> Mine:
    """A ``Mine`` whose ``method`` is a plain function (what a sync database's method is)."""

    def plain(self: Mine, *args: Any, **kwargs: Any) -> None:
        return None

    made: Mine = type("Mine", (Mine,), {method: plain})()
    return made


@pytest.mark.parametrize("method", ["load", "commit", "delete", "aclose"])
async def test_a_store_method_that_is_no_coroutine_function_is_refused_when_the_store_is_taken(method: str) -> None:
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(["hello"]))
        with pytest.raises(TypeError) as caught:
            rt.session(agent, "k", store=_plain(method))
    text = str(caught.value)
    assert "Mine" in text and f"{method}()" in text and "async def" in text, text


async def test_a_store_of_coroutine_functions_serves_turns() -> None:
    store = Mine()
    assert check_store(store) is store
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(["one", "two"])), "k", store=store)
        assert (await session.send("hi")).content == "one"
        assert (await session.send("again")).content == "two"
    stored = await store.load("k")
    assert stored is not None and stored.version == 2 and len(stored.messages) == 4
