"""Cloud settings as users configure them: Claude on Vertex checked as the Gemini constructor checks (another
publisher's model, a project or region that cannot be, an unused ``api_key``), the Vertex project and location from
``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``, and Bedrock's endpoint from ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``
/ ``AWS_ENDPOINT_URL`` (service-specific first, as the AWS SDKs read them). Explicit arguments win over the
environment; the real environment is never read (every variable is set or removed here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from agentactors import BedrockProvider
from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.gemini.provider import GeminiProvider

CLAUDE_OK = {"id": "m", "type": "message", "role": "assistant", "model": "claude", "stop_reason": "end_turn",
             "content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 1, "output_tokens": 1}}
GEMINI_OK = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
BEDROCK_OK = {"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}}, "stopReason": "end_turn",
              "usage": {"inputTokens": 1, "outputTokens": 1}}
KEY_ID, SECRET = "AKIDUNITTEST00000000", "unit/Secret+Key/000000000000000000000000"
CLAUDE = "claude-sonnet-4-5@20250929"
VPCE = "https://vpce-0a1b2c3d4e5f-abcdefgh.bedrock-runtime.eu-west-1.vpce.amazonaws.com"
SERVICE_ENV, GLOBAL_ENV = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_DEFAULT_PROFILE",
                SERVICE_ENV, GLOBAL_ENV, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


class Seen:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.urls: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.urls.append(str(request.url))
        return httpx.Response(200, json=self.answer)


async def claude_urls(model: str | None, *, request_model: str | None = None, **kw: Any) -> list[str]:
    seen = Seen(CLAUDE_OK)
    async with httpx.AsyncClient(transport=httpx.MockTransport(seen)) as http:
        p = AnthropicProvider.vertex(model, token_provider=lambda: "tok", http_client=http, **kw)
        await p.complete(LLMRequest([Message.user("hi")], model=request_model, max_tokens=10))
    return seen.urls


async def gemini_urls(**kw: Any) -> list[str]:
    seen = Seen(GEMINI_OK)
    async with httpx.AsyncClient(transport=httpx.MockTransport(seen)) as http:
        p = GeminiProvider.vertex("gemini-2.5-flash", token_provider=lambda: "tok", http_client=http, **kw)
        await p.complete(LLMRequest([Message.user("hi")]))
    return seen.urls


def claude_url(project: str, region: str, host: str | None = None) -> str:
    host = host or f"{region}-aiplatform.googleapis.com"
    return (f"https://{host}/v1/projects/{project}/locations/{region}/publishers/anthropic/models/"
            f"{CLAUDE}:rawPredict")


def gemini_url(project: str, location: str) -> str:
    return (f"https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/publishers/"
            "google/models/gemini-2.5-flash:generateContent")


# -- AnthropicProvider.vertex checks as GeminiProvider.vertex does -----------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("model", [CLAUDE, f"publishers/anthropic/models/{CLAUDE}",
                                   f"projects/proj-1/locations/us-east5/publishers/anthropic/models/{CLAUDE}"])
async def test_each_claude_name_form_reaches_the_anthropic_publisher_model(model: str) -> None:
    assert await claude_urls(model, project="proj-1") == [claude_url("proj-1", "us-east5")]


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "publishers/google/models/gemini-2.5-flash",
                                   "projects/proj-1/locations/us-east5/publishers/google/models/gemini-2.5-flash"])
def test_gemini_asked_of_the_anthropic_constructor_is_refused_naming_geminis(model: str) -> None:
    with pytest.raises(ValueError, match=r"GeminiProvider\.vertex"):
        AnthropicProvider.vertex(model, project="proj-1", token_provider=lambda: "tok")


@pytest.mark.parametrize("model", [
    f"projects/other-proj/locations/us-east5/publishers/anthropic/models/{CLAUDE}",
    "projects/proj-1/locations/us-east5/endpoints/1234567890",
    "publishers/meta/models/llama-3.3-70b-instruct-maas",
])
def test_a_model_the_claude_wire_cannot_reach_is_refused_when_made(model: str) -> None:
    with pytest.raises(ValueError, match="model"):
        AnthropicProvider.vertex(model, project="proj-1", token_provider=lambda: "tok")


@pytest.mark.anyio
@pytest.mark.parametrize("streamed", [False, True])
async def test_gemini_named_by_one_request_to_claude_is_a_request_error_before_sending(streamed: bool) -> None:
    seen = Seen(CLAUDE_OK)
    async with httpx.AsyncClient(transport=httpx.MockTransport(seen)) as http:
        p = AnthropicProvider.vertex(CLAUDE, project="proj-1", token_provider=lambda: "tok", http_client=http)
        request = LLMRequest([Message.user("hi")], model="gemini-2.5-flash", max_tokens=10)
        with pytest.raises(ProviderError) as caught:
            if streamed:
                async with p.stream(request) as events:
                    [e async for e in events]
            else:
                await p.complete(request)
    assert caught.value.kind is ErrorKind.request and not caught.value.retryable
    assert "GeminiProvider.vertex" in str(caught.value)
    assert seen.urls == []


@pytest.mark.parametrize("project", ["", " ", "my proj", "proj-1/locations/x", " proj-1"])
def test_a_claude_project_that_cannot_be_is_refused(project: str) -> None:
    with pytest.raises(ValueError, match="project"):
        AnthropicProvider.vertex(CLAUDE, project=project, token_provider=lambda: "tok")


@pytest.mark.parametrize("region", ["us-east5 ", "US-EAST5", "us-east5-a", "https://us-east5-aiplatform.googleapis.com",
                                    ""])
def test_a_claude_region_that_cannot_be_is_refused_naming_region(region: str) -> None:
    with pytest.raises(ValueError, match="region"):
        AnthropicProvider.vertex(CLAUDE, project="proj-1", region=region, token_provider=lambda: "tok")
    with pytest.raises(ValueError, match="region"):  # with a test server's base_url too
        AnthropicProvider.vertex(CLAUDE, project="proj-1", region=region, token_provider=lambda: "tok",
                                 base_url="http://127.0.0.1:9")


def test_an_api_key_given_to_claude_on_vertex_is_refused_not_ignored() -> None:
    with pytest.raises(ValueError, match="api_key") as caught:
        AnthropicProvider.vertex(CLAUDE, project="proj-1", api_key="sk-ant-not-used-0123456789")
    assert "sk-ant-not-used-0123456789" not in str(caught.value)
    assert "token_provider" in str(caught.value)


# -- the Vertex project and location from the environment -----------------------------------------------------


@pytest.mark.anyio
async def test_the_project_and_location_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west1")
    assert await gemini_urls() == [gemini_url("env-proj", "europe-west1")]
    assert await claude_urls(CLAUDE) == [claude_url("env-proj", "europe-west1")]


@pytest.mark.anyio
async def test_explicit_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west1")
    assert await gemini_urls(project="arg-proj", location="us-east1") == [gemini_url("arg-proj", "us-east1")]
    assert await claude_urls(CLAUDE, project="arg-proj", region="us-east5") == [claude_url("arg-proj", "us-east5")]
    # An explicit argument that cannot be is refused, not replaced by the environment's.
    with pytest.raises(ValueError, match="project"):
        GeminiProvider.vertex("gemini-2.5-flash", project="", token_provider=lambda: "tok")


@pytest.mark.anyio
async def test_without_a_location_anywhere_each_constructor_keeps_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "  ")  # blank: unset
    assert await gemini_urls() == [gemini_url("env-proj", "us-central1")]
    assert await claude_urls(CLAUDE) == [claude_url("env-proj", "us-east5")]


@pytest.mark.anyio
async def test_a_global_location_from_the_environment_is_served_at_the_global_host(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "global")
    assert await claude_urls(CLAUDE, project="p") == [claude_url("p", "global", host="aiplatform.googleapis.com")]


@pytest.mark.parametrize("blank", [None, "", "  "])
def test_no_project_anywhere_is_a_value_error_naming_the_argument_and_the_variable(
    monkeypatch: pytest.MonkeyPatch, blank: str | None
) -> None:
    if blank is not None:
        monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", blank)
    for make in (lambda: GeminiProvider.vertex("gemini-2.5-flash", token_provider=lambda: "tok"),
                 lambda: AnthropicProvider.vertex(CLAUDE, token_provider=lambda: "tok")):
        with pytest.raises(ValueError) as caught:
            make()
        assert "project=" in str(caught.value) and "GOOGLE_CLOUD_PROJECT" in str(caught.value)


@pytest.mark.parametrize(("var", "value"), [("GOOGLE_CLOUD_PROJECT", "my proj"),
                                            ("GOOGLE_CLOUD_LOCATION", "us-central1-a")])
def test_an_environment_value_that_cannot_be_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, var: str, value: str
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-proj")
    monkeypatch.setenv(var, value)
    for make in (lambda: GeminiProvider.vertex("gemini-2.5-flash", token_provider=lambda: "tok"),
                 lambda: AnthropicProvider.vertex(CLAUDE, token_provider=lambda: "tok")):
        with pytest.raises(ValueError, match=var):
            make()


def test_the_repr_shows_the_project_and_location_the_environment_gave(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west1")
    assert "project='env-proj', location='europe-west1'" in repr(
        GeminiProvider.vertex("gemini-2.5-flash", token_provider=lambda: "tok"))
    assert "project='env-proj', region='europe-west1'" in repr(AnthropicProvider.vertex(CLAUDE,
                                                                                          token_provider=lambda: "tok"))


# -- Bedrock's endpoint from the environment ----------------------------------------------------------------------


def bedrock(**kw: Any) -> BedrockProvider:
    return BedrockProvider("amazon.nova-micro-v1:0", access_key_id=KEY_ID, secret_access_key=SECRET, **kw)


def test_the_service_specific_endpoint_variable_is_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVICE_ENV, VPCE)
    p = bedrock()
    assert (p.base_url, p.region) == (VPCE, "eu-west-1")


def test_the_service_specific_variable_wins_over_the_global_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GLOBAL_ENV, "http://localhost:4566")
    monkeypatch.setenv(SERVICE_ENV, VPCE)
    assert bedrock().base_url == VPCE
    monkeypatch.delenv(SERVICE_ENV)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    p = bedrock()
    assert (p.base_url, p.region) == ("http://localhost:4566", "us-east-1")  # a host naming no region


def test_an_explicit_base_url_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVICE_ENV, "http://localhost:4566")
    monkeypatch.setenv(GLOBAL_ENV, "http://localhost:4567")
    assert bedrock(base_url=VPCE).base_url == VPCE


def test_the_environment_endpoints_region_wins_over_the_environments_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv(SERVICE_ENV, VPCE)
    assert bedrock().region == "eu-west-1"


def test_a_region_argument_against_the_environment_endpoints_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SERVICE_ENV, VPCE)
    with pytest.raises(ValueError) as caught:
        bedrock(region="us-east-1")
    assert SERVICE_ENV in str(caught.value) and "'eu-west-1'" in str(caught.value)
    assert bedrock(region="eu-west-1").region == "eu-west-1"


@pytest.mark.parametrize("var", [SERVICE_ENV, GLOBAL_ENV])
@pytest.mark.parametrize("value", ["localhost:4566", "ftp://example.com", "https://bedrock.us-east-1.amazonaws.com"])
def test_an_environment_endpoint_that_cannot_be_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, var: str, value: str
) -> None:
    monkeypatch.setenv(var, value)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    with pytest.raises(ValueError, match=var):
        bedrock()


def test_blank_endpoint_variables_are_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVICE_ENV, "")
    monkeypatch.setenv(GLOBAL_ENV, "  ")
    assert bedrock(region="us-west-2").base_url == "https://bedrock-runtime.us-west-2.amazonaws.com"


def test_configured_endpoints_are_ignored_when_the_sdk_setting_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVICE_ENV, VPCE)
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "True")
    assert bedrock(region="us-west-2").base_url == "https://bedrock-runtime.us-west-2.amazonaws.com"


@pytest.mark.anyio
async def test_a_request_goes_to_the_environment_endpoint_signed_for_its_region(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SERVICE_ENV, VPCE)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=BEDROCK_OK)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        p = bedrock(http_client=http)
        assert (await p.complete(LLMRequest([Message.user("hi")]))).content == "ok"
    (request,) = seen
    assert request.url.host == VPCE.removeprefix("https://")
    assert "/eu-west-1/bedrock/aws4_request" in request.headers["authorization"]
