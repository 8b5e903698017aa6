"""Replaying thinking signatures to another model of the same vendor (a fallback from one model to another).

A thinking signature is bound to the model that made it: Anthropic answers a ``thinking`` block signed by
``claude-opus-…`` and replayed to ``claude-sonnet-…`` with a 400 "Invalid `signature` in `thinking` block"
(Claude on Bedrock the same for ``reasoningContent``), and Gemini 3 rejects a ``thoughtSignature`` made by another
model (Google's thought-signature FAQ: a trace transferred from a different model gets the dummy
``skip_thought_signature_validator`` instead).  So every decoder stamps the model the request was sent to beside
what it keeps for replay, and every encoder, replaying a message stamped with another model:

* Anthropic and Bedrock leave that message's thinking (``thinking`` / ``redacted_thinking``, ``reasoningContent``)
  out — and when that message begins the current tool loop, manual thinking is left out of the request, as for a
  turn another wire made (``llm.setting_dropped``);
* Gemini sends no signature from another model: the first call of the step gets the documented skip signature on
  Gemini 3 and later.

A message with no stamp (stored before the stamp existed) is replayed as it was; the stamp itself is never sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import pytest

from agentactors import LLMRequest, Message, ToolSpec
from agentactors.events import EventSink, InMemoryRecorder, use_sink
from agentactors.journal.codec import response_from_json, response_to_json
from agentactors.messages import LLMResponse
from agentactors.providers.anthropic.decode import decode_message
from agentactors.providers.anthropic.encode import encode_request as anthropic_body
from agentactors.providers.anthropic.stream import AnthropicStreamDecoder
from agentactors.providers.bedrock.decode import decode_converse
from agentactors.providers.bedrock.encode import encode_request as bedrock_body
from agentactors.providers.bedrock.stream import BedrockStreamDecoder
from agentactors.providers.gemini.decode import decode_response as gemini_decode
from agentactors.providers.gemini.encode import SKIP_SIGNATURE
from agentactors.providers.gemini.encode import encode_request as gemini_body
from agentactors.providers.gemini.stream import GeminiStreamDecoder
from agentactors.sessions.codec import message_from_json, message_to_json

LOOKUP = ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {"word": {"type": "string"}}})
OPUS = "claude-opus-4-1-20250805"
SONNET = "claude-sonnet-4-5-20250929"
BEDROCK_OPUS = "us.anthropic.claude-opus-4-1-20250805-v1:0"
BEDROCK_SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
GEMINI_PRO = "gemini-3-pro-preview"
GEMINI_FLASH3 = "gemini-3-flash-preview"
GEMINI_25 = "gemini-2.5-flash"
SIGNATURE = "EqQBCkgIARABGAIiQLopus" + "A" * 256 + "=="
REDACTED_DATA = "EmwKAhgBEgy3va3pzix" + "B" * 128
GEMINI_SIG = "Q2lnbmF0dXJlLW9mLWdlbWluaS0zLXBybw" + "C" * 64
TEXT_SIG = "VGV4dC1zaWduYXR1cmU" + "D" * 32


@contextmanager
def recording() -> Iterator[InMemoryRecorder]:
    recorder = InMemoryRecorder()
    with use_sink(EventSink([recorder], run_id="run-t")):
        yield recorder


def drops(recorder: InMemoryRecorder) -> dict[str, str]:
    return {e.setting: e.reason for e in recorder.events if e.type == "llm.setting_dropped"}


def tool_loop(answer: LLMResponse, call_id: str) -> list[Message]:
    """The conversation after ``answer`` called a tool: user, the answer replayed, the tool's result."""
    return [Message.user("Look up a."), answer.to_message(), Message.tool(call_id, "a: a letter")]


def nested_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in nested_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in nested_keys(v)}
    return set()


# --- Anthropic ---------------------------------------------------------------------------------------------------

