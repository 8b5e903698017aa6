"""What the wire fuzz tests share (tests/unit/providers/*/test_provider_fuzz.py): the settings, and arbitrary JSON.

Each wire's file draws its own wire-shaped values and states its own promise; these are the common ground — any JSON
value (floats finite: a NaN is not JSON a vendor sends), small enough that a property tries many of them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = ["FUZZ", "json_scalars", "json_values"]

#: The fuzz tests' settings: many examples, no deadline (a provider end to end is slow on a busy machine).
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars: st.SearchStrategy[Any] = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
