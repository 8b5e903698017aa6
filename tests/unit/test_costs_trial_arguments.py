"""Bad arguments to the pricing functions get a clear ``TypeError`` (a trial of ``docs/costs.md``).

A provider or model name that is not a ``str`` raised ``AttributeError: 'int' object has no attribute 'lower'``
(from deep inside the table lookup), ``TypeError: unhashable type: 'list'`` or a bytes/str mix-up;
``response_cost`` of something that is not a response and ``total_cost`` of items that are not run results (a
list of ``Cost``: ``[r.cost for r in results]``, an easy slip) raised ``AttributeError`` naming an attribute the
caller never wrote.  Each now says what was expected.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentactors import pricing
from agentactors.messages import LLMResponse, Usage
from agentactors.pricing import Cost, Price


@pytest.fixture(autouse=True)
def _clean_prices() -> Iterator[None]:
    pricing.clear_prices()
    yield
    pricing.clear_prices()


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize(("provider", "model"), [(123, "gpt-4o"), ("openai", ["gpt-4o"]), ("openai", b"gpt-4o")])
def test_a_name_that_is_not_a_str_is_a_type_error(provider: Any, model: Any, batch: bool) -> None:
    with pytest.raises(TypeError, match="must be a str"):
        pricing.price_for(provider, model, batch=batch)
    with pytest.raises(TypeError, match="must be a str"):
        pricing.cost_of(provider, model, Usage(input_tokens=1), batch=batch)


def test_no_name_is_still_no_price() -> None:
    # (documented: price_for(None, ...) and an empty name answer None, the way an unnamed response is unpriced)
    assert pricing.price_for(None, "gpt-4o") is None
    assert pricing.price_for("openai", "") is None


def test_response_cost_of_something_that_is_not_a_response_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="LLMResponse"):
        pricing.response_cost("hello")  # type: ignore[arg-type]
    pricing.set_price("mine", "m", Price(1.0, 1.0))
    answer = LLMResponse("ok", usage=Usage(input_tokens=1_000_000), provider="mine", model="m")
    assert pricing.response_cost(answer) == Cost(1.0, 0.0)


def test_total_cost_of_costs_rather_than_results_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="run results"):
        pricing.total_cost([Cost(1.0, 0.0)])
    with pytest.raises(TypeError, match="run results"):
        pricing.total_cost([object()])
