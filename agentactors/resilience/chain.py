"""``describe_chain``: a decorated provider as a small frozen tree, so nothing else walks ``inner`` / ``members``.

``resilient_chain(a, b)`` is a fallback chain over breakers over retries over timeouts over vendors; the
agent (which vendors does a run reach?) and the pool (where is a member's breaker, its vendor's rate-limit
state?) each need to see through it.  This is the one place that knows how: a
:class:`~agentactors.resilience.ProviderDecorator` wraps its ``inner`` provider, a
:class:`~agentactors.resilience.MultiProvider` serves with its ``members`` — and a user's composite that
follows the same public shape (an ``inner`` provider, a ``members`` tuple or list) is seen through the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final, Literal

import attrs

from ..providers.port import name_of
from .decorator import ProviderDecorator
from .multi import MultiProvider

__all__ = ["ChainNode", "describe_chain"]

Role = Literal["decorator", "multi", "provider"]

#: How deep a chain is followed; a deeper one (or a cycle) ends in a node with no children.
MAX_DEPTH: Final = 64


@attrs.frozen(slots=True)
class ChainNode:
    """One provider of a chain and what it wraps.

    :param provider: the provider itself (to read a breaker's state, a vendor's ``rate_limit``, ...).
    :param name: its name (:func:`~agentactors.providers.port.name_of`).
    :param kind: its type's name (``"RetryingProvider"``, ``"OpenAIProvider"``).
    :param role: ``"decorator"`` (wraps one provider: ``children`` holds it), ``"multi"`` (serves with
        several: ``children`` holds them, in order) or ``"provider"`` (wraps nothing).
    :param children: the nodes of what it wraps.
    """

    provider: Any = attrs.field(eq=False, repr=False)
    name: str
    kind: str
    role: Role
    children: tuple[ChainNode, ...] = ()

    def walk(self) -> Iterator[ChainNode]:
        """This node and every node under it, depth first, outer to inner, members in order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def spine(self) -> Iterator[ChainNode]:
        """This node and the ones it decorates, outer to inner, down to the first that is not a decorator."""
        node: ChainNode | None = self
        while node is not None:
            yield node
            node = node.children[0] if node.role == "decorator" and node.children else None

    def providers(self) -> tuple[ChainNode, ...]:
        """The nodes at the ends of the chain (the vendors' providers, a test double), in order."""
        return tuple(node for node in self.walk() if node.role == "provider")


def _attribute(provider: object, name: str) -> object:
    try:
        return getattr(provider, name, None)
    except Exception:
        # A user's composite's property; a bug in it must not break describing it.
        return None


def _wrapped(provider: object) -> tuple[Role, tuple[Any, ...]]:
    """What ``provider`` wraps, and how: a base's public ``inner`` / ``members``, else the same shape by name."""
    if isinstance(provider, ProviderDecorator):
        return "decorator", (provider.inner,)
    if isinstance(provider, MultiProvider):
        return "multi", provider.members
    members = _attribute(provider, "members")
    if isinstance(members, tuple | list):
        return "multi", tuple(members)
    inner = _attribute(provider, "inner")
    if inner is not None and inner is not provider:
        return "decorator", (inner,)
    return "provider", ()


def describe_chain(provider: object) -> ChainNode:
    """``provider`` and everything it wraps, as a frozen tree of :class:`ChainNode`.

    ``describe_chain(resilient_chain(a, b))`` is a ``multi`` node (the fallback chain) whose children are
    the members' spines (breaker → retry → timeout decorators) ending in ``a`` and ``b`` as ``provider``
    nodes; ``.providers()`` lists the ends, ``.spine()`` follows one member's decorators.
    """
    return _describe(provider, 0)


def _describe(provider: object, depth: int) -> ChainNode:
    role, wrapped = _wrapped(provider) if depth < MAX_DEPTH else ("provider", ())
    children = tuple(_describe(p, depth + 1) for p in wrapped)
    return ChainNode(provider, name_of(provider), type(provider).__name__, role, children)
