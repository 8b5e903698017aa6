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

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..providers.port import LLMProvider
from ._checks import check_flag, check_name, error_kinds
from ._numbers import is_number, seconds_or_none
from .breaker import CircuitBreakerProvider, with_circuit_breaker
from .fallback import FallbackOn, with_fallback
from .hedge import parse_after, with_hedge
from .pool import STRATEGIES, Strategy, with_pool
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
    # In this call's words (attempt_timeout=, not with_timeout's attempt=), before any layer is built.
    seconds_or_none("attempt_timeout", attempt_timeout)
    seconds_or_none("first_event_timeout", first_event_timeout)
    seconds_or_none("idle_timeout", idle_timeout)
    if hedge_after is not None:  # (with_hedge would name its after=)
        parse_after(hedge_after, "hedge_after")
    _check_extra(hedge_max_extra)
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
    for key in options:
        # {1: 1} was "keywords must be strings"; {"provider": q} "got multiple values for argument 'provider'".
        if not isinstance(key, str):
            raise TypeError(f"{setting} takes keyword arguments by name (str keys), not {key!r}")
        if key == "provider":
            raise TypeError(f"{setting} cannot hold 'provider': the layer wraps the member it is given")
    return dict(options)


def _check_extra(value: object) -> None:
    """:raises ValueError: ``hedge_max_extra`` is not a share of the calls (a number from 0 to 1, not a bool)."""
    if not is_number(value) or not 0 <= value <= 1:  # type: ignore[operator]  # (NaN fails it)
        raise ValueError(f"hedge_max_extra must be a fraction of the calls, between 0 and 1, not {value!r}")


def _check_pool(strategy: object, weights: object) -> list[float] | None:
    """``pool_strategy`` and ``pool_weights`` checked in the chain's words, whether or not a member is a pool.

    :raises TypeError: ``weights`` is not a collection (``5`` was "'int' object is not iterable").
    :raises ValueError: an unknown strategy; weights without ``"weighted"``, or ``"weighted"`` without them;
        a weight that is not a positive, finite number.
    """
    if not isinstance(strategy, str) or strategy not in STRATEGIES:
        raise ValueError(f"pool_strategy must be one of {sorted(STRATEGIES)}, not {strategy!r}")
    if weights is None:
        if strategy == "weighted":
            raise ValueError("pool_strategy='weighted' needs pool_weights= (one positive number per pool member)")
        return None
    if strategy != "weighted":
        raise ValueError(f"pool_weights are used only with pool_strategy='weighted', not {strategy!r}")
    if isinstance(weights, str | bytes | Mapping) or not isinstance(weights, Iterable):
        raise TypeError(f"pool_weights must be a list of positive numbers, one per pool member, not {weights!r}")
    listed = list(weights)
    if not all(is_number(w) and 0 < w < math.inf for w in listed):
        raise ValueError(f"pool_weights must be positive, finite numbers, not {listed!r}")
    return listed


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

    Every setting is checked when the chain is built, whatever its shape — ``fallback_on``, ``skip_incapable``
    and ``name`` with a single member, ``pool_strategy`` and ``pool_weights`` with no pool, ``hedge_max_extra``
    without ``hedge_after`` — each error naming this call's parameter (``attempt_timeout``, not the
    ``attempt`` of :func:`with_timeout`; ``hedge_after``, not the ``after`` of :func:`with_hedge`).

    Returns the outermost provider; its layers stay reachable (``.members`` of the fallback and the
    pool, ``.inner`` of each decorator; :func:`~agentactors.resilience.describe_chain` draws them all),
    e.g. to read a breaker's state.
    """
    if not members:
        raise ValueError("resilient_chain needs at least one provider")
    # Every setting is checked whatever the chain's shape — a setting its shape leaves unused too (fallback_on=
    # with one member was dropped unread, the same call with two raised) — and in the chain's own words:
    # with_pool would name its strategy= and weights=.
    weights = _check_pool(pool_strategy, pool_weights)
    error_kinds(fallback_on, frozenset())
    check_flag(skip_incapable, "skip_incapable")
    check_name(name)

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
