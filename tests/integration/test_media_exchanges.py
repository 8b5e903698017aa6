"""Images, PDFs and settings over loopback on each wire, JSON and streamed; bad input stops before sending.

The FakeVendor (strict: it rejects what the vendor rejects) records the parts and settings it was sent, so
these tests see what reached the wire.  Real clock, real sockets, both backends.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from agentactors import (
    Agent,
    Audio,
    Document,
    Image,
    InMemoryRecorder,
    JsonlRecorder,
    Message,
    ModelSettings,
    ProviderError,
    Runtime,
    Text,
    UnsupportedContentError,
    UnsupportedSettingError,
    tool,
)
from agentactors.parts import Part
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.http.provider import HTTPProvider
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.testing import SeenPart
from agentactors.testing.fakevendor import FakeReply, FakeToolCall, FakeVendor
from tests.support.providers import CANARY, WIRES, provider

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("wire", WIRES)]

PNG = b"\x89PNG\r\n\x1a\n" + b"PIXELS-NOT-FOR-RECORDS" * 10
PDF = b"%PDF-1.4\n1 0 obj << /Type /Pages /Count 2 >> endobj\n" + b"PAGES-NOT-FOR-RECORDS" * 5
PROMPT: list[Part] = [
    Text("Compare the chart with the report."), Image(data=PNG), Document(data=PDF, title="report.pdf")
]


def named(wire: str, fv: FakeVendor, model: str, **kw: Any) -> HTTPProvider:
    """The wire's provider for a real model name (the FakeVendor answers any)."""
    if wire == "openai":
        return OpenAIProvider(model, api_key=CANARY, base_url=fv.openai_base_url, **kw)
    if wire == "anthropic":
        return AnthropicProvider(model, api_key=CANARY, base_url=fv.base_url, **kw)
    return GeminiProvider(model, api_key=CANARY, base_url=fv.base_url, **kw)


def media(parts: tuple[SeenPart, ...]) -> list[tuple[str, str | None, str, int | None]]:
    return [(p.kind, p.media_type, p.source, p.size) for p in parts]


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
async def test_a_run_with_an_image_and_a_pdf(fake_vendor: FakeVendor, wire: str, streamed: bool) -> None:
    fake_vendor.script(FakeReply(text="The chart matches page 2."))
    tokens: list[str] = []
    agent = Agent(provider(wire, fake_vendor), system="Be brief.")
    async with Runtime():
        result = await agent.run(Message.user(PROMPT), on_token=tokens.append if streamed else None)
    assert result.error is None and result.content == "The chart matches page 2."
    assert ("".join(tokens) == result.content) if streamed else not tokens
    (record,) = fake_vendor.requests
    assert record.outcome == "ok" and record.stream is streamed and record.conversation is not None
    expected_pdf = "application/pdf"
    assert media(record.conversation.parts) == [("image", "image/png", "data", len(PNG)),
                                                 ("document", expected_pdf, "data", len(PDF))]
    assert "Compare the chart with the report." in record.conversation.last_user_text
    if wire != "gemini":  # Gemini has no field for a document's title
        assert record.conversation.parts[1].title == "report.pdf"
    assert result.messages[0].media == (PROMPT[1], PROMPT[2])


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
async def test_settings_reach_the_wire(fake_vendor: FakeVendor, wire: str, streamed: bool) -> None:
    fake_vendor.script(FakeReply(text="ok"))
    # Claude Sonnet 4 takes temperature and top_p together (Haiku 4.5 takes one of them: docs/settings.md)
    agent = Agent(named(wire, fake_vendor, {"openai": "gpt-4.1", "anthropic": "claude-sonnet-4-20250514",
                                            "gemini": "gemini-2.5-flash"}[wire],
                        settings=ModelSettings(seed=4)),
                  settings=ModelSettings(temperature=0.3, top_p=0.9, max_tokens=300, stop=("END",)))
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]):
        result = await agent.run("Hi", settings=ModelSettings(temperature=0.6), on_token=(lambda _: None)
                                 if streamed else None)
    assert result.error is None
    (record,) = fake_vendor.requests
    assert record.conversation is not None
    seen = record.conversation.settings
    # the run's temperature over the agent's; the agent's other fields; the provider's seed under both
    assert seen["temperature"] == 0.6 and seen["top_p"] == 0.9 and seen["stop"] == ["END"]
    assert record.conversation.max_tokens == 300
    if wire == "anthropic":
        assert "seed" not in seen  # the Messages API has no seed: dropped, and said so
        (drop,) = [e for e in recorder.events if e.type == "llm.setting_dropped"]
        assert (drop.setting, drop.wire, drop.run_id) == ("seed", "anthropic", result.run_id)
    else:
        assert seen["seed"] == 4


