"""Every OpenAI Responses corpus file round-trips through the codec and the provider.

For each recorded interaction:

* the request: the conversation is rebuilt as an ``LLMRequest`` from the recorded body (independently
  of the codec) and encoded; the body must equal the recorded one as JSON values, up to what the
  recording client sent that means nothing or that this codec decides otherwise on purpose (see
  :func:`normalized`: ``store`` is always ``false`` here, empty ``instructions`` / descriptions and
  ``null`` fields are not sent, an ``fc_`` item id goes out only beside its reasoning item);
* the response (JSON, raw SSE or an error) is decoded and checked against hand-written expectations,
  by the codec and by ``OpenAIResponsesProvider`` (and, for the Azure recording, ``AzureOpenAIProvider``)
  over ``httpx.MockTransport`` replaying the recorded bytes;
* a decoded answer sent back as the next request's assistant turn gives the recorded follow-up's items
  (reasoning items replayed untouched).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from agentactors.errors import ErrorKind, ProviderError, UnsupportedSettingError
from agentactors.messages import (
    LLMRequest,
    LLMResponse,
    Message,
    ResponseFormat,
    StopReason,
    StreamEnd,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolChoice,
    ToolSpec,
    Usage,
)
from agentactors.providers.azure import AzureOpenAIProvider
from agentactors.providers.responses import WIRE, OpenAIResponsesProvider, ResponsesWire
from agentactors.providers.responses.encode import encode_input
from tests.support.corpus import check_stream_events, load, outcome, replay_transport
from tests.support.corpus import decode_sse as decode_recorded

pytestmark = pytest.mark.anyio

RECORDED = object()


@attrs.frozen
class Expect:
    stop: StopReason
    usage: Usage
    model: str
    content: Any = ""  # str, or RECORDED (the recorded message texts joined)
    calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()
    reasoning_prefix: str = ""
    items: tuple[str, ...] | None = None  # the replay skeleton's item types (None: nothing kept)


@attrs.frozen
class ExpectError:
    kind: ErrorKind
    status: int
    message_part: str


def _u(i: int, o: int, r: int = 0, cr: int = 0) -> Usage:
    return Usage(input_tokens=i, output_tokens=o, cache_read_tokens=cr, reasoning_tokens=r)


TU, ET = StopReason.tool_use, StopReason.end_turn
G4O, G5, G55 = "gpt-4o-2024-08-06", "gpt-5-2025-08-07", "gpt-5.5-2026-04-23"
CAPITAL = ("get_capital", {"country": "PotatoLand"})

EXPECTED: dict[str, Expect | ExpectError] = {
    "openai-responses__azure_v1_reasoning__1.json": Expect(ET, _u(18, 16, 9), "gpt-5.5", "Paris",
                                                           items=("reasoning", "message")),
    "openai-responses__error_400_invalid_temperature__1.json": ExpectError(
        ErrorKind.request, 400, "Invalid 'temperature': decimal below minimum value"
    ),
    "openai-responses__function_call__1.json": Expect(
        TU, _u(40, 18), G4O, calls=(("call_YfwRsW8sUxDKipwyhWTzOXCA", *CAPITAL),)
    ),
    "openai-responses__function_call_output_followup__1.json": Expect(
        ET, _u(67, 11), G4O, "The capital of PotatoLand is Potato City."
    ),
    "openai-responses__history_function_call_then_user__1.json": Expect(
        TU, _u(103, 409, 384), G5,
        calls=(("call_LIXPi261Xx3dGYzlDsOoyHGk", "final_result", {"city": "Mexico City", "country": "Mexico"}),),
        items=("reasoning", "function_call"),
    ),
    "openai-responses__instructions__1.json": Expect(ET, _u(24, 8), G4O, "The capital of France is Paris."),
    "openai-responses__instructions_no_stream_flag__1.json": Expect(
        ET, _u(42, 8), G4O, "The capital of France is Paris."
    ),
    "openai-responses__parallel_function_call_outputs_followup__1.json": Expect(ET, _u(335, 44), G4O, RECORDED),
    "openai-responses__parallel_function_calls__1.json": Expect(
        TU, _u(0, 0), G4O,
        calls=(
            ("call_LWVp74L5HaH2KNvgVz9PJsrj", "get_location", {"loc_name": "Londos"}),
            ("call_YnRAWeTyxI91m5uNa5bxXwVO", "get_location", {"loc_name": "London"}),
        ),
    ),
    # No encrypted content was asked for: the reasoning item cannot be replayed statelessly, so none is kept.
    "openai-responses__reasoning_effort_empty_summary__1.json": Expect(
        ET, _u(88, 547, 128), "o3-mini-2025-01-31", RECORDED
    ),
    "openai-responses__reasoning_message_function_call__1.json": Expect(
        TU, _u(63, 72, 29), G55, "I'll check the capital lookup tool for \"PotatoLand.\"",
        calls=(("call_ALAJMWK9buNN7RXxxXbECcHa", *CAPITAL),), items=("reasoning", "message", "function_call"),
    ),
    "openai-responses__reasoning_message_function_call_followup__1.json": Expect(
        ET, _u(150, 16), G55, "The capital of PotatoLand is **Potato City**.", items=("message",)
    ),
    "openai-responses__reasoning_replayed_followup__1.json": Expect(ET, _u(257, 5), G5, "42"),
    "openai-responses__reasoning_summary_encrypted__1.json": Expect(
        ET, _u(34, 226, 59), "gpt-5.2-2025-12-11", RECORDED, reasoning_prefix="**Generating factorial function**",
        items=("reasoning", "message"),
    ),
    "openai-responses__reasoning_then_function_call__1.json": Expect(
        TU, _u(40, 148, 128), G5, calls=(("call_cp3x6W9eeyMIryJUNhgMaP5w", "get_meaning_of_life", {}),),
        items=("reasoning", "function_call"),
    ),
    "openai-responses__stream_followup_reasoning_replayed__1.json": Expect(
        ET, _u(147, 16), G55, "The capital of PotatoLand is **Potato City**.", items=("message",)
    ),
    "openai-responses__stream_function_call__1.json": Expect(
        TU, _u(255, 16), G4O, calls=(("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", {"country": "France"}),)
    ),
    "openai-responses__stream_reasoning_text_function_call__1.json": Expect(
        TU, _u(63, 69, 26), G55, "I\u2019ll check the capital lookup tool for \u201cPotatoLand.\u201d",
        calls=(("call_LabG58Uhrq9kZvR52BYKjToD", *CAPITAL),), items=("reasoning", "message", "function_call"),
    ),
    "openai-responses__stream_text_after_function_call_output__1.json": Expect(
        ET, _u(278, 9), G4O, "The capital of France is Paris."
    ),
    "openai-responses__structured_output_json_schema_text__1.json": Expect(
        ET, _u(89, 16), G4O, '{"city":"Mexico City","country":"Mexico"}'
    ),
    "openai-responses__structured_output_json_schema_with_tools__1.json": Expect(
        TU, _u(66, 12), G4O, calls=(("call_tTAThu8l2S9hNky2krdwijGP", "get_user_country", {}),)
    ),
    "openai-responses__text__1.json": Expect(ET, _u(14, 8), G4O, "The capital of France is Paris."),
    "openai-responses__tool_choice_required__1.json": Expect(
        TU, _u(62, 12), G4O, calls=(("call_ZWkVhdUjupo528U9dqgFeRkH", "get_user_country", {}),)
    ),
    "openai-responses__tool_choice_required_followup__1.json": Expect(
        TU, _u(85, 20), G4O,
        calls=(("call_iFBd0zULhSZRR908DfH73VwN", "final_result", {"city": "Mexico City", "country": "Mexico"}),),
    ),
}

COVERED: frozenset[str] = frozenset(EXPECTED)
FILES = sorted(EXPECTED)
AZURE = "openai-responses__azure_v1_reasoning__1.json"


def test_covered_is_exactly_the_responses_family(corpus_dir: Path) -> None:
    on_disk = {p.name for p in corpus_dir.glob("openai-responses__*.json")}
    assert on_disk == COVERED


# --- the request: body -> LLMRequest, independently of the codec ---------------------------------


def _assistant(items: list[dict[str, Any]]) -> Message:
    """One assistant turn from its recorded items: text, calls, and the replay skeleton when it matters."""
    calls, texts, skeleton = [], [], []
    for item in items:
        kind = item.get("type", "message")
        if kind == "reasoning":
            skeleton.append(item)
        elif kind == "function_call":
            pd = {WIRE: {"id": item["id"]}} if "id" in item else None
            calls.append(ToolCall.from_raw(item["call_id"], item["name"], item["arguments"], provider_data=pd))
            skeleton.append({"type": "function_call", "call_id": item["call_id"]})
        else:
            content = item["content"]
            text = content if isinstance(content, str) else "".join(p["text"] for p in content)
            texts.append(text)
            entry = {"type": "message", "text": text}
            entry.update({k: item[k] for k in ("id", "phase") if k in item})
            skeleton.append(entry)
    keep = any(i["type"] == "reasoning" or "phase" in i for i in skeleton)
    return Message.assistant("".join(texts), calls, provider_data={WIRE: {"items": skeleton}} if keep else None)


def messages_from_input(body: dict[str, Any]) -> list[Message]:
    out: list[Message] = []
    if body.get("instructions"):
        out.append(Message.system(body["instructions"]))
    turn: list[dict[str, Any]] = []
    for item in body["input"]:
        if item.get("type") in ("reasoning", "function_call") or item.get("role") == "assistant":
            turn.append(item)
            continue
        if turn:
            out.append(_assistant(turn))
            turn = []
        if item.get("type") == "function_call_output":
            out.append(Message.tool(item["call_id"], item["output"]))
        else:
            out.append(Message.user(item["content"]))
    if turn:
        out.append(_assistant(turn))
    return out


def request_from_body(body: dict[str, Any]) -> LLMRequest:
    tools = [ToolSpec(t["name"], t.get("description") or "", t["parameters"]) for t in body.get("tools", ())]
    choice = body.get("tool_choice", "auto")
    options: dict[str, Any] = {}
    strict = [t["name"] for t in body.get("tools", ()) if t.get("strict")]
    if strict:
        options["strict_tools"] = strict
    reasoning = dict(body.get("reasoning") or {})
    effort = reasoning.pop("effort", None)
    if "summary" in reasoning:
        options["reasoning_summary"] = reasoning.pop("summary")
    if reasoning:
        options["reasoning"] = reasoning
    temperature = body.get("temperature")
    if temperature is not None and temperature < 0:
        options["temperature"] = temperature  # out of range on purpose (the recorded 400): past validation
        temperature = None
    fmt = (body.get("text") or {}).get("format")
    return LLMRequest(
        messages_from_input(body),
        model=body["model"],
        tools=tools,
        tool_choice=ToolChoice.tool(choice["name"]) if isinstance(choice, dict) else ToolChoice(choice),
        temperature=temperature,
        reasoning_effort=effort,
        response_format=ResponseFormat(fmt["name"], fmt["schema"], strict=fmt["strict"]) if fmt else None,
        vendor_options={WIRE: options} if options else {},
    )


def normalized(body: dict[str, Any]) -> dict[str, Any]:
    """What the recording client and this codec may differ on without meaning anything different."""
    out: dict[str, Any] = json.loads(json.dumps(body))
    for key in ("store", "include", "previous_response_id"):
        out.pop(key, None)
    if not out.get("instructions"):
        out.pop("instructions", None)
    out.setdefault("stream", False)
    for tool in out.get("tools", ()):
        if not tool.get("description"):
            tool.pop("description", None)
    items = []
    reasoning_seen = False
    for item in out["input"]:
        if item.get("type") == "reasoning":
            reasoning_seen = True
        elif item.get("type") != "function_call" and item.get("role") != "assistant":
            reasoning_seen = False
        if item.get("role") == "assistant" and item.get("content") == "":
            continue  # an empty assistant text says nothing
        if item.get("type") == "function_call":
            if item.get("status") is None:
                item.pop("status", None)
            if not reasoning_seen:
                item.pop("id", None)  # an fc_ id without its reasoning item is a 400: not sent
        items.append(item)
    out["input"] = items
    return out


# Recorded 400s the codec now refuses before sending (a vendor option's value judged as the setting is): the
# vendor's answer is still classified (test_codec_decodes_the_recorded_response), but nothing is sent to get it.
REFUSED_BEFORE_SENDING = frozenset({"openai-responses__error_400_invalid_temperature__1.json"})


@pytest.mark.parametrize("name", FILES)
def test_request_encodes_to_the_recorded_body(corpus_dir: Path, name: str) -> None:
    body = load(corpus_dir, name)["request"]["body"]
    if name in REFUSED_BEFORE_SENDING:
        with pytest.raises(UnsupportedSettingError):
            ResponsesWire().encode_request(request_from_body(body), body["model"], stream=bool(body.get("stream")))
        return
    encoded = ResponsesWire().encode_request(request_from_body(body), body["model"], stream=bool(body.get("stream")))
    assert encoded["store"] is False
    if "include" in body:
        assert encoded["include"] == body["include"]
    assert normalized(encoded) == normalized(body)


REPLAYS = [
    # (first answer, follow-up whose input replays it, index of the first replayed item in the follow-up)
    ("openai-responses__reasoning_then_function_call__1.json", "openai-responses__reasoning_replayed_followup__1.json"),
    ("openai-responses__reasoning_message_function_call__1.json",
     "openai-responses__reasoning_message_function_call_followup__1.json"),
    ("openai-responses__parallel_function_calls__1.json",
     "openai-responses__parallel_function_call_outputs_followup__1.json"),
    ("openai-responses__function_call__1.json", "openai-responses__function_call_output_followup__1.json"),
    ("openai-responses__tool_choice_required__1.json", "openai-responses__tool_choice_required_followup__1.json"),
]


@pytest.mark.parametrize(("first", "followup"), REPLAYS)
def test_a_decoded_answer_replays_as_the_recorded_followup(corpus_dir: Path, first: str, followup: str) -> None:
    """The answer decoded and sent back is what the recorded follow-up sent: reasoning items untouched."""
    data = load(corpus_dir, first)
    response = ResponsesWire().decode_response(data["response"]["json"], request=None, model="m", provider="p")
    body = load(corpus_dir, followup)["request"]["body"]
    _, items = encode_input([*messages_from_input(data["request"]["body"]), response.to_message()])
    recorded = normalized({"input": body["input"][: len(items) + 1]})["input"][: len(items)]
    assert normalized({"input": items})["input"] == recorded
    for item in items:
        if item.get("type") == "reasoning":
            original = next(i for i in data["response"]["json"]["output"] if i.get("id") == item["id"])
            assert item == original


# --- the response --------------------------------------------------------------------------------


def recorded_text(data: dict[str, Any]) -> str:
    return "".join(
        p["text"]
        for item in data["response"]["json"]["output"]
        if item["type"] == "message"
        for p in item["content"]
    )


def check_response(resp: LLMResponse, exp: Expect, data: dict[str, Any], *, provider: str) -> None:
    assert resp.provider == provider
    assert resp.content == (recorded_text(data) if exp.content is RECORDED else exp.content)
    assert resp.stop_reason is exp.stop
    assert resp.raw_stop_reason == "completed"
    assert resp.usage == exp.usage
    assert resp.model == exp.model
    assert resp.response_id is not None and resp.response_id.startswith("resp_")
    if exp.reasoning_prefix:
        assert resp.reasoning.startswith(exp.reasoning_prefix)
    else:
        assert resp.reasoning == ""
    items = (resp.provider_data or {}).get(WIRE, {}).get("items")
    assert (tuple(i["type"] for i in items) if items else None) == exp.items
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == list(exp.calls)
    for call in resp.tool_calls:
        assert call.arguments_error is None
        assert (call.provider_data or {}).get(WIRE, {}).get("id", "").startswith("fc_")


def decode_sse(raw: str, request: LLMRequest | None, model: str) -> tuple[list[StreamEvent], LLMResponse]:
    decoder = ResponsesWire().stream_decoder(request=request, model=model, provider="openai-responses")
    return decode_recorded(decoder, raw)


def check_events(events: list[StreamEvent], resp: LLMResponse) -> None:
    check_stream_events(events, resp)
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    for end in (e for e in events if isinstance(e, ToolCallEnd)):
        assert "".join(d.arguments_fragment for d in deltas if d.index == end.index) == end.call.raw_arguments


def check_error(err: ProviderError, exp: ExpectError) -> None:
    assert err.kind is exp.kind
    assert err.status == exp.status
    assert err.retryable is False
    assert exp.message_part in err.message


@pytest.mark.parametrize("name", FILES)
def test_codec_decodes_the_recorded_response(corpus_dir: Path, name: str) -> None:
    data = load(corpus_dir, name)
    exp = EXPECTED[name]
    body, recorded = data["request"]["body"], data["response"]
    request = request_from_body(body)
    if isinstance(exp, ExpectError):
        raw = json.dumps(recorded["json"]).encode()
        check_error(ResponsesWire().classify_error(recorded["status"], recorded["headers"], raw, model="m",
                                                   provider="openai-responses"), exp)
        return
    if "sse" in recorded:
        events, resp = decode_sse(recorded["sse"], request, body["model"])
        check_response(resp, exp, data, provider="openai-responses")
        check_events(events, resp)
    else:
        resp = ResponsesWire().decode_response(recorded["json"], request=request, model=body["model"],
                                               provider="openai-responses")
        check_response(resp, exp, data, provider="openai-responses")


@pytest.mark.parametrize("name", FILES)
async def test_provider_replays_the_recorded_interaction(corpus_dir: Path, name: str) -> None:
    data = load(corpus_dir, name)
    exp = EXPECTED[name]
    body, path = data["request"]["body"], data["request"]["path"]
    request = request_from_body(body)
    sent: list[httpx.Request] = []
    async with httpx.AsyncClient(transport=replay_transport(data, sent)) as client:
        provider: OpenAIResponsesProvider | AzureOpenAIProvider
        if name == AZURE:
            provider = AzureOpenAIProvider(
                body["model"], endpoint="https://res.openai.azure.com", api_key="azure-test-key-0000",
                api="responses", http_client=client,
            )
        else:
            provider = OpenAIResponsesProvider(
                api_key="sk-test-conformance-0000", base_url="http://vendor.test/v1", http_client=client
            )
        streaming = bool(body.get("stream"))
        events, resp, error = await outcome(provider, request, stream=streaming)
    if name in REFUSED_BEFORE_SENDING:
        assert isinstance(error, UnsupportedSettingError) and sent == []
        return
    assert len(sent) == 1
    assert sent[0].url.path == path
    assert normalized(json.loads(sent[0].content)) == normalized(body)
    if isinstance(exp, ExpectError):
        assert error is not None
        check_error(error, exp)
        return
    assert error is None, repr(error)
    if streaming:
        assert isinstance(events[-1], StreamEnd) and sum(isinstance(e, StreamEnd) for e in events) == 1
        resp = events[-1].response
        check_events(events[:-1], resp)
    assert resp is not None
    check_response(resp, exp, data, provider=provider.name)
