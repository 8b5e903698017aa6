"""Every decorator refuses, when it is built, an argument it could not use — naming the parameter.

Before, several were accepted and failed later with a raw Python error, some hiding the vendor's:
``with_retry(p, retry_on=1)`` turned the first real failure into ``ProviderError("TypeError: 'int' object
is not callable")``; ``jitter=0.5`` was "cannot unpack non-iterable float object"; ``with_fallback(...,
fallback_on=1)`` "'int' object is not iterable"; ``with_circuit_breaker(window="60")`` a ``TypeError`` from
``>``; ``with_pool(p, q, weights=[1, 2])`` silently ignored the weights; ``with_retry(ScriptedProvider)``
(the class) was accepted.  Numbers follow :mod:`agentactors.resilience._numbers`: a bool is not a number
and not a count (``True`` is an int to Python), a string is not a number, NaN and infinity are refused
where they would mean a hang or a window of no size.  Every valid form keeps working.
"""

from __future__ import annotations

import functools
import math
import random
from fractions import Fraction
from typing import Any

import pytest

from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import LLMRequest, LLMResponse
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import (
    guarded,
    resilient_chain,
    with_circuit_breaker,
    with_fallback,
    with_hedge,
    with_pool,
    with_retry,
    with_timeout,
)
from tests.support.resilience import REQ, http_error


def p(name: str = "p") -> ScriptedProvider:
    return ScriptedProvider(["x"], name=name)


def _id(value: object) -> str:
    # Stable across processes (pytest-xdist): no address, no set order.
    plain = type(value) is object or callable(value) or isinstance(value, set | frozenset)
    return type(value).__name__ if plain else repr(value)


# --- the provider itself --------------------------------------------------------------------------


WRAPPERS: dict[str, Any] = {
    "with_retry": lambda x: with_retry(x),
    "with_timeout": lambda x: with_timeout(x, attempt=1),
    "with_hedge": lambda x: with_hedge(x),
    "with_circuit_breaker": lambda x: with_circuit_breaker(x),
    "with_fallback": lambda x: with_fallback(p(), x),
    "with_pool": lambda x: with_pool(x, p()),
    "with_hedge(to=)": lambda x: with_hedge(p(), to=x),
    "guarded": lambda x: guarded(x),
}


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_a_provider_class_instead_of_an_instance_is_a_type_error(wrap: Any) -> None:
    # The class has a callable `complete` (an unbound function): it was accepted, and the first call failed.
    with pytest.raises(TypeError, match="instance"):
        wrap(ScriptedProvider)


class _Sync:
    """A provider whose ``complete`` is a plain function (the loop awaits what it returns)."""

    name = "sync"

    def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse("ok")


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_a_provider_whose_complete_is_a_plain_function_is_a_type_error(wrap: Any) -> None:
    # It failed at the first call ("can't be used in 'await' expression") — and wrapped, it got past the check an
    # Agent makes of its provider (the decorator's own complete is a coroutine function).
    with pytest.raises(TypeError, match="async def complete"):
        wrap(_Sync())


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
@pytest.mark.parametrize("value", [object(), 1, "openai"], ids=_id)
def test_something_without_a_callable_complete_is_a_type_error(wrap: Any, value: Any) -> None:
    with pytest.raises(TypeError, match="LLMProvider"):
        wrap(value)


class _AsyncCall:
    async def __call__(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse(content="x")


class _Odd:
    """``complete`` as an async callable object, or a ``functools.partial`` of a coroutine function."""

    name = "odd"

    def __init__(self, complete: Any) -> None:
        self.complete = complete

    async def aclose(self) -> None:
        pass


async def _answer(prefix: str, request: LLMRequest) -> LLMResponse:
    return LLMResponse(content=prefix)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "provider", [_Odd(_AsyncCall()), _Odd(functools.partial(_answer, "x"))], ids=["__call__", "partial"]
)
async def test_a_provider_instance_with_an_async_callable_complete_is_kept(provider: Any) -> None:
    assert (await with_retry(provider).complete(REQ)).content == "x"
    assert (await with_fallback(provider, p()).complete(REQ)).content == "x"


# --- with_retry ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1, "transient", [ErrorKind.transient], True], ids=_id)
def test_a_retry_on_that_is_not_callable_is_a_type_error(value: Any) -> None:
    # retry_on=1 replaced the vendor's first error by ProviderError("TypeError: 'int' object is not callable").
    with pytest.raises(TypeError, match="retry_on"):
        with_retry(p(), retry_on=value)


@pytest.mark.parametrize("value", [0.5, 1, (1.0,), (0.5, 1.0, 2.0), "ab", None, (True, 1.0), ("0.5", "1")],
                         ids=_id)
