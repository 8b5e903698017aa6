"""AzureOpenAIProvider: URLs, bodies and auth per api, capabilities by the underlying model, Azure's content
filter and rate-limit answers, and secrets (keys, tokens) kept out of errors, events, reprs and logs."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from agentactors import Agent
from agentactors.errors import ErrorKind, ProviderError, UnsupportedToolChoiceError
from agentactors.events import InMemoryRecorder, event_to_dict
from agentactors.messages import LLMRequest, Message, StopReason, ToolChoice, ToolSpec
from agentactors.providers.azure import AzureOpenAIProvider

pytestmark = pytest.mark.anyio

KEY = "azure-key-0123456789abcdef"
TOKEN = "entra-token-eyJhbGciOi-0123456789"
ENDPOINT = "https://res.openai.azure.com"
TOOL = ToolSpec("f", "", {"type": "object", "properties": {}})
CHAT_OK = {"id": "c1", "model": "gpt-4o", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                                       "finish_reason": "stop"}]}
RESP_OK = {"id": "resp_1", "model": "gpt-5", "status": "completed",
           "output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}]}


def client(sent: list[httpx.Request], status: int = 200, body: Any = None,
           headers: dict[str, str] | None = None) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        answer = body if body is not None else (RESP_OK if request.url.path.endswith("/responses") else CHAT_OK)
        return httpx.Response(status, json=answer, headers=headers or {})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def ask(**kw: Any) -> LLMRequest:
    return LLMRequest([Message.user("Hi")], **kw)


async def test_chat_route_body_and_api_key() -> None:
    sent: list[httpx.Request] = []
    async with client(sent) as http:
        p = AzureOpenAIProvider("prod-4o", endpoint=ENDPOINT + "/", api_key=KEY, model="gpt-4o", http_client=http)
        assert (await p.complete(ask(max_tokens=9))).content == "hi"
    (request,) = sent
    assert str(request.url) == f"{ENDPOINT}/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21"
    assert request.headers["api-key"] == KEY and "authorization" not in request.headers
    body = json.loads(request.content)
    assert "model" not in body and body["messages"] == [{"role": "user", "content": "Hi"}] and body["max_tokens"] == 9


async def test_responses_route_sends_the_deployment_as_model_and_judges_the_underlying_one() -> None:
    sent: list[httpx.Request] = []
    async with client(sent) as http:
        p = AzureOpenAIProvider("my-reasoner", endpoint=ENDPOINT, api_key=KEY, model="gpt-5", api="responses",
                                http_client=http)
        await p.complete(ask(temperature=0.3))
    (request,) = sent
    assert str(request.url) == f"{ENDPOINT}/openai/v1/responses"
    body = json.loads(request.content)
    assert body["model"] == "my-reasoner" and body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]  # gpt-5 reasons
    assert "temperature" not in body  # gpt-5 takes no sampling settings


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_a_sync_or_async_token_provider_is_asked_on_every_request(api: str) -> None:
    calls: list[int] = []

    def sync_token() -> str:
        calls.append(1)
        return f"{TOKEN}-{len(calls)}"

    async def async_token() -> str:
        return sync_token()

    for provider_fn in (sync_token, async_token):
        calls.clear()
        sent: list[httpx.Request] = []
        async with client(sent) as http:
            p = AzureOpenAIProvider("dep", endpoint=ENDPOINT, token_provider=provider_fn, api=api,  # type: ignore[arg-type]
                                    http_client=http)
            await p.complete(ask())
            await p.complete(ask())
        assert [r.headers["authorization"] for r in sent] == [f"Bearer {TOKEN}-1", f"Bearer {TOKEN}-2"]
        assert all("api-key" not in r.headers for r in sent)


async def test_a_failing_token_provider_raises_before_sending_and_keeps_the_token_out() -> None:
    def broken() -> str:
        raise RuntimeError(f"refresh failed for {TOKEN}")

    sent: list[httpx.Request] = []
    async with client(sent) as http:
        p = AzureOpenAIProvider("dep", endpoint=ENDPOINT, token_provider=broken, http_client=http)
        # The token was never returned, so it is not known to be secret: only what the provider registered is.
        with pytest.raises(ProviderError, match="token provider failed"):
            await p.complete(ask())
    assert sent == []


async def test_forced_choice_refused_before_sending_by_the_underlying_model() -> None:
    sent: list[httpx.Request] = []
    async with client(sent) as http:
        p = AzureOpenAIProvider("reasoner", endpoint=ENDPOINT, api_key=KEY, model="o1-mini", http_client=http)
        with pytest.raises(UnsupportedToolChoiceError):
            await p.complete(ask(tools=[TOOL], tool_choice=ToolChoice.required()))
        ok = AzureOpenAIProvider("reasoner", endpoint=ENDPOINT, api_key=KEY, model="gpt-4o", http_client=http)
        await ok.complete(ask(tools=[TOOL], tool_choice=ToolChoice.required()))
    assert len(sent) == 1
    assert p.capabilities(None).forced_tool_choice is False and ok.capabilities(None).forced_tool_choice is True
    assert ok.capabilities("prod-4o").response_format is True


CONTENT_FILTER = {"error": {"message": "The response was filtered", "type": None, "param": "prompt", "code": "400",
                            "status": 400, "innererror": {"code": "ResponsibleAIPolicyViolation",
                                                          "content_filter_result": {"hate": {"filtered": True}}}}}


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_content_filter_errors_are_content_policy(api: str) -> None:
    sent: list[httpx.Request] = []
    async with client(sent, 400, CONTENT_FILTER) as http:
        p = AzureOpenAIProvider("dep", endpoint=ENDPOINT, api_key=KEY, api=api, http_client=http)  # type: ignore[arg-type]
        with pytest.raises(ProviderError) as info:
            await p.complete(ask())
    assert info.value.kind is ErrorKind.content_policy and not info.value.retryable


async def test_a_filtered_completion_is_a_content_filter_stop() -> None:
    body = {"id": "c", "choices": [{"index": 0, "message": {"role": "assistant", "content": None},
                                    "finish_reason": "content_filter"}]}
    sent: list[httpx.Request] = []
    async with client(sent, 200, body) as http:
        response = await AzureOpenAIProvider("dep", endpoint=ENDPOINT, api_key=KEY, http_client=http).complete(ask())
    assert response.stop_reason is StopReason.content_filter


async def test_429_headers_are_read_like_openais() -> None:
    headers = {"retry-after-ms": "1500", "retry-after": "2", "x-ratelimit-remaining-requests": "0",
               "x-ratelimit-remaining-tokens": "100"}
    body = {"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation have exceeded"}}
    sent: list[httpx.Request] = []
    async with client(sent, 429, body, headers) as http:
        p = AzureOpenAIProvider("dep", endpoint=ENDPOINT, api_key=KEY, http_client=http)
        with pytest.raises(ProviderError) as info:
            await p.complete(ask())
    assert info.value.kind is ErrorKind.transient and info.value.retry_after == 1.5
    assert p.rate_limit is not None


async def test_keys_and_tokens_reach_no_error_event_repr_or_log(caplog: pytest.LogCaptureFixture) -> None:
    leaky = {"error": {"code": "401", "message": f"Access denied for key {KEY} and token {TOKEN}-1"}}
    sent: list[httpx.Request] = []
    caplog.set_level(logging.DEBUG)
    recorder = InMemoryRecorder()
    async with client(sent, 401, leaky) as http:
        keyed = AzureOpenAIProvider("dep", endpoint=ENDPOINT, api_key=KEY, http_client=http)
        tokened = AzureOpenAIProvider("dep", endpoint=ENDPOINT, token_provider=lambda: f"{TOKEN}-1",
                                      api="responses", http_client=http)
        errors = []
        for p in (tokened, keyed):  # the token is a secret once the provider has it: asked first
            with pytest.raises(ProviderError) as info:
                await p.complete(ask())
            errors.append(info.value)
            await Agent(p, recorders=[recorder]).run("Hi")  # the run fails: its events say so
    assert recorder.events
    events = json.dumps([event_to_dict(e) for e in recorder.events], default=str)
    assert "Access denied" in events  # the vendor's message reached the events, without the secrets
    text = " ".join([repr(keyed), repr(tokened), *(str(e) + repr(e) + (e.body_excerpt or "") for e in errors),
                     caplog.text, events])
    assert KEY not in text and TOKEN not in text
    assert all(e.kind is ErrorKind.account for e in errors)


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="api"):
        AzureOpenAIProvider("dep", endpoint=ENDPOINT, api_key=KEY, api="completions")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not both"):
        AzureOpenAIProvider("dep", endpoint=ENDPOINT, api_key=KEY, token_provider=lambda: TOKEN)
    with pytest.raises(ValueError, match="endpoint"):
        AzureOpenAIProvider("dep", endpoint="res.openai.azure.com", api_key=KEY)
