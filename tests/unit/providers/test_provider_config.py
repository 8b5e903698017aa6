"""A provider's configuration is checked when it is made, not discovered mid-run.

A wrong ``base_url``, ``timeout``, ``http_client``, ``name``, ``model`` or ``api_key`` used to be accepted and
to fail on the first call — some of them as a *transient, retryable* ``ProviderError`` (``UnsupportedProtocol``
for a URL without a scheme), so ``with_retry`` retried it, a fallback failed over and a breaker counted it.
Each is now a ``ValueError`` / ``TypeError`` at construction, naming the parameter (never the key's value).

A missing key aimed at the vendor's own endpoint cannot be refused at construction (providers are made for
their capabilities, in tests with mock clients, before the environment is set): the call raises an
account-kind, non-retryable ``ProviderError`` naming the environment variable, before anything is sent.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.azure import AzureOpenAIProvider
from agentactors.providers.bedrock.provider import BedrockProvider
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.http.provider import HTTPProvider
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.providers.responses.provider import OpenAIResponsesProvider
from agentactors.redaction import redact

KEY = "sk-config-test-0123456789abcdef"
SECRET = "sk-NEVER-SHOWN-0123456789abcdef"
ENDPOINT = "https://res.openai.azure.com"
REQUEST = LLMRequest([Message.user("hi")])
ENV_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AZURE_OPENAI_API_KEY")

Factory = Callable[..., HTTPProvider]


def _openai(**kw: Any) -> HTTPProvider:
    return OpenAIProvider(kw.pop("model", "m"), **{"api_key": KEY, **kw})


def _responses(**kw: Any) -> HTTPProvider:
    return OpenAIResponsesProvider(kw.pop("model", "m"), **{"api_key": KEY, **kw})


def _anthropic(**kw: Any) -> HTTPProvider:
    return AnthropicProvider(kw.pop("model", "claude-x"), **{"api_key": KEY, **kw})


def _gemini(**kw: Any) -> HTTPProvider:
    return GeminiProvider(kw.pop("model", "gemini-2.5-flash"), **{"api_key": KEY, **kw})


def _azure(**kw: Any) -> HTTPProvider:
    if "base_url" in kw:
        kw["endpoint"] = kw.pop("base_url")
    return AzureOpenAIProvider(kw.pop("deployment", "dep"), **{"endpoint": ENDPOINT, "api_key": KEY, **kw})


def _bedrock(**kw: Any) -> HTTPProvider:
    kw.pop("api_key", None)
    return BedrockProvider(kw.pop("model", "us.amazon.nova-micro-v1:0"), region="us-east-1",
                           access_key_id="AKIAEXAMPLE0000", secret_access_key="secret-example-000000", **kw)


def _gemini_vertex(**kw: Any) -> HTTPProvider:
    kw.pop("api_key", None)
    return GeminiProvider.vertex(kw.pop("model", "gemini-2.5-flash"), project="p", token_provider=lambda: "tok", **kw)


def _claude_vertex(**kw: Any) -> HTTPProvider:
    kw.pop("api_key", None)
    return AnthropicProvider.vertex(kw.pop("model", "claude-sonnet-4-5"), project="p", token_provider=lambda: "tok",
                                    **kw)


ALL: dict[str, Factory] = {
    "openai": _openai,
    "responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "azure": _azure,
    "bedrock": _bedrock,
    "gemini-vertex": _gemini_vertex,
    "claude-vertex": _claude_vertex,
}
KEYED = {k: ALL[k] for k in ("openai", "responses", "anthropic", "gemini", "azure")}
PROVIDERS = pytest.mark.parametrize("make", ALL.values(), ids=ALL.keys())


# -- base_url ---------------------------------------------------------------------------------------------------


@PROVIDERS
@pytest.mark.parametrize("url", ["localhost:8080", "ftp://x", "", "   ", "https://", "http:///v1", "vendor.test/v1",
                                 "file:///etc/passwd"])
def test_a_base_url_that_is_not_an_http_url_with_a_host_is_refused(make: Factory, url: str) -> None:
    parameter = "endpoint" if make is _azure else "base_url"
    with pytest.raises(ValueError, match=parameter) as info:
        make(base_url=url)
    assert repr(url) in str(info.value)


@PROVIDERS
@pytest.mark.parametrize("url", ["https://vendor.test/v1?key=abc123", "https://vendor.test/v1#frag",
                                 "https://vendor.test/v1?"])
def test_a_base_url_with_a_query_or_a_fragment_is_refused_without_showing_it(make: Factory, url: str) -> None:
    # The wire's path is appended to base_url as text: "https://vendor.test/v1?key=abc123/chat/completions" was sent.
    parameter = "endpoint" if make is _azure else "base_url"
    with pytest.raises(ValueError, match=f"{parameter} must not have a query or a fragment") as info:
        make(base_url=url)
    assert "abc123" not in str(info.value) and "https://vendor.test/v1" in str(info.value)


@PROVIDERS
def test_a_base_url_that_is_not_a_str_is_a_type_error(make: Factory) -> None:
    with pytest.raises(TypeError, match=r"base_url|endpoint"):
        make(base_url=8080)


@pytest.mark.parametrize("make", [_openai, _azure, _gemini], ids=["openai", "azure", "gemini"])
def test_a_refused_base_url_does_not_show_a_password_in_it(make: Factory) -> None:
    with pytest.raises(ValueError) as info:
        make(base_url=f"ftp://user:{SECRET}@vendor.test/v1")
    assert SECRET not in str(info.value)


# A compatible server (vLLM, Groq, a proxy in front of one) is OpenAIProvider with another base_url: "openai" covers it.
@PROVIDERS
@pytest.mark.parametrize(
    "url",
    [f"https://alice:{SECRET}@vendor.test/v1", f"https://{SECRET}@vendor.test/v1", f"https://:{SECRET}@vendor.test",
     f"http://alice:{SECRET}@127.0.0.1:8000/v1", f"https://alice%40corp:{SECRET}%21@vendor.test"],
    ids=["user-password", "user-only", "password-only", "ip-port", "percent-encoded"],
)
def test_a_base_url_with_user_info_is_refused_without_showing_it(make: Factory, url: str) -> None:
    # httpx turned it into "Authorization: Basic ..." (replacing a Bearer key) and the h11 sender dropped it: one
    # sender leaked it to an echoing vendor's error, the other sent no credential.  Refused, naming what to use.
    parameter = "endpoint" if make is _azure else "base_url"
    with pytest.raises(ValueError, match=f"{parameter} must not hold a user name or a password") as info:
        make(base_url=url)
    text = str(info.value)
    assert "http_client=httpx.AsyncClient(auth=" in text
    assert SECRET not in text and "alice" not in text
    assert "vendor.test" in text or "127.0.0.1" in text


@pytest.mark.parametrize("make", [_openai, _anthropic], ids=["openai", "anthropic"])
def test_a_refused_user_info_is_registered_as_a_secret(make: Factory) -> None:
    # Defensive: it is in the user's code and may be in their own messages; the library masks it from then on,
    # and the Basic credential httpx would have made of it too.
    password = "pwREFUSEDuserinfo-3141592653"
    with pytest.raises(ValueError):
        make(base_url=f"https://bob:{password}@vendor.test/v1")
    basic = base64.b64encode(f"bob:{password}".encode()).decode()
    assert redact(f"got {password} and {basic}") == "got [REDACTED] and [REDACTED]"


@PROVIDERS
@pytest.mark.parametrize("url", ["http://localhost:8080/v1", "HTTPS://Vendor.Example/v1/", "http://127.0.0.1:1",
                                 "http://[::1]:8000"])
def test_http_urls_with_a_host_are_taken(make: Factory, url: str) -> None:
    assert make(base_url=url).base_url == url.rstrip("/")


# -- timeout and http_client ---------------------------------------------------------------------------------


@PROVIDERS
@pytest.mark.parametrize(
    ("timeout", "error"),
    [(0, ValueError), (-1, ValueError), (-0.5, ValueError), (math.nan, ValueError), (math.inf, ValueError),
     ("5", TypeError), (True, TypeError), ([5], TypeError)],
)
def test_a_timeout_that_is_not_a_positive_finite_number_is_refused(
    make: Factory, timeout: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match="timeout"):
        make(timeout=timeout)


@pytest.mark.parametrize("timeout", [httpx.Timeout(0), httpx.Timeout(5.0, connect=-1.0), httpx.Timeout(math.nan),
                                     httpx.Timeout(5.0, read=math.inf)])
def test_an_httpx_timeout_with_a_field_that_is_not_positive_and_finite_is_refused(timeout: httpx.Timeout) -> None:
    with pytest.raises(ValueError, match="timeout"):
        _openai(timeout=timeout)


@PROVIDERS
@pytest.mark.parametrize(
    "timeout", [None, 5, 2.5, httpx.Timeout(10.0), httpx.Timeout(None), httpx.Timeout(5.0, read=None)]
)
def test_valid_timeouts_are_taken(make: Factory, timeout: object) -> None:
    make(timeout=timeout)


@PROVIDERS
@pytest.mark.parametrize("client", ["x", "sync", "object"])
def test_an_http_client_that_is_not_an_httpx_async_client_is_a_type_error(make: Factory, client: str) -> None:
    with httpx.Client() as sync:
        given = {"x": "x", "sync": sync, "object": object()}[client]
        with pytest.raises(TypeError, match="http_client"):
            make(http_client=given)


# -- name and model ----------------------------------------------------------------------------------------------


@PROVIDERS
@pytest.mark.parametrize(("name", "error"), [(3, TypeError), (b"groq", TypeError), ("", ValueError),
                                             ("  ", ValueError)])
def test_a_name_that_is_not_a_non_empty_str_is_refused(make: Factory, name: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="name"):
        make(name=name)


@PROVIDERS
@pytest.mark.parametrize(("model", "error"), [(123, TypeError), (["m"], TypeError), ("", ValueError),
                                              (" ", ValueError)])
def test_a_model_that_is_not_a_non_empty_str_is_refused(make: Factory, model: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="model"):
        make(model=model)


@pytest.mark.parametrize(
    "make", [m for name, m in ALL.items() if name != "azure"], ids=[name for name in ALL if name != "azure"]
)
def test_no_default_model_is_taken(make: Factory) -> None:
    """``None``: each request names its model (``resolve_model`` refuses one that does not, before sending).
    (Not Azure: a deployment is its model.)"""
    assert make(model=None).default_model is None


def test_azure_model_and_deployment_must_be_strs() -> None:
    with pytest.raises(TypeError, match="model"):
        _azure(model=123)
    with pytest.raises(ValueError, match="model"):
        _azure(model="")
    with pytest.raises(TypeError, match="deployment"):
        _azure(deployment=123)


# -- api_key -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", KEYED.values(), ids=KEYED.keys())
@pytest.mark.parametrize("key", [123, SECRET.encode(), [SECRET]])
def test_an_api_key_that_is_not_a_str_is_a_type_error_naming_it(make: Factory, key: object) -> None:
    with pytest.raises(TypeError, match="api_key") as info:
        make(api_key=key)
    assert type(key).__name__ in str(info.value) and "len()" not in str(info.value)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("make", KEYED.values(), ids=KEYED.keys())
@pytest.mark.parametrize("key", ["", " ", " \n", "\t"])
def test_an_empty_api_key_is_a_value_error(make: Factory, key: str) -> None:
    with pytest.raises(ValueError, match=r"api_key.*empty"):
        make(api_key=key)


# -- a missing key -------------------------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(401, json={"error": {"message": "no key", "type": "invalid_request_error"}})


MISSING = {
    "openai": (lambda c: OpenAIProvider("m", http_client=c), "OPENAI_API_KEY"),
    "responses": (lambda c: OpenAIResponsesProvider("m", http_client=c), "OPENAI_API_KEY"),
    "anthropic": (lambda c: AnthropicProvider("claude-x", http_client=c), "ANTHROPIC_API_KEY"),
    "gemini": (lambda c: GeminiProvider("gemini-2.5-flash", http_client=c), "GEMINI_API_KEY"),
    "azure": (lambda c: AzureOpenAIProvider("dep", endpoint=ENDPOINT, http_client=c), "AZURE_OPENAI_API_KEY"),
}


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize(("make", "env"), MISSING.values(), ids=MISSING.keys())
async def test_no_key_for_the_vendors_endpoint_is_an_account_error_before_sending(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[httpx.AsyncClient], HTTPProvider], env: str, stream: bool
) -> None:
    for var in ENV_KEYS:
        monkeypatch.delenv(var, raising=False)
    seen = Recorder()
    async with httpx.AsyncClient(transport=httpx.MockTransport(seen)) as client:
        provider = make(client)  # made: its capabilities can be asked without a key
        with pytest.raises(ProviderError) as info:
            if stream:
                async with provider.stream(REQUEST) as events:
                    async for _ in events:
                        pass
            else:
                await provider.complete(REQUEST)
    err = info.value
    assert (err.kind, err.retryable) == (ErrorKind.account, False)
    assert env in str(err) and "api_key" in str(err)
    assert seen.requests == []


@pytest.mark.anyio
@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://api.groq.com/openai/v1"])
async def test_a_compatible_server_needs_no_key(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """vLLM, llama.cpp, the FakeVendor: a custom ``base_url`` is sent to without a key, as before."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen = Recorder()
    async with httpx.AsyncClient(transport=httpx.MockTransport(seen)) as client:
        with pytest.raises(ProviderError):
            await OpenAIProvider("m", base_url=url, http_client=client).complete(REQUEST)  # the mock's 401
    assert len(seen.requests) == 1 and "authorization" not in seen.requests[0].headers


@pytest.mark.anyio
async def test_the_key_from_the_environment_still_goes_to_the_vendor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    seen = Recorder()
    async with httpx.AsyncClient(transport=httpx.MockTransport(seen)) as client:
        with pytest.raises(ProviderError):
            await OpenAIProvider("m", http_client=client).complete(REQUEST)  # the mock's 401
    assert len(seen.requests) == 1 and seen.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.anyio
async def test_credential_headers_without_a_key_raise_the_same_account_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch upload (``BatchProvider``) asks for the credentials too: no key, no unauthenticated upload."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = OpenAIProvider("m")
    with pytest.raises(ProviderError) as info:
        await provider.credential_headers("https://api.openai.com/v1/files")
    assert info.value.kind is ErrorKind.account and "OPENAI_API_KEY" in str(info.value)
