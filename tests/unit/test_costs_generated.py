"""Property: generated usages, prices and budgets keep the promises of ``docs/costs.md`` and ``Usage``'s docstring.

Hypothesis draws :class:`~agentactors.messages.Usage` values — every count, the audio and image parts included,
zeros and counts up to ``2**63 - 1``, and what is no count (a negative, a bool, a float, NaN, ``None``, a string:
read as ``0`` or as its whole part, as the class documents; it refuses nothing) —, :class:`~agentactors.pricing.Price`
values (every rate set or left ``None``, long-prompt tiers), models of the genai-prices table, costs and budgets.
Then:

* ``Usage`` addition is commutative and associative, ``Usage()`` its identity (the sum saturates at
  ``2**63 - 1``), and parts stay within their totals when the summands' do;
* a usage built from tokens of each kind (fresh text, audio and image prompt tokens; cached reads of each; 5-minute
  and 1-hour cache writes; text, reasoning, audio and image answer tokens) costs each kind at its own rate, or at
  the documented fallback when the price has none — on both wires' counting (cached tokens inside
  ``input_tokens`` or apart), at the tier the prompt passes; a cost is never negative nor NaN, ``total`` is
  ``input + output``, whatever counts a hand-made usage holds;
* the cost of a sum is the sum of the costs (one model, one price without tiers; float rounding only), and adding
  tokens of any kind never lowers a cost (tiers that cost more than the base);
* a model without a price costs ``None``; ``total_cost`` of results one of which is unpriced is ``None``; a batch
  price is the live one times the factor; a cut-short call costs its tokens, all of it estimated;
* the session and journal codecs give back every usage, result cost and response (and so its cost, its cut-short
  calls) they wrote; a record written without the newer counts reads them as 0;
* a :class:`~agentactors.gateway.cost_budget.CostBudget` charged with generated costs — in any order, from tasks
  interleaving on virtual time (asyncio and trio) or from threads — ends at the exact total, counts every call
  (unpriced: ``None``, another currency, a cost that is not a finite non-negative number) and is past its limit
  exactly from the charge that took it there.

Costs a budget is charged with are multiples of ``2**-10`` so that their float sums are exact in any order.
A few seconds; hunt longer with ``HYPOTHESIS_PROFILE=explore COST_EXAMPLES=2000``.  What they found is pinned as
plain examples at the end.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import threading
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import anyio
import attrs
import pytest
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors import pricing
from agentactors.events import to_jsonable
from agentactors.gateway.cost_budget import CostBudget
from agentactors.journal.codec import response_from_event, response_from_json, response_to_json
from agentactors.loop.cost import RunCost, message_tokens
from agentactors.loop.result import RunResult
from agentactors.messages import LLMResponse, Message, Usage
from agentactors.pricing import Cost, CutShort, Price
from agentactors.sessions.codec import run_result_from_json, run_result_to_json, usage_from_json, usage_to_json
from agentactors.testing import VirtualTimeLoop

EXAMPLES = int(os.environ.get("COST_EXAMPLES", "60"))
TOP = 2**63 - 1
FIELDS = tuple(attrs.fields_dict(Usage))
#: The counts a record written before them lacks (1-hour writes, audio, images).
NEWER = ("cache_write_1h_tokens", "input_audio_tokens", "cache_audio_read_tokens", "output_audio_tokens",
         "input_image_tokens", "cache_image_read_tokens", "output_image_tokens")
PRICED = ("my-provider", "my-model")
PRICED_APART = ("anthropic", "my-claude")  # a wire that counts cached tokens apart from input_tokens
UNPRICED = ("my-provider", "no-price-model")


@pytest.fixture(autouse=True)
def _clean_prices() -> Iterator[None]:
    pricing.clear_prices()
    yield
    pricing.clear_prices()
    pricing.set_batch_factor(pricing.BATCH_FACTOR)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


# --- strategies -----------------------------------------------------------------------------------------------

counts = st.one_of(st.just(0), st.integers(0, 10**7), st.integers(0, TOP), st.just(TOP))
# What is no count: each reads as 0.
no_counts = st.one_of(
    st.none(), st.booleans(), st.integers(max_value=-1), st.integers(min_value=TOP + 1),
    st.just(math.nan), st.just(math.inf), st.just(-math.inf), st.floats(max_value=-1e-300, allow_nan=False),
    st.floats(min_value=2.0**63, allow_infinity=False), st.text(max_size=5), st.just("12"), st.just(b"12"),
)
# A finite float in range: its whole part.
float_counts = st.floats(min_value=0.0, max_value=2.0**62, allow_nan=False)


@st.composite
def usages(draw: st.DrawFn) -> Usage:
    """Any usage: every count drawn alone (parts may exceed their totals, as a hand-made one's may)."""
    return Usage(**{name: draw(counts) for name in FIELDS})


#: The kinds of token a usage is made of, and whether each is a prompt token.
KINDS: Mapping[str, bool] = {
    "text_in": True, "audio_in": True, "image_in": True,
    "text_read": True, "audio_read": True, "image_read": True,
    "write_5m": True, "write_1h": True,
    "text_out": False, "reasoning": False, "audio_out": False, "image_out": False,
}


def parts_strategy(most: int) -> st.SearchStrategy[dict[str, int]]:
    part = st.one_of(st.just(0), st.integers(0, 1000), st.integers(0, most))
    return st.fixed_dictionaries({kind: part for kind in KINDS})


parts = parts_strategy(10**12)


def usage_of(p: Mapping[str, int], cached_in_input: bool = True) -> Usage:
    """The usage a vendor reports for tokens of each kind (``docs/costs.md``: the parts are within the totals)."""
    read = p["text_read"] + p["audio_read"] + p["image_read"]
    write = p["write_5m"] + p["write_1h"]
    fresh = p["text_in"] + p["audio_in"] + p["image_in"]
    return Usage(
        fresh + (read + write if cached_in_input else 0),
        p["text_out"] + p["reasoning"] + p["audio_out"] + p["image_out"],
        read, write, p["reasoning"], p["write_1h"],
        input_audio_tokens=p["audio_in"] + p["audio_read"], cache_audio_read_tokens=p["audio_read"],
        output_audio_tokens=p["audio_out"],
        input_image_tokens=p["image_in"] + p["image_read"], cache_image_read_tokens=p["image_read"],
        output_image_tokens=p["image_out"],
    )


def prompt_of(p: Mapping[str, int]) -> int:
    return sum(n for kind, n in p.items() if KINDS[kind])


def rate(price: Price, kind: str) -> float:
    """The rate ``docs/costs.md`` gives a token of ``kind`` at ``price``: its own, else the documented fallback."""

    def own(value: float | None, fallback: float) -> float:
        return fallback if value is None else value

    audio_in, image_in = own(price.input_audio, price.input), own(price.input_image, price.input)
    write = own(price.cache_write, price.input)
    rates = {
        "text_in": price.input, "audio_in": audio_in, "image_in": image_in,
        "text_read": own(price.cache_read, price.input),
        # a cached one of a price with no cache rate at all: no discount, the fresh rate of its kind
        "audio_read": own(price.cache_audio_read, own(price.cache_read, audio_in)),
        "image_read": own(price.cache_image_read, own(price.cache_read, image_in)),
        "write_5m": write, "write_1h": own(price.cache_write_1h, write),
        "text_out": price.output, "reasoning": own(price.reasoning, price.output),
        "audio_out": own(price.output_audio, price.output), "image_out": own(price.output_image, price.output),
    }
    return rates[kind]


def expected(price: Price, p: Mapping[str, int]) -> tuple[float, float]:
    """(input, output) of ``p``'s tokens, each kind at its rate, at the tier the whole prompt passes."""
    at = price.at(prompt_of(p))
    cost_in = math.fsum(n * rate(at, kind) for kind, n in p.items() if KINDS[kind]) / 1e6
    cost_out = math.fsum(n * rate(at, kind) for kind, n in p.items() if not KINDS[kind]) / 1e6
    return cost_in, cost_out


rates = st.one_of(st.just(0.0), st.floats(0.0, 1000.0, allow_nan=False, allow_subnormal=False),
                  st.sampled_from([0.075, 0.3, 1.25, 2.5, 10.0, 40.0]))
maybe_rates = st.one_of(st.none(), rates)
RATE_NAMES = ("cache_read", "cache_write", "cache_write_1h", "reasoning", "input_audio", "cache_audio_read",
              "output_audio", "input_image", "cache_image_read", "output_image")


@st.composite
def flat_prices(draw: st.DrawFn) -> Price:
    optional: dict[str, Any] = {name: draw(maybe_rates) for name in RATE_NAMES}
    return Price(draw(rates), draw(rates), **optional)


def scaled(price: Price, factor: float) -> Price:
    """``price`` with every rate it has times ``factor`` (a long-prompt tier, as the table's cost more)."""
    rated: dict[str, Any] = {name: (None if (v := getattr(price, name)) is None else v * factor) for name in RATE_NAMES}
    return Price(price.input * factor, price.output * factor, currency=price.currency, **rated)


@st.composite
def prices(draw: st.DrawFn, tiered: bool = True) -> Price:
    base = draw(flat_prices())
    if not tiered or not draw(st.booleans()):
        return base
    starts = draw(st.lists(st.integers(0, 10**9), min_size=1, max_size=3, unique=True))
    factors = sorted(draw(st.lists(st.floats(1.0, 4.0), min_size=len(starts), max_size=len(starts))))
    tiers = tuple((start, scaled(base, f)) for start, f in zip(sorted(starts), factors, strict=True))
    shuffled = draw(st.permutations(tiers))  # given in any order: Price sorts them
    return attrs.evolve(base, tiers=shuffled)


# --- Usage: read, added --------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(field=st.sampled_from(FIELDS), bad=no_counts, good=counts, whole=float_counts)
def test_a_usage_reads_what_is_no_count_as_zero_and_a_float_as_its_whole_part(
    field: str, bad: Any, good: int, whole: float
) -> None:
    # Usage refuses nothing (its docstring: a vendor's answer is not lost for a bad count): it normalises.
    assert getattr(Usage(**{field: bad}), field) == 0
    assert getattr(Usage(**{field: good}), field) == good
    as_float: dict[str, Any] = {field: whole}
    assert getattr(Usage(**as_float), field) == int(whole)
    usage = Usage(**{field: bad})
    assert all(type(getattr(usage, name)) is int for name in FIELDS)


def test_a_usage_refuses_what_is_no_field_and_positional_media_counts() -> None:
    with pytest.raises(TypeError):
        Usage(prompt_tokens=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Usage(1, 2, 3, 4, 5, 6, 7)  # type: ignore[call-arg]  # the audio and image counts are keyword-only


@settings(max_examples=EXAMPLES, deadline=None)
@given(a=usages(), b=usages(), c=usages())
def test_usage_addition_is_a_commutative_monoid_saturating_at_the_top(a: Usage, b: Usage, c: Usage) -> None:
    assert a + b == b + a
    assert (a + b) + c == a + (b + c)
    assert a + Usage() == a == Usage() + a
    total = a + b + c
    for name in FIELDS:
        assert getattr(total, name) == min(TOP, getattr(a, name) + getattr(b, name) + getattr(c, name))


@settings(max_examples=EXAMPLES, deadline=None)
@given(p=st.lists(parts_strategy(TOP // 4), min_size=1, max_size=4), apart=st.booleans())
def test_a_sum_keeps_its_parts_within_their_totals(p: list[dict[str, int]], apart: bool) -> None:
    total = sum((usage_of(x, not apart) for x in p), Usage())
    assert total.reasoning_tokens + total.output_audio_tokens + total.output_image_tokens <= total.output_tokens or (
        total.output_tokens == TOP)
    assert total.cache_write_1h_tokens <= total.cache_write_tokens
    assert total.cache_audio_read_tokens <= total.cache_read_tokens
    assert total.cache_image_read_tokens <= total.cache_read_tokens
    assert total.cache_audio_read_tokens <= total.input_audio_tokens
    assert total.cache_image_read_tokens <= total.input_image_tokens
    if not apart:
        assert total.cache_read_tokens <= total.input_tokens and total.input_audio_tokens <= total.input_tokens


# --- what a usage costs ----------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(price=prices(), p=parts, apart=st.booleans())
def test_every_kind_of_token_costs_its_own_rate_or_the_documented_fallback(
    price: Price, p: dict[str, int], apart: bool
) -> None:
    cost = price.cost(usage_of(p, not apart), cached_in_input=not apart)
    cost_in, cost_out = expected(price, p)
    assert close(cost.input, cost_in) and close(cost.output, cost_out), (cost, cost_in, cost_out)
    assert cost.total == cost.input + cost.output and cost.currency == price.currency and cost.estimated == 0.0


@settings(max_examples=EXAMPLES, deadline=None)
@given(price=flat_prices(), kind=st.sampled_from(tuple(KINDS)), n=st.integers(1, 10**12), apart=st.booleans())
def test_one_kind_alone_costs_exactly_its_rate(price: Price, kind: str, n: int, apart: bool) -> None:
    p = dict.fromkeys(KINDS, 0) | {kind: n}
    cost = price.cost(usage_of(p, not apart), cached_in_input=not apart)
    assert close(cost.total, n * rate(price, kind) / 1e6)
    assert (cost.output if KINDS[kind] else cost.input) == 0.0


@settings(max_examples=EXAMPLES, deadline=None)
@given(price=prices(), usage=usages(), apart=st.booleans())
def test_a_cost_is_never_negative_nor_nan_whatever_a_hand_made_usage_says(
    price: Price, usage: Usage, apart: bool
) -> None:
    cost = price.cost(usage, cached_in_input=not apart)
    for amount in (cost.input, cost.output, cost.total):
        assert math.isfinite(amount) and amount >= 0.0, cost
    assert cost.total == cost.input + cost.output
    # ... and no more than every token it counts at the dearest rate there is.  (Cached tokens counted beyond
    # input_tokens on a wire that counts them inside it are priced as counted: held to input_tokens they would
    # not be — which count is wrong is not known.)
    at = price.at(usage.input_tokens + (0 if not apart else usage.cache_read_tokens + usage.cache_write_tokens))
    dearest = max(rate(at, kind) for kind in KINDS)
    tokens = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    assert cost.total <= tokens * dearest / 1e6 * (1 + 1e-9) + 1e-12


@settings(max_examples=EXAMPLES, deadline=None)
@given(price=prices(tiered=False), p=st.lists(parts, min_size=2, max_size=4), apart=st.booleans())
def test_the_cost_of_a_sum_is_the_sum_of_the_costs(price: Price, p: list[dict[str, int]], apart: bool) -> None:
    each = [price.cost(usage_of(x, not apart), cached_in_input=not apart) for x in p]
    whole = price.cost(sum((usage_of(x, not apart) for x in p), Usage()), cached_in_input=not apart)
    assert close(whole.input, math.fsum(c.input for c in each))
    assert close(whole.output, math.fsum(c.output for c in each))
    assert close(whole.total, math.fsum(c.total for c in each))


@settings(max_examples=EXAMPLES, deadline=None)
@given(price=prices(), p=parts, kind=st.sampled_from(tuple(KINDS)), more=st.integers(1, 10**9), apart=st.booleans())
def test_more_tokens_of_any_kind_never_cost_less(
    price: Price, p: dict[str, int], kind: str, more: int, apart: bool
) -> None:
    before = price.cost(usage_of(p, not apart), cached_in_input=not apart)
    after = price.cost(usage_of(p | {kind: p[kind] + more}, not apart), cached_in_input=not apart)
    assert after.total >= before.total * (1 - 1e-12)
    assert after.input >= before.input * (1 - 1e-12) and after.output >= before.output * (1 - 1e-12)


# --- prices by model -----------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(price=prices(), usage=usages(), p=parts, factor=st.floats(0.0, 1.0))
def test_a_model_costs_its_price_none_without_one_and_its_batch_price_scaled(
    price: Price, usage: Usage, p: dict[str, int], factor: float
) -> None:
    pricing.clear_prices()
    pricing.set_batch_factor(factor)
    pricing.set_price(*PRICED, price)
    pricing.set_price(*PRICED_APART, price)
    assert pricing.cost_of(*UNPRICED, usage) is None and pricing.cost_of(*UNPRICED, usage, batch=True) is None
    assert pricing.cost_of(None, "my-model", usage) is None and pricing.cost_of("my-provider", None, usage) is None
    assert pricing.cost_of(*PRICED, usage) == price.cost(usage)
    assert pricing.cost_of(*PRICED_APART, usage) == price.cost(usage, cached_in_input=False)
    # each count of its wire: cached tokens inside input_tokens, or (Anthropic's) apart
    for (provider, model), inside in ((PRICED, True), (PRICED_APART, False)):
        live = pricing.cost_of(provider, model, usage_of(p, inside))
        batch = pricing.cost_of(provider, model, usage_of(p, inside), batch=True)
        assert live is not None and batch is not None
        assert close(live.total, math.fsum(expected(price, p)))
        assert close(batch.total, live.total * factor)
    pricing.set_price(*PRICED, None)  # no price, whatever was set
    assert pricing.cost_of(*PRICED, usage) is None


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    costs=st.lists(st.one_of(st.none(), st.builds(Cost, st.floats(0, 100), st.floats(0, 100))), max_size=6),
)
def test_total_cost_is_none_with_one_unpriced_result_and_the_sum_otherwise(costs: list[Cost | None]) -> None:
    results = [SimpleNamespace(cost=c) for c in costs]
    total = pricing.total_cost(results)
    if any(c is None for c in costs):
        assert total is None  # never the smaller sum of the priced part
    else:
        assert total is not None
        assert close(total.total, math.fsum(c.total for c in costs if c is not None))
        assert close(total.input, math.fsum(c.input for c in costs if c is not None))


@settings(max_examples=EXAMPLES, deadline=None)
@given(price=flat_prices(), n_in=st.integers(0, 10**9), n_out=st.integers(0, 10**9), estimated=st.booleans(),
       batch=st.booleans(), priced=st.booleans())
def test_a_cut_short_call_costs_its_tokens_at_the_input_rate_all_of_it_estimated(
    price: Price, n_in: int, n_out: int, estimated: bool, batch: bool, priced: bool
) -> None:
    pricing.set_price(*PRICED, price)
    who = PRICED if priced else UNPRICED
    call = CutShort(*who, n_in, n_out, estimated, batch)
    cost = call.cost()
    if not priced:
        assert cost is None
        return
    assert cost is not None
    factor = pricing.BATCH_FACTOR if batch else 1.0
    assert close(cost.total, (n_in * price.input + n_out * price.output) / 1e6 * factor)
    assert cost.estimated == (cost.total if estimated else 0.0)
    # carried by a response, and back from its JSON form (a journaled response's): the same calls
    response = pricing.with_cut_short(LLMResponse("ok", usage=Usage(1, 1), provider=who[0], model=who[1]), [call])
    again = response_from_json(json.loads(json.dumps(response_to_json(response))))
    assert pricing.cut_short_of(again) == (call,)
    assert pricing.response_cost(again) == pricing.response_cost(response)


# --- the table's models ----------------------------------------------------------------------------------------


@functools.cache
def _table_models() -> list[tuple[str, str]]:
    genai = pytest.importorskip("genai_prices.data_snapshot")  # the [prices] extra
    snapshot = genai.get_snapshot()
    ours = {"openai": "openai", "anthropic": "anthropic", "google": "gemini", "aws": "bedrock"}
    return sorted((ours[p.id], m.id) for p in snapshot.providers if p.id in ours for m in p.models)


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data(), p=parts_strategy(10**7))
def test_a_model_of_the_table_costs_its_table_price_by_kind(data: st.DataObject, p: dict[str, int]) -> None:
    provider, model = data.draw(st.sampled_from(_table_models()))
    price = pricing.price_for(provider, model)
    apart = provider in ("anthropic", "bedrock")
    cost = pricing.cost_of(provider, model, usage_of(p, not apart))
    if price is None:  # priced per request or per second: no token price — and no cost, never 0
        assert cost is None
        return
    assert cost is not None
    cost_in, cost_out = expected(price, p)
    assert close(cost.input, cost_in) and close(cost.output, cost_out)


# --- stored and read back --------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(usage=usages(), old=st.sets(st.sampled_from(NEWER)))
def test_the_codecs_give_back_every_usage_and_an_old_record_reads_zeros(usage: Usage, old: set[str]) -> None:
    stored = json.loads(json.dumps(usage_to_json(usage)))
    assert usage_from_json(stored) == usage
    # a record written before the newer counts existed: without them, read as 0 (none reported)
    before = {name: value for name, value in stored.items() if name not in old}
    assert usage_from_json(before) == attrs.evolve(usage, **dict.fromkeys(old, 0))
    # a journal's response, losslessly; a JSONL event record's, leniently: the usage is the same
    response = LLMResponse("hi", usage=usage, model="my-model", provider="my-provider")
    assert response_from_json(json.loads(json.dumps(response_to_json(response)))) == response
    assert response_from_event(json.loads(json.dumps(to_jsonable(response)))).usage == usage
    event = json.loads(json.dumps(to_jsonable(response)))
    event["usage"] = {name: value for name, value in event["usage"].items() if name not in old}
    assert response_from_event(event).usage == attrs.evolve(usage, **dict.fromkeys(old, 0))


amounts = st.one_of(st.just(0.0), st.floats(0.0, 1e6, allow_nan=False), st.integers(0, 10**6))


@settings(max_examples=EXAMPLES, deadline=None)
@given(price=prices(), usage=usages(), batch=st.booleans(), priced=st.booleans(),
       cost=st.one_of(st.none(), st.builds(Cost, amounts, amounts, currency=st.sampled_from(["USD", "eur"]),
                                           estimated=amounts)))
def test_a_response_s_cost_and_a_result_s_cost_survive_the_codecs(
    price: Price, usage: Usage, batch: bool, priced: bool, cost: Cost | None
) -> None:
    pricing.set_price(*PRICED, price)
    who = PRICED if priced else UNPRICED
    data = {"batch": {"id": "b1", "custom_id": "c1"}} if batch else None
    response = LLMResponse("hi", usage=usage, provider=who[0], model=who[1], provider_data=data)
    again = response_from_json(json.loads(json.dumps(response_to_json(response))))
    assert again == response
    assert pricing.response_cost(again) == pricing.response_cost(response)
    assert (pricing.response_cost(again) is None) == (not priced)
    result: RunResult[Any] = RunResult("done", (Message.user("q"),), usage=usage, cost=cost)
    back = run_result_from_json(json.loads(json.dumps(run_result_to_json(result))))
    assert back.usage == usage and back.cost == cost


def test_a_result_written_without_a_cost_reads_as_unpriced_and_without_usage_as_none() -> None:
    doc = run_result_to_json(RunResult("done", (Message.user("q"),)))
    assert "cost" not in doc and "usage" not in doc
    back = run_result_from_json(doc)
    assert back.cost is None and back.usage == Usage()


# --- a budget charged with them --------------------------------------------------------------------------------

# Multiples of 2**-10: their float sums are exact in any order, so "the exact total" is a number to compare.
dyadic = st.integers(0, 2**20).map(lambda n: n / 1024)
good_costs = st.builds(lambda a, b, e: Cost(a, b, estimated=min(e, a + b)), dyadic, dyadic, dyadic)
charges = st.one_of(
    good_costs, good_costs, good_costs,
    st.none(),  # unpriced
    st.builds(lambda a: Cost(a, 0.0, currency="EUR"), dyadic),  # another currency
    st.sampled_from([  # unsound: an amount that is not a finite, non-negative number
        Cost(math.nan, 0.0), Cost(0.0, math.inf), Cost(-1.0, 0.0), Cost(1.0, 1.0, -5.0),
        Cost(1.0, 0.0, estimated=math.nan), Cost(1.0, 0.0, estimated=-1.0), Cost(1.0, 0.0, estimated=math.inf),
    ]),
)


def _counted(cost: Cost | None) -> bool:
    """Whether a USD budget adds ``cost`` to what it spent (``docs/costs.md``: else it is counted unpriced)."""
    return cost is not None and cost.currency == "USD" and all(
        math.isfinite(v) and v >= 0 for v in (cost.input, cost.output, cost.total, cost.estimated))


@settings(max_examples=EXAMPLES, deadline=None)
@given(costs=st.lists(charges, max_size=12), limit=st.one_of(st.none(), dyadic.map(lambda x: x * 4)),
       order=st.randoms(use_true_random=False), probe=dyadic)
def test_a_budget_charged_in_any_order_ends_at_the_exact_total_and_passes_at_the_documented_call(
    costs: list[Cost | None], limit: float | None, order: Any, probe: float
) -> None:
    order.shuffle(costs)
    budget = CostBudget(limit, currency="USD")
    running = 0.0
    estimated = 0.0
    for cost in costs:
        if limit is not None:
            assert budget.would_pass(probe) == (running + probe > limit)
        budget.charge(cost)
        if _counted(cost):
            assert cost is not None
            running += cost.total
            estimated += cost.estimated
        assert budget.spent == running
        assert budget.passed == (limit is not None and running > limit)  # from the charge that took it past
        assert budget.remaining == (None if limit is None else max(0.0, limit - running))
    unpriced = sum(not _counted(c) for c in costs)
    assert (budget.calls, budget.unpriced) == (len(costs), unpriced)
    assert budget.estimated == estimated
    if unpriced:
        assert budget.cost is None  # never the smaller sum of the priced part
    else:
        assert budget.cost is not None and budget.cost.total == running


async def _charge_from_tasks(budget: CostBudget, lanes: list[list[tuple[float, Cost | None]]]) -> list[bool]:
    """Each lane a task charging its costs after its delays; whether the budget was past its limit after each."""
    seen: list[tuple[float, bool]] = []

    async def lane(items: list[tuple[float, Cost | None]]) -> None:
        for delay, cost in items:
            await anyio.sleep(delay)
            budget.charge(cost)
            seen.append((budget.spent, budget.passed))

    async with anyio.create_task_group() as tg:
        for items in lanes:
            tg.start_soon(lane, items)
    return [passed for _, passed in seen]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=EXAMPLES // 2, deadline=None)
@given(
    lanes=st.lists(st.lists(st.tuples(st.sampled_from([0.0, 0.001, 0.5, 1.0, 3.0]), charges), max_size=5),
                   min_size=1, max_size=5),
    limit=st.one_of(st.none(), dyadic.map(lambda x: x * 4)),
)
def test_a_budget_charged_from_interleaving_tasks_ends_at_the_exact_total(
    backend: str, lanes: list[list[tuple[float, Cost | None]]], limit: float | None
) -> None:
    budget = CostBudget(limit, currency="USD")
    options: dict[str, Any] = (
        {"loop_factory": VirtualTimeLoop} if backend == "asyncio"
        else {"clock": trio.testing.MockClock(autojump_threshold=0)}
    )
    passed = anyio.run(_charge_from_tasks, budget, lanes, backend=backend, backend_options=options)
    every = [cost for items in lanes for _, cost in items]
    total = sum(c.total for c in every if _counted(c) and c is not None)
    assert budget.spent == total
    assert (budget.calls, budget.unpriced) == (len(every), sum(not _counted(c) for c in every))
    assert budget.passed == (limit is not None and total > limit)
    # once past, past for good (costs are never refunds): the first charge that passed it, and every one after
    assert passed == sorted(passed)


@settings(max_examples=10, deadline=None)
@given(costs=st.lists(good_costs, min_size=1, max_size=40), threads=st.integers(2, 4))
def test_a_budget_charged_from_threads_ends_at_the_exact_total(costs: list[Cost], threads: int) -> None:
    budget = CostBudget(None)
    share = [costs[i::threads] for i in range(threads)]

    def charge(mine: list[Cost]) -> None:
        for cost in mine:
            budget.charge(cost)

    workers = [threading.Thread(target=charge, args=(mine,)) for mine in share]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert budget.spent == sum(c.total for c in costs) and budget.calls == len(costs) and budget.unpriced == 0


# --- a run charging its calls ---------------------------------------------------------------------------------


@st.composite
def responses(draw: st.DrawFn) -> LLMResponse:
    provider, model = draw(st.sampled_from([PRICED, PRICED_APART, UNPRICED]))
    response = LLMResponse("ok", usage=usage_of(draw(parts_strategy(10**6)), provider != "anthropic"),
                           provider=provider, model=model)
    cut = draw(st.lists(st.builds(CutShort, st.sampled_from([PRICED[0], UNPRICED[0]]), st.just(PRICED[1]),
                                  st.integers(0, 10**6), st.integers(0, 10**4)), max_size=2))
    return pricing.with_cut_short(response, cut)


@settings(max_examples=EXAMPLES, deadline=None)
@given(price=flat_prices(), calls=st.lists(responses(), min_size=1, max_size=6),
       limit=st.floats(0.0, 10.0), said=st.lists(st.text(max_size=40), min_size=1, max_size=6))
def test_a_run_charges_each_call_and_stops_at_the_documented_one(
    price: Price, calls: list[LLMResponse], limit: float, said: list[str]
) -> None:
    pricing.set_price(*PRICED, price)
    pricing.set_price(*PRICED_APART, price)
    run = RunCost(limit)
    (budget,) = run.budgets
    spent, unpriced, charges, seen = 0.0, False, 0, 0
    conversation: list[Message] = []
    for response, text in zip(calls, itertools.cycle(said), strict=False):
        parts_of = [pricing.response_cost(response), *(c.cost() for c in pricing.cut_short_of(response))]
        charged = run.charge(response)
        if any(c is None for c in parts_of):
            unpriced = True
            assert charged is None  # the llm.response event's cost: unknown with an unpriced part
        else:
            assert charged is not None and close(charged.total, math.fsum(c.total for c in parts_of if c))
        for part in parts_of:
            if part is not None:
                spent += part.total
        charges += len(parts_of)  # each cut-short call is a call of its own
        assert budget.spent == spent and budget.calls == charges
        error = run.passed()
        assert (error is not None) == (spent > limit)  # right after the call that took it past, no later
        if error is not None:
            assert (error.limit, error.spent, error.scope, error.estimate) == (limit, spent, "run", None)
            break
        # before the next call: its estimate is the last prompt and what was added since, priced at who answered
        conversation.append(Message.user(text))
        stop = run.before(conversation, None)
        last = pricing.price_for(response.provider, response.model)
        estimate = None if last is None else last.cost(Usage(
            pricing.prompt_tokens(response.provider, response.usage) + message_tokens(conversation[seen:]), 0)).total
        seen = len(conversation)
        assert (stop is not None) == (estimate is not None and spent + estimate > limit)
        if stop is not None:
            assert stop.estimate == estimate and stop.scope == "run"
            break
    total = run.total()
    assert (total is None) == unpriced
    if total is not None:
        assert close(total.total, spent)


# --- what the programs found, pinned ---------------------------------------------------------------------------


def test_media_priced_below_text_never_make_a_cost_negative_nor_imprecise() -> None:
    # Audio and image tokens were priced as text and then corrected by the difference of their own rates: a
    # cancellation that left a prompt of free audio and images costing less than nothing (-3e-05 USD, which a
    # budget then counted as unpriced), and 52,877,721 free audio tokens beside one token at 615 USD a million
    # costing 0.000614999997 rather than 0.000615.
    free_media = Price(2.5, 1.0, input_audio=0.0, input_image=0.0)
    audio, image = 66_245_842_150_889_626, 41_771_933_908_921_079
    cost = free_media.cost(Usage(audio + image, 0, input_audio_tokens=audio, input_image_tokens=image))
    assert (cost.input, cost.total) == (0.0, 0.0)
    dear = Price(615.0, 0.0, input_audio=0.0)
    cost = dear.cost(Usage(52_877_722, 0, 0, 1, cache_write_1h_tokens=1, input_audio_tokens=52_877_721))
    assert cost.input == 615.0 / 1e6


@pytest.mark.parametrize("estimated", [math.nan, math.inf, -1.0])
def test_a_budget_counts_a_cost_with_an_unsound_estimated_part_as_unpriced(estimated: float) -> None:
    # Only input, output and total were checked: a NaN estimated part was added, and the budget's ``estimated``
    # was NaN for good (an infinity, a negative one: past its ``spent``, or a refund of it).
    budget = CostBudget(None)
    budget.charge(Cost(1.0, 0.0))
    budget.charge(Cost(1.0, 0.0, estimated=estimated))
    assert (budget.spent, budget.estimated, budget.unpriced, budget.calls) == (1.0, 0.0, 1, 2)
    assert budget.cost is None
