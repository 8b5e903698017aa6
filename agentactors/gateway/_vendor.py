"""What the vendor itself says of its rate limits, as a ProviderActor's scheduler holds it: :class:`VendorWindow`.

Vendors report on every response how much of their rate limit is left and when it resets
(:mod:`agentactors.providers.http.ratelimits` reads the headers; ``HTTPProvider.rate_limit`` keeps the last
report).  The actor's own budgets are its user's guess of those limits; the report is the vendor's word.  Sent
regardless, every request after "0 requests left, resets in 12 s" meets a 429 — so the scheduler reads the
report and holds its requests until the reset instead.

Whose report: :func:`vendor_of` finds, in the provider the actor hosts, the one that reports — the provider
itself, or the one its decorators (``with_retry``, ``with_timeout``, ``with_circuit_breaker``: each wraps one
``inner`` provider, the same vendor) end in.  Not through a fallback chain or a pool (a provider with
``members``): its members are different vendors (or keys, or regions) with different limits, and one
member's spent budget says nothing of the next one's — ``with_pool`` reads each member's report itself.

What a report allows (:func:`vendor_window`), until each budget's reset (never more than
:data:`VENDOR_HOLD_BOUND` ahead):

* **requests**: the requests left, less the actor's requests in flight — a report is made when the vendor
  admitted its request and arrives with the answer, so the requests sent since are not in it (counting every
  one in flight is the safe side: some may already be counted).  Each request granted takes one; with none
  left, the next waits for the reset.  So pacing adapts before zero: 3 left with 2 in flight lets 1 more go.
* **tokens**: the tokens left; each request granted takes its estimate, and one whose estimate is larger than
  what is left waits for the reset.  Without a token budget the actor estimates no tokens: it then holds only
  at 0 left.  ``input_tokens`` / ``output_tokens`` (Anthropic's separate budgets, which an estimate of both
  cannot be compared with) hold at 0 left only.
* **retry-after** still running (a 429's, a 503's): nothing goes until it ends.

A new report is merged into the window in force, budget by budget, the tighter of the two kept: answers
arrive out of the order the vendor made their reports in (:func:`vendor_window`).  A budget's limit ends at
its reset, the window at its latest one.

Ignored: a report that is not a :class:`~agentactors.providers.http.ratelimits.RateLimitState`, a reset
that is past (refilled since), not said or not a finite time, a count that is not a number >= 0, a budget
nobody knows.
"""

from __future__ import annotations

import math
from typing import Any, Final, TypeGuard

from ..providers.http.ratelimits import RateLimitState

__all__ = ["VENDOR_HOLD_BOUND", "VendorWindow", "vendor_of", "vendor_window"]

#: Seconds: the longest the vendor's word holds the actor's requests — a report's reset, a 429's ``retry-after``
#: (:meth:`~.scheduling.Scheduler.hold_off`) — one minute, the window a per-minute budget refills in.  A longer
#: pause (a daily limit spent) is the circuit breaker's to keep.
VENDOR_HOLD_BOUND: Final = 60.0

# How deep a chain of decorators is followed (a deeper one, or a cycle, reports nothing).
_MAX_DEPTH: Final = 64

# What one granted request takes from a limit: one, its token estimate, or nothing (held at 0 left only).
_REQUESTS: Final = 0
_TOKENS: Final = 1
_AT_ZERO: Final = 2
_KINDS: Final = {"requests": _REQUESTS, "tokens": _TOKENS, "input_tokens": _AT_ZERO, "output_tokens": _AT_ZERO}


def vendor_of(provider: object) -> Any | None:
    """The provider whose ``rate_limit`` is the vendor's report for every call through ``provider``, or ``None``.

    ``provider`` itself when it has a ``rate_limit`` (an HTTPProvider), else the one its decorators wrap, followed
    through each one's public ``inner``; ``None`` at a provider with ``members`` (a fallback chain, a pool: its
    members have different limits) or at the end of the chain.  A property that raises is read as absent.
    """
    node = provider
    for _ in range(_MAX_DEPTH):
        try:
            if hasattr(node, "rate_limit"):
                return node
            members = getattr(node, "members", None)
            inner = getattr(node, "inner", None)
        except Exception:  # a user's composite's property: a bug in it is no report
            return None
        if isinstance(members, tuple | list) or inner is None or inner is node:
            return None
        node = inner
    return None


