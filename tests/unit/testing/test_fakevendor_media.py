"""The FakeVendor reads parts and settings on all three wires, and its strict mode rejects what the vendors reject.

Each rejected body mirrors a documented vendor rejection; each accepted one is what the codecs send (the
bodies of the documented-request conformance cases pass too: the last test).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agentactors.testing._fake_parse import WireRejection, parse_request
from agentactors.testing._fake_script import SeenPart
from tests.conformance.test_media_and_settings_requests import CASES

PNG64 = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 20).decode()
PDF64 = base64.b64encode(b"%PDF-1.4\n").decode()
HEADERS = {"anthropic-version": "2023-06-01"}


def parse(wire: str, body: dict[str, Any], *, strict: bool = True) -> Any:
    return parse_request(wire, body, HEADERS, path_model="m" if wire == "gemini" else None, path_stream=False,
                         strict=strict).conversation


def rejects(wire: str, body: dict[str, Any], match: str) -> None:
    with pytest.raises(WireRejection, match=match) as caught:
        parse(wire, body)
    assert caught.value.status == 400
    parse(wire, body, strict=False)  # lenient mode reads it anyway


def openai(content: Any, **fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": content}], **fields}


def anthropic(content: Any, **fields: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 8000, "messages": [{"role": "user", "content": content}], **fields}


def gemini(parts: Any, **fields: Any) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": parts}], **fields}


def test_openai_parts_and_settings_are_recorded() -> None:
    conv = parse("openai", openai([
        {"type": "text", "text": "Look"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
        {"type": "image_url", "image_url": {"url": "https://x.example/a.jpg"}},
        {"type": "file", "file": {"filename": "r.pdf", "file_data": f"data:application/pdf;base64,{PDF64}"}},
        {"type": "input_audio", "input_audio": {"data": PNG64, "format": "wav"}},
    ], temperature=0.5, top_p=0.9, stop="END", seed=3, reasoning_effort="low", prompt_cache_retention="24h"))
    assert conv.parts == (
        SeenPart("image", "image/png", "data", 28),
        SeenPart("image", None, "url", url="https://x.example/a.jpg"),
        SeenPart("document", "application/pdf", "data", 9, title="r.pdf"),
        SeenPart("audio", "audio/wav", "data", 28),
    )
    assert conv.settings == {"temperature": 0.5, "top_p": 0.9, "stop": ["END"], "seed": 3, "reasoning_effort": "low",
                             "cache_retention": "24h"}
    assert conv.last_user_text == "Look"


def test_openai_strict_rejections() -> None:
    rejects("openai", openai([{"type": "image", "url": "x"}]), "Supported values are")
    rejects("openai", openai([{"type": "image_url", "image_url": {"url": "ftp://x/a.png"}}]), "Invalid image URL")
    rejects("openai", openai([{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}]), "base64")
    rejects("openai", openai([{"type": "input_audio", "input_audio": {"data": PNG64, "format": "flac"}}]),
            "'wav' and 'mp3'")
    rejects("openai", openai([{"type": "file", "file": {"file_data": f"data:image/png;base64,{PNG64}"}}]),
            "only PDF files")
    rejects("openai", openai("hi", reasoning_effort="extreme"), "Supported values are: 'none'")
    rejects("openai", openai("hi", temperature=3), "temperature")
    rejects("openai", openai("hi", stop=["a", "b", "c", "d", "e"]), "maximum length 4")
    tool_with_image = {"model": "m", "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}}]}]}
    rejects("openai", tool_with_image, "tool messages support text content parts only")


def test_anthropic_parts_and_settings_are_recorded() -> None:
    conv = parse("anthropic", {
        "model": "m", "max_tokens": 8000, "thinking": {"type": "enabled", "budget_tokens": 2048},
        "output_config": {"effort": "high"}, "stop_sequences": ["END"], "top_p": 0.97,
        "system": [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "tools": [{"name": "f", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "messages": [
            {"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
                {"type": "document", "source": {"type": "url", "url": "https://x.example/r.pdf"}, "title": "R"},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hello"}},
                {"type": "text", "text": "Compare"}]},
            # Manual thinking on: the tool loop's first assistant message begins with a thinking block.
            {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "EmwKAhgB"},
                                              {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "chart"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}}]}]},
        ]})
    assert [(p.kind, p.source, p.role) for p in conv.parts] == [
        ("image", "data", "user"), ("document", "url", "user"), ("document", "data", "user"), ("image", "data", "tool")]
    assert conv.parts[1].title == "R" and conv.tool_results[0].content == "chart"
    assert conv.settings == {"thinking": "enabled", "thinking_budget": 2048, "reasoning_effort": "high",
                             "top_p": 0.97, "stop": ["END"], "parallel_tool_calls": False, "cache_breakpoints": 2,
                             "cache_retention": ["5m", "1h"]}


def test_anthropic_strict_rejections() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": PNG64}}
    rejects("anthropic", anthropic([image]), "Input should be 'image/jpeg'")
    big = base64.b64encode(b"\0" * (5 * 1024 * 1024 + 1)).decode()
    rejects("anthropic", anthropic([{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                 "data": big}}]), "exceeds 5 MB maximum")
    rejects("anthropic", anthropic([{"type": "document", "source": {"type": "file_uri", "uri": "x"}}]),
            "does not match any of the expected tags")
    thinking = {"type": "enabled", "budget_tokens": 2048}
    rejects("anthropic", anthropic("hi", thinking={"type": "enabled", "budget_tokens": 512}),
            "greater than or equal to 1024")
    rejects("anthropic", anthropic("hi", thinking=thinking) | {"max_tokens": 1500}, "must be greater than")
    rejects("anthropic", anthropic("hi", thinking=thinking, temperature=0.3), "may only be set to 1")
    rejects("anthropic", anthropic("hi", thinking={"type": "adaptive"}, top_k=5), "`top_k` must be unset")
    rejects("anthropic", anthropic("hi", thinking=thinking, top_p=0.5), "0.95")
    rejects("anthropic", anthropic("hi", temperature=1.5), "less than or equal to 1")
    for model in ("claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-opus-4-1-20250805", "claude-opus-4-6"):
        rejects("anthropic", anthropic("hi", temperature=0.5, top_p=0.9) | {"model": model}, "cannot both be specified")
    parse("anthropic", anthropic("hi", temperature=0.5, top_p=0.9) | {"model": "claude-sonnet-4-20250514"})
    rejects("anthropic", anthropic("hi", output_config={"effort": "minimal"}), "output_config.effort")
    marked = [{"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}} for i in range(5)]
    rejects("anthropic", anthropic(marked), "A maximum of 4 blocks with cache_control")
    forced = anthropic("hi", thinking={"type": "adaptive"}, tools=[{"name": "f", "input_schema": {}}],
                       tool_choice={"type": "any"})
    rejects("anthropic", forced, "Thinking may not be enabled when tool_choice forces tool use")


def test_gemini_parts_and_settings_are_recorded() -> None:
    conv = parse("gemini", gemini(
        [{"text": "Look"}, {"inlineData": {"mimeType": "image/png", "data": PNG64}},
         {"fileData": {"mimeType": "application/pdf", "fileUri": "https://x.example/r.pdf"}}],
        generationConfig={"temperature": 0.4, "topP": 0.8, "seed": 9, "stopSequences": ["END"],
                          "thinkingConfig": {"thinkingLevel": "low"}}))
    assert conv.parts == (SeenPart("image", "image/png", "data", 28),
                          SeenPart("document", "application/pdf", "url", url="https://x.example/r.pdf"))
    assert conv.settings == {"temperature": 0.4, "top_p": 0.8, "seed": 9, "stop": ["END"], "reasoning_effort": "low"}


def test_gemini_strict_rejections() -> None:
    rejects("gemini", gemini([{"inlineData": {"data": PNG64}}]), "a mime type is required")
    rejects("gemini", gemini([{"fileData": {"mimeType": "image/png"}}]), "a file URI is required")
    rejects("gemini", gemini([{"text": "hi"}], generationConfig={"thinkingConfig": {"thinkingLevel": "low",
                                                                                    "thinkingBudget": 10}}),
            "not supported together")
    rejects("gemini", gemini([{"text": "hi"}], generationConfig={"stopSequences": list("abcdef")}), "at most 5")
    rejects("gemini", gemini([{"text": "hi"}], generationConfig={"temperature": 2.5}), "temperature")


@pytest.mark.parametrize(("name", "codec", "model", "request_", "documented"), CASES, ids=[c[0] for c in CASES])
def test_the_documented_bodies_the_codecs_send_pass_strict_checks(
    name: str, codec: Any, model: str, request_: Any, documented: Any
) -> None:
    body = codec.encode_request(request_, model, stream=False)
    conv = parse(codec.wire, body)
    assert conv.message_count >= 1
