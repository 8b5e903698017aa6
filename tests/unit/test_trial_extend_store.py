"""A session store of one's own whose methods are plain functions, not coroutine functions.

The port (``SessionStore``, docs/sessions.md) awaits every method.  A ``def load`` that returns no awaitable (a
sync database wrapped as it is) failed at the session's first turn with Python's "object NoneType can't be used in
'await' expression", naming neither the store nor the method; now it is a ``TypeError`` naming both, where it is
awaited.  A plain ``def`` that returns an awaitable (a store forwarding to another, an ``async def`` under a sync
decorator) is as good as an ``async def``: it is not refused.
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


@pytest.mark.parametrize("method", ["load", "commit"])
async def test_a_store_method_that_returns_no_awaitable_is_named_where_it_is_awaited(method: str) -> None:
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(["hello"]))
        session = rt.session(agent, "k", store=_plain(method))
        with pytest.raises(TypeError) as caught:
            await session.send("hi")
    text = str(caught.value)
    assert "Mine" in text and f"{method}()" in text and "async def" in text, text


class Forwarding:
    """A store that forwards to another with plain ``def``s returning its coroutines (for metrics, say)."""

    def __init__(self) -> None:
        self.inner = MemoryStore()

    def load(self, key: str) -> Any:
        return self.inner.load(key)

    def commit(self, record: SessionRecord, *, expected_version: int | None) -> Any:
        return self.inner.commit(record, expected_version=expected_version)

    def delete(self, key: str, *, expected_version: int | None = None) -> Any:
        return self.inner.delete(key, expected_version=expected_version)

    def aclose(self) -> Any:
        return self.inner.aclose()


async def test_a_store_whose_plain_methods_return_awaitables_serves_turns() -> None:
    store = Forwarding()
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(["hello", "again"])), "k", store=store)
        assert (await session.send("hi")).content == "hello"
        assert (await session.send("more")).content == "again"
    record = await store.inner.load("k")
    assert record is not None and record.version == 2


async def test_a_store_of_coroutine_functions_serves_turns() -> None:
    store = Mine()
    assert check_store(store) is store
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(["one", "two"])), "k", store=store)
        assert (await session.send("hi")).content == "one"
        assert (await session.send("again")).content == "two"
    stored = await store.load("k")
    assert stored is not None and stored.version == 2 and len(stored.messages) == 4
