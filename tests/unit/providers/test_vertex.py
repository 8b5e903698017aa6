"""Vertex AI: ``GeminiProvider.vertex`` and ``AnthropicProvider.vertex`` — URLs, bodies, bearer auth (a token
provider, sync or async, asked per request; google-auth's default credentials refreshed before expiry), and a
round trip through the FakeVendor's Vertex paths for both wires, whole and streamed."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import LLMRequest, Message, StreamEnd, TextDelta
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.vertex import vertex_base_url
from agentactors.testing.fakevendor import FakeReply, FakeVendor

pytestmark = pytest.mark.anyio

TOKEN = "ya29.vertex-test-token-0123456789abcdef"
GEMINI_OK = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}}
CLAUDE_OK = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5@20250929",
             "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
             "usage": {"input_tokens": 1, "output_tokens": 1}}


class Seen:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json=self.answer)


def client(seen: Seen) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(seen))


def test_the_global_location_has_no_region_prefix() -> None:
    assert vertex_base_url("global") == "https://aiplatform.googleapis.com"
    assert vertex_base_url("europe-west4") == "https://europe-west4-aiplatform.googleapis.com"


@pytest.mark.parametrize(
    ("location", "host"),
    [("us-central1", "us-central1-aiplatform.googleapis.com"), ("global", "aiplatform.googleapis.com")],
)
async def test_gemini_on_vertex_url_body_and_bearer(location: str, host: str) -> None:
    seen = Seen(GEMINI_OK)
    async with client(seen) as http:
        p = GeminiProvider.vertex("gemini-2.5-flash", project="my-proj", location=location,
                                  token_provider=lambda: TOKEN, http_client=http)
        answer = await p.complete(LLMRequest([Message.user("hello")]))
    assert answer.content == "hi"
    assert isinstance(p, GeminiProvider)
    (request,) = seen.requests
    assert request.url.host == host
    assert request.url.path == (f"/v1/projects/my-proj/locations/{location}/publishers/google/models/"
                                "gemini-2.5-flash:generateContent")
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert "x-goog-api-key" not in request.headers
    assert json.loads(request.content)["contents"][0]["parts"] == [{"text": "hello"}]


async def test_gemini_on_vertex_streams_with_alt_sse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaNotForVertex0123456789abcdefghij")
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=f"data: {json.dumps(GEMINI_OK)}\r\n\r\n".encode())

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        p = GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=lambda: TOKEN, http_client=http)
        async with p.stream(LLMRequest([Message.user("hello")])) as events:
            got = [e async for e in events]
    assert isinstance(got[-1], StreamEnd)
    assert seen[0].url.path.endswith("/publishers/google/models/gemini-2.5-flash:streamGenerateContent")
    assert seen[0].url.params["alt"] == "sse"
    assert "x-goog-api-key" not in seen[0].headers  # an environment API key never goes to Vertex


@pytest.mark.parametrize(("region", "host"), [("us-east5", "us-east5-aiplatform.googleapis.com"),
                                              ("global", "aiplatform.googleapis.com")])
async def test_claude_on_vertex_raw_predict_body_without_model(region: str, host: str) -> None:
    seen = Seen(CLAUDE_OK)
    async with client(seen) as http:
        p = AnthropicProvider.vertex("claude-sonnet-4-5@20250929", project="proj", region=region,
                                     token_provider=lambda: TOKEN, http_client=http)
        answer = await p.complete(LLMRequest([Message.user("hello")], max_tokens=50))
    assert answer.content == "hi"
    assert isinstance(p, AnthropicProvider)
    (request,) = seen.requests
    assert request.url.host == host
    assert request.url.path == (f"/v1/projects/proj/locations/{region}/publishers/anthropic/models/"
                                "claude-sonnet-4-5@20250929:rawPredict")
    body = json.loads(request.content)
    assert body["anthropic_version"] == "vertex-2023-10-16"
    assert "model" not in body
    assert body["max_tokens"] == 50
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert "x-api-key" not in request.headers


async def test_claude_on_vertex_streams_at_stream_raw_predict() -> None:
    seen: list[httpx.Request] = []
    sse = (
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":'
        '"assistant","model":"claude","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text",'
        '"text":""}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta",'
        '"text":"hi"}}\n\n'
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":'
        '{"output_tokens":2}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse.encode())

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        p = AnthropicProvider.vertex("claude-haiku-4-5", project="p", token_provider=lambda: TOKEN, http_client=http)
        async with p.stream(LLMRequest([Message.user("hello")])) as events:
            got = [e async for e in events]
    assert [e.text for e in got if isinstance(e, TextDelta)] == ["hi"]
    assert seen[0].url.path.endswith(":streamRawPredict")
    assert json.loads(seen[0].content)["stream"] is True


async def test_an_async_token_provider_is_asked_on_every_request() -> None:
    tokens = iter(["ya29.first-token-0123456789", "ya29.second-token-0123456789"])
    calls = 0

    async def fresh() -> str:
        nonlocal calls
        calls += 1
        return next(tokens)

    seen = Seen(GEMINI_OK)
    async with client(seen) as http:
        p = GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=fresh, http_client=http)
        await p.complete(LLMRequest([Message.user("a")]))
        await p.complete(LLMRequest([Message.user("b")]))
    assert calls == 2
    assert [r.headers["authorization"] for r in seen.requests] == [
        "Bearer ya29.first-token-0123456789", "Bearer ya29.second-token-0123456789"]


class FakeGoogleCredentials:
    """Stands in for google-auth's credentials: valid until told otherwise, refreshed to a new token."""

    def __init__(self) -> None:
        self.token = "ya29.google-default-0000000000"
        self.valid = False
        self.refreshes = 0

    def refresh(self, request: object) -> None:
        self.refreshes += 1
        self.token = f"ya29.google-default-refreshed-{self.refreshes:010d}"
        self.valid = True


