"""Azure OpenAI, like OpenAI's own endpoint, gets none of the fields other servers of the chat wire replay.

A chain whose earlier turns were answered by a Gemini OpenAI-compatible endpoint or OpenRouter (Gemini's
``extra_content`` / ``thought_signature``, OpenRouter's ``reasoning_details``) and then asks an Azure deployment:
Azure OpenAI refuses message fields it does not know, as api.openai.com does — every request a 400.  A generic
compatible server still gets them back.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentactors.messages import LLMRequest, Message, ToolCall, ToolSpec
from agentactors.providers.azure import AzureChatWire, AzureOpenAIProvider
from agentactors.providers.openai.encode import encode_request

pytestmark = pytest.mark.anyio

NOW = ToolSpec("now", "The time.", {"type": "object", "properties": {}})
GEMINI = {"extra_content": {"google": {"thought_signature": "sig"}}}
DETAILS = [{"type": "reasoning.text", "text": "hm"}]
CHAT_OK = {"id": "c1", "model": "gpt-4o", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                                       "finish_reason": "stop"}]}


def _request(stamp: str | None = None) -> LLMRequest:
    """A turn another server answered; ``stamp``: the model the decoders stamped on it (none: stored before)."""
    made_by = {} if stamp is None else {"model": stamp}
    call = ToolCall("c1", "now", {}, provider_data={"openai": {**GEMINI, **made_by}})
    turn = Message.assistant("", [call], provider_data={
        "openai": {"reasoning_details": DETAILS, **GEMINI, **made_by}
    })
    return LLMRequest((Message.user("time?"), turn, Message.tool("c1", "noon", "now")), tools=(NOW,))


def _assistant(body: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in body["messages"] if m["role"] == "assistant")


def _assert_none_foreign(sent: dict[str, Any]) -> None:
    assert "reasoning_details" not in sent and "extra_content" not in sent and "thought_signature" not in sent
    assert "model" not in sent
    assert "extra_content" not in sent["tool_calls"][0]
    assert sent["tool_calls"][0]["function"]["name"] == "now"


@pytest.mark.parametrize("stamp", [None, "google/gemini-2.5-pro", "gemini-3-pro-preview"])
def test_azure_chat_wire_leaves_another_servers_fields_out(stamp: str | None) -> None:
    wire = AzureChatWire("prod-4o", api_version="2024-10-21", model="gpt-4o")
    _assert_none_foreign(_assistant(wire.encode_request(_request(stamp), "prod-4o", stream=False)))


@pytest.mark.parametrize("stamp", [None, "gemini-3-pro-preview"])
def test_openais_own_endpoint_still_gets_none(stamp: str | None) -> None:
    _assert_none_foreign(_assistant(encode_request(_request(stamp), "gpt-4o", stream=False, official=True)))


def test_a_generic_compatible_server_still_gets_them_back() -> None:
    sent = _assistant(encode_request(_request(), "google/gemini-2.5-pro", stream=False))
    assert sent["reasoning_details"] == DETAILS
    assert sent["extra_content"] == GEMINI["extra_content"]
    assert sent["tool_calls"][0]["extra_content"] == GEMINI["extra_content"]


def test_azures_other_checks_stay_a_compatible_servers() -> None:
    """Only the foreign-field decision follows OpenAI's endpoint: Azure's max_tokens field is unchanged."""
    wire = AzureChatWire("prod-4o", api_version="2024-10-21", model="gpt-4o")
    assert wire.official is False
    body = wire.encode_request(LLMRequest((Message.user("hi"),), max_tokens=7), "prod-4o", stream=False)
    assert body["max_tokens"] == 7 and "model" not in body


async def test_an_azure_request_after_another_servers_turn_is_sent_without_its_fields() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=CHAT_OK)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        p = AzureOpenAIProvider("prod-4o", endpoint="https://res.openai.azure.com", api_key="azure-key-0123456789ab",
                                model="gpt-4o", http_client=http)
        assert (await p.complete(_request())).content == "hi"
    (request,) = sent
    _assert_none_foreign(_assistant(json.loads(request.content)))


def test_what_the_deployment_itself_answered_with_still_goes_back_to_it() -> None:
    """A gateway behind Azure's shape that does answer with such fields gets its own back (stamped with the
    deployment's name, as the decoders stamp the name the request went to) — and only its own."""
    wire = AzureChatWire("prod-4o", api_version="2024-10-21", model="gpt-4o")
    sent = _assistant(wire.encode_request(_request("prod-4o"), "prod-4o", stream=False))
    assert sent["reasoning_details"] == DETAILS and sent["tool_calls"][0]["extra_content"] == GEMINI["extra_content"]
    assert "model" not in sent


def test_another_name_of_the_same_model_is_not_the_deployment() -> None:
    """OpenRouter's ``openai/o4-mini`` answered before a deployment named ``o4-mini``: the same bare model, another
    server — a compatible server would get them back (same model), Azure does not."""
    wire = AzureChatWire("o4-mini", api_version="2024-10-21", model="o4-mini")
    _assert_none_foreign(_assistant(wire.encode_request(_request("openai/o4-mini"), "o4-mini", stream=False)))
    generic = _assistant(encode_request(_request("openai/o4-mini"), "o4-mini", stream=False))
    assert generic["reasoning_details"] == DETAILS
