"""Reading Bedrock: Converse bodies, usage, stop reasons, errors by type, the stream decoder and the framing."""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

import pytest

from agentactors.errors import ErrorKind, MalformedResponseError, ProviderError
from agentactors.messages import (
    LLMRequest,
    Message,
    ReasoningDelta,
    StopReason,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
)
from agentactors.providers.bedrock import BedrockStreamDecoder, BedrockWire, EventStreamFramer

WIRE = BedrockWire()


def converse(content: list[dict[str, Any]], stop: str = "end_turn", **usage: int) -> dict[str, Any]:
    return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop,
            "usage": {"inputTokens": 3, "outputTokens": 4, **usage}}


def decode(body: Any) -> Any:
    return WIRE.decode_response(body, request=None, model="m", provider="bedrock")


@pytest.mark.parametrize(
    ("raw", "stop"),
    [("end_turn", StopReason.end_turn), ("tool_use", StopReason.tool_use), ("max_tokens", StopReason.max_tokens),
     ("stop_sequence", StopReason.stop_sequence), ("guardrail_intervened", StopReason.content_filter),
     ("content_filtered", StopReason.content_filter), ("model_context_window_exceeded", StopReason.max_tokens),
     ("something_new", StopReason.other)],
)
def test_stop_reasons(raw: str, stop: StopReason) -> None:
    response = decode(converse([{"text": "x"}], raw))
    assert (response.stop_reason, response.raw_stop_reason) == (stop, raw)


def test_usage_keeps_cached_tokens_apart_from_input_tokens() -> None:
    usage = decode(converse([{"text": "x"}], cacheReadInputTokens=100, cacheWriteInputTokens=7)).usage
    counts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    assert counts == (3, 4, 100, 7)


def test_blocks_in_the_models_order() -> None:
    response = decode(converse([
        {"text": "first "},
        {"reasoningContent": {"reasoningText": {"text": "why", "signature": "sig"}}},
        {"reasoningContent": {"redactedContent": "b3BhcXVl"}},
        {"text": "second"},
        {"toolUse": {"toolUseId": "t1", "name": "f", "input": {"a": 1}}},
        {"toolUse": {"toolUseId": "t2", "name": "g", "input": "not an object"}},
    ], "tool_use"))
    assert response.content == "first second"
    assert response.reasoning == "why"
    assert [c.arguments for c in response.tool_calls] == [{"a": 1}, {}]
    assert response.tool_calls[1].arguments_error == "unparseable"
    assert response.provider_data == {"bedrock": {"blocks": [
        {"reasoningContent": {"reasoningText": {"text": "why", "signature": "sig"}}},
        {"reasoningContent": {"redactedContent": "b3BhcXVl"}},
    ], "model": "m"}}
    replay = response.to_message()
    assert replay.provider_data == response.provider_data


@pytest.mark.parametrize("body", [[], {"output": {}}, {"output": {"message": {"content": [1]}}},
                                  converse([{"toolUse": {"name": "f"}}])])
def test_a_body_that_is_not_a_converse_answer_is_malformed(body: Any) -> None:
    with pytest.raises(MalformedResponseError):
        decode(body)


@pytest.mark.parametrize(
    ("status", "etype", "kind"),
    [
        (429, "ThrottlingException", ErrorKind.transient),
        (429, "ModelNotReadyException", ErrorKind.transient),
        (503, "ServiceUnavailableException", ErrorKind.transient),
        (500, "InternalServerException", ErrorKind.transient),
        (408, "ModelTimeoutException", ErrorKind.transient),
        (424, "ModelErrorException", ErrorKind.transient),
        (400, "ValidationException", ErrorKind.request),
        (403, "AccessDeniedException", ErrorKind.account),
        (404, "ResourceNotFoundException", ErrorKind.account),
        (400, "ServiceQuotaExceededException", ErrorKind.account),
        (403, "ExpiredTokenException", ErrorKind.account),
        (400, None, ErrorKind.request),
        (503, None, ErrorKind.transient),
    ],
)
def test_errors_by_type(status: int, etype: str | None, kind: ErrorKind) -> None:
    headers = {"x-amzn-ErrorType": f"{etype}:http://internal.amazon.com/coral/com.amazon.bedrock/",
               "x-amzn-RequestId": "req-1", "retry-after": "2"} if etype else {}
    err = WIRE.classify_error(status, headers, b'{"message": "it failed"}', model="m", provider="bedrock")
    assert (err.kind, err.status, err.retryable) == (kind, status, kind is ErrorKind.transient)
    assert "it failed" in str(err)
    assert err.retry_after == (2.0 if etype else None)