def test_a_jitter_that_is_not_a_low_high_pair_of_numbers_is_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError, match="jitter"):
        with_retry(p(), jitter=value)


@pytest.mark.parametrize("value", [[0.5, 1.0], (1, 1), (Fraction(1, 2), 1)], ids=repr)
def test_a_jitter_pair_in_any_sequence_is_taken(value: Any) -> None:
    assert with_retry(p(), jitter=value).jitter == (float(value[0]), float(value[1]))


@pytest.mark.parametrize("setting", ["base_delay", "max_delay", "multiplier", "max_retry_after", "deadline"])
@pytest.mark.parametrize("value", ["1", True, [1]], ids=repr)
def test_a_retry_number_that_is_not_a_number_names_its_setting(setting: str, value: Any) -> None:
    with pytest.raises(ValueError, match=setting):
        with_retry(p(), **{setting: value})


def test_a_base_delay_above_max_delay_is_a_value_error() -> None:
    # Every wait was max_delay: the base_delay asked for was silently never used.
    with pytest.raises(ValueError, match=r"base_delay .*max_delay"):
        with_retry(p(), base_delay=10, max_delay=1)
    with pytest.raises(ValueError, match="base_delay"):
        with_retry(p(), max_delay=0)  # the default base_delay, 0.5, above it: say base_delay=0 for no waits


def test_equal_or_zero_delays_are_kept() -> None:
    assert with_retry(p(), base_delay=2, max_delay=2).backoff(5) == 2.0
    assert with_retry(p(), base_delay=0, max_delay=0).backoff(3) == 0.0


@pytest.mark.parametrize("setting", ["clock", "sleep"])
def test_a_retry_clock_or_sleep_that_is_not_callable_is_a_type_error(setting: str) -> None:
    with pytest.raises(TypeError, match=setting):
        options: dict[str, Any] = {setting: 1.0}
        with_retry(p(), **options)


def test_a_retry_rng_without_uniform_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="rng"):
        with_retry(p(), rng=42)  # type: ignore[arg-type]  # a seed, not a Random
    assert with_retry(p(), rng=random.Random(42)) is not None


@pytest.mark.anyio
async def test_a_retry_on_predicate_still_decides() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    never = with_retry(ScriptedProvider([http_error(503), "ok"]), retry_on=lambda e: False, sleep=sleep)
    with pytest.raises(ProviderError) as info:
        await never.complete(REQ)
    assert info.value.status == 503 and not slept  # the vendor's error, not a TypeError
    always = with_retry(ScriptedProvider([http_error(503), "ok"]), retry_on=lambda e: True,
                        sleep=sleep)
    assert (await always.complete(REQ)).content == "ok" and len(slept) == 1


# --- with_fallback ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1, 2.5, object()], ids=_id)
def test_a_fallback_on_that_is_neither_kinds_nor_a_predicate_is_a_type_error(value: Any) -> None:
    # fallback_on=1 was "'int' object is not iterable".
    with pytest.raises(TypeError, match="fallback_on"):
        with_fallback(p(), p("q"), fallback_on=value)


@pytest.mark.parametrize("value", ["bogus", [1], ["transient", "meteor"], [None]], ids=repr)
def test_a_fallback_on_with_an_unknown_kind_is_a_value_error_naming_it(value: Any) -> None:
    with pytest.raises(ValueError, match="fallback_on"):
        with_fallback(p(), p("q"), fallback_on=value)


@pytest.mark.parametrize(
    "value", ["context", ErrorKind.account, {"transient", ErrorKind.context}, ["transient"], lambda e: True], ids=_id
)
def test_valid_fallback_on_forms_are_kept(value: Any) -> None:
    with_fallback(p(), p("q"), fallback_on=value)


@pytest.mark.parametrize(
    "build", [lambda n: with_fallback(p(), p("q"), name=n), lambda n: with_pool(p(), p("q"), name=n)],
    ids=["fallback", "pool"],
)
def test_a_name_that_is_not_a_string_is_a_type_error(build: Any) -> None:
    with pytest.raises(TypeError, match="name"):
        build(1)
    assert build("chain").name == "chain"


# --- with_circuit_breaker --------------------------------------------------------------------------


SECONDS = ["window", "open_duration", "max_open_duration", "max_half_open_wait"]
COUNTS = ["min_calls", "half_open_max_calls", "half_open_successes", "consecutive_failures"]


