"""Resilient provider chains: retry, fall back, break the circuit, bound the time, spread the load.

Each decorator takes an :class:`~agentactors.providers.port.LLMProvider` and
returns one, so they compose in any order.  The recommended stack, outer to
inner — what ``resilient_chain(a, b)`` builds (:mod:`.preset`)::

    with_fallback(
        with_circuit_breaker(with_retry(with_timeout(a, attempt=60, first_event=20))),
        with_circuit_breaker(with_retry(with_timeout(b, attempt=60, first_event=20))),
    )

``with_pool`` spreads calls over equivalent deployments of one model, skipping
open breakers and steering away from members near their vendor rate limits.

Two public bases make a new layer: :class:`ProviderDecorator` (wraps one provider;
forwards what a model can do, ``capabilities(model)``) and :class:`MultiProvider`
(serves with several members; what they can all do).  :func:`describe_chain` shows
what a decorated provider is made of.

Every decision comes from the error taxonomy of :mod:`agentactors.errors`:
request errors are never retried, moved to a fallback or counted by a breaker.
A call a breaker admitted carries its permit down the stack, so no attempt is
sent to a member whose breaker opened while the call was retrying.
"""

from __future__ import annotations

from ._circuit import CircuitState, CircuitStats
from .breaker import CircuitBreakerProvider, with_circuit_breaker
from .chain import ChainNode, describe_chain
from .decorator import ProviderDecorator
from .fallback import DEFAULT_FALLBACK_ON, FallbackProvider, with_fallback
from .hedge import HedgeProvider, with_hedge
from .multi import MultiProvider
from .pool import PoolProvider, with_pool
from .preset import guarded, resilient_chain
from .retry import RetryingProvider, with_retry
from .timeout import TimeoutProvider, with_timeout

__all__ = [
    "DEFAULT_FALLBACK_ON",
    "ChainNode",
    "CircuitBreakerProvider",
    "CircuitState",
    "CircuitStats",
    "FallbackProvider",
    "HedgeProvider",
    "MultiProvider",
    "PoolProvider",
    "ProviderDecorator",
    "RetryingProvider",
    "TimeoutProvider",
    "describe_chain",
    "guarded",
    "resilient_chain",
    "with_circuit_breaker",
    "with_fallback",
    "with_hedge",
    "with_pool",
    "with_retry",
    "with_timeout",
]
