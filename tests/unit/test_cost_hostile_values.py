"""Prices, usage and budgets fed hostile numbers: a negative token count, a NaN/infinite/negative cost or rate.

A NaN spent sum makes every comparison with the limit false (the budget never stops anything), a negative
cost refunds it, an infinite one stops it for good: none of them may reach a budget's sum.  Pure and
synchronous: no event loop involved (the resilience side is ``tests/unit/resilience/test_hostile_conditions.py``).
"""

from __future__ import annotations

import math

import pytest

from agentactors.gateway.cost_budget import CostBudget
from agentactors.messages import Usage
from agentactors.pricing import Cost, Price

# --- prices and usage -------------------------------------------------------------------------------


def test_a_negative_token_count_never_makes_a_negative_or_inflated_cost() -> None:
    # Usage is the vendor's number: a negative count (a proxy's bug) must not refund a budget...
    price = Price(1.0, 2.0)
    assert price.cost(Usage(output_tokens=-1_000_000)).total == 0.0
    assert price.cost(Usage(input_tokens=-1_000_000, output_tokens=-5)).total == 0.0
    # ... nor inflate the fresh prompt tokens (input minus a negative "cached" count).
    assert price.cost(Usage(input_tokens=1_000_000, cache_read_tokens=-1_000_000)).total == pytest.approx(1.0)
    assert price.cost(Usage(input_tokens=1_000_000, cache_write_tokens=-1_000_000)).total == pytest.approx(1.0)
    for cost in (
        price.cost(Usage(output_tokens=-3, reasoning_tokens=-7)),
        price.cost(Usage(input_tokens=10, cache_read_tokens=-20), cached_in_input=False),
    ):
        assert cost.input >= 0 and cost.output >= 0 and cost.total >= 0


@pytest.mark.parametrize("rate", [math.inf, -math.inf, math.nan, -1.0])
def test_a_price_refuses_an_infinite_nan_or_negative_rate(rate: float) -> None:
    with pytest.raises(ValueError):
        Price(rate, 1.0)
    with pytest.raises(ValueError):
        Price(1.0, 1.0, cache_read=rate)


# --- budgets ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -5.0])
def test_a_nan_infinite_or_negative_cost_never_poisons_a_budget(bad: float) -> None:
    budget = CostBudget(1.0)
    budget.charge(Cost(0.25, 0.25))
    budget.charge(Cost(bad, 0.0))
    # Not a number that can be trusted: counted as a call without a price, the spent sum untouched.
    assert budget.spent == pytest.approx(0.5)
    assert budget.unpriced == 1 and budget.calls == 2 and budget.cost is None
    budget.charge(Cost(0.4, 0.4))
    assert budget.passed and budget.remaining == 0.0  # a NaN would have made every comparison false
    assert budget.would_pass(0.0)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -5.0])
def test_an_estimate_that_is_not_a_sound_number_is_no_estimate(bad: float) -> None:
    """As a charge of such a cost adds nothing (counted unpriced), spending such an estimate is spending nothing:
    ``would_pass`` then says whether the budget is past its limit already.  A NaN said "no" even past the limit,
    an infinity "yes" for good (every run under the budget stopped before every call), a negative amount
    refunded the spent sum for the comparison."""
    budget = CostBudget(1.0)
    assert not budget.would_pass(bad), "within the limit: an unknown estimate stops nothing"
    budget.charge(Cost(0.5, 0.5))
    assert not budget.would_pass(bad), "at the limit, not past it"
    assert budget.would_pass(0.01)
    budget.charge(Cost(0.1, 0.0))
    assert budget.passed
    assert budget.would_pass(bad), "past the limit already: whatever the estimate"
    assert not CostBudget(None).would_pass(bad), "no limit: nothing passes it"


def test_a_nan_or_negative_limit_set_on_a_live_budget_is_refused() -> None:
    budget = CostBudget(1.0)
    for bad in (math.nan, -1.0):
        with pytest.raises(ValueError):
            budget.limit = bad
    assert budget.limit == 1.0
    budget.limit = None
    assert budget.limit is None and not budget.passed
    budget.limit = 2
    assert budget.limit == 2.0
