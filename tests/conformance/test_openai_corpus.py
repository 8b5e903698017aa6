"""Every OpenAI-wire corpus file (OpenAI, Groq, OpenRouter) round-trips through the codec and the provider.

For each recorded interaction:

* the request: the same conversation is built as an ``LLMRequest`` and encoded;
  the body must equal the recorded one (as JSON values).  Vendor-only fields
  (``n``, ``reasoning``, ``prompt_cache_key``, ...) travel in
  ``vendor_options["openai"]`` from an explicit allow-list; anything else in a
  recorded body fails the test.  A few conversations are also built by hand
  from ``Message`` constructors.
* the response (JSON, raw SSE or an error) is decoded and checked field by
  field against hand-written expectations, both by the codec directly and by
  ``OpenAIProvider`` over ``httpx.MockTransport`` replaying the recorded bytes
  (so SSE goes through the same httpx-sse path as live traffic).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from agentactors.errors import ErrorKind, ProviderError, StreamInterruptedError
from agentactors.messages import (
    LLMRequest,
    LLMResponse,
    Message,
    StopReason,
    StreamEnd,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    ToolSpec,
    Usage,
)
from agentactors.providers.openai.provider import OpenAIProvider, OpenAIWire
from tests.support.corpus import check_stream_events, load, outcome, replay_transport
from tests.support.corpus import decode_sse as decode_recorded

pytestmark = pytest.mark.anyio

RECORDED = object()  # "the content as recorded": codecs keep content verbatim


@attrs.frozen
class Expect:
    """What a recorded success must decode to."""

    stop: StopReason
    raw_stop: str | None
    usage: Usage
    model: Any  # str, or RECORDED
    response_id: Any  # str, or RECORDED
    content: Any = ""  # str, or RECORDED
    calls: tuple[tuple[str | None, str, dict[str, Any]], ...] = ()  # id None: synthesised
    reasoning_prefix: str = ""
    opaque_keys: frozenset[str] = frozenset()  # keys of provider_data["openai"]
    call_opaque: bool = False  # whether each call carries provider_data["openai"]
    fragments: tuple[tuple[str, ...], ...] | None = None  # streamed argument fragments per call


@attrs.frozen
class ExpectError:
    """What a recorded failure must raise."""

    kind: ErrorKind
    status: int
    message_part: str
    retryable: bool
    excerpt_part: str | None = None
    events_before: bool = False  # an in-band stream error after some events (→ StreamInterruptedError)


def _u(i: int, o: int, cr: int = 0, cw: int = 0, r: int = 0) -> Usage:
    return Usage(input_tokens=i, output_tokens=o, cache_read_tokens=cr, cache_write_tokens=cw, reasoning_tokens=r)


TU, ET = StopReason.tool_use, StopReason.end_turn
G4O = "gpt-4o-2024-08-06"
G5M = "gpt-5-mini-2025-08-07"
SCOUT = "meta-llama/llama-4-scout-17b-16e-instruct"

EXPECTED: dict[str, Expect | ExpectError] = {
    "openai__error_400_null_code__1.json": ExpectError(
        ErrorKind.request, 400, "Web search options not supported", retryable=False
    ),
    "openai__error_400_unsupported_value__1.json": ExpectError(
        ErrorKind.request, 400, "does not support 'system' with this model", retryable=False
    ),
    "openai__error_404_model_not_found__1.json": ExpectError(
        ErrorKind.account, 404, "`gpt-5.2-proo` does not exist", retryable=False
    ),
    "openai__gemini_compat_tool_call_empty_id__1.json": Expect(
        TU, "tool_calls", _u(35, 12), "gemini-2.5-pro-preview-05-06", "3SE-aKjdCcCEz7IPxpqjCA",
        calls=((None, "get_current_time", {}),),
        opaque_keys=frozenset({"extra_content", "thought_signature"}),
    ),
    "openai__multi_turn_tool_retry_history__1.json": Expect(
        ET, "stop", _u(116, 10), G4O, "chatcmpl-C9gCGg6DDdUlo7CuS04nK9k6dnkZG",
        content="The weather in Mexico City is currently sunny.",
    ),
    "openai__parallel_tool_calls__1.json": Expect(
        TU, "tool_calls", _u(71, 46), G4O, "chatcmpl-C9f7f1SbHRzcwlJwrYKdSonTRWPvV",
        calls=(
            ("call_jYdIdRZHxZTn5bWCq5jlMrJi", "delete_file", {"path": ".env"}),
            ("call_TmlTVWQbzrXCZ4jNsCVNbNqu", "create_file", {"path": "test.txt"}),
        ),
    ),
    "openai__parallel_tool_results_followup__1.json": Expect(
        ET, "stop", _u(133, 19), G4O, "chatcmpl-C9f7iBeeNNBazDCMa7RSx3EFtiZoR",
        content="The file `.env` has been deleted and `test.txt` has been created successfully.",
    ),
    "openai__stream_parallel_tool_calls__1.json": Expect(
        TU, "tool_calls", _u(364, 40), G4O, "chatcmpl-C1KMEUDb1vVwsROQUCZTgG6A6vtWo",
        calls=(
            ("call_3rqTYrA6H21AYUaRGP4F66oq", "get_country", {}),
            ("call_Xw9XMKBJU48kAAd78WgIswDx", "get_product_name", {}),
        ),
        fragments=(("{}",), ("{}",)),
    ),
    "openai__stream_text_usage__1.json": Expect(
        ET, "stop", _u(14, 8), G4O, "chatcmpl-C2P2HtMJhPkWjQ2adKerkdVilXmRL",
        content="The capital of Mexico is Mexico City.",
    ),
    "openai__stream_tool_call_fragments__1.json": Expect(
        TU, "tool_calls", _u(53, 15), "gpt-4o-mini-2024-07-18", "chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl",
        calls=(("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", {"country": "UK"}),),
        fragments=(('{"', "country", '":"', "UK", '"}'),),
    ),
    "openai__text_system_message__1.json": Expect(
        ET, "stop", _u(24, 8), G4O, "chatcmpl-BJjf61mLb9z5H45ClJzbx0UWKwjo1", content="The capital of France is Paris."
    ),
    "openai__tool_choice_auto_followup_tool_result__1.json": Expect(
        ET, "stop", _u(167, 171, r=128), G5M, "chatcmpl-D3SqlRfqaB3DqdqMMzCTcq2Ghx9NY", content=RECORDED
    ),
    "openai__tool_choice_auto_tool_call__1.json": Expect(
        TU, "tool_calls", _u(132, 23), G5M, "chatcmpl-D3Sqix10hJ5DCDejQOQklpm4k7cj8",
        calls=(("call_aDdJTteHrpMdhdkEkyxjxEHH", "get_weather", {"city": "Paris"}),),
    ),
    "openai__tool_choice_forced_function__1.json": Expect(
        TU, "tool_calls", _u(150, 23), G5M, "chatcmpl-D3TgwdUycWrhUffnXVr0eUCw4bc2y",
        calls=(("call_ZRDY1xLOEab4YUsDuuJMA1tF", "get_weather", {"city": "Paris"}),),
    ),
    "openai__tool_choice_none__1.json": Expect(
        ET, "stop", _u(132, 589, r=384), G5M, "chatcmpl-D3Tgi0mMz0WAeprUYyPAJhIT3aTnQ", content=RECORDED
    ),
    "openai__tool_choice_required__1.json": Expect(
        TU, "tool_calls", _u(130, 87, r=64), G5M, "chatcmpl-D3TgtH4c8lJGywQHXUeoU4NOoaPUh",
        calls=(("call_injwxidE5XUzmiKVfOH3rxf2", "get_weather", {"city": "Paris"}),),
    ),
    "openai__tool_choice_required_followup__1.json": Expect(
        TU, "tool_calls", _u(215, 566, r=512), G5M, "chatcmpl-D3SrD6jmFgygfJ3mPia1jhP1SFXe5",
        calls=(
            (
                "call_K70dlxD5HeTanhq40YEg003m",
                "final_result",
                {
                    "city": "Paris",
                    "summary": "Currently sunny in Paris with a temperature of 22\u00b0C -- clear skies and mild "
                    "conditions. No precipitation reported; good weather for outdoor activity.",
                },
            ),
        ),
    ),
    "openai__usage_cached_tokens__1.json": Expect(
        ET, "stop", _u(4020, 4, cr=4012), "gpt-5.6-sol", "chatcmpl-E1mBQt42vYTsKNd5wnyJlT0db7v9S", content="OK"
    ),
    "groq__error_400_tool_use_failed__1.json": ExpectError(
        ErrorKind.request, 400, "did not match schema", retryable=False,
        excerpt_part='"failed_generation": "{\\"name\\": \\"get_something_by_name\\"',
    ),
    "groq__error_400_tool_use_failed_required__1.json": ExpectError(
        ErrorKind.request, 400, "Tool choice is required", retryable=False, excerpt_part='"failed_generation": "maybe"'
    ),
    "groq__error_404_model_not_found__1.json": ExpectError(
        ErrorKind.account, 404, "`non-existent` does not exist", retryable=False
    ),
    "groq__parallel_tool_calls_required__1.json": Expect(
        TU, "tool_calls", _u(779, 65), SCOUT, "chatcmpl-c81361e1-83d7-49c2-9d1c-11e8fa4134fe",
        calls=(
            ("rew01jq49", "get_weather", {"city": "Paris"}),
            ("gbpypqxpx", "final_result", {"city": "Paris", "summary": "Current weather in Paris"}),
        ),
    ),
    "groq__stream_error_event_tool_use_failed__1.json": ExpectError(
        ErrorKind.request, 400, "parameters for tool get_something_by_name did not match schema",
        retryable=False, events_before=True,
    ),
    "groq__stream_tool_call_single_chunk__1.json": Expect(
        TU, "tool_calls", _u(304, 49, r=23), "openai/gpt-oss-120b", "chatcmpl-e35442a8-12c0-4fb4-8be4-0e51727ce7b7",
        calls=(("fc_bfb39741-3748-4def-9886-a93fc9c64a90", "get_something_by_name", {"name": "example"}),),
        reasoning_prefix="We need to call",
        fragments=(('{"name":"example"}',),),
    ),
    "groq__text_system_message__1.json": Expect(
        ET, "stop", _u(48, 8), "llama-3.3-70b-versatile", RECORDED, content="The capital of France is Paris."
    ),
    "groq__tool_choice_auto_tool_call__1.json": Expect(
        TU, "tool_calls", _u(717, 29), SCOUT, RECORDED, calls=(("48f5r72yf", "get_weather", {"city": "Paris"}),)
    ),
    "groq__tool_choice_forced_function__1.json": Expect(
        TU, "tool_calls", _u(757, 29), SCOUT, RECORDED, calls=(("9vggmcf10", "get_weather", {"city": "Paris"}),)
    ),
    "groq__tool_choice_none__1.json": Expect(ET, "stop", _u(16, 218), RECORDED, RECORDED, content=RECORDED),
    "groq__tool_choice_required__1.json": Expect(
        TU, "tool_calls", _u(723, 29), SCOUT, "chatcmpl-5db647e0-4d7d-4dea-b3bd-30d1d9baf8b3",
        calls=(("4s8mdrtvv", "get_weather", {"city": "Paris"}),),
    ),
    "groq__tool_use_failed_retry_followup__1.json": Expect(
        TU, "tool_calls", _u(301, 52, r=22), "openai/gpt-oss-120b", "chatcmpl-b089cbdd-ca65-41a1-9409-639d476f87c0",
        calls=(("fc_311ba17b-89f9-48d3-8fd9-7e74a1264855", "get_something_by_name", {"name": "test"}),),
        reasoning_prefix="We need to call with correct param: name field.",
    ),
    "openrouter__error_429_upstream_rate_limit__1.json": ExpectError(
        ErrorKind.transient, 429, "temporarily rate-limited upstream", retryable=True
    ),
    "openrouter__stream_inline_error_chunk__1.json": ExpectError(
        ErrorKind.request, 400, "Token limit reached", retryable=False, events_before=True
    ),
    "openrouter__stream_reasoning__1.json": Expect(
        ET, "stop", _u(43, 36, r=13), "anthropic/claude-sonnet-4.5", "gen-1765226419-AGrwjunAftQIAgweibL8",
        content="2 + 2 = 4",
        reasoning_prefix="This is a simple arithmetic question.",
        opaque_keys=frozenset({"reasoning_details"}),
    ),
    "openrouter__tool_call__1.json": Expect(
        TU, "tool_calls", _u(134, 43), "mistralai/mistral-small", "gen-1762047030-dJUcJW4ildNGqK4UV6iJ",
        calls=(("3sniiMddS", "divide", {"numerator": 123, "denominator": 456, "on_inf": "infinity"}),),
    ),
}

COVERED: frozenset[str] = frozenset(EXPECTED)
FAMILY = ("openai__", "groq__", "openrouter__")
# Vendor-only request fields that reach the body through vendor_options["openai"].
VENDOR_FIELDS = frozenset(
    {"n", "web_search_options", "reasoning", "prompt_cache_key", "prompt_cache_options", "max_completion_tokens"}
)
CODEC_FIELDS = frozenset(
    {"model", "messages", "tools", "tool_choice", "stream", "stream_options", "max_tokens", "temperature", "stop"}
)
FILES = sorted(EXPECTED)


def test_covered_is_exactly_the_openai_family(corpus_dir: Path) -> None:
    on_disk = {p.name for p in corpus_dir.glob("*.json") if p.name.startswith(FAMILY)}
    assert on_disk == COVERED, f"uncovered: {sorted(on_disk - COVERED)}; stale: {sorted(COVERED - on_disk)}"


# --- the request: body -> LLMRequest (from the recorded body, independently of the codec) -------


def _message(m: dict[str, Any], names: dict[str, str]) -> Message:
    role = m["role"]
    content: Any = m.get("content")  # as recorded: a str, a list of parts, or null
    if role == "system":
        return Message.system(content)
    if role == "user":
        if isinstance(content, list):
            # Content parts (prompt-cache breakpoints): replayed through provider_data.
            text = "".join(p.get("text", "") for p in content)
            return Message(role="user", content=text, provider_data={"openai": {"content": content}})
        return Message.user(content)
    if role == "assistant":
        calls = []
        for c in m.get("tool_calls", ()):
            raw = c["function"]["arguments"]
            calls.append(ToolCall(c["id"], c["function"]["name"], json.loads(raw), raw_arguments=raw))
            names[c["id"]] = c["function"]["name"]
        return Message.assistant(content or "", calls)
    assert role == "tool", role
    return Message.tool(m["tool_call_id"], content, name=names.get(m["tool_call_id"]))


def request_from_body(body: dict[str, Any]) -> LLMRequest:
    unknown = set(body) - CODEC_FIELDS - VENDOR_FIELDS
    assert not unknown, f"recorded body has fields neither the codec nor vendor_options account for: {unknown}"
    names: dict[str, str] = {}
    messages = [_message(m, names) for m in body["messages"]]
    tools = [
        ToolSpec(t["function"]["name"], t["function"].get("description", ""), t["function"]["parameters"])
        for t in body.get("tools", ())
    ]
    choice = body.get("tool_choice", "auto")
    tool_choice = ToolChoice.tool(choice["function"]["name"]) if isinstance(choice, dict) else ToolChoice(choice)
    options: dict[str, Any] = {k: body[k] for k in VENDOR_FIELDS if k in body}
    strict = [t["function"]["name"] for t in body.get("tools", ()) if t["function"].get("strict")]
    if strict:
        options["strict_tools"] = strict
    if body.get("stream") and "stream_options" not in body:
        options["stream_options"] = None  # Groq's recorded client does not send it
    return LLMRequest(
        messages,
        model=body["model"],
        tools=tools,
        tool_choice=tool_choice,
        max_tokens=body.get("max_tokens"),
        temperature=body.get("temperature"),
        stop=body.get("stop", ()),
        vendor_options={"openai": options} if options else {},
    )


def normalized(body: dict[str, Any]) -> dict[str, Any]:
    """An absent assistant ``content`` and ``null`` mean the same on this wire (Groq's client omits it)."""
    out: dict[str, Any] = json.loads(json.dumps(body))
    for m in out["messages"]:
        if m["role"] == "assistant":
            m.setdefault("content", None)
    return out


@pytest.mark.parametrize("name", FILES)
def test_request_encodes_to_the_recorded_body(corpus_dir: Path, name: str) -> None:
    body = load(corpus_dir, name)["request"]["body"]
    request = request_from_body(body)
    encoded = OpenAIWire().encode_request(request, body["model"], stream=bool(body.get("stream")))
    assert normalized(encoded) == normalized(body)


# A few conversations built by hand, the way a caller would.
WEATHER = ToolSpec(
    "get_weather_in_city",
    "",
    {"additionalProperties": False, "properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"},
)


def _path_tool(name: str) -> ToolSpec:
    params = {"additionalProperties": False, "properties": {"path": {"type": "string"}}, "required": ["path"]}
    return ToolSpec(name, "", {**params, "type": "object"})


HAND_BUILT: dict[str, Callable[[], tuple[LLMRequest, bool]]] = {
    "openai__multi_turn_tool_retry_history__1.json": lambda: (
        LLMRequest(
            [
                Message.user("What is the weather in CDMX?"),
                Message.assistant(
                    "", [ToolCall.from_raw("call_fFAB8MNL3tUdfNIIdsIJTo0H", "get_weather_in_city", '{"city":"CDMX"}')]
                ),
                Message.tool(
                    "call_fFAB8MNL3tUdfNIIdsIJTo0H",
                    "Did you mean Mexico City?\n\nFix the errors and try again.",
                    is_error=True,
                ),
                Message.assistant(
                    "",
                    [
                        ToolCall.from_raw(
                            "call_hLYHO5lK5lmiukTZv6VQzz3x", "get_weather_in_city", '{"city":"Mexico City"}'
                        )
                    ],
                ),
                Message.tool("call_hLYHO5lK5lmiukTZv6VQzz3x", "sunny", name="get_weather_in_city"),
            ],
            model="gpt-4o",
            tools=[WEATHER],
            vendor_options={"openai": {"strict_tools": True}},
        ),
        False,
    ),
    "openai__parallel_tool_results_followup__1.json": lambda: (
        LLMRequest(
            [
                Message.system("Just call tools without asking for confirmation."),
                Message.user("Delete the file `.env` and create `test.txt`"),
                Message.assistant(
                    "",
                    [
                        ToolCall.from_raw("call_jYdIdRZHxZTn5bWCq5jlMrJi", "delete_file", '{"path": ".env"}'),
                        ToolCall.from_raw("call_TmlTVWQbzrXCZ4jNsCVNbNqu", "create_file", '{"path": "test.txt"}'),
                    ],
                ),
                Message.tool("call_jYdIdRZHxZTn5bWCq5jlMrJi", "true"),
                Message.tool("call_TmlTVWQbzrXCZ4jNsCVNbNqu", "Success"),
            ],
            model="gpt-4o",
            tools=[_path_tool("create_file"), _path_tool("delete_file")],
            vendor_options={"openai": {"strict_tools": True}},
        ),
        False,
    ),
    "openai__stream_text_usage__1.json": lambda: (
        LLMRequest([Message.user("What is the capital of Mexico?")], model="gpt-4o"),
        True,
    ),
    "openrouter__stream_inline_error_chunk__1.json": lambda: (
        LLMRequest(
            [Message.user("Hello there")],
            model="minimax/minimax-m2:free",
            vendor_options={"openai": {"max_completion_tokens": 10}},
        ),
        True,
    ),
}


@pytest.mark.parametrize("name", sorted(HAND_BUILT))
def test_hand_built_conversation_encodes_to_the_recorded_body(corpus_dir: Path, name: str) -> None:
    body = load(corpus_dir, name)["request"]["body"]
    request, stream = HAND_BUILT[name]()
    assert normalized(OpenAIWire().encode_request(request, request.model or "", stream=stream)) == normalized(body)


def test_a_decoded_response_replays_as_the_next_requests_assistant_turn(corpus_dir: Path) -> None:
    """Decoding openai__parallel_tool_calls and sending it back gives the recorded follow-up's assistant message."""
    first = load(corpus_dir, "openai__parallel_tool_calls__1.json")
    followup = load(corpus_dir, "openai__parallel_tool_results_followup__1.json")["request"]["body"]
    response = OpenAIWire().decode_response(
        first["response"]["json"], request=request_from_body(first["request"]["body"]), model="gpt-4o", provider="o"
    )
    assert OpenAIWire().encode_message(response.to_message()) == followup["messages"][2]


def test_gemini_compat_signature_is_replayed_in_place(corpus_dir: Path) -> None:
    data = load(corpus_dir, "openai__gemini_compat_tool_call_empty_id__1.json")
    message = data["response"]["json"]["choices"][0]["message"]
    response = OpenAIWire().decode_response(
        data["response"]["json"], request=request_from_body(data["request"]["body"]), model="g", provider="o"
    )
    replay = OpenAIWire().encode_message(response.to_message())
    assert replay is not None
    assert replay["extra_content"] == message["extra_content"]
    assert replay["thought_signature"] == message["thought_signature"]
    assert replay["tool_calls"][0]["id"] == response.tool_calls[0].id != ""


# --- the response -------------------------------------------------------------------------------


def recorded_content(data: dict[str, Any]) -> str:
    content: str = data["response"]["json"]["choices"][0]["message"]["content"]
    return content


def check_response(resp: LLMResponse, exp: Expect, data: dict[str, Any], *, provider: str) -> None:
    body = data["response"].get("json") or {}
    assert resp.provider == provider
    assert resp.content == (recorded_content(data) if exp.content is RECORDED else exp.content)
    assert resp.stop_reason is exp.stop
    assert resp.raw_stop_reason == exp.raw_stop
    assert resp.usage == exp.usage
    assert resp.model == (body.get("model") if exp.model is RECORDED else exp.model)
    assert resp.response_id == (body.get("id") if exp.response_id is RECORDED else exp.response_id)
    if exp.reasoning_prefix:
        assert resp.reasoning.startswith(exp.reasoning_prefix)
    else:
        assert resp.reasoning == ""
    assert exp.reasoning_prefix not in resp.content or not exp.reasoning_prefix  # reasoning never in content
    # What is kept for replay is stamped with the model the request was sent to (never sent back).
    stamp = {"model"} if exp.opaque_keys else set()
    assert set((resp.provider_data or {}).get("openai", {})) == exp.opaque_keys | stamp
    assert len(resp.tool_calls) == len(exp.calls)
    for call, (cid, name, args) in zip(resp.tool_calls, exp.calls, strict=True):
        if cid is None:
            assert call.id.startswith("call_") and len(call.id) > 10
        else:
            assert call.id == cid
        assert call.name == name
        assert call.arguments == args
        assert call.arguments_error is None
        assert call.raw_arguments is not None and json.loads(call.raw_arguments) == args
    ids = [c.id for c in resp.tool_calls]
    assert len(set(ids)) == len(ids)


def decode_sse(raw: str, request: LLMRequest, model: str) -> tuple[list[StreamEvent], LLMResponse]:
    return decode_recorded(OpenAIWire().stream_decoder(request=request, model=model, provider="openai"), raw)


def check_events(events: list[StreamEvent], resp: LLMResponse, exp: Expect) -> None:
    check_stream_events(events, resp)
    if exp.fragments is not None:
        for i, expected in enumerate(exp.fragments):
            got = tuple(e.arguments_fragment for e in events if isinstance(e, ToolCallDelta) and e.index == i)
            assert got == expected


def check_error(err: ProviderError, exp: ExpectError) -> None:
    assert err.kind is exp.kind
    assert err.status == exp.status
    assert err.retryable is exp.retryable
    assert exp.message_part in err.message
    assert err.retry_after is None  # no retry-after survives in this corpus
    if exp.excerpt_part is not None:
        assert err.body_excerpt is not None and exp.excerpt_part in err.body_excerpt


@pytest.mark.parametrize("name", FILES)
def test_codec_decodes_the_recorded_response(corpus_dir: Path, name: str) -> None:
    data = load(corpus_dir, name)
    exp = EXPECTED[name]
    body, recorded = data["request"]["body"], data["response"]
    request = request_from_body(body)
    wire = OpenAIWire()
    if isinstance(exp, ExpectError):
        if "sse" in recorded:
            with pytest.raises(ProviderError) as info:
                decode_sse(recorded["sse"], request, body["model"])
            assert not isinstance(info.value, StreamInterruptedError)  # the codec raises the classified error
        else:
            raw = json.dumps(recorded["json"]).encode()
            info_err = wire.classify_error(recorded["status"], recorded["headers"], raw, model="m", provider="openai")
            check_error(info_err, exp)
            return
        check_error(info.value, exp)
        return
    if "sse" in recorded:
        events, resp = decode_sse(recorded["sse"], request, body["model"])
        check_response(resp, exp, data, provider="openai")
        check_events(events, resp, exp)
    else:
        resp = wire.decode_response(recorded["json"], request=request, model=body["model"], provider="openai")
        check_response(resp, exp, data, provider="openai")


@pytest.mark.parametrize("name", FILES)
async def test_provider_replays_the_recorded_interaction(corpus_dir: Path, name: str) -> None:
    data = load(corpus_dir, name)
    exp = EXPECTED[name]
    body, path = data["request"]["body"], data["request"]["path"]
    request = request_from_body(body)
    sent: list[httpx.Request] = []
    base_url = "http://vendor.test" + path.removesuffix("/chat/completions")
    async with httpx.AsyncClient(transport=replay_transport(data, sent)) as client:
        provider = OpenAIProvider(
            api_key="sk-test-conformance-0000", base_url=base_url, http_client=client, carries_forced_tool_choice=True
        )
        streaming = bool(body.get("stream"))
        events, resp, error = await outcome(provider, request, stream=streaming)
    assert len(sent) == 1
    assert sent[0].url.path == path
    assert normalized(json.loads(sent[0].content)) == normalized(body)
    if isinstance(exp, ExpectError):
        assert error is not None, f"expected {exp}, got {resp or events}"
        if exp.events_before:
            # The in-band error came after reasoning deltas: an interrupted stream caused by the classified error.
            assert isinstance(error, StreamInterruptedError) and events
            assert isinstance(error.__cause__, ProviderError)
            check_error(error.__cause__, exp)
            assert error.status == exp.status
        else:
            check_error(error, exp)
        return
    assert error is None, repr(error)
    if streaming:
        assert isinstance(events[-1], StreamEnd) and sum(isinstance(e, StreamEnd) for e in events) == 1
        resp = events[-1].response
        check_events(events[:-1], resp, exp)
    assert resp is not None
    check_response(resp, exp, data, provider="openai")


async def test_truncated_recorded_stream_raises_instead_of_answering(corpus_dir: Path) -> None:
    """Cutting the recorded stream before [DONE] (after its text) is an interrupted stream, not an answer."""
    data = load(corpus_dir, "openai__stream_text_usage__1.json")
    sse = data["response"]["sse"]
    cut = sse[: sse.index("data: [DONE]")]
    request = request_from_body(data["request"]["body"])

    def handler(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=cut.encode())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = OpenAIProvider(base_url="http://vendor.test/v1", http_client=client)
        seen: list[StreamEvent] = []
        with pytest.raises(StreamInterruptedError) as info:
            async with provider.stream(request) as stream:
                async for event in stream:
                    seen.append(event)
    assert not any(isinstance(e, StreamEnd) for e in seen)
    assert info.value.partial_text == "The capital of Mexico is Mexico City."
