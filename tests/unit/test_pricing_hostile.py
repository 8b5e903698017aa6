"""Prices under hostile input and at runtime (second review of the cost features).

Each test pins a failure the review found: tiers given from the highest down priced every long prompt at the
lowest tier; a tier, a rate or a currency of the wrong type was accepted and failed (or mispriced) only when a
response was priced; ``set_price`` took any key; a price table updated at runtime (genai-prices' UpdatePrices)
was never seen — the table's answers were cached for the life of the process; a batch price read while a price
was being set was cached stale for good.  And what each vendor's usage shape costs, end to end.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentactors import AnthropicProvider, GeminiProvider, LLMRequest, Message, OpenAIProvider, pricing
from agentactors.messages import Usage
from agentactors.pricing import Price


@pytest.fixture(autouse=True)
def _clean_prices() -> Iterator[None]:
    pricing.clear_prices()
    yield
    pricing.clear_prices()
    pricing.set_batch_factor(pricing.BATCH_FACTOR)


# --- a Price: checked when made -----------------------------------------------------------------------------


def test_tiers_given_from_the_highest_down_price_a_long_prompt_at_its_tier() -> None:
    price = Price(1.0, 1.0, tiers=((200_000, Price(5.0, 5.0)), (100_000, Price(2.0, 2.0))))
    assert price.at(300_000).input == 5.0  # was 2.0: the first tier passed, read from the end of the list
    assert price.at(150_000).input == 2.0
    assert price.at(50_000).input == 1.0
    assert [start for start, _ in price.tiers] == [100_000, 200_000]


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"input": True, "output": 1.0}, TypeError, "Price.input"),
    ({"input": "2.5", "output": 1.0}, TypeError, "Price.input"),
    ({"input": 1.0, "output": 1.0, "cache_read": False}, TypeError, "Price.cache_read"),
    ({"input": 1.0, "output": 1.0, "tiers": ((100, "x"),)}, TypeError, "tier's price"),
    ({"input": 1.0, "output": 1.0, "tiers": ((True, Price(1, 1)),)}, TypeError, "tier's start"),
    ({"input": 1.0, "output": 1.0, "tiers": ((1.5e5, Price(1, 1)),)}, TypeError, "tier's start"),
    ({"input": 1.0, "output": 1.0, "tiers": ((-1, Price(1, 1)),)}, ValueError, "tier's start"),
    ({"input": 1.0, "output": 1.0, "tiers": ((10,),)}, TypeError, "pairs"),
    ({"input": 1.0, "output": 1.0, "tiers": "abc"}, TypeError, "pairs"),
    ({"input": 1.0, "output": 1.0, "tiers": ((10, Price(1, 1)), (10, Price(2, 2)))}, ValueError, "twice"),
    ({"input": 1.0, "output": 1.0, "currency": 5}, TypeError, "currency"),
    ({"input": 1.0, "output": 1.0, "currency": ""}, TypeError, "currency"),
    ({"input": 1.0, "output": 1.0, "tiers": ((10, Price(1, 1, currency="EUR")),)}, ValueError, "one currency"),
])
def test_a_bad_price_is_refused_when_made(kwargs: dict[str, Any], error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        Price(**kwargs)


def test_pricing_something_that_is_not_a_usage_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="Usage"):
        Price(1.0, 1.0).cost({"input_tokens": 5})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Usage"):
        pricing.cost_of("openai", "gpt-4o", None)  # type: ignore[arg-type]


# --- set_price, set_prices, set_batch_factor -------------------------------------------------------------------


@pytest.mark.parametrize(("provider", "model"), [(None, "m"), ("p", None), ("", "m"), ("p", 5)])
def test_set_price_refuses_a_key_that_is_not_two_names(provider: Any, model: Any) -> None:
    with pytest.raises(TypeError):
        pricing.set_price(provider, model, Price(1.0, 1.0))


def test_set_prices_checks_every_entry_before_it_sets_any() -> None:
    with pytest.raises(TypeError):
        pricing.set_prices({("mine", "a"): Price(1.0, 1.0), ("mine", "b"): 3.0})  # type: ignore[dict-item]
    assert pricing.price_for("mine", "a") is None  # not half set
    with pytest.raises(TypeError):
        pricing.set_prices({"mine/a": Price(1.0, 1.0)})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        pricing.set_prices([(("mine", "a"), Price(1.0, 1.0))])  # type: ignore[arg-type]


@pytest.mark.parametrize("factor", [float("inf"), float("nan"), -0.5, True, "0.5"])
def test_a_batch_factor_must_be_finite_and_non_negative(factor: Any) -> None:
    with pytest.raises(ValueError, match="batch factor"):
        pricing.set_batch_factor(factor)


# --- prices changed at runtime ---------------------------------------------------------------------------------


def test_a_price_table_updated_at_runtime_is_seen() -> None:
    # genai-prices' UpdatePrices (prices fetched at runtime) installs a new snapshot with set_custom_snapshot;
    # the table's answers were cached per model for the life of the process, so the update was never seen.
    data_snapshot = pytest.importorskip("genai_prices.data_snapshot")
    before = pricing.price_for("openai", "gpt-4o")
    assert before is not None
    try:
        data_snapshot.set_custom_snapshot(data_snapshot.DataSnapshot(providers=[], from_auto_update=True))
        assert pricing.price_for("openai", "gpt-4o") is None  # the new table has no such model
        assert pricing.price_for("openai", "gpt-4o", batch=True) is None
    finally:
        data_snapshot.set_custom_snapshot(None)
    assert pricing.price_for("openai", "gpt-4o") == before


def test_a_batch_price_read_while_a_price_is_set_is_not_kept_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    # Another thread sets a price between the batch lookup's read of the live price and its caching: the batch
    # price of the old live price was cached, and outlived the new one for good.
    pricing.set_price("mine", "m", Price(1.0, 1.0))
    real = pricing.price_for

    def racing(provider: Any, model: Any, *, batch: bool = False) -> Price | None:
        found = real(provider, model, batch=batch)
        if not batch:
            pricing.set_price("mine", "m", Price(4.0, 4.0))  # what the other thread does, just then
        return found

    monkeypatch.setattr(pricing, "price_for", racing)
    pricing._batch_price("mine", "m")
    monkeypatch.setattr(pricing, "price_for", real)
    batch = pricing.price_for("mine", "m", batch=True)
    assert batch is not None and batch.input == 2.0  # the new price, halved — not the old one's 0.5


# --- each vendor's usage shape, priced end to end ----------------------------------------------------------------

REQ = LLMRequest([Message.user("hi")])
RATES = Price(input=10.0, output=20.0, cache_read=1.0, cache_write=12.5, reasoning=30.0)


def _priced(provider: Any, name: str, model: str, body: dict[str, Any]) -> float:
    pricing.set_price(name, model, RATES)
    response = provider.codec.decode_response(body, request=REQ, model=model, provider=name)
    cost = pricing.response_cost(response)
    assert cost is not None
    return cost.total


def test_openai_cached_prompt_and_reasoning_tokens_are_priced_at_their_rates() -> None:
    # prompt_tokens counts the cached ones; completion_tokens counts the reasoning ones.
    body = {"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500,
                      "prompt_tokens_details": {"cached_tokens": 400},
                      "completion_tokens_details": {"reasoning_tokens": 200}}}
    total = _priced(OpenAIProvider("m", api_key="k"), "openai", "m", body)
    assert total == pytest.approx((600 * 10 + 400 * 1 + 300 * 20 + 200 * 30) / 1e6)


def test_anthropic_cache_reads_and_writes_beside_input_tokens_are_priced_at_their_rates() -> None:
    # input_tokens leaves the cached ones out: they are added, not subtracted.
    body = {"id": "m", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "x"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 500, "cache_read_input_tokens": 400, "cache_creation_input_tokens": 100,
                      "output_tokens": 300}}
    total = _priced(AnthropicProvider("m", api_key="k"), "anthropic", "m", body)
    assert total == pytest.approx((500 * 10 + 400 * 1 + 100 * 12.5 + 300 * 20) / 1e6)


def test_gemini_cached_content_and_thoughts_are_priced_at_their_rates() -> None:
    # promptTokenCount counts the cached ones; thoughtsTokenCount is beside candidatesTokenCount (added).
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": "x"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 1000, "cachedContentTokenCount": 400, "candidatesTokenCount": 300,
                              "thoughtsTokenCount": 200, "totalTokenCount": 1900}}
    total = _priced(GeminiProvider("m", api_key="k"), "gemini", "m", body)
    assert total == pytest.approx((600 * 10 + 400 * 1 + 300 * 20 + 200 * 30) / 1e6)


def test_a_model_without_a_price_has_no_cost_never_zero() -> None:
    usage = Usage(1000, 500)
    assert pricing.price_for("mine", "no-such-model") is None
    assert pricing.cost_of("mine", "no-such-model", usage) is None
    pricing.set_price("openai", "gpt-4o", None)  # no price, whatever the table says
    assert pricing.cost_of("openai", "gpt-4o", usage) is None
