"""``with_timeout`` and ``with_hedge`` check their settings as ``with_retry`` does.

A ``ValueError`` naming the setting for anything that is not a number of the right kind: a bool (``True``
is an int — a flag passed where seconds or a count were meant, which became 1 s or a window of 1 call), a
string (``with_timeout`` raised a ``TypeError`` from ``math.isnan``), NaN, and infinity where it would mean
a bound that never fires (``None`` says that) or a window of no size.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import with_hedge, with_timeout

BAD_SECONDS = [True, False, "3", b"3", math.nan, math.inf, -math.inf, 0, 0.0, -1, [1], object()]


def _id(value: object) -> str:
    return type(value).__name__ if type(value) is object else repr(value)


@pytest.mark.parametrize("value", BAD_SECONDS, ids=_id)
@pytest.mark.parametrize("setting", ["attempt", "first_event", "idle"])
def test_a_timeout_that_is_not_a_positive_finite_number_of_seconds_is_a_value_error(setting: str, value: Any) -> None:
    with pytest.raises(ValueError, match=setting):
        with_timeout(ScriptedProvider(["x"]), **{setting: value})


@pytest.mark.parametrize("value", [1, 0.25, Fraction(1, 2), 1e9])
def test_a_timeout_of_positive_seconds_is_taken_as_a_float(value: Any) -> None:
    timeout = with_timeout(ScriptedProvider(["x"]), attempt=value, first_event=value, idle=value)
    assert timeout.attempt == timeout.first_event == timeout.idle == float(value)
    assert type(timeout.attempt) is float


@pytest.mark.parametrize("value", [True, False, "10", 2.0, math.nan, math.inf, 0, -3, None], ids=repr)
def test_a_hedge_window_that_is_not_a_whole_positive_number_of_calls_is_a_value_error(value: Any) -> None:
    # window=True was a window of 1 call: every hedge after the first was over budget.
    with pytest.raises(ValueError, match="window"):
        with_hedge(ScriptedProvider(["x"]), window=value)


@pytest.mark.parametrize("value", [True, "0.1", math.nan, math.inf, -0.1, 1.5], ids=repr)
def test_a_hedge_share_that_is_not_a_fraction_is_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError, match="max_extra"):
        with_hedge(ScriptedProvider(["x"]), max_extra=value)


@pytest.mark.parametrize("value", [True, "2", math.nan, math.inf, -1.0, "p100", "p0"], ids=repr)
def test_a_hedge_delay_that_is_not_seconds_or_a_percentile_is_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError, match="after"):
        with_hedge(ScriptedProvider(["x"]), after=value)


def test_valid_hedge_settings_are_kept() -> None:
    after: Any = Fraction(3, 2)  # any real number, as with_retry takes
    share: Any = Fraction(1, 10)
    hedge = with_hedge(ScriptedProvider(["x"]), after=after, max_extra=share, window=7)
    assert hedge.window == 7 and type(hedge.window) is int
    assert hedge.delay() == 1.5 and hedge.max_extra == 0.1
    assert with_hedge(ScriptedProvider(["x"]), after=0).delay() == 0.0