async def test_google_default_credentials_are_refreshed_before_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    import google.auth

    creds = FakeGoogleCredentials()
    scopes_seen: list[Any] = []

    def default(scopes: Any = None, **_: Any) -> tuple[FakeGoogleCredentials, str]:
        scopes_seen.append(scopes)
        return creds, "proj"

    monkeypatch.setattr(google.auth, "default", default)
    monkeypatch.setattr("google.auth.transport.requests.Request", lambda: object())
    seen = Seen(GEMINI_OK)
    async with client(seen) as http:
        p = GeminiProvider.vertex("gemini-2.5-flash", project="p", http_client=http)
        await p.complete(LLMRequest([Message.user("a")]))  # not valid yet: refreshed first
        await p.complete(LLMRequest([Message.user("b")]))  # still valid: reused
        creds.valid = False  # google-auth calls a token invalid minutes before it expires
        await p.complete(LLMRequest([Message.user("c")]))
    assert creds.refreshes == 2
    assert scopes_seen == [["https://www.googleapis.com/auth/cloud-platform"]]
    assert [r.headers["authorization"].split("-")[-1] for r in seen.requests] == ["0000000001", "0000000001",
                                                                                    "0000000002"]
    assert "google default credentials" in repr(p)


@pytest.mark.parametrize("failing", [lambda: "", lambda: (_ for _ in ()).throw(RuntimeError("no creds"))])
async def test_no_token_is_an_account_error_before_sending(failing: Callable[[], str | Awaitable[str]]) -> None:
    seen = Seen(GEMINI_OK)
    async with client(seen) as http:
        p = GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=failing, http_client=http)
        with pytest.raises(ProviderError) as caught:
            await p.complete(LLMRequest([Message.user("a")]))
    assert caught.value.kind is ErrorKind.account
    assert seen.requests == []


