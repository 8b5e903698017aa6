"""What one run has spent, and whether it passed its ``cost_limit``.

A run's calls may go to several models (a fallback chain, a handoff), each at its own price, so the
cost is added up per response (:func:`agentactors.pricing.response_cost`), not from the run's summed
usage.  One response of a model without a price makes the run's cost unknown: ``RunResult.cost`` is
then ``None``, never the smaller sum of the priced part (the limit still counts that part: it is
spent for sure).  The runs a run's tools start (delegation) add their cost to it, as they add their
usage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import CostLimitExceededError
from ..messages import LLMResponse
from ..pricing import Cost, response_cost

__all__ = ["RunCost", "check_cost_limit"]

_ZERO = Cost()


def check_cost_limit(limit: float | None) -> float | None:
    """``limit`` as a float, or ``None``; a negative or NaN limit is a :class:`ValueError`."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not limit >= 0:
        raise ValueError(f"cost_limit must be a non-negative number (in the price's currency) or None, not {limit!r}")
    return float(limit)


class RunCost:
    """The run's own spend so far (its children's are read from their results), and its limit."""

    __slots__ = ("limit", "spent", "unpriced")

    def __init__(self, limit: float | None = None) -> None:
        self.limit = limit
        self.spent = _ZERO
        self.unpriced = 0  # responses of a model without a price

    def charge(self, response: LLMResponse) -> Cost | None:
        """Add ``response``'s cost; returns it (``None``: its model has no price)."""
        cost = response_cost(response)
        if cost is None:
            self.unpriced += 1
        else:
            self.spent = cost if self.spent is _ZERO else self.spent + cost
        return cost

    def total(self, children: Sequence[Any] = ()) -> Cost | None:
        """The run's cost with its ``children``'s (their results), or ``None`` when a part is unpriced."""
        if self.unpriced:
            return None
        total = self.spent
        for child in children:
            cost = child.cost
            if cost is None:
                return None
            total = total + cost
        return total

    def passed(self, children: Sequence[Any] = ()) -> CostLimitExceededError | None:
        """The error that ends the run when what it spent (its children's included) is past its limit."""
        limit = self.limit
        if limit is None:
            return None
        spent = self.spent.total + sum(c.cost.total for c in children if c.cost is not None)
        if spent <= limit:
            return None
        return CostLimitExceededError(
            f"the run spent {spent:.6g} {self.spent.currency}, past its cost_limit of {limit:g}",
            limit=limit,
            spent=spent,
        )
