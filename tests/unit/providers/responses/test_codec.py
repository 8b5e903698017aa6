"""The Responses codec beyond the corpus: settings and parts per model, replay, stream edge cases, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentactors.errors import (
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    UnsupportedContentError,
    UnsupportedSettingError,
)
from agentactors.messages import (
    LLMRequest,
    Message,
    ReasoningDelta,
    ResponseFormat,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallEnd,
    ToolChoice,
    ToolSpec,
)
from agentactors.parts import Audio, Document, Image, Text
from agentactors.providers.responses import WIRE, ResponsesWire, responses_capabilities

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
TOOL = ToolSpec("get_weather", "Weather for a city.", {"type": "object", "properties": {"city": {"type": "string"}}})


def encode(request: LLMRequest, model: str = "gpt-4o", *, stream: bool = False) -> dict[str, Any]:
    return ResponsesWire().encode_request(request, model, stream=stream)


def test_a_plain_request() -> None:
    body = encode(LLMRequest([Message.system("Be brief."), Message.user("Hi")], max_tokens=50, temperature=0.2))
    assert body == {
        "model": "gpt-4o", "input": [{"role": "user", "content": "Hi"}], "instructions": "Be brief.",
        "stream": False, "store": False, "max_output_tokens": 50, "temperature": 0.2,
    }


def test_tools_choice_and_structured_output() -> None:
    fmt = ResponseFormat("City", {"type": "object", "properties": {"city": {"type": "string"}}})
    body = encode(LLMRequest([Message.user("Hi")], tools=[TOOL], tool_choice=ToolChoice.tool("get_weather"),
                             parallel_tool_calls=False, response_format=fmt))
    assert body["tools"] == [{"type": "function", "name": "get_weather", "description": "Weather for a city.",
                              "parameters": TOOL.parameters, "strict": False}]
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert body["parallel_tool_calls"] is False
    schema = body["text"]["format"]
    assert (schema["type"], schema["name"], schema["strict"]) == ("json_schema", "City", True)
    assert schema["schema"]["additionalProperties"] is False  # fitted to strict mode


def test_reasoning_models_ask_for_encrypted_reasoning_and_take_effort() -> None:
    request = LLMRequest([Message.user("Hi")], reasoning_effort="high",
                         vendor_options={WIRE: {"reasoning_summary": "auto"}})
    body = encode(request, "gpt-5")
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert "include" not in encode(LLMRequest([Message.user("Hi")]), "gpt-4o")


def test_settings_refused_or_dropped_per_field() -> None:
    with pytest.raises(UnsupportedSettingError, match="stop"):
        encode(LLMRequest([Message.user("Hi")], stop=["END"]))
    with pytest.raises(UnsupportedSettingError, match="reasoning_effort"):
        encode(LLMRequest([Message.user("Hi")], reasoning_effort="xhigh"), "o3-mini")
    body = encode(LLMRequest([Message.user("Hi")], temperature=0.5, seed=3), "gpt-5")
    assert "temperature" not in body and "seed" not in body


def test_media_parts_mapped_or_refused() -> None:
    message = Message.user([
        Text("Look:"), Image(data=PNG, media_type="image/png"), Image(url="https://x.test/a.png"),
        Document(url="https://x.test/a.pdf"),
    ])
    content = encode(LLMRequest([message]))["input"][0]["content"]
    assert [p["type"] for p in content] == ["input_text", "input_image", "input_image", "input_file"]
    assert content[1]["image_url"].startswith("data:image/png;base64,")
    assert content[3] == {"type": "input_file", "file_url": "https://x.test/a.pdf"}
    with pytest.raises(UnsupportedContentError, match="audio"):
        encode(LLMRequest([Message.user([Text("Hear"), Audio(data=b"RIFF0000WAVEfmt ", media_type="audio/wav")])]))
    with pytest.raises(UnsupportedContentError, match="images"):
        encode(LLMRequest([Message.user([Text("x"), Image(data=PNG, media_type="image/png")])]), "o3-mini")


def test_tool_results_carry_media_in_the_output() -> None:
    result = Message.tool("call_1", [Text("chart:"), Image(data=PNG, media_type="image/png")])
    call = Message.assistant("", [ToolCall("call_1", "chart", {})])
    items = encode(LLMRequest([Message.user("Draw"), call, result]))["input"]
    assert items[2]["type"] == "function_call_output"
    assert [p["type"] for p in items[2]["output"]] == ["input_text", "input_image"]


def _answer(output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "model": "gpt-5", "status": "completed", "output": output,
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 5,
                      "output_tokens_details": {"reasoning_tokens": 3}}, **extra}


REASONING = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Think."}],
             "encrypted_content": "opaque=="}


def test_usage_and_reasoning_and_replay() -> None:
    body = _answer([REASONING, {"type": "message", "id": "msg_1", "content": [{"type": "output_text",
                                                                               "text": "Hi"}]},
                    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"}])
    response = ResponsesWire().decode_response(body, request=None, model="gpt-5", provider="p")
    usage = response.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.reasoning_tokens) == (10, 4, 3)
    assert response.reasoning == "Think." and response.content == "Hi"
    items = encode(LLMRequest([Message.user("Q"), response.to_message()]), "gpt-5")["input"][1:]
    assert items[0] == REASONING
    assert items[1]["id"] == "msg_1" and items[2]["id"] == "fc_1"
    edited = response.to_message().with_text("Changed")
    fallback = encode(LLMRequest([Message.user("Q"), edited]), "gpt-5")["input"][1:]
    assert fallback == [{"role": "assistant", "content": "Changed"},
                        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}]


@pytest.mark.parametrize(("reason", "stop"), [("max_output_tokens", StopReason.max_tokens),
                                              ("content_filter", StopReason.content_filter)])
def test_incomplete_answers(reason: str, stop: StopReason) -> None:
    body = _answer([{"type": "message", "content": [{"type": "output_text", "text": "Par"}]}], status="incomplete",
                   incomplete_details={"reason": reason})
    response = ResponsesWire().decode_response(body, request=None, model="m", provider="p")
    assert (response.stop_reason, response.raw_stop_reason, response.content) == (stop, reason, "Par")


def test_refusal_is_a_content_filter_answer() -> None:
    body = _answer([{"type": "message", "content": [{"type": "refusal", "refusal": "I can't."}]}])
    response = ResponsesWire().decode_response(body, request=None, model="m", provider="p")
    assert (response.content, response.stop_reason) == ("I can't.", StopReason.content_filter)


def test_failed_and_malformed_bodies() -> None:
    failed = _answer([], status="failed", error={"code": "server_error", "message": "boom"})
    with pytest.raises(ProviderError) as info:
        ResponsesWire().decode_response(failed, request=None, model="m", provider="p")
    assert info.value.kind is ErrorKind.transient
    with pytest.raises(MalformedResponseError):
        ResponsesWire().decode_response({"status": "completed"}, request=None, model="m", provider="p")


def feed(events: list[dict[str, Any]]) -> tuple[list[StreamEvent], Any]:
    decoder = ResponsesWire().stream_decoder(request=None, model="m", provider="p")
    out: list[StreamEvent] = []
    for e in events:
        out.extend(decoder.feed(e["type"], json.dumps(e)))
    return out, decoder


def test_stream_events_and_truncation() -> None:
    events, decoder = feed([
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "summary_index": 0, "delta": "A"},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "summary_index": 1, "delta": "B"},
        {"type": "response.output_text.delta", "delta": "Hi"},
    ])
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["A", "\n\n", "B"]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hi"]
    assert not decoder.done
    with pytest.raises(MalformedResponseError, match="truncated"):
        decoder.finish()


def test_stream_ends_calls_the_completed_response_holds() -> None:
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": '{"a":1}'}
    events, decoder = feed([{"type": "response.completed", "response": _answer([call])}])
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [e.call.arguments for e in ends] == [{"a": 1}]
    assert decoder.finish().tool_calls == tuple(e.call for e in ends)


@pytest.mark.parametrize("event", [
    {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None},
    {"type": "response.failed", "response": {"status": "failed", "error": {"code": "rate_limit_exceeded",
                                                                            "message": "slow down"}}},
])
def test_in_band_errors_are_classified(event: dict[str, Any]) -> None:
    with pytest.raises(ProviderError) as info:
        feed([event])
    assert info.value.kind is ErrorKind.transient and "slow down" in info.value.message


def test_capabilities_per_model() -> None:
    assert responses_capabilities("o1-mini").forced_tool_choice is False
    assert responses_capabilities("gpt-4-turbo").response_format is False
    gpt5 = responses_capabilities("gpt-5")
    assert gpt5.forced_tool_choice and gpt5.response_format and gpt5.thinking
    assert gpt5.media == frozenset({"image", "document"})
    assert responses_capabilities("gpt-4o").thinking is False
    assert responses_capabilities("o3-mini").media == frozenset()
