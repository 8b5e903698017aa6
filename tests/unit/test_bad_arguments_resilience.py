"""The resilience decorators and ``resilient_chain`` refuse a bad argument when built — naming the parameter.

Each case below was accepted before, and meant something other than what was written, or nothing:

* ``with_retry(p, retry_on=ProviderTimeoutError)`` — an exception class is callable: ``retry_on(error)`` made an
  instance of it, always true, so every retryable-or-not kind was retried; ``with_fallback(..., fallback_on=
  ValueError)`` moved on after every error the same way.  The predicate is a function of the error.
* ``with_fallback(..., skip_incapable="no")`` skipped (a non-empty string is true);
  ``with_circuit_breaker(p, count_mid_stream="no")`` counted mid-stream failures.
* ``resilient_chain`` checked ``pool_strategy``, ``fallback_on``, ``skip_incapable``, ``name`` and
  ``hedge_max_extra`` only when the chain had a pool, two members or a hedge: with one member, ``fallback_on=
  "bogus"`` was silently dropped — the same call with two members raised.  ``pool_weights=5`` was "'int' object is
  not iterable"; ``retry={1: 1}`` "keywords must be strings"; ``retry={"provider": q}`` "got multiple values for
  argument 'provider'"; ``attempt_timeout=-1`` was refused as ``attempt`` (the inner decorator's name).

Every valid form keeps working.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentactors import ScriptedProvider
from agentactors.errors import ErrorKind, ProviderError, ProviderTimeoutError
from agentactors.resilience import (
    resilient_chain,
    with_circuit_breaker,
    with_fallback,
    with_retry,
)


def p(name: str = "p") -> ScriptedProvider:
    return ScriptedProvider(["x"], name=name)


def _id(value: object) -> str:
    # Stable across processes (pytest-xdist): no address in an id.
    if isinstance(value, type):
        return f"class-{value.__name__}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k!r}:{_id(v)}" for k, v in value.items()) + "}"
    return repr(value) if isinstance(value, int | float | str | tuple | list | None) else type(value).__name__


# --- with_retry / with_fallback: a predicate, not an exception class ----------------------------------

CLASSES = [ValueError, ProviderTimeoutError, ProviderError, ErrorKind]


@pytest.mark.parametrize("value", CLASSES, ids=_id)
def test_retry_on_an_exception_class_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError, match=r"retry_on .*class"):
        with_retry(p(), retry_on=value)


@pytest.mark.parametrize("value", CLASSES, ids=_id)
def test_fallback_on_a_class_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError, match=r"fallback_on .*class"):
        with_fallback(p(), p("q"), fallback_on=value)


def test_predicates_and_kinds_are_kept() -> None:
    with_retry(p(), retry_on=lambda e: e.kind is ErrorKind.transient)
    with_fallback(p(), p("q"), fallback_on=lambda e: True)
    with_fallback(p(), p("q"), fallback_on=ErrorKind.transient)
    with_fallback(p(), p("q"), fallback_on=["transient", "account"])


# --- flags that are bools ----------------------------------------------------------------------------

NOT_BOOLS = [1, 0, "no", None, 1.0]


@pytest.mark.parametrize("value", NOT_BOOLS, ids=_id)
def test_skip_incapable_that_is_not_a_bool_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError, match="skip_incapable"):
        with_fallback(p(), p("q"), skip_incapable=value)


@pytest.mark.parametrize("value", NOT_BOOLS, ids=_id)
def test_count_mid_stream_that_is_not_a_bool_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError, match="count_mid_stream"):
        with_circuit_breaker(p(), count_mid_stream=value)


@pytest.mark.parametrize("value", [True, False])
def test_bool_flags_are_kept(value: bool) -> None:
    assert with_fallback(p(), p("q"), skip_incapable=value).skip_incapable is value
    with_circuit_breaker(p(), count_mid_stream=value)


# --- resilient_chain: every setting checked, whatever the chain's shape ------------------------------

SHAPES: dict[str, Any] = {
    "one": lambda: (p(),),
    "two": lambda: (p(), p("q")),
    "pool": lambda: ([p(), p("q")],),
}

CHAIN_BAD: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"pool_strategy": "bogus"}, ValueError, "pool_strategy"),
    ({"pool_strategy": 1}, ValueError, "pool_strategy"),
    ({"pool_strategy": "weighted"}, ValueError, "pool_weights"),
    ({"pool_strategy": "weighted", "pool_weights": 5}, TypeError, "pool_weights"),
    ({"pool_strategy": "weighted", "pool_weights": "12"}, TypeError, "pool_weights"),
    ({"pool_strategy": "weighted", "pool_weights": [1, -1]}, ValueError, "pool_weights"),
    ({"pool_strategy": "weighted", "pool_weights": [1, math.nan]}, ValueError, "pool_weights"),
    ({"pool_strategy": "weighted", "pool_weights": [True, 1]}, ValueError, "pool_weights"),
    ({"fallback_on": "bogus"}, ValueError, "fallback_on"),
    ({"fallback_on": 1}, TypeError, "fallback_on"),
    ({"fallback_on": ValueError}, TypeError, "fallback_on"),
    ({"skip_incapable": 1}, TypeError, "skip_incapable"),
    ({"skip_incapable": "no"}, TypeError, "skip_incapable"),
    ({"name": 1}, TypeError, "name"),
    ({"hedge_max_extra": -1}, ValueError, "hedge_max_extra"),
    ({"hedge_max_extra": 2}, ValueError, "hedge_max_extra"),
    ({"hedge_max_extra": math.nan}, ValueError, "hedge_max_extra"),
    ({"hedge_max_extra": True}, ValueError, "hedge_max_extra"),
    ({"attempt_timeout": -1}, ValueError, "attempt_timeout"),
    ({"first_event_timeout": True}, ValueError, "first_event_timeout"),
    ({"idle_timeout": math.nan}, ValueError, "idle_timeout"),
    ({"retry": {1: 1}}, TypeError, "retry"),
    ({"retry": {"provider": 1}}, TypeError, "retry"),
    ({"breaker": {"provider": 1}}, TypeError, "breaker"),
]


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize(("kwargs", "error", "says"), CHAIN_BAD, ids=[_id(k) for k, _, _ in CHAIN_BAD])
def test_resilient_chain_refuses_bad_setting_in_any_shape(
    shape: Any, kwargs: dict[str, Any], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        resilient_chain(*shape(), **kwargs)


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"pool_strategy": "round_robin"},
        {"pool_strategy": "weighted", "pool_weights": [1, 2]},
        {"pool_strategy": "weighted", "pool_weights": (1.5, 0.5)},
        {"fallback_on": ["transient", "account"]},
        {"fallback_on": lambda e: True},
        {"skip_incapable": True},
        {"name": "chain"},
        {"hedge_max_extra": 0},
        {"hedge_max_extra": 1},
        {"hedge_after": 2.0, "hedge_max_extra": 0.1},
        {"attempt_timeout": None, "first_event_timeout": None, "idle_timeout": 5},
        {"retry": {"base_delay": 0.1}, "breaker": {"open_duration": 5.0}},
    ],
    ids=_id,
)
def test_resilient_chain_keeps_valid_settings(shape: Any, kwargs: dict[str, Any]) -> None:
    # (Weights for a chain with no pool weigh nothing; they are checked all the same, and kept.)
    resilient_chain(*shape(), **kwargs)