class _Limit:
    """One budget of a report: ``left`` until ``until`` (the anyio clock), and what a request takes from it."""

    __slots__ = ("kind", "left", "name", "until")

    def __init__(self, name: str, left: float, until: float, kind: int) -> None:
        self.name = name
        self.left = left
        self.until = until
        self.kind = kind


class VendorWindow:
    """What the vendor's last report lets through before its resets (see the module docstring).

    :ivar until: the latest reset: from then on the window says nothing (the scheduler drops it).
    """

    __slots__ = ("limits", "until")

    def __init__(self, limits: list[_Limit]) -> None:
        self.limits = limits
        self.until = max(limit.until for limit in limits)

    def delay(self, estimate: float, now: float, count: int = 1) -> float:
        """Seconds until ``count`` requests of ``estimate`` tokens in all may go (0: now) — the latest reset of a
        budget that has not enough left."""
        wait = 0.0
        for limit in self.limits:
            if now >= limit.until:
                continue
            kind = limit.kind
            need = count if kind == _REQUESTS else estimate if kind == _TOKENS and estimate > 0 else 1
            if limit.left < need and limit.until - now > wait:
                wait = limit.until - now
        return wait

    def take(self, estimate: float) -> None:
        """A request of ``estimate`` tokens was granted."""
        for limit in self.limits:
            if limit.kind == _REQUESTS:
                limit.left -= 1
            elif limit.kind == _TOKENS:
                limit.left -= estimate

    def give_back(self, estimate: float) -> None:
        """A granted request was never sent (its asker left first, a breaker refused it): what it took is back."""
        for limit in self.limits:
            if limit.kind == _REQUESTS:
                limit.left += 1
            elif limit.kind == _TOKENS:
                limit.left += estimate


def vendor_window(
    state: object, now: float, in_flight: int, current: VendorWindow | None = None
) -> VendorWindow | None:
    """The window after a report read at ``now`` with ``in_flight`` requests out, over the ``current`` one: per
    budget, the tighter of the two; ``None`` when nothing holds (see the module docstring for what is ignored).

    The tighter, not the newer: reports arrive in the order the answers do, not the order the vendor made them —
    a long request's report, made when it was admitted, comes after shorter ones made since, and says more is
    left than is.  Within a window what is left only goes down (the requests granted since a report are taken
    from it here), so the smaller count is the fresher word; on a tie, the later reset.
    """
    if not isinstance(state, RateLimitState):
        return current
    latest = now + VENDOR_HOLD_BOUND
    limits = [limit for limit in current.limits if limit.until > now] if current is not None else []
    told = state.retry_after_until
    if _time(told) and told > now:
        _tighten(limits, _Limit("retry_after", 0.0, min(told, latest), _AT_ZERO))
    for budget in state.budgets:
        kind = _KINDS.get(budget.name)
        remaining, reset = budget.remaining, budget.reset
        if kind is None or not _count(remaining) or not _time(reset) or reset <= now:
            continue
        if kind == _AT_ZERO and remaining > 0:
            continue
        left = float(remaining - in_flight if kind == _REQUESTS else remaining)
        _tighten(limits, _Limit(budget.name, left, min(reset, latest), kind))
    return VendorWindow(limits) if limits else None


def _tighten(limits: list[_Limit], new: _Limit) -> None:
    """Keep the tighter of ``new`` and the limit of the same budget in ``limits`` (see :func:`vendor_window`)."""
    for i, old in enumerate(limits):
        if old.name == new.name:
            if new.left < old.left or (new.left == old.left and new.until > old.until):
                limits[i] = new
            return
    limits.append(new)


def _time(value: object) -> TypeGuard[float]:
    """A finite number (not a bool): a time on the anyio clock."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: object) -> TypeGuard[float]:
    """A finite number >= 0: a count of requests or tokens."""
    return _time(value) and value >= 0
