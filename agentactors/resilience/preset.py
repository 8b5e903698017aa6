"""``resilient_chain``: the recommended stack in one line, with defaults that suit a real vendor.

The stack is the one ``docs/resilience.md`` §7 argues for, outer to inner::

    with_fallback(
        with_circuit_breaker(with_retry(with_timeout(a, attempt=60, first_event=20))),
        with_circuit_breaker(with_retry(with_timeout(b, attempt=60, first_event=20))),
    )

— a bound on every attempt (so a hung vendor becomes a ``ProviderTimeout`` the retry can retry,
instead of holding a batch's tail), a retry inside each breaker (one failure counted per exhausted
retry), a breaker per member (a bad primary keeps its statistics to itself) and the fallback
across members (an open member skipped at once).  Nothing here is new behaviour: it is the
decorators, composed in that order, with their own defaults unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..providers.port import LLMProvider
from .breaker import CircuitBreakerProvider, with_circuit_breaker
from .fallback import FallbackOn, with_fallback
from .hedge import with_hedge
from .pool import Strategy, with_pool
from .retry import with_retry
from .timeout import with_timeout

__all__ = ["guarded", "resilient_chain"]

Member = LLMProvider | Any


def guarded(
    provider: Member,
    *,
    attempt_timeout: float | None = 60.0,
    first_event_timeout: float | None = 20.0,
    idle_timeout: float | None = None,
    max_attempts: int = 3,
    retry: Mapping[str, Any] | None = None,
    breaker: Mapping[str, Any] | None = None,
    hedge_after: float | str | None = None,
    hedge_max_extra: float = 0.05,
) -> CircuitBreakerProvider:
    """One member of the stack: ``with_circuit_breaker(with_retry(with_timeout(provider, ...)))``.

    ``retry`` and ``breaker`` are further keyword arguments of :func:`with_retry` and
    :func:`with_circuit_breaker` (``{"base_delay": 1.0}``, ``{"open_duration": 10.0}``, a ``clock``...).
    With every timeout ``None`` the timeout layer is left out.  ``hedge_after`` (default off) puts
    :func:`~agentactors.resilience.with_hedge` between the retry and the timeout, so each attempt is
    hedged after that many seconds (or percentile, ``"p95"``) and each copy is bounded.
    """
    retry_options = _options("retry", retry)
    breaker_options = _options("breaker", breaker)
    if "max_attempts" in retry_options:  # (with_retry would get it twice: "multiple values for keyword argument")
        raise ValueError(
            f"pass max_attempts={retry_options['max_attempts']!r}, not inside retry=: it is a parameter of its own here"
        )
    inner: Any = provider
    if attempt_timeout is not None or first_event_timeout is not None or idle_timeout is not None:
        inner = with_timeout(inner, attempt=attempt_timeout, first_event=first_event_timeout, idle=idle_timeout)
    if hedge_after is not None:
        inner = with_hedge(inner, after=hedge_after, max_extra=hedge_max_extra)
    inner = with_retry(inner, max_attempts=max_attempts, **retry_options)
    return with_circuit_breaker(inner, **breaker_options)


def _options(setting: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` (keyword arguments for a decorator) as a dict; a ``TypeError`` naming ``setting`` otherwise."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):  # retry=1 was "'int' object is not iterable"
        raise TypeError(f"{setting} must be a mapping of keyword arguments ({{'base_delay': 1.0}}) or None, "
                        f"not {type(options).__name__}")
    return dict(options)


def resilient_chain(
    *members: Member | Sequence[Member],
    attempt_timeout: float | None = 60.0,
    first_event_timeout: float | None = 20.0,
    idle_timeout: float | None = None,
    max_attempts: int = 3,
    retry: Mapping[str, Any] | None = None,
    breaker: Mapping[str, Any] | None = None,
    fallback_on: FallbackOn | None = None,
    skip_incapable: bool = False,
    pool_strategy: Strategy = "least_loaded",
    pool_weights: Iterable[float] | None = None,
    name: str | None = None,
    hedge_after: float | str | None = None,
    hedge_max_extra: float = 0.05,
) -> LLMProvider:
    """The recommended resilient stack over ``members``, in fallback order, with sane defaults.

    Each member becomes ``with_circuit_breaker(with_retry(with_timeout(member)))`` (:func:`guarded`):

    * ``attempt_timeout=60`` bounds each attempt (a whole stream included) and
      ``first_event_timeout=20`` a stream's time to first token, so a hung vendor costs one bounded
      attempt, not the batch's tail; ``idle_timeout`` (default off) bounds the silence between
      stream events.  ``None`` turns a bound off.
    * ``max_attempts=3`` with :func:`with_retry`'s backoff (0.5 s doubling, jittered, the vendor's
      ``Retry-After`` honoured up to 60 s); ``retry={...}`` passes more of its arguments.
    * a :func:`with_circuit_breaker` per member, with its defaults; ``breaker={...}`` passes more.
    * ``hedge_after`` (default ``None``: off) hedges each attempt of a member that has not answered
      after that many seconds, or a percentile of its latencies (``"p95"``), with at most
      ``hedge_max_extra`` of its calls hedged (:func:`~agentactors.resilience.with_hedge`).

    The members are then joined by :func:`with_fallback` (``fallback_on``, ``skip_incapable`` as
    there); a single member is returned guarded, without a fallback around it.  A member given as a
    list or tuple of providers is a pool of equivalent deployments: each is guarded, then joined by
    :func:`with_pool` (``pool_strategy``, ``pool_weights``), so a pool can be one step of the chain::

        resilient_chain([openai_eu, openai_us], anthropic)   # two regions first, then another vendor

    Returns the outermost provider; its layers stay reachable (``.members`` of the fallback and the
    pool, ``.inner`` of each decorator; :func:`~agentactors.resilience.describe_chain` draws them all),
    e.g. to read a breaker's state.
    """
    if not members:
        raise ValueError("resilient_chain needs at least one provider")
    # Said in the chain's own words: with_pool would name its strategy= and weights=.
    if pool_weights is not None and pool_strategy != "weighted":
        raise ValueError(f"pool_weights are used only with pool_strategy='weighted', not {pool_strategy!r}")
    weights = list(pool_weights) if pool_weights is not None else None

    def guard(provider: Member) -> CircuitBreakerProvider:
        return guarded(
            provider,
            attempt_timeout=attempt_timeout,
            first_event_timeout=first_event_timeout,
            idle_timeout=idle_timeout,
            max_attempts=max_attempts,
            retry=retry,
            breaker=breaker,
            hedge_after=hedge_after,
            hedge_max_extra=hedge_max_extra,
        )

    steps: list[Any] = []
    for member in members:
        if isinstance(member, list | tuple):
            if not member:
                raise ValueError("a pool in resilient_chain needs at least one provider")
            steps.append(with_pool(*(guard(p) for p in member), strategy=pool_strategy, weights=weights))
        else:
            steps.append(guard(member))
    if len(steps) == 1:
        return steps[0]  # type: ignore[no-any-return]
    return with_fallback(*steps, fallback_on=fallback_on, skip_incapable=skip_incapable, name=name)
