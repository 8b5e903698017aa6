"""Prices from the table (or set by the user), what a usage costs, and what a run costs and may spend."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from agentactors import (
    Agent,
    Cost,
    CostLimitExceeded,
    InMemoryRecorder,
    LLMResponse,
    RunError,
    ScriptedProvider,
    ToolCall,
    Usage,
    tool,
)
from agentactors.errors import AgentActorsError, CostLimitExceededError
from agentactors.gateway.cost_budget import CostBudget
from agentactors.pricing import (
    Price,
    clear_prices,
    cost_of,
    price_for,
    response_cost,
    set_price,
    set_prices,
    total_cost,
)

genai_prices = pytest.importorskip("genai_prices")  # the [prices] extra


@pytest.fixture(autouse=True)
def _no_prices_set() -> Iterator[None]:
    clear_prices()
    yield
    clear_prices()


def table_cost(usage: Usage, model: str, vendor: str, *, cached_apart: bool = False) -> tuple[float, float, float]:
    """genai-prices' own figures for ``usage`` (its input_tokens counts the cached ones)."""
    cached = usage.cache_read_tokens + usage.cache_write_tokens
    calc = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=usage.input_tokens + (cached if cached_apart else 0),
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        ),
        model,
        provider_id=vendor,
    )
    return float(calc.input_price), float(calc.output_price), float(calc.total_price)


# --- prices and costs against the table ----------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "vendor", "model", "usage", "cached_apart"),
    [  # Usage(input, output, cache_read, cache_write, reasoning)
        ("openai", "openai", "gpt-4o", Usage(12_000, 800, 4_000), False),
        ("openai", "openai", "gpt-4o-mini-2024-07-18", Usage(3_000, 1_500), False),
        ("openai-responses", "openai", "o3", Usage(5_000, 2_000, 1_000, 0, 1_200), False),
        ("anthropic", "anthropic", "claude-sonnet-4-5", Usage(900, 400, 5_000, 700), True),
        ("gemini", "google", "gemini-2.5-flash", Usage(7_000, 300, 2_000, 0, 100), False),
        ("gemini", "google", "gemini-2.5-pro", Usage(250_000, 1_000), False),  # past the 200k tier
    ],
)
def test_costs_agree_with_the_table(provider: str, vendor: str, model: str, usage: Usage, cached_apart: bool) -> None:
    cost = cost_of(provider, model, usage)
    assert cost is not None and cost.currency == "USD"
    expected = table_cost(usage, model, vendor, cached_apart=cached_apart)
    assert (cost.input, cost.output, cost.total) == pytest.approx(expected)
    assert cost.total == pytest.approx(cost.input + cost.output)


def test_a_price_is_per_million_tokens_with_cached_and_reasoning_rates() -> None:
    price = Price(input=2.0, output=8.0, cache_read=0.5, reasoning=20.0)
    cost = price.cost(Usage(1_000_000, 1_000_000, cache_read_tokens=400_000, reasoning_tokens=250_000))
    assert cost.input == pytest.approx(0.6 * 2.0 + 0.4 * 0.5)
    assert cost.output == pytest.approx(0.75 * 8.0 + 0.25 * 20.0)
    # Without a cached rate, cached tokens cost what input costs; on a wire that counts them apart, they add.
    assert Price(1.0, 1.0).cost(Usage(100, 0, cache_read_tokens=50), cached_in_input=False).input == pytest.approx(
        150 / 1e6
    )


def test_tiers_price_every_token_of_a_long_prompt() -> None:
    price = Price(1.0, 2.0, tiers=[(1_000, Price(10.0, 20.0))])
    assert price.cost(Usage(1_000, 10)).total == pytest.approx((1_000 * 1.0 + 10 * 2.0) / 1e6)
    assert price.cost(Usage(1_001, 10)).total == pytest.approx((1_001 * 10.0 + 10 * 20.0) / 1e6)


def test_a_model_without_a_price_has_no_cost_never_zero() -> None:
    assert price_for("openai", "no-such-model-xyz") is None
    assert price_for("my-own-gateway", "gpt-4o") is None  # a name the table does not know
    assert price_for("scripted", "scripted-model") is None
    assert price_for(None, "gpt-4o") is None and price_for("openai", None) is None
    assert cost_of("openai", "no-such-model-xyz", Usage(10, 10)) is None
    assert response_cost(LLMResponse("x", usage=Usage(10, 10), provider="scripted", model="m")) is None


