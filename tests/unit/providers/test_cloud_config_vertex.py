"""Vertex AI configured as users write it: project and location values, every model-name form (bare, ``models/``,
``publishers/google/models/``, a full resource name), Claude asked of the Gemini constructor, an API key given to a
bearer-token endpoint — each sent where Vertex serves it or refused before any request, naming what to fix."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.gemini.provider import GeminiProvider

GEMINI_OK = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
BASE = "https://us-central1-aiplatform.googleapis.com/v1/projects/proj-1/locations/us-central1/publishers/google/models"


async def sent(model: str | None, *, request_model: str | None = None, **kw: Any) -> list[str]:
    urls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        urls.append(str(request.url))
        return httpx.Response(200, json=GEMINI_OK)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        p = GeminiProvider.vertex(model, project=kw.pop("project", "proj-1"), token_provider=lambda: "tok",
                                  http_client=http, **kw)
        await p.complete(LLMRequest([Message.user("hi")], model=request_model))
    return urls


@pytest.mark.anyio
@pytest.mark.parametrize("model", [
    "gemini-2.5-flash",
    "models/gemini-2.5-flash",
    "publishers/google/models/gemini-2.5-flash",
    "projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.5-flash",
])
async def test_each_model_name_form_reaches_the_publisher_model(model: str) -> None:
    assert await sent(model) == [f"{BASE}/gemini-2.5-flash:generateContent"]


@pytest.mark.parametrize("model", [
    "publishers/anthropic/models/claude-sonnet-4-5@20250929",
    "claude-sonnet-4-5@20250929",
    "projects/proj-1/locations/us-central1/publishers/anthropic/models/claude-sonnet-4-5@20250929",
])
def test_claude_asked_of_the_gemini_constructor_is_refused_naming_anthropics(model: str) -> None:
    with pytest.raises(ValueError, match=r"AnthropicProvider\.vertex"):
        GeminiProvider.vertex(model, project="proj-1", token_provider=lambda: "tok")


@pytest.mark.anyio
async def test_claude_named_by_one_request_is_a_request_error_before_sending() -> None:
    with pytest.raises(ProviderError) as caught:
        await sent("gemini-2.5-flash", request_model="publishers/anthropic/models/claude-sonnet-4-5@20250929")
    assert caught.value.kind is ErrorKind.request and "AnthropicProvider.vertex" in str(caught.value)


@pytest.mark.parametrize("model", [
    "projects/other-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash",
    "projects/proj-1/locations/europe-west4/publishers/google/models/gemini-2.5-flash",
])
def test_a_resource_name_of_another_project_or_location_is_refused(model: str) -> None:
    with pytest.raises(ValueError, match=r"project|location"):
        GeminiProvider.vertex(model, project="proj-1", token_provider=lambda: "tok")


@pytest.mark.parametrize("model", ["projects/proj-1/locations/us-central1/endpoints/1234567890", "tunedModels/my-tune",
                                   "publishers/meta/models/llama-3.3-70b-instruct-maas"])
def test_a_model_this_wire_cannot_reach_is_refused(model: str) -> None:
    with pytest.raises(ValueError, match="model"):
        GeminiProvider.vertex(model, project="proj-1", token_provider=lambda: "tok")


@pytest.mark.parametrize("project", ["", " ", "my proj", "proj-1/locations/x", " proj-1"])
def test_a_project_that_cannot_be_is_refused(project: str) -> None:
    with pytest.raises(ValueError, match="project"):
        GeminiProvider.vertex("gemini-2.5-flash", project=project, token_provider=lambda: "tok")


def test_a_project_not_a_str_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="project"):
        GeminiProvider.vertex("gemini-2.5-flash", project=123, token_provider=lambda: "tok")  # type: ignore[arg-type]


@pytest.mark.parametrize("location", ["us-central1 ", "US-CENTRAL1", "us central1", "us-central1-a",
                                      "https://us-central1-aiplatform.googleapis.com", ""])
def test_a_location_that_cannot_be_is_refused(location: str) -> None:
    with pytest.raises(ValueError, match="location"):
        GeminiProvider.vertex("gemini-2.5-flash", project="proj-1", location=location, token_provider=lambda: "tok")
    with pytest.raises(ValueError, match="location"):  # checked with a test server's base_url too
        GeminiProvider.vertex("gemini-2.5-flash", project="proj-1", location=location, token_provider=lambda: "tok",
                              base_url="http://127.0.0.1:9")


@pytest.mark.anyio
@pytest.mark.parametrize(("location", "host"), [("global", "aiplatform.googleapis.com"),
                                                ("europe-west4", "europe-west4-aiplatform.googleapis.com")])
async def test_a_location_goes_in_the_host_and_the_path(location: str, host: str) -> None:
    (url,) = await sent("gemini-2.5-flash", location=location)
    assert url.startswith(f"https://{host}/v1/projects/proj-1/locations/{location}/publishers/google/models/")


def test_an_api_key_given_to_vertex_is_refused_not_ignored() -> None:
    with pytest.raises(ValueError, match="api_key") as caught:
        GeminiProvider.vertex("gemini-2.5-flash", project="proj-1", api_key="AIzaSy-not-used-0123456789")
    assert "AIzaSy-not-used-0123456789" not in str(caught.value)


@pytest.mark.anyio
async def test_a_full_resource_name_round_trips_through_the_fakevendor() -> None:
    from agentactors.testing.fakevendor import FakeReply, FakeVendor

    name = "projects/proj-1/locations/europe-west4/publishers/google/models/gemini-2.5-flash"
    async with FakeVendor() as fv:
        fv.script(FakeReply(text="from vertex"))
        async with GeminiProvider.vertex(name, project="proj-1", location="europe-west4", token_provider=lambda: "tok",
                                         base_url=fv.base_url) as p:
            assert (await p.complete(LLMRequest([Message.user("hi")]))).content == "from vertex"
        (seen,) = fv.requests
    assert (seen.wire, seen.model) == ("gemini", "gemini-2.5-flash")
    assert seen.path == ("/v1/projects/proj-1/locations/europe-west4/publishers/google/models/"
                         "gemini-2.5-flash:generateContent")
