"""Audio tokens are read from the wires and priced at their own rates, as the vendors bill them.

Before, a usage had no audio counts and every audio token was priced as text: a ``gemini-2.5-flash`` call with
an audio prompt reported half of what it cost, a ``gpt-realtime`` one a fraction — and a run's ``cost_limit``
let it spend that much more.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentactors import Agent, CostLimitExceeded, InMemoryRecorder, LLMResponse, ScriptedProvider, Usage
from agentactors.events import read_jsonl
from agentactors.journal.codec import response_from_json, response_to_json
from agentactors.messages import LLMRequest, Message, StreamEnd
from agentactors.pricing import Price, clear_prices, cost_of, price_for, set_batch_factor, set_price
from agentactors.providers.gemini.provider import GeminiProvider, GeminiWire
from agentactors.providers.openai.provider import OpenAIWire
from agentactors.sessions.codec import usage_from_json, usage_to_json

genai_prices = pytest.importorskip("genai_prices")  # the [prices] extra
pytestmark = pytest.mark.anyio  # (the async tests, on asyncio and trio)

AUDIO = {
    "input_tokens": 10_000, "input_audio_tokens": 4_000, "cache_read_tokens": 3_000, "cache_audio_read_tokens": 1_000,
    "output_tokens": 2_000, "output_audio_tokens": 1_500,
}


@pytest.fixture(autouse=True)
def _no_prices_set() -> Iterator[None]:
    clear_prices()
    yield
    clear_prices()
    set_batch_factor(0.5)


@pytest.mark.parametrize(
    ("provider", "vendor", "model", "counts"),
    [
        ("gemini", "google", "gemini-2.5-flash", {k: v for k, v in AUDIO.items() if k != "output_audio_tokens"}),
        ("gemini", "google", "gemini-2.0-flash", {"input_tokens": 10_000, "input_audio_tokens": 4_000,
                                                  "output_tokens": 1_000}),
        ("gemini", "google", "gemini-2.5-pro", {"input_tokens": 250_000, "input_audio_tokens": 40_000,
                                                "output_tokens": 1_000}),  # past the 200k tier
        ("openai", "openai", "gpt-realtime", AUDIO),
    ],
)
def test_audio_costs_agree_with_the_table(provider: str, vendor: str, model: str, counts: dict[str, int]) -> None:
    expected = genai_prices.calc_price(genai_prices.Usage(**counts), model, provider_id=vendor)
    cost = cost_of(provider, model, Usage(**counts))
    assert cost is not None
    assert (cost.input, cost.output) == pytest.approx((float(expected.input_price), float(expected.output_price)))
    # ... and it is more than the same tokens priced as text (what was reported before).
    text = cost_of(provider, model, Usage(counts["input_tokens"], counts["output_tokens"],
                                          counts.get("cache_read_tokens", 0)))
    assert text is not None
    assert cost.total > text.total if model != "gemini-2.5-pro" else cost.total == text.total  # (no audio rate)


def test_a_price_s_audio_rates_apply_to_the_audio_parts_only() -> None:
    price = Price(1.0, 2.0, cache_read=0.5, input_audio=10.0, cache_audio_read=4.0, output_audio=20.0, reasoning=3.0)
    usage = Usage(1_000_000, 1_000_000, cache_read_tokens=300_000, reasoning_tokens=100_000, input_audio_tokens=400_000,
                  cache_audio_read_tokens=100_000, output_audio_tokens=500_000)
    cost = price.cost(usage)
    # fresh: 700k of which 300k audio; cached: 300k of which 100k audio
    assert cost.input == pytest.approx(0.4 * 1.0 + 0.3 * 10.0 + 0.2 * 0.5 + 0.1 * 4.0)
    # output: 100k reasoning, 500k audio, 400k text
    assert cost.output == pytest.approx(0.1 * 3.0 + 0.5 * 20.0 + 0.4 * 2.0)
    assert cost.total == pytest.approx(cost.input + cost.output)


def test_without_audio_rates_audio_costs_what_the_tokens_it_is_part_of_cost() -> None:
    price = Price(1.0, 2.0, cache_read=0.5)
    plain = Usage(1_000, 500, cache_read_tokens=200)
    audio = Usage(1_000, 500, cache_read_tokens=200, input_audio_tokens=600, cache_audio_read_tokens=100,
                  output_audio_tokens=300)
    assert price.cost(audio) == price.cost(plain)


def test_overstated_audio_counts_are_held_to_what_they_are_parts_of() -> None:
    price = Price(1.0, 2.0, input_audio=10.0, output_audio=20.0)
    # More audio than tokens: every token is audio, none is priced twice.
    cost = price.cost(Usage(1_000, 100, input_audio_tokens=5_000, output_audio_tokens=9_000))
    assert cost.input == pytest.approx(1_000 * 10.0 / 1e6) and cost.output == pytest.approx(100 * 20.0 / 1e6)
    # A cached audio read larger than the reads or the audio: held to the smaller.
    held = price.cost(Usage(1_000, 0, cache_read_tokens=100, input_audio_tokens=50, cache_audio_read_tokens=900))
    # 50 cached text at the read rate (= input); 50 cached audio: no cache rate, so no discount — the audio rate
    assert held.input == pytest.approx((900 * 1.0 + 50 * 1.0 + 50 * 10.0) / 1e6)


def test_a_batch_price_keeps_the_audio_rates_scaled() -> None:
    set_price("gemini", "my-audio-model", Price(1.0, 2.0, input_audio=10.0, output_audio=20.0, cache_audio_read=4.0))
    set_batch_factor(0.5)
    batch = price_for("gemini", "my-audio-model", batch=True)
    assert batch is not None
    assert (batch.input_audio, batch.output_audio, batch.cache_audio_read) == (5.0, 10.0, 2.0)


def test_the_table_s_audio_rates_are_read() -> None:
    price = price_for("gemini", "gemini-2.5-flash")
    assert price is not None and price.input_audio is not None and price.input_audio > price.input


# --- the wires read them ---------------------------------------------------------------------------


def test_the_openai_wire_reads_audio_tokens() -> None:
    body = {
        "id": "c", "object": "chat.completion", "model": "gpt-4o-audio-preview",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 120, "completion_tokens": 80,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 90},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 60},
        },
    }
    response = OpenAIWire().decode_response(body, request=None, model="gpt-4o-audio-preview", provider="openai")
    assert response.usage == Usage(120, 80, input_audio_tokens=90, output_audio_tokens=60)


def _gemini_usage() -> dict[str, Any]:
    return {
        "promptTokenCount": 500, "candidatesTokenCount": 40, "cachedContentTokenCount": 100,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 200}, {"modality": "AUDIO", "tokenCount": 300}],
        "cacheTokensDetails": [{"modality": "AUDIO", "tokenCount": 80}, {"modality": "TEXT", "tokenCount": 20}],
        "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 40}],
    }


GEMINI_USAGE = Usage(500, 40, cache_read_tokens=100, input_audio_tokens=300, cache_audio_read_tokens=80)


def test_the_gemini_wire_reads_the_audio_entries_of_its_modality_details() -> None:
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
            "usageMetadata": _gemini_usage()}
    response = GeminiWire().decode_response(body, request=None, model="gemini-2.5-flash", provider="gemini")
    assert response.usage == GEMINI_USAGE
    # Junk in the breakdown counts nothing; the text counts stay.
    junk = dict(_gemini_usage(), promptTokensDetails=[{"modality": "AUDIO", "tokenCount": "many"}, "x", None,
                                                      {"modality": "AUDIO", "tokenCount": True},
                                                      {"modality": "AUDIO", "tokenCount": -3}])
    body["usageMetadata"] = junk
    got = GeminiWire().decode_response(body, request=None, model="gemini-2.5-flash", provider="gemini").usage
    assert got.input_audio_tokens == 0 and got.input_tokens == 500


async def test_a_gemini_stream_reads_the_last_report_of_the_audio_tokens() -> None:
    first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "H"}]}}],
             "usageMetadata": {"promptTokenCount": 500,
                               "promptTokensDetails": [{"modality": "AUDIO", "tokenCount": 1}]}}
    last = {"candidates": [{"content": {"role": "model", "parts": [{"text": "i"}]}, "finishReason": "STOP"}],
            "usageMetadata": _gemini_usage()}
    body = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in (first, last)).encode()
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    )
    async with httpx.AsyncClient(transport=transport) as client:
        provider = GeminiProvider("gemini-2.5-flash", api_key="AIzaUnitTestGeminiKey000000000000000000",
                                  http_client=client)
        async with provider.stream(LLMRequest([Message.user("q")])) as stream:
            events = [e async for e in stream]
    assert isinstance(events[-1], StreamEnd) and events[-1].response.usage == GEMINI_USAGE


# --- what stores them keeps them -------------------------------------------------------------------


def test_stores_and_event_logs_keep_the_audio_counts(tmp_path: Any) -> None:
    usage = Usage(**AUDIO)
    assert usage_from_json(json.loads(json.dumps(usage_to_json(usage)))) == usage
    response = LLMResponse("hi", usage=usage, provider="openai", model="gpt-realtime")
    assert response_from_json(json.loads(json.dumps(response_to_json(response)))).usage == usage
    # A record an older version wrote (no audio keys) still loads, with none.
    assert usage_from_json({"input_tokens": 3, "output_tokens": 4}) == Usage(3, 4)


async def test_a_run_is_charged_its_audio_tokens_and_its_cost_limit_sees_them(tmp_path: Any) -> None:
    from agentactors import JsonlRecorder

    usage = Usage(1_000_000, 0, input_audio_tokens=1_000_000)
    reply = LLMResponse("heard you", usage=usage, provider="gemini", model="gemini-2.5-flash")
    price = price_for("gemini", "gemini-2.5-flash")
    assert price is not None and price.input_audio is not None
    path = tmp_path / "events.jsonl"
    with JsonlRecorder(path) as jsonl:
        result = await Agent(ScriptedProvider([reply]), recorders=[InMemoryRecorder(), jsonl]).run("hi")
    assert result.cost is not None and result.cost.total == pytest.approx(price.input_audio)
    logged = [e for e in read_jsonl(path) if e.type == "llm.response"]
    assert logged[0].data["usage"]["input_audio_tokens"] == 1_000_000  # the log says what was charged
    # A limit between the text price and the audio price: the audio call passes it.
    limit = (price.input + price.input_audio) / 2
    capped = await Agent(ScriptedProvider([reply, "more"])).run("hi", cost_limit=limit)
    assert isinstance(capped.error, CostLimitExceeded)
