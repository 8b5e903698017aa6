"""Requests with content parts and model settings, against the vendors' own documented request bodies.

No recorded interaction in ``tests/corpus`` carries an image, a PDF, audio, a thinking budget, an effort or a
cache breakpoint, so these cases are HAND-MADE: each ``documented`` body below is the request example of the
vendor's documentation page named beside it (payloads shortened to a few bytes, URLs kept), and the codec's
body for the equivalent :class:`LLMRequest` must contain it (the codec may add fields the example leaves to
their defaults, such as ``stream``).  When a recording with these features exists, add it to the corpus and
round-trip it in the wire's ``test_*_corpus.py`` instead.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agentactors import Audio, CachePolicy, Document, Image, LLMRequest, Message, ModelSettings, Text, ToolSpec
from agentactors.providers.anthropic.provider import AnthropicWire
from agentactors.providers.codec import WireCodec
from agentactors.providers.gemini.provider import GeminiWire
from agentactors.providers.openai.provider import OpenAIWire

JPEG = b"\xff\xd8\xff\xe0" + b"\x10JFIF" + b"\x00" * 16
JPEG64 = base64.b64encode(JPEG).decode()
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
PDF64 = base64.b64encode(PDF).decode()
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 24
WAV64 = base64.b64encode(WAV).decode()
ANT_IMAGE = "https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg"
MODEL_CARD = "https://assets.anthropic.com/m/1cd9d098ac3e6467/original/Claude-3-Model-Card-October-Addendum.pdf"
OPENAI = OpenAIWire(max_tokens_field="max_completion_tokens", official=True)


def contains(actual: Any, expected: Any, where: str = "body") -> None:
    """``expected`` is in ``actual``: every key of a documented object present and equal, lists item by item."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{where}.{key} missing"
            contains(actual[key], value, f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{where}: {actual!r} != {expected!r}"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            contains(a, e, f"{where}[{i}]")
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


CASES: list[tuple[str, WireCodec, str, LLMRequest, dict[str, Any]]] = [
    (
        "OpenAI images and vision guide: image by URL",
        OPENAI, "gpt-4.1-mini",
        LLMRequest([Message.user([Text("What's in this image?"), Image(url=ANT_IMAGE)])]),
        {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "What's in this image?"},
            {"type": "image_url", "image_url": {"url": ANT_IMAGE}}]}]},
    ),
    (
        "OpenAI images and vision guide: a base64-encoded image",
        OPENAI, "gpt-4.1",
        LLMRequest([Message.user([Text("what's in this image?"), Image(data=JPEG)])]),
        {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "what's in this image?"},
            {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{JPEG64}"}}]}]},
    ),
    (
        "OpenAI file inputs guide (Chat Completions): a base64-encoded PDF",
        OPENAI, "gpt-5",
        LLMRequest([Message.user([Document(data=PDF, title="draconomicon.pdf"),
                                  Text("What is the first dragon in the book?")])]),
        {"model": "gpt-5", "messages": [{"role": "user", "content": [
            {"type": "file", "file": {"filename": "draconomicon.pdf",
                                      "file_data": f"data:application/pdf;base64,{PDF64}"}},
            {"type": "text", "text": "What is the first dragon in the book?"}]}]},
    ),
    (
        "OpenAI audio guide: audio input to a chat completion",
        OPENAI, "gpt-4o-audio-preview",
        LLMRequest([Message.user([Text("What is in this recording?"), Audio(WAV)])]),
        {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "What is in this recording?"},
            {"type": "input_audio", "input_audio": {"data": WAV64, "format": "wav"}}]}]},
    ),
    (
        "OpenAI reasoning guide (Chat Completions): reasoning_effort",
        OPENAI, "o4-mini",
        LLMRequest([Message.user("Write a bash script ...")],
                   **ModelSettings(reasoning_effort="medium").request_fields()),
        {"model": "o4-mini", "reasoning_effort": "medium",
         "messages": [{"role": "user", "content": "Write a bash script ..."}]},
    ),
    (
        "Anthropic extended thinking: budget_tokens",
        AnthropicWire(), "claude-sonnet-4-5",
        LLMRequest([Message.user("Are there an infinite number of prime numbers such that n mod 4 == 3?")],
                   **ModelSettings(max_tokens=16000, thinking_budget=10000).request_fields()),
        {"model": "claude-sonnet-4-5", "max_tokens": 16000, "thinking": {"type": "enabled", "budget_tokens": 10000},
         "messages": [{"role": "user", "content": [{"type": "text", "text": "Are there an infinite number of prime "
                                                                             "numbers such that n mod 4 == 3?"}]}]},
    ),
    (
        "Anthropic adaptive thinking with the effort parameter",
        AnthropicWire(), "claude-opus-4-6",
        LLMRequest([Message.user("Explain why the sum of two even numbers is always even.")],
                   **ModelSettings(max_tokens=16000, reasoning_effort="medium").request_fields()),
        {"model": "claude-opus-4-6", "max_tokens": 16000, "thinking": {"type": "adaptive"},
         "output_config": {"effort": "medium"}},
    ),
    (
        "Anthropic vision guide: base64 and URL image sources",
        AnthropicWire(), "claude-sonnet-4-5",
        LLMRequest([Message.user([Image(data=JPEG), Image(url=ANT_IMAGE), Text("Describe this image.")])],
                   max_tokens=1024),
        {"max_tokens": 1024, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": JPEG64}},
            {"type": "image", "source": {"type": "url", "url": ANT_IMAGE}},
            {"type": "text", "text": "Describe this image."}]}]},
    ),
    (
        "Anthropic PDF support: a URL-based and a base64 PDF document",
        AnthropicWire(), "claude-sonnet-4-5",
        LLMRequest([Message.user([Document(url=MODEL_CARD), Document(data=PDF),
                                  Text("What are the key findings in this document?")])], max_tokens=1024),
        {"messages": [{"role": "user", "content": [
            {"type": "document", "source": {"type": "url", "url": MODEL_CARD}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF64}},
            {"type": "text", "text": "What are the key findings in this document?"}]}]},
    ),
    (
        "Anthropic citations guide: a plain text document",
        AnthropicWire(), "claude-sonnet-4-5",
        LLMRequest([Message.user([Document(data="The grass is green. The sky is blue.", media_type="text/plain",
                                           title="My Document"), Text("What color is the grass and sky?")])]),
        {"messages": [{"role": "user", "content": [
            {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                            "data": "The grass is green. The sky is blue."}, "title": "My Document"},
            {"type": "text", "text": "What color is the grass and sky?"}]}]},
    ),
    (
        "Anthropic prompt caching: cache_control on the system prompt and the tools",
        AnthropicWire(), "claude-sonnet-4-5",
        LLMRequest([Message.system("You are an AI assistant tasked with analyzing literary works."),
                    Message.user("Analyze the major themes.")],
                   tools=[ToolSpec("get_weather", "Get the current weather in a given location",
                                   {"type": "object", "properties": {"location": {"type": "string"}},
                                    "required": ["location"]})],
                   cache=CachePolicy(conversation=False)),
        {"system": [{"type": "text", "text": "You are an AI assistant tasked with analyzing literary works.",
                     "cache_control": {"type": "ephemeral"}}],
         "tools": [{"name": "get_weather", "cache_control": {"type": "ephemeral"}}]},
    ),
    (
        "Gemini image understanding (REST): inline image data",
        GeminiWire(), "gemini-2.5-flash",
        LLMRequest([Message.user([Image(data=JPEG), Text("Caption this image.")])]),
        {"contents": [{"parts": [{"inlineData": {"mimeType": "image/jpeg", "data": JPEG64}},
                                 {"text": "Caption this image."}]}]},
    ),
    (
        "Gemini document understanding (REST): an inline PDF",
        GeminiWire(), "gemini-2.5-flash",
        LLMRequest([Message.user([Document(data=PDF), Text("Summarize this document")])]),
        {"contents": [{"parts": [{"inlineData": {"mimeType": "application/pdf", "data": PDF64}},
                                 {"text": "Summarize this document"}]}]},
    ),
    (
        "Gemini file input methods: an external URL in fileData",
        GeminiWire(), "gemini-3-flash-preview",
        LLMRequest([Message.user([Document(url=MODEL_CARD), Text("Summarize this document")])]),
        {"contents": [{"parts": [{"fileData": {"mimeType": "application/pdf", "fileUri": MODEL_CARD}},
                                 {"text": "Summarize this document"}]}]},
    ),
    (
        "Gemini thinking guide (REST): thinkingBudget on 2.5",
        GeminiWire(), "gemini-2.5-pro",
        LLMRequest([Message.user("Provide a list of 3 famous physicists and their key contributions")],
                   thinking_budget=1024),
        {"generationConfig": {"thinkingConfig": {"thinkingBudget": 1024}}},
    ),
    (
        "Gemini 3 developer guide (REST): thinkingLevel",
        GeminiWire(), "gemini-3-pro-preview",
        LLMRequest([Message.user("How does AI work?")], reasoning_effort="low"),
        {"generationConfig": {"thinkingConfig": {"thinkingLevel": "low"}}},
    ),
    (
        "Gemini text generation (REST): generationConfig sampling fields",
        GeminiWire(), "gemini-2.5-flash",
        LLMRequest([Message.user("Explain how AI works")],
                   **ModelSettings(stop="Title", temperature=1.0, top_p=0.8, max_tokens=800, seed=42).request_fields()),
        {"generationConfig": {"stopSequences": ["Title"], "temperature": 1.0, "maxOutputTokens": 800, "topP": 0.8,
                              "seed": 42}},
    ),
]


@pytest.mark.parametrize(("name", "codec", "model", "request_", "documented"), CASES, ids=[c[0] for c in CASES])
def test_the_codec_sends_the_vendors_documented_body(
    name: str, codec: WireCodec, model: str, request_: LLMRequest, documented: dict[str, Any]
) -> None:
    contains(codec.encode_request(request_, model, stream=False), documented)
