"""What the last settings review (0c47224) left: each case a request some vendor answers with a 400, or a setting lost.

* ``ModelSettings(stop=[])`` must mean "no stop sequences" all the way to the wire, a provider's default stop list
  notwithstanding;
* a vendor option that sets a mapped field (``temperature``, ``max_output_tokens``, ``seed``, Bedrock's
  ``inferenceConfig``, Gemini's ``generationConfig``) is checked as the setting is: the value *sent* is judged;
* a tool name the vendor's documented rule refuses (a dot on OpenAI, Azure, Responses, Anthropic and Bedrock; a
  trailing newline anywhere) is refused before sending, typed, naming the tool and the rule.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import httpx
import pytest

from agentactors import (
    LLMRequest,
    Message,
    ModelSettings,
    ResponseFormat,
    ToolChoice,
    ToolSpec,
    UnsupportedSettingError,
)
from agentactors.errors import ErrorKind, ProviderError
from agentactors.providers.anthropic.provider import AnthropicProvider, AnthropicWire
from agentactors.providers.azure import AzureChatWire, AzureResponsesWire
from agentactors.providers.bedrock import encode_request as bedrock_encode
from agentactors.providers.errors import UnsupportedToolNameError
from agentactors.providers.gemini.provider import GeminiProvider, GeminiWire
from agentactors.providers.openai.provider import OpenAIProvider, OpenAIWire
from agentactors.providers.responses.provider import OpenAIResponsesProvider, ResponsesWire
from agentactors.resilience import with_fallback

OPENAI = OpenAIWire(max_tokens_field="max_completion_tokens", official=True)
COMPAT = OpenAIWire()
RESPONSES = ResponsesWire(official=True)
ANTHROPIC = AnthropicWire()
GEMINI = GeminiWire()
BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BEDROCK_NOVA = "us.amazon.nova-pro-v1:0"
KEY = "sk-test-settings-gaps-0123456789"


def req(**fields: Any) -> LLMRequest:
    return LLMRequest([Message.system("Be brief."), Message.user("Hi")], **fields)


def tool(name: str) -> ToolSpec:
    return ToolSpec(name, "A tool.", {"type": "object", "properties": {"q": {"type": "string"}}})


class _Bedrock:
    """The Bedrock codec's encode as a WireCodec-shaped callable (BedrockProvider needs credentials)."""

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        return bedrock_encode(request, model, stream=stream)


BEDROCK: Any = _Bedrock()


def refused(codec: Any, request: LLMRequest, model: str, setting: str, match: str) -> UnsupportedSettingError:
    with pytest.raises(UnsupportedSettingError, match=match) as caught:
        codec.encode_request(request, model, stream=False)
    err = caught.value
    assert err.kind is ErrorKind.request and not err.retryable and err.setting == setting
    return err


# --- 1. an explicit empty stop list is no stop sequences, all the way to the wire --------------------------------


def _stop_fields(body: dict[str, Any]) -> list[Any]:
    config = {**body.get("generationConfig", {}), **body.get("inferenceConfig", {})}
    return [v for k, v in {**body, **config}.items() if k in ("stop", "stop_sequences", "stopSequences")]


@pytest.mark.parametrize(
    ("codec", "model"),
    [(OPENAI, "gpt-4.1"), (COMPAT, "llama-3.3-70b"), (ANTHROPIC, "claude-sonnet-4-5"), (GEMINI, "gemini-2.5-flash"),
     (BEDROCK, BEDROCK_NOVA)],
)
def test_an_empty_stop_list_clears_the_providers_default(codec: Any, model: str) -> None:
    provider_defaults = ModelSettings(stop=["END"])
    agent = ModelSettings(stop=[])  # "no stop sequences", said on purpose
    request = req(**agent.request_fields()).with_defaults(provider_defaults)
    assert _stop_fields(codec.encode_request(request, model, stream=False)) == []
    # an agent that says nothing still gets the provider's default
    request = req().with_defaults(provider_defaults)
    assert _stop_fields(codec.encode_request(request, model, stream=False)) == [["END"]]


