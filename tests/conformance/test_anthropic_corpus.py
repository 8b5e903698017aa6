"""Every ``anthropic__*`` corpus file through the Anthropic codec and provider.

For each recorded interaction:

* the conversation is rebuilt BY HAND as an ``LLMRequest`` (long literal strings are read from
  the recording; structure, tools, choices and options are written out here), sent through
  ``AnthropicProvider`` to an ``httpx.MockTransport`` that answers with the recorded response,
  and the body the provider sent must equal the recorded body as a JSON value;
* follow-up turns are built from the DECODED previous response (``response.to_message()``), so
  thinking signatures and tool-use ids are proven to replay verbatim;
* the decoded response, stream events or typed error is checked field by field.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from agentactors.errors import ErrorKind, ProviderError, UnsupportedSettingError
from agentactors.messages import (
    LLMRequest,
    LLMResponse,
    Message,
    ReasoningDelta,
    StopReason,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolChoice,
    ToolSpec,
    Usage,
)
from agentactors.providers.anthropic.provider import AnthropicProvider, AnthropicWire
from agentactors.providers.http.provider import iter_sse
from tests.support.corpus import decode_sse, load, replay_transport
from tests.support.corpus import outcome as provider_outcome

pytestmark = pytest.mark.anyio

KEY = "sk-ant-conformance-canary-0123456789"

Corpus = Callable[[str], dict[str, Any]]
Builder = Callable[[Corpus], LLMRequest]
Checker = Callable[[Corpus, Any], None]


# --- tools as the recorded requests declare them ------------------------------------------------

CITY = {"properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"}
STRICT_CITY = {**CITY, "additionalProperties": False}
WEATHER_STRICT = ToolSpec("get_weather", "Get the current weather for a city.", STRICT_CITY)
WEATHER = ToolSpec("get_weather", "Get weather for a city", CITY)
TIME = ToolSpec(
    "get_time",
    "Get time in a timezone",
    {"properties": {"timezone": {"type": "string"}}, "required": ["timezone"], "type": "object"},
)
ENTITY = ToolSpec(
    "retrieve_entity_info",
    "Get the knowledge about the given entity.",
    {
        "additionalProperties": False,
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "type": "object",
    },
)
COUNTRY = ToolSpec("get_user_country", "", {"additionalProperties": False, "properties": {}, "type": "object"})


def _currency_tool(name: str, description: str, props: list[str]) -> ToolSpec:
    return ToolSpec(
        name,
        description,
        {
            "additionalProperties": False,
            "properties": {p: {"type": "string"} for p in props},
            "required": props,
            "type": "object",
        },
    )


EXCHANGE = _currency_tool(
    "get_exchange_rate", "Look up the current exchange rate between two currencies.", ["from_currency", "to_currency"]
)
STOCK = _currency_tool("stock_lookup", "Look up stock price by ticker symbol.", ["symbol"])


def thinking(budget: int) -> dict[str, Any]:
    return {"anthropic": {"thinking": {"budget_tokens": budget, "type": "enabled"}}}


# --- recorded strings, read by path from the recording ------------------------------------------


def body(data: dict[str, Any]) -> dict[str, Any]:
    return data["request"]["body"]  # type: ignore[no-any-return]


def text_of(data: dict[str, Any], message: int, block: int = 0) -> str:
    return body(data)["messages"][message]["content"][block]["text"]  # type: ignore[no-any-return]


def response_of(corpus: Corpus, name: str) -> LLMResponse:
    """The decoded response of another corpus file (the previous turn of a follow-up)."""
    data = corpus(name)
    return AnthropicWire().decode_response(
        data["response"]["json"], request=None, model=body(data)["model"], provider="anthropic"
    )


# --- request builders ---------------------------------------------------------------------------


def _user_only(model: str, text: str, **kw: Any) -> LLMRequest:
    return LLMRequest([Message.user(text)], model=model, **kw)


def build_error_400(c: Corpus) -> LLMRequest:
    return _user_only(
        "claude-opus-4-6",
        "What is 2+2?",
        max_tokens=4096,
        vendor_options={"anthropic": {"output_config": {"effort": "xhigh"}}},
    )


def build_error_404(c: Corpus) -> LLMRequest:
    return _user_only("claude-sonet-4-5", "hello")  # max_tokens: the codec's default, 4096


def _family(c: Corpus) -> list[Message]:
    data = c("anthropic__multiple_tool_use__1.json")
    return [Message.system(body(data)["system"]), Message.user(text_of(data, 0))]


def build_multiple_tool_use(c: Corpus) -> LLMRequest:
    return LLMRequest(_family(c), model="claude-haiku-4-5", tools=[ENTITY], max_tokens=4096)


def build_multiple_tool_results(c: Corpus) -> LLMRequest:
    previous = response_of(c, "anthropic__multiple_tool_use__1.json")
    answers = [
        "alice is bob's wife",
        "bob is alice's husband",
        "charlie is alice's son",
        "daisy is bob's daughter and charlie's younger sister",
    ]
    results = [
        Message.tool(call.id, answer, call.name) for call, answer in zip(previous.tool_calls, answers, strict=True)
    ]
    return LLMRequest([*_family(c), previous.to_message(), *results], model="claude-haiku-4-5", tools=[ENTITY])


def build_redacted_thinking(c: Corpus) -> LLMRequest:
    text = text_of(c("anthropic__redacted_thinking__1.json"), 0)
    return _user_only("claude-sonnet-4-5-20250929", text, vendor_options=thinking(1024))


def build_stop_sequence(c: Corpus) -> LLMRequest:
    text = text_of(c("anthropic__stop_sequence__1.json"), 0)
    return _user_only("claude-sonnet-4-5", text, max_tokens=1024, stop="Paris")


def build_stream_text(c: Corpus) -> LLMRequest:
    return _user_only("claude-sonnet-4-5", "What is 1+1? Answer with just the number.", max_tokens=32000)


def build_stream_thinking(c: Corpus) -> LLMRequest:
    return _user_only("claude-sonnet-4-0", "How do I cross the street?", vendor_options=thinking(1024))


def build_stream_tool_search(c: Corpus) -> LLMRequest:
    return _user_only(
        "claude-sonnet-4-6",
        "What is the current USD to EUR exchange rate?",
        tools=[EXCHANGE, STOCK],
        vendor_options={
            "anthropic": {
                "tool_extras": {"get_exchange_rate": {"defer_loading": True}, "stock_lookup": {"defer_loading": True}},
                "extra_tools": [{"name": "tool_search_tool_bm25", "type": "tool_search_tool_bm25_20251119"}],
            }
        },
    )


def build_text_system(c: Corpus) -> LLMRequest:
    return LLMRequest(
        [Message.system("You are a helpful assistant.\n\n"), Message.user("What is the capital of France?")],
        model="claude-3-opus-latest",
    )


def _country_question() -> list[Message]:
    return [Message.user("What is the largest city in the user country?")]


def build_thinking_tool_use(c: Corpus) -> LLMRequest:
    return LLMRequest(_country_question(), model="claude-sonnet-4-0", tools=[COUNTRY], vendor_options=thinking(3000))


def build_thinking_history(c: Corpus) -> LLMRequest:
    previous = response_of(c, "anthropic__thinking_text_tool_use__1.json")
    (call,) = previous.tool_calls
    return LLMRequest(
        [*_country_question(), previous.to_message(), Message.tool(call.id, "Mexico", call.name)],
        model="claude-sonnet-4-0",
        tools=[COUNTRY],
        vendor_options=thinking(3000),
    )


def build_thinking_signature(c: Corpus) -> LLMRequest:
    return _user_only("claude-sonnet-4-5", "How do I cross the street?", vendor_options=thinking(1024))


WEATHER_Q = "What's the weather in Paris?"


def build_choice_any(c: Corpus) -> LLMRequest:
    return _user_only("claude-sonnet-4-5", WEATHER_Q, tools=[WEATHER], tool_choice=ToolChoice.required())


def build_choice_auto(c: Corpus) -> LLMRequest:
    return _user_only("claude-sonnet-4-5", WEATHER_Q, tools=[WEATHER_STRICT])


def build_choice_none(c: Corpus) -> LLMRequest:
    return _user_only("claude-sonnet-4-5", "Say hello", tools=[WEATHER_STRICT], tool_choice=ToolChoice.none())


def build_choice_tool(c: Corpus) -> LLMRequest:
    return _user_only("claude-sonnet-4-5", WEATHER_Q, tools=[WEATHER, TIME], tool_choice=ToolChoice.tool("get_weather"))


def build_tool_result_followup(c: Corpus) -> LLMRequest:
    previous = response_of(c, "anthropic__tool_choice_auto_tool_use__1.json")
    (call,) = previous.tool_calls
    return LLMRequest(
        [Message.user(WEATHER_Q), previous.to_message(), Message.tool(call.id, "Sunny, 22C in Paris", call.name)],
        model="claude-sonnet-4-5",
        tools=[WEATHER_STRICT],
    )


def build_cache(c: Corpus) -> LLMRequest:
    data = c("anthropic__usage_cache_read_and_creation__1.json")
    return LLMRequest(
        [
            Message.system("You are a helpful assistant."),
            Message.user(text_of(data, 0)),
            Message.assistant(text_of(data, 1)),
            Message.user("Can you summarize that in one sentence?"),
        ],
        model="claude-sonnet-4-5",
        vendor_options={"anthropic": {"cache_control": {"ttl": "5m", "type": "ephemeral"}}},
    )


# --- response checks ----------------------------------------------------------------------------


def usage(inp: int, out: int, read: int = 0, write: int = 0) -> Usage:
    return Usage(input_tokens=inp, output_tokens=out, cache_read_tokens=read, cache_write_tokens=write)


def check_error_400(c: Corpus, err: Any) -> None:
    """The vendor's 400 for an effort the model does not take: refused before sending now, as the vendor refused it.

    An effort given as a vendor option is judged as the ``reasoning_effort`` setting is (docs/settings.md): the
    request is never sent, and the refusal names the levels the vendor's answer names.  The recorded 400 itself is
    still classified as the vendor meant it (:func:`test_the_recorded_400_is_classified_as_the_vendor_said`).
    """
    assert isinstance(err, UnsupportedSettingError), repr(err)
    assert err.provider == "anthropic" and err.model == "claude-opus-4-6" and not err.retryable
    said = c("anthropic__error_400_invalid_request__1.json")["response"]["json"]["error"]["message"]
    levels = said.split("Supported levels: ", 1)[1].rstrip(".").split(", ")  # high, low, max, medium
    assert "'xhigh'" in str(err) and all(level in str(err) for level in levels), (str(err), levels)


#: Interactions our checks now refuse before sending, as the vendor refused them: nothing goes out.
REFUSED_BEFORE_SENDING = frozenset({"anthropic__error_400_invalid_request__1.json"})


def test_the_recorded_400_is_classified_as_the_vendor_said(corpus: Corpus) -> None:
    data = corpus("anthropic__error_400_invalid_request__1.json")
    response = data["response"]
    err = AnthropicWire().classify_error(
        response["status"], response["headers"], json.dumps(response["json"]).encode(),
        provider="anthropic", model="claude-opus-4-6",
    )
    assert (err.kind, err.status, err.retryable) == (ErrorKind.request, 400, False)
    assert err.request_id == "req_011Ca7jT9AHpgXgdv8igm4z9"
    assert "effort level 'xhigh'" in err.message
    assert err.provider == "anthropic" and err.model == "claude-opus-4-6"


def check_error_404(c: Corpus, err: Any) -> None:
    assert isinstance(err, ProviderError)
    assert (err.kind, err.status, err.retryable) == (ErrorKind.account, 404, False)
    assert err.request_id == "req_011CdufXo8Y2LVfY2veyuQWG"
    assert err.message == "model: claude-sonet-4-5"


def check_multiple_tool_use(c: Corpus, r: LLMResponse) -> None:
    assert r.content.startswith("I'll help you find out who is the youngest")
    assert r.tool_calls == (
        ToolCall("toolu_0167cfEnoQaPviGdVXA95zcu", "retrieve_entity_info", {"name": "Alice"}),
        ToolCall("toolu_01EEe2V5HD1Ac4rKiUR4HD2T", "retrieve_entity_info", {"name": "Bob"}),
        ToolCall("toolu_01XFyAjstT3966qvRynZyVPo", "retrieve_entity_info", {"name": "Charlie"}),
        ToolCall("toolu_013mnQZbgtK2oe3Mo3XKJsx3", "retrieve_entity_info", {"name": "Daisy"}),
    )
    assert all(call.raw_arguments is None and call.arguments_error is None for call in r.tool_calls)
    assert (r.stop_reason, r.raw_stop_reason) == (StopReason.tool_use, "tool_use")
    assert r.usage == usage(423, 202)
    assert (r.model, r.response_id, r.provider_data) == (
        "claude-haiku-4-5-20251001",
        "msg_011S3wxtqL5CVescWqS3zeg2",
        None,
    )


def check_multiple_tool_results(c: Corpus, r: LLMResponse) -> None:
    assert r.content.startswith("Based on the retrieved information")
    assert r.content.endswith("the youngest among the four family members.")
    assert (r.tool_calls, r.stop_reason, r.usage) == ((), StopReason.end_turn, usage(771, 77))


def asked(c: Corpus, case: str) -> str:
    """The model a recorded request was sent to: what the decoder stamps beside the blocks it keeps for replay."""
    return str(c(f"anthropic__{case}__1.json")["request"]["body"]["model"])


def check_redacted_thinking(c: Corpus, r: LLMResponse) -> None:
    recorded = c("anthropic__redacted_thinking__1.json")["response"]["json"]["content"]
    assert recorded[0]["type"] == "redacted_thinking"
    assert r.provider_data == {"anthropic": {"blocks": [recorded[0]], "model": asked(c, "redacted_thinking")}}
    assert r.reasoning == ""  # redacted: nothing readable
    assert r.content.startswith("I notice that your message appears to contain a command")
    assert (r.stop_reason, r.usage) == (StopReason.end_turn, usage(92, 196))


def check_stop_sequence(c: Corpus, r: LLMResponse) -> None:
    assert r.content == "The beautiful city of "
    assert (r.stop_reason, r.raw_stop_reason) == (StopReason.stop_sequence, "stop_sequence")
    assert r.provider_data == {"anthropic": {"stop_sequence": "Paris"}}
    assert r.usage == usage(32, 5)


def check_stream_text(c: Corpus, events: list[StreamEvent]) -> None:
    *deltas, end = events
    assert deltas == [TextDelta("2")]
    assert isinstance(end, StreamEnd)
    r = end.response
    assert (r.content, r.stop_reason, r.usage) == ("2", StopReason.end_turn, usage(20, 5))
    assert (r.model, r.response_id, r.provider) == (
        "claude-sonnet-4-5-20250929",
        "msg_018E1hg8GoVTGEKQY3ovMcSJ",
        "anthropic",
    )


THOUGHT = (
    "This is a straightforward question about pedestrian safety. I should provide clear, helpful advice "
    "about how to safely cross a street. This is basic safety information that could help prevent accidents."
)


def check_stream_thinking(c: Corpus, events: list[StreamEvent]) -> None:
    reasoning = [e for e in events if isinstance(e, ReasoningDelta)]
    text = [e for e in events if isinstance(e, TextDelta)]
    # All reasoning is delivered before any answer text, and none of it leaks into the text.
    assert events.index(reasoning[-1]) < events.index(text[0])
    assert "".join(e.text for e in reasoning) == THOUGHT
    end = events[-1]
    assert isinstance(end, StreamEnd)
    r = end.response
    assert r.reasoning == THOUGHT
    assert r.content == "".join(e.text for e in text)
    assert r.content.startswith("Here are the basic steps for safely crossing the street:\n\n**At intersections")
    assert r.content.endswith("Always prioritize safety over speed when crossing streets.")
    (block,) = r.provider_data["anthropic"]["blocks"]  # type: ignore[index]
    assert block["type"] == "thinking" and block["thinking"] == THOUGHT
    assert block["signature"].startswith("EvMCCkYICxgCKkCHP2cSuEdcJK/0rFwq")
    assert block["signature"].endswith("7wwzDvP/UhjfQYAQ==")
    assert (r.stop_reason, r.usage) == (StopReason.end_turn, usage(43, 282))


def check_stream_tool_search(c: Corpus, events: list[StreamEvent]) -> None:
    calls = [e for e in events if isinstance(e, ToolCallStart | ToolCallDelta | ToolCallEnd)]
    assert calls[0] == ToolCallStart(0, "toolu_01EFn5wTNBYA8Reni8rbmnHT", "get_exchange_rate")
    fragments = [e.arguments_fragment for e in calls if isinstance(e, ToolCallDelta)]
    assert "" not in fragments  # the empty first fragment is not announced
    assert "".join(fragments) == '{"from_currency": "USD", "to_currency": "EUR"}'
    expected = ToolCall(
        "toolu_01EFn5wTNBYA8Reni8rbmnHT", "get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"}
    )
    assert calls[-1] == ToolCallEnd(0, expected)
    end = events[-1]
    assert isinstance(end, StreamEnd)
    r = end.response
    assert r.tool_calls == (expected,)
    assert r.content == (
        "Let me search for a tool that can provide current exchange rate information."
        "I found the right tool! Let me fetch the current USD to EUR exchange rate for you."
    )
    # The server-side tool search is kept for replay, never turned into a call we would execute.
    server_use, server_result = r.provider_data["anthropic"]["blocks"]  # type: ignore[index]
    assert server_use == {
        "type": "server_tool_use",
        "id": "srvtoolu_01S5swZdBmTzLDVzwcT5LbHp",
        "name": "tool_search_tool_bm25",
        "input": {"query": "USD EUR exchange rate currency conversion"},
    }
    assert server_result["type"] == "tool_search_tool_result"
    assert server_result["tool_use_id"] == "srvtoolu_01S5swZdBmTzLDVzwcT5LbHp"
    # message_delta's cumulative usage (which includes the server tool round) is final.
    assert (r.stop_reason, r.usage) == (StopReason.tool_use, usage(1591, 175))


def check_text_system(c: Corpus, r: LLMResponse) -> None:
    assert r == LLMResponse(
        content="The capital of France is Paris.",
        stop_reason=StopReason.end_turn,
        usage=usage(20, 10),
        model="claude-3-opus-20240229",
        provider="anthropic",
        raw_stop_reason="end_turn",
        response_id="msg_01Fg1JVgvCYUHWsxrj9GkpEv",
    )


def _recorded_thinking_block(c: Corpus) -> dict[str, Any]:
    block = c("anthropic__thinking_text_tool_use__1.json")["response"]["json"]["content"][0]
    assert block["type"] == "thinking"
    return block  # type: ignore[no-any-return]


def check_thinking_tool_use(c: Corpus, r: LLMResponse) -> None:
    block = _recorded_thinking_block(c)
    assert r.provider_data == {"anthropic": {"blocks": [block], "model": asked(c, "thinking_text_tool_use")}}
    assert r.reasoning == block["thinking"] and r.reasoning.startswith("The user is asking about the largest city")
    assert (
        r.content
        == "I'll help you find the largest city in your country. First, let me determine which country you're from."
    )
    assert r.tool_calls == (ToolCall("toolu_01YGzqpRE16Vricda3Aqcejo", "get_user_country", {}),)
    assert (r.stop_reason, r.usage) == (StopReason.tool_use, usage(398, 155))


def check_thinking_history(c: Corpus, r: LLMResponse) -> None:
    assert r.content.startswith("Based on the information that you're from Mexico, the largest city")
    assert (r.stop_reason, r.usage, r.provider_data) == (StopReason.end_turn, usage(566, 126), None)


def check_thinking_signature(c: Corpus, r: LLMResponse) -> None:
    block = c("anthropic__thinking_signature__1.json")["response"]["json"]["content"][0]
    assert r.provider_data == {"anthropic": {"blocks": [block], "model": asked(c, "thinking_signature")}}
    assert block["signature"].startswith("Eq8CCkYICxgCKkDdadQOXMzNBq")
    assert r.reasoning == (
        "This is a straightforward question about pedestrian safety. "
        "I should provide clear, practical advice about crossing the street safely."
    )
    assert r.content.startswith("Here's how to cross the street safely:\n\n## Basic Steps")
    assert (r.stop_reason, r.usage) == (StopReason.end_turn, usage(43, 321))


def _weather_call(call_id: str) -> Checker:
    def check(c: Corpus, r: LLMResponse) -> None:
        assert r.content == ""
        assert r.tool_calls == (ToolCall(call_id, "get_weather", {"city": "Paris"}),)
        assert r.stop_reason == StopReason.tool_use

    return check


def check_choice_none(c: Corpus, r: LLMResponse) -> None:
    assert r.content == "Hello! 👋 How can I help you today?"
    assert (r.tool_calls, r.stop_reason, r.usage) == ((), StopReason.end_turn, usage(567, 16))


def check_tool_result_followup(c: Corpus, r: LLMResponse) -> None:
    assert r.content.startswith("The weather in Paris is currently sunny with a temperature of 22°C")
    assert (r.stop_reason, r.usage) == (StopReason.end_turn, usage(646, 31))


def check_cache(c: Corpus, r: LLMResponse) -> None:
    assert r.content.startswith("Python is a beginner-friendly, versatile programming language")
    assert r.usage == usage(3, 33, read=1111, write=418)


CASES: dict[str, tuple[Builder, Checker]] = {
    "anthropic__error_400_invalid_request__1.json": (build_error_400, check_error_400),
    "anthropic__error_404_not_found__1.json": (build_error_404, check_error_404),
    "anthropic__multiple_tool_results_followup__1.json": (build_multiple_tool_results, check_multiple_tool_results),
    "anthropic__multiple_tool_use__1.json": (build_multiple_tool_use, check_multiple_tool_use),
    "anthropic__redacted_thinking__1.json": (build_redacted_thinking, check_redacted_thinking),
    "anthropic__stop_sequence__1.json": (build_stop_sequence, check_stop_sequence),
    "anthropic__stream_text__1.json": (build_stream_text, check_stream_text),
    "anthropic__stream_thinking_signature_delta__1.json": (build_stream_thinking, check_stream_thinking),
    "anthropic__stream_tool_use_input_json_delta__1.json": (build_stream_tool_search, check_stream_tool_search),
    "anthropic__text_system__1.json": (build_text_system, check_text_system),
    "anthropic__thinking_history_tool_result__1.json": (build_thinking_history, check_thinking_history),
    "anthropic__thinking_signature__1.json": (build_thinking_signature, check_thinking_signature),
    "anthropic__thinking_text_tool_use__1.json": (build_thinking_tool_use, check_thinking_tool_use),
    "anthropic__tool_choice_any__1.json": (build_choice_any, _weather_call("toolu_01Dxp8hdnkA8bsrVJJ8LB9q1")),
    "anthropic__tool_choice_auto_tool_use__1.json": (
        build_choice_auto,
        _weather_call("toolu_01WN4AuToBnJyXNQXwQBBebj"),
    ),
    "anthropic__tool_choice_none__1.json": (build_choice_none, check_choice_none),
    "anthropic__tool_choice_tool__1.json": (build_choice_tool, _weather_call("toolu_01J5u9yypnwo1Sqf4Fx9uMNG")),
    "anthropic__tool_result_followup__1.json": (build_tool_result_followup, check_tool_result_followup),
    "anthropic__usage_cache_read_and_creation__1.json": (build_cache, check_cache),
}

COVERED: frozenset[str] = frozenset(CASES)


@pytest.fixture
def corpus(corpus_dir: Path) -> Corpus:
    return functools.partial(load, corpus_dir)


def test_every_anthropic_corpus_file_is_covered(corpus_dir: Path) -> None:
    on_disk = {p.name for p in corpus_dir.glob("anthropic__*.json")}
    assert on_disk, "no anthropic corpus files found"
    assert on_disk == COVERED, f"uncovered: {sorted(on_disk - COVERED)}; stale: {sorted(COVERED - on_disk)}"


@pytest.mark.parametrize("name", sorted(CASES))
async def test_corpus_interaction(name: str, corpus: Corpus) -> None:
    data = corpus(name)
    build, check = CASES[name]
    request = build(corpus)
    streaming = body(data)["stream"]
    sent: list[httpx.Request] = []
    async with httpx.AsyncClient(transport=replay_transport(data, sent)) as client:
        provider = AnthropicProvider(api_key=KEY, base_url="https://api.anthropic.test", http_client=client)
        events, response, error = await provider_outcome(provider, request, stream=streaming)
    outcome: Any = error if error is not None else events if streaming else response
    assert data["response"]["status"] == 200 or isinstance(outcome, ProviderError), "an error status must raise"

    if name in REFUSED_BEFORE_SENDING:
        assert sent == []
        check(corpus, outcome)
        return
    # The request the provider sent: where, with which headers, and exactly the recorded body.
    (http_request,) = sent
    assert http_request.method == "POST"
    assert str(http_request.url) == "https://api.anthropic.test/v1/messages"
    assert data["request"]["path"].startswith("/v1/messages")
    assert http_request.headers["x-api-key"] == KEY and KEY not in str(http_request.url)
    assert http_request.headers["anthropic-version"] == "2023-06-01"
    assert http_request.headers["content-type"] == "application/json"
    assert json.loads(http_request.content) == body(data)

    check(corpus, outcome)
    if isinstance(outcome, LLMResponse):
        assert outcome.provider == "anthropic"


@pytest.mark.parametrize("name", sorted(n for n in CASES if "stream" in n))
def test_recorded_stream_decodes_alike_through_the_codec(name: str, corpus: Corpus) -> None:
    """The pure decoder, fed the same httpx-sse events, gives the events the provider yielded."""
    data = corpus(name)
    decoder = AnthropicWire().stream_decoder(request=CASES[name][0](corpus), model="m", provider="anthropic")
    events, response = decode_sse(decoder, data["response"]["sse"])
    CASES[name][1](corpus, [*events, StreamEnd(response)])


@pytest.mark.parametrize("name", sorted(n for n in CASES if "stream" in n))
def test_recorded_stream_cut_before_message_stop_is_not_an_answer(name: str, corpus: Corpus) -> None:
    data = corpus(name)
    decoder = AnthropicWire().stream_decoder(request=None, model="m", provider="anthropic")
    pairs = list(iter_sse(data["response"]["sse"]))
    assert pairs[-1][0] == "message_stop"
    for event, payload in pairs[:-1]:
        decoder.feed(event, payload)
    assert not decoder.done
    with pytest.raises(ProviderError, match="malformed vendor response") as info:
        decoder.finish()
    assert info.value.kind is ErrorKind.transient


def test_streamed_thinking_replays_verbatim_on_the_next_turn(corpus: Corpus) -> None:
    """A thinking block rebuilt from thinking_delta + signature_delta is sent back unchanged."""
    data = corpus("anthropic__stream_thinking_signature_delta__1.json")
    # Decoded for the model the follow-up goes to: a signature is replayed to the model that made it only.
    decoder = AnthropicWire().stream_decoder(request=None, model="claude-sonnet-4-0", provider="anthropic")
    for event, payload in iter_sse(data["response"]["sse"]):
        decoder.feed(event, payload)
    response = decoder.finish()
    follow_up = attrs.evolve(
        build_stream_thinking(corpus),
        messages=[*build_stream_thinking(corpus).messages, response.to_message(), Message.user("Thanks!")],
    )
    encoded = AnthropicWire().encode_request(follow_up, "claude-sonnet-4-0", stream=True)
    assistant = encoded["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == response.provider_data["anthropic"]["blocks"][0]  # type: ignore[index]
    assert assistant["content"][0]["signature"].endswith("7wwzDvP/UhjfQYAQ==")
    assert assistant["content"][1] == {"type": "text", "text": response.content}
