"""Every ``gemini__*`` corpus file round-trips through the Gemini codec and provider.

For each recorded interaction:

* the response (JSON body, raw SSE or error) is decoded — by the codec directly and
  by ``GeminiProvider`` over ``httpx.MockTransport`` (so SSE goes through httpx-sse)
  — and checked field by field against expectations written out below;
* the conversation is rebuilt as an ``LLMRequest`` (follow-ups are rebuilt from our
  own decoding of the previous interaction, with the client's call ids) and its
  encoding is compared with the recorded body as JSON values.

The recorded requests come from the google-genai SDK.  Differences we accept, applied
to the *recorded* body by :func:`expected_body` before the comparison (everything
else must be equal):

* ``parameters_json_schema`` (full JSON Schema) → our sanitised ``parameters``: the
  only keyword outside Gemini's subset in the corpus is ``additionalProperties``,
  which we drop; the legacy upper-case OpenAPI ``parameters`` → the same with
  lower-case types (both spellings are accepted by the API).
* no ``toolConfig`` while tools are declared → our explicit ``mode: AUTO`` (the
  API default).
* ``mode: ANY`` with ``allowedFunctionNames`` listing every declared tool → our
  ``mode: ANY`` without names (the same constraint).
* ``generationConfig: {}`` → absent.
SDK-only fields (``responseModalities``, ``thinkingConfig``, mode ``VALIDATED``)
are passed through ``vendor_options["gemini"]`` in the rebuilt request.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import (
    LLMRequest,
    LLMResponse,
    Message,
    ReasoningDelta,
    StopReason,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolChoice,
    ToolSpec,
    Usage,
)
from agentactors.providers.gemini.provider import GeminiProvider, GeminiWire
from tests.support.corpus import decode_sse, load, replay_transport

COVERED: frozenset[str] = frozenset(
    {
        "gemini__error_404_not_found__1.json",
        "gemini__finish_max_tokens__1.json",
        "gemini__function_response_followup__1.json",
        "gemini__parallel_function_calls__1.json",
        "gemini__parallel_function_responses_followup__1.json",
        "gemini__stream_function_call_legacy_schema__1.json",
        "gemini__stream_function_call_thought_signature__1.json",
        "gemini__stream_function_response_followup__1.json",
        "gemini__stream_text__1.json",
        "gemini__stream_thought_parts__1.json",
        "gemini__text_system_instruction__1.json",
        "gemini__thought_parts__1.json",
        "gemini__tool_config_any__1.json",
        "gemini__tool_config_any_allowed_names__1.json",
        "gemini__tool_config_auto_function_call__1.json",
        "gemini__tool_config_none__1.json",
        "gemini__tool_config_validated__1.json",
    }
)
NAMES = sorted(COVERED)
CODEC = GeminiWire()
CANARY_KEY = "AIzaCanaryKeyForGeminiCorpusTests0123456"
BASE_URL = "https://gemini.test"
TEXT_ONLY = {"responseModalities": ["TEXT"]}


def model_of(record: dict[str, Any]) -> str:
    return str(record["request"]["path"]).split("/models/", 1)[1].split(":", 1)[0]


def sse_chunks(sse: str) -> list[dict[str, Any]]:
    """An independent reading of the recorded stream (every event here is one ``data: `` line)."""
    return [json.loads(block[len("data: ") :]) for block in sse.split("\r\n\r\n") if block.startswith("data: ")]


# -- decoding ------------------------------------------------------------------------------------


def decode(corpus: Path, name: str) -> tuple[LLMResponse, list[StreamEvent]]:
    """Our decoding of a recorded 200 response: (response, stream events or [])."""
    record = load(corpus, name)
    resp = record["response"]
    model = model_of(record)
    if "sse" not in resp:
        return CODEC.decode_response(resp["json"], request=None, model=model, provider="gemini"), []
    events, response = decode_sse(CODEC.stream_decoder(request=None, model=model, provider="gemini"), resp["sse"])
    return response, events


@attrs.frozen
class Call:
    name: str
    args: dict[str, Any]
    signature_from_part: int | None  # index of the recorded part whose thoughtSignature the call keeps


@attrs.frozen
class Expect:
    stop: StopReason
    raw: str
    usage: Usage
    model: str
    response_id: str
    content: str | Callable[[dict[str, Any]], str] = ""
    reasoning: str | Callable[[dict[str, Any]], str] = ""
    calls: tuple[Call, ...] = ()
    signature: Callable[[dict[str, Any]], str] | None = None  # message-level thoughtSignature
    events: tuple[str, ...] = ()  # stream event kinds before StreamEnd


def _parts(record: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = record["response"]["json"]["candidates"][0]["content"]["parts"]
    return parts


def _stream_texts(record: dict[str, Any], *, thought: bool) -> str:
    out = []
    for chunk in sse_chunks(record["response"]["sse"]):
        for part in chunk["candidates"][0]["content"]["parts"]:
            if "text" in part and bool(part.get("thought")) is thought:
                out.append(part["text"])
    return "".join(out)


def _call_events(n: int) -> tuple[str, ...]:
    return ("start", "delta", "end") * n


EXPECT: dict[str, Expect] = {
    "gemini__finish_max_tokens__1.json": Expect(
        content="The capital of France is",
        stop=StopReason.max_tokens,
        raw="MAX_TOKENS",
        usage=Usage(input_tokens=15, output_tokens=5),
        model="gemini-2.5-flash",
        response_id="R5MoavWNNp_8qtsP2fWD2A0",
    ),
    "gemini__function_response_followup__1.json": Expect(
        content="The weather in Paris is sunny with a temperature of 22C.",
        stop=StopReason.end_turn,
        raw="STOP",
        usage=Usage(input_tokens=88, output_tokens=15),
        model="gemini-2.5-flash",
        response_id="8cF7aaWfIPShz7IP-YCwkAQ",
    ),
    "gemini__parallel_function_calls__1.json": Expect(
        stop=StopReason.tool_use,
        raw="STOP",
        usage=Usage(input_tokens=83, output_tokens=30 + 190, reasoning_tokens=190),
        model="gemini-3-flash-preview",
        response_id="wOd8abGuO5rgz7IP5tLEGA",
        calls=(Call("generate_topic", {}, 0), Call("generate_topic", {}, None), Call("generate_topic", {}, None)),
    ),
    "gemini__parallel_function_responses_followup__1.json": Expect(
        stop=StopReason.tool_use,
        raw="STOP",
        usage=Usage(input_tokens=348, output_tokens=10 + 40, reasoning_tokens=40),
        model="gemini-3-flash-preview",
        response_id="wud8aZm_Lf6tz7IP37eN4A8",
        calls=(Call("generate_topic", {}, 0),),
    ),
    "gemini__stream_function_call_legacy_schema__1.json": Expect(
        stop=StopReason.tool_use,
        raw="STOP",
        usage=Usage(input_tokens=52, output_tokens=5),
        model="gemini-2.0-flash",
        response_id="1lpeaMTxIpW1nvgP-O3vwQY",
        calls=(Call("get_capital", {"country": "France"}, None),),
        events=_call_events(1),
    ),
    "gemini__stream_function_call_thought_signature__1.json": Expect(
        stop=StopReason.tool_use,
        raw="STOP",
        usage=Usage(input_tokens=29, output_tokens=10 + 202, reasoning_tokens=202),
        model="gemini-3-pro-preview",
        response_id="QUVVadTSNJ6_qtsPvN7J8Q0",
        calls=(Call("get_country", {}, 0),),
        events=_call_events(1),
    ),
    "gemini__stream_function_response_followup__1.json": Expect(
        content="The capital of Mexico is Mexico City.",
        stop=StopReason.end_turn,
        raw="STOP",
        # The last chunk's running totals win (the prompt count grows from 55 to 257).
        usage=Usage(input_tokens=257, output_tokens=8),
        model="gemini-3-pro-preview",
        response_id="REVVabaiCdq4qtsPnZu96Qo",
        events=("text", "text"),
    ),
    "gemini__stream_text__1.json": Expect(
        content="The capital of France is Paris.\n",
        stop=StopReason.end_turn,
        raw="STOP",
        usage=Usage(input_tokens=13, output_tokens=8),
        model="gemini-2.0-flash-exp",
        response_id="w1peaMz6INOvnvgPgYfPiQY",
        events=("text", "text", "text"),
    ),
    "gemini__stream_thought_parts__1.json": Expect(
        content=lambda r: _stream_texts(r, thought=False),
        reasoning=lambda r: _stream_texts(r, thought=True),
        stop=StopReason.end_turn,
        raw="STOP",
        usage=Usage(input_tokens=34, output_tokens=469 + 787, reasoning_tokens=787),
        model="gemini-2.5-pro",
        response_id="beHBaJfEMIi-qtsP3769-Q8",
        signature=lambda r: str(
            sse_chunks(r["response"]["sse"])[4]["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
        ),
        events=("reasoning",) * 4 + ("text",) * 19,
    ),
    "gemini__text_system_instruction__1.json": Expect(
        content="Hello! How can I help you today?",
        stop=StopReason.end_turn,
        raw="STOP",
        usage=Usage(input_tokens=9, output_tokens=9 + 34, reasoning_tokens=34),
        model="gemini-2.5-flash",
        response_id="bzlXaa_EE_aHqtsPi_zw8Ao",
    ),
    "gemini__thought_parts__1.json": Expect(
        content=lambda r: str(_parts(r)[1]["text"]),
        reasoning=lambda r: str(_parts(r)[0]["text"]),
        stop=StopReason.end_turn,
        raw="STOP",
        usage=Usage(input_tokens=29, output_tokens=736 + 1001, reasoning_tokens=1001),
        model="gemini-3-pro-preview",
        response_id="ON4gaYT4Gc20qtsP2bSiiQ0",
        signature=lambda r: str(_parts(r)[1]["thoughtSignature"]),
    ),
    "gemini__tool_config_any__1.json": Expect(
        stop=StopReason.tool_use,
        raw="STOP",
        usage=Usage(input_tokens=46, output_tokens=15 + 48, reasoning_tokens=48),
        model="gemini-2.5-flash",
        response_id="_cF7adWFD6u-qtsPvbuDoQI",
        calls=(Call("get_weather", {"city": "Paris"}, 0),),
    ),
    "gemini__tool_config_any_allowed_names__1.json": Expect(
        stop=StopReason.tool_use,
        raw="STOP",
        usage=Usage(input_tokens=83, output_tokens=15 + 50, reasoning_tokens=50),
        model="gemini-2.5-flash",
        response_id="_8F7ae6qEM2kqtsP8sG2uAI",
        calls=(Call("get_weather", {"city": "Paris"}, 0),),
    ),
    "gemini__tool_config_auto_function_call__1.json": Expect(
        stop=StopReason.tool_use,
        raw="STOP",
        usage=Usage(input_tokens=49, output_tokens=15 + 48, reasoning_tokens=48),
        model="gemini-2.5-flash",
        response_id="78F7aafeKcDVz7IPh4DK-AM",
        calls=(Call("get_weather", {"city": "Paris"}, 0),),
    ),
    "gemini__tool_config_none__1.json": Expect(
        content=lambda r: str(_parts(r)[0]["text"]),
        stop=StopReason.end_turn,
        raw="STOP",
        usage=Usage(input_tokens=49, output_tokens=128 + 996, reasoning_tokens=996),
        model="gemini-2.5-flash",
        response_id="-sF7adG3FJqHz7IPiLq5uQg",
    ),
    "gemini__tool_config_validated__1.json": Expect(
        stop=StopReason.tool_use,
        raw="STOP",
        usage=Usage(input_tokens=49, output_tokens=12 + 136, reasoning_tokens=136),
        model="gemini-2.5-pro",
        response_id="7UJaaubyNKDXz7IP_9HOUA",
        calls=(Call("get_user_country", {}, 0),),
    ),
}
ERRORS = {"gemini__error_404_not_found__1.json"}


def _resolve(value: str | Callable[[dict[str, Any]], str], record: dict[str, Any]) -> str:
    return value if isinstance(value, str) else value(record)


def _recorded_signature(record: dict[str, Any], index: int) -> str:
    resp = record["response"]
    parts = _parts(record) if "json" in resp else sse_chunks(resp["sse"])[0]["candidates"][0]["content"]["parts"]
    return str(parts[index]["thoughtSignature"])


def check_response(record: dict[str, Any], name: str, response: LLMResponse, events: list[StreamEvent]) -> None:
    exp = EXPECT[name]
    assert response.content == _resolve(exp.content, record)
    assert response.reasoning == _resolve(exp.reasoning, record)
    assert response.stop_reason is exp.stop
    assert response.raw_stop_reason == exp.raw
    assert response.usage == exp.usage
    assert response.model == exp.model
    assert response.response_id == exp.response_id
    assert response.provider == "gemini"
    if exp.signature is None:
        assert response.provider_data is None
    else:
        assert response.provider_data == {"gemini": {"thought_signature": exp.signature(record),
                                                     "model": model_of(record)}}
    assert len(response.tool_calls) == len(exp.calls)
    for call, want in zip(response.tool_calls, exp.calls, strict=True):
        assert call.name == want.name
        assert call.arguments == want.args
        assert call.arguments_error is None
        assert call.raw_arguments is None  # Gemini carries an object, not text
        assert call.id  # none of the recorded responses has a vendor id: ours is synthesised
        if want.signature_from_part is None:
            assert call.provider_data is None
        else:
            sig = _recorded_signature(record, want.signature_from_part)
            assert call.provider_data == {"gemini": {"thought_signature": sig, "model": model_of(record)}}
    ids = [c.id for c in response.tool_calls]
    assert len(set(ids)) == len(ids)
    if "sse" in record["response"]:
        check_events(exp, response, events)


def check_events(exp: Expect, response: LLMResponse, events: list[StreamEvent]) -> None:
    kinds = {TextDelta: "text", ReasoningDelta: "reasoning", ToolCallStart: "start", ToolCallDelta: "delta"}
    body = [e for e in events if not isinstance(e, StreamEnd)]
    assert tuple(kinds.get(type(e), "end") for e in body) == exp.events
    assert "".join(e.text for e in body if isinstance(e, TextDelta)) == response.content
    assert "".join(e.text for e in body if isinstance(e, ReasoningDelta)) == response.reasoning
    ends = [e for e in body if isinstance(e, ToolCallEnd)]
    assert tuple(e.call for e in ends) == response.tool_calls
    for i, call in enumerate(response.tool_calls):
        start = next(e for e in body if isinstance(e, ToolCallStart) and e.index == i)
        assert (start.id, start.name) == (call.id, call.name)
        fragments = "".join(e.arguments_fragment for e in body if isinstance(e, ToolCallDelta) and e.index == i)
        assert json.loads(fragments) == call.arguments


def check_404(err: ProviderError) -> None:
    assert err.kind is ErrorKind.account  # NOT_FOUND: the model does not exist for this key
    assert err.status == 404
    assert err.retryable is False
    assert err.model == "gemini-3.6-flahs"
    assert err.message.startswith("models/gemini-3.6-flahs is not found for API version v1beta")


def test_covered_is_every_gemini_file(corpus_dir: Path) -> None:
    assert {p.name for p in corpus_dir.glob("gemini__*.json")} == COVERED
    assert set(EXPECT) | ERRORS == COVERED


@pytest.mark.parametrize("name", NAMES)
def test_response_decodes(corpus_dir: Path, name: str) -> None:
    record = load(corpus_dir, name)
    resp = record["response"]
    if name in ERRORS:
        body = json.dumps(resp["json"]).encode()
        check_404(
            CODEC.classify_error(resp["status"], resp["headers"], body, model=model_of(record), provider="gemini")
        )
        return
    response, events = decode(corpus_dir, name)
    check_response(record, name, response, events)


# -- requests ------------------------------------------------------------------------------------


def _lower_types(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def _drop_additional(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _drop_additional(v) for k, v in schema.items() if k != "additionalProperties"}
    if isinstance(schema, list):
        return [_drop_additional(v) for v in schema]
    return schema


def tools_of(record: dict[str, Any]) -> list[ToolSpec]:
    """The tools the user declared (the SDK upper-cased the legacy ones; the user wrote JSON Schema)."""
    specs = []
    for decl in record["request"]["body"].get("tools", [{}])[0].get("functionDeclarations", []):
        schema = decl.get("parameters_json_schema") or _lower_types(decl["parameters"])
        specs.append(ToolSpec(decl["name"], decl["description"], schema))
    return specs


def expected_body(record: dict[str, Any]) -> dict[str, Any]:
    """The recorded body with the accepted SDK differences (module docstring) normalised away."""
    body: dict[str, Any] = copy.deepcopy(record["request"]["body"])
    names: list[str] = []
    for tool in body.get("tools", []):
        for decl in tool["functionDeclarations"]:
            names.append(decl["name"])
            if "parameters_json_schema" in decl:
                decl["parameters"] = _drop_additional(decl.pop("parameters_json_schema"))
            else:
                decl["parameters"] = _lower_types(decl["parameters"])
    if names:
        calling = body.setdefault("toolConfig", {"functionCallingConfig": {"mode": "AUTO"}})["functionCallingConfig"]
        if calling["mode"] == "ANY" and sorted(calling.get("allowedFunctionNames", [])) == sorted(names):
            del calling["allowedFunctionNames"]
    if body.get("generationConfig") == {}:
        del body["generationConfig"]
    return body


def _with_ids(response: LLMResponse, ids: list[str]) -> Message:
    """The assistant turn as our codec decoded it, with the client's call ids (the corpus's pyd_ai_*)."""
    calls = [attrs.evolve(c, id=i) for c, i in zip(response.tool_calls, ids, strict=True)]
    return Message.assistant(
        response.content, calls, reasoning=response.reasoning, provider_data=response.provider_data
    )


def _recorded_call_ids(record: dict[str, Any]) -> list[str]:
    model_turn = record["request"]["body"]["contents"][1]
    return [p["functionCall"]["id"] for p in model_turn["parts"]]


def rebuild(corpus: Path, name: str) -> LLMRequest:
    """The conversation each recorded request carries, as an LLMRequest."""
    record = load(corpus, name)
    model = model_of(record)
    tools = tools_of(record)
    weather = "What's the weather in Paris?"
    text = {"gemini": TEXT_ONLY}
    if name == "gemini__error_404_not_found__1.json":
        return LLMRequest([Message.user("hello")], model=model, vendor_options=text)
    if name == "gemini__finish_max_tokens__1.json":
        msgs = [Message.system("You are a helpful chatbot."), Message.user("What is the capital of France?")]
        opts: dict[str, Any] = {"gemini": {**TEXT_ONLY, "thinkingConfig": {"thinking_budget": 0}}}
        return LLMRequest(msgs, model=model, max_tokens=5, vendor_options=opts)
    if name == "gemini__text_system_instruction__1.json":
        msgs = [Message.system("You are a chatbot."), Message.user("Hello!")]
        return LLMRequest(msgs, model=model, vendor_options=text)
    if name == "gemini__stream_text__1.json":
        msgs = [Message.system("You are a helpful chatbot."), Message.user("What is the capital of France?")]
        return LLMRequest(msgs, model=model, temperature=0.0)
    if name in ("gemini__thought_parts__1.json", "gemini__stream_thought_parts__1.json"):
        msgs = [Message.system("You are a helpful assistant."), Message.user("How do I cross the street?")]
        stream = "stream" in name
        thinking = {"includeThoughts": True} if stream else {"include_thoughts": True}
        opts = {"gemini": {"thinkingConfig": thinking} if stream else {**TEXT_ONLY, "thinkingConfig": thinking}}
        return LLMRequest(msgs, model=model, tools=tools, vendor_options=opts)
    if name == "gemini__stream_function_call_legacy_schema__1.json":
        msgs = [
            Message.system("You are a helpful chatbot."),
            Message.user("What is the temperature of the capital of France?"),
        ]
        return LLMRequest(msgs, model=model, tools=tools)
    if name.startswith("gemini__tool_config_"):
        choice = {
            "gemini__tool_config_any__1.json": ToolChoice.required(),
            "gemini__tool_config_any_allowed_names__1.json": ToolChoice.tool("get_weather"),
            "gemini__tool_config_none__1.json": ToolChoice.none(),
        }.get(name, ToolChoice.auto())
        prompt = weather
        opts = dict(TEXT_ONLY)
        if name == "gemini__tool_config_validated__1.json":
            prompt = (
                "What is the largest city in the user country? "
                "Use the get_user_country tool and then your own world knowledge."
            )
            opts["toolConfig"] = {"functionCallingConfig": {"mode": "VALIDATED"}}
        return LLMRequest(
            [Message.user(prompt)], model=model, tools=tools, tool_choice=choice, vendor_options={"gemini": opts}
        )
    if name == "gemini__function_response_followup__1.json":
        first, _ = decode(corpus, "gemini__tool_config_auto_function_call__1.json")
        ids = _recorded_call_ids(record)
        msgs = [Message.user(weather), _with_ids(first, ids), Message.tool(ids[0], "Sunny, 22C in Paris")]
        return LLMRequest(msgs, model=model, tools=tools, tool_choice=ToolChoice.auto(), vendor_options=text)
    if name == "gemini__parallel_function_calls__1.json":
        msgs = [Message.system("Tell three jokes. Generate topics with the generate_topic tool."), Message.user("")]
        return LLMRequest(msgs, model=model, tools=tools, tool_choice=ToolChoice.required(), vendor_options=text)
    if name == "gemini__parallel_function_responses_followup__1.json":
        first, _ = decode(corpus, "gemini__parallel_function_calls__1.json")
        ids = _recorded_call_ids(record)
        msgs = [
            Message.system("Tell three jokes. Generate topics with the generate_topic tool."),
            Message.user(""),
            _with_ids(first, ids),
            *(Message.tool(i, topic) for i, topic in zip(ids, ("cars", "penguins", "cars"), strict=True)),
        ]
        return LLMRequest(msgs, model=model, tools=tools, tool_choice=ToolChoice.required(), vendor_options=text)
    if name == "gemini__stream_function_call_thought_signature__1.json":
        msgs = [Message.user("What is the capital of the user country? Call the tool")]
        return LLMRequest(msgs, model=model, tools=tools, vendor_options=text)
    if name == "gemini__stream_function_response_followup__1.json":
        first, _ = decode(corpus, "gemini__stream_function_call_thought_signature__1.json")
        ids = _recorded_call_ids(record)
        msgs = [
            Message.user("What is the capital of the user country? Call the tool"),
            _with_ids(first, ids),
            Message.tool(ids[0], "Mexico"),
        ]
        return LLMRequest(msgs, model=model, tools=tools, vendor_options=text)
    raise AssertionError(f"no rebuild for {name}")


def is_stream(record: dict[str, Any]) -> bool:
    return "sse" in record["response"]


@pytest.mark.parametrize("name", NAMES)
def test_request_encodes(corpus_dir: Path, name: str) -> None:
    record = load(corpus_dir, name)
    request = rebuild(corpus_dir, name)
    stream = is_stream(record)
    body = CODEC.encode_request(request, model_of(record), stream=stream)
    assert body == expected_body(record)
    assert CODEC.url(BASE_URL, model_of(record), stream=stream) == BASE_URL + record["request"]["path"]


def test_followups_replay_signatures_as_base64url(corpus_dir: Path) -> None:
    """The corpus's own pairing: a response's base64 signature is the next request's base64url one."""
    pairs = {
        "gemini__tool_config_auto_function_call__1.json": "gemini__function_response_followup__1.json",
        "gemini__parallel_function_calls__1.json": "gemini__parallel_function_responses_followup__1.json",
        "gemini__stream_function_call_thought_signature__1.json": "gemini__stream_function_response_followup__1.json",
    }
    for first, followup in pairs.items():
        received = _recorded_signature(load(corpus_dir, first), 0)
        replayed = load(corpus_dir, followup)["request"]["body"]["contents"][1]["parts"][0]["thoughtSignature"]
        assert ("+" in received or "/" in received) and received != replayed
        # To the model that made the signature: another model gets none (Gemini 3 rejects it).
        sent = CODEC.encode_request(rebuild(corpus_dir, followup), model_of(load(corpus_dir, followup)), stream=False)
        assert sent["contents"][1]["parts"][0]["thoughtSignature"] == replayed