@pytest.mark.anyio
async def test_an_agent_that_empties_the_stop_list_sends_none_over_the_providers_default() -> None:
    """End to end: an agent's (or a run's) ``ModelSettings(stop=[])`` reaches the wire as no stop sequences, through
    the loop's request and the provider's own defaults; an agent that says nothing gets the provider's."""
    from agentactors import Agent

    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={
            "id": "c1", "object": "chat.completion", "model": "gpt-4.1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        })

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = OpenAIProvider("gpt-4.1", api_key=KEY, http_client=client, settings=ModelSettings(stop=["END"]))
        assert (await Agent(provider, settings=ModelSettings(stop=[])).run("hi")).ok
        assert (await Agent(provider).run("hi", settings=ModelSettings(stop=[]))).ok
        assert (await Agent(provider).run("hi")).ok
    assert [body.get("stop") for body in bodies] == [None, None, ["END"]]


def test_the_emptied_stop_list_is_an_empty_tuple_to_every_reader_and_survives_a_pickle() -> None:
    request = req(**ModelSettings(stop=[]).request_fields())
    assert request.stop == () and not request.stop and len(request.stop) == 0
    copy = pickle.loads(pickle.dumps(request))
    assert copy.stop == () and copy.with_defaults(ModelSettings(stop=["END"])).stop == ()


# --- 2. a vendor option setting a mapped field is judged as the setting is ---------------------------------------


@pytest.mark.parametrize(
    ("codec", "model", "fields", "setting", "match"),
    [
        # Claude 4.5: temperature or top_p, whichever way each was given
        (ANTHROPIC, "claude-sonnet-4-5", {"temperature": 0.5, "vendor_options": {"anthropic": {"top_p": 0.9}}},
         "top_p", "not both"),
        (ANTHROPIC, "claude-sonnet-4-5", {"vendor_options": {"anthropic": {"temperature": 0.5, "top_p": 0.9}}},
         "top_p", "not both"),
        (ANTHROPIC, "claude-sonnet-4", {"vendor_options": {"anthropic": {"temperature": 1.5}}}, "temperature",
         "0 to 1"),
        # extended thinking from the settings, a temperature from the options
        (ANTHROPIC, "claude-sonnet-4", {"thinking_budget": 2048, "max_tokens": 8000,
                                        "vendor_options": {"anthropic": {"temperature": 0.2}}},
         "temperature", "thinking"),
        # a thinking budget from the options that max_tokens cannot hold
        (ANTHROPIC, "claude-sonnet-4", {"max_tokens": 1000,
                                        "vendor_options": {"anthropic": {"thinking": {"type": "enabled",
                                                                                      "budget_tokens": 2048}}}},
         "thinking_budget", "below max_tokens"),
        # a model that takes no sampling settings: dropped from the settings, refused from the options
        (ANTHROPIC, "claude-opus-4-7", {"vendor_options": {"anthropic": {"temperature": 0.5}}}, "temperature",
         "no sampling"),
        # Bedrock: Converse takes a temperature of 0 to 1, Claude one sampler
        (BEDROCK, BEDROCK_NOVA, {"vendor_options": {"bedrock": {"inferenceConfig": {"temperature": 1.5}}}},
         "temperature", "0 to 1"),
        (BEDROCK, BEDROCK_CLAUDE, {"temperature": 0.5,
                                   "vendor_options": {"bedrock": {"inferenceConfig": {"topP": 0.9}}}},
         "top_p", "not both"),
        (BEDROCK, BEDROCK_NOVA, {"vendor_options": {"bedrock": {"inferenceConfig": {"maxTokens": 0}}}},
         "max_tokens", "maxTokens"),
        # seeds past 64 bits, whichever key carries them
        (OPENAI, "gpt-4.1", {"vendor_options": {"openai": {"seed": 2**64}}}, "seed", "seed"),
        (COMPAT, "llama-3.3-70b", {"vendor_options": {"openai": {"seed": -(2**63) - 1}}}, "seed", "seed"),
        # OpenAI: temperature 0 to 2 on a known model; sampling refused on a model reasoning at an effort
        (OPENAI, "gpt-4.1", {"vendor_options": {"openai": {"temperature": 2.5}}}, "temperature", "0 to 2"),
        (OPENAI, "gpt-5.1", {"temperature": 0.3, "vendor_options": {"openai": {"reasoning_effort": "high"}}},
         "temperature", "effort"),
        (OPENAI, "o3", {"vendor_options": {"openai": {"stop": ["END"]}}}, "stop", "sampling"),
        (OPENAI, "gpt-4.1", {"vendor_options": {"openai": {"stop": ["a", "b", "c", "d", "e"]}}}, "stop", "at most 4"),
        (OPENAI, "gpt-4.1", {"vendor_options": {"openai": {"max_completion_tokens": 0}}}, "max_tokens",
         "max_completion_tokens"),
        # Responses: max_output_tokens of at least 16, however given; its effort and sampling judged together
        (RESPONSES, "gpt-4.1", {"vendor_options": {"openai-responses": {"max_output_tokens": 8}}}, "max_tokens",
         "16"),
        (RESPONSES, "gpt-4.1", {"vendor_options": {"openai-responses": {"temperature": 3}}}, "temperature",
         "0 to 2"),
        (RESPONSES, "gpt-5.1", {"top_p": 0.5,
                                "vendor_options": {"openai-responses": {"reasoning": {"effort": "high"}}}},
         "top_p", "effort"),
        # Gemini: 32-bit integers and a temperature of 0 to 2, at the top of the options or in generationConfig
        (GEMINI, "gemini-2.5-flash", {"vendor_options": {"gemini": {"seed": 2**40}}}, "seed", "seed"),
        (GEMINI, "gemini-2.5-flash", {"vendor_options": {"gemini": {"generationConfig": {"maxOutputTokens": 2**31}}}},
         "max_tokens", "maxOutputTokens"),
        (GEMINI, "gemini-2.5-flash", {"vendor_options": {"gemini": {"topK": 2**33}}}, "vendor_options", "topK"),
        (GEMINI, "gemini-2.5-flash",
         {"vendor_options": {"gemini": {"thinkingConfig": {"thinkingBudget": 2**31}}}}, "thinking_budget",
         "thinkingBudget"),
        (GEMINI, "gemini-2.5-flash", {"vendor_options": {"gemini": {"generationConfig": {"temperature": 2.5}}}},
         "temperature", "0 to 2"),
        (GEMINI, "gemini-2.5-flash",
         {"vendor_options": {"gemini": {"generationConfig": {"stopSequences": ["1", "2", "3", "4", "5", "6"]}}}},
         "stop", "at most 5"),
    ],
)
def test_a_vendor_option_is_judged_as_the_setting_it_sets(
    codec: Any, model: str, fields: dict[str, Any], setting: str, match: str
) -> None:
    refused(codec, req(**fields), model, setting, match)


def test_a_vendor_option_value_that_is_not_a_number_is_named_by_type_only() -> None:
    secret = "sk-proj-not-a-temperature-0123456789"
    err = refused(ANTHROPIC, req(vendor_options={"anthropic": {"temperature": secret}}), "claude-sonnet-4",
                  "temperature", "a str")
    assert secret not in str(err) and "vendor_options['anthropic']['temperature']" in str(err)


@pytest.mark.parametrize(
    ("codec", "model", "fields"),
    [
        (ANTHROPIC, "claude-sonnet-4-5", {"vendor_options": {"anthropic": {"temperature": 0.5, "top_k": 5}}}),
        (ANTHROPIC, "claude-sonnet-4", {"thinking_budget": 2048, "max_tokens": 8000,
                                        "vendor_options": {"anthropic": {"temperature": 1}}}),
        (BEDROCK, BEDROCK_NOVA,
         {"temperature": 0.3, "vendor_options": {"bedrock": {"inferenceConfig": {"topP": 0.9}}}}),
        (OPENAI, "gpt-5.1", {"temperature": 0.3, "vendor_options": {"openai": {"reasoning_effort": "none"}}}),
        (OPENAI, "gpt-4.1", {"vendor_options": {"openai": {"seed": 2**63 - 1, "max_completion_tokens": 10}}}),
        (RESPONSES, "gpt-4.1", {"vendor_options": {"openai-responses": {"max_output_tokens": 16}}}),
        (GEMINI, "gemini-2.5-flash", {"vendor_options": {"gemini": {"seed": 2**31 - 1, "topK": 40}}}),
        # a compatible server's model: its temperature is its business
        (COMPAT, "llama-3.3-70b", {"vendor_options": {"openai": {"temperature": 3.0}}}),
    ],
)
def test_vendor_options_the_vendor_takes_still_go_out(codec: Any, model: str, fields: dict[str, Any]) -> None:
    codec.encode_request(req(**fields), model, stream=False)


# --- 3. a tool name the vendor refuses, refused before sending --------------------------------------------------

REFUSING = [
    (OPENAI, "gpt-4.1", "openai"),
    (RESPONSES, "gpt-4.1", "openai-responses"),
    (AzureChatWire("prod", api_version="2024-10-21"), "prod", "openai"),
    (AzureResponsesWire("prod"), "prod", "openai-responses"),
    (ANTHROPIC, "claude-sonnet-4-5", "anthropic"),
    (BEDROCK, BEDROCK_NOVA, "bedrock"),
    (BEDROCK, BEDROCK_CLAUDE, "bedrock"),
]


@pytest.mark.parametrize(("codec", "model", "wire"), REFUSING)
@pytest.mark.parametrize("name", ["web.search", "web.search.v2"])
def test_a_tool_name_the_vendor_refuses_is_refused_before_sending(codec: Any, model: str, wire: str,
                                                                   name: str) -> None:
    request = req(tools=[tool("ok_tool"), tool(name)])
    with pytest.raises(UnsupportedToolNameError) as caught:
        codec.encode_request(request, model, stream=False)
    err = caught.value
    assert isinstance(err, ProviderError) and err.kind is ErrorKind.request and not err.retryable
    assert err.tool == name and err.provider == wire and "[a-zA-Z0-9_-]" in err.rule and "." not in err.rule
    assert repr(name) in str(err) and "nothing was sent" in str(err)
    # the same tools with names the vendor takes go out
    codec.encode_request(req(tools=[tool("ok_tool"), tool("web_search")]), model, stream=False)


def test_gemini_takes_dotted_tool_names() -> None:
    body = GEMINI.encode_request(req(tools=[tool("web.search")]), "gemini-2.5-flash", stream=False)
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "web.search"


@pytest.mark.parametrize("model", ["llama-3.3-70b", "gpt-4.1"])
def test_a_compatible_servers_model_keeps_its_own_tool_names(model: str) -> None:
    """Whatever model a compatible server serves — one OpenAI's tables know included (vLLM, a router to
    another vendor) — that server judges the names: refusing them here would refuse what it takes."""
    body = COMPAT.encode_request(req(tools=[tool("web.search")]), model, stream=False)
    assert body["tools"][0]["function"]["name"] == "web.search"


@pytest.mark.parametrize("name", ["search\n", "search\nx", "\nsearch"])
def test_a_name_with_a_newline_is_no_tool_name_nor_a_response_formats(name: str) -> None:
    """``$`` also matches before a final newline: ``ToolSpec("search\n")`` and ``ResponseFormat("out\n", ...)``
    were accepted, and a wire that does not check names again sent them to the vendor."""
    with pytest.raises(ValueError, match="invalid"):
        ToolSpec(name)
    with pytest.raises(ValueError, match="response format's name"):
        ResponseFormat(name, {"type": "object"})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("make", "model"),
    [(OpenAIProvider, "gpt-4.1"), (OpenAIResponsesProvider, "gpt-4.1"), (AnthropicProvider, "claude-sonnet-4-5")],
)
async def test_an_invalid_tool_name_sends_nothing_streaming_or_not(make: Any, model: str) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500, json={"error": {"message": "unexpected"}})

    request = req(tools=[tool("web.search")], tool_choice=ToolChoice.tool("web.search"))
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        p = make(model, api_key=KEY, http_client=client)
        with pytest.raises(UnsupportedToolNameError):
            await p.complete(request)
        with pytest.raises(UnsupportedToolNameError):
            async with p.stream(request) as stream:
                async for _ in stream:
                    pass
    assert sent == []


