"""A ProviderActor's rate budgets: token buckets, and what a response's reported usage may charge to them.

A budget is a token bucket holding one minute's worth and refilled continuously (budget/60 a
second) on ``anyio.current_time`` (so virtual clocks apply).  A request takes its estimated tokens
before it is sent; the usage its response reports corrects the estimate afterwards.

The estimate (:func:`~agentactors.gateway.provider.estimate_tokens`) counts the prompt whole and the
request's ``max_tokens`` up to the bucket's capacity — one minute's budget, the same ceiling a reported
usage is held to below.  ``max_tokens`` is a bound the caller chose, not a prediction: counted whole, one
request with ``max_tokens=10**30`` whose response reported no usage (or that failed transiently, which
keeps its charge: the vendor may have worked) left the bucket ~6e28 s in debt, and every later request
of every agent sharing the actor was refused ``"budget"``.  Capped, such a request waits for a full
bucket, like any request larger than the bucket, and leaves it at most its prompt's estimate in debt.
It is not refused: a ``max_tokens`` above a minute's budget is legitimate (a long answer on a small
budget), and the vendor, not the budget, says whether the model allows it.

That correction trusts a number the vendor (or a proxy, or a bug) wrote.  Charged as is, one
response reporting ``output_tokens=10**12`` would push the bucket ~19 years into debt and throttle
every later request of every agent sharing the actor.  So a report is charged up to a ceiling — the
larger of the request's own estimate and the bucket's capacity (one minute's budget): no single
response can plausibly use more than a minute of budget beyond what was estimated for it — and
anything above is *implausible*: not charged, and reported (:func:`usage_charge` says so, the actor
records a ``provider.usage_implausible`` event).
"""

from __future__ import annotations

from typing import Final

__all__ = ["TokenBucket", "reported_tokens", "usage_charge"]

#: Seconds: float noise after sleeping exactly the computed wait.
EPSILON: Final = 1e-6


class TokenBucket:
    """A token bucket holding ``per_minute`` units, refilled at ``per_minute / 60`` a second.

    The level may go below zero: a request larger than the whole bucket waits for a full bucket
    and then goes (rather than never), and is paid back over time.
    """

    __slots__ = ("capacity", "level", "rate", "stamp")

    def __init__(self, per_minute: float, now: float) -> None:
        self.capacity = float(per_minute)
        self.level = float(per_minute)
        self.rate = float(per_minute) / 60.0
        self.stamp = now

    def refill(self, now: float) -> None:
        """Add what flowed in since the last look (never above capacity)."""
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now

    def delay(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` may be taken (an amount over capacity waits for a full bucket)."""
        self.refill(now)
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def delay_for_total(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` in all could have been taken (several requests' worth; an estimate)."""
        self.refill(now)
        return 0.0 if self.level >= amount else (amount - self.level) / self.rate

    def take(self, amount: float) -> None:
        self.level -= amount

    def give_back(self, amount: float) -> None:
        self.level = min(self.capacity, self.level + amount)


def reported_tokens(input_tokens: object, output_tokens: object) -> float:
    """The tokens a response's usage reports, or 0 — "not reported", the estimate stands — unless both are counts.

    A :class:`~agentactors.messages.Usage` normalises its counts when it is made: each is an ``int`` from 0
    to ``2**63 - 1``, and what is not one (``None`` from an SDK, a string, a NaN, a negative or infinite
    number) is read as 0, "not reported".  So a report whose counts are both 0 leaves the estimate standing,
    and one with a single bad count is charged by its other count (the bad one is 0 by then: the budget
    cannot tell it from a real 0).  The check here stays as the guard of the bucket's arithmetic, for a
    usage-like object that did not pass through that constructor: summed as they were, ``None`` raised
    ``TypeError`` in place of the answer the vendor had already given, and a NaN made the bucket's level
    NaN — which compares false with everything, so the budget silently admitted every request from then
    on.  A count too large to be plausible is :func:`usage_charge`'s to bound.
    """
    if _count(input_tokens) and _count(output_tokens):
        return input_tokens + output_tokens  # type: ignore[operator,no-any-return]  # both checked numbers
    return 0


def _count(value: object) -> bool:
    """Whether ``value`` is a token count: a number >= 0, not a bool, not NaN."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def usage_charge(estimate: int, used: float, capacity: float) -> tuple[float, bool]:
    """What to charge for a response that reports ``used`` tokens, given the request's ``estimate``.

    Returns ``(charge, implausible)``: ``used`` itself, or — when it is beyond the larger of the
    estimate and the bucket's ``capacity`` — that ceiling, with ``implausible`` true.
    """
    ceiling = max(estimate, int(capacity))  # capacity is finite: ProviderActor checks its budgets
    if used > ceiling:
        return ceiling, True
    return used, False
