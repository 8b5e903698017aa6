"""A caller's history holds call ids the OpenAI-family wires refuse; each is sent as an id they take, paired.

The loop renames an over-long id of a call a model makes (``loop/call_ids.py``), but the history a caller brings
(``Agent.run(conversation)``, a session, a served endpoint: another vendor's or another framework's ids, such as a
64-character one) is sent as it is — and Chat Completions answers an id over 40 characters with a 400 ("Invalid
'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40"), Azure OpenAI too, and
the Responses API one over 64 (``input[i].call_id``).  Each wire sends such an id as a shorter one made from it —
the same every time, in the call and in its result alike, never another id of the conversation — and decodes the
vendor's ids as they came.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentactors.agent.core import Agent
from agentactors.messages import LLMRequest, Message, ToolCall, ToolSpec
from agentactors.parts import Image
from agentactors.providers.azure import AzureChatWire, AzureOpenAIProvider, AzureResponsesWire
from agentactors.providers.openai.decode import decode_response
from agentactors.providers.openai.encode import encode_request as chat_body
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.providers.responses.encode import encode_request as responses_body
from agentactors.providers.responses.provider import OpenAIResponsesProvider
from agentactors.serve import openai_app
from agentactors.testing import RecordedRequest
from agentactors.testing.fakevendor import FakeVendor
from tests.unit.serve.test_hostile_requests import request as served

pytestmark = pytest.mark.anyio

KEY = "sk-caller-call-ids-5b1e"
NOW = ToolSpec("now", "The time.", {"type": "object", "properties": {}})
LONG = "toolu_bdrk_" + "a1B2c3D4e5" * 5 + "xyz"  # 64 characters: a Bedrock-style id
OTHER = "toolu_bdrk_" + "a1B2c3D4e5" * 5 + "XYZ"  # 64 too, the same first 61
GEMINI = "call_gemini_" + "0" * 36  # 48: over Chat Completions' 40, within the Responses API's 64
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cf"
                    "c0f01f0005ff02fe5cd6b1d10000000049454e44ae426082")


def _conversation(*ids: str) -> tuple[Message, ...]:
    """A user turn, then per id an assistant call of ``now`` and its result."""
    out: list[Message] = [Message.user("time?")]
    for call_id in ids:
        out.append(Message.assistant("", [ToolCall(call_id, "now", {})]))
        out.append(Message.tool(call_id, f"noon for {call_id[-3:]}", "now"))
    return tuple(out)


def _request(*ids: str) -> LLMRequest:
    return LLMRequest(_conversation(*ids), tools=(NOW,))


def _chat_pairs(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(the call's id, its result's tool_call_id) per assistant call, in order."""
    calls = [c["id"] for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", ())]
    results = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    return list(zip(calls, results, strict=True))


def _responses_pairs(body: dict[str, Any]) -> list[tuple[str, str]]:
    calls = [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
    results = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
    return list(zip(calls, results, strict=True))


# --- Chat Completions (OpenAI's endpoint, a compatible server, Azure) ----------------------------------------------


@pytest.mark.parametrize("official", [True, False])
def test_chat_sends_an_over_long_history_id_within_40_paired(official: bool) -> None:
    body = chat_body(_request(LONG), "gpt-4o", stream=False, official=official)
    [(call_id, result_id)] = _chat_pairs(body)
    assert call_id == result_id
    assert 0 < len(call_id) <= 40
    assert call_id.startswith(LONG[:20])  # recognisably the same call's


def test_chat_maps_an_id_the_same_way_every_time_and_keeps_short_ones() -> None:
    first = chat_body(_request("call_1", LONG, GEMINI), "gpt-4o", stream=False, official=True)
    again = chat_body(_request("call_1", LONG, GEMINI), "gpt-4o", stream=False, official=True)
    # The next turn's request (one more step) sends the earlier ids as this one did: the prompt cache holds.
    longer = chat_body(_request("call_1", LONG, GEMINI, "call_9"), "gpt-4o", stream=False, official=True)
    assert first == again
    assert _chat_pairs(longer)[:3] == _chat_pairs(first)
    ids = [c for c, _ in _chat_pairs(first)]
    assert ids[0] == "call_1"
    assert all(len(i) <= 40 for i in ids) and len(set(ids)) == 3


def test_chat_keeps_two_long_ids_that_share_their_head_apart() -> None:
    body = chat_body(_request(LONG, OTHER), "gpt-4o", stream=False, official=True)
    (a, a_result), (b, b_result) = _chat_pairs(body)
    assert a == a_result and b == b_result
    assert a != b and len(a) <= 40 and len(b) <= 40


def test_chat_never_maps_an_id_onto_another_id_of_the_conversation() -> None:
    # What LONG alone is sent as, then a conversation in which that very id is already another call's.
    [(mapped, _)] = _chat_pairs(chat_body(_request(LONG), "gpt-4o", stream=False))
    body = chat_body(_request(mapped, LONG), "gpt-4o", stream=False)
    (kept, kept_result), (renamed, renamed_result) = _chat_pairs(body)
    assert kept == kept_result == mapped  # the short id is sent as it is
    assert renamed == renamed_result
    assert renamed != mapped and len(renamed) <= 40
    # Its results stay with their calls: the content sent under each id is the one that answered it.
    results = {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    assert results == {mapped: f"noon for {mapped[-3:]}", renamed: f"noon for {LONG[-3:]}"}


def test_chat_names_the_sent_id_beside_the_media_a_tool_returned() -> None:
    messages = (Message.user("look"), Message.assistant("", [ToolCall(LONG, "now", {})]),
                Message.tool(LONG, [Image(data=PNG, media_type="image/png")], "now"))
    body = chat_body(LLMRequest(messages, tools=(NOW,)), "gpt-4o", stream=False, official=True)
    [(call_id, _)] = _chat_pairs(body)
    assert len(call_id) <= 40
    note = body["messages"][-1]["content"][0]["text"]
    assert note == f"Media returned by tool call {call_id}:"


def test_azure_chat_sends_an_over_long_history_id_within_40_paired() -> None:
    wire = AzureChatWire("prod-4o", api_version="2024-10-21", model="gpt-4o")
    [(call_id, result_id)] = _chat_pairs(wire.encode_request(_request(LONG), "prod-4o", stream=False))
    assert call_id == result_id and len(call_id) <= 40


def test_chat_decodes_the_vendors_ids_as_they_came() -> None:
    raw = {"id": "c", "model": "gpt-4o", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": LONG, "type": "function", "function": {"name": "now", "arguments": "{}"}}]}}]}
    assert decode_response(raw, request=None, model="gpt-4o", provider="openai").tool_calls[0].id == LONG


# --- Responses (OpenAI's endpoint, Azure) --------------------------------------------------------------------------


def test_responses_sends_an_over_long_history_id_within_64_paired() -> None:
    body = responses_body(_request(LONG + "_more", GEMINI), "gpt-4.1", stream=False, official=True)
    (long_call, long_result), (gemini_call, gemini_result) = _responses_pairs(body)
    assert long_call == long_result and 0 < len(long_call) <= 64 and long_call != LONG + "_more"
    assert long_call.startswith(LONG[:40])
    assert gemini_call == gemini_result == GEMINI  # within the Responses API's 64: sent as it is
    again = responses_body(_request(LONG + "_more", GEMINI), "gpt-4.1", stream=False, official=True)
    assert again == body


def test_azure_responses_sends_an_over_long_history_id_within_64_paired() -> None:
    wire = AzureResponsesWire("prod-41", model="gpt-4.1")
    body = wire.encode_request(_request(LONG * 2), "prod-41", stream=False)
    [(call_id, result_id)] = _responses_pairs(body)
    assert call_id == result_id and len(call_id) <= 64


# --- end to end: a vendor that enforces the caps, a caller's history with another vendor's ids ---------------------


def _sent_ids(request: RecordedRequest) -> tuple[list[str], list[str]]:
    seen = request.conversation
    assert seen is not None
    return [c.id or "" for c in seen.tool_calls], [r.call_id or "" for r in seen.tool_results]


async def test_agent_run_with_a_history_of_over_long_ids_is_accepted_by_chat_completions() -> None:
    with FakeVendor(expected_api_key=KEY) as fv:
        agent = Agent(OpenAIProvider("gpt-4o", api_key=KEY, base_url=fv.openai_base_url), tools=(), nudges=False)
        result = await agent.run([*_conversation(LONG, OTHER), Message.user("and now?")])
        assert result.output
        [request] = fv.requests
        calls, results = _sent_ids(request)
        assert calls == results and len(set(calls)) == 2 and all(len(i) <= 40 for i in calls)
        # The caller's history is not rewritten: the ids it holds are its own.
        assert [c.id for m in result.messages for c in m.tool_calls] == [LONG, OTHER]


async def test_agent_run_with_a_history_of_over_long_ids_is_accepted_by_azure_chat() -> None:
    with FakeVendor(expected_api_key=KEY) as fv:
        provider = AzureOpenAIProvider("prod-4o", endpoint=fv.base_url, api_key=KEY, model="gpt-4o")
        result = await Agent(provider, tools=(), nudges=False).run([*_conversation(LONG), Message.user("and now?")])
        assert result.output
        calls, results = _sent_ids(fv.requests[0])
        assert calls == results and len(calls[0]) <= 40


async def test_agent_run_with_a_history_of_over_long_ids_is_accepted_by_responses() -> None:
    with FakeVendor(expected_api_key=KEY) as fv:
        provider = OpenAIResponsesProvider("gpt-4.1", api_key=KEY, base_url=fv.openai_base_url)
        result = await Agent(provider, tools=(), nudges=False).run(
            [*_conversation(LONG * 2, GEMINI), Message.user("and now?")]
        )
        assert result.output
        calls, results = _sent_ids(fv.requests[0])
        assert calls == results and len(calls[0]) <= 64 and calls[1] == GEMINI


async def test_a_served_endpoints_client_history_of_over_long_ids_reaches_the_vendor_within_40() -> None:
    # A client of the served Chat Completions endpoint brings another vendor's ids: they pass through the endpoint
    # as they are (the caller's), and the wire sends them as the vendor takes them.
    history = [
        {"role": "user", "content": "time?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": LONG, "type": "function", "function": {"name": "now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": LONG, "content": "noon"},
        {"role": "user", "content": "and now?"},
    ]
    with FakeVendor(expected_api_key=KEY) as fv:
        provider = OpenAIProvider("gpt-4o", api_key=KEY, base_url=fv.openai_base_url)
        app = openai_app({"a": Agent(provider, name="a", tools=(), nudges=False)})
        answer = await served(app, {"model": "a", "messages": history})
        assert answer.status == 200, answer.body[:300]
        calls, results = _sent_ids(fv.requests[0])
        assert calls == results and len(calls[0]) <= 40


def test_the_requests_the_vendor_saw_name_no_id_it_refuses() -> None:
    # The bodies themselves, as JSON (what went over the wire): no id over the cap anywhere in them.
    body = json.dumps(chat_body(_request(LONG, OTHER, GEMINI), "gpt-4o", stream=False, official=True))
    assert LONG not in body and OTHER not in body and GEMINI not in body
