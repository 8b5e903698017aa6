"""Providers pointed at a FakeVendor, with a canary key, and small helpers to drive them."""

from __future__ import annotations

from collections.abc import Sequence

from agentactors.messages import LLMRequest, LLMResponse, Message, StreamEnd, StreamEvent, ToolChoice, ToolSpec
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.http.provider import HTTPProvider
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.testing.fakevendor import FakeVendor

WIRES = ("openai", "anthropic", "gemini")
MODELS = {"openai": "gpt-fake-1", "anthropic": "claude-fake-1", "gemini": "gemini-fake-1"}
# The canary: it must reach the FakeVendor only in a credential header, and nothing may echo it.
CANARY = "sk-canary-integration-5b2d8e0c47a94f16b3e1"

WEATHER = ToolSpec(
    "get_weather",
    "Weather for a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "enum": ["Paris", "Lisbon"]},
            "days": {"type": ["integer", "null"], "minimum": 1, "default": 1},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
)
TIME = ToolSpec("get_time", "Local time in a city.", {"type": "object", "properties": {"city": {"type": "string"}}})


def provider(wire: str, fv: FakeVendor, *, timeout: float | None = None) -> HTTPProvider:
    """The ``wire``'s provider, aimed at ``fv`` with the canary key."""
    if wire == "openai":
        return OpenAIProvider(MODELS[wire], api_key=CANARY, base_url=fv.openai_base_url,
                              carries_forced_tool_choice=True, timeout=timeout)
    if wire == "anthropic":
        return AnthropicProvider(MODELS[wire], api_key=CANARY, base_url=fv.base_url, timeout=timeout)
    return GeminiProvider(MODELS[wire], api_key=CANARY, base_url=fv.base_url, timeout=timeout)


def ask(text: str = "What is the capital of France?", *, tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice | None = None) -> LLMRequest:
    return LLMRequest([Message.system("Be brief."), Message.user(text)], tools=tuple(tools),
                      tool_choice=tool_choice or ToolChoice.auto(), max_tokens=256)


async def collect(p: HTTPProvider, request: LLMRequest) -> tuple[list[StreamEvent], LLMResponse]:
    """All events of a stream, and the response its StreamEnd carried."""
    events: list[StreamEvent] = []
    async with p.stream(request) as stream:
        async for event in stream:
            events.append(event)
    ends = [e for e in events if isinstance(e, StreamEnd)]
    assert len(ends) == 1 and events[-1] is ends[0], "a stream ends with exactly one StreamEnd"
    return events, ends[0].response
