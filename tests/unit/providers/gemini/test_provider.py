"""Gemini codec, schema sanitiser and provider: the docs/wire.md Gemini scenarios and the edges around them."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentactors.errors import (
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from agentactors.messages import (
    LLMRequest,
    Message,
    StopReason,
    StreamEnd,
    TextDelta,
    ToolCall,
    ToolCallEnd,
    ToolChoice,
    ToolSpec,
    Usage,
)
from agentactors.providers.gemini.provider import GeminiProvider, GeminiWire
from agentactors.providers.gemini.schema import GeminiSchemaError, to_gemini_schema

CODEC = GeminiWire()
WEATHER = ToolSpec("get_weather", "Weather for a city", {"type": "object", "properties": {"city": {"type": "string"}}})
TIME = ToolSpec("get_time", "Time in a zone", {"type": "object", "properties": {"tz": {"type": "string"}}})


def call_body(*calls: dict[str, Any], finish: str = "STOP") -> dict[str, Any]:
    parts = [{"functionCall": c} for c in calls]
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}]}


def text_body(text: str, finish: str = "STOP", **extra: Any) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish}], **extra}


def decode(body: Any, request: LLMRequest | None = None) -> Any:
    return CODEC.decode_response(body, request=request, model="gemini-2.5-flash", provider="gemini")


def encode(request: LLMRequest, *, stream: bool = False) -> dict[str, Any]:
    return CODEC.encode_request(request, "gemini-2.5-flash", stream=stream)


# -- call ids ------------------------------------------------------------------------------------


def test_two_steps_get_distinct_ids_and_each_result_keeps_its_tool_name() -> None:
    prompt = Message.user("weather and time?")
    first = decode(call_body({"name": "get_weather", "args": {"city": "Paris"}}), LLMRequest([prompt]))
    step1 = [prompt, first.to_message(), Message.tool(first.tool_calls[0].id, "sunny")]
    second = decode(call_body({"name": "get_time", "args": {"tz": "CET"}}), LLMRequest(step1))
    a, b = first.tool_calls[0], second.tool_calls[0]
    assert a.id != b.id
    assert a.id != "call_1" and b.id != "call_1"

    convo = [*step1, second.to_message(), Message.tool(b.id, "12:00")]
    body = encode(LLMRequest(convo, tools=[WEATHER, TIME]))
    responses = [p["functionResponse"] for c in body["contents"] for p in c["parts"] if "functionResponse" in p]
    assert [(r["id"], r["name"], r["response"]) for r in responses] == [
        (a.id, "get_weather", {"return_value": "sunny"}),
        (b.id, "get_time", {"return_value": "12:00"}),
    ]


def test_the_same_response_decoded_twice_never_repeats_an_id() -> None:
    body = call_body({"name": "get_weather", "args": {}}, {"name": "get_weather", "args": {}})
    ids = [c.id for _ in range(50) for c in decode(body).tool_calls]
    assert len(set(ids)) == len(ids) == 100


def test_a_vendor_id_is_used_and_echoed_and_a_reused_one_is_replaced() -> None:
    resp = decode(call_body({"id": "v-1", "name": "get_weather", "args": {"city": "Oslo"}}))
    assert resp.tool_calls[0].id == "v-1"
    history = [Message.user("q"), resp.to_message(), Message.tool("v-1", "rain")]
    # A later response reusing the id gets our own, but the vendor's is what goes back on the wire.
    again = decode(call_body({"id": "v-1", "name": "get_time", "args": {}}), LLMRequest(history))
    call = again.tool_calls[0]
    assert call.id != "v-1"
    body = encode(LLMRequest([*history, again.to_message(), Message.tool(call.id, "noon")]))
    fc = body["contents"][3]["parts"][0]["functionCall"]
    fr = body["contents"][4]["parts"][0]["functionResponse"]
    assert fc["id"] == fr["id"] == "v-1"
    assert fr["name"] == "get_time"


# -- encoding ------------------------------------------------------------------------------------


def test_roles_signatures_and_consecutive_results_in_one_content() -> None:
    calls = [
        ToolCall("c1", "get_weather", {"city": "Rome"}, provider_data={"gemini": {"thought_signature": "ab+/cd=="}}),
        ToolCall("c2", "get_time", {"tz": "UTC"}),
    ]
    msgs = [
        Message.system("be brief"),
        Message.user("hi"),
        Message.system("use metric"),
        Message.assistant("checking", calls, provider_data={"gemini": {"thought_signature": "x+y/"}}),
        Message.tool("c1", "warm"),
        Message.tool("c2", "boom", is_error=True),
        Message.user("thanks"),
        Message.assistant(""),  # nothing to say: no model content with empty parts
    ]
    body = encode(LLMRequest(msgs, tools=[WEATHER, TIME]))
    assert body["systemInstruction"] == {"role": "user", "parts": [{"text": "be brief"}, {"text": "use metric"}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "hi"}]},
        {
            "role": "model",
            "parts": [
                {"text": "checking", "thoughtSignature": "x-y_"},
                {
                    "functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Rome"}},
                    "thoughtSignature": "ab-_cd==",
                },
                {"functionCall": {"id": "c2", "name": "get_time", "args": {"tz": "UTC"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "c1", "name": "get_weather", "response": {"return_value": "warm"}}},
                {"functionResponse": {"id": "c2", "name": "get_time", "response": {"error": "boom"}}},
            ],
        },
        {"role": "user", "parts": [{"text": "thanks"}]},
    ]


def test_a_signature_that_is_not_base64_is_replayed_untouched() -> None:
    call = ToolCall("c1", "get_weather", {}, provider_data={"gemini": {"thought_signature": "not base64: +/"}})
    body = encode(LLMRequest([Message.user("q"), Message.assistant("", [call])]))
    assert body["contents"][1]["parts"][0]["thoughtSignature"] == "not base64: +/"


def test_unsigned_calls_get_the_documented_skip_signature_on_gemini_3_only() -> None:
    foreign = [ToolCall("o1", "get_weather", {}), ToolCall("o2", "get_time", {})]  # made by another provider
    signed = [ToolCall("g1", "get_weather", {}, provider_data={"gemini": {"thought_signature": "c2ln"}}), foreign[1]]
    req = LLMRequest([Message.user("q"), Message.assistant("", foreign), Message.assistant("", signed)])

    def sigs(model: str) -> list[list[str | None]]:
        body = CODEC.encode_request(req, model, stream=False)
        return [[p.get("thoughtSignature") for p in c["parts"]] for c in body["contents"][1:]]

    assert sigs("gemini-3-flash-preview") == [["skip_thought_signature_validator", None], ["c2ln", None]]
    assert sigs("models/gemini-3.1-pro") == sigs("gemini-3-flash-preview")
    assert sigs("gemini-2.5-flash") == [[None, None], ["c2ln", None]]


def test_a_result_for_an_unknown_call_needs_a_name() -> None:
    with pytest.raises(ProviderError) as info:
        encode(LLMRequest([Message.user("q"), Message.tool("ghost", "x")]))
    assert info.value.kind is ErrorKind.request and "ghost" in info.value.message
    body = encode(LLMRequest([Message.user("q"), Message.tool("ghost", "x", name="get_time")]))
    assert body["contents"][1]["parts"][0]["functionResponse"]["name"] == "get_time"


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        (ToolChoice.auto(), {"mode": "AUTO"}),
        (ToolChoice.none(), {"mode": "NONE"}),
        (ToolChoice.required(), {"mode": "ANY"}),
        (ToolChoice.tool("get_time"), {"mode": "ANY", "allowedFunctionNames": ["get_time"]}),
    ],
)
def test_tool_choice_modes(choice: ToolChoice, config: dict[str, Any]) -> None:
    body = encode(LLMRequest([Message.user("q")], tools=[WEATHER, TIME], tool_choice=choice))
    assert body["toolConfig"] == {"functionCallingConfig": config}
    assert [d["name"] for d in body["tools"][0]["functionDeclarations"]] == ["get_weather", "get_time"]


def test_no_tools_means_no_tool_fields_and_generation_settings_map() -> None:
    req = LLMRequest([Message.user("q")], max_tokens=64, temperature=0.2, stop=["END", "STOP"])
    body = encode(req)
    assert "tools" not in body and "toolConfig" not in body
    assert body["generationConfig"] == {"maxOutputTokens": 64, "temperature": 0.2, "stopSequences": ["END", "STOP"]}
    assert "generationConfig" not in encode(LLMRequest([Message.user("q")]))


def test_vendor_options_merge() -> None:
    opts = {
        "gemini": {
            "thinkingConfig": {"thinkingBudget": 0},
            "generationConfig": {"topK": 3},
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
            "toolConfig": {"functionCallingConfig": {"mode": "VALIDATED"}},
            "tools": [{"googleSearch": {}}],
        }
    }
    body = encode(LLMRequest([Message.user("q")], tools=[WEATHER], max_tokens=9, vendor_options=opts))
    assert body["generationConfig"] == {"maxOutputTokens": 9, "thinkingConfig": {"thinkingBudget": 0}, "topK": 3}
    assert body["safetySettings"][0]["threshold"] == "BLOCK_NONE"
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "VALIDATED"}}
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    assert body["tools"][1] == {"googleSearch": {}}
    assert encode(LLMRequest([Message.user("q")], vendor_options={"openai": {"seed": 1}})) == {
        "contents": [{"role": "user", "parts": [{"text": "q"}]}]
    }


def test_tool_schemas_are_sanitised_in_declarations() -> None:
    spec = ToolSpec(
        "flag",
        "",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"on": {"type": ["boolean", "null"], "default": False}},
            "additionalProperties": False,
        },
    )
    decl = encode(LLMRequest([Message.user("q")], tools=[spec]))["tools"][0]["functionDeclarations"][0]
    assert decl == {
        "name": "flag",
        "description": "",
        "parameters": {"type": "object", "properties": {"on": {"type": "boolean", "nullable": True}}},
    }
    bare = encode(LLMRequest([Message.user("q")], tools=[ToolSpec("noop", "", {})]))
    assert bare["tools"][0]["functionDeclarations"][0]["parameters"] == {"type": "object", "properties": {}}


def test_a_recursive_tool_schema_is_a_request_error_naming_the_tool() -> None:
    tree = {
        "type": "object",
        "$defs": {
            "Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
        },
        "properties": {"root": {"$ref": "#/$defs/Node"}},
    }
    with pytest.raises(ProviderError) as info:
        encode(LLMRequest([Message.user("q")], tools=[ToolSpec("tree", "", tree)]))
    assert info.value.kind is ErrorKind.request
    assert "'tree'" in info.value.message and "recursive $ref '#/$defs/Node'" in info.value.message


# -- the schema sanitiser ------------------------------------------------------------------------


def test_nullable_union_drops_default() -> None:
    assert to_gemini_schema({"type": ["boolean", "null"], "default": False}) == {"type": "boolean", "nullable": True}
    assert to_gemini_schema({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "description": "n"}) == {
        "type": "integer",
        "description": "n",
        "nullable": True,
        "minimum": 1,
    }


def test_ref_and_defs_are_inlined_with_sibling_keywords() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "Pet": {"type": "object", "title": "Pet", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        },
        "definitions": {"Size": {"enum": ["S", "M"]}},
        "properties": {
            "pet": {"$ref": "#/$defs/Pet", "description": "the pet"},
            "size": {"$ref": "#/definitions/Size"},
            "pets": {"type": "array", "items": {"$ref": "#/$defs/Pet"}, "maxItems": 3},
        },
    }
    pet = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    assert to_gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "pet": {**pet, "description": "the pet"},
            "size": {"type": "string", "enum": ["S", "M"]},
            "pets": {"type": "array", "items": pet, "maxItems": 3},
        },
    }


def test_recursion_and_bad_refs_raise_clear_errors() -> None:
    with pytest.raises(
        GeminiSchemaError, match=r"recursive \$ref '#/\$defs/A'.*cycle: #/\$defs/A -> #/\$defs/B -> #/\$defs/A"
    ):
        to_gemini_schema(
            {
                "$defs": {
                    "A": {"properties": {"b": {"$ref": "#/$defs/B"}}},
                    "B": {"properties": {"a": {"$ref": "#/$defs/A"}}},
                },
                "properties": {"a": {"$ref": "#/$defs/A"}},
            }
        )
    with pytest.raises(GeminiSchemaError, match="points at nothing"):
        to_gemini_schema({"properties": {"x": {"$ref": "#/$defs/Missing"}}})
    with pytest.raises(GeminiSchemaError, match="only local"):
        to_gemini_schema({"properties": {"x": {"$ref": "https://example.com/s.json"}}})


def test_const_becomes_a_single_value_enum() -> None:
    assert to_gemini_schema({"const": "fixed"}) == {"type": "string", "enum": ["fixed"]}
    assert to_gemini_schema({"type": "integer", "const": 3, "description": "Three."}) == {
        "type": "integer",
        "description": "Three. Must be 3.",
    }
    assert to_gemini_schema({"enum": ["a", None]}) == {"type": "string", "enum": ["a"], "nullable": True}
    assert to_gemini_schema({"type": "integer", "enum": [1, 2]}) == {
        "type": "integer",
        "description": "Allowed values: 1, 2.",
    }


def test_required_names_only_kept_properties() -> None:
    out = to_gemini_schema(
        {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "number", "exclusiveMinimum": 0}},
            "required": ["a", "ghost", "a", "b"],
        }
    )
    assert out == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }
    assert "required" not in to_gemini_schema({"type": "object", "properties": {"a": {}}, "required": ["zz"]})
    # properties and required live only on objects
    assert to_gemini_schema({"type": "string", "properties": {"a": {}}, "required": ["a"]}) == {"type": "string"}


def test_whitelist_formats_combinators_and_type_inference() -> None:
    assert to_gemini_schema({"type": "string", "format": "email", "examples": ["a@b"], "title": "E"}) == {
        "type": "string"
    }
    assert to_gemini_schema({"type": "string", "format": "date-time", "pattern": "^x"}) == {
        "type": "string",
        "format": "date-time",
        "pattern": "^x",
    }
    assert to_gemini_schema({"type": "INTEGER", "format": "int64", "maximum": 9}) == {
        "type": "integer",
        "format": "int64",
        "maximum": 9,
    }
    assert to_gemini_schema({"oneOf": [{"type": "string"}, {"type": "integer"}]}) == {
        "anyOf": [{"type": "string"}, {"type": "integer"}]
    }
    assert to_gemini_schema({"type": ["string", "integer", "null"], "minLength": 1}) == {
        "anyOf": [{"type": "string", "minLength": 1}, {"type": "integer"}],
        "nullable": True,
    }
    assert to_gemini_schema(
        {
            "allOf": [
                {"properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {}}, "required": ["b"]},
            ]
        }
    ) == {"type": "object", "properties": {"a": {"type": "string"}, "b": {}}, "required": ["a", "b"]}
    nested = to_gemini_schema(
        {"type": "object", "properties": {"meta": {"type": "object", "additionalProperties": {}}}}
    )
    assert nested == {"type": "object", "properties": {"meta": {"type": "object"}}}


# -- decoding ------------------------------------------------------------------------------------


def test_blocked_prompt_is_a_content_policy_error() -> None:
    body = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT", "blockReasonMessage": "nope"}, "usageMetadata": {}}
    with pytest.raises(ProviderError) as info:
        decode(body)
    assert info.value.kind is ErrorKind.content_policy and not info.value.retryable
    assert "PROHIBITED_CONTENT" in info.value.message
    decoder = CODEC.stream_decoder(request=None, model="m", provider="gemini")
    with pytest.raises(ProviderError) as info:
        decoder.feed("message", json.dumps(body))
    assert info.value.kind is ErrorKind.content_policy


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"])
def test_filtered_finish_is_content_filter_with_empty_content(reason: str) -> None:
    resp = decode({"candidates": [{"finishReason": reason, "safetyRatings": []}]})
    assert (resp.content, resp.stop_reason, resp.raw_stop_reason) == ("", StopReason.content_filter, reason)


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("MALFORMED_FUNCTION_CALL", StopReason.other),
        ("SOMETHING_NEW", StopReason.other),
        ("MAX_TOKENS", StopReason.max_tokens),
    ],
)
def test_other_finish_reasons_keep_the_raw_value(reason: str, stop: StopReason) -> None:
    resp = decode({"candidates": [{"content": {"role": "model"}, "finishReason": reason}]})
    assert (resp.content, resp.tool_calls, resp.stop_reason, resp.raw_stop_reason) == ("", (), stop, reason)


def test_thought_parts_are_reasoning_and_usage_maps() -> None:
    body = {
        "candidates": [
            {
                "content": {
                    "parts": [{"text": "hmm", "thought": True}, {"text": "Answer", "thoughtSignature": "c2ln"}]
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 100,
            "candidatesTokenCount": 7,
            "thoughtsTokenCount": 30,
            "cachedContentTokenCount": 64,
            "totalTokenCount": 137,
        },
    }
    resp = decode(body)
    assert (resp.content, resp.reasoning) == ("Answer", "hmm")
    assert resp.usage == Usage(input_tokens=100, output_tokens=37, cache_read_tokens=64, reasoning_tokens=30)
    assert resp.provider_data == {"gemini": {"thought_signature": "c2ln", "model": "gemini-2.5-flash"}}


def test_non_object_args_are_marked_unparseable() -> None:
    (call,) = decode(call_body({"name": "get_weather", "args": [1, 2]})).tool_calls
    assert (call.arguments, call.arguments_error, call.raw_arguments) == ({}, "unparseable", "[1,2]")


@pytest.mark.parametrize(
    "body",
    [
        [],
        "x",
        {"candidates": "no"},
        {},
        {"candidates": [{"content": {"parts": [{"text": 3}]}}]},
        call_body({"args": {}}),
    ],
)
def test_malformed_bodies(body: Any) -> None:
    with pytest.raises(MalformedResponseError) as info:
        decode(body)
    assert info.value.kind is ErrorKind.transient


def test_an_error_body_in_a_200_is_classified() -> None:
    body = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    with pytest.raises(ProviderError) as info:
        decode(body)
    assert info.value.kind is ErrorKind.transient and info.value.status == 503


# -- errors --------------------------------------------------------------------------------------


def classify(status: int, body: dict[str, Any]) -> ProviderError:
    return CODEC.classify_error(status, {}, json.dumps(body).encode(), model="gemini-2.5-flash", provider="gemini")


def quota(violation: dict[str, Any], delay: str = "37s", limit: int = 10) -> dict[str, Any]:
    # The message Gemini really sends for a per-minute limit (it reads like a billing failure).
    message = (
        "You exceeded your current quota, please check your plan and billing details.\n"
        f"* Quota exceeded for metric: generate_content_free_tier_requests, limit: {limit}\nPlease retry in 37.2s."
    )
    return {
        "error": {
            "code": 429,
            "message": message,
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
            ],
        }
    }


def test_429_retry_info_gives_retry_after() -> None:
    err = classify(429, quota({"quotaMetric": "generate_content_requests", "quotaId": "PerMinutePerProject"}))
    assert err.retry_after == 37
    assert err.kind is ErrorKind.transient and err.retryable and err.status == 429


def test_per_day_quota_is_an_account_error() -> None:
    err = classify(429, quota({"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}, "3600s"))
    assert err.kind is ErrorKind.account and not err.retryable
    # limit 0: this tier may not use the model at all, however long we wait
    err = classify(429, quota({"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}, limit=0))
    assert err.kind is ErrorKind.account


def test_an_in_stream_quota_error_is_classified_like_an_http_one() -> None:
    decoder = CODEC.stream_decoder(request=None, model="m", provider="gemini")
    with pytest.raises(ProviderError) as info:
        decoder.feed("message", json.dumps(quota({"quotaId": "PerMinute"})))
    assert (info.value.kind, info.value.status, info.value.retry_after) == (ErrorKind.transient, 429, 37)


@pytest.mark.parametrize(
    ("status", "error", "kind"),
    [
        (503, {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}, ErrorKind.transient),
        (404, {"code": 404, "message": "models/x is not found", "status": "NOT_FOUND"}, ErrorKind.account),
        (400, {"code": 400, "message": "bad field", "status": "INVALID_ARGUMENT"}, ErrorKind.request),
        (
            400,
            {
                "code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
            },
            ErrorKind.account,
        ),
        (
            400,
            {"code": 400, "message": "The input token count (2000000) exceeds the maximum number of tokens allowed"},
            ErrorKind.context,
        ),
    ],
)
def test_error_statuses(status: int, error: dict[str, Any], kind: ErrorKind) -> None:
    err = classify(status, {"error": error})
    assert (err.kind, err.status, err.message) == (kind, status, error["message"])


# -- stream decoder ------------------------------------------------------------------------------


def chunk(parts: list[dict[str, Any]], usage: dict[str, int], finish: str | None = None) -> str:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if finish:
        cand["finishReason"] = finish
    return json.dumps({"candidates": [cand], "usageMetadata": usage, "modelVersion": "gemini-x", "responseId": "r1"})


def test_stream_keeps_the_last_complete_usage_and_ends_on_finish_reason() -> None:
    decoder = CODEC.stream_decoder(request=None, model="m", provider="gemini")
    events = decoder.feed("message", chunk([{"text": "Hel"}], {"promptTokenCount": 20}))
    events += decoder.feed("message", "")
    events += decoder.feed("message", chunk([{"text": "lo"}], {"candidatesTokenCount": 2, "thoughtsTokenCount": 5}))
    done = decoder.done  # a local: mypy would hold decoder.done False past the feeds below
    assert not done
    events += decoder.feed("message", chunk([{"functionCall": {"name": "get_time", "args": {"tz": "UTC"}}}], {}))
    events += decoder.feed(
        "message", chunk([{"text": ""}], {"candidatesTokenCount": 9, "thoughtsTokenCount": 5}, "STOP")
    )
    assert decoder.done
    resp = decoder.finish()
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]
    assert [e.call for e in events if isinstance(e, ToolCallEnd)] == list(resp.tool_calls)
    assert resp.content == "Hello" and resp.stop_reason is StopReason.tool_use
    assert resp.usage == Usage(input_tokens=20, output_tokens=14, reasoning_tokens=5)
    assert (resp.model, resp.response_id) == ("gemini-x", "r1")


def test_stream_without_finish_reason_is_malformed_at_finish() -> None:
    decoder = CODEC.stream_decoder(request=None, model="m", provider="gemini")
    decoder.feed("message", chunk([{"text": "partial"}], {}))
    with pytest.raises(MalformedResponseError, match="truncated"):
        decoder.finish()


def test_stream_error_chunk_raises_the_classified_error() -> None:
    decoder = CODEC.stream_decoder(request=None, model="m", provider="gemini")
    data = json.dumps({"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}})
    with pytest.raises(ProviderError) as info:
        decoder.feed("message", data)
    assert info.value.kind is ErrorKind.transient and info.value.status == 429


# -- provider ------------------------------------------------------------------------------------

pytestmark = pytest.mark.anyio
KEY = "AIzaUnitTestGeminiKey000000000000000000"


def mock(handler: Any, seen: list[httpx.Request]) -> httpx.AsyncClient:
    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        response: httpx.Response = handler(request)
        return response

    return httpx.AsyncClient(transport=httpx.MockTransport(record))


async def test_provider_urls_headers_and_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaTheOtherKeyThatMustNotBeUsed000000000")
    async with mock(lambda r: httpx.Response(200, json=text_body("hi")), seen) as client:
        provider = GeminiProvider("models/gemini-2.5-flash", base_url="https://g.test/", http_client=client)
        resp = await provider.complete(LLMRequest([Message.user("q")]))
        await provider.complete(LLMRequest([Message.user("q")], model="tunedModels/my-tune"))
    assert resp.content == "hi" and resp.provider == "gemini"
    assert [str(r.url) for r in seen] == [
        "https://g.test/v1beta/models/gemini-2.5-flash:generateContent",
        "https://g.test/v1beta/tunedModels/my-tune:generateContent",
    ]
    assert all(r.headers["x-goog-api-key"] == KEY and "key=" not in str(r.url) for r in seen)
    assert KEY not in repr(provider)
    monkeypatch.delenv("GEMINI_API_KEY")
    seen.clear()
    async with mock(lambda r: httpx.Response(200, json=text_body("hi")), seen) as client:
        await GeminiProvider("gemini-2.5-flash", http_client=client).complete(LLMRequest([Message.user("q")]))
    assert seen[0].headers["x-goog-api-key"].startswith("AIzaTheOther")
    assert str(seen[0].url).startswith("https://generativelanguage.googleapis.com/v1beta/")


async def test_forced_choice_is_refused_per_model_before_sending() -> None:
    seen: list[httpx.Request] = []
    async with mock(lambda r: httpx.Response(200, json=call_body({"name": "get_time", "args": {}})), seen) as client:
        provider = GeminiProvider("gemma-3-27b-it", api_key=KEY, http_client=client, rejects_forced_tool_choice=["my-"])
        assert provider.supports_forced_tool_choice("gemini-2.5-pro")
        assert not provider.supports_forced_tool_choice("models/gemini-1.0-pro")
        assert not provider.supports_forced_tool_choice("my-model")
        forced = LLMRequest([Message.user("q")], tools=[TIME], tool_choice=ToolChoice.required())
        with pytest.raises(UnsupportedToolChoiceError):
            await provider.complete(forced)
        with pytest.raises(UnsupportedToolChoiceError):
            provider.stream(forced)
        assert seen == []
        resp = await provider.complete(forced.with_model("gemini-2.5-flash"))
    assert resp.stop_reason is StopReason.tool_use and len(seen) == 1


def sse(*chunks: str) -> bytes:
    return "".join(f"data: {c}\r\n\r\n" for c in chunks).encode()


async def test_provider_stream_truncated_after_text_is_interrupted() -> None:
    body = sse(chunk([{"text": "Hello"}], {"promptTokenCount": 3}))
    seen: list[httpx.Request] = []
    headers = {"content-type": "text/event-stream"}
    async with mock(lambda r: httpx.Response(200, headers=headers, content=body), seen) as client:
        provider = GeminiProvider("gemini-2.5-flash", api_key=KEY, http_client=client)
        got: list[Any] = []
        with pytest.raises(StreamInterruptedError) as info:
            async with provider.stream(LLMRequest([Message.user("q")])) as stream:
                async for event in stream:
                    got.append(event)
    assert got == [TextDelta("Hello")] and info.value.partial_text == "Hello"
    assert str(seen[0].url).endswith(":streamGenerateContent?alt=sse")


async def test_provider_stream_completes_on_finish_reason() -> None:
    body = sse(
        chunk([{"text": "Hi"}], {"promptTokenCount": 3}), chunk([{"text": ""}], {"candidatesTokenCount": 1}, "STOP")
    )
    seen: list[httpx.Request] = []
    headers = {"content-type": "text/event-stream"}
    async with mock(lambda r: httpx.Response(200, headers=headers, content=body), seen) as client:
        provider = GeminiProvider("gemini-2.5-flash", api_key=KEY, http_client=client)
        async with provider.stream(LLMRequest([Message.user("q")])) as stream:
            events = [e async for e in stream]
    assert events[:-1] == [TextDelta("Hi")]
    assert isinstance(events[-1], StreamEnd)
    assert events[-1].response.usage == Usage(input_tokens=3, output_tokens=1)
