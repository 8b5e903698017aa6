"""OpenAI-compatible servers' Chat Completions quirks: a fresh tool-call id on every streamed fragment of one call
(LM Studio, Poolside, mlx-openai-server, vLLM's harmony parser), ``reasoning_content`` (DeepSeek, Kimi, vLLM) in
and out, and the decode paths next to them (a stream cut mid-call, null fields, usage only in the last chunk,
``choices: []`` chunks)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentactors.errors import MalformedResponseError
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
    ToolSpec,
    Usage,
)
from agentactors.providers.openai.provider import OpenAIWire

PATH_TOOL = ToolSpec(
    "read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
)
NOW_TOOL = ToolSpec("now", "The time.", {"type": "object", "properties": {}})
WIRE = OpenAIWire()


def req(*messages: Message, **kw: Any) -> LLMRequest:
    return LLMRequest(messages or (Message.user("hi"),), **kw)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return json.dumps({"id": "s1", "model": "served", "choices": choices} | extra)


def call_delta(index: int | None, args: str | None = None, *, id: str | None = None, name: str | None = None) -> str:
    item: dict[str, Any] = {"function": {}}
    if index is not None:
        item["index"] = index
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


# --- a new id on every fragment of one call ---------------------------------------------------------------------


@pytest.mark.parametrize("index", [0, None], ids=["index-0", "no-index"])
def test_a_fresh_id_on_every_fragment_of_one_call_is_one_call(index: int | None) -> None:
    """LM Studio (Gemma and others), Poolside and mlx-openai-server send each fragment of one call with a new
    ``id`` and no name: one call, under its first id — not a call per fragment (each nameless: the stream
    failed as malformed)."""
    fragments = ['{"pa', 'th": ', '"a.ts"}']
    datas = [
        call_delta(index, "", id="193629320", name="read_file"),
        *(call_delta(index, f, id=str(100 + i)) for i, f in enumerate(fragments)),
        chunk({}, "tool_calls"),
        "[DONE]",
    ]
    events, resp = run(datas, req(tools=[PATH_TOOL]))
    assert [(c.id, c.name, c.arguments, c.arguments_error) for c in resp.tool_calls] == [
        ("193629320", "read_file", {"path": "a.ts"}, None)
    ]
    assert [e for e in events if isinstance(e, ToolCallStart)] == [ToolCallStart(0, "193629320", "read_file")]
    assert [e.arguments_fragment for e in events if isinstance(e, ToolCallDelta)] == fragments
    assert [e.call for e in events if isinstance(e, ToolCallEnd)] == list(resp.tool_calls)


def test_a_fresh_id_and_the_same_name_on_every_fragment_is_one_call() -> None:
    """vLLM's harmony (gpt-oss) parser sent a new id and the name with every fragment: the same name before the
    arguments are a whole object is the same call, whatever the id says."""
    fragments = ['{"pa', 'th":', '"a.ts"}']
    datas = [call_delta(0, f, id=f"chatcmpl-tool-{i}", name="read_file") for i, f in enumerate(fragments)]
    _, resp = run([*datas, chunk({}, "tool_calls"), "[DONE]"], req(tools=[PATH_TOOL]))
    assert [(c.id, c.arguments) for c in resp.tool_calls] == [("chatcmpl-tool-0", {"path": "a.ts"})]


@pytest.mark.parametrize("index", [0, None])
def test_parallel_calls_of_a_tool_without_parameters_stay_apart(index: int | None) -> None:
    """Found in review: two whole calls of a no-parameter tool (``"arguments": ""``) under one index or none, with
    their own ids, were merged into one (the same name, and "" never a whole object) — one call never ran."""
    datas = [call_delta(index, "", id="call_a", name="now"), call_delta(index, "", id="call_b", name="now")]
    _, resp = run([*datas, chunk({}, "tool_calls"), "[DONE]"], req(tools=[NOW_TOOL]))
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [("call_a", "now", {}), ("call_b", "now", {})]


def test_a_fresh_id_with_the_name_whose_first_fragment_is_empty_is_still_one_call() -> None:
    """The harmony parser's first fragment may carry the name and no arguments yet: the next, under a new id,
    brings them — the same call."""
    fragments = ["", '{"path":', '"a.ts"}']
    datas = [call_delta(0, f, id=f"chatcmpl-tool-{i}", name="read_file") for i, f in enumerate(fragments)]
    _, resp = run([*datas, chunk({}, "tool_calls"), "[DONE]"], req(tools=[PATH_TOOL]))
    assert [(c.id, c.arguments) for c in resp.tool_calls] == [("chatcmpl-tool-0", {"path": "a.ts"})]


def test_true_parallel_calls_stay_apart() -> None:
    """Distinct indexes, or a new id with another name (or the same name once the call is whole) on one index,
    are separate calls."""
    datas = [
        call_delta(0, "", id="a1", name="read_file"),
        call_delta(1, "", id="b1", name="now"),
        call_delta(0, '{"path":', id="a2"),
        call_delta(1, "{}", id="b2"),
        call_delta(0, '"x"}', id="a3"),
        chunk({}, "tool_calls"),
        "[DONE]",
    ]
    _, resp = run(datas, req(tools=[PATH_TOOL, NOW_TOOL]))
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [
        ("a1", "read_file", {"path": "x"}), ("b1", "now", {})
    ]
    reused = [
        call_delta(0, "", id="c1", name="now"),
        call_delta(0, "{}", id="c1b"),
        call_delta(0, "", id="c2", name="now"),  # the same tool again, the first call whole: a second call
        call_delta(0, "{}", id="c2b"),
        call_delta(0, '{"path":"p"}', id="c3", name="read_file"),
        chunk({}, "tool_calls"),
        "[DONE]",
    ]
    _, resp = run(reused, req(tools=[PATH_TOOL, NOW_TOOL]))
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [
        ("c1", "now", {}), ("c2", "now", {}), ("c3", "read_file", {"path": "p"})
    ]


# --- reasoning_content in ---------------------------------------------------------------------------------------


def test_reasoning_content_deltas_are_reasoning_streamed_and_whole() -> None:
    """DeepSeek (deepseek-reasoner), Kimi and vLLM's reasoning parsers stream ``reasoning_content``; newer vLLM
    sends ``reasoning`` (some versions both, the same text: read once)."""
    datas = [
        chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        chunk({"content": None, "reasoning_content": "Think"}),
        chunk({"content": None, "reasoning_content": "ing.", "reasoning": "ing."}),
        chunk({"content": "Hi", "reasoning_content": None}),
        chunk({}, "stop"),
        chunk(None, usage={"prompt_tokens": 3, "completion_tokens": 4,
                           "completion_tokens_details": {"reasoning_tokens": 2}}),
        "[DONE]",
    ]
    events, resp = run(datas)
    assert events == [ReasoningDelta("Think"), ReasoningDelta("ing."), TextDelta("Hi")]
    assert (resp.reasoning, resp.content, resp.usage) == ("Thinking.", "Hi", Usage(3, 4, reasoning_tokens=2))
    body = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "", "reasoning_content": "Need the file.",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]}}]}
    whole = WIRE.decode_response(body, request=None, model="deepseek-reasoner", provider="deepseek")
    assert (whole.reasoning, whole.content) == ("Need the file.", "")
    assert whole.to_message().reasoning == "Need the file."


# --- reasoning_content out --------------------------------------------------------------------------------------


def _history(reasoning: str) -> list[Message]:
    call = ToolCall("c1", "now", {})
    return [Message.user("time?"), Message.assistant("", [call], reasoning=reasoning), Message.tool("c1", "noon"),
            Message.assistant("Noon.", reasoning="Easy.")]


def _assistants(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


@pytest.mark.parametrize("model", ["gpt-4o", "llama-3.3-70b", "deepseek-chat", "qwen3-32b"])
def test_reasoning_is_not_sent_back_by_default(model: str) -> None:
    """OpenAI refuses a message field it does not know, and DeepSeek's first reasoner answered
    ``reasoning_content`` in the input with a 400: by default it is never sent back."""
    body = WIRE.encode_request(req(*_history("Need the clock.")), model, stream=False)
    assert all("reasoning_content" not in m and "reasoning" not in m for m in body["messages"])


@pytest.mark.parametrize("model", ["deepseek-reasoner", "deepseek-v4-pro", "deepseek/deepseek-v3.2",
                                   "kimi-k2-thinking", "moonshotai/Kimi-K2-Thinking"])
def test_thinking_models_that_need_it_get_reasoning_back_on_tool_call_turns(model: str) -> None:
    """DeepSeek's thinking mode and Kimi's thinking models answer a tool-call turn whose ``reasoning_content`` is
    missing with a 400 ("reasoning_content in the thinking mode must be passed back"): it goes back on each
    assistant message with calls (``""`` when there was none), and only there."""
    first, last = _assistants(WIRE.encode_request(req(*_history("Need the clock.")), model, stream=False))
    assert first["reasoning_content"] == "Need the clock."
    assert "reasoning_content" not in last  # no calls: ignored by DeepSeek, so not sent
    first, _ = _assistants(WIRE.encode_request(req(*_history("")), model, stream=False))
    assert first["reasoning_content"] == ""


def test_the_replay_option_overrides_the_model_table() -> None:
    on = req(*_history("Need the clock."), vendor_options={"openai": {"replay_reasoning": True}})
    first, _ = _assistants(WIRE.encode_request(on, "my-local-model", stream=False))
    assert first["reasoning_content"] == "Need the clock."
    off = req(*_history("Need the clock."), vendor_options={"openai": {"replay_reasoning": False}})
    body = WIRE.encode_request(off, "deepseek-reasoner", stream=False)
    assert all("reasoning_content" not in m for m in body["messages"]) and "replay_reasoning" not in body


# --- neighbouring decode paths ----------------------------------------------------------------------------------


def test_a_stream_cut_mid_call_is_truncated_not_a_call() -> None:
    decoder = WIRE.stream_decoder(request=req(tools=[PATH_TOOL]), model="asked", provider="openai")
    for data in (call_delta(0, "", id="c1", name="read_file"), call_delta(0, '{"path": "a')):
        decoder.feed("message", data)
    with pytest.raises(MalformedResponseError, match="truncated"):
        decoder.finish()


def test_null_fields_read_as_absent() -> None:
    datas = [
        chunk({"role": "assistant", "content": None, "tool_calls": None, "refusal": None, "reasoning": None}),
        json.dumps({"id": None, "model": None, "choices": [{"index": 0, "delta": None, "finish_reason": None}],
                    "usage": None}),
        call_delta(0, None, id="c1", name="now"),
        json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": None, "type": None,
                                                                       "function": {"name": None,
                                                                                    "arguments": None}}]},
                                 "finish_reason": None}]}),
        chunk({"content": None}, "tool_calls"),
        "[DONE]",
    ]
    _, resp = run(datas, req(tools=[NOW_TOOL]))
    assert [(c.id, c.name, c.arguments, c.arguments_error) for c in resp.tool_calls] == [("c1", "now", {}, None)]
    assert (resp.model, resp.response_id, resp.stop_reason) == ("served", "s1", StopReason.tool_use)


def test_usage_only_in_the_last_chunk_and_empty_choices_chunks() -> None:
    datas = [
        chunk(None),  # choices: [] before anything (Azure's prompt-filter chunk)
        chunk({"content": "A"}),
        chunk({}, "stop"),
        chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 1}),
        "[DONE]",
    ]
    events, resp = run(datas)
    assert events == [TextDelta("A")]
    assert (resp.usage, resp.stop_reason) == (Usage(5, 1), StopReason.end_turn)