def test_the_package_s_stand_in_models_never_load_the_table() -> None:
    # A scripted or replayed run is priced only by a price the user set: loading the vendor table for it
    # costs ~14 MB and ~0.2 s in every test and benchmark process, and the table cannot know the name.
    code = (
        "import sys; from agentactors.pricing import price_for; "
        "assert price_for('scripted', 'scripted-model') is None; "
        "assert price_for('replay', 'gpt-4o', batch=True) is None; "
        "print('genai_prices' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False", out.stderr
    set_price("scripted", "scripted-model", Price(1.0, 2.0))
    assert price_for("scripted", "scripted-model") == Price(1.0, 2.0)  # a price the user sets still counts


def test_a_price_set_by_the_user_wins_over_the_table_and_can_be_cleared() -> None:
    table = price_for("openai", "gpt-4o")
    assert table is not None
    set_price("openai", "gpt-4o", Price(1.0, 1.0))
    assert price_for("openai", "gpt-4o") == Price(1.0, 1.0)
    set_prices({("my-own-gateway", "llama-70b"): Price(0.5, 0.5), ("openai", "gpt-4o"): None})
    assert price_for("my-own-gateway", "llama-70b") == Price(0.5, 0.5)
    assert price_for("openai", "gpt-4o") is None  # explicitly unpriced
    clear_prices()
    assert price_for("openai", "gpt-4o") == table
    with pytest.raises(TypeError):
        set_price("openai", "gpt-4o", 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Price(-1.0, 1.0)


def test_a_price_set_for_a_model_applies_to_its_dated_names() -> None:
    # Vendors answer with the dated name (OpenAI gpt-4o-2024-08-06 for gpt-4o, Anthropic
    # claude-sonnet-4-5-20250929), and a response is priced by the model that answered: a negotiated
    # rate set for the undated name was ignored for every real response.
    set_price("openai", "gpt-4o", Price(1.0, 4.0))
    assert price_for("openai", "gpt-4o-2024-08-06") == Price(1.0, 4.0)
    response = LLMResponse("x", usage=Usage(100_000, 10_000), provider="openai", model="gpt-4o-2024-08-06")
    assert response_cost(response) == Cost(0.1, 0.04)
    set_price("anthropic", "claude-sonnet-4-5", Price(2.0, 10.0))
    assert price_for("anthropic", "claude-sonnet-4-5-20250929") == Price(2.0, 10.0)
    # A name the user set that is an alias itself (not the table's own id) matches the same model.
    set_price("anthropic", "claude-3-5-sonnet-latest", Price(3.0, 3.0))
    assert price_for("anthropic", "claude-3-5-sonnet-20241022") == Price(3.0, 3.0)
    # Batch: the price set, scaled by the factor, not the table's batch price.
    assert price_for("openai", "gpt-4o-2024-08-06", batch=True) == Price(0.5, 2.0)


def test_no_price_set_for_a_model_holds_for_its_dated_names() -> None:
    assert price_for("openai", "o3-2025-04-16") is not None  # the table's, looked up (and cached) first
    set_price("openai", "o3", None)  # "no price, whatever the table says"
    assert price_for("openai", "o3-2025-04-16") is None
    assert response_cost(LLMResponse("x", usage=Usage(10, 10), provider="openai", model="o3-2025-04-16")) is None
    assert price_for("openai", "o3-2025-04-16", batch=True) is None
    clear_prices()
    assert price_for("openai", "o3-2025-04-16") is not None


def test_a_price_set_for_the_exact_dated_name_wins_over_the_undated_one() -> None:
    set_price("openai", "gpt-4o", Price(1.0, 4.0))
    set_price("openai", "gpt-4o-2024-08-06", Price(2.0, 8.0))
    assert price_for("openai", "gpt-4o-2024-08-06") == Price(2.0, 8.0)
    assert price_for("openai", "gpt-4o-2024-11-20") == Price(1.0, 4.0)
    assert price_for("openai", "gpt-4o") == Price(1.0, 4.0)
    # A price set on another provider's name is not this one's.
    assert price_for("azure-openai", "gpt-4o-2024-08-06") != Price(1.0, 4.0)


def test_costs_add_up_in_one_currency() -> None:
    assert Cost(1.0, 2.0) == Cost(1.0, 2.0, 3.0, "USD")
    assert Cost(1.0, 2.0) + Cost(0.5, 0.5) == Cost(1.5, 2.5, 4.0)
    assert sum([Cost(1.0, 0.0), Cost(0.0, 1.0)], Cost()) == Cost(1.0, 1.0)
    with pytest.raises(ValueError):
        Cost(1.0, 0.0) + Cost(1.0, 0.0, currency="EUR")


# --- what a run costs -------------------------------------------------------------------------------

pytestmark = pytest.mark.anyio

USAGE = Usage(10_000, 1_000)
STEP = 10_000 * 2.5 / 1e6 + 1_000 * 10.0 / 1e6  # gpt-4o: $2.5 / $10 per million


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return "sunny"


def priced(*items: Any, name: str = "openai", model: str = "gpt-4o") -> ScriptedProvider:
    return ScriptedProvider(list(items), name=name, model=model)


def call(n: int) -> LLMResponse:
    return LLMResponse(tool_calls=(ToolCall(f"c{n}", "lookup", {"city": "Oslo"}),), usage=USAGE)


async def test_a_run_costs_what_its_calls_cost_at_the_model_that_answered() -> None:
    result = await Agent(priced(call(1), LLMResponse("sunny", usage=USAGE)), tools=[lookup]).run("weather?")
    assert result.ok and result.cost is not None
    assert result.cost.total == pytest.approx(2 * STEP)
    assert result.usage == USAGE + USAGE  # usage unchanged


async def test_a_run_on_an_unpriced_model_has_no_cost() -> None:
    result = await Agent(ScriptedProvider([LLMResponse("hi", usage=USAGE)])).run("hi")
    assert result.ok and result.cost is None


async def test_one_unpriced_call_makes_the_run_cost_unknown() -> None:
    set_price("openai", "gpt-4o", None)
    result = await Agent(priced(LLMResponse("hi", usage=USAGE))).run("hi")
    assert result.cost is None


async def test_delegated_runs_add_their_cost_to_the_parent() -> None:
    child = Agent(priced(LLMResponse("child answer", usage=USAGE)), name="researcher")
    delegate = LLMResponse(tool_calls=(ToolCall("d1", "researcher", {"input": "look"}),), usage=USAGE)
    parent = Agent(priced(delegate, LLMResponse("done", usage=USAGE)), tools=[child.as_tool()])
    result = await parent.run("go")
    assert result.ok and len(result.children) == 1
    assert result.children[0].cost is not None and result.children[0].cost.total == pytest.approx(STEP)
    assert result.cost is not None and result.cost.total == pytest.approx(3 * STEP)


async def test_a_delegated_run_on_an_unpriced_model_makes_the_parent_cost_unknown() -> None:
    child = Agent(ScriptedProvider([LLMResponse("child answer", usage=USAGE)]), name="researcher")
    delegate = LLMResponse(tool_calls=(ToolCall("d1", "researcher", {"input": "look"}),), usage=USAGE)
    result = await Agent(priced(delegate, LLMResponse("done", usage=USAGE)), tools=[child.as_tool()]).run("go")
    assert result.ok and result.cost is None


async def test_run_many_results_add_up() -> None:
    agent = Agent(ScriptedProvider(lambda r: LLMResponse("ok", usage=USAGE), name="openai", model="gpt-4o"))
    results = await agent.run_many(["a", "b", "c"])
    total = total_cost(results)
    assert total is not None and total.total == pytest.approx(3 * STEP)
    assert total_cost([*results, await Agent(ScriptedProvider("x")).run("d")]) is None


async def test_llm_response_events_carry_the_call_cost() -> None:
    recorder = InMemoryRecorder()
    agent = Agent(priced(LLMResponse("hi", usage=USAGE)), recorders=[recorder])
    await agent.run("hi")
    [event] = [e for e in recorder.events if e.type == "llm.response"]
    assert event.cost == Cost(0.025, 0.01)


# --- the limit ----------------------------------------------------------------------------------------


async def test_a_run_stops_right_after_the_call_that_passes_its_limit() -> None:
    provider = priced(call(1), call(2), call(3), LLMResponse("done", usage=USAGE))
    # Without the estimate (which would stop it before its second call: tests/unit/loop/test_cost_limits.py).
    limit = CostBudget(1.5 * STEP, estimate=False)
    result = await Agent(provider, tools=[lookup]).run("weather?", cost_limit=limit)
    assert isinstance(result.error, CostLimitExceeded) and isinstance(result.error, RunError)
    assert isinstance(result.error, AgentActorsError) and CostLimitExceeded is CostLimitExceededError
    assert not result.ok and result.steps == 2 and provider.calls == 2
    assert result.error.limit == pytest.approx(1.5 * STEP) and result.error.spent == pytest.approx(2 * STEP)
    assert result.cost is not None and result.cost.total == pytest.approx(2 * STEP)
    assert len(result.tool_calls) == 1  # the second call's tools never ran


async def test_a_run_within_its_limit_ends_as_usual() -> None:
    # Exactly what it costs, without the estimate (which prices the second call's prompt a few tokens
    # above the first's, as a real vendor would count it); with room for those tokens, with it.
    for limit in (CostBudget(2 * STEP + 1e-9, estimate=False), 2 * STEP + 1e-3):
        result = await Agent(priced(call(1), LLMResponse("sunny", usage=USAGE)), tools=[lookup]).run(
            "weather?", cost_limit=limit
        )
        assert result.ok and result.content == "sunny"


async def test_the_limit_counts_the_delegated_runs() -> None:
    child = Agent(priced(LLMResponse("child answer", usage=Usage(100_000, 10_000))), name="researcher")
    delegate = LLMResponse(tool_calls=(ToolCall("d1", "researcher", {"input": "look"}),), usage=USAGE)
    parent = Agent(priced(delegate, LLMResponse("done", usage=USAGE)), tools=[child.as_tool()])
    result = await parent.run("go", cost_limit=5 * STEP)  # the child alone spends 10 steps' worth
    assert isinstance(result.error, CostLimitExceeded)


async def test_a_bad_limit_is_refused() -> None:
    agent = Agent(priced("hi"))
    for bad in (-1.0, float("nan"), "1"):
        with pytest.raises(ValueError):
            await agent.run("hi", cost_limit=bad)  # type: ignore[arg-type]
