"""CostBudget and with_hedge: bad arguments refused where they are given (second review of the cost features).

``CostBudget(estimate="no")`` turned estimates on; ``currency=978`` (an ISO number) made every priced call's
currency another one, so every call was counted unpriced and the limit never stopped a run; ``charge(0.5)``
failed deep in the sum; ``with_hedge(clock="monotonic")`` failed only at the first call.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import CostBudget, ScriptedProvider
from agentactors.pricing import Cost, Price
from agentactors.resilience import with_hedge


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"estimate": "no"}, "estimate"),
    ({"estimate": 0}, "estimate"),
    ({"currency": 978}, "currency"),
    ({"currency": ""}, "currency"),
    ({"name": None}, "name"),
    ({"name": ""}, "name"),
])
def test_a_budget_refuses_bad_settings_with_a_type_error(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(TypeError, match=words):
        CostBudget(1.0, **kwargs)


def test_a_budget_charged_something_that_is_not_a_cost_refuses_it_and_counts_nothing() -> None:
    budget = CostBudget(1.0)
    with pytest.raises(TypeError, match="Cost"):
        budget.charge(0.5)  # type: ignore[arg-type]
    assert budget.calls == 0 and budget.spent == 0.0
    budget.charge(Cost(0.25, 0.25))
    budget.charge(None)
    assert budget.calls == 2 and budget.unpriced == 1 and budget.spent == 0.5


def test_with_hedge_refuses_a_clock_that_cannot_be_called() -> None:
    with pytest.raises(TypeError, match="clock"):
        with_hedge(ScriptedProvider(["ok"]), after=1.0, clock="monotonic")  # type: ignore[arg-type]


def test_a_currency_code_in_small_letters_is_the_same_currency() -> None:
    """``CostBudget(currency="usd")`` counted every call priced in the table's ``"USD"`` as unpriced, so its limit
    never stopped anything; a ``Price`` or ``Cost`` in ``"eur"`` never added up with one in ``"EUR"``."""
    budget = CostBudget(1.0, currency="usd")
    budget.charge(Cost(0.25, 0.25, currency="USD"))
    assert budget.unpriced == 0 and budget.spent == pytest.approx(0.5) and budget.currency == "USD"
    assert (Cost(1.0, currency="eur") + Cost(2.0, currency="EUR")).currency == "EUR"
    assert Price(input=1.0, output=2.0, currency="gbp").currency == "GBP"
