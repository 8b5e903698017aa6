"""The OpenAI Chat Completions codec: encoding rules, response decoding, the stream decoder, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentactors.errors import ErrorKind, MalformedResponseError, ProviderError
from agentactors.messages import (
    LLMRequest,
    LLMResponse,
    Message,
    ReasoningDelta,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolChoice,
    ToolSpec,
    Usage,
)
from agentactors.providers.openai.provider import DEFAULT_OPENAI_BASE_URL, OpenAIProvider, OpenAIWire
from agentactors.providers.openai.stream import OpenAIStreamDecoder

PATH_TOOL = ToolSpec(
    "read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
)
NOW_TOOL = ToolSpec("now", "The time.", {"type": "object", "properties": {}})
WIRE = OpenAIWire()


def req(*messages: Message, **kw: Any) -> LLMRequest:
    return LLMRequest(messages or (Message.user("hi"),), **kw)


# --- encoding -----------------------------------------------------------------------------------


def test_messages_map_to_roles_with_tool_results_keyed_by_call_id() -> None:
    call = ToolCall.from_raw("call_1", "read_file", '{"path":"a.ts"}')
    body = WIRE.encode_request(
        req(
            Message.system("Be brief."),
            Message.user("Read a.ts"),
            Message.assistant("", [call]),
            Message.tool("call_1", "contents", name="read_file", is_error=False),
            Message.assistant("Done: contents"),
        ),
        "gpt-4o",
        stream=False,
    )
    assert body["model"] == "gpt-4o"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Read a.ts"},
        {
            "role": "assistant",
            "content": None,  # content may be null when there are calls
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a.ts"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "contents"},
        {"role": "assistant", "content": "Done: contents"},
    ]


def test_an_assistant_message_with_neither_text_nor_calls_is_not_sent() -> None:
    body = WIRE.encode_request(req(Message.user("a"), Message.assistant(""), Message.user("b")), "m", stream=False)
    assert body["messages"] == [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    assert all(m.get("content") is not None or m.get("tool_calls") for m in body["messages"])


def test_assistant_text_with_calls_keeps_the_text() -> None:
    call = ToolCall("c1", "now", {})
    encoded = WIRE.encode_message(Message.assistant("Let me check.", [call]))
    assert encoded is not None
    assert encoded["content"] == "Let me check."
    assert encoded["tool_calls"][0]["function"]["arguments"] == "{}"


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice.auto(), "auto"),
        (ToolChoice.none(), "none"),
        (ToolChoice.required(), "required"),
        (ToolChoice.tool("read_file"), {"type": "function", "function": {"name": "read_file"}}),
    ],
)
def test_tool_choice_mapping(choice: ToolChoice, wire: Any) -> None:
    body = WIRE.encode_request(req(tools=[PATH_TOOL, NOW_TOOL], tool_choice=choice), "m", stream=False)
    assert body["tool_choice"] == wire
    assert body["tools"][0] == {
        "type": "function",
        "function": {"name": "read_file", "description": "Read a file.", "parameters": PATH_TOOL.parameters},
    }


def test_no_tools_means_no_tools_no_tool_choice_and_no_parallel_tool_calls() -> None:
    body = WIRE.encode_request(req(vendor_options={"openai": {"parallel_tool_calls": False}}), "m", stream=False)
    assert "tools" not in body and "tool_choice" not in body and "parallel_tool_calls" not in body
    with_tools = WIRE.encode_request(
        req(tools=[NOW_TOOL], vendor_options={"openai": {"parallel_tool_calls": False}}), "m", stream=False
    )
    assert with_tools["parallel_tool_calls"] is False


def test_stream_options_only_when_streaming() -> None:
    assert WIRE.encode_request(req(), "m", stream=True)["stream_options"] == {"include_usage": True}
    body = WIRE.encode_request(req(), "m", stream=False)
    assert body["stream"] is False and "stream_options" not in body


def test_generation_settings() -> None:
    body = WIRE.encode_request(req(max_tokens=50, temperature=0.2, stop=["END", "STOP"]), "m", stream=False)
    assert (body["max_tokens"], body["temperature"], body["stop"]) == (50, 0.2, ["END", "STOP"])
    body = WIRE.encode_request(req(), "m", stream=False)
    assert not {"max_tokens", "temperature", "stop"} & set(body)


def test_max_tokens_field_and_explicit_max_completion_tokens() -> None:
    reasoning_wire = OpenAIWire(max_tokens_field="max_completion_tokens")
    body = reasoning_wire.encode_request(req(max_tokens=50), "o3", stream=False)
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body
    explicit = WIRE.encode_request(
        req(max_tokens=50, vendor_options={"openai": {"max_completion_tokens": 10}}), "m", stream=False
    )
    assert explicit["max_completion_tokens"] == 10 and "max_tokens" not in explicit
    with pytest.raises(ValueError, match="max_tokens_field"):
        OpenAIWire(max_tokens_field="tokens")


def test_vendor_options_merge_remove_and_strict_tools() -> None:
    options = {"seed": 7, "prompt_cache_key": "k", "stream_options": None, "strict_tools": ["read_file"]}
    body = WIRE.encode_request(
        req(tools=[PATH_TOOL, NOW_TOOL], vendor_options={"openai": options, "anthropic": {"x": 1}}), "m", stream=True
    )
    assert body["seed"] == 7 and body["prompt_cache_key"] == "k"
    assert "stream_options" not in body  # None removes what the codec would send
    assert "strict_tools" not in body and "x" not in body
    assert body["tools"][0]["function"]["strict"] is True
    assert "strict" not in body["tools"][1]["function"]
    all_strict = WIRE.encode_request(
        req(tools=[PATH_TOOL, NOW_TOOL], vendor_options={"openai": {"strict_tools": True}}), "m", stream=False
    )
    assert [t["function"]["strict"] for t in all_strict["tools"]] == [True, True]


def test_message_and_call_provider_data_are_merged_in_place() -> None:
    call = ToolCall(
        "c1", "now", {}, provider_data={"openai": {"extra_content": {"google": {"thought_signature": "s"}}}}
    )
    msg = Message.assistant("", [call], provider_data={"openai": {"reasoning_details": [{"type": "reasoning.text"}]}})
    encoded = WIRE.encode_message(msg)
    assert encoded is not None
    assert encoded["reasoning_details"] == [{"type": "reasoning.text"}]
    assert encoded["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "s"}}
    other_wire = Message.assistant("x", provider_data={"anthropic": {"blocks": []}})
    assert WIRE.encode_message(other_wire) == {"role": "assistant", "content": "x"}


def test_url_and_headers() -> None:
    assert WIRE.url("https://h/v1/", "m", stream=True) == "https://h/v1/chat/completions"
    assert WIRE.headers("k-123") == {"authorization": "Bearer k-123"}
    assert WIRE.headers(None) == {}


# --- decoding -----------------------------------------------------------------------------------


def completion(message: dict[str, Any], finish: str | None = "stop", **extra: Any) -> dict[str, Any]:
    return {
        "id": "r1",
        "model": "served",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    } | extra


def decode(body: Any, request: LLMRequest | None = None) -> LLMResponse:
    return WIRE.decode_response(body, request=request, model="asked", provider="openai")


def test_usage_with_cached_and_reasoning_tokens() -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 30,
        "prompt_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 5},
        "completion_tokens_details": {"reasoning_tokens": 20},
    }
    resp = decode(completion({"role": "assistant", "content": "x"}, usage=usage))
    assert resp.usage == Usage(100, 30, cache_read_tokens=64, cache_write_tokens=5, reasoning_tokens=20)
    groq = decode(completion({"content": "x"}, x_groq={"usage": {"prompt_tokens": 3, "completion_tokens": 4}}))
    assert groq.usage == Usage(3, 4)
    junk = decode(completion({"content": "x"}, usage={"prompt_tokens": "many", "completion_tokens": -4}))
    assert junk.usage == Usage()


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("stop", StopReason.end_turn),
        ("length", StopReason.max_tokens),
        ("tool_calls", StopReason.tool_use),
        ("function_call", StopReason.tool_use),
        ("content_filter", StopReason.content_filter),
        ("eos_token", StopReason.other),
    ],
)
def test_finish_reason_mapping_keeps_the_raw_value(finish: str, stop: StopReason) -> None:
    resp = decode(completion({"content": "x"}, finish))
    assert (resp.stop_reason, resp.raw_stop_reason) == (stop, finish)


def test_stop_with_tool_calls_is_tool_use() -> None:
    msg = {"content": None, "tool_calls": [{"id": "a", "function": {"name": "now", "arguments": "{}"}}]}
    assert decode(completion(msg, "stop")).stop_reason is StopReason.tool_use


def test_reasoning_fields_go_to_reasoning_and_content_stays_verbatim() -> None:
    resp = decode(completion({"content": "<think>hmm</think>Answer", "reasoning": "structured"}))
    assert resp.content == "<think>hmm</think>Answer"
    assert resp.reasoning == "structured"
    vllm = decode(completion({"content": "A", "reasoning_content": "steps"}))
    assert (vllm.content, vllm.reasoning) == ("A", "steps")


def test_refusal_is_a_content_filter_stop_with_its_text() -> None:
    resp = decode(completion({"content": None, "refusal": "I can't help with that."}))
    assert resp.stop_reason is StopReason.content_filter
    assert resp.content == "I can't help with that."


def test_served_model_and_response_id() -> None:
    resp = decode(completion({"content": "x"}))
    assert (resp.model, resp.response_id, resp.provider) == ("served", "r1", "openai")
    bare = decode({"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}]})
    assert (bare.model, bare.response_id) == ("asked", None)


def test_arguments_kept_raw_and_parsed_and_required_ness_from_the_request() -> None:
    msg = {
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.ts"}'}},
            {"id": "b", "type": "function", "function": {"name": "read_file", "arguments": ""}},
            {"id": "c", "type": "function", "function": {"name": "now", "arguments": ""}},
        ],
    }
    resp = decode(completion(msg, "tool_calls"), req(tools=[PATH_TOOL, NOW_TOOL]))
    a, b, c = resp.tool_calls
    assert (a.arguments, a.raw_arguments, a.arguments_error) == ({"path": "a.ts"}, '{"path": "a.ts"}', None)
    assert (b.arguments, b.arguments_error) == ({}, "empty")  # the schema requires "path"
    assert b.arguments_error_detail is not None and "tool_calls" in b.arguments_error_detail
    assert (c.arguments, c.arguments_error) == ({}, None)  # nothing required: {} is fine


@pytest.mark.parametrize("finish", ["tool_calls", "length", "stop"])
def test_cut_off_arguments_are_unparseable_whatever_the_finish_reason(finish: str) -> None:
    msg = {
        "content": None,
        "tool_calls": [{"id": "a", "function": {"name": "read_file", "arguments": '{"path": "a.t'}}],
    }
    call = decode(completion(msg, finish), req(tools=[PATH_TOOL])).tool_calls[0]
    assert call.arguments_error == "unparseable"
    assert call.arguments == {} and call.raw_arguments == '{"path": "a.t'
    assert call.arguments_error_detail is not None and finish in call.arguments_error_detail
    if finish == "length":
        assert "max_tokens" in call.arguments_error_detail


def test_an_object_for_arguments_is_re_encoded() -> None:
    msg = {"tool_calls": [{"id": "a", "function": {"name": "read_file", "arguments": {"path": "x"}}}]}
    call = decode(completion(msg, "tool_calls")).tool_calls[0]
    assert call.arguments == {"path": "x"} and json.loads(call.raw_arguments or "") == {"path": "x"}


def test_empty_ids_get_unique_synthesised_ids() -> None:
    msg = {
        "tool_calls": [
            {"id": "", "function": {"name": "now", "arguments": "{}"}},
            {"id": "", "function": {"name": "now", "arguments": "{}"}},
        ]
    }
    first = decode(completion(msg, "tool_calls")).tool_calls
    second = decode(completion(msg, "tool_calls")).tool_calls
    ids = [c.id for c in (*first, *second)]
    assert all(i.startswith("call_") for i in ids)
    assert len(set(ids)) == 4


def test_call_extra_content_is_kept_for_replay() -> None:
    extra = {"google": {"thought_signature": "sig=="}}
    msg = {"tool_calls": [{"id": "", "extra_content": extra, "function": {"name": "now", "arguments": "{}"}}]}
    call = decode(completion(msg, "tool_calls")).tool_calls[0]
    assert call.provider_data == {"openai": {"extra_content": extra, "model": "asked"}}  # stamped: the model asked
    encoded = WIRE.encode_message(Message.assistant("", [call]))
    assert encoded is not None and encoded["tool_calls"][0]["extra_content"] == extra


@pytest.mark.parametrize(
    "body",
    [
        [],
        "text",
        {},
        {"choices": []},
        {"choices": ["x"]},
        {"choices": [{"finish_reason": "stop"}]},
        {"choices": [{"message": {"tool_calls": "x"}}]},
        {"choices": [{"message": {"tool_calls": [{"id": "a"}]}}]},
        {"choices": [{"message": {"tool_calls": [{"id": "a", "function": {"arguments": "{}"}}]}}]},
    ],
)
def test_malformed_bodies_raise_malformed_response_error(body: Any) -> None:
    with pytest.raises(MalformedResponseError) as info:
        decode(body)
    assert info.value.kind is ErrorKind.transient
    assert "malformed vendor response" in str(info.value)


def test_an_error_body_with_status_200_is_classified() -> None:
    body = {"error": {"code": 429, "message": "Rate limit exceeded upstream"}}
    with pytest.raises(ProviderError) as info:
        decode(body)
    assert not isinstance(info.value, MalformedResponseError)
    assert (info.value.kind, info.value.status) == (ErrorKind.transient, 429)


# --- errors -------------------------------------------------------------------------------------


def classify(status: int, body: Any, headers: dict[str, str] | None = None) -> ProviderError:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return WIRE.classify_error(status, headers or {}, raw, model="m", provider="openai")


def test_insufficient_quota_429_is_an_account_error() -> None:
    err = classify(429, {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}})
    assert (err.kind, err.retryable) == (ErrorKind.account, False)


def test_rate_limit_429_is_transient_with_retry_after() -> None:
    err = classify(429, {"error": {"message": "slow down", "code": "rate_limit_exceeded"}}, {"retry-after": "7"})
    assert (err.kind, err.retryable, err.retry_after) == (ErrorKind.transient, True, 7.0)


def test_numeric_codes_and_non_json_bodies() -> None:
    assert classify(500, {"error": {"code": 500, "message": "boom"}}).kind is ErrorKind.transient
    html = classify(502, b"<html>Bad gateway</html>")
    assert (html.kind, html.status) == (ErrorKind.transient, 502)


def test_groq_failed_generation_survives_the_excerpt_cap() -> None:
    body = {
        "error": {
            "message": "Tool call validation failed: " + "x" * 900,
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "failed_generation": '{"name": "f", "arguments": {"bad": 1}}',
        }
    }
    err = classify(400, body)
    assert err.kind is ErrorKind.request
    assert err.body_excerpt is not None and '{\\"name\\": \\"f\\"' in err.body_excerpt


# --- streaming ----------------------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return json.dumps({"id": "s1", "model": "served", "choices": choices} | extra)


def call_delta(index: int, args: str | None = None, *, id: str | None = None, name: str | None = None) -> str:
    item: dict[str, Any] = {"index": index, "function": {}}
    if id is not None:
        item["id"], item["type"] = id, "function"
    if name is not None:
        item["function"]["name"] = name
    if args is not None:
        item["function"]["arguments"] = args
    return chunk({"tool_calls": [item]})


def run(datas: list[str], request: LLMRequest | None = None) -> tuple[list[StreamEvent], LLMResponse]:
    decoder = WIRE.stream_decoder(request=request, model="asked", provider="openai")
    events: list[StreamEvent] = []
    for data in datas:
        events.extend(decoder.feed("message", data))
    return events, decoder.finish()


def test_fragments_accumulate_into_one_call() -> None:
    fragments = ['{"', "path", '":"', "a.ts", '"}']
    datas = [
        chunk({"role": "assistant", "content": None}),
        call_delta(0, "", id="call_a", name="read_file"),
        *(call_delta(0, f) for f in fragments),
        chunk({}, "tool_calls"),
        chunk(None, usage={"prompt_tokens": 9, "completion_tokens": 5}),
        "[DONE]",
    ]
    events, resp = run(datas, req(tools=[PATH_TOOL]))
    assert events[0] == ToolCallStart(0, "call_a", "read_file")
    assert [e for e in events if isinstance(e, ToolCallDelta)] == [ToolCallDelta(0, f) for f in fragments]
    end = events[-1]
    assert isinstance(end, ToolCallEnd) and end.call.arguments == {"path": "a.ts"}
    assert resp.tool_calls == (end.call,)
    assert (resp.stop_reason, resp.usage, resp.model, resp.response_id) == (
        StopReason.tool_use,
        Usage(9, 5),
        "served",
        "s1",
    )


def test_interleaved_indexes_give_two_calls_in_index_order() -> None:
    datas = [
        call_delta(1, "", id="call_b", name="now"),  # index 1 announced first
        call_delta(0, "", id="call_a", name="read_file"),
        call_delta(0, '{"path":'),
        call_delta(1, "{"),
        call_delta(0, '"x"}'),
        call_delta(1, "}"),
        chunk({}, "tool_calls"),
        "[DONE]",
    ]
    events, resp = run(datas)
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [
        ("call_a", "read_file", {"path": "x"}),
        ("call_b", "now", {}),
    ]
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [e.index for e in ends] == [0, 1]


@pytest.mark.parametrize("finish", ["tool_calls", "length", "stop"])
def test_streamed_cut_off_arguments_are_unparseable_whatever_the_finish_reason(finish: str) -> None:
    datas = [
        call_delta(0, "", id="call_a", name="read_file"),
        call_delta(0, '{"path": "a.'),
        chunk({}, finish),
        "[DONE]",
    ]
    _, resp = run(datas, req(tools=[PATH_TOOL]))
    call = resp.tool_calls[0]
    assert call.arguments_error == "unparseable" and call.raw_arguments == '{"path": "a.'
    assert call.arguments_error_detail is not None and finish in call.arguments_error_detail


def test_a_whole_call_in_one_delta_and_reasoning_deltas() -> None:
    whole = chunk(
        {"tool_calls": [{"id": "fc_1", "type": "function", "index": 0, "function": {"name": "now", "arguments": "{}"}}]}
    )
    datas = [chunk({"reasoning": "We"}), chunk({"reasoning": " need"}), whole, chunk({}, "tool_calls"), "[DONE]"]
    events, resp = run(datas)
    assert events[:2] == [ReasoningDelta("We"), ReasoningDelta(" need")]
    assert events[2:5] == [ToolCallStart(0, "fc_1", "now"), ToolCallDelta(0, "{}"), ToolCallEnd(0, resp.tool_calls[0])]
    assert resp.reasoning == "We need" and resp.content == ""


def test_text_stream_keeps_think_tags_in_content() -> None:
    datas = [chunk({"content": "<think>a</think>"}), chunk({"content": "B"}), chunk({}, "stop"), "[DONE]"]
    events, resp = run(datas)
    assert events == [TextDelta("<think>a</think>"), TextDelta("B")]
    assert (resp.content, resp.reasoning, resp.stop_reason) == ("<think>a</think>B", "", StopReason.end_turn)


def test_empty_stream_id_is_synthesised() -> None:
    _, resp = run([call_delta(0, "{}", id="", name="now"), chunk({}, "tool_calls"), "[DONE]"])
    assert resp.tool_calls[0].id.startswith("call_") and len(resp.tool_calls[0].id) > 10


def test_fragments_before_the_name_are_delivered_after_the_start() -> None:
    events, resp = run([call_delta(0, '{"a"', id="c"), call_delta(0, ":1}", name="now"), chunk({}, "stop"), "[DONE]"])
    assert events[:3] == [ToolCallStart(0, "c", "now"), ToolCallDelta(0, '{"a"'), ToolCallDelta(0, ":1}")]
    assert resp.tool_calls[0].arguments == {"a": 1}


def test_a_server_reusing_index_zero_for_each_call() -> None:
    datas = [
        call_delta(0, "", id="c1", name="now"),
        call_delta(0, "{}"),
        call_delta(0, "", id="c2", name="read_file"),
        call_delta(0, '{"path":"p"}'),
        chunk({}, "tool_calls"),
        "[DONE]",
    ]
    _, resp = run(datas)
    assert [(c.id, c.arguments) for c in resp.tool_calls] == [("c1", {}), ("c2", {"path": "p"})]


def _whole_call(index: int | None, name: str, args: str, id: str = "") -> str:
    item: dict[str, Any] = {"id": id, "type": "function", "function": {"name": name, "arguments": args}}
    if index is not None:
        item["index"] = index
    return chunk({"tool_calls": [item]})


@pytest.mark.parametrize("index", [0, None], ids=["index-0-reused", "no-index"])
@pytest.mark.parametrize("second", ["now", "read_file"], ids=["same-tool", "another-tool"])
def test_parallel_calls_with_empty_ids_on_one_index_stay_separate_calls(index: int | None, second: str) -> None:
    """Gemini's compat endpoint sends each parallel call whole, each with id "" (and index 0, or none): a second
    name on the slot is a second call, as the same answer non-streamed decodes — never one call whose arguments
    are two objects run together (every call of the step lost)."""
    second_args = '{"path":"p"}' if second == "read_file" else "{}"
    calls = [_whole_call(index, "now", "{}"), _whole_call(index, second, second_args)]
    datas = [*calls, chunk({}, "tool_calls"), "[DONE]"]
    events, resp = run(datas, req(tools=[PATH_TOOL, NOW_TOOL]))
    got = [(c.name, c.arguments, c.arguments_error) for c in resp.tool_calls]
    assert got == [("now", {}, None), (second, json.loads(second_args), None)]
    assert len({c.id for c in resp.tool_calls}) == 2
    assert [e.index for e in events if isinstance(e, ToolCallStart)] == [0, 1]
    items = [json.loads(c)["choices"][0]["delta"]["tool_calls"][0] for c in calls]
    whole = decode(completion({"tool_calls": items}, "tool_calls"))
    assert [(c.name, c.arguments) for c in whole.tool_calls] == [(n, a) for n, a, _ in got]


@pytest.mark.parametrize("with_id", [False, True], ids=["no-id", "id-repeated"])
def test_a_name_resent_with_every_fragment_is_still_one_call(with_id: bool) -> None:
    """Some servers (MiniMax behind NVIDIA NIM) resend the call's name with every fragment: until the arguments
    are a whole object, the same name on the slot is the same call."""
    call_id = "c1" if with_id else None
    fragments = ['{"pa', 'th":', '"a.ts"}']
    datas = [call_delta(0, f, id=call_id, name="read_file") for f in fragments]
    _, resp = run([*datas, chunk({}, "tool_calls"), "[DONE]"], req(tools=[PATH_TOOL]))
    assert [(c.name, c.arguments) for c in resp.tool_calls] == [("read_file", {"path": "a.ts"})]


def test_a_call_cut_off_at_length_before_any_argument_is_marked_not_run_with_defaults() -> None:
    """finish_reason "length" with a call whose arguments are still "": cut off right after its name, even for a
    tool with nothing required (OpenAI sends "{}" for a call that has no arguments) — marked, never {}."""
    datas = [
        chunk({"content": "Listing."}),
        call_delta(0, "{}", id="c0", name="now"),  # a finished call before it is left alone
        call_delta(1, "", id="c1", name="now"),
        chunk({}, "length"),
        "[DONE]",
    ]
    _, resp = run(datas, req(tools=[NOW_TOOL]))
    first, cut = resp.tool_calls
    assert (first.arguments, first.arguments_error) == ({}, None)
    assert (cut.arguments, cut.arguments_error, cut.raw_arguments) == ({}, "unparseable", "")
    assert cut.arguments_error_detail is not None and "max_tokens" in cut.arguments_error_detail
    assert resp.stop_reason is StopReason.max_tokens


@pytest.mark.parametrize("args", ["", None], ids=["empty", "absent"])
def test_a_whole_body_cut_off_at_length_before_any_argument_is_marked(args: str | None) -> None:
    function: dict[str, Any] = {"name": "now"}
    if args is not None:
        function["arguments"] = args
    msg = {"content": "Listing.", "tool_calls": [{"id": "c1", "type": "function", "function": function}]}
    (call,) = decode(completion(msg, "length"), req(tools=[NOW_TOOL])).tool_calls
    assert (call.arguments, call.arguments_error) == ({}, "unparseable")
    assert call.arguments_error_detail is not None and "max_tokens" in call.arguments_error_detail
    # The same call finished ("tool_calls") is a call with no arguments; "{}" at "length" was finished too.
    assert decode(completion(msg, "tool_calls"), req(tools=[NOW_TOOL])).tool_calls[0].arguments_error is None
    msg["tool_calls"][0]["function"]["arguments"] = "{}"  # type: ignore[index]
    assert decode(completion(msg, "length"), req(tools=[NOW_TOOL])).tool_calls[0].arguments_error is None


def test_missing_done_is_a_truncated_stream() -> None:
    decoder = WIRE.stream_decoder(request=None, model="m", provider="openai")
    decoder.feed("message", chunk({"content": "partial"}))
    decoder.feed("message", chunk({}, "stop"))
    assert not decoder.done
    with pytest.raises(MalformedResponseError, match=r"\[DONE\]"):
        decoder.finish()


def test_an_empty_stream_is_truncated() -> None:
    with pytest.raises(MalformedResponseError):
        run([])


def test_nothing_after_done_counts() -> None:
    decoder = WIRE.stream_decoder(request=None, model="m", provider="openai")
    decoder.feed("message", chunk({"content": "a"}, "stop"))
    assert decoder.feed("message", "[DONE]") == []
    assert decoder.done
    assert decoder.feed("message", chunk({"content": "late"})) == []
    assert decoder.finish().content == "a"


def test_in_band_error_chunk_raises_the_classified_error() -> None:
    decoder = WIRE.stream_decoder(request=None, model="m", provider="openrouter")
    decoder.feed("message", chunk({"content": "a"}))
    with pytest.raises(ProviderError) as info:
        decoder.feed("message", json.dumps({"error": {"code": 502, "message": "upstream died"}, "choices": []}))
    assert (info.value.kind, info.value.status, info.value.provider) == (ErrorKind.transient, 502, "openrouter")


def test_error_event_with_status_code_inside() -> None:
    data = json.dumps({"error": {"message": "bad call", "code": "tool_use_failed", "status_code": 400}})
    decoder = WIRE.stream_decoder(request=None, model="m", provider="groq")
    with pytest.raises(ProviderError) as info:
        decoder.feed("error", data)
    assert (info.value.kind, info.value.status, info.value.retryable) == (ErrorKind.request, 400, False)
    with pytest.raises(ProviderError) as info:
        decoder.feed("error", "not json at all")
    assert info.value.kind is ErrorKind.transient


@pytest.mark.parametrize(
    "data",
    ["{not json", "[1, 2]", "null", json.dumps({"choices": "x"}), json.dumps({"choices": [{"delta": "x"}]})],
)
def test_undecodable_stream_data_is_malformed(data: str) -> None:
    decoder = WIRE.stream_decoder(request=None, model="m", provider="openai")
    with pytest.raises(MalformedResponseError):
        decoder.feed("message", data)


def test_fragments_for_an_ended_call_are_malformed() -> None:
    decoder = WIRE.stream_decoder(request=None, model="m", provider="openai")
    decoder.feed("message", call_delta(0, "{}", id="c", name="now"))
    decoder.feed("message", chunk({}, "tool_calls"))
    with pytest.raises(MalformedResponseError):
        decoder.feed("message", call_delta(0, "more"))


def test_a_call_that_never_gets_a_name_is_malformed() -> None:
    decoder = WIRE.stream_decoder(request=None, model="m", provider="openai")
    decoder.feed("message", call_delta(0, "{}", id="c"))
    with pytest.raises(MalformedResponseError):
        decoder.feed("message", "[DONE]")


def test_streamed_refusal_and_other_choices() -> None:
    other_choice = json.dumps({"choices": [{"index": 1, "delta": {"content": "second answer"}}]})
    events, resp = run([chunk({"refusal": "No."}), other_choice, chunk({}, "stop"), "[DONE]"])
    assert events == [TextDelta("No.")]
    assert (resp.content, resp.stop_reason) == ("No.", StopReason.content_filter)


def test_openrouter_reasoning_details_fragments_merge_for_replay() -> None:
    datas = [
        chunk({"reasoning": "A", "reasoning_details": [{"type": "reasoning.text", "text": "A", "index": 0}]}),
        chunk({"reasoning": "B", "reasoning_details": [{"type": "reasoning.text", "text": "B", "index": 0}]}),
        chunk({"reasoning_details": [{"type": "reasoning.text", "signature": "sig", "index": 0}]}),
        chunk({"content": "ok"}, "stop"),
        "[DONE]",
    ]
    _, resp = run(datas)
    assert resp.provider_data == {
        "openai": {"reasoning_details": [{"type": "reasoning.text", "text": "AB", "index": 0, "signature": "sig"}],
                   "model": "asked"}
    }
    replay = WIRE.encode_message(resp.to_message())
    assert replay is not None and replay["reasoning_details"][0]["signature"] == "sig"


def test_decoder_satisfies_the_protocol_shape() -> None:
    decoder = WIRE.stream_decoder(request=None, model="m", provider="openai")
    assert isinstance(decoder, OpenAIStreamDecoder)
    assert decoder.done is False


# --- provider capabilities ----------------------------------------------------------------------


def test_forced_tool_choice_support_is_per_model_data() -> None:
    p = OpenAIProvider("gpt-4o", api_key="k-unused-123")
    assert p.carries_forced_tool_choice is True
    assert p.supports_forced_tool_choice("gpt-4o") is True
    assert p.supports_forced_tool_choice("o1-mini") is False
    assert p.supports_forced_tool_choice("o1-preview-2024-09-12") is False
    assert p.supports_forced_tool_choice("openai/O1-MINI") is False
    extended = OpenAIProvider(
        api_key="k-unused-123", rejects_forced_tool_choice=[*p.rejects_forced_tool_choice, "my-*"]
    )
    assert extended.supports_forced_tool_choice("my-model") is False
    assert extended.supports_forced_tool_choice("gpt-4o") is True


def test_compatible_servers_carry_forced_choices_only_when_declared() -> None:
    compat = OpenAIProvider("llama", base_url="http://127.0.0.1:8000/v1")
    assert compat.carries_forced_tool_choice is False
    assert compat.supports_forced_tool_choice("llama") is False
    declared = OpenAIProvider("llama", base_url="http://127.0.0.1:8000/v1", carries_forced_tool_choice=True)
    assert declared.supports_forced_tool_choice("llama") is True
    assert OpenAIProvider(base_url=DEFAULT_OPENAI_BASE_URL + "/").carries_forced_tool_choice is True


def test_official_endpoint_sends_max_completion_tokens() -> None:
    official = OpenAIProvider("o3", api_key="k-unused-123").codec
    compat = OpenAIProvider("x", base_url="http://127.0.0.1:1/v1").codec
    request = req(max_tokens=5)
    assert "max_completion_tokens" in official.encode_request(request, "o3", stream=False)
    assert "max_tokens" in compat.encode_request(request, "x", stream=False)
    assert OpenAIProvider().name == "openai" and OpenAIProvider(name="groq").name == "groq"
