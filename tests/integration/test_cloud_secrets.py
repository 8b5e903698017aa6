"""No credential of a cloud endpoint leaks: API keys, bearer tokens, AWS secret keys, session tokens and request
signatures stay out of every error (message, repr, body excerpt, cause chain), event, JSONL record, log line and
repr — for each new provider, against the FakeVendor answering with errors that echo them back, streamed and not.
Real sockets, both backends."""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentactors import (
    Agent,
    AnthropicProvider,
    AzureOpenAIProvider,
    BedrockProvider,
    GeminiProvider,
    InMemoryRecorder,
    JsonlRecorder,
    OpenAIResponsesProvider,
    ProviderError,
)
from agentactors.events import event_to_dict
from agentactors.messages import LLMRequest, Message
from agentactors.providers.http.provider import HTTPProvider
from agentactors.testing.fakevendor import FakeError, FakeVendor

pytestmark = pytest.mark.anyio

# Each provider's own credentials (the registry of secrets is process-wide: one provider's registration must
# not make another's test pass).
KEY = "sk-cloudsecret-key-7f3a9c1e5b2d4086-{}"
TOKEN = "ya29.cloudsecret-token-4c8e2a6f0b1d3957-{}"
KEY_ID = "AKIDCLOUDSECRET00001"
SECRET = "cloudSecret/Access+Key/9b7d5f3e1a2c4e6f8a0b"
SESSION = "FwoGZXIvYXdzCLOUDSECRETSESSION0123456789abcdef"
PROVIDERS = ("responses", "azure-key", "azure-token", "bedrock", "gemini-vertex", "anthropic-vertex")


def secrets_of(name: str) -> tuple[str, ...]:
    if name == "bedrock":
        return SECRET, SESSION
    return (KEY.format(name),) if name in ("responses", "azure-key") else (TOKEN.format(name),)


def make(name: str, fv: FakeVendor, client: httpx.AsyncClient) -> HTTPProvider:
    key, token = KEY.format(name), TOKEN.format(name)
    if name == "responses":
        return OpenAIResponsesProvider("gpt-4o", api_key=key, base_url=fv.openai_base_url, http_client=client)
    if name == "azure-key":
        return AzureOpenAIProvider("prod-4o", endpoint=fv.base_url, api_key=key, model="gpt-4o", http_client=client)
    if name == "azure-token":
        return AzureOpenAIProvider("prod-4o", endpoint=fv.base_url, token_provider=lambda: token, model="gpt-4o",
                                   api="responses", http_client=client)
    if name == "bedrock":
        return BedrockProvider("us.amazon.nova-pro-v1:0", region="us-east-1", access_key_id=KEY_ID,
                               secret_access_key=SECRET, session_token=SESSION, base_url=fv.base_url,
                               http_client=client)
    if name == "gemini-vertex":
        return GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=lambda: token,
                                     base_url=fv.base_url, http_client=client)
    return AnthropicProvider.vertex("claude-sonnet-4-5", project="p", token_provider=lambda: token,
                                    base_url=fv.base_url, http_client=client)


def _chain(error: BaseException) -> str:
    """The error as a traceback prints it: every ``__cause__`` and ``__context__`` with it."""
    return "".join(traceback.format_exception(error))


class _SentCredentials:
    """An httpx request hook keeping what each request carried as a credential (the signature included)."""

    def __init__(self) -> None:
        self.values: set[str] = set()

    async def __call__(self, request: httpx.Request) -> None:
        for name in ("authorization", "api-key", "x-amz-security-token"):
            value = request.headers.get(name)
            if value:
                self.values.add(value.split("Signature=")[-1] if "Signature=" in value else value.split()[-1])


@pytest.mark.parametrize("provider_name", PROVIDERS)
async def test_no_credential_reaches_an_error_an_event_a_record_a_log_or_a_repr(
    fake_vendor: FakeVendor, provider_name: str, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    sent = _SentCredentials()
    # A vendor echoing every credential back (some do: in a 401's message, in a debug field).
    echo = " ".join(secrets_of(provider_name))
    fake_vendor.script(FakeError(400, message=f"denied {echo}"), FakeError(403, message=f"forbidden {echo}"),
                       FakeError(400, message=f"bad {echo}"))
    caplog.set_level(logging.DEBUG)
    memory = InMemoryRecorder()
    record = tmp_path / "events.jsonl"
    errors: list[BaseException] = []
    async with httpx.AsyncClient(event_hooks={"request": [sent]}) as client:
        provider = make(provider_name, fake_vendor, client)
        with pytest.raises(ProviderError) as info:
            await provider.complete(LLMRequest([Message.user("hi")]))
        errors.append(info.value)
        with pytest.raises(ProviderError) as info:
            async with provider.stream(LLMRequest([Message.user("hi")])) as events:
                [e async for e in events]
        errors.append(info.value)
        with JsonlRecorder(record) as jsonl:
            result = await Agent(provider, recorders=[memory, jsonl]).run("hi")
        assert result.error is not None
        errors.append(result.error)
        shown = [repr(provider), str(provider)]
    assert sent.values and len(fake_vendor.requests) == 3
    for error in errors:
        assert "denied" in str(error) or "forbidden" in str(error) or "bad" in str(error)  # the message got through
        shown += [str(error), repr(error), _chain(error), str(getattr(error, "body_excerpt", ""))]
    shown += [json.dumps([event_to_dict(e) for e in memory.events], default=str), record.read_text()]
    shown += [caplog.text, *(r.getMessage() for r in caplog.records)]
    text = "\n".join(shown)
    for secret in (*secrets_of(provider_name), *sent.values):
        assert secret not in text, (provider_name, secret)
    assert all(not r.key_leaks for r in fake_vendor.requests)


TokenProvider = Callable[[], Any]


def _failing_after_first(token: str) -> TokenProvider:
    calls = [0]

    def provider() -> str:
        calls[0] += 1
        if calls[0] > 1:
            raise RuntimeError(f"refreshing {token} failed")  # a credential library quoting the old token
        return token

    return provider


@pytest.mark.parametrize("provider_name", ["azure-token", "gemini-vertex", "anthropic-vertex"])
async def test_a_token_provider_failing_with_the_token_in_its_message_leaks_nothing(
    fake_vendor: FakeVendor, provider_name: str
) -> None:
    from agentactors.testing.fakevendor import FakeReply

    fake_vendor.script(FakeReply(text="ok"))
    token = TOKEN.format(provider_name) + "-refresh"
    tokens = _failing_after_first(token)
    async with httpx.AsyncClient() as client:
        if provider_name == "azure-token":
            provider: HTTPProvider = AzureOpenAIProvider("prod-4o", endpoint=fake_vendor.base_url,
                                                         token_provider=tokens, model="gpt-4o", http_client=client)
        elif provider_name == "gemini-vertex":
            provider = GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=tokens,
                                             base_url=fake_vendor.base_url, http_client=client)
        else:
            provider = AnthropicProvider.vertex("claude-sonnet-4-5", project="p", token_provider=tokens,
                                                base_url=fake_vendor.base_url, http_client=client)
        await provider.complete(LLMRequest([Message.user("hi")]))
        with pytest.raises(ProviderError) as info:
            await provider.complete(LLMRequest([Message.user("hi")]))
    assert len(fake_vendor.requests) == 1  # the failure is raised before sending
    assert token not in f"{info.value!s} {info.value!r} {_chain(info.value)}"
