"""Claude on Bedrock: a setting refused or dropped by Claude's rules is Bedrock's, not the Anthropic wire's.

The Converse encoder plans Claude's thinking and sampling with the Anthropic wire's own table
(``docs/wire.md``, Bedrock "Settings"), but the request goes to Bedrock: an error or an ``llm.setting_dropped``
event that says ``anthropic`` sends a reader (and anything keyed on ``ProviderError.provider`` or an event's
``wire``) to the wrong vendor.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from agentactors.errors import UnsupportedSettingError
from agentactors.events import EventSink, InMemoryRecorder, use_sink
from agentactors.messages import LLMRequest, Message
from agentactors.providers.bedrock import encode_request
from agentactors.providers.bedrock.provider import BedrockProvider

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
CLAUDE_37 = "anthropic.claude-3-7-sonnet-20250219-v1:0"

pytestmark = pytest.mark.anyio


@contextmanager
def capture() -> Iterator[list[Any]]:
    """The ``llm.setting_dropped`` events left while inside."""
    recorder = InMemoryRecorder()
    dropped: list[Any] = []
    with use_sink(EventSink([recorder], run_id="run-t")):
        yield dropped
    dropped.extend(e for e in recorder.events if e.type == "llm.setting_dropped")


@pytest.mark.parametrize(
    ("settings", "setting"),
    [
        ({"temperature": 1.5}, "temperature"),
        ({"temperature": 0.5, "thinking_budget": 2000, "max_tokens": 5000}, "temperature"),
        ({"temperature": 0.5, "top_p": 0.5}, "top_p"),
        ({"thinking_budget": 500, "max_tokens": 5000}, "thinking_budget"),
        ({"thinking_budget": 2000, "max_tokens": 1000}, "thinking_budget"),
    ],
)
def test_a_claude_setting_refused_on_bedrock_names_bedrock(settings: dict[str, Any], setting: str) -> None:
    request = LLMRequest(messages=[Message.user("hi")], **settings)
    with pytest.raises(UnsupportedSettingError) as info:
        encode_request(request, CLAUDE, stream=False)
    assert info.value.provider == "bedrock"
    assert info.value.setting == setting
    assert str(info.value).startswith(f"bedrock/{CLAUDE} ")


def test_a_claude_setting_dropped_on_bedrock_is_a_bedrock_event() -> None:
    request = LLMRequest(messages=[Message.user("hi")], reasoning_effort="low", max_tokens=1000)
    with capture() as dropped:
        body = encode_request(request, CLAUDE_37, stream=False)
    assert "additionalModelRequestFields" not in body
    assert [(e.data["wire"], e.data["setting"]) for e in dropped] == [("bedrock", "reasoning_effort")]


async def test_the_provider_raises_it_as_bedrock_before_sending() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = BedrockProvider(
            CLAUDE, region="us-east-1", access_key_id="AKIDEXAMPLE", secret_access_key="secret",
            http_client=client,
        )
        with pytest.raises(UnsupportedSettingError) as info:
            await provider.complete(LLMRequest(messages=[Message.user("hi")], temperature=1.5))
    assert info.value.provider == "bedrock"
    assert sent == []
