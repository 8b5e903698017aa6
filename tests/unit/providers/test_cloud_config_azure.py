"""AzureOpenAIProvider configured as users write it: every endpoint form pasted from the portal, an SDK or a
curl line, ``api_version`` and ``deployment`` values, each either sent where Azure serves it or refused when the
provider is made, naming what to fix — never a doubled path answered by Azure's bare 404."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.azure import AzureOpenAIProvider

KEY = "azure-key-0123456789abcdef"
CHAT_OK = {"id": "c1", "model": "gpt-4o", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                                       "finish_reason": "stop"}]}
RESP_OK = {"id": "resp_1", "model": "gpt-4o", "status": "completed",
           "output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}]}


async def sent_url(endpoint: str, api: str, **kw: Any) -> str:
    urls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        urls.append(str(request.url))
        return httpx.Response(200, json=RESP_OK if request.url.path.endswith("/responses") else CHAT_OK)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        p = AzureOpenAIProvider("prod-4o", endpoint=endpoint, api_key=KEY, model="gpt-4o", api=api,  # type: ignore[arg-type]
                                http_client=http, **kw)
        assert (await p.complete(LLMRequest([Message.user("Hi")]))).content == "hi"
    (url,) = urls
    return url


ROOTS = [
    ("https://res.openai.azure.com", "https://res.openai.azure.com"),
    ("https://res.openai.azure.com/", "https://res.openai.azure.com"),
    ("https://res.openai.azure.com/openai", "https://res.openai.azure.com"),
    ("https://res.openai.azure.com/openai/", "https://res.openai.azure.com"),
    ("https://res.openai.azure.com/openai/v1/", "https://res.openai.azure.com"),  # the OpenAI SDK's base_url form
    ("https://res.openai.azure.com/openai/v1", "https://res.openai.azure.com"),
    ("https://res.services.ai.azure.com/", "https://res.services.ai.azure.com"),  # an AI Foundry resource
    ("https://res.services.ai.azure.com/openai/v1/", "https://res.services.ai.azure.com"),
    ("https://res.cognitiveservices.azure.com/", "https://res.cognitiveservices.azure.com"),
    ("https://gateway.example.com/azure/", "https://gateway.example.com/azure"),  # a gateway's own path prefix is kept
    ("https://gateway.example.com/openai/prod", "https://gateway.example.com/openai/prod"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("endpoint", "root"), ROOTS)
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_each_resource_endpoint_form_reaches_the_right_route(endpoint: str, root: str, api: str) -> None:
    url = await sent_url(endpoint, api)
    if api == "chat":
        assert url == f"{root}/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21"
    else:
        assert url == f"{root}/openai/v1/responses"


ROUTE_URLS = [
    "https://res.openai.azure.com/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21",
    "https://res.openai.azure.com/openai/deployments/prod-4o/chat/completions",
    "https://res.openai.azure.com/openai/deployments/prod-4o",
    "https://res.openai.azure.com/openai/deployments/prod-4o/",
    "https://res.openai.azure.com/openai/v1/chat/completions",
    "https://res.openai.azure.com/openai/v1/responses",
    "https://res.openai.azure.com/openai/responses?api-version=2025-04-01-preview",
]


@pytest.mark.parametrize("endpoint", ROUTE_URLS)
def test_an_endpoint_naming_a_route_is_refused_naming_the_resource_root(endpoint: str) -> None:
    with pytest.raises(ValueError) as caught:
        AzureOpenAIProvider("prod-4o", endpoint=endpoint, api_key=KEY)
    message = str(caught.value)
    assert "'https://res.openai.azure.com'" in message and "deployment" in message


@pytest.mark.parametrize("endpoint", ["https://res.services.ai.azure.com/models",
                                      "https://res.services.ai.azure.com/api/projects/proj1"])
def test_a_foundry_project_or_model_inference_endpoint_is_refused_naming_the_openai_one(endpoint: str) -> None:
    with pytest.raises(ValueError) as caught:
        AzureOpenAIProvider("prod-4o", endpoint=endpoint, api_key=KEY)
    assert "'https://res.services.ai.azure.com'" in str(caught.value)


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["2024-10-21", "2025-04-01-preview", "2024-12-01-preview"])
async def test_a_dated_api_version_goes_out_as_given(version: str) -> None:
    url = await sent_url("https://res.openai.azure.com", "chat", api_version=version)
    assert url.endswith(f"?api-version={version}")


@pytest.mark.parametrize("version", ["", " ", " 2024-10-21", "2024-10-21 ", "latest", "preview", "v1", "2024-10",
                                     "2024/10/21", "0613"])
def test_an_api_version_azure_would_answer_404_to_is_refused(version: str) -> None:
    with pytest.raises(ValueError, match="api_version"):
        AzureOpenAIProvider("prod-4o", endpoint="https://res.openai.azure.com", api_key=KEY, api_version=version)


def test_an_api_version_not_a_str_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="api_version"):
        AzureOpenAIProvider("prod-4o", endpoint="https://res.openai.azure.com", api_key=KEY,
                            api_version=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("deployment", [" prod-4o", "prod-4o ", "prod 4o", "openai/deployments/prod-4o", "a?b"])
def test_a_deployment_name_azure_cannot_have_is_refused(deployment: str) -> None:
    with pytest.raises(ValueError, match="deployment"):
        AzureOpenAIProvider(deployment, endpoint="https://res.openai.azure.com", api_key=KEY)


@pytest.mark.anyio
async def test_azures_bare_404_names_what_the_url_was_made_of() -> None:
    body = {"error": {"code": "404", "message": "Resource not found"}}
    async with httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(404, json=body))) as http:
        p = AzureOpenAIProvider("prod-4o", endpoint="https://res.openai.azure.com", api_key=KEY, http_client=http,
                                api_version="2024-06-01")
        with pytest.raises(ProviderError) as caught:
            await p.complete(LLMRequest([Message.user("Hi")]))
    assert caught.value.kind is ErrorKind.account and not caught.value.retryable
    message = str(caught.value)
    assert "Resource not found" in message
    assert "'prod-4o'" in message and "'2024-06-01'" in message and "endpoint" in message


@pytest.mark.anyio
async def test_the_content_filter_shapes_are_content_policy_not_a_generic_error() -> None:
    inner = {"error": {"message": "The response was filtered", "type": None, "param": "prompt",
                       "code": None, "status": 400,
                       "innererror": {"code": "ResponsibleAIPolicyViolation",
                                      "content_filter_result": {"hate": {"filtered": True, "severity": "high"}}}}}
    async with httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(400, json=inner))) as http:
        p = AzureOpenAIProvider("prod-4o", endpoint="https://res.openai.azure.com", api_key=KEY, http_client=http)
        with pytest.raises(ProviderError) as caught:
            await p.complete(LLMRequest([Message.user("Hi")]))
    assert caught.value.kind is ErrorKind.content_policy
    assert json.dumps(inner)  # the body shape above is Azure's documented one


@pytest.mark.anyio
@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("tail", ["", "/", "/openai/v1/"])
async def test_the_sdk_endpoint_forms_round_trip_through_the_fakevendor(api: str, tail: str) -> None:
    from agentactors.testing.fakevendor import FakeReply, FakeVendor

    async with FakeVendor() as fv:
        fv.script(FakeReply(text="from azure"))
        async with AzureOpenAIProvider("prod-4o", endpoint=fv.base_url + tail, api_key=KEY, model="gpt-4o",
                                       api=api) as p:  # type: ignore[arg-type]
            assert (await p.complete(LLMRequest([Message.user("Hi")]))).content == "from azure"
        (seen,) = fv.requests
    assert seen.model == "prod-4o" and seen.wire == ("openai" if api == "chat" else "responses")


@pytest.mark.anyio
async def test_the_fakevendor_answers_a_chat_route_without_api_version_with_a_404() -> None:
    # What api_version="" used to send: now refused when the provider is made (above), Azure's answer kept here.
    from agentactors.testing.fakevendor import FakeVendor

    async with FakeVendor() as fv, httpx.AsyncClient() as http:
        response = await http.post(f"{fv.base_url}/openai/deployments/prod-4o/chat/completions",
                                   headers={"api-key": KEY}, json={"messages": [{"role": "user", "content": "Hi"}]})
    assert response.status_code == 404
