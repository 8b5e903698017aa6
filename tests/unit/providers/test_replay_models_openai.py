"""Replaying reasoning to another model on the OpenAI wires (Chat Completions and Responses).

The sibling of ``test_replay_models.py`` for the two wires it left: what a model signed or encrypted is replayed to
that model only.

* Chat Completions: Gemini's OpenAI-compatible endpoint answers with ``extra_content.google.thought_signature`` (on
  a call, on the message) and a message-level ``thought_signature``; OpenRouter with ``reasoning_details``.  After a
  fallback ``gemini-3-pro`` -> ``gemini-3-flash`` on the same wire, the other model's signature is a 400 (Google's
  thought-signature FAQ: a trace from a different model takes the dummy ``skip_thought_signature_validator``, which
  clients of the compatible endpoint send as ``extra_content.google.thought_signature``).  So the decoders stamp the
  model asked for in ``provider_data["openai"]["model"]``, and the encoder leaves another model's fields out: a
  signed call of another model gets the dummy on Gemini 3 and later, nothing on an earlier Gemini.
* Responses: a ``reasoning`` item's ``encrypted_content`` is readable by the model that made it only (a model switch
  is answered with 400 ``invalid_encrypted_content``; a model that does not reason refuses reasoning items), so
  another model's reasoning items are left out, and with them the item ids that may go out only beside them.

A message with no stamp (stored before it existed) is replayed as before; the stamp itself is never sent.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from agentactors import LLMRequest, Message, ToolSpec
from agentactors.journal.codec import response_from_json, response_to_json
from agentactors.messages import LLMResponse
from agentactors.providers.azure import AzureChatWire, AzureResponsesWire
from agentactors.providers.openai.decode import decode_response as chat_decode
from agentactors.providers.openai.encode import encode_request as chat_body
from agentactors.providers.openai.stream import OpenAIStreamDecoder
from agentactors.providers.responses.decode import decode_response as responses_decode
from agentactors.providers.responses.encode import encode_request as responses_body
from agentactors.providers.responses.stream import ResponsesStreamDecoder
from agentactors.sessions.codec import message_from_json, message_to_json

LOOKUP = ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {"word": {"type": "string"}}})
GEMINI_PRO = "gemini-3-pro-preview"
GEMINI_FLASH3 = "gemini-3-flash-preview"
GEMINI_25 = "gemini-2.5-flash"
SKIP = {"google": {"thought_signature": "skip_thought_signature_validator"}}
CALL_SIG = "Q2FsbC1zaWduYXR1cmUtb2YtZ2VtaW5pLTMtcHJv" + "C" * 64
TEXT_SIG = "VGV4dC1zaWduYXR1cmU" + "D" * 32
DETAILS = [{"type": "reasoning.encrypted", "data": "ZW5jcnlwdGVkLWJ5LW9wdXM" + "E" * 48, "index": 0}]
O4_MINI = "o4-mini"
GPT5 = "gpt-5"
GPT41 = "gpt-4.1"
ENCRYPTED = "gAAAAABoZW5jcnlwdGVkLWJ5LW80LW1pbmk" + "F" * 96


def nested_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in nested_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in nested_keys(v)}
    return set()


# --- Chat Completions: Gemini's OpenAI-compatible endpoint, OpenRouter ------------------------------------------


def _call(index: int, word: str, *, signed: bool) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "id": "", "type": "function",
                            "function": {"name": "lookup", "arguments": json.dumps({"word": word})}}
    if signed:
        call["extra_content"] = {"google": {"thought_signature": CALL_SIG}}
    return call


def gemini_compat_answer(model: str, *, streamed: bool) -> LLMResponse:
    """Gemini 3 through its OpenAI-compatible endpoint: two parallel calls, the first signed, and signed text."""
    text = {"google": {"thought_signature": TEXT_SIG}}
    calls = [_call(0, "a", signed=True), _call(1, "b", signed=False)]
    if not streamed:
        message = {"role": "assistant", "content": "Looking both up.", "extra_content": text,
                   "tool_calls": [{k: v for k, v in c.items() if k != "index"} for c in calls]}
        body = {"id": "r1", "model": model, "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 9}}
        return chat_decode(body, request=None, model=model, provider="openai")
    decoder = OpenAIStreamDecoder(request=None, model=model, provider="openai")
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Looking both up.",
                                            "extra_content": text}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [calls[0]]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [calls[1]]}, "finish_reason": "tool_calls"}]},
    ]
    for chunk in chunks:
        decoder.feed("", json.dumps({"id": "r1", "model": model, **chunk}))
    decoder.feed("", "[DONE]")
    return decoder.finish()


def chat_loop(answer: LLMResponse) -> list[Message]:
    first, second = answer.tool_calls
    return [Message.user("Look up a and b."), answer.to_message(), Message.tool(first.id, "a: a letter"),
            Message.tool(second.id, "b: a letter")]


def replayed_turn(body: dict[str, Any]) -> dict[str, Any]:
    turn: dict[str, Any] = body["messages"][1]
    assert turn["role"] == "assistant"
    return turn


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("target", [GEMINI_PRO, f"google/{GEMINI_PRO}", GEMINI_PRO.upper()])
def test_chat_replays_signatures_to_the_model_that_made_them(streamed: bool, target: str) -> None:
    answer = gemini_compat_answer(GEMINI_PRO, streamed=streamed)
    body = chat_body(LLMRequest(chat_loop(answer), tools=[LOOKUP]), target, stream=False)
    turn = replayed_turn(body)
    assert turn["extra_content"] == {"google": {"thought_signature": TEXT_SIG}}
    assert turn["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": CALL_SIG}}
    assert "extra_content" not in turn["tool_calls"][1]
    assert "model" not in nested_keys(body["messages"])  # the stamp is never sent


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
def test_chat_gemini_3_gets_the_skip_signature_for_another_models_calls(streamed: bool) -> None:
    # gemini-3-pro -> gemini-3-flash on one wire: pro's signatures are a 400 on flash, so the signed call gets the
    # documented dummy in its place and the message's own signature stays home.
    answer = gemini_compat_answer(GEMINI_PRO, streamed=streamed)
    body = chat_body(LLMRequest(chat_loop(answer), tools=[LOOKUP]), GEMINI_FLASH3, stream=False)
    turn = replayed_turn(body)
    assert "extra_content" not in turn
    assert turn["tool_calls"][0]["extra_content"] == SKIP and "extra_content" not in turn["tool_calls"][1]
    sent = json.dumps(body)
    assert CALL_SIG not in sent and TEXT_SIG not in sent and "model" not in nested_keys(body["messages"])


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
def test_chat_gemini_2_5_gets_no_signature_from_another_model(streamed: bool) -> None:
    answer = gemini_compat_answer(GEMINI_PRO, streamed=streamed)
    body = chat_body(LLMRequest(chat_loop(answer), tools=[LOOKUP]), GEMINI_25, stream=False)
    assert "extra_content" not in json.dumps(body["messages"]) and CALL_SIG not in json.dumps(body)


def test_chat_replays_an_unstamped_message_as_before() -> None:
    turn = gemini_compat_answer(GEMINI_PRO, streamed=False).to_message()

    def unstamped(data: Any) -> dict[str, Any] | None:
        if data is None:
            return None
        return {"openai": {key: value for key, value in data["openai"].items() if key != "model"}}

    calls = [attrs.evolve(call, provider_data=unstamped(call.provider_data)) for call in turn.tool_calls]
    old = Message.assistant(turn.content, calls, provider_data=unstamped(turn.provider_data))
    messages = [Message.user("Look up a and b."), old, Message.tool(calls[0].id, "a"), Message.tool(calls[1].id, "b")]
    body = chat_body(LLMRequest(messages, tools=[LOOKUP]), GEMINI_FLASH3, stream=False)
    sent = replayed_turn(body)
    assert sent["extra_content"] == {"google": {"thought_signature": TEXT_SIG}}
    assert sent["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": CALL_SIG}}


def test_chat_stamps_the_model_asked_for_and_only_what_it_replays() -> None:
    answer = gemini_compat_answer(GEMINI_PRO, streamed=False)
    assert answer.provider_data == {"openai": {"extra_content": {"google": {"thought_signature": TEXT_SIG}},
                                               "model": GEMINI_PRO}}
    assert answer.tool_calls[0].provider_data == {
        "openai": {"extra_content": {"google": {"thought_signature": CALL_SIG}}, "model": GEMINI_PRO}}
    assert answer.tool_calls[1].provider_data is None  # nothing to replay, nothing to stamp
    plain = {"id": "r2", "model": "gpt-4o-2024-08-06",
             "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}]}
    assert chat_decode(plain, request=None, model="gpt-4o", provider="openai").provider_data is None


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
def test_chat_leaves_another_models_reasoning_details_out(streamed: bool) -> None:
    # OpenRouter: reasoning_details carry a model's encrypted reasoning or signature, bound to it as well.
    model = "anthropic/claude-opus-4.1"
    if streamed:
        decoder = OpenAIStreamDecoder(request=None, model=model, provider="openrouter")
        decoder.feed("", json.dumps({"choices": [{"index": 0, "delta": {"content": "Hello.",
                                                                         "reasoning_details": DETAILS}}]}))
        decoder.feed("", json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
        decoder.feed("", "[DONE]")
        answer = decoder.finish()
    else:
        message = {"role": "assistant", "content": "Hello.", "reasoning_details": DETAILS}
        body = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        answer = chat_decode(body, request=None, model=model, provider="openrouter")
    messages = [Message.user("Hi"), answer.to_message(), Message.user("And?")]
    same = chat_body(LLMRequest(messages), model, stream=False)
    assert same["messages"][1]["reasoning_details"] == DETAILS
    other = chat_body(LLMRequest(messages), "anthropic/claude-sonnet-4.5", stream=False)
    assert other["messages"][1] == {"role": "assistant", "content": "Hello."}


def test_chat_official_endpoint_still_gets_no_foreign_field_nor_stamp() -> None:
    answer = gemini_compat_answer(GEMINI_PRO, streamed=False)
    body = chat_body(LLMRequest(chat_loop(answer), tools=[LOOKUP]), "gpt-4o", stream=False, official=True)
    sent = json.dumps(body["messages"])
    assert "extra_content" not in sent and "model" not in nested_keys(body["messages"])


# --- Responses -----------------------------------------------------------------------------------------------------

REASONING = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look it up."}],
             "encrypted_content": ENCRYPTED}
FUNCTION_CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup",
                 "arguments": json.dumps({"word": "a"}), "status": "completed"}
MESSAGE = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
           "content": [{"type": "output_text", "text": "Looking it up.", "annotations": []}]}


def responses_answer(model: str, *, streamed: bool) -> LLMResponse:
    body = {"id": "resp_1", "object": "response", "model": f"{model}-2025-04-16", "status": "completed",
            "output": [REASONING, MESSAGE, FUNCTION_CALL],
            "usage": {"input_tokens": 20, "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 16}}}
    if not streamed:
        return responses_decode(body, request=None, model=model, provider="openai-responses")
    decoder = ResponsesStreamDecoder(request=None, model=model, provider="openai-responses")
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": 2, "item": {**FUNCTION_CALL, "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "output_index": 2, "item_id": "fc_1",
         "delta": FUNCTION_CALL["arguments"]},
        {"type": "response.output_item.done", "output_index": 2, "item": FUNCTION_CALL},
        {"type": "response.completed", "response": body},
    ]
    for event in events:
        decoder.feed(event["type"], json.dumps(event))
    return decoder.finish()


def responses_loop(answer: LLMResponse) -> list[Message]:
    return [Message.user("Look up a."), answer.to_message(), Message.tool("call_1", "a: a letter")]


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("target", [O4_MINI, f"openai/{O4_MINI}"])
def test_responses_replays_reasoning_to_the_model_that_made_it(streamed: bool, target: str) -> None:
    answer = responses_answer(O4_MINI, streamed=streamed)
    body = responses_body(LLMRequest(responses_loop(answer), tools=[LOOKUP]), target, stream=False)
    items = body["input"]
    assert items[1] == REASONING
    assert items[2]["id"] == "msg_1" and items[3]["id"] == "fc_1"  # item ids go beside their reasoning item
    assert "model" not in nested_keys(items)


@pytest.mark.parametrize("streamed", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("target", [GPT5, GPT41])
def test_responses_leaves_another_models_reasoning_out(streamed: bool, target: str) -> None:
    # o4-mini -> gpt-5 (or a model that does not reason): o4-mini's encrypted reasoning is a 400 there
    # (invalid_encrypted_content), and the ids of the items it produced are a 400 without it.
    answer = responses_answer(O4_MINI, streamed=streamed)
    body = responses_body(LLMRequest(responses_loop(answer), tools=[LOOKUP]), target, stream=False)
    items = body["input"]
    assert ENCRYPTED not in json.dumps(body) and all(item.get("type") != "reasoning" for item in items)
    assert items[1] == {"role": "assistant", "content": "Looking it up."}
    assert items[2] == {"type": "function_call", "call_id": "call_1", "name": "lookup",
                        "arguments": json.dumps({"word": "a"})}
    assert "model" not in nested_keys(items)


def test_responses_replays_an_unstamped_message_as_before() -> None:
    turn = responses_answer(O4_MINI, streamed=False).to_message()
    assert turn.provider_data is not None
    data = {key: value for key, value in turn.provider_data["openai-responses"].items() if key != "model"}
    old = Message.assistant(turn.content, turn.tool_calls, provider_data={"openai-responses": data})
    messages = [Message.user("Look up a."), old, Message.tool("call_1", "a")]
    body = responses_body(LLMRequest(messages, tools=[LOOKUP]), GPT5, stream=False)
    assert body["input"][1] == REASONING and body["input"][3]["id"] == "fc_1"


def test_responses_stamps_the_model_asked_for_and_only_what_it_replays() -> None:
    answer = responses_answer(O4_MINI, streamed=False)
    assert answer.model == "o4-mini-2025-04-16"
    assert answer.provider_data is not None and answer.provider_data["openai-responses"]["model"] == O4_MINI
    plain = {"id": "resp_2", "status": "completed", "output": [MESSAGE]}
    assert responses_decode(plain, request=None, model=GPT41, provider="openai-responses").provider_data is None


# --- the stamp survives a session store and a journal ------------------------------------------------------------


def test_a_session_and_a_journal_keep_the_stamp() -> None:
    for answer, model in ((gemini_compat_answer(GEMINI_PRO, streamed=False), GEMINI_PRO),
                          (responses_answer(O4_MINI, streamed=False), O4_MINI)):
        message = answer.to_message()
        assert message_from_json(json.loads(json.dumps(message_to_json(message)))) == message
        assert response_from_json(json.loads(json.dumps(response_to_json(answer)))) == answer
        assert model in json.dumps(message_to_json(message))


# --- Azure: replay compared with the deployment the decoders stamped ------------------------------------------

AZ_LOOKUP = ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {"word": {"type": "string"}}})
AZ_ENCRYPTED = "gAAAAABoZW5jcnlwdGVkLWJ5LW80LW1pbmk" + "F" * 96
REASONED = {"id": "resp_1", "status": "completed", "output": [
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": AZ_ENCRYPTED},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup", "arguments": "{}"}]}


@pytest.mark.parametrize(("deployment", "replayed"), [("reasoner", True), ("another-deployment", False)])
def test_azure_responses_compares_reasoning_with_the_deployment(deployment: str, replayed: bool) -> None:
    # The decoder stamps the name the request went to (the deployment); the settings are judged by model=.
    answer = AzureResponsesWire("reasoner", model="o4-mini").decode_response(
        REASONED, request=None, model="reasoner", provider="azure")
    messages = [Message.user("Look up a."), answer.to_message(), Message.tool("call_1", "a")]
    body = AzureResponsesWire(deployment, model="o4-mini").encode_request(
        LLMRequest(messages, tools=[AZ_LOOKUP]), deployment, stream=False)
    assert (AZ_ENCRYPTED in json.dumps(body)) is replayed and '"model"' not in json.dumps(body["input"])


def test_azure_chat_compares_signatures_with_the_deployment() -> None:
    signed = {"google": {"thought_signature": "U0lH"}}
    body = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"},
                            "extra_content": signed}]}}]}
    wire = AzureChatWire("gemini", api_version="2024-10-21", model="gemini-3-pro-preview")
    answer = wire.decode_response(body, request=None, model="gemini", provider="azure")
    messages = [Message.user("Look up a."), answer.to_message(), Message.tool("c1", "a")]
    sent = wire.encode_request(LLMRequest(messages, tools=[AZ_LOOKUP]), "gemini", stream=False)
    assert sent["messages"][1]["tool_calls"][0]["extra_content"] == signed