def test_a_too_long_input_is_a_context_error() -> None:
    err = WIRE.classify_error(400, {"x-amzn-ErrorType": "ValidationException"},
                              b'{"message": "Input is too long for requested model."}', model="m", provider="b")
    assert err.kind is ErrorKind.context


# --- the stream decoder ------------------------------------------------------------------------------


def feed(decoder: BedrockStreamDecoder, *messages: tuple[str, dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for event, payload in messages:
        out.extend(decoder.feed(event, json.dumps(payload)))
    return out


def decoder(request: LLMRequest | None = None) -> BedrockStreamDecoder:
    return BedrockStreamDecoder(request=request, model="m", provider="bedrock")


def test_a_stream_with_reasoning_text_and_two_tools() -> None:
    d = decoder()
    events = feed(
        d,
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hm"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "s1"}}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "Hi"}}),
        ("contentBlockStop", {"contentBlockIndex": 1}),
        ("contentBlockStart", {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "a", "name": "f"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"x":'}}}),
        ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": "1}"}}}),
        ("contentBlockStop", {"contentBlockIndex": 2}),
        ("contentBlockStart", {"contentBlockIndex": 3, "start": {"toolUse": {"toolUseId": "b", "name": "g"}}}),
        ("contentBlockStop", {"contentBlockIndex": 3}),
        ("someFutureEvent", {"x": 1}),
        ("messageStop", {"stopReason": "tool_use"}),
    )
    done = d.done  # a local: mypy would hold d.done False past the feed below
    assert not done
    feed(d, ("metadata", {"usage": {"inputTokens": 5, "outputTokens": 6, "cacheReadInputTokens": 2}}))
    assert d.done
    kinds = [type(e) for e in events]
    assert kinds == [ReasoningDelta, TextDelta, ToolCallStart, ToolCallDelta, ToolCallDelta, ToolCallEnd,
                     ToolCallStart, ToolCallEnd]
    response = d.finish()
    assert (response.content, response.reasoning) == ("Hi", "hm")
    assert [(c.id, c.arguments) for c in response.tool_calls] == [("a", {"x": 1}), ("b", {})]
    assert response.usage.cache_read_tokens == 2
    assert response.provider_data == {"bedrock": {"blocks": [
        {"reasoningContent": {"reasoningText": {"text": "hm", "signature": "s1"}}}], "model": "m"}}


def test_empty_input_for_a_tool_with_required_arguments_is_marked() -> None:
    request = LLMRequest([Message.user("x")], tools=[ToolSpec("f", "", {"type": "object", "required": ["a"],
                                                                         "properties": {"a": {"type": "string"}}})])
    d = decoder(request)
    feed(d, ("messageStart", {}),
         ("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "a", "name": "f"}}}),
         ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a": "tr'}}}),
         ("messageStop", {"stopReason": "max_tokens"}), ("metadata", {"usage": {}}))
    (call,) = d.finish().tool_calls
    assert call.arguments_error == "unparseable"
    assert "max_tokens" in (call.arguments_error_detail or "")


@pytest.mark.parametrize(
    ("exception", "kind"),
    [("throttlingException", ErrorKind.transient), ("modelStreamErrorException", ErrorKind.transient),
     ("internalServerException", ErrorKind.transient), ("serviceUnavailableException", ErrorKind.transient),
     ("validationException", ErrorKind.request), ("somethingNewException", ErrorKind.transient)],
)
def test_an_exception_message_raises_the_classified_error(exception: str, kind: ErrorKind) -> None:
    d = decoder()
    feed(d, ("messageStart", {}))
    with pytest.raises(ProviderError) as caught:
        d.feed(f"exception:{exception}", '{"message": "boom"}')
    assert caught.value.kind is kind
    assert "boom" in str(caught.value)


@pytest.mark.parametrize(
    "messages",
    [
        [("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}})],
        [("messageStart", {}), ("contentBlockDelta", {"delta": {"text": "x"}})],
        [("messageStart", {}), ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{"}}})],
        [("messageStart", {}), ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}}),
         ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "y"}}})],
    ],
)
def test_data_that_breaks_the_wire_is_malformed(messages: list[tuple[str, dict[str, Any]]]) -> None:
    with pytest.raises(MalformedResponseError):
        feed(decoder(), *messages)


def test_a_stream_without_its_end_is_not_an_answer() -> None:
    d = decoder()
    feed(d, ("messageStart", {}), ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}}))
    with pytest.raises(MalformedResponseError, match="truncated"):
        d.finish()
    with pytest.raises(MalformedResponseError):
        d.feed("messageStop", "{not json")