@pytest.mark.parametrize("value", ["60", b"60", True, math.nan, math.inf, 0, -1, [60], None], ids=_id)
@pytest.mark.parametrize("setting", SECONDS)
def test_a_breaker_duration_that_is_not_positive_finite_seconds_is_a_value_error(setting: str, value: Any) -> None:
    # window="60" was "'>' not supported between 'str' and 'int'"; window=True a window of one second.
    options: dict[str, Any] = {setting: value}
    if setting == "open_duration":
        options["max_open_duration"] = 1e9
    with pytest.raises(ValueError, match=setting):
        with_circuit_breaker(p(), **options)


@pytest.mark.parametrize("value", [True, False, "10", 2.5, 2.0, math.nan, math.inf, 0, -1], ids=repr)
@pytest.mark.parametrize("setting", COUNTS)
def test_a_breaker_count_that_is_not_a_whole_number_is_a_value_error(setting: str, value: Any) -> None:
    # min_calls=True was accepted (a count of 1), though max_steps and with_retry refuse bools.
    with pytest.raises(ValueError, match=setting):
        with_circuit_breaker(p(), **{setting: value})


@pytest.mark.parametrize("value", ["0.5", True, math.nan, 0, 1.5, None], ids=repr)
def test_a_failure_rate_that_is_not_a_share_is_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError, match="failure_rate"):
        with_circuit_breaker(p(), failure_rate=value)


@pytest.mark.parametrize("setting", ["key", "clock"])
def test_a_breaker_key_or_clock_that_is_not_callable_is_a_type_error(setting: str) -> None:
    options: dict[str, Any] = {setting: "p"}
    with pytest.raises(TypeError, match=setting):
        with_circuit_breaker(p(), **options)


def test_valid_breaker_settings_are_kept() -> None:
    half: Any = Fraction(1, 2)
    breaker = with_circuit_breaker(
        p(), window=half, min_calls=1, failure_rate=1, consecutive_failures=None, open_duration=0.5,
        max_open_duration=0.5, half_open_max_calls=3, half_open_successes=2, max_half_open_wait=1,
        key=lambda name, model: name, clock=lambda: 0.0,
    )
    policy = breaker.policy
    assert (policy.window, policy.min_calls, policy.failure_rate, policy.consecutive_failures) == (0.5, 1, 1, None)
    assert type(policy.window) is float and type(policy.min_calls) is int


# --- with_pool -------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["least_loaded", "round_robin"])
def test_weights_with_a_strategy_that_ignores_them_is_a_value_error(strategy: Any) -> None:
    # with_pool(p, q, weights=[1, 2]) spread the calls evenly: the weights were silently ignored.
    with pytest.raises(ValueError, match="weighted"):
        with_pool(p(), p("q"), strategy=strategy, weights=[1, 2])


@pytest.mark.parametrize("value", [3, "12", ["1", "2"], [True, True], [math.nan, 1], [math.inf, 1]], ids=repr)
def test_weights_that_are_not_positive_numbers_are_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError, match="weights"):
        with_pool(p(), p("q"), strategy="weighted", weights=value)


@pytest.mark.parametrize("value", ["0.1", True, math.nan, -0.1, 1], ids=repr)
def test_a_min_headroom_that_is_not_a_share_is_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError, match="min_headroom"):
        with_pool(p(), p("q"), min_headroom=value)


@pytest.mark.parametrize("value", [["weighted"], None, 1], ids=repr)
def test_a_strategy_that_is_not_a_name_is_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError, match="strategy"):
        with_pool(p(), p("q"), strategy=value)


def test_a_pool_clock_that_is_not_callable_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="clock"):
        with_pool(p(), p("q"), clock=1.0)  # type: ignore[arg-type]


def test_valid_pool_settings_are_kept() -> None:
    weights: Any = (Fraction(1, 2), 2)
    pool = with_pool(p(), p("q"), strategy="weighted", weights=weights, min_headroom=0)
    assert pool.weights == (0.5, 2.0) and pool.min_headroom == 0


# --- the presets -----------------------------------------------------------------------------------


def test_pool_weights_without_the_weighted_strategy_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="pool_weights"):
        resilient_chain([p(), p("q")], pool_weights=[1, 2])
    pool: Any = resilient_chain([p(), p("q")], pool_strategy="weighted", pool_weights=[1, 2])
    assert pool.weights == (1.0, 2.0)


@pytest.mark.parametrize("setting", ["retry", "breaker"])
def test_retry_or_breaker_options_that_are_not_a_mapping_are_a_type_error(setting: str) -> None:
    # retry=1 was "'int' object is not iterable".
    options: dict[str, Any] = {setting: 1}
    with pytest.raises(TypeError, match=setting):
        guarded(p(), **options)
    options = {setting: [("base_delay", 1)]}
    with pytest.raises(TypeError, match=setting):
        resilient_chain(p(), **options)