@pytest.mark.anyio
async def test_a_refused_tool_name_does_not_move_a_fallback_chain() -> None:
    """A request fault, like every refusal before sending: the chain raises it, its fallback is not asked."""
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.host)
        return httpx.Response(200, json={"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]},
                                                         "finishReason": "STOP"}]})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        chain = with_fallback(OpenAIProvider("gpt-4.1", api_key=KEY, http_client=client),
                              GeminiProvider("gemini-2.5-flash", api_key=KEY, http_client=client))
        with pytest.raises(UnsupportedToolNameError):
            await chain.complete(req(tools=[tool("web.search")]))
    assert sent == []


# --- 4. the adversarial pass: what else a vendor answers with a 400 that is known before sending ----------------


@pytest.mark.parametrize(("codec", "model"), [(ANTHROPIC, "claude-sonnet-4-5"), (BEDROCK, BEDROCK_CLAUDE)])
@pytest.mark.parametrize("stop", [["\n"], ["END", " \t\n"]])
def test_claude_refuses_a_whitespace_only_stop_sequence(codec: Any, model: str, stop: list[str]) -> None:
    """Claude's 400: "stop_sequences: each stop sequence must contain non-whitespace" (Bedrock's too)."""
    refused(codec, req(stop=stop), model, "stop", "non-whitespace")
    # from the vendor options as well
    options = {"anthropic": {"stop_sequences": stop}} if codec is ANTHROPIC else {
        "bedrock": {"inferenceConfig": {"stopSequences": stop}}}
    refused(codec, req(vendor_options=options), model, "stop", "non-whitespace")


def test_whitespace_stop_sequences_go_out_where_the_vendor_takes_them() -> None:
    assert OPENAI.encode_request(req(stop=["\n"]), "gpt-4.1", stream=False)["stop"] == ["\n"]
    assert bedrock_encode(req(stop=["\n"]), BEDROCK_NOVA, stream=False)["inferenceConfig"]["stopSequences"] == ["\n"]


def test_openai_reasoning_models_refuse_max_tokens_from_the_options_on_openais_endpoint() -> None:
    """"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'"."""
    options = {"openai": {"max_tokens": 500}}
    refused(OPENAI, req(vendor_options=options), "o3", "max_tokens", "max_completion_tokens")
    # the setting picks the field the model takes; a compatible server (a router) judges its own
    assert OPENAI.encode_request(req(max_tokens=500), "o3", stream=False)["max_completion_tokens"] == 500
    assert COMPAT.encode_request(req(vendor_options=options), "o3", stream=False)["max_tokens"] == 500
    assert OPENAI.encode_request(req(vendor_options=options), "gpt-4.1", stream=False)["max_tokens"] == 500
