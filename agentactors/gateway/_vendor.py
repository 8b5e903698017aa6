"""What the vendor itself says of its rate limits, as a ProviderActor's scheduler holds it: :class:`VendorWindow`.

Vendors report on every response how much of their rate limit is left and when it resets
(:mod:`agentactors.providers.http.ratelimits` reads the headers; ``HTTPProvider.rate_limit`` keeps the last
report).  The actor's own budgets are its user's guess of those limits; the report is the vendor's word.  Sent
regardless, every request after "0 requests left" meets a 429 — so the scheduler reads the report and holds its
requests until the vendor has room again.

Whose report: :func:`vendor_of` finds, in the provider the actor hosts, the one that reports — the provider
itself, or the one its decorators (``with_retry``, ``with_timeout``, ``with_circuit_breaker``: each wraps one
``inner`` provider, the same vendor) end in.  Not through a fallback chain or a pool (a provider with
``members``): its members are different vendors (or keys, or regions) with different limits, and one
member's spent budget says nothing of the next one's — ``with_pool`` reads each member's report itself.

When there is room again: OpenAI and Anthropic refill their limits continuously (a token bucket), and the reset
they report is when a budget is *full* again (OpenAI: "the time until the rate limit resets to its initial
state"; Anthropic: "when the limit will be fully replenished").  So a budget whose limit is said, and above what
is left, refills in a line from what is left now to the limit at the reset — ``(limit - remaining) / (reset -
now)`` a second, the vendor's own refill rate — and a request waits until *its* share has refilled, not until
the reset: at 0 of 500 requests a minute left, the next goes in 0.12 s, not in up to 60.  A budget whose limit
is not said (or not above what is left: nothing tells its pace) holds what it has until its reset.  (A vendor
that keeps fixed windows and says its limit is read as refilling too: it may refuse a request before its reset,
a 429 whose ``retry-after``, if sent, holds every request.)

What a report allows (:func:`vendor_window`), until each budget's reset (never more than
:data:`VENDOR_HOLD_BOUND` ahead; a refill slower than that is held that long at most):

* **requests**: the requests left, less the actor's requests in flight — a report is made when the vendor
  admitted its request and arrives with the answer, so the requests sent since are not in it (counting every
  one in flight is the safe side: some may already be counted) — plus the refill since.  Each request granted
  takes one; with none left, the next waits until one has refilled (or the reset).  So pacing adapts before
  zero: 3 left with 2 in flight lets 1 more go, and the next at the refill of one.
* **tokens**: the tokens left plus the refill; each request granted takes its estimate, and one whose estimate
  is larger than what is there waits until enough has refilled (or the reset).  Without a token budget the
  actor estimates no tokens, so it cannot tell how much refill a request needs: it then holds at 0 left until
  the reset.  ``input_tokens`` / ``output_tokens`` (Anthropic's separate budgets, which an estimate of both
  cannot be compared with) are read at 0 left only — then as tokens: each request waits for its whole
  estimate to refill (the safe side of its part), or without one for the reset.
* **retry-after** still running (a 429's, a 503's): nothing goes until it ends, refill or not.

A report is taken as made when it is read — it was made earlier, when the vendor admitted its request, so the
refill meanwhile is not counted: the safe side, a little slower than the vendor's pace.  A new report is
merged into the window in force, budget by budget, the tighter of the two kept: answers arrive out of the order
the vendor made their reports in, so each is compared by what it leaves *now* — the window's budget projected
with its refill, less what was taken since (:func:`vendor_window`) — and the other kept too while it reaches past
the tighter one's reset (at most two a budget; a request waits for the slower).  A budget's limit ends at its reset, the
window at its latest one.

Ignored: a report that is not a :class:`~agentactors.providers.http.ratelimits.RateLimitState`, a reset
that is past (refilled since), not said or not a finite time, a count that is not a number >= 0 (a limit that
is not: no refill), a budget nobody knows.
"""

from __future__ import annotations

import math
from typing import Any, Final, TypeGuard

from ..providers.http.ratelimits import RateLimitState

__all__ = ["VENDOR_HOLD_BOUND", "VendorWindow", "held", "vendor_of", "vendor_window"]

#: Seconds: the longest the vendor's word holds the actor's requests — a report's reset, a 429's ``retry-after``
#: (:meth:`~.scheduling.Scheduler.hold_off`) — one minute, the window a per-minute budget refills in.  A longer
#: pause (a daily limit spent) is the circuit breaker's to keep.
VENDOR_HOLD_BOUND: Final = 60.0

# How deep a chain of decorators is followed (a deeper one, or a cycle, reports nothing).
_MAX_DEPTH: Final = 64

# What one granted request takes from a limit: one, its token estimate, or nothing (a retry-after: held whole).
_REQUESTS: Final = 0
_TOKENS: Final = 1
_HOLD: Final = 2
_KINDS: Final = {"requests": _REQUESTS, "tokens": _TOKENS, "input_tokens": _TOKENS, "output_tokens": _TOKENS}
# Anthropic's separate budgets: read at 0 left only (an estimate of both parts is not compared with what is left of
# one; at 0 left, waiting for the estimate to refill is the safe side of waiting for its part).
_AT_ZERO: Final = frozenset({"input_tokens", "output_tokens"})


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
    """One budget of a report: ``left`` at ``at`` (the anyio clock), refilling at ``rate`` a second, until ``until``.

    ``left`` is what the report said less what the actor took since (and the requests in flight it was read with);
    what is there at ``t`` is ``left + rate * (t - at)`` — at most the limit before the reset, where the line ends.
    """

    __slots__ = ("at", "kind", "left", "name", "rate", "until")

    def __init__(self, name: str, left: float, until: float, kind: int, rate: float = 0.0, at: float = 0.0) -> None:
        self.name = name
        self.left = left
        self.until = until
        self.kind = kind
        self.rate = rate
        self.at = at

    def level(self, now: float) -> float:
        """What is left at ``now``, refill included."""
        return self.left + self.rate * (now - self.at) if self.rate else self.left