# -- through the provider (httpx + httpx-sse) ----------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("name", NAMES)
async def test_provider_round_trip(corpus_dir: Path, name: str) -> None:
    record = load(corpus_dir, name)
    request = rebuild(corpus_dir, name)
    seen: list[httpx.Request] = []
    async with httpx.AsyncClient(transport=replay_transport(record, seen)) as client:
        provider = GeminiProvider(api_key=CANARY_KEY, base_url=BASE_URL, http_client=client)
        events: list[StreamEvent] = []
        if name in ERRORS:
            with pytest.raises(ProviderError) as info:
                await provider.complete(request)
            check_404(info.value)
            assert CANARY_KEY not in repr(info.value) + str(info.value)
        elif is_stream(record):
            async with provider.stream(request) as stream:
                events = [e async for e in stream]
            assert isinstance(events[-1], StreamEnd)
            assert sum(isinstance(e, StreamEnd) for e in events) == 1
            check_response(record, name, events[-1].response, events)
        else:
            check_response(record, name, await provider.complete(request), [])
    (sent,) = seen
    assert sent.method == "POST"
    assert str(sent.url) == BASE_URL + record["request"]["path"]
    assert CANARY_KEY not in str(sent.url)
    assert sent.headers["x-goog-api-key"] == CANARY_KEY
    assert json.loads(sent.content) == expected_body(record)
