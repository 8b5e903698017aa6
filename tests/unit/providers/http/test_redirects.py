"""A vendor's redirect is never followed, whatever sends the request: it is the same typed error on every sender.

The leak this closes: an injected ``httpx.AsyncClient(follow_redirects=True)`` (the openai SDK's
``DefaultAsyncHttpxClient`` is one) followed a cross-origin ``307`` with the vendor's credential headers on it —
httpx strips only ``Authorization`` on a cross-origin redirect, so Anthropic's ``x-api-key``, Gemini's
``x-goog-api-key``, Azure's ``api-key`` and Bedrock's ``x-amz-security-token`` went to whatever host the
``Location`` named.  The library's own senders never follow one (h11 has no redirects, aiohttp is asked not to,
the owned httpx client does not), and neither does an injected client now.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest

from agentactors.errors import ProviderError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.azure import AzureOpenAIProvider
from agentactors.providers.bedrock.provider import BedrockProvider
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.http.provider import HTTPProvider
from agentactors.providers.http.transport import ENV
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.providers.responses.provider import OpenAIResponsesProvider
from tests.support.raw_http import read_request

pytestmark = pytest.mark.anyio

KEY = "kyREDIRECTkey0011223344"
SESSION = "stSESSIONtoken99887766"
TOKEN = "vxVERTEXtoken5566778899"
CREDENTIALS = (KEY, SESSION, TOKEN, "AWS4-HMAC-SHA256")
REQUEST = LLMRequest([Message.user("hi")])

Factory = Callable[..., HTTPProvider]

PROVIDERS: dict[str, Factory] = {
    "openai": lambda base, **kw: OpenAIProvider("gpt-4o", api_key=KEY, base_url=base + "/v1", **kw),
    "responses": lambda base, **kw: OpenAIResponsesProvider("gpt-4o", api_key=KEY, base_url=base + "/v1", **kw),
    "anthropic": lambda base, **kw: AnthropicProvider("claude-x", api_key=KEY, base_url=base, **kw),
    "gemini": lambda base, **kw: GeminiProvider("gemini-2.5-flash", api_key=KEY, base_url=base, **kw),
    "azure": lambda base, **kw: AzureOpenAIProvider("dep", endpoint=base, api_key=KEY, **kw),
    "bedrock": lambda base, **kw: BedrockProvider(
        "anthropic.claude-x", region="us-east-1", access_key_id="AKIAEXAMPLE0000",
        secret_access_key="secretsecretsecret", session_token=SESSION, base_url=base, **kw),
    "gemini-vertex": lambda base, **kw: GeminiProvider.vertex(
        "gemini-2.5-flash", project="p", token_provider=lambda: TOKEN, base_url=base, **kw),
    "claude-vertex": lambda base, **kw: AnthropicProvider.vertex(
        "claude-sonnet-4-5", project="p", token_provider=lambda: TOKEN, base_url=base, **kw),
}
EACH = pytest.mark.parametrize("make", PROVIDERS.values(), ids=PROVIDERS.keys())


async def _fail(provider: HTTPProvider, *, stream: bool) -> ProviderError:
    try:
        if stream:
            async with provider.stream(REQUEST) as events:
                async for _ in events:
                    pass
        else:
            await provider.complete(REQUEST)
    except ProviderError as exc:
        return exc
    finally:
        await provider.aclose()
    raise AssertionError("a redirect was taken for an answer")


def _redirecting_client() -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    """A client that follows redirects, over a vendor that answers every request with a cross-origin 307."""
    elsewhere: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        if request.url.host == "vendor.test":
            return httpx.Response(307, headers={"location": "http://elsewhere.test/collect"})
        elsewhere.append(request)
        return httpx.Response(404)

    return httpx.AsyncClient(transport=httpx.MockTransport(respond), follow_redirects=True), elsewhere


@asynccontextmanager
async def _redirecting_server() -> AsyncIterator[str]:
    """A real vendor on 127.0.0.1 answering every request with a 307 to another origin (nothing listens there)."""

    async def handle(stream: anyio.abc.ByteStream) -> None:
        async with stream:
            try:
                await read_request(stream, b"")
                await stream.send(b"HTTP/1.1 307 Temporary Redirect\r\nlocation: http://localhost:1/collect\r\n"
                                  b"content-length: 0\r\nconnection: close\r\n\r\n")
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                pass

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            tg.cancel_scope.cancel()


def _shape(exc: ProviderError) -> tuple[type[ProviderError], Any, int | None, bool]:
    return type(exc), exc.kind, exc.status, exc.retryable


@EACH
@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_an_injected_client_that_follows_redirects_does_not_follow_the_vendors(
    make: Factory, stream: bool
) -> None:
    client, elsewhere = _redirecting_client()
    async with client:
        error = await _fail(make("http://vendor.test", http_client=client), stream=stream)
    assert elsewhere == [], [dict(r.headers) for r in elsewhere]  # no request, so no credential, reached it
    assert error.status == 307
    assert not any(secret in text for secret in CREDENTIALS for text in (str(error), repr(error)))


@EACH
@pytest.mark.parametrize("sender", ["h11", "httpx"])
async def test_a_redirect_is_the_same_error_through_an_injected_client_as_through_every_owned_sender(
    make: Factory, sender: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _same_error_as_owned(make, sender, monkeypatch)


@EACH
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # aiohttp's sender is asyncio's only: not made on trio
async def test_a_redirect_is_the_same_error_through_an_injected_client_as_through_the_aiohttp_sender(
    make: Factory, anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _same_error_as_owned(make, "aiohttp", monkeypatch)


async def _same_error_as_owned(make: Factory, sender: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, sender)
    client, _ = _redirecting_client()
    async with client:
        injected = await _fail(make("http://vendor.test", http_client=client), stream=False)
    async with _redirecting_server() as base:
        provider = make(base)
        owned = await _fail(provider, stream=False)
        assert provider.transport is None or provider.transport == sender
    assert _shape(injected) == _shape(owned)
