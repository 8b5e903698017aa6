"""``MultiProvider`` (and so ``with_pool``'s provider) takes its members once: an iterator of members is read once.

Before, the base checked the members by iterating them and then took ``tuple(members)``: an iterator was empty
by then, and the provider was left without members — a pool answering every call with "every member has an open
circuit breaker", or a ``TypeError`` from ``len()`` of its weights.  A lone provider given where a sequence is
meant was a raw "object is not iterable".
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import LLMRequest, Message, ScriptedProvider
from agentactors.resilience import MultiProvider
from agentactors.resilience.pool import PoolProvider

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

REQUEST = LLMRequest([Message.user("hi")])


class _First(MultiProvider):
    async def complete(self, request: LLMRequest) -> Any:
        return await self.members[0].complete(request)


def test_a_multi_provider_built_from_an_iterator_keeps_its_members() -> None:
    a, b = ScriptedProvider("a", name="a"), ScriptedProvider("b", name="b")
    multi = _First(iter([a, b]))
    assert multi.members == (a, b) and multi.name == "multi(a, b)"


@pytest.mark.parametrize("weights", [None, (1.0, 3.0)])
async def test_a_pool_built_from_an_iterator_serves_from_its_members(anyio_backend: Any, weights: Any) -> None:
    a, b = ScriptedProvider(["a"] * 4, name="a"), ScriptedProvider(["b"] * 4, name="b")
    pool = PoolProvider((m for m in (a, b)), strategy="weighted" if weights else "round_robin", weights=weights,
                        min_headroom=0.1, name=None, clock=None)
    assert len(pool.in_flight) == 2
    answers = {(await pool.complete(REQUEST)).content for _ in range(4)}
    assert answers == {"a", "b"}


@pytest.mark.parametrize("members", [[], (), iter([])])
def test_no_members_is_a_value_error(members: Any) -> None:
    with pytest.raises(ValueError, match="at least one provider"):
        _First(members)


@pytest.mark.parametrize("members", [ScriptedProvider("x"), "ab", 3])
def test_a_lone_provider_or_a_non_sequence_is_a_type_error_naming_it(members: Any) -> None:
    with pytest.raises(TypeError, match="takes a sequence of providers"):
        _First(members)
