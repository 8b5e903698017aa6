"""A Responses failure inside an HTTP 200 (a ``failed`` body, ``response.failed``, an ``error`` event) is
classified by its documented ``ResponseError`` code as the same code would be with an HTTP status: a flagged
prompt or a bad image is not asked again."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentactors import OpenAIResponsesProvider, with_retry
from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.responses import ResponsesWire

_IMAGE_CODES = (
    "invalid_image", "invalid_image_format", "invalid_base64_image", "invalid_image_url", "image_too_large",
    "image_too_small", "image_parse_error", "invalid_image_mode", "image_file_too_large",
    "unsupported_image_media_type", "empty_image_file", "failed_to_download_image", "image_file_not_found",
)
# code -> (kind, status, retryable)
CASES: dict[str, tuple[ErrorKind, int, bool]] = {
    "invalid_prompt": (ErrorKind.content_policy, 400, False),
    "image_content_policy_violation": (ErrorKind.content_policy, 400, False),
    **{code: (ErrorKind.request, 400, False) for code in _IMAGE_CODES},
    "rate_limit_exceeded": (ErrorKind.transient, 429, True),
    "server_error": (ErrorKind.transient, 500, True),
    "vector_store_timeout": (ErrorKind.transient, 500, True),
    "some_new_code": (ErrorKind.transient, 500, True),  # an unknown code: the vendor failed mid-answer
}


def _error(code: str) -> dict[str, Any]:
    return {"code": code, "message": f"it failed ({code})"}


def _failed_body(code: str) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "failed", "output": [], "error": _error(code)}


def _events(shape: str, code: str) -> list[dict[str, Any]]:
    created = {"type": "response.created", "sequence_number": 0,
               "response": {"id": "resp_1", "status": "in_progress", "output": []}}
    if shape == "response.failed":
        return [created, {"type": "response.failed", "sequence_number": 1, "response": _failed_body(code)}]
    return [created, {"type": "error", "sequence_number": 1, "param": None, **_error(code)}]


def _check(err: ProviderError, code: str) -> None:
    kind, status, retryable = CASES[code]
    assert (err.kind, err.status, err.retryable) == (kind, status, retryable)
    assert code in err.message


@pytest.mark.parametrize("code", CASES)
def test_a_failed_json_body_is_classified_by_its_code(code: str) -> None:
    with pytest.raises(ProviderError) as info:
        ResponsesWire().decode_response(_failed_body(code), request=None, model="m", provider="p")
    _check(info.value, code)


@pytest.mark.parametrize("shape", ["response.failed", "error"])
@pytest.mark.parametrize("code", CASES)
def test_a_stream_failure_is_classified_by_its_code(code: str, shape: str) -> None:
    decoder = ResponsesWire().stream_decoder(request=None, model="m", provider="p")
    with pytest.raises(ProviderError) as info:
        for event in _events(shape, code):
            decoder.feed(event["type"], json.dumps(event))
    _check(info.value, code)


@pytest.mark.parametrize("code", ["invalid_prompt", "image_content_policy_violation"])
def test_a_policy_code_over_http_is_the_same_content_policy_error(code: str) -> None:
    err = ResponsesWire().classify_error(400, {}, json.dumps({"error": _error(code)}).encode(), model="m",
                                         provider="p")
    assert (err.kind, err.status, err.retryable) == (ErrorKind.content_policy, 400, False)


def test_a_vendor_saying_retry_keeps_its_word_over_the_table() -> None:
    body = json.dumps({"error": _error("invalid_prompt")}).encode()
    err = ResponsesWire().classify_error(400, {"x-should-retry": "true"}, body, model="m", provider="p")
    assert (err.kind, err.retryable) == (ErrorKind.transient, True)


def _sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["json", "response.failed", "error"])
@pytest.mark.parametrize("code", ["invalid_prompt", "image_content_policy_violation", "invalid_image_url"])
async def test_with_retry_sends_a_permanent_in_band_failure_once(code: str, how: str) -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if how == "json":
            return httpx.Response(200, json=_failed_body(code))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=_sse(_events(how, code)))

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        provider = with_retry(OpenAIResponsesProvider("gpt-5", api_key="sk-test", http_client=http),
                              max_attempts=4, base_delay=0.0, max_delay=0.0)
        request = LLMRequest([Message.user("hi")])
        with pytest.raises(ProviderError) as info:
            if how == "json":
                await provider.complete(request)
            else:
                async with provider.stream(request) as events:
                    async for _ in events:
                        pass
    assert len(sent) == 1
    assert info.value.retryable is False and info.value.kind is CASES[code][0]


@pytest.mark.anyio
async def test_with_retry_still_retries_a_transient_in_band_failure() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=_failed_body("server_error"))

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        provider = with_retry(OpenAIResponsesProvider("gpt-5", api_key="sk-test", http_client=http),
                              max_attempts=3, base_delay=0.0, max_delay=0.0)
        with pytest.raises(ProviderError) as info:
            await provider.complete(LLMRequest([Message.user("hi")]))
    assert len(sent) == 3 and info.value.kind is ErrorKind.transient


@pytest.mark.parametrize("code", ["invalid_prompt", "image_content_policy_violation"])
def test_azure_responses_over_http_reads_a_policy_code_as_openai_does(code: str) -> None:
    from agentactors.providers.azure import AzureResponsesWire

    err = AzureResponsesWire("my-deployment").classify_error(
        400, {}, json.dumps({"error": _error(code)}).encode(), model="m", provider="p"
    )
    assert (err.kind, err.status, err.retryable) == (ErrorKind.content_policy, 400, False)


def test_azure_responses_still_reads_its_own_content_filter_code() -> None:
    from agentactors.providers.azure import AzureResponsesWire

    body = {"error": {"code": "invalid_request_error", "message": "filtered",
                      "innererror": {"code": "ResponsibleAIPolicyViolation"}}}
    err = AzureResponsesWire("my-deployment").classify_error(400, {}, json.dumps(body).encode(), model="m",
                                                             provider="p")
    assert (err.kind, err.retryable) == (ErrorKind.content_policy, False)