async def test_thinking_settings_reach_the_wire(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(FakeReply(text="42"))
    model = {"openai": "o4-mini", "anthropic": "claude-opus-4-6", "gemini": "gemini-3-pro-preview"}[wire]
    async with named(wire, fake_vendor, model) as vendor:  # a run without a Runtime leaves closing to us
        result = await Agent(vendor, settings=ModelSettings(reasoning_effort="high")).run("Think.")
    assert result.error is None
    (record,) = fake_vendor.requests
    assert record.conversation is not None
    assert record.conversation.settings["reasoning_effort"] == "high"
    if wire == "anthropic":
        assert record.conversation.settings["thinking"] == "adaptive"


async def test_a_tool_that_returns_an_image_sends_it_back(fake_vendor: FakeVendor, wire: str) -> None:
    @tool
    async def chart() -> list[Any]:
        """Draw the chart."""
        return [Text("the chart"), Image(data=PNG)]

    fake_vendor.script(FakeToolCall("chart", {}), FakeReply(text="It rises."))
    async with provider(wire, fake_vendor) as vendor:  # a run without a Runtime leaves closing to us
        result = await Agent(vendor, tools=[chart]).run("Show me the chart")
    assert result.error is None and result.content == "It rises."
    _, second = fake_vendor.requests
    assert second.outcome == "ok" and second.conversation is not None
    # OpenAI's tool messages take text only: the image follows them in a user message
    role = "user" if wire == "openai" else "tool"
    assert [(p.kind, p.size, p.role) for p in second.conversation.parts] == [("image", len(PNG), role)]
    (result_seen,) = second.conversation.tool_results
    assert result_seen.content == "the chart"
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert tool_message.content == "the chart" and len(tool_message.media) == 1


async def test_bad_input_is_a_typed_error_before_anything_is_sent(fake_vendor: FakeVendor, wire: str) -> None:
    audio = Audio(b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 64)
    cases: list[tuple[HTTPProvider, Any, ModelSettings | None, type[ProviderError]]] = [
        # an unsupported part: no Claude or GPT-4.1 hears audio; Gemini 1.0 Pro sees nothing
        (named(wire, fake_vendor, {"openai": "gpt-4.1", "anthropic": "claude-sonnet-4-5",
                                   "gemini": "gemini-1.0-pro"}[wire]),
         Message.user([Text("Listen"), audio if wire != "gemini" else Image(data=PNG)]), None,
         UnsupportedContentError),
        # a setting the model cannot carry: a thinking budget for a model that does not think
        (named(wire, fake_vendor, {"openai": "gpt-4.1", "anthropic": "claude-3-5-haiku-latest",
                                   "gemini": "gemini-2.0-flash"}[wire]),
         "Think hard", ModelSettings(thinking_budget=2048), UnsupportedSettingError),
    ]
    if wire != "openai":  # OpenAI's limits are checked against its own endpoint only
        big = Image(data=PNG + b"\0" * ((6 if wire == "anthropic" else 76) * 1024 * 1024))
        cases.append((named(wire, fake_vendor, {"anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash"}[wire]),
                      Message.user([big]), None, UnsupportedContentError))
    for p, prompt, settings, error in cases:
        result = await Agent(p).run(prompt, settings=settings)
        assert result.generation_failed and isinstance(result.error, error), (wire, result.error)
        assert result.error.kind.value == "request"
    assert fake_vendor.requests == ()


async def test_payloads_stay_out_of_events_the_jsonl_record_and_errors(
    fake_vendor: FakeVendor, wire: str, tmp_path: Any
) -> None:
    fake_vendor.script(FakeReply(text="seen"))
    path = tmp_path / "events.jsonl"
    recorder = InMemoryRecorder()
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[recorder, jsonl]):
            ok = await Agent(provider(wire, fake_vendor)).run(Message.user(PROMPT))
            bad = await Agent(named(wire, fake_vendor, "claude-2.1" if wire == "anthropic" else
                                    ("gpt-3.5-turbo" if wire == "openai" else "gemini-1.0-pro"))).run(
                Message.user(PROMPT))
    assert ok.error is None and isinstance(bad.error, UnsupportedContentError)
    record = path.read_text()
    texts = [record, repr(recorder.events), str(bad.error), repr(bad.error), repr(ok), repr(ok.messages)]
    for payload in (PNG, PDF):
        encoded = base64.b64encode(payload).decode()
        for text in texts:
            assert encoded[:24] not in text and "NOT-FOR-RECORDS" not in text
    lines = [json.loads(line) for line in record.splitlines()]
    request = next(e for e in lines if e["type"] == "llm.request")
    image = request["request"]["messages"][0]["_parts"][1]
    assert image["data"] == {"omitted_bytes": len(PNG)} and image["media_type"] == "image/png"
