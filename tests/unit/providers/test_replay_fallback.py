"""Replaying opaque provider data across a fallback between vendors, models and wires, and through a store.

A conversation that began on one vendor and goes on on another (``with_fallback``, ``resilient_chain``), or that
was stored and resumed, still reaches every wire in a form the vendor takes:

* no wire sends another wire's ``provider_data`` (a signature never leaves the vendor that made it);
* Anthropic (and Claude on Bedrock) with manual extended thinking on require the current turn's first assistant
  message — the one before the latest ``tool_use`` / ``tool_result`` blocks — to begin with a thinking block
  ("Expected `thinking` or `redacted_thinking`, but found `tool_use`. ... To avoid this requirement, disable
  `thinking`"): when that message came from another wire (it has none to replay), thinking is left out of that
  request, said with ``llm.setting_dropped``, rather than sent to a certain 400;
* a session store and a journal keep ``provider_data`` as it was (redacted thinking, megabyte signatures, keys
  that look like the codec's tags), and a stored ``provider_data`` that is not an object is refused, not read
  as one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentactors import LLMRequest, Message, ToolCall, ToolSpec
from agentactors.events import EventSink, InMemoryRecorder, use_sink
from agentactors.journal.codec import response_from_json, response_to_json
from agentactors.messages import LLMResponse, StopReason
from agentactors.providers.anthropic.encode import encode_request as anthropic_body
from agentactors.providers.bedrock.encode import encode_request as bedrock_body
from agentactors.providers.gemini.encode import encode_request as gemini_body
from agentactors.providers.openai.encode import encode_request as openai_body
from agentactors.providers.responses.encode import encode_request as responses_body
from agentactors.sessions import SqliteStore
from agentactors.sessions.store import SessionRecord

LOOKUP = ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {"word": {"type": "string"}}})
CLAUDE = "claude-sonnet-4-5-20250929"
BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
SIGNATURE = "EqQBCkgIARABGAIiQL" + "A" * 4096 + "=="
THINKING = {"type": "thinking", "thinking": "The user wants a word looked up.", "signature": SIGNATURE}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a" + "B" * 512}


def anthropic_turn(call_id: str = "toolu_01") -> Message:
    """An assistant tool-call turn as the Anthropic wire records it (thinking blocks in provider_data)."""
    return Message.assistant("", [ToolCall(call_id, "lookup", {"word": "a"})], reasoning=THINKING["thinking"],
                             provider_data={"anthropic": {"blocks": [dict(THINKING), dict(REDACTED)]}})


def openai_turn(call_id: str = "call_01") -> Message:
    """An assistant tool-call turn made by another vendor: nothing to replay on Anthropic."""
    return Message.assistant("", [ToolCall(call_id, "lookup", {"word": "b"}, raw_arguments='{"word":"b"}')],
                             reasoning="thought elsewhere")


@contextmanager
def recording() -> Iterator[InMemoryRecorder]:
    recorder = InMemoryRecorder()
    with use_sink(EventSink([recorder], run_id="run-t")):
        yield recorder


def drops(recorder: InMemoryRecorder) -> dict[str, str]:
    return {e.setting: e.reason for e in recorder.events if e.type == "llm.setting_dropped"}


# --- Anthropic with extended thinking, after a step another vendor made -----------------------------------------


def test_anthropic_drops_manual_thinking_when_the_turn_began_on_another_wire() -> None:
    messages = [Message.user("Look up b."), openai_turn(), Message.tool("call_01", "b: a letter")]
    request = LLMRequest(messages, tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = anthropic_body(request, CLAUDE, stream=False)
    assert "thinking" not in body
    assert body["messages"][1]["content"][0]["type"] == "tool_use"
    assert "thinking" in drops(recorder)
    assert "begin with a thinking block" in drops(recorder)["thinking"]


def test_anthropic_drops_thinking_set_in_vendor_options_too() -> None:
    messages = [Message.user("Look up b."), openai_turn(), Message.tool("call_01", "b: a letter")]
    request = LLMRequest(messages, tools=[LOOKUP], max_tokens=8192,
                         vendor_options={"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 2048}}})
    with recording() as recorder:
        body = anthropic_body(request, CLAUDE, stream=False)
    assert "thinking" not in body and "thinking" in drops(recorder)


def test_anthropic_dropped_thinking_frees_the_temperature() -> None:
    # With thinking on a temperature other than 1 is refused; once thinking is left out it is sent.
    messages = [Message.user("Look up b."), openai_turn(), Message.tool("call_01", "b: a letter")]
    request = LLMRequest(messages, tools=[LOOKUP], thinking_budget=2048, max_tokens=8192, temperature=0.2)
    with recording():
        body = anthropic_body(request, CLAUDE, stream=False)
    assert body["temperature"] == 0.2 and "thinking" not in body


def test_anthropic_keeps_thinking_when_the_turn_began_on_anthropic() -> None:
    # Anthropic began the turn (its thinking first), another vendor made the next step: the turn still begins with
    # a thinking block, which is all the API asks for.
    messages = [Message.user("Look up a and b."), anthropic_turn(), Message.tool("toolu_01", "a: a letter"),
                openai_turn(), Message.tool("call_01", "b: a letter")]
    request = LLMRequest(messages, tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = anthropic_body(request, CLAUDE, stream=False)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["messages"][1]["content"][:2] == [THINKING, REDACTED]  # verbatim, in place
    assert drops(recorder) == {}


def test_anthropic_keeps_thinking_on_a_new_user_turn_after_another_wire() -> None:
    # The other vendor's tool loop is over (a user message came after it): a new turn needs no earlier thinking.
    messages = [Message.user("Look up b."), openai_turn(), Message.tool("call_01", "b: a letter"),
                Message.assistant("b is a letter."), Message.user("And c?")]
    request = LLMRequest(messages, tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = anthropic_body(request, CLAUDE, stream=False)
    assert body["thinking"]["type"] == "enabled" and drops(recorder) == {}


def test_anthropic_keeps_adaptive_thinking() -> None:
    # Adaptive thinking is optional for the model (it may answer a step without thinking): no block is required.
    messages = [Message.user("Look up b."), openai_turn(), Message.tool("call_01", "b: a letter")]
    request = LLMRequest(messages, tools=[LOOKUP], max_tokens=8192,
                         vendor_options={"anthropic": {"thinking": {"type": "adaptive"}}})
    with recording() as recorder:
        body = anthropic_body(request, CLAUDE, stream=False)
    assert body["thinking"] == {"type": "adaptive"} and drops(recorder) == {}


# --- Claude on Bedrock: the same rule, reasoningContent blocks -------------------------------------------------


def test_bedrock_claude_drops_manual_thinking_when_the_turn_began_on_another_wire() -> None:
    # A turn Anthropic's own API began: its blocks are the Anthropic wire's, not replayable on Converse.
    messages = [Message.user("Look up a."), anthropic_turn(), Message.tool("toolu_01", "a: a letter")]
    request = LLMRequest(messages, tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = bedrock_body(request, BEDROCK_CLAUDE, stream=False)
    assert "thinking" not in body.get("additionalModelRequestFields", {})
    assert "toolUse" in body["messages"][1]["content"][0]
    assert "thinking" in drops(recorder)
    assert SIGNATURE not in json.dumps(body)


def test_bedrock_claude_drops_thinking_set_in_vendor_options_too() -> None:
    messages = [Message.user("Look up b."), openai_turn(), Message.tool("call_01", "b: a letter")]
    thinking = {"type": "enabled", "budget_tokens": 2048}
    request = LLMRequest(messages, tools=[LOOKUP], max_tokens=8192,
                         vendor_options={"bedrock": {"additionalModelRequestFields": {"thinking": thinking,
                                                                                      "top_k": 5}}})
    with recording() as recorder:
        body = bedrock_body(request, BEDROCK_CLAUDE, stream=False)
    assert body["additionalModelRequestFields"] == {"top_k": 5} and "thinking" in drops(recorder)


def test_a_redacted_thinking_block_begins_a_turn_too() -> None:
    turn = Message.assistant("", [ToolCall("toolu_01", "lookup", {"word": "a"})],
                             provider_data={"anthropic": {"blocks": [dict(REDACTED)]}})
    messages = [Message.user("Look up a."), turn, Message.tool("toolu_01", "a: a letter")]
    request = LLMRequest(messages, tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = anthropic_body(request, CLAUDE, stream=False)
    assert body["thinking"]["type"] == "enabled" and body["messages"][1]["content"][0] == REDACTED
    assert drops(recorder) == {}


def test_bedrock_claude_keeps_thinking_when_the_turn_began_on_bedrock() -> None:
    block = {"reasoningContent": {"reasoningText": {"text": "hm", "signature": SIGNATURE}}}
    turn = Message.assistant("", [ToolCall("tooluse_1", "lookup", {"word": "a"})], reasoning="hm",
                             provider_data={"bedrock": {"blocks": [block]}})
    messages = [Message.user("Look up a."), turn, Message.tool("tooluse_1", "a: a letter")]
    request = LLMRequest(messages, tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = bedrock_body(request, BEDROCK_CLAUDE, stream=False)
    assert body["additionalModelRequestFields"]["thinking"]["type"] == "enabled"
    assert body["messages"][1]["content"][0] == block and drops(recorder) == {}


# --- no wire sends another wire's data ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encode", "model"),
    [
        (openai_body, "gpt-4.1"),
        (responses_body, "gpt-5"),
        (gemini_body, "gemini-3-pro-preview"),
        (gemini_body, "gemini-2.5-flash"),
        (bedrock_body, "us.amazon.nova-pro-v1:0"),
    ],
)
def test_no_wire_sends_anthropic_signatures(encode: Any, model: str) -> None:
    gemini = {"gemini": {"thought_signature": "R2VtaW5pU2ln"}}
    turn = Message.assistant("", [ToolCall("toolu_01", "lookup", {"word": "a"}, provider_data=gemini)],
                             provider_data={"anthropic": {"blocks": [dict(THINKING), dict(REDACTED)]},
                                            "openai-responses": {"items": [{"type": "reasoning", "id": "rs_1",
                                                                             "encrypted_content": "RS-SECRET"}]}})
    messages = [Message.user("Look up a."), turn, Message.tool("toolu_01", "a: a letter")]
    with recording():
        sent = json.dumps(encode(LLMRequest(messages, tools=[LOOKUP]), model, stream=False))
    assert SIGNATURE not in sent and REDACTED["data"] not in sent
    if encode is not responses_body:
        assert "RS-SECRET" not in sent
    if encode is not gemini_body:
        assert "R2VtaW5pU2ln" not in sent


# --- stored and resumed ------------------------------------------------------------------------------------------


HOSTILE_LOOKING = {
    "anthropic": {"blocks": [dict(THINKING), dict(REDACTED)], "stop_sequence": "$"},
    "gemini": {"thought_signature": "abc+/=="},
    "other": {"$bytes": "not bytes", "$tuple": [1]},
    "nested": [[1, [2, {"$dict": {"$ref": "#"}}]], {"$tuple": "x"}],
}


@pytest.mark.anyio
async def test_a_session_keeps_provider_data_through_sqlite(tmp_path: Path) -> None:
    big = {"anthropic": {"blocks": [{**THINKING, "signature": "S" * 3_000_000}, dict(REDACTED)]}}
    history = (Message.user("Look up a."), anthropic_turn(), Message.tool("toolu_01", "a: a letter"),
               Message.assistant("a is a letter.", provider_data=HOSTILE_LOOKING),
               Message.assistant("more", provider_data=big))
    async with SqliteStore(tmp_path / "s.db") as store:
        await store.commit(SessionRecord("k", history), expected_version=None)
        loaded = await store.load("k")
    assert loaded is not None and loaded.messages == history
    resumed = LLMRequest([*loaded.messages[:3]], tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
    with recording() as recorder:
        body = anthropic_body(resumed, CLAUDE, stream=False)
    assert body["messages"][1]["content"][:2] == [THINKING, REDACTED] and drops(recorder) == {}


def test_a_journal_keeps_provider_data_as_it_was() -> None:
    response = LLMResponse("", (ToolCall("toolu_01", "lookup", {}),), StopReason.tool_use,
                           provider_data=HOSTILE_LOOKING)
    assert response_from_json(json.loads(json.dumps(response_to_json(response)))) == response


@pytest.mark.parametrize("stored", [[["anthropic", {"blocks": []}]], {"$tuple": [["anthropic", 1]]}, "ab", 5])
def test_a_journal_refuses_provider_data_that_is_not_an_object(stored: Any) -> None:
    # A list of pairs (or a tagged tuple of them) is not an object, though dict() would take it: the session codec
    # refuses it; so does the journal's, rather than read a damaged row as some other provider_data.
    with pytest.raises(TypeError, match="provider_data"):
        response_from_json({"content": "", "stop_reason": "end_turn", "provider_data": stored})
