"""The gpt-4o price the cost tests set themselves, so nothing needs the ``[prices]`` table.

Import :func:`gpt_4o_priced` into a test module (an autouse fixture: the module's tests run with it): a step of
:data:`USAGE` at gpt-4o's $2.5 / $10 per million tokens costs :data:`STEP`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentactors.messages import Usage
from agentactors.pricing import Price, clear_prices, set_price

USAGE = Usage(10_000, 1_000)
STEP = 10_000 * 2.5 / 1e6 + 1_000 * 10.0 / 1e6  # 0.035


@pytest.fixture(autouse=True)
def gpt_4o_priced() -> Iterator[None]:
    """gpt-4o priced (and only it), every other price cleared before and after the test."""
    clear_prices()
    set_price("openai", "gpt-4o", Price(2.5, 10.0))
    yield
    clear_prices()
