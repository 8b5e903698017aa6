"""The byte limits (``max_response_bytes``, ``max_sse_line_bytes``, ``max_event_bytes``) are keyword arguments of
every HTTP provider, as docs/reliability.md says — ``OpenAIResponsesProvider`` and ``AzureOpenAIProvider`` (both
wires) included — and a small one ends an oversized answer with ``ResponseTooLargeError`` through each."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from agentactors import (
    AnthropicProvider,
    AzureOpenAIProvider,
    BedrockProvider,
    GeminiProvider,
    OpenAIProvider,
    OpenAIResponsesProvider,
)
from agentactors.errors import ResponseTooLargeError, StreamInterruptedError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.http.provider import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SSE_LINE_BYTES,
    HTTPProvider,
)
from agentactors.testing import FakeReply, FakeVendor

pytestmark = pytest.mark.anyio

LIMITS = {"max_response_bytes": 5001, "max_sse_line_bytes": 5002, "max_event_bytes": 5003}
URL = "http://127.0.0.1:9"


def token() -> str:
    return "ya29.cloud-fix-token-000000"


BUILDERS: dict[str, Callable[..., HTTPProvider]] = {
    "openai": lambda **kw: OpenAIProvider("gpt-4o", api_key="sk-cloudfix-000000", base_url=URL, **kw),
    "openai-responses": lambda **kw: OpenAIResponsesProvider("gpt-4.1", api_key="sk-cloudfix-000000", base_url=URL,
                                                             **kw),
    "anthropic": lambda **kw: AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant-cloudfix-0", base_url=URL, **kw),
    "anthropic.vertex": lambda **kw: AnthropicProvider.vertex("claude-sonnet-4-5@20250929", project="p",
                                                              token_provider=token, base_url=URL, **kw),
    "gemini": lambda **kw: GeminiProvider("gemini-2.5-flash", api_key="AIzaCloudFix000000", base_url=URL, **kw),
    "gemini.vertex": lambda **kw: GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=token,
                                                        base_url=URL, **kw),
    "bedrock": lambda **kw: BedrockProvider("amazon.nova-micro-v1:0", region="us-east-1",
                                            access_key_id="AKIACLOUDFIX00000001",
                                            secret_access_key="cloudFix/Secret/000000000000000", base_url=URL, **kw),
    "azure chat": lambda **kw: AzureOpenAIProvider("dep", endpoint=URL, api_key="azure-cloudfix-0", model="gpt-4o",
                                                   **kw),
    "azure responses": lambda **kw: AzureOpenAIProvider("dep", endpoint=URL, api_key="azure-cloudfix-0",
                                                        model="gpt-4.1", api="responses", **kw),
}


@pytest.mark.parametrize("which", sorted(BUILDERS))
def test_every_http_provider_takes_the_three_byte_limits(which: str) -> None:
    p = BUILDERS[which](**LIMITS)
    assert (p.limits.max_response_bytes, p.limits.max_sse_line_bytes, p.limits.max_event_bytes) == (5001, 5002, 5003)


@pytest.mark.parametrize("which", sorted(BUILDERS))
def test_a_limit_that_cannot_be_is_refused_by_every_http_provider(which: str) -> None:
    with pytest.raises(ValueError):
        BUILDERS[which](max_response_bytes=0)


@pytest.fixture
async def fv() -> AsyncIterator[FakeVendor]:
    async with FakeVendor() as vendor:
        yield vendor


def on_fake(fv: FakeVendor, which: str, limit: str, value: int) -> HTTPProvider:
    """``which`` against the FakeVendor, with ``limit`` (one of the three keywords) at ``value``."""
    limits = {"max_response_bytes": DEFAULT_MAX_RESPONSE_BYTES, "max_sse_line_bytes": DEFAULT_MAX_SSE_LINE_BYTES,
              "max_event_bytes": DEFAULT_MAX_EVENT_BYTES}
    limits[limit] = value
    response, line, event = limits["max_response_bytes"], limits["max_sse_line_bytes"], limits["max_event_bytes"]
    if which == "openai-responses":
        return OpenAIResponsesProvider("gpt-4.1", api_key="sk-cloudfix-000000", base_url=fv.openai_base_url,
                                       max_response_bytes=response, max_sse_line_bytes=line, max_event_bytes=event)
    return AzureOpenAIProvider("dep", endpoint=fv.base_url, api_key="azure-cloudfix-0", model="gpt-4.1",
                               api="responses" if which == "azure responses" else "chat",
                               max_response_bytes=response, max_sse_line_bytes=line, max_event_bytes=event)


NEW = ["openai-responses", "azure chat", "azure responses"]


@pytest.mark.parametrize("which", NEW)
async def test_a_small_max_response_bytes_ends_a_large_answer(fv: FakeVendor, which: str) -> None:
    fv.script(FakeReply(text="word " * 4000))
    p = on_fake(fv, which, "max_response_bytes", 2000)
    with pytest.raises(ResponseTooLargeError) as caught:
        await p.complete(LLMRequest([Message.user("hi")]))
    assert (caught.value.limit, caught.value.limit_bytes) == ("max_response_bytes", 2000)
    await p.aclose()


@pytest.mark.parametrize("which", NEW)
@pytest.mark.parametrize("limit", ["max_response_bytes", "max_sse_line_bytes", "max_event_bytes"])
async def test_each_limit_ends_a_large_stream(fv: FakeVendor, which: str, limit: str) -> None:
    # 20 000 characters of answer; the chat wire streams them in small deltas, each event under 2000 bytes but
    # none under 50 bytes.
    bound = 2000 if limit == "max_response_bytes" else 50
    fv.script(FakeReply(text="word " * 4000))
    p = on_fake(fv, which, limit, bound)
    with pytest.raises((ResponseTooLargeError, StreamInterruptedError)) as caught:
        async with p.stream(LLMRequest([Message.user("hi")])) as events:
            async for _ in events:
                pass
    err = caught.value
    too_large = err if isinstance(err, ResponseTooLargeError) else err.__cause__
    assert isinstance(too_large, ResponseTooLargeError), err
    assert (too_large.limit, too_large.limit_bytes) == (limit, bound)
    await p.aclose()
