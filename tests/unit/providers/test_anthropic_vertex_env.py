"""``AnthropicProvider.vertex`` reads the Anthropic SDK's variables too: ``ANTHROPIC_VERTEX_PROJECT_ID`` and
``CLOUD_ML_REGION`` (what ``anthropic.AnthropicVertex`` and Claude Code read), before Google's
``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``; an explicit argument wins over both.  A blank variable is
unset; one that cannot be a project or region is refused naming the variable.  ``GeminiProvider.vertex`` keeps
Google's names only.  The real environment is never read (every variable is set or removed here)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agentactors.messages import LLMRequest, Message
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.gemini.provider import GeminiProvider

CLAUDE_OK = {"id": "m", "type": "message", "role": "assistant", "model": "claude", "stop_reason": "end_turn",
             "content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 1, "output_tokens": 1}}
GEMINI_OK = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
CLAUDE = "claude-sonnet-4-5@20250929"
ANTHROPIC_PROJECT, ANTHROPIC_REGION = "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION"
GOOGLE_PROJECT, GOOGLE_LOCATION = "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (ANTHROPIC_PROJECT, ANTHROPIC_REGION, GOOGLE_PROJECT, GOOGLE_LOCATION):
        monkeypatch.delenv(var, raising=False)


async def claude_urls(**kw: Any) -> list[str]:
    urls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        urls.append(str(request.url))
        return httpx.Response(200, json=CLAUDE_OK)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        p = AnthropicProvider.vertex(CLAUDE, token_provider=lambda: "tok", http_client=http, **kw)
        await p.complete(LLMRequest([Message.user("hi")], max_tokens=10))
    return urls


def claude_url(project: str, region: str) -> str:
    host = "aiplatform.googleapis.com" if region == "global" else f"{region}-aiplatform.googleapis.com"
    return (f"https://{host}/v1/projects/{project}/locations/{region}/publishers/anthropic/models/"
            f"{CLAUDE}:rawPredict")


@pytest.mark.anyio
async def test_the_anthropic_sdks_variables_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ANTHROPIC_PROJECT, "sdk-proj")
    monkeypatch.setenv(ANTHROPIC_REGION, "europe-west1")
    assert await claude_urls() == [claude_url("sdk-proj", "europe-west1")]


@pytest.mark.anyio
async def test_they_win_over_googles_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ANTHROPIC_PROJECT, "sdk-proj")
    monkeypatch.setenv(ANTHROPIC_REGION, "global")
    monkeypatch.setenv(GOOGLE_PROJECT, "gcp-proj")
    monkeypatch.setenv(GOOGLE_LOCATION, "us-central1")
    assert await claude_urls() == [claude_url("sdk-proj", "global")]


@pytest.mark.anyio
async def test_each_falls_back_to_googles_name_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ANTHROPIC_PROJECT, "sdk-proj")
    monkeypatch.setenv(GOOGLE_LOCATION, "europe-west4")
    assert await claude_urls() == [claude_url("sdk-proj", "europe-west4")]
    monkeypatch.delenv(ANTHROPIC_PROJECT)
    monkeypatch.delenv(GOOGLE_LOCATION)
    monkeypatch.setenv(GOOGLE_PROJECT, "gcp-proj")
    monkeypatch.setenv(ANTHROPIC_REGION, "asia-southeast1")
    assert await claude_urls() == [claude_url("gcp-proj", "asia-southeast1")]


@pytest.mark.anyio
async def test_blank_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ANTHROPIC_PROJECT, "  ")
    monkeypatch.setenv(ANTHROPIC_REGION, "")
    monkeypatch.setenv(GOOGLE_PROJECT, "gcp-proj")
    assert await claude_urls() == [claude_url("gcp-proj", "us-east5")]


@pytest.mark.anyio
async def test_explicit_arguments_win_over_every_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for var, value in ((ANTHROPIC_PROJECT, "sdk-proj"), (ANTHROPIC_REGION, "europe-west1"),
                       (GOOGLE_PROJECT, "gcp-proj"), (GOOGLE_LOCATION, "us-central1")):
        monkeypatch.setenv(var, value)
    assert await claude_urls(project="arg-proj", region="us-east5") == [claude_url("arg-proj", "us-east5")]
    # An explicit argument that cannot be is refused, not replaced by the environment's.
    with pytest.raises(ValueError, match="project"):
        AnthropicProvider.vertex(CLAUDE, project="", token_provider=lambda: "tok")


@pytest.mark.parametrize(("var", "value"), [(ANTHROPIC_PROJECT, "my proj"), (ANTHROPIC_REGION, "us-east5-a")])
def test_a_variable_that_cannot_be_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch, var: str,
                                                        value: str) -> None:
    monkeypatch.setenv(GOOGLE_PROJECT, "gcp-proj")
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=var):
        AnthropicProvider.vertex(CLAUDE, token_provider=lambda: "tok")


def test_no_project_anywhere_names_the_argument_and_both_variables() -> None:
    with pytest.raises(ValueError) as caught:
        AnthropicProvider.vertex(CLAUDE, token_provider=lambda: "tok")
    message = str(caught.value)
    assert "project=" in message and ANTHROPIC_PROJECT in message and GOOGLE_PROJECT in message


@pytest.mark.anyio
async def test_gemini_on_vertex_keeps_googles_names_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ANTHROPIC_PROJECT, "sdk-proj")
    monkeypatch.setenv(ANTHROPIC_REGION, "europe-west1")
    with pytest.raises(ValueError, match=GOOGLE_PROJECT):
        GeminiProvider.vertex("gemini-2.5-flash", token_provider=lambda: "tok")
    monkeypatch.setenv(GOOGLE_PROJECT, "gcp-proj")
    urls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        urls.append(str(request.url))
        return httpx.Response(200, json=GEMINI_OK)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        p = GeminiProvider.vertex("gemini-2.5-flash", token_provider=lambda: "tok", http_client=http)
        await p.complete(LLMRequest([Message.user("hi")]))
    assert urls[0].startswith("https://us-central1-aiplatform.googleapis.com/v1/projects/gcp-proj/")
