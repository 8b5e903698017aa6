"""describe_chain: one public description of a decorated provider, so nothing else walks ``inner`` / ``members``."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from agentactors.messages import LLMRequest, LLMResponse
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import (
    ChainNode,
    CircuitBreakerProvider,
    describe_chain,
    resilient_chain,
    with_pool,
    with_retry,
)


def test_a_resilient_chain_is_a_fallback_over_guarded_members() -> None:
    a, b = ScriptedProvider(["x"], name="a"), ScriptedProvider(["x"], name="b")
    tree = describe_chain(resilient_chain(a, b))
    assert (tree.role, tree.kind, tree.name) == ("multi", "FallbackProvider", "fallback(a, b)")
    for child, end in zip(tree.children, (a, b), strict=True):
        spine = list(child.spine())
        assert [n.kind for n in spine] == [
            "CircuitBreakerProvider",
            "RetryingProvider",
            "TimeoutProvider",
            "ScriptedProvider",
        ]
        assert [n.role for n in spine] == ["decorator", "decorator", "decorator", "provider"]
        assert spine[-1].provider is end and spine[-1].children == ()
        assert isinstance(spine[0].provider, CircuitBreakerProvider)
    assert [n.provider for n in tree.providers()] == [a, b]
    assert len(list(tree.walk())) == 1 + 2 * 4


def test_a_pool_inside_a_chain_is_a_multi_node_and_a_spine_stops_at_it() -> None:
    eu, us, other = (ScriptedProvider(["x"], name=n) for n in ("eu", "us", "other"))
    tree = describe_chain(resilient_chain([eu, us], other))
    pool = tree.children[0]
    assert (pool.role, pool.kind) == ("multi", "PoolProvider")
    assert [n.name for n in tree.providers()] == ["eu", "us", "other"]
    spine = describe_chain(with_retry(with_pool(eu, us))).spine()
    assert [n.kind for n in spine] == ["RetryingProvider", "PoolProvider"]


def test_a_bare_provider_is_one_node_and_the_value_is_frozen() -> None:
    vendor = OpenAIProvider("gpt-4o", api_key="k")
    node = describe_chain(vendor)
    assert node == ChainNode(vendor, "openai", "OpenAIProvider", "provider")
    assert node.providers() == (node,) and list(node.spine()) == [node]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        node.name = "x"  # type: ignore[misc]


class UserWrapper:
    """A user's composite of the same public shape, not built on the bases: an ``inner`` provider."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = "wrapper"

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover - never called
        return await self.inner.complete(request)  # type: ignore[no-any-return]


class UserGroup:
    """A user's composite with a ``members`` list."""

    def __init__(self, *members: Any) -> None:
        self.members = list(members)


def test_a_users_composite_of_the_same_shape_is_seen_through() -> None:
    a, b = ScriptedProvider(["x"], name="a"), ScriptedProvider(["x"], name="b")
    tree = describe_chain(UserGroup(UserWrapper(a), with_retry(b)))
    assert tree.role == "multi" and tree.name == "UserGroup"
    assert [n.role for n in tree.children[0].spine()] == ["decorator", "provider"]
    assert [n.provider for n in tree.providers()] == [a, b]


def test_a_cycle_ends_instead_of_recursing_forever() -> None:
    first = UserWrapper(None)
    second = UserWrapper(first)
    first.inner = second
    nodes = list(describe_chain(first).walk())
    assert 2 < len(nodes) <= 65 and nodes[-1].children == ()
    selfish = UserWrapper(None)
    selfish.inner = selfish
    assert describe_chain(selfish).role == "provider"


def test_a_broken_property_does_not_break_the_description() -> None:
    class Broken:
        @property
        def members(self) -> Any:
            raise RuntimeError("broken")

        @property
        def inner(self) -> Any:
            raise RuntimeError("broken")

    assert describe_chain(Broken()).role == "provider"