THINKING = {"type": "thinking", "thinking": "The user wants a word.", "signature": SIGNATURE}
REDACTED = {"type": "redacted_thinking", "data": REDACTED_DATA}
SERVER_USE = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "a"}}
SERVER_RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
TOOL_USE = {"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {"word": "a"}}


def anthropic_answer(model: str, *, streamed: bool, blocks: tuple[dict[str, Any], ...] = (THINKING, REDACTED)) -> (
        LLMResponse):
    content = [*blocks, TOOL_USE]
    if not streamed:
        body = {"type": "message", "id": "msg_1", "model": model, "role": "assistant", "content": content,
                "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 7}}
        return decode_message(body, request=None, model=model, provider="anthropic")
    decoder = AnthropicStreamDecoder(request=None, model=model, provider="anthropic")
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {"id": "msg_1", "model": model, "usage": {}}})]
    for index, block in enumerate(content):
        if block["type"] == "thinking":
            events += [
                ("content_block_start", {"type": "content_block_start", "index": index,
                                         "content_block": {"type": "thinking", "thinking": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": index,
                                         "delta": {"type": "thinking_delta", "thinking": block["thinking"]}}),
                ("content_block_delta", {"type": "content_block_delta", "index": index,
                                         "delta": {"type": "signature_delta", "signature": block["signature"]}}),
            ]
        elif block["type"] == "tool_use":
            events += [
                ("content_block_start", {"type": "content_block_start", "index": index,
                                         "content_block": {**block, "input": {}}}),
                ("content_block_delta", {"type": "content_block_delta", "index": index,
                                         "delta": {"type": "input_json_delta",
                                                   "partial_json": json.dumps(block["input"])}}),
            ]
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": block}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}}),
               ("message_stop", {"type": "message_stop"})]
    for name, payload in events:
        decoder.feed(name, json.dumps(payload))
    return decoder.finish()


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
def test_anthropic_replays_thinking_to_the_model_that_made_it(streamed: bool) -> None:
    answer = anthropic_answer(OPUS, streamed=streamed)
    request = LLMRequest(tool_loop(answer, "toolu_01"), tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = anthropic_body(request, OPUS, stream=False)
    assert body["messages"][1]["content"][:3] == [THINKING, REDACTED, TOOL_USE]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and drops(recorder) == {}
    assert "model" not in nested_keys(body["messages"])  # the stamp is never sent


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
def test_anthropic_leaves_another_models_thinking_out(streamed: bool) -> None:
    # opus -> sonnet: opus's signature is a 400 on sonnet, so its blocks stay home and the tool loop (which began
    # with opus's message) is sent without manual thinking, as for a turn another wire made.
    answer = anthropic_answer(OPUS, streamed=streamed)
    request = LLMRequest(tool_loop(answer, "toolu_01"), tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = anthropic_body(request, SONNET, stream=False)
    sent = json.dumps(body)
    assert SIGNATURE not in sent and REDACTED_DATA not in sent
    assert body["messages"][1]["content"] == [TOOL_USE]
    assert "thinking" not in body and "thinking" in drops(recorder)
    assert "model" not in nested_keys(body["messages"])


def test_anthropic_keeps_server_blocks_of_another_model() -> None:
    # Only thinking is bound to its model: a server tool's call and result are replayed as they came.
    answer = anthropic_answer(OPUS, streamed=False, blocks=(THINKING, SERVER_USE, SERVER_RESULT))
    request = LLMRequest(tool_loop(answer, "toolu_01"), tools=[LOOKUP])
    with recording():
        body = anthropic_body(request, SONNET, stream=False)
    assert body["messages"][1]["content"] == [SERVER_USE, SERVER_RESULT, TOOL_USE]


def test_anthropic_keeps_thinking_on_a_new_turn_after_another_model() -> None:
    # Opus's tool loop is over: its thinking is left out of the history, and sonnet thinks on the new turn.
    answer = anthropic_answer(OPUS, streamed=False)
    messages = [*tool_loop(answer, "toolu_01"), Message.assistant("a is a letter."), Message.user("And b?")]
    request = LLMRequest(messages, tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = anthropic_body(request, SONNET, stream=False)
    assert SIGNATURE not in json.dumps(body)
    assert body["thinking"]["type"] == "enabled" and drops(recorder) == {}


def test_anthropic_replays_an_unstamped_message_as_before() -> None:
    # Stored before the stamp existed: nothing says which model made it, so it is replayed as it was.
    turn = anthropic_answer(OPUS, streamed=False).to_message()
    assert turn.provider_data is not None
    data = {key: value for key, value in turn.provider_data["anthropic"].items() if key != "model"}
    old = Message.assistant("", turn.tool_calls, reasoning=turn.reasoning, provider_data={"anthropic": data})
    request = LLMRequest([Message.user("Look up a."), old, Message.tool("toolu_01", "a")], tools=[LOOKUP],
                         thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = anthropic_body(request, SONNET, stream=False)
    assert body["messages"][1]["content"][:2] == [THINKING, REDACTED] and drops(recorder) == {}


def test_anthropic_stamps_only_what_it_replays() -> None:
    body = {"type": "message", "content": [{"type": "text", "text": "Paris"}], "stop_reason": "stop_sequence",
            "stop_sequence": "."}
    assert decode_message(body, request=None, model=OPUS, provider="anthropic").provider_data == {
        "anthropic": {"stop_sequence": "."}}
    answer = anthropic_answer(OPUS, streamed=False)
    assert answer.provider_data is not None and answer.provider_data["anthropic"]["model"] == OPUS


# --- Claude on Bedrock -------------------------------------------------------------------------------------------

REASONING = {"reasoningContent": {"reasoningText": {"text": "hm", "signature": SIGNATURE}}}
BEDROCK_REDACTED = {"reasoningContent": {"redactedContent": REDACTED_DATA}}
TOOL_USE_BLOCK = {"toolUse": {"toolUseId": "tooluse_1", "name": "lookup", "input": {"word": "a"}}}


def bedrock_answer(model: str, *, streamed: bool) -> LLMResponse:
    if not streamed:
        body = {"output": {"message": {"role": "assistant", "content": [REASONING, BEDROCK_REDACTED, TOOL_USE_BLOCK]}},
                "stopReason": "tool_use", "usage": {"inputTokens": 3, "outputTokens": 4}}
        return decode_converse(body, request=None, model=model, provider="bedrock")
    decoder = BedrockStreamDecoder(request=None, model=model, provider="bedrock")
    events: list[tuple[str, dict[str, Any]]] = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hm"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": SIGNATURE}}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("contentBlockDelta", {"contentBlockIndex": 1,
                               "delta": {"reasoningContent": {"redactedContent": REDACTED_DATA}}}),
        ("contentBlockStop", {"contentBlockIndex": 1}),
        ("contentBlockStart", {"contentBlockIndex": 2,
                               "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "lookup"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"word": "a"}'}}}),
        ("contentBlockStop", {"contentBlockIndex": 2}),
        ("messageStop", {"stopReason": "tool_use"}),
        ("metadata", {"usage": {"inputTokens": 3, "outputTokens": 4}}),
    ]
    for name, payload in events:
        decoder.feed(name, json.dumps(payload))
    return decoder.finish()


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("target", [BEDROCK_OPUS, "global.anthropic.claude-opus-4-1-20250805-v1:0"])
def test_bedrock_replays_reasoning_to_the_model_that_made_it(streamed: bool, target: str) -> None:
    # Another inference profile of the same model is the same model (the wire's tables read it so).
    answer = bedrock_answer(BEDROCK_OPUS, streamed=streamed)
    request = LLMRequest(tool_loop(answer, "tooluse_1"), tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = bedrock_body(request, target, stream=False)
    assert body["messages"][1]["content"] == [REASONING, BEDROCK_REDACTED, TOOL_USE_BLOCK]
    assert body["additionalModelRequestFields"]["thinking"]["type"] == "enabled" and drops(recorder) == {}
    assert "model" not in nested_keys(body["messages"])


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
def test_bedrock_leaves_another_models_reasoning_out(streamed: bool) -> None:
    answer = bedrock_answer(BEDROCK_OPUS, streamed=streamed)
    request = LLMRequest(tool_loop(answer, "tooluse_1"), tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = bedrock_body(request, BEDROCK_SONNET, stream=False)
    sent = json.dumps(body)
    assert SIGNATURE not in sent and REDACTED_DATA not in sent
    assert body["messages"][1]["content"] == [TOOL_USE_BLOCK]
    assert "thinking" not in body.get("additionalModelRequestFields", {}) and "thinking" in drops(recorder)
    assert "model" not in nested_keys(body["messages"])


def test_bedrock_replays_an_unstamped_message_as_before() -> None:
    turn = bedrock_answer(BEDROCK_OPUS, streamed=False).to_message()
    assert turn.provider_data is not None
    data = {key: value for key, value in turn.provider_data["bedrock"].items() if key != "model"}
    old = Message.assistant("", turn.tool_calls, reasoning=turn.reasoning, provider_data={"bedrock": data})
    request = LLMRequest([Message.user("Look up a."), old, Message.tool("tooluse_1", "a")], tools=[LOOKUP],
                         thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = bedrock_body(request, BEDROCK_SONNET, stream=False)
    assert body["messages"][1]["content"][:2] == [REASONING, BEDROCK_REDACTED] and drops(recorder) == {}


# --- Gemini ------------------------------------------------------------------------------------------------------


def gemini_chunks() -> list[dict[str, Any]]:
    return [
        {"candidates": [{"content": {"role": "model", "parts": [
            {"text": "Looking it up.", "thoughtSignature": TEXT_SIG}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "lookup", "args": {"word": "a"}}, "thoughtSignature": GEMINI_SIG},
            {"functionCall": {"name": "lookup", "args": {"word": "b"}}}]}, "finishReason": "STOP"}],
         "modelVersion": "gemini-3-pro-preview-11-2025"},
    ]


def gemini_answer(model: str, *, streamed: bool) -> LLMResponse:
    chunks = gemini_chunks()
    if not streamed:
        parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
        body = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
                "modelVersion": "gemini-3-pro-preview-11-2025"}
        return gemini_decode(body, request=None, model=model, provider="gemini")
    decoder = GeminiStreamDecoder(request=None, model=model, provider="gemini")
    for chunk in chunks:
        decoder.feed("", json.dumps(chunk))
    return decoder.finish()


def gemini_loop(answer: LLMResponse) -> list[Message]:
    first, second = answer.tool_calls
    return [Message.user("Look up a and b."), answer.to_message(), Message.tool(first.id, "a: a letter"),
            Message.tool(second.id, "b: a letter")]


def model_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = body["contents"][1]["parts"]
    return parts


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("target", [GEMINI_PRO, f"models/{GEMINI_PRO}"])
def test_gemini_replays_signatures_to_the_model_that_made_them(streamed: bool, target: str) -> None:
    answer = gemini_answer(GEMINI_PRO, streamed=streamed)
    body = gemini_body(LLMRequest(gemini_loop(answer), tools=[LOOKUP]), target, stream=False)
    text, first, second = model_parts(body)
    assert text["thoughtSignature"] == TEXT_SIG and first["thoughtSignature"] == GEMINI_SIG
    assert "thoughtSignature" not in second
    assert "model" not in nested_keys(body["contents"])


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
def test_gemini_3_gets_the_skip_signature_for_another_models_calls(streamed: bool) -> None:
    answer = gemini_answer(GEMINI_PRO, streamed=streamed)
    body = gemini_body(LLMRequest(gemini_loop(answer), tools=[LOOKUP]), GEMINI_FLASH3, stream=False)
    text, first, second = model_parts(body)
    assert "thoughtSignature" not in text and "thoughtSignature" not in second
    assert first["thoughtSignature"] == SKIP_SIGNATURE
    sent = json.dumps(body)
    assert GEMINI_SIG not in sent and TEXT_SIG not in sent and "model" not in nested_keys(body["contents"])


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
def test_gemini_2_5_gets_no_signature_from_another_model(streamed: bool) -> None:
    answer = gemini_answer(GEMINI_PRO, streamed=streamed)
    body = gemini_body(LLMRequest(gemini_loop(answer), tools=[LOOKUP]), GEMINI_25, stream=False)
    assert all("thoughtSignature" not in part for part in model_parts(body))


def test_gemini_replays_an_unstamped_message_as_before() -> None:
    turn = gemini_answer(GEMINI_PRO, streamed=False).to_message()

    def unstamped(data: Any) -> dict[str, Any] | None:
        if data is None:
            return None
        return {"gemini": {key: value for key, value in data["gemini"].items() if key != "model"}}

    calls = [attrs.evolve(call, provider_data=unstamped(call.provider_data)) for call in turn.tool_calls]
    old = Message.assistant(turn.content, calls, provider_data=unstamped(turn.provider_data))
    messages = [Message.user("Look up a and b."), old, Message.tool(calls[0].id, "a"), Message.tool(calls[1].id, "b")]
    body = gemini_body(LLMRequest(messages, tools=[LOOKUP]), GEMINI_FLASH3, stream=False)
    text, first, _ = model_parts(body)
    assert text["thoughtSignature"] == TEXT_SIG and first["thoughtSignature"] == GEMINI_SIG


def test_gemini_stamps_the_model_asked_for_not_the_version_answered() -> None:
    # modelVersion names a snapshot the request never named: the encoder compares the names it is given.
    answer = gemini_answer(GEMINI_PRO, streamed=False)
    assert answer.model == "gemini-3-pro-preview-11-2025"
    assert answer.provider_data is not None and answer.provider_data["gemini"]["model"] == GEMINI_PRO
    assert answer.tool_calls[0].provider_data == {"gemini": {"thought_signature": GEMINI_SIG, "model": GEMINI_PRO}}
    assert answer.tool_calls[1].provider_data is None  # nothing to replay, nothing to stamp


# --- the stamp survives a session store and a journal ------------------------------------------------------------


def test_a_session_and_a_journal_keep_the_stamp() -> None:
    for answer in (anthropic_answer(OPUS, streamed=False), bedrock_answer(BEDROCK_OPUS, streamed=False),
                   gemini_answer(GEMINI_PRO, streamed=False)):
        message = answer.to_message()
        assert message_from_json(json.loads(json.dumps(message_to_json(message)))) == message
        assert response_from_json(json.loads(json.dumps(response_to_json(answer)))) == answer
        stamped = json.dumps(message_to_json(message))
        assert OPUS in stamped or GEMINI_PRO in stamped
