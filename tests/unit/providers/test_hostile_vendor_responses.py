"""Hostile vendor responses end in the library's typed error or a correct message, on every wire.

Each test here is a shape a broken or hostile vendor can send that once ended wrong: a corrupt AWS
event-stream frame classified as the *request's* fault (never retried, no fallback), an event-stream message
past ``max_event_bytes`` read anyway (and waited for), Bedrock content after ``messageStop`` streamed to the
caller but missing from the answer, a Converse ``toolUse`` that is not an object silently dropped, an in-band
error with a nonsense ``status_code`` taken as a request fault, and a Chat Completions stream whose choice
``index`` is not an integer decoded as an empty answer.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from agentactors import BedrockProvider
from agentactors.errors import ErrorKind, MalformedResponseError, ProviderError, ResponseTooLargeError
from agentactors.messages import LLMRequest, Message, StreamEnd, StreamEvent, TextDelta
from agentactors.providers.bedrock import BedrockStreamDecoder, BedrockWire, EventStreamFramer
from agentactors.providers.errors import classify_error_body
from agentactors.providers.openai.stream import OpenAIStreamDecoder

EVENT_STREAM = "application/vnd.amazon.eventstream"
KEY_ID = "AKIDEXAMPLEHOSTILE01"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYHOSTILEKEY"


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One well-formed event-stream message (string headers), its CRCs right."""
    raw = b"".join(struct.pack(">B", len(k)) + k.encode() + struct.pack(">BH", 7, len(v)) + v.encode()
                   for k, v in headers.items())
    prelude = struct.pack(">II", 16 + len(raw) + len(payload), len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw + payload
    return body + struct.pack(">I", zlib.crc32(body))


def raw_frame(total_length: int, headers_length: int, rest: bytes = b"\0" * 8) -> bytes:
    """A prelude whose CRC checks out whatever lengths it claims, then ``rest``."""
    prelude = struct.pack(">II", total_length, headers_length)
    return prelude + struct.pack(">I", zlib.crc32(prelude)) + rest


def framed_headers(raw: bytes, payload: bytes = b"{}") -> bytes:
    """A message whose header bytes are ``raw`` as given (and every CRC right)."""
    prelude = struct.pack(">II", 16 + len(raw) + len(payload), len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event(kind: str, payload: dict[str, Any]) -> bytes:
    return frame({":message-type": "event", ":event-type": kind, ":content-type": "application/json"},
                 json.dumps(payload).encode())


async def bedrock_stream(body: bytes | AsyncIterator[bytes], **kw: Any) -> list[StreamEvent]:
    """Stream one request from a BedrockProvider whose server answers 200 with ``body`` as the event stream."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": EVENT_STREAM}, content=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        provider = BedrockProvider("amazon.nova-pro-v1:0", region="us-east-1", access_key_id=KEY_ID,
                                   secret_access_key=SECRET, http_client=http, **kw)
        async with provider.stream(LLMRequest([Message.user("x")])) as events:
            return [e async for e in events]


# --- Bedrock: the event-stream framing --------------------------------------------------------------


@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(raw_frame(0, 0), id="total-length-0"),  # botocore: struct.error
        pytest.param(raw_frame(3, 0), id="total-length-3"),  # botocore: struct.error
        pytest.param(framed_headers(b"\x03abc\x63"), id="unknown-header-type"),  # botocore: KeyError
        pytest.param(framed_headers(b"\x05"), id="header-cut-short"),  # botocore: struct.error
        pytest.param(framed_headers(b"\x02\xff\xfe\x07\x00\x01a"), id="header-name-not-utf8"),
    ],
)
def test_a_frame_botocore_chokes_on_is_a_corrupt_stream(corrupt: bytes) -> None:
    framer = EventStreamFramer(provider="bedrock", model="m")
    with pytest.raises(MalformedResponseError, match="corrupt") as caught:
        list(framer.feed(event("messageStart", {"role": "assistant"}) + corrupt))
    assert caught.value.kind is ErrorKind.transient and caught.value.retryable


@pytest.mark.anyio
async def test_a_corrupt_frame_mid_stream_is_transient_not_the_requests_fault() -> None:
    # The vendor's bytes were bad: a fallback or a retry must get its chance (a request fault gets neither).
    body = event("messageStart", {"role": "assistant"}) + raw_frame(0, 0)
    with anyio.fail_after(30):
        with pytest.raises(ProviderError) as caught:
            await bedrock_stream(body)
    err = caught.value
    assert isinstance(err, MalformedResponseError), repr(err)
    assert err.kind is ErrorKind.transient and err.retryable
    assert SECRET not in repr(err) and SECRET not in str(err)


@pytest.mark.anyio
async def test_an_event_stream_message_past_max_event_bytes_is_too_large() -> None:
    big = event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x" * 4096}})
    body = event("messageStart", {"role": "assistant"}) + big
    with anyio.fail_after(30):
        with pytest.raises(ProviderError) as caught:
            await bedrock_stream(body, max_event_bytes=1024)
    err = caught.value
    assert isinstance(err, ResponseTooLargeError), repr(err)
    assert (err.limit, err.limit_bytes, err.kind) == ("max_event_bytes", 1024, ErrorKind.transient)


@pytest.mark.anyio
async def test_an_unfinished_message_past_max_event_bytes_is_not_waited_for() -> None:
    # A prelude claiming a 1 MiB message, 8 KiB of it, then silence: past the 4 KiB limit already, so the
    # call ends now rather than when the vendor (never) finishes the message.
    declared = 1 << 20
    prelude = struct.pack(">II", declared, 0)
    prelude += struct.pack(">I", zlib.crc32(prelude))

    async def body() -> AsyncIterator[bytes]:
        yield event("messageStart", {"role": "assistant"})
        yield prelude + b"\0" * 8192
        await anyio.sleep_forever()
        yield b""  # pragma: no cover - never reached

    with anyio.fail_after(30):
        with pytest.raises(ProviderError) as caught:
            await bedrock_stream(body(), max_event_bytes=4096)
    assert isinstance(caught.value, ResponseTooLargeError), repr(caught.value)
    assert caught.value.limit == "max_event_bytes"


@pytest.mark.anyio
async def test_messages_within_max_event_bytes_still_make_the_answer() -> None:
    body = b"".join([
        event("messageStart", {"role": "assistant"}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "ok"}}),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("messageStop", {"stopReason": "end_turn"}),
        event("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1}}),
    ])
    with anyio.fail_after(30):
        got = await bedrock_stream(body, max_event_bytes=1024)
    assert isinstance(got[-1], StreamEnd) and got[-1].response.content == "ok"


# --- Bedrock: the decoders ----------------------------------------------------------------------------


def test_content_after_message_stop_is_neither_streamed_nor_lost() -> None:
    d = BedrockStreamDecoder(request=None, model="m", provider="bedrock")
    streamed: list[StreamEvent] = []
    for kind, payload in [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "said"}}),
        ("messageStop", {"stopReason": "end_turn"}),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": " late"}}),
        ("contentBlockStop", {"contentBlockIndex": 1}),
        ("messageStop", {"stopReason": "max_tokens"}),
        ("metadata", {"usage": {"inputTokens": 1, "outputTokens": 2}}),
    ]:
        streamed.extend(d.feed(kind, json.dumps(payload)))
    response = d.finish()
    # What the caller was shown is what the answer holds: the first messageStop ended it.
    assert "".join(e.text for e in streamed if isinstance(e, TextDelta)) == response.content == "said"
    assert response.raw_stop_reason == "end_turn"


@pytest.mark.parametrize("use", [None, "f", 1, ["f"]])
def test_a_converse_tool_use_that_is_not_an_object_is_malformed(use: Any) -> None:
    body = {"output": {"message": {"role": "assistant", "content": [{"text": "x"}, {"toolUse": use}]}},
            "stopReason": "tool_use", "usage": {"inputTokens": 1, "outputTokens": 1}}
    with pytest.raises(MalformedResponseError, match="toolUse"):
        BedrockWire().decode_response(body, request=None, model="m", provider="bedrock")


# --- in-band errors with a status that is not an error status ---------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "upstream died"}, "status_code": 200},
        {"error": {"message": "upstream died"}, "status_code": True},
        {"error": {"message": "upstream died"}, "status_code": -5},
        {"error": {"message": "upstream died", "code": 200}},
        {"error": {"message": "upstream died", "code": 302}},
        {"error": {"message": "upstream died", "status_code": 201}},
    ],
)
def test_an_in_band_error_with_a_nonsense_status_is_the_vendors_failure(body: dict[str, Any]) -> None:
    err = classify_error_body(body, provider="p", model="m")
    assert (err.kind, err.retryable) == (ErrorKind.transient, True)
    assert err.status is not None and 400 <= err.status <= 599


@pytest.mark.parametrize(
    ("body", "kind", "status"),
    [
        ({"error": {"message": "bad"}, "status_code": 400}, ErrorKind.request, 400),
        ({"error": {"message": "slow down", "code": 429}}, ErrorKind.transient, 429),
        ({"error": {"message": "bad", "status_code": 404}}, ErrorKind.account, 404),
    ],
)
def test_an_in_band_error_status_still_decides(body: dict[str, Any], kind: ErrorKind, status: int) -> None:
    err = classify_error_body(body, provider="p", model="m")
    assert (err.kind, err.status) == (kind, status)


# --- Chat Completions: the choice index ---------------------------------------------------------------


@pytest.mark.parametrize("index", [None, "0", 0.0, [], {}])
def test_a_streamed_choice_whose_index_is_not_an_integer_is_the_answer(index: Any) -> None:
    d = OpenAIStreamDecoder(request=None, model="m", provider="openai")
    events = d.feed("", json.dumps({"choices": [{"index": index, "delta": {"content": "hello"}}]}))
    events += d.feed("", json.dumps({"choices": [{"index": index, "delta": {}, "finish_reason": "stop"}]}))
    events += d.feed("", "[DONE]")
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hello"]
    assert d.finish().content == "hello"


def test_a_second_choice_is_still_not_the_answer() -> None:
    d = OpenAIStreamDecoder(request=None, model="m", provider="openai")
    d.feed("", json.dumps({"choices": [{"index": 0, "delta": {"content": "first"}},
                                       {"index": 1, "delta": {"content": "second"}},
                                       {"index": 1.0, "delta": {"content": "second too"}}]}))
    d.feed("", "[DONE]")
    assert d.finish().content == "first"
