"""Every content part on each wire, against the vendors' documented content shapes; what a wire cannot carry.

Shapes: OpenAI's Chat Completions content parts (``image_url`` with a URL or a ``data:`` URL, ``file`` with
``file_data``, ``input_audio``), Anthropic's ``image`` / ``document`` blocks (``base64``, ``url`` and ``text``
sources) and Gemini's ``inlineData`` / ``fileData`` parts.  A part a wire or model cannot carry, and one over
the vendor's size limits, is an :class:`UnsupportedContentError` before anything is sent.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

import httpx
import pytest

from agentactors import Audio, Document, Image, LLMRequest, Message, Text, ToolCall, UnsupportedContentError
from agentactors.errors import ErrorKind
from agentactors.providers.anthropic.provider import AnthropicProvider, AnthropicWire
from agentactors.providers.codec import WireCodec
from agentactors.providers.gemini.provider import GeminiProvider, GeminiWire
from agentactors.providers.openai.provider import OpenAIProvider, OpenAIWire

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
PDF = b"%PDF-1.4\n<< /Type /Pages /Count 2 >>\n"
PNG64 = base64.b64encode(PNG).decode()
PDF64 = base64.b64encode(PDF).decode()
OPENAI = OpenAIWire(max_tokens_field="max_completion_tokens", official=True)
ANTHROPIC = AnthropicWire()
GEMINI = GeminiWire()


def wav() -> bytes:
    data = b"\x00" * 800
    fmt = struct.pack("<IHHIIHH", 16, 1, 1, 8000, 8000, 1, 8)
    size = struct.pack("<I", len(data))
    return b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + fmt + b"data" + size + data


WAV = wav()
WAV64 = base64.b64encode(WAV).decode()


def user(*parts: Any) -> LLMRequest:
    return LLMRequest([Message.user(list(parts))])


def content(codec: WireCodec, request: LLMRequest, model: str, index: int = -1) -> Any:
    body = codec.encode_request(request, model, stream=False)
    if codec.wire == "gemini":
        return body["contents"][index]["parts"]
    return body["messages"][index]["content"]


def cannot(codec: WireCodec, request: LLMRequest, model: str, match: str) -> UnsupportedContentError:
    with pytest.raises(UnsupportedContentError, match=match) as caught:
        codec.encode_request(request, model, stream=False)
    err = caught.value
    assert err.kind is ErrorKind.request and not err.retryable and err.model == model and err.part
    assert repr(model) in str(err)
    return err


# --- OpenAI -------------------------------------------------------------------------------------


def test_openai_parts() -> None:
    parts = content(OPENAI, user(Text("Compare"), Image(data=PNG), Image(url="https://x.example/b.jpg"),
                                 Document(data=PDF, title="q3.pdf"), Document(data="notes", media_type="text/plain",
                                                                              title="Notes")), "gpt-4.1")
    assert parts == [
        {"type": "text", "text": "Compare"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
        {"type": "image_url", "image_url": {"url": "https://x.example/b.jpg"}},
        {"type": "file", "file": {"filename": "q3.pdf", "file_data": f"data:application/pdf;base64,{PDF64}"}},
        {"type": "text", "text": "Notes\n\nnotes"},
    ]
    assert content(OPENAI, user(Text("Listen"), Audio(WAV)), "gpt-4o-audio-preview")[1] == {
        "type": "input_audio", "input_audio": {"data": WAV64, "format": "wav"}}
    assert content(OPENAI, user(Document(data=PDF)), "gpt-4.1")[0]["file"]["filename"] == "document.pdf"


def test_openai_what_a_model_or_the_wire_cannot_carry() -> None:
    cannot(OPENAI, user(Image(data=PNG)), "gpt-3.5-turbo", "takes no images")
    cannot(OPENAI, user(Image(data=PNG)), "o3-mini", "takes no images")
    cannot(OPENAI, user(Document(url="https://x.example/r.pdf")), "gpt-4.1", "takes no file URLs")
    cannot(OPENAI, user(Audio(WAV)), "gpt-4.1", "takes no audio input")
    cannot(OPENAI, user(Audio(b"fLaC" + b"\0" * 10)), "gpt-audio", "WAV or MP3 only")
    cannot(OPENAI, user(Image(data=b"\0\0\0\x18ftypheic" + b"\0" * 8)), "gpt-4.1", "PNG, JPEG, WEBP or GIF")
    cannot(OPENAI, user(Image(url="gs://bucket/a.png")), "gpt-4.1", "over http")
    big = Image(data=PNG + b"\0" * (40 * 1024 * 1024))
    cannot(OPENAI, LLMRequest([Message.user([big]), Message.user([big])]), "gpt-4.1", "over the 50 MB per-request")
    # a compatible server's limits are its own; an unknown model's abilities too
    assert content(OpenAIWire(), user(Audio(WAV), big), "llava")[0]["type"] == "input_audio"


def test_openai_media_a_tool_returned_follow_the_tool_messages_as_a_user_message() -> None:
    calls = [ToolCall("c1", "plot", {}), ToolCall("c2", "stats", {})]
    conversation = [
        Message.user("Plot it"),
        Message.assistant("", calls),
        Message.tool("c1", [Text("the chart"), Image(data=PNG)], "plot"),
        Message.tool("c2", "mean 3", "stats"),
        Message.user("and?"),
    ]
    messages = OPENAI.encode_request(LLMRequest(conversation), "gpt-4.1", stream=False)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user", "user"]
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": "the chart"}
    assert messages[4]["content"] == [
        {"type": "text", "text": "Media returned by tool call c1:"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
    ]


# --- Anthropic ----------------------------------------------------------------------------------


def test_anthropic_parts() -> None:
    blocks = content(ANTHROPIC, user(Text("Compare"), Image(data=PNG), Image(url="https://x.example/b.jpg"),
                                     Document(data=PDF, title="Q3"), Document(url="https://x.example/r.pdf"),
                                     Document(data="notes", media_type="text/markdown")), "claude-sonnet-4-5")
    assert blocks == [
        {"type": "text", "text": "Compare"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
        {"type": "image", "source": {"type": "url", "url": "https://x.example/b.jpg"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF64},
         "title": "Q3"},
        {"type": "document", "source": {"type": "url", "url": "https://x.example/r.pdf"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}},
    ]


def test_anthropic_a_tool_result_carries_its_media() -> None:
    conversation = [Message.user("Plot"), Message.assistant("", [ToolCall("c1", "plot", {})]),
                    Message.tool("c1", [Text("the chart"), Image(data=PNG)], "plot")]
    (result,) = content(ANTHROPIC, LLMRequest(conversation), "claude-sonnet-4-5")
    assert result == {
        "type": "tool_result", "tool_use_id": "c1", "is_error": False,
        "content": [{"type": "text", "text": "the chart"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}}],
    }


def test_anthropic_what_a_model_or_the_wire_cannot_carry() -> None:
    cannot(ANTHROPIC, user(Audio(WAV)), "claude-sonnet-4-5", "takes no audio input")
    cannot(ANTHROPIC, user(Image(data=PNG)), "claude-2.1", "takes no images or documents")
    cannot(ANTHROPIC, user(Image(data=b"\0\0\0\x18ftypheic" + b"\0" * 8)), "claude-sonnet-4-5", "JPEG, PNG, GIF")
    err = cannot(ANTHROPIC, user(Image(data=PNG + b"\0" * (6 * 1024 * 1024))), "claude-sonnet-4-5",
                 "over the 5 MB per-image limit")
    assert err.part == "Image(image/png, 6.0 MB)"
    # The 5 MB is the base64 text's (a 4 MiB image is 5.3 MiB of it), as Anthropic measures it.
    cannot(ANTHROPIC, user(Image(data=PNG + b"\0" * (4 * 1024 * 1024))), "claude-sonnet-4-5",
           r"as base64 \(the size the vendor measures\), over the 5 MB per-image limit")
    many = [Image(data=PNG + b"\0" * (3 * 1024 * 1024)) for _ in range(9)]
    cannot(ANTHROPIC, user(*many), "claude-sonnet-4-5", "over the 32 MB per-request limit")
    cannot(ANTHROPIC, user(Document(url="gs://b/r.pdf")), "claude-sonnet-4-5", "over http")


# --- Gemini -------------------------------------------------------------------------------------


def test_gemini_parts() -> None:
    parts = content(GEMINI, user(Text("Compare"), Image(data=PNG), Document(data=PDF), Audio(b"ID3" + b"\0" * 20),
                                 Document(url="https://generativelanguage.googleapis.com/v1beta/files/abc"),
                                 Image(url="https://x.example/b.jpg")), "gemini-2.5-flash")
    mp3 = base64.b64encode(b"ID3" + b"\0" * 20).decode()
    assert parts == [
        {"text": "Compare"},
        {"inlineData": {"mimeType": "image/png", "data": PNG64}},
        {"inlineData": {"mimeType": "application/pdf", "data": PDF64}},
        {"inlineData": {"mimeType": "audio/mp3", "data": mp3}},
        {"fileData": {"mimeType": "application/pdf", "fileUri": "https://generativelanguage.googleapis.com/v1beta/"
                                                                 "files/abc"}},
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://x.example/b.jpg"}},
    ]


def test_gemini_media_a_tool_returned_follow_the_function_responses() -> None:
    calls = [ToolCall("c1", "plot", {}), ToolCall("c2", "stats", {})]
    conversation = [Message.user("Plot"), Message.assistant("", calls),
                    Message.tool("c1", [Text("the chart"), Image(data=PNG)], "plot"), Message.tool("c2", "3", "stats")]
    parts = content(GEMINI, LLMRequest(conversation), "gemini-2.5-flash")
    assert [next(iter(p)) for p in parts] == ["functionResponse", "functionResponse", "inlineData"]
    assert parts[0]["functionResponse"]["response"] == {"return_value": "the chart"}


def test_gemini_what_a_model_or_the_wire_cannot_carry() -> None:
    cannot(GEMINI, user(Image(data=PNG)), "gemini-1.0-pro", "text only")
    cannot(GEMINI, user(Image(url="https://x.example/photo")), "gemini-2.5-flash", "needs a media type")
    assert content(GEMINI, user(Image(url="https://x.example/photo", media_type="image/png")), "gemini-2.5-flash")
    cannot(GEMINI, user(Image(url="https://x.example/a.png")), "gemini-2.0-flash", "fetches no external URLs")
    assert content(GEMINI, user(Image(url="gs://bucket/a.png")), "gemini-2.0-flash")  # its own storage it reads
    cannot(GEMINI, user(Image(data=b"GIF89a" + b"\0" * 9)), "gemini-2.5-flash", "PNG, JPEG, WEBP, HEIC")
    cannot(GEMINI, user(Document(data=b"%PDF-1.4\n" + b"\0" * (51 * 1024 * 1024))), "gemini-2.5-pro",
           "over the 50 MB per-document limit")


# --- nothing is sent when a part is refused -----------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("make", "model", "part"),
    [
        (OpenAIProvider, "gpt-4.1", Audio(WAV)),
        (AnthropicProvider, "claude-sonnet-4-5", Audio(WAV)),
        (AnthropicProvider, "claude-sonnet-4-5", Image(data=PNG + b"\0" * (6 * 1024 * 1024))),
        (GeminiProvider, "gemini-1.0-pro", Image(data=PNG)),
    ],
)
async def test_a_part_a_model_cannot_carry_is_refused_before_anything_is_sent(make: Any, model: str, part: Any) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        p = make(model, api_key="sk-test-parts-0123456789", http_client=client)
        with pytest.raises(UnsupportedContentError):
            await p.complete(user(Text("look"), part))
        with pytest.raises(UnsupportedContentError):
            p.stream(user(part))
    assert sent == []
