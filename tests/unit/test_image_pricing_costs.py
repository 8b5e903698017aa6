"""Image tokens are read from the Gemini (and Vertex) wire and priced at their own rates, as the vendors bill them.

Before, a usage had no image counts and every image token was priced as text: a ``gemini-2.5-flash-image`` call
that drew one 1024x1024 picture (1,290 output tokens) reported $0.003 of the $0.039 it cost, a
``gemini-3-pro-image-preview`` one a tenth — and a run's ``cost_limit`` let it spend that much more.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentactors import Agent, CostLimitExceeded, LLMResponse, ScriptedProvider, Usage
from agentactors.messages import LLMRequest, Message, StreamEnd
from agentactors.pricing import Price, clear_prices, cost_of, price_for, response_cost, set_batch_factor, set_price
from agentactors.providers.gemini.provider import GeminiProvider, GeminiWire

genai_prices = pytest.importorskip("genai_prices")  # the [prices] extra
pytestmark = pytest.mark.anyio  # (the async tests, on asyncio and trio)


@pytest.fixture(autouse=True)
def _no_prices_set() -> Iterator[None]:
    clear_prices()
    yield
    clear_prices()
    set_batch_factor(0.5)


# --- the costs agree with the table's own calculator ------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "vendor", "model", "counts"),
    [
        # one 1024x1024 picture (1,290 tokens) and some text
        ("gemini", "google", "gemini-2.5-flash-image", {"input_tokens": 1_000, "output_tokens": 1_490,
                                                        "output_image_tokens": 1_290}),
        # a 4K picture, thinking, an image in the prompt (no input-image rate: as text)
        ("gemini", "google", "gemini-3-pro-image-preview", {"input_tokens": 2_000, "input_image_tokens": 560,
                                                            "output_tokens": 2_600, "output_image_tokens": 2_000}),
        ("vertex", "google", "gemini-3.1-flash-image-preview", {"input_tokens": 800, "output_tokens": 1_400,
                                                                "output_image_tokens": 1_120}),
        # images and audio in one prompt, at their own rates
        ("gemini", "google", "gemini-live-2.5-flash", {"input_tokens": 10_000, "input_audio_tokens": 3_000,
                                                       "input_image_tokens": 2_000, "output_tokens": 1_000,
                                                       "output_audio_tokens": 600}),
        # ... cached images too, at the cached-image rate
        ("openai", "openai", "gpt-realtime", {"input_tokens": 10_000, "cache_read_tokens": 4_000,
                                              "input_audio_tokens": 3_000, "cache_audio_read_tokens": 1_000,
                                              "input_image_tokens": 2_000, "cache_image_read_tokens": 1_000,
                                              "output_tokens": 2_000, "output_audio_tokens": 1_000}),
    ],
)
def test_image_costs_agree_with_the_table(provider: str, vendor: str, model: str, counts: dict[str, int]) -> None:
    expected = genai_prices.calc_price(genai_prices.Usage(**counts), model, provider_id=vendor)
    cost = cost_of(provider, model, Usage(**counts))
    assert cost is not None
    assert (cost.input, cost.output) == pytest.approx((float(expected.input_price), float(expected.output_price)))
    # ... and it is more than the same tokens priced as text (what was reported before).
    text = cost_of(provider, model, Usage(counts["input_tokens"], counts["output_tokens"],
                                          counts.get("cache_read_tokens", 0)))
    assert text is not None and cost.total > text.total


@pytest.mark.parametrize("model", ["gemini-live-2.5-flash", "gemini-3.1-flash-live-preview"])
def test_cached_media_of_a_model_without_a_cache_rate_cost_what_fresh_media_cost(model: str) -> None:
    # No cache discount at all: a cached audio or image token is still an audio or image token (the table prices it
    # so); it was priced as a cached *text* token — at the text rate, a fraction of the audio rate.
    counts = {"input_tokens": 10_000, "cache_read_tokens": 3_000, "input_audio_tokens": 3_000,
              "cache_audio_read_tokens": 1_000, "input_image_tokens": 2_000, "cache_image_read_tokens": 1_500,
              "output_tokens": 100}
    expected = genai_prices.calc_price(genai_prices.Usage(**counts), model, provider_id="google")
    cost = cost_of("gemini", model, Usage(**counts))
    assert cost is not None and cost.input == pytest.approx(float(expected.input_price))


def test_a_price_s_image_rates_apply_to_the_image_parts_only() -> None:
    price = Price(1.0, 2.0, cache_read=0.5, reasoning=3.0, input_image=10.0, cache_image_read=4.0, output_image=20.0)
    usage = Usage(1_000_000, 1_000_000, cache_read_tokens=300_000, reasoning_tokens=100_000,
                  input_image_tokens=400_000, cache_image_read_tokens=100_000, output_image_tokens=500_000)
    cost = price.cost(usage)
    # fresh: 700k of which 300k image; cached: 300k of which 100k image
    assert cost.input == pytest.approx(0.4 * 1.0 + 0.3 * 10.0 + 0.2 * 0.5 + 0.1 * 4.0)
    # output: 100k reasoning, 500k image, 400k text
    assert cost.output == pytest.approx(0.1 * 3.0 + 0.5 * 20.0 + 0.4 * 2.0)
    assert cost.total == pytest.approx(cost.input + cost.output)


def test_without_image_rates_images_cost_what_the_tokens_they_are_part_of_cost() -> None:
    price = Price(1.0, 2.0, cache_read=0.5)
    plain = Usage(1_000, 500, cache_read_tokens=200)
    images = Usage(1_000, 500, cache_read_tokens=200, input_image_tokens=600, cache_image_read_tokens=100,
                   output_image_tokens=300)
    assert price.cost(images) == price.cost(plain)


def test_audio_and_image_parts_together_are_held_to_what_they_are_parts_of() -> None:
    price = Price(1.0, 2.0, input_audio=10.0, output_audio=20.0, input_image=100.0, output_image=200.0)
    # More media than tokens: every token is priced once, audio first, images in what is left.
    cost = price.cost(Usage(1_000, 100, input_audio_tokens=600, input_image_tokens=5_000,
                            output_audio_tokens=30, output_image_tokens=9_000))
    assert cost.input == pytest.approx((600 * 10.0 + 400 * 100.0) / 1e6)
    assert cost.output == pytest.approx((30 * 20.0 + 70 * 200.0) / 1e6)
    # A cached image read larger than the reads or the images: held to the smaller.
    held = Price(1.0, 2.0, cache_read=0.5, cache_image_read=4.0).cost(
        Usage(1_000, 0, cache_read_tokens=100, input_image_tokens=50, cache_image_read_tokens=900))
    assert held.input == pytest.approx((900 * 1.0 + 50 * 4.0 + 50 * 0.5) / 1e6)


def test_a_batch_price_keeps_the_image_rates_scaled() -> None:
    set_price("gemini", "my-image-model", Price(1.0, 2.0, input_image=10.0, cache_image_read=4.0, output_image=20.0))
    set_batch_factor(0.5)
    batch = price_for("gemini", "my-image-model", batch=True)
    assert batch is not None
    assert (batch.input_image, batch.cache_image_read, batch.output_image) == (5.0, 2.0, 10.0)


def test_the_table_s_image_rates_are_read() -> None:
    price = price_for("gemini", "gemini-2.5-flash-image")
    assert price is not None and price.output_image == 30.0 and price.input_image is None
    realtime = price_for("openai", "gpt-realtime")
    assert realtime is not None and (realtime.input_image, realtime.cache_image_read) == (5.0, 0.5)
    # the table's batch price of an image model keeps its image rate (halved)
    batch = price_for("gemini", "gemini-3.1-flash-image-preview", batch=True)
    assert batch is not None and batch.output_image == 30.0


def test_a_usage_s_image_counts_are_counts_and_add_up() -> None:
    usage = Usage(10, 5, input_image_tokens=4, cache_image_read_tokens=2, output_image_tokens=3)
    assert usage + usage == Usage(20, 10, input_image_tokens=8, cache_image_read_tokens=4, output_image_tokens=6)
    # what is not a count is 0, as for every count; they are keyword-only
    odd = Usage(1, 1, input_image_tokens=None, cache_image_read_tokens=float("nan"),  # type: ignore[arg-type]
                output_image_tokens=12.0)  # type: ignore[arg-type]
    assert (odd.input_image_tokens, odd.cache_image_read_tokens, odd.output_image_tokens) == (0, 0, 12)
    with pytest.raises(TypeError):
        Usage(1, 2, 3, 4, 5, 6, 7)  # type: ignore[call-arg]


# --- the Gemini and Vertex wires read them --------------------------------------------------------


def _usage_metadata() -> dict[str, Any]:
    return {
        "promptTokenCount": 1_900, "candidatesTokenCount": 1_330, "thoughtsTokenCount": 200,
        "cachedContentTokenCount": 600, "toolUsePromptTokenCount": 100,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 300}, {"modality": "IMAGE", "tokenCount": 1_032},
                                {"modality": "DOCUMENT", "tokenCount": 258}, {"modality": "AUDIO", "tokenCount": 310}],
        "toolUsePromptTokensDetails": [{"modality": "IMAGE", "tokenCount": 60}, {"modality": "TEXT", "tokenCount": 40}],
        "cacheTokensDetails": [{"modality": "IMAGE", "tokenCount": 516}, {"modality": "TEXT", "tokenCount": 84}],
        "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 40}, {"modality": "IMAGE", "tokenCount": 1_290}],
    }


# Documents are billed as images (a PDF page is an image to Gemini): the table's own reading counts them so.
EXPECTED = Usage(2_000, 1_530, cache_read_tokens=600, reasoning_tokens=200, input_audio_tokens=310,
                 input_image_tokens=1_032 + 258 + 60, cache_image_read_tokens=516, output_image_tokens=1_290)


def _body(usage: dict[str, Any]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": "here it is"}]}, "finishReason": "STOP"}],
            "usageMetadata": usage, "modelVersion": "gemini-2.5-flash-image"}


def test_the_gemini_wire_reads_the_image_entries_of_its_modality_details() -> None:
    response = GeminiWire().decode_response(_body(_usage_metadata()), request=None, model="gemini-2.5-flash-image",
                                            provider="gemini")
    assert response.usage == EXPECTED
    # Junk in the breakdown counts nothing; the other counts stay.
    junk = dict(_usage_metadata(), candidatesTokensDetails=[{"modality": "IMAGE", "tokenCount": "many"}, "x", None,
                                                             {"modality": "IMAGE", "tokenCount": True},
                                                             {"modality": "IMAGE", "tokenCount": -3}, 7,
                                                             {"modality": ["IMAGE"], "tokenCount": 5},
                                                             {"modality": {"IMAGE": 1}, "tokenCount": 5}])
    got = GeminiWire().decode_response(_body(junk), request=None, model="gemini-2.5-flash-image",
                                       provider="gemini").usage
    assert got.output_image_tokens == 0 and got.output_tokens == 1_530 and got.input_image_tokens == 1_350
    # A count under a name of no field of the wire is no image count (the decoder's own bookkeeping is not the wire's).
    odd = dict(_usage_metadata(), candidatesTokensDetails=None, **{"candidatesTokensDetails/IMAGE": 999})
    got = GeminiWire().decode_response(_body(odd), request=None, model="gemini-2.5-flash-image",
                                       provider="gemini").usage
    assert got.output_image_tokens == 0


def test_the_chat_completions_wire_reads_its_image_token_details() -> None:
    """Chat Completions reports a prompt's image tokens (``prompt_tokens_details.image_tokens``), and a compatible
    server an image model's drawn ones (``completion_tokens_details.image_tokens``, as a gateway does): each priced
    at its own rate, not as text."""
    from agentactors.providers.openai.decode import parse_usage

    usage = parse_usage({
        "prompt_tokens": 1_300, "completion_tokens": 1_400,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0, "image_tokens": 1_032},
        "completion_tokens_details": {"reasoning_tokens": 0, "image_tokens": 1_290},
    })
    assert usage == Usage(1_300, 1_400, input_image_tokens=1_032, output_image_tokens=1_290)
    junk = parse_usage({"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": {"image_tokens": "x"},
                        "completion_tokens_details": {"image_tokens": -4}})
    assert junk == Usage(10, 5)  # a count that is not one counts nothing


@pytest.mark.parametrize("model", ["gemini-2.5-flash-image", "gemini-live-2.5-flash", "gemini-3-pro-image-preview"])
def test_a_gemini_answer_costs_what_the_table_reads_from_the_same_body(model: str) -> None:
    # The table reads Gemini's usageMetadata itself (genai-prices' extractor): the decoder and the price agree with it.
    body = dict(_body(_usage_metadata()), modelVersion=model)  # (the answer is priced by the model that answered)
    extracted = genai_prices.extract_usage(body, provider_id="google")
    expected = genai_prices.calc_price(extracted.usage, model, provider_id="google")
    response = GeminiWire().decode_response(body, request=None, model=model, provider="gemini")
    cost = response_cost(response)
    assert cost is not None
    assert (cost.input, cost.output) == pytest.approx((float(expected.input_price), float(expected.output_price)))


async def test_a_vertex_stream_reads_the_last_report_of_the_image_tokens() -> None:
    first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "H"}]}}],
             "usageMetadata": {"promptTokenCount": 1_900,
                               "candidatesTokensDetails": [{"modality": "IMAGE", "tokenCount": 1}]}}
    last = _body(_usage_metadata())
    chunks = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in (first, last)).encode()
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=chunks)
    )
    async with httpx.AsyncClient(transport=transport) as client:
        provider = GeminiProvider.vertex("gemini-2.5-flash-image", project="p", location="us-central1",
                                         token_provider=lambda: "unit-test-token", http_client=client)
        async with provider.stream(LLMRequest([Message.user("draw a cat")])) as stream:
            events = [e async for e in stream]
    end = events[-1]
    assert isinstance(end, StreamEnd) and end.response.usage == EXPECTED
    cost = response_cost(end.response)
    price = price_for("vertex", "gemini-2.5-flash-image")
    assert cost is not None and price is not None and price.output_image is not None
    assert cost.output == pytest.approx((1_290 * price.output_image + 240 * price.output) / 1e6)


async def test_a_run_is_charged_its_image_tokens_and_its_cost_limit_sees_them() -> None:
    usage = Usage(1_000, 1_000_000, output_image_tokens=1_000_000)
    reply = LLMResponse("drawn", usage=usage, provider="gemini", model="gemini-2.5-flash-image")
    price = price_for("gemini", "gemini-2.5-flash-image")
    assert price is not None and price.output_image is not None
    result = await Agent(ScriptedProvider([reply])).run("draw")
    assert result.cost is not None and result.cost.output == pytest.approx(price.output_image)
    # A limit between the text price and the image price: the image call passes it.
    limit = (price.output + price.output_image) / 2
    capped = await Agent(ScriptedProvider([reply, "more"])).run("draw", cost_limit=limit)
    assert isinstance(capped.error, CostLimitExceeded)
