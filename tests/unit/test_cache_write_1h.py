"""Anthropic's 1-hour cache writes: counted apart (``Usage.cache_write_1h_tokens``), priced at their own rate.

Anthropic bills a prompt-cache write with the 1-hour TTL at 2x the input rate, one with the 5-minute TTL at 1.25x.
The wire says how many of ``cache_creation_input_tokens`` were which (``usage.cache_creation``:
``ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens``, as the recorded corpus shows; Bedrock Converse
says it in ``usage.cacheDetails``).  Before, every write was priced at the 5-minute rate: the cost read low.
Here: the decoders (bodies and streams), :class:`Usage`'s sum, :class:`Price`, the table's rate, the journal's
and the sessions' codecs (with records an older version wrote), the JSONL event form — and a real run journaled
on SQLite and read back, on both backends.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, LLMResponse, Runtime
from agentactors.events import to_jsonable
from agentactors.journal import SqliteJournal
from agentactors.journal.codec import response_from_event, response_from_json, response_to_json
from agentactors.loop.result import RunResult
from agentactors.messages import StreamEnd, Usage
from agentactors.pricing import Price, clear_prices, cost_of, price_for, set_price
from agentactors.providers.anthropic.provider import AnthropicWire
from agentactors.providers.bedrock import BedrockStreamDecoder, BedrockWire
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions.codec import run_result_from_json, run_result_to_json, usage_from_json, usage_to_json

WIRE = AnthropicWire()
_CORPUS = Path(__file__).resolve().parents[1] / "corpus"

# The shape of the recorded corpus' usage (anthropic__usage_cache_read_and_creation__1.json), with 1-hour writes.
ANTHROPIC_USAGE: dict[str, Any] = {
    "cache_creation": {"ephemeral_1h_input_tokens": 400, "ephemeral_5m_input_tokens": 100},
    "cache_creation_input_tokens": 500,
    "cache_read_input_tokens": 1111,
    "inference_geo": "not_available",
    "input_tokens": 3,
    "output_tokens": 33,
    "service_tier": "standard",
}
WRITTEN = Usage(3, 33, cache_read_tokens=1111, cache_write_tokens=500, cache_write_1h_tokens=400)


# --- Usage -----------------------------------------------------------------------------------------------


def test_usage_holds_the_1h_writes_sums_and_caps_them_and_reads_a_non_count_as_zero() -> None:
    assert Usage().cache_write_1h_tokens == 0
    total = Usage(cache_write_tokens=5, cache_write_1h_tokens=3) + Usage(cache_write_tokens=7, cache_write_1h_tokens=4)
    assert (total.cache_write_tokens, total.cache_write_1h_tokens) == (12, 7)
    top = 2**63 - 1
    capped = Usage(cache_write_tokens=top, cache_write_1h_tokens=top) + Usage(cache_write_1h_tokens=1)
    assert capped.cache_write_1h_tokens == top
    assert Usage(cache_write_1h_tokens=float("nan")).cache_write_1h_tokens == 0  # type: ignore[arg-type]
    assert Usage(cache_write_1h_tokens=12.0).cache_write_1h_tokens == 12  # type: ignore[arg-type]


# --- decoding --------------------------------------------------------------------------------------------


def test_the_recorded_corpus_response_reads_no_1h_writes() -> None:
    case = json.loads((_CORPUS / "anthropic__usage_cache_read_and_creation__1.json").read_text())
    response = WIRE.decode_response(case["response"]["json"], request=None, model="m", provider="anthropic")
    assert response.usage == Usage(3, 33, cache_read_tokens=1111, cache_write_tokens=418, cache_write_1h_tokens=0)


def test_an_anthropic_body_with_1h_writes_counts_them() -> None:
    body = {"type": "message", "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
            "usage": ANTHROPIC_USAGE}
    response = WIRE.decode_response(body, request=None, model="m", provider="anthropic")
    assert response.usage == WRITTEN


def test_a_1h_count_without_a_total_is_kept_inside_the_writes() -> None:
    # A proxy that sends the breakdown but not cache_creation_input_tokens: the writes are at least the 1h ones.
    usage = {"input_tokens": 1, "output_tokens": 1, "cache_creation": {"ephemeral_1h_input_tokens": 9}}
    body = {"type": "message", "content": [], "stop_reason": "end_turn", "usage": usage}
    response = WIRE.decode_response(body, request=None, model="m", provider="anthropic")
    assert (response.usage.cache_write_tokens, response.usage.cache_write_1h_tokens) == (9, 9)


def _stream(start_usage: dict[str, Any], delta_usage: dict[str, Any]) -> LLMResponse:
    decoder = WIRE.stream_decoder(request=None, model="m", provider="anthropic")
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
               "usage": start_usage}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text",
                                                                                                "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta",
                                                                                        "text": "Hi"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": delta_usage}),
        ("message_stop", {"type": "message_stop"}),
    ]
    for name, data in events:
        decoder.feed(name, json.dumps(data))
    end = StreamEnd(decoder.finish())
    return end.response


def test_a_stream_keeps_the_1h_writes_of_message_start_when_message_delta_leaves_them_out() -> None:
    # As recorded (anthropic__stream_text__1.json): message_start carries cache_creation, message_delta does not.
    delta = {"input_tokens": 3, "cache_creation_input_tokens": 500, "cache_read_input_tokens": 1111,
             "output_tokens": 33}
    assert _stream({**ANTHROPIC_USAGE, "output_tokens": 1}, delta).usage == WRITTEN


def test_a_stream_reads_the_1h_writes_from_message_delta_too() -> None:
    start = {"input_tokens": 3, "output_tokens": 1}
    assert _stream(start, ANTHROPIC_USAGE).usage == WRITTEN


def test_bedrock_reads_the_1h_writes_from_cache_details_body_and_stream() -> None:
    usage = {"inputTokens": 3, "outputTokens": 33, "cacheReadInputTokens": 1111, "cacheWriteInputTokens": 500,
             "cacheDetails": [{"ttl": "1h", "inputTokens": 400}, {"ttl": "5m", "inputTokens": 100}]}
    body = {"output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}}, "stopReason": "end_turn",
            "usage": usage}
    assert BedrockWire().decode_response(body, request=None, model="m", provider="bedrock").usage == WRITTEN
    decoder = BedrockStreamDecoder(request=None, model="m", provider="bedrock")
    for event, payload in (("messageStart", {"role": "assistant"}),
                           ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi"}}),
                           ("contentBlockStop", {"contentBlockIndex": 0}),
                           ("messageStop", {"stopReason": "end_turn"}),
                           ("metadata", {"usage": usage})):
        decoder.feed(event, json.dumps(payload))
    assert decoder.finish().usage == WRITTEN


def test_bedrock_without_cache_details_has_no_1h_writes() -> None:
    case = json.loads((_CORPUS / "bedrock__tool_result_followup_cache_write__1.json").read_text())
    usage = BedrockWire().decode_response(case["response"]["json"], request=None, model="m", provider="bedrock").usage
    assert (usage.cache_write_tokens, usage.cache_write_1h_tokens) == (2492, 0)


# --- pricing ---------------------------------------------------------------------------------------------


def test_the_1h_writes_cost_their_own_rate_and_the_rest_the_write_rate() -> None:
    price = Price(3.0, 15.0, cache_read=0.3, cache_write=3.75, cache_write_1h=6.0)
    cost = price.cost(WRITTEN, cached_in_input=False)
    assert cost.input == pytest.approx((3 * 3.0 + 1111 * 0.3 + 100 * 3.75 + 400 * 6.0) / 1e6)
    assert cost.output == pytest.approx(33 * 15.0 / 1e6)


def test_without_a_1h_rate_the_1h_writes_cost_the_write_rate() -> None:
    price = Price(3.0, 15.0, cache_write=3.75)
    assert price.cache_write_1h is None
    assert price.cost(WRITTEN, cached_in_input=False).input == pytest.approx(
        (3 * 3.0 + 1111 * 3.0 + 500 * 3.75) / 1e6)


def test_a_1h_count_above_the_writes_is_priced_as_the_writes_only() -> None:
    # A Usage made by hand (a custom provider) may say more 1h writes than writes: never more than the writes.
    price = Price(1.0, 1.0, cache_write=2.0, cache_write_1h=10.0)
    usage = Usage(0, 0, cache_write_tokens=10, cache_write_1h_tokens=50)
    assert price.cost(usage, cached_in_input=False).input == pytest.approx(10 * 10.0 / 1e6)


def test_the_1h_rate_is_checked_shown_and_kept_by_tiers() -> None:
    with pytest.raises(ValueError, match="cache_write_1h"):
        Price(1.0, 1.0, cache_write_1h=-1.0)
    tier = Price(2.0, 4.0, cache_write_1h=4.0)
    price = Price(1.0, 2.0, cache_write=1.25, cache_write_1h=2.0, tiers=((200_000, tier),))
    assert "cache_write_1h=2.0" in repr(price)
    long_prompt = Usage(200_001, 0, cache_write_tokens=10, cache_write_1h_tokens=10)
    assert price.cost(long_prompt).input == pytest.approx((199_991 * 2.0 + 10 * 4.0) / 1e6)


def test_a_price_set_with_a_1h_rate_prices_a_response() -> None:
    try:
        set_price("anthropic", "my-claude", Price(3.0, 15.0, cache_read=0.3, cache_write=3.75, cache_write_1h=6.0))
        cost = cost_of("anthropic", "my-claude", WRITTEN)
        assert cost is not None
        assert cost.input == pytest.approx((3 * 3.0 + 1111 * 0.3 + 100 * 3.75 + 400 * 6.0) / 1e6)
    finally:
        clear_prices()


def test_the_table_s_1h_rate_is_read() -> None:
    pytest.importorskip("genai_prices")
    price = price_for("anthropic", "claude-sonnet-4-5-20250929")
    assert price is not None and price.cache_write_1h == pytest.approx(2 * price.input)
    assert price.tiers and price.tiers[0][1].cache_write_1h == pytest.approx(2 * price.tiers[0][1].input)
    batch = price_for("anthropic", "claude-sonnet-4-5-20250929", batch=True)
    assert batch is not None and batch.cache_write_1h is not None


# --- what stores and ships a Usage ------------------------------------------------------------------------


def test_the_session_codec_round_trips_the_1h_writes_and_reads_an_older_record() -> None:
    doc = usage_to_json(WRITTEN)
    assert doc["cache_write_1h_tokens"] == 400
    assert usage_from_json(json.loads(json.dumps(doc))) == WRITTEN
    old = {"input_tokens": 3, "output_tokens": 33, "cache_read_tokens": 1111, "cache_write_tokens": 500}
    assert usage_from_json(old) == Usage(3, 33, 1111, 500)
    assert "cache_write_1h_tokens" not in usage_to_json(Usage(1, 2))  # zeros are left out, as before
    result = RunResult[str]("hi", (), usage=WRITTEN)
    assert run_result_from_json(json.loads(json.dumps(run_result_to_json(result)))).usage == WRITTEN


def test_the_journal_codec_round_trips_a_response_s_1h_writes() -> None:
    response = LLMResponse("hi", usage=WRITTEN, model="m", provider="anthropic")
    assert response_from_json(json.loads(json.dumps(response_to_json(response)))).usage == WRITTEN


def test_a_jsonl_event_keeps_the_1h_writes_and_an_older_event_loads() -> None:
    doc = json.loads(json.dumps(to_jsonable(LLMResponse("hi", usage=WRITTEN))))
    assert doc["usage"]["cache_write_1h_tokens"] == 400
    assert response_from_event(doc).usage == WRITTEN
    del doc["usage"]["cache_write_1h_tokens"]  # what an older version recorded
    assert response_from_event(doc).usage == Usage(3, 33, 1111, 500)


@pytest.mark.anyio
async def test_a_journaled_run_keeps_the_1h_writes_and_an_older_row_loads(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with anyio.fail_after(60):
        async with SqliteJournal(path) as journal, Runtime(journal=journal):
            result = await Agent(ScriptedProvider([LLMResponse("hello", usage=WRITTEN)]), name="h").run("hi")
        assert result.usage == WRITTEN
        async with SqliteJournal(path) as journal:
            recorded = await journal.load_run(result.run_id or "")
        assert recorded.steps[0].response.usage == WRITTEN
        with closing(sqlite3.connect(path)) as conn, conn:  # what an older version wrote: no 1h count
            (text,) = conn.execute("SELECT response FROM agentactors_steps").fetchone()
            assert '"cache_write_1h_tokens": 400' in text
            conn.execute("UPDATE agentactors_steps SET response = ?",
                         (text.replace(', "cache_write_1h_tokens": 400', ""),))
        async with SqliteJournal(path) as journal:
            recorded = await journal.load_run(result.run_id or "")
        assert recorded.steps[0].response.usage == Usage(3, 33, 1111, 500)
