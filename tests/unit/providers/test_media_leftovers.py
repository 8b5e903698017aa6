"""An empty document (no bytes, an empty text) on the wires whose vendors refuse one with a 400: Bedrock's Converse
(``DocumentSource.bytes``: at least 1 byte) and Gemini (``Blob.data``: required — an empty one is unset).  Refused
before anything is sent, as an :class:`UnsupportedContentError` naming the part; the other wires still carry it (a
Document of empty text is built on purpose: tests/unit/test_value_types_hostile.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agentactors import (
    AnthropicProvider,
    BedrockProvider,
    Document,
    GeminiProvider,
    LLMRequest,
    Message,
    OpenAIProvider,
    Text,
    UnsupportedContentError,
)
from agentactors.errors import ErrorKind

KEY = "sk-test-empty-doc-0123456789"
OK = {
    "bedrock": {"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}}, "stopReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 1}},
    "gemini": {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}},
    "anthropic": {"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                  "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                  "usage": {"input_tokens": 1, "output_tokens": 1}},
    "openai": {"id": "c", "object": "chat.completion", "model": "gpt-4.1",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
}


def _make(wire: str, client: httpx.AsyncClient) -> Any:
    if wire == "bedrock":
        return BedrockProvider("us.amazon.nova-pro-v1:0", region="us-east-1", access_key_id="AKIDEXAMPLE",
                               secret_access_key="secret-empty-doc", http_client=client)
    if wire == "gemini":
        return GeminiProvider("gemini-2.5-flash", api_key=KEY, http_client=client)
    if wire == "anthropic":
        return AnthropicProvider("claude-sonnet-4-5", api_key=KEY, http_client=client)
    return OpenAIProvider("gpt-4.1", api_key=KEY, http_client=client)


def _ask(document: Document) -> LLMRequest:
    return LLMRequest([Message.user([Text("summarise it"), document])])


EMPTY = [Document(data="", media_type="text/plain"), Document(data=b"", media_type="text/markdown", title="notes")]


@pytest.mark.anyio
@pytest.mark.parametrize("wire", ["bedrock", "gemini"])
@pytest.mark.parametrize("document", EMPTY)
async def test_an_empty_document_is_refused_before_anything_is_sent_where_the_vendor_400s(
    wire: str, document: Document, anyio_backend: Any
) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=OK[wire])

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        p = _make(wire, client)
        with pytest.raises(UnsupportedContentError) as caught:
            await p.complete(_ask(document))
        with pytest.raises(UnsupportedContentError):
            p.stream(_ask(document))
    error = caught.value
    assert sent == []
    assert error.kind is ErrorKind.request and not error.retryable and "empty" in str(error)
    assert error.part is not None and "0 B" in error.part


@pytest.mark.anyio
@pytest.mark.parametrize("wire", ["anthropic", "openai"])
async def test_the_other_wires_still_carry_an_empty_text_document(wire: str, anyio_backend: Any) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=OK[wire])

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        answer = await _make(wire, client).complete(_ask(EMPTY[0]))
    assert answer.content == "ok" and len(sent) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("wire", ["bedrock", "gemini"])
async def test_a_document_of_one_byte_is_still_sent(wire: str, anyio_backend: Any) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=OK[wire])

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        answer = await _make(wire, client).complete(_ask(Document(data="x", media_type="text/plain")))
    assert answer.content == "ok" and len(sent) == 1
