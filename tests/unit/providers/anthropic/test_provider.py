"""The Anthropic Messages codec and provider: the scenarios of docs/wire.md and the rules behind them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import httpx
import pytest

from agentactors.errors import (
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    StreamInterruptedError,
    UnsupportedSettingError,
    UnsupportedToolChoiceError,
)
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
from agentactors.providers.anthropic.encode import DEFAULT_MAX_TOKENS
from agentactors.providers.anthropic.provider import (
    AnthropicProvider,
    AnthropicWire,
    model_accepts_forced_tool_choice,
)
from agentactors.providers.port import forced_tool_choice_for

pytestmark = pytest.mark.anyio

WIRE = AnthropicWire()
KEY = "sk-ant-unit-canary-abcdefghijklmnop"
LOOKUP = ToolSpec(
    "lookup",
    "Look a word up.",
    {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
)
NOW = ToolSpec("now", "The time.", {"type": "object", "properties": {}})


def encode(messages: Iterable[Message], **kw: Any) -> dict[str, Any]:
    return WIRE.encode_request(LLMRequest(list(messages), **kw), "claude-test", stream=False)


def sse(*events: tuple[str, dict[str, Any]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def start(input_tokens: int = 11) -> tuple[str, dict[str, Any]]:
    usage = {"input_tokens": input_tokens, "output_tokens": 1, "cache_read_input_tokens": 5}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1", "content": []}
    return "message_start", {"type": "message_start", "message": {**message, "usage": usage}}


def block_start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, **d: Any) -> tuple[str, dict[str, Any]]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}


def stop(index: int) -> tuple[str, dict[str, Any]]:
    return "content_block_stop", {"type": "content_block_stop", "index": index}


def message_delta(reason: str, usage: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": usage,
    }


MESSAGE_STOP = ("message_stop", {"type": "message_stop"})
PING = ("ping", {"type": "ping"})


def feed_all(events: Iterable[tuple[str, dict[str, Any]]], request: LLMRequest | None = None) -> list[StreamEvent]:
    decoder = WIRE.stream_decoder(request=request, model="claude-test", provider="anthropic")
    out: list[StreamEvent] = []
    for name, data in events:
        out.extend(decoder.feed(name, json.dumps(data)))
    out.append(StreamEnd(decoder.finish()))
    return out


def transport(respond: Callable[[httpx.Request], httpx.Response], sent: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return respond(request)

    return httpx.MockTransport(handler)


def sse_response(content: bytes) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=content)


# --- request encoding ---------------------------------------------------------------------------


def test_two_system_messages_become_one_system_string() -> None:
    body = encode([Message.system("Be brief."), Message.user("hi"), Message.system("Answer in French.")])
    assert body["system"] == "Be brief.\n\nAnswer in French."
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


def test_empty_text_with_two_calls_then_two_results_makes_one_user_turn() -> None:
    calls = [ToolCall("toolu_a", "lookup", {"word": "x"}), ToolCall("toolu_b", "now", {})]
    body = encode(
        [
            Message.user("go"),
            Message.assistant("", calls),
            Message.tool("toolu_a", "found x", "lookup"),
            Message.tool("toolu_b", "noon", "now", is_error=True),
        ],
        tools=[LOOKUP, NOW],
    )
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_a", "name": "lookup", "input": {"word": "x"}},
                {"type": "tool_use", "id": "toolu_b", "name": "now", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "found x", "is_error": False},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "noon", "is_error": True},
            ],
        },
    ]


def test_same_role_neighbours_merge_with_tool_results_first() -> None:
    body = encode(
        [
            Message.user("one"),
            Message.user("two"),
            Message.assistant("", [ToolCall("toolu_a", "now", {})]),
            Message.user("(a nudge)"),
            Message.tool("toolu_a", "noon"),
            Message.assistant("a"),
            Message.assistant("b"),
        ],
        tools=[NOW],
    )
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert [b["text"] for b in body["messages"][0]["content"]] == ["one", "two"]
    # The API wants tool results first in their user turn, whatever order we held them in.
    assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result", "text"]
    assert [b["text"] for b in body["messages"][3]["content"]] == ["a", "b"]


def test_empty_user_text_is_dropped_not_sent_as_an_empty_block() -> None:
    body = encode([Message.user(""), Message.user("real")])
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "real"}]}]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice.auto(), {"type": "auto"}),
        (ToolChoice.none(), {"type": "none"}),
        (ToolChoice.required(), {"type": "any"}),
        (ToolChoice.tool("lookup"), {"type": "tool", "name": "lookup"}),
    ],
)
def test_tool_choice_mapping(choice: ToolChoice, wire: dict[str, Any]) -> None:
    body = encode([Message.user("q")], tools=[LOOKUP], tool_choice=choice)
    assert body["tool_choice"] == wire
    assert body["tools"] == [{"name": "lookup", "description": "Look a word up.", "input_schema": LOOKUP.parameters}]


def test_disable_parallel_tool_use_goes_into_tool_choice_but_never_with_none() -> None:
    opts = {"anthropic": {"disable_parallel_tool_use": True}}
    auto = encode([Message.user("q")], tools=[LOOKUP], vendor_options=opts)
    assert auto["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert "disable_parallel_tool_use" not in auto
    none = encode([Message.user("q")], tools=[LOOKUP], tool_choice=ToolChoice.none(), vendor_options=opts)
    assert none["tool_choice"] == {"type": "none"}


def test_no_tools_means_no_tools_and_no_tool_choice() -> None:
    body = encode([Message.user("q")], tool_choice=ToolChoice.none())
    assert "tools" not in body and "tool_choice" not in body


def test_generation_settings_and_vendor_options() -> None:
    body = encode(
        [Message.user("q")],
        max_tokens=77,
        temperature=0.25,
        stop=["END", "STOP"],
        vendor_options={
            "anthropic": {"metadata": {"user_id": "u1"}, "top_k": 5},
            "openai": {"seed": 1},
        },
    )
    assert (body["max_tokens"], body["temperature"], body["stop_sequences"]) == (77, 0.25, ["END", "STOP"])
    assert (body["metadata"], body["top_k"]) == ({"user_id": "u1"}, 5)
    assert "seed" not in body and body["stream"] is False and body["model"] == "claude-test"


def test_max_tokens_default_leaves_room_beyond_the_thinking_budget() -> None:
    assert encode([Message.user("q")])["max_tokens"] == DEFAULT_MAX_TOKENS == 4096
    small = {"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 1024}}}
    assert encode([Message.user("q")], vendor_options=small)["max_tokens"] == 4096
    big = {"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 10000}}}
    assert encode([Message.user("q")], vendor_options=big)["max_tokens"] == 10000 + 4096
    # an explicit max_tokens below the options' budget is the vendor's 400 ("budget_tokens must be less than
    # max_tokens"): refused before sending, as the same budget given as thinking_budget is
    with pytest.raises(UnsupportedSettingError, match="below max_tokens"):
        encode([Message.user("q")], max_tokens=12, vendor_options=big)
    assert encode([Message.user("q")], max_tokens=10001, vendor_options=big)["max_tokens"] == 10001


def test_tool_extras_and_extra_tools() -> None:
    body = encode(
        [Message.user("q")],
        tools=[LOOKUP],
        vendor_options={
            "anthropic": {
                "tool_extras": {"lookup": {"cache_control": {"type": "ephemeral"}}},
                "extra_tools": [{"type": "web_search_20250305", "name": "web_search"}],
            }
        },
    )
    assert body["tools"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][1] == {"type": "web_search_20250305", "name": "web_search"}
    assert "tool_extras" not in body and "extra_tools" not in body


THINKING = {"type": "thinking", "thinking": "Let me think.", "signature": "c2lnbmF0dXJl+/=="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}


def test_thinking_blocks_are_replayed_verbatim_before_text_and_tool_use() -> None:
    response = WIRE.decode_response(
        {
            "type": "message",
            "content": [
                THINKING,
                REDACTED,
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"word": "w"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 1, "output_tokens": 2},
        },
        request=None,
        model="claude-test",
        provider="anthropic",
    )
    assert response.reasoning == "Let me think."
    # The blocks, and the model they were made for (a signature is valid for that model only).
    assert response.provider_data == {"anthropic": {"blocks": [THINKING, REDACTED], "model": "claude-test"}}
    body = encode(
        [Message.user("q"), response.to_message(), Message.tool("toolu_1", "a word")],
        tools=[LOOKUP],
        vendor_options={"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 1024}}},
    )
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            THINKING,
            REDACTED,
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"word": "w"}},
        ],
    }
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}


def test_other_wires_provider_data_is_not_replayed_here() -> None:
    message = Message.assistant("hi", provider_data={"gemini": {"blocks": [THINKING]}})
    body = encode([Message.user("q"), message])
    assert body["messages"][1]["content"] == [{"type": "text", "text": "hi"}]


def test_codec_url_and_headers() -> None:
    assert WIRE.url("https://api.anthropic.com/", "m", stream=True) == "https://api.anthropic.com/v1/messages"
    assert WIRE.headers(KEY) == {
        "x-api-key": KEY,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    assert AnthropicWire(betas=["a-1", "b-2"]).headers(None)["anthropic-beta"] == "a-1,b-2"


# --- response decoding --------------------------------------------------------------------------


def decode(body: Any) -> LLMResponse:
    return WIRE.decode_response(body, request=None, model="claude-test", provider="anthropic")


@pytest.mark.parametrize(
    ("raw", "mapped"),
    [
        ("end_turn", StopReason.end_turn),
        ("stop_sequence", StopReason.stop_sequence),
        ("max_tokens", StopReason.max_tokens),
        ("tool_use", StopReason.tool_use),
        ("pause_turn", StopReason.pause_turn),
        ("refusal", StopReason.content_filter),
        ("model_context_window_exceeded", StopReason.max_tokens),
        ("brand_new_reason", StopReason.other),
    ],
)
def test_stop_reason_mapping_keeps_the_raw_value(raw: str, mapped: StopReason) -> None:
    response = decode({"type": "message", "content": [], "stop_reason": raw})
    assert (response.stop_reason, response.raw_stop_reason) == (mapped, raw)


def test_usage_fields() -> None:
    response = decode(
        {
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 3,
                "output_tokens": 4,
                "cache_read_input_tokens": 5,
                "cache_creation_input_tokens": 6,
            },
        }
    )
    assert response.content == "ab"
    assert response.usage == Usage(3, 4, cache_read_tokens=5, cache_write_tokens=6)


def test_a_non_object_tool_input_is_marked_not_silently_empty() -> None:
    response = decode({"content": [{"type": "tool_use", "id": "t", "name": "lookup", "input": "[1"}]})
    (call,) = response.tool_calls
    assert (call.arguments, call.arguments_error, call.raw_arguments) == ({}, "unparseable", '"[1"')


@pytest.mark.parametrize(
    "body",
    [
        [],
        "message",
        {"type": "message"},
        {"type": "completion", "content": []},
        {"content": [{"text": "no type"}]},
        {"content": [{"type": "text", "text": 5}]},
        {"content": [{"type": "tool_use", "name": "lookup", "input": {}}]},
        {"content": [{"type": "thinking", "signature": "s"}]},
    ],
)
def test_malformed_bodies_are_transient_malformed_errors(body: Any) -> None:
    with pytest.raises(MalformedResponseError) as info:
        decode(body)
    assert info.value.kind is ErrorKind.transient and info.value.retryable


def test_an_error_body_with_status_200_is_classified() -> None:
    with pytest.raises(ProviderError) as info:
        decode({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    assert not isinstance(info.value, MalformedResponseError)
    assert (info.value.kind, info.value.status, info.value.retryable) == (ErrorKind.transient, 529, True)


# --- errors -------------------------------------------------------------------------------------


def error_body(kind: str, message: str = "nope") -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_9"}).encode()


@pytest.mark.parametrize(
    ("status", "kind", "expected"),
    [
        (400, "invalid_request_error", ErrorKind.request),
        (401, "authentication_error", ErrorKind.account),
        (403, "permission_error", ErrorKind.account),
        (404, "not_found_error", ErrorKind.account),
        (413, "request_too_large", ErrorKind.request),
        (429, "rate_limit_error", ErrorKind.transient),
        (500, "api_error", ErrorKind.transient),
        (529, "overloaded_error", ErrorKind.transient),
    ],
)
def test_http_errors_are_classified(status: int, kind: str, expected: ErrorKind) -> None:
    headers = {"retry-after": "7"} if status == 429 else {}
    err = WIRE.classify_error(status, headers, error_body(kind), model="claude-test", provider="anthropic")
    assert (err.kind, err.status, err.request_id, err.message) == (expected, status, "req_9", "nope")
    assert err.retryable is (expected is ErrorKind.transient)
    if status == 429:
        assert err.retry_after == 7.0


def test_prompt_too_long_is_a_context_error() -> None:
    body = error_body("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")
    err = WIRE.classify_error(400, {}, body, model="m", provider="anthropic")
    assert err.kind is ErrorKind.context


# --- stream decoding ----------------------------------------------------------------------------


def test_input_tokens_from_message_start_survive_message_delta() -> None:
    events = feed_all(
        [
            start(input_tokens=42),
            block_start(0, {"type": "text", "text": ""}),
            delta(0, type="text_delta", text="Hi"),
            stop(0),
            # Older API versions report only output tokens here.
            message_delta("end_turn", {"output_tokens": 9}),
            MESSAGE_STOP,
        ]
    )
    end = events[-1]
    assert isinstance(end, StreamEnd)
    assert end.response.usage == Usage(input_tokens=42, output_tokens=9, cache_read_tokens=5)
    assert (end.response.content, end.response.model, end.response.response_id) == ("Hi", "claude-test-1", "msg_1")


def test_overloaded_error_event_after_text_raises_transient_not_a_partial_answer() -> None:
    decoder = WIRE.stream_decoder(request=None, model="claude-test", provider="anthropic")
    for name, data in [start(), block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="Par")]:
        decoder.feed(name, json.dumps(data))
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ProviderError) as info:
        decoder.feed("error", json.dumps(overloaded))
    err = info.value
    assert not isinstance(err, MalformedResponseError)
    assert (err.kind, err.retryable, err.status, err.message) == (ErrorKind.transient, True, 529, "Overloaded")
    assert not decoder.done
    with pytest.raises(MalformedResponseError):
        decoder.finish()  # and nothing can turn the cut answer into a complete one


def test_in_band_invalid_request_error_is_a_request_fault() -> None:
    decoder = WIRE.stream_decoder(request=None, model="claude-test", provider="anthropic")
    bad = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    with pytest.raises(ProviderError) as info:
        decoder.feed("error", json.dumps(bad))
    assert (info.value.kind, info.value.status, info.value.retryable) == (ErrorKind.request, 400, False)


def test_tool_input_streamed_in_fragments_first_one_empty() -> None:
    events = feed_all(
        [
            start(),
            PING,
            block_start(0, {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {}}),
            delta(0, type="input_json_delta", partial_json=""),
            delta(0, type="input_json_delta", partial_json='{"wo'),
            PING,
            delta(0, type="input_json_delta", partial_json='rd": "a.ts"}'),
            stop(0),
            ("brand_new_event", {"type": "brand_new_event", "x": 1}),
            message_delta("tool_use", {"output_tokens": 20}),
            MESSAGE_STOP,
        ]
    )
    call = ToolCall("toolu_9", "lookup", {"word": "a.ts"})
    assert events[:-1] == [
        ToolCallStart(0, "toolu_9", "lookup"),
        ToolCallDelta(0, '{"wo'),
        ToolCallDelta(0, 'rd": "a.ts"}'),
        ToolCallEnd(0, call),
    ]
    end = events[-1]
    assert isinstance(end, StreamEnd)
    assert (end.response.tool_calls, end.response.stop_reason) == ((call,), StopReason.tool_use)


def test_unparseable_streamed_tool_input_is_marked_with_why() -> None:
    cut = [
        start(),
        block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}),
        delta(0, type="input_json_delta", partial_json='{"word": "unfini'),
        stop(0),
    ]
    events = feed_all([*cut, message_delta("max_tokens", {"output_tokens": 50}), MESSAGE_STOP])
    end_event = events[-2]
    assert isinstance(end_event, ToolCallEnd)
    assert end_event.call.arguments_error == "unparseable"
    assert end_event.call.raw_arguments == '{"word": "unfini'
    end = events[-1]
    assert isinstance(end, StreamEnd)
    (call,) = end.response.tool_calls
    assert (call.arguments, call.arguments_error, call.raw_arguments) == ({}, "unparseable", '{"word": "unfini')
    assert call.arguments_error_detail is not None and "max_tokens" in call.arguments_error_detail
    assert end.response.stop_reason is StopReason.max_tokens
    # Whatever the stop reason says, text that does not parse is never {} without a mark.
    (call2,) = feed_all([*cut, message_delta("tool_use", {}), MESSAGE_STOP])[-1].response.tool_calls  # type: ignore[union-attr]
    assert call2.arguments_error == "unparseable"


def test_no_streamed_input_is_empty_only_when_the_schema_requires_properties() -> None:
    def run(tool: str) -> ToolCall:
        request = LLMRequest([Message.user("q")], tools=[LOOKUP, NOW])
        events = feed_all(
            [
                start(),
                block_start(0, {"type": "tool_use", "id": "toolu_1", "name": tool, "input": {}}),
                delta(0, type="input_json_delta", partial_json=""),
                stop(0),
                message_delta("tool_use", {}),
                MESSAGE_STOP,
            ],
            request,
        )
        end = events[-1]
        assert isinstance(end, StreamEnd)
        return end.response.tool_calls[0]

    assert run("now") == ToolCall("toolu_1", "now", {})
    assert run("lookup").arguments_error == "empty"


def _no_input_call_then(reason: str, *, text_after: bool = False, tool: str = "now") -> LLMResponse:
    request = LLMRequest([Message.user("q")], tools=[LOOKUP, NOW])
    after = [block_start(1, {"type": "text", "text": ""}), delta(1, type="text_delta", text="x"), stop(1)]
    events = feed_all(
        [
            start(),
            block_start(0, {"type": "tool_use", "id": "toolu_1", "name": tool, "input": {}}),
            stop(0),
            *(after if text_after else []),
            message_delta(reason, {"output_tokens": 9}),
            MESSAGE_STOP,
        ],
        request,
    )
    end = events[-1]
    assert isinstance(end, StreamEnd)
    return end.response


def test_a_last_tool_use_with_no_input_at_max_tokens_is_marked_cut_off() -> None:
    """The answer's last block a tool_use with no input, and max_tokens the stop: cut off while it was written
    (right after its name), so it is marked — never run with its defaults."""
    (call,) = _no_input_call_then("max_tokens").tool_calls
    assert (call.name, call.arguments, call.arguments_error) == ("now", {}, "unparseable")
    assert call.arguments_error_detail is not None and "max_tokens" in call.arguments_error_detail
    (call,) = _no_input_call_then("max_tokens", tool="lookup").tool_calls
    assert call.arguments_error is not None and "max_tokens" in (call.arguments_error_detail or "")


def test_a_tool_use_with_no_input_is_fine_when_it_finished() -> None:
    """Claude streams no input delta for a call with no arguments: any other stop, or a block after it (it was
    finished before the tokens ran out), leaves it a call with no arguments."""
    assert _no_input_call_then("tool_use").tool_calls == (ToolCall("toolu_1", "now", {}),)
    assert _no_input_call_then("max_tokens", text_after=True).tool_calls == (ToolCall("toolu_1", "now", {}),)


def test_a_whole_body_decodes_a_last_tool_use_with_no_input_at_max_tokens_as_the_stream_does() -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}
    body = {"type": "message", "id": "msg_1", "model": "claude-test-1", "stop_reason": "max_tokens",
            "content": [{"type": "text", "text": "Checking."}, use], "usage": {"input_tokens": 3, "output_tokens": 9}}
    (call,) = decode(body).tool_calls
    assert call.arguments_error == "unparseable" and "max_tokens" in (call.arguments_error_detail or "")
    assert decode(body | {"stop_reason": "tool_use"}).tool_calls == (ToolCall("toolu_1", "now", {}),)


def test_thinking_stream_rebuilds_the_block_with_its_signature() -> None:
    events = feed_all(
        [
            start(),
            block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(0, type="thinking_delta", thinking="Hmm, "),
            delta(0, type="thinking_delta", thinking="yes."),
            delta(0, type="signature_delta", signature="U0lH"),
            stop(0),
            block_start(1, {"type": "redacted_thinking", "data": "opaque"}),
            stop(1),
            block_start(2, {"type": "text", "text": ""}),
            delta(2, type="text_delta", text="Answer"),
            stop(2),
            message_delta("end_turn", {"output_tokens": 3}),
            MESSAGE_STOP,
        ]
    )
    assert events[:-1] == [ReasoningDelta("Hmm, "), ReasoningDelta("yes."), TextDelta("Answer")]
    end = events[-1]
    assert isinstance(end, StreamEnd)
    assert end.response.reasoning == "Hmm, yes."
    assert end.response.provider_data == {
        "anthropic": {
            "blocks": [
                {"type": "thinking", "thinking": "Hmm, yes.", "signature": "U0lH"},
                {"type": "redacted_thinking", "data": "opaque"},
            ],
            "model": "claude-test",
        }
    }


@pytest.mark.parametrize(
    "events",
    [
        [block_start(0, {"type": "text", "text": ""})],  # before message_start
        [start(), start()],
        [start(), delta(0, type="text_delta", text="x")],  # block never started
        [start(), block_start(0, {"type": "text", "text": ""}), delta(0, type="input_json_delta", partial_json="{")],
        [start(), block_start(0, {"type": "tool_use", "name": "lookup", "input": {}})],  # no id
        [start(), ("content_block_stop", {"type": "content_block_stop", "index": "0"})],
    ],
)
def test_protocol_violations_are_malformed(events: list[tuple[str, dict[str, Any]]]) -> None:
    with pytest.raises(MalformedResponseError):
        feed_all(events)


def test_non_json_data_is_malformed() -> None:
    decoder = WIRE.stream_decoder(request=None, model="m", provider="anthropic")
    with pytest.raises(MalformedResponseError):
        decoder.feed("message_start", "{not json")


# --- the provider -------------------------------------------------------------------------------


def message_body(text: str = "ok") -> dict[str, Any]:
    return {"type": "message", "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": {}}


async def test_provider_sends_key_in_headers_only_and_reads_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    sent: list[httpx.Request] = []
    reply = transport(lambda _: httpx.Response(200, json=message_body("hello")), sent)
    async with httpx.AsyncClient(transport=reply) as client:
        provider = AnthropicProvider("claude-test", http_client=client)
        response = await provider.complete(LLMRequest([Message.user("hi")]))
    assert (response.content, response.provider, response.model) == ("hello", "anthropic", "claude-test")
    (request,) = sent
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == KEY and request.headers["anthropic-version"] == "2023-06-01"
    assert KEY not in str(request.url) and KEY not in repr(provider)
    assert json.loads(request.content)["model"] == "claude-test"


async def test_provider_http_error_is_classified_with_retry_after() -> None:
    sent: list[httpx.Request] = []
    reply = transport(
        lambda _: httpx.Response(429, headers={"retry-after": "12"}, content=error_body("rate_limit_error")), sent
    )
    async with httpx.AsyncClient(transport=reply) as client:
        provider = AnthropicProvider("claude-test", api_key=KEY, http_client=client)
        with pytest.raises(ProviderError) as info:
            await provider.complete(LLMRequest([Message.user("hi")]))
    assert (info.value.kind, info.value.status, info.value.retry_after) == (ErrorKind.transient, 429, 12.0)


async def test_provider_stream_overloaded_after_text_is_interrupted_not_answered() -> None:
    content = sse(
        start(),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="Par"),
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    )
    sent: list[httpx.Request] = []
    seen: list[StreamEvent] = []
    async with httpx.AsyncClient(transport=transport(sse_response(content), sent)) as client:
        provider = AnthropicProvider("claude-test", api_key=KEY, http_client=client)
        with pytest.raises(StreamInterruptedError) as info:
            async with provider.stream(LLMRequest([Message.user("hi")])) as events:
                async for event in events:
                    seen.append(event)
    assert seen == [TextDelta("Par")]  # never a StreamEnd
    assert info.value.partial_text == "Par"
    cause = info.value.__cause__
    assert isinstance(cause, ProviderError) and (cause.kind, cause.status) == (ErrorKind.transient, 529)
    assert json.loads(sent[0].content)["stream"] is True


async def test_provider_stream_overloaded_before_any_event_is_the_transient_error_itself() -> None:
    content = sse(start(), ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
    async with httpx.AsyncClient(transport=transport(sse_response(content), [])) as client:
        provider = AnthropicProvider("claude-test", api_key=KEY, http_client=client)
        with pytest.raises(ProviderError) as info:
            async with provider.stream(LLMRequest([Message.user("hi")])) as events:
                async for _ in events:
                    pass
    assert not isinstance(info.value, StreamInterruptedError)
    assert (info.value.kind, info.value.retryable) == (ErrorKind.transient, True)


async def test_provider_truncated_stream_raises() -> None:
    content = sse(start(), block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="Hal"))
    async with httpx.AsyncClient(transport=transport(sse_response(content), [])) as client:
        provider = AnthropicProvider("claude-test", api_key=KEY, http_client=client)
        with pytest.raises(StreamInterruptedError) as info:
            async with provider.stream(LLMRequest([Message.user("hi")])) as events:
                async for _ in events:
                    pass
    assert info.value.partial_text == "Hal"
    assert isinstance(info.value.__cause__, MalformedResponseError)


# --- forced tool choice -------------------------------------------------------------------------


def test_forced_tool_choice_support_is_per_model_data() -> None:
    provider = AnthropicProvider("claude-sonnet-4-5", api_key=KEY, rejects_forced_tool_choice=["claude-legacy-*"])
    assert provider.supports_forced_tool_choice("claude-sonnet-4-5")
    assert forced_tool_choice_for(provider, "claude-sonnet-4-5") is True
    assert not provider.supports_forced_tool_choice("anthropic/claude-3.7-sonnet:thinking")
    assert not provider.supports_forced_tool_choice("Claude-3-7-Sonnet-Thinking")
    assert not provider.supports_forced_tool_choice("claude-legacy-2")
    assert forced_tool_choice_for(provider, "claude-legacy-2") is False
    assert model_accepts_forced_tool_choice("claude-legacy-2")  # the extension is per provider
    assert model_accepts_forced_tool_choice(None)


@pytest.mark.parametrize("choice", [ToolChoice.required(), ToolChoice.tool("lookup")])
@pytest.mark.parametrize(
    ("model", "options"),
    [
        ("anthropic/claude-3.7-sonnet:thinking", {}),  # a model that always thinks
        ("claude-sonnet-4-5", {"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 2048}}}),
    ],
)
async def test_rejected_forced_choice_raises_before_any_request(
    choice: ToolChoice, model: str, options: dict[str, Any]
) -> None:
    sent: list[httpx.Request] = []
    async with httpx.AsyncClient(
        transport=transport(lambda _: httpx.Response(200, json=message_body()), sent)
    ) as client:
        provider = AnthropicProvider(model, api_key=KEY, http_client=client)
        request = LLMRequest([Message.user("q")], tools=[LOOKUP], tool_choice=choice, vendor_options=options)
        with pytest.raises(UnsupportedToolChoiceError) as info:
            await provider.complete(request)
        assert (info.value.kind, info.value.retryable, info.value.model) == (ErrorKind.request, False, model)
        with pytest.raises(UnsupportedToolChoiceError):
            provider.stream(request)  # refused at call time, before any HTTP request exists
        assert sent == []
        # The same conversation without forcing goes through.
        auto = LLMRequest([Message.user("q")], tools=[LOOKUP], vendor_options=options)
        assert (await provider.complete(auto)).content == "ok"
    assert len(sent) == 1


async def test_thinking_disabled_does_not_block_a_forced_choice() -> None:
    sent: list[httpx.Request] = []
    async with httpx.AsyncClient(
        transport=transport(lambda _: httpx.Response(200, json=message_body()), sent)
    ) as client:
        provider = AnthropicProvider("claude-sonnet-4-5", api_key=KEY, http_client=client)
        request = LLMRequest(
            [Message.user("q")],
            tools=[LOOKUP],
            tool_choice=ToolChoice.required(),
            vendor_options={"anthropic": {"thinking": {"type": "disabled"}}},
        )
        await provider.complete(request)
    assert json.loads(sent[0].content)["tool_choice"] == {"type": "any"}