# --- the framing (botocore's parser) -----------------------------------------------------------------


def message(headers: dict[str, str], payload: bytes) -> bytes:
    raw = b"".join(struct.pack(">B", len(k)) + k.encode() + struct.pack(">BH", 7, len(v)) + v.encode()
                   for k, v in headers.items())
    prelude = struct.pack(">II", 16 + len(raw) + len(payload), len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw + payload
    return body + struct.pack(">I", zlib.crc32(body))


def test_the_framer_hands_on_events_exceptions_and_errors_in_any_chunking() -> None:
    stream = (message({":message-type": "event", ":event-type": "messageStart"}, b'{"role":"assistant"}')
              + message({":message-type": "exception", ":exception-type": "throttlingException"}, b'{"message":"x"}')
              + message({":message-type": "error", ":error-code": "InternalFailure", ":error-message": "bad"}, b""))
    for size in (1, 5, len(stream)):
        framer = EventStreamFramer(provider="bedrock", model="m")
        pairs = [p for at in range(0, len(stream), size) for p in framer.feed(stream[at : at + size])]
        pairs += list(framer.close())
        assert pairs == [("messageStart", '{"role":"assistant"}'), ("exception:throttlingException", '{"message":"x"}'),
                         ("exception:InternalFailure", '{"message": "bad"}')]


def test_a_corrupt_or_cut_message_is_malformed() -> None:
    good = message({":message-type": "event", ":event-type": "metadata"}, b"{}")
    corrupt = good[:-1] + bytes([good[-1] ^ 0xFF])
    with pytest.raises(MalformedResponseError, match="corrupt"):
        list(EventStreamFramer(provider="b", model="m").feed(corrupt))
    framer = EventStreamFramer(provider="b", model="m")
    assert list(framer.feed(good[:-2])) == []
    with pytest.raises(MalformedResponseError, match="inside a message"):
        list(framer.close())


def test_a_last_tool_use_with_no_input_at_max_tokens_is_marked_cut_off() -> None:
    """Claude on Bedrock, as on Anthropic's wire: the answer's last block at max_tokens, a call with no input, was
    cut right after its name — not a finished call to run with its defaults.  Streamed and whole alike."""
    whole = decode(converse([{"text": "listing"}, {"toolUse": {"toolUseId": "t1", "name": "ls", "input": {}}}],
                            "max_tokens"))
    d = decoder()
    feed(d, ("messageStart", {}),
         ("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "ls"}}}),
         ("contentBlockStop", {"contentBlockIndex": 0}),
         ("messageStop", {"stopReason": "max_tokens"}), ("metadata", {"usage": {}}))
    for response in (whole, d.finish()):
        (call,) = response.tool_calls
        assert call.arguments_error == "unparseable" and "max_tokens" in (call.arguments_error_detail or "")


def test_a_tool_use_with_no_input_before_another_block_or_at_its_own_end_is_fine() -> None:
    finished = decode(converse([{"toolUse": {"toolUseId": "t1", "name": "ls", "input": {}}}], "tool_use"))
    followed = decode(converse([{"toolUse": {"toolUseId": "t1", "name": "ls", "input": {}}}, {"text": "and"}],
                               "max_tokens"))
    for response in (finished, followed):
        (call,) = response.tool_calls
        assert call.arguments_error is None and call.arguments == {}