async def test_the_token_never_shows_in_an_error_or_repr() -> None:
    def failing(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"code": 401, "message": f"bad token {TOKEN}",
                                                   "status": "UNAUTHENTICATED"}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(failing)) as http:
        p = GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=lambda: TOKEN, http_client=http)
        with pytest.raises(ProviderError) as caught:
            await p.complete(LLMRequest([Message.user("a")]))
    assert caught.value.kind is ErrorKind.account
    assert TOKEN not in f"{caught.value!s} {caught.value!r} {caught.value.body_excerpt} {p!r}"


@pytest.mark.parametrize("streamed", [False, True])
async def test_both_wires_through_the_fakevendor_vertex_paths(streamed: bool) -> None:
    async with FakeVendor() as fv:
        fv.script(FakeReply(text="from gemini"), FakeReply(text="from claude"))
        gemini = GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=lambda: TOKEN,
                                       base_url=fv.base_url)
        claude = AnthropicProvider.vertex("claude-sonnet-4-5@20250929", project="p", token_provider=lambda: TOKEN,
                                          base_url=fv.base_url)
        texts = []
        async with gemini, claude:
            for p in (gemini, claude):
                request = LLMRequest([Message.user("hi")])
                if streamed:
                    async with p.stream(request) as events:
                        got = [e async for e in events]
                    end = got[-1]
                    assert isinstance(end, StreamEnd)
                    texts.append(end.response.content)
                else:
                    texts.append((await p.complete(request)).content)
        assert texts == ["from gemini", "from claude"]
        first, second = fv.requests
        assert (first.wire, first.model) == ("gemini", "gemini-2.5-flash")
        assert (second.wire, second.model) == ("anthropic", "claude-sonnet-4-5@20250929")
        assert "/publishers/anthropic/models/" in second.path


async def test_the_fakevendor_wants_a_bearer_on_vertex_paths() -> None:
    async with FakeVendor() as fv, httpx.AsyncClient() as http:
        response = await http.post(
            f"{fv.base_url}/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
            headers={"x-goog-api-key": "AIzaNotABearer0123456789abcdefghijk"},
            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        )
    assert response.status_code == 401


async def test_each_vertex_constructor_takes_the_others_word_for_the_region() -> None:
    """Claude's constructor says ``region=`` (the Anthropic SDK's word), Gemini's ``location=`` (Google's): a user
    who wrote the other one met ``AnthropicProvider.__init__() got an unexpected keyword argument 'location'``,
    naming a method they never called.  Each takes both; two different places are a ``ValueError`` naming both."""
    seen = Seen(CLAUDE_OK)
    async with client(seen) as http:
        claude = AnthropicProvider.vertex("claude-sonnet-4-5@20250929", project="proj", location="europe-west1",
                                          token_provider=lambda: TOKEN, http_client=http)
        await claude.complete(LLMRequest([Message.user("hello")], max_tokens=50))
    assert seen.requests[0].url.host == "europe-west1-aiplatform.googleapis.com"
    seen = Seen(GEMINI_OK)
    async with client(seen) as http:
        gemini = GeminiProvider.vertex("gemini-2.5-flash", project="proj", region="global",
                                       token_provider=lambda: TOKEN, http_client=http)
        await gemini.complete(LLMRequest([Message.user("hello")]))
    assert seen.requests[0].url.host == "aiplatform.googleapis.com"
    # The same place twice is one place; two places are a mistake, named.
    AnthropicProvider.vertex("claude-sonnet-4-5@20250929", project="proj", region="us-east5", location="us-east5",
                             token_provider=lambda: TOKEN)
    with pytest.raises(ValueError, match=r"region='us-east5'.*location='europe-west1'"):
        AnthropicProvider.vertex("claude-sonnet-4-5@20250929", project="proj", region="us-east5",
                                 location="europe-west1", token_provider=lambda: TOKEN)
    with pytest.raises(ValueError, match=r"location='us-central1'.*region='global'"):
        GeminiProvider.vertex("gemini-2.5-flash", project="proj", location="us-central1", region="global",
                              token_provider=lambda: TOKEN)