class VendorWindow:
    """What the vendor's last report lets through before its resets (see the module docstring).

    :ivar until: the latest reset: from then on the window says nothing (the scheduler drops it).
    """

    __slots__ = ("limits", "until")

    def __init__(self, limits: list[_Limit]) -> None:
        self.limits = limits
        self.until = max(limit.until for limit in limits)

    def delay(self, estimate: float, now: float, count: int = 1) -> float:
        """Seconds until ``count`` requests of ``estimate`` tokens in all may go (0: now) — the longest over the
        budgets that have not enough left: until enough has refilled, or (refill unknown, or a size unknown)
        until the budget's reset."""
        wait = 0.0
        for limit in self.limits:
            until = limit.until
            if now >= until:
                continue
            kind = limit.kind
            rate = limit.rate
            if kind == _REQUESTS:
                need: float = count
            elif kind == _TOKENS and estimate > 0:
                need = estimate
            else:  # a hold, or tokens for requests of unknown size: how much refill is enough cannot be told
                need, rate = 1.0, 0.0
            left = limit.left + rate * (now - limit.at) if rate else limit.left
            if left >= need:
                continue
            hold = until - now
            if rate > 0.0:
                refilled = (need - left) / rate
                if refilled < hold:
                    hold = refilled
            if hold > wait:
                wait = hold
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

    The report is taken as made at ``now``: it was made earlier (when the vendor admitted its request), so what
    refilled since is not counted — the safe side.  Its refill rate is what it lacks of its limit over the time
    to its reset (the time until full, as OpenAI and Anthropic report it); the bound on the hold does not slow it.

    The tighter, not the newer: reports arrive in the order the answers do, not the order the vendor made them —
    a long request's report, made when it was admitted, comes after shorter ones made since, and says more is
    left than is.  So the two are compared by what each leaves *now* — the window's budget projected with its
    refill, less what was taken since — and the smaller kept; on a tie, the slower refill, then the later reset.
    """
    if not isinstance(state, RateLimitState):
        return current
    latest = now + VENDOR_HOLD_BOUND
    limits = [limit for limit in current.limits if limit.until > now] if current is not None else []
    told = state.retry_after_until
    if _time(told) and told > now:
        _tighten(limits, _Limit("retry_after", 0.0, min(told, latest), _HOLD, 0.0, now), now)
    for budget in state.budgets:
        name = budget.name
        kind = _KINDS.get(name)
        remaining, reset = budget.remaining, budget.reset
        if kind is None or not _count(remaining) or not _time(reset) or reset <= now:
            continue
        if name in _AT_ZERO and remaining > 0:
            continue
        full = budget.limit
        rate = (full - remaining) / (reset - now) if _count(full) and full > remaining else 0.0
        if not rate < math.inf:  # a reset a hair away: held until it, as with no refill
            rate = 0.0
        left = float(remaining - in_flight if kind == _REQUESTS else remaining)
        _tighten(limits, _Limit(name, left, min(reset, latest), kind, rate, now), now)
    return VendorWindow(limits) if limits else None


def held(current: VendorWindow | None, until: float, now: float) -> VendorWindow:
    """``current`` (``None``: no report in force) letting nothing through before ``until`` — a ``retry-after`` the
    actor was told by a 429 itself (:meth:`~.scheduling.Scheduler.hold_off`), merged as a report's is: the later
    hold is kept, and the window's other budgets with it."""
    limits = [limit for limit in current.limits if limit.until > now] if current is not None else []
    _tighten(limits, _Limit("retry_after", 0.0, until, _HOLD, 0.0, now), now)
    return VendorWindow(limits)


def _tighten(limits: list[_Limit], new: _Limit, now: float) -> None:
    """Keep the tighter of ``new`` and the limit of the same budget in ``limits`` (see :func:`vendor_window`) — and,
    when the one kept ends before the other, that other one too, until then the looser.

    Tighter now is not tighter for ever: a report read a moment after it was made says its reset that much later,
    and its refill that much faster, so a window's limit could be kept over it and end first.  Dropped, the newer
    report's word ended with the kept one: at its reset the window said nothing — though the vendor had said it
    had no room until later, and requests had been granted since — and the requests then in flight went together
    into its 429.  So a budget holds at most two lines: the tightest now, and the one that lasts longest; both take
    every grant, and a request waits for the slower of them (:meth:`VendorWindow.delay`).
    """
    same = [old for old in limits if old.name == new.name]
    if not same:
        limits.append(new)
        return
    tightest = same[0]
    before = tightest.level(now)
    for old in same[1:]:
        level = old.level(now)
        if level < before:
            tightest, before = old, level
    if new.left < before or (
        new.left == before and (new.rate < tightest.rate or (new.rate == tightest.rate and new.until > tightest.until))
    ):
        tightest = new
    longest = max((*same, new), key=lambda limit: limit.until)
    kept = (tightest,) if longest is tightest or longest.until <= tightest.until else (tightest, longest)
    limits[:] = [limit for limit in limits if limit.name != new.name] + list(kept)


def _time(value: object) -> TypeGuard[float]:
    """A finite number (not a bool): a time on the anyio clock."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: object) -> TypeGuard[float]:
    """A finite number >= 0: a count of requests or tokens."""
    return _time(value) and value >= 0
