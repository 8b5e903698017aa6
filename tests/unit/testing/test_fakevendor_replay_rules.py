"""Strict mode checks the vendors' reasoning-replay rules, so an encoder that drops what it must replay fails here.

* Anthropic Messages (and Claude on Vertex) with manual extended thinking (``thinking.type: enabled``): the current
  turn's first assistant message — the one before the latest ``tool_use`` / ``tool_result`` blocks — must begin
  with a ``thinking`` or ``redacted_thinking`` block ("Expected `thinking` or `redacted_thinking`, but found
  `tool_use`. ... To avoid this requirement, disable `thinking`.").  Earlier turns, adaptive thinking and
  thinking off ask for nothing.
* Gemini 3 models: the first ``functionCall`` part of each model step in the current turn (the contents after the
  last user message that is not only function responses) carries a ``thoughtSignature`` ("Function call is
  missing a thought_signature in functionCall parts."); the documented dummy
  ``skip_thought_signature_validator`` passes; Gemini 2.5 and earlier turns are not checked.
* Bedrock Converse with Claude and ``additionalModelRequestFields.thinking`` enabled: the rule of the Messages
  API with ``reasoningContent`` blocks, in Bedrock's ValidationException ("The model returned the following
  errors: ...").

Each rejection is a 400 in the wire's own error shape; lenient mode takes every one.  The FakeVendor's own
answers meet the rules when replayed: a Claude tool call under manual thinking begins with a thinking block even
when the script gave it no reasoning (a ``redacted_thinking`` one then), and a Gemini call is signed.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentactors import LLMRequest, Message, ToolSpec
from agentactors.messages import LLMResponse, StreamEnd
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.bedrock import BedrockProvider
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.http.provider import HTTPProvider
from agentactors.testing import FakeReply, FakeToolCall, FakeVendor
from agentactors.testing._fake_parse import WireRejection, parse_request, route

KEY = "sk-replay-rules-0123456789"
ANTHROPIC_HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
GEMINI_HEADERS = {"x-goog-api-key": KEY}
BEDROCK_HEADERS = {
    "authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE1234/20250101/us-east-1/bedrock/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=" + "a" * 64,
    "x-amz-date": "20250101T000000Z",
}

CLAUDE = "claude-sonnet-4-5-20250929"
BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
GEMINI_3 = "gemini-3-pro-preview"
SKIP = "skip_thought_signature_validator"

ANTHROPIC_RULE = (
    "Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is enabled, a final "
    "`assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and "
    "`tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this "
    "requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
GEMINI_RULE = (
    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
    "correctly, and missing thought_signature may lead to degraded model performance. Additional data, function "
    "call `default_api:{name}` , position {position}. Please refer to "
    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)

# --- Anthropic bodies -----------------------------------------------------------------------------------------

THINKING = {"type": "thinking", "thinking": "Look the word up.", "signature": "c2lnbmF0dXJl"}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}
USE = {"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {"word": "a"}}
USE2 = {"type": "tool_use", "id": "toolu_02", "name": "lookup", "input": {"word": "b"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "a: a letter"}
RESULT2 = {"type": "tool_result", "tool_use_id": "toolu_02", "content": "b: a letter"}
TOOLS = [{"name": "lookup", "description": "Look a word up.",
          "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}}}]


def user(text: str = "Look up a.") -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def results(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def messages_body(messages: list[dict[str, Any]], thinking: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": CLAUDE, "max_tokens": 8192, "tools": TOOLS, "messages": messages}
    if thinking is not None:
        body["thinking"] = thinking
    return body


MANUAL = {"type": "enabled", "budget_tokens": 2048}


def parse_anthropic(body: dict[str, Any], *, strict: bool = True, path_model: str | None = None) -> None:
    headers = {"anthropic-version": "2023-06-01"}
    if path_model is not None:  # Claude on Vertex: the model in the path, the Vertex version in the body
        body = {k: v for k, v in body.items() if k != "model"} | {"anthropic_version": "vertex-2023-10-16"}
    parse_request("anthropic", body, headers, path_model=path_model, path_stream=False, strict=strict)


def anthropic_refusal(body: dict[str, Any], **kwargs: Any) -> str:
    with pytest.raises(WireRejection) as caught:
        parse_anthropic(body, **kwargs)
    assert caught.value.status == 400
    return caught.value.message


def test_anthropic_manual_thinking_refuses_a_tool_loop_whose_first_assistant_message_has_no_thinking() -> None:
    body = messages_body([user(), assistant(USE), results(RESULT)], MANUAL)
    assert anthropic_refusal(body) == "messages.1.content.0.type: " + ANTHROPIC_RULE.format(found="tool_use")


def test_anthropic_names_the_block_found_and_the_message_of_the_current_turn() -> None:
    earlier = [user("first"), assistant(THINKING, USE), results(RESULT), assistant({"type": "text", "text": "ok"})]
    body = messages_body([*earlier, user("second"), assistant({"type": "text", "text": "Looking."}, USE2),
                          results(RESULT2)], MANUAL)
    assert anthropic_refusal(body) == "messages.5.content.0.type: " + ANTHROPIC_RULE.format(found="text")


def test_anthropic_refuses_the_same_on_vertex() -> None:
    body = messages_body([user(), assistant(USE), results(RESULT)], MANUAL)
    message = anthropic_refusal(body, path_model="claude-sonnet-4-5@20250929")
    assert message.startswith("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`")


@pytest.mark.parametrize("messages", [
    pytest.param([user(), assistant(THINKING, USE), results(RESULT)], id="thinking-first"),
    pytest.param([user(), assistant(REDACTED, USE), results(RESULT)], id="redacted-first"),
    pytest.param([user(), assistant(THINKING, REDACTED, {"type": "text", "text": "x"}, USE), results(RESULT)],
                 id="thinking-then-text"),
    # Only the turn's first assistant message is held to it: a later step may come without a thinking block.
    pytest.param([user(), assistant(THINKING, USE), results(RESULT), assistant(USE2), results(RESULT2)],
                 id="later-step-without-thinking"),
    # An earlier turn (before the user's own message) asks for nothing: its thinking may be left out.
    pytest.param([user(), assistant(USE), results(RESULT), assistant({"type": "text", "text": "a letter"}),
                  user("And b?")], id="earlier-turn"),
    pytest.param([user(), assistant(USE), results(RESULT), assistant({"type": "text", "text": "a letter"}),
                  user("And b?"), assistant(THINKING, USE2), results(RESULT2)], id="earlier-turn-then-thinking"),
    pytest.param([user()], id="no-assistant-message"),
])
def test_anthropic_manual_thinking_takes_a_turn_that_begins_with_thinking(messages: list[dict[str, Any]]) -> None:
    parse_anthropic(messages_body(messages, MANUAL))


@pytest.mark.parametrize("thinking", [None, {"type": "adaptive"}, {"type": "disabled"}], ids=str)
def test_anthropic_without_manual_thinking_asks_for_no_thinking_block(thinking: dict[str, Any] | None) -> None:
    parse_anthropic(messages_body([user(), assistant(USE), results(RESULT)], thinking))


def test_anthropic_lenient_mode_takes_the_unthinking_turn() -> None:
    parse_anthropic(messages_body([user(), assistant(USE), results(RESULT)], MANUAL), strict=False)


# --- Gemini bodies --------------------------------------------------------------------------------------------

FN = {"functionDeclarations": [{"name": "lookup", "description": "Look a word up.",
                                "parameters": {"type": "object", "properties": {"word": {"type": "string"}}}}]}


def call(name: str = "lookup", signature: str | None = None, *, key: str = "thoughtSignature") -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": {"word": "a"}}}
    if signature is not None:
        part[key] = signature
    return part


def answer(name: str = "lookup") -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": {"result": "a letter"}}}


def said(text: str = "Look up a.") -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def answered(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def parse_gemini(contents: list[dict[str, Any]], model_name: str = GEMINI_3, *, strict: bool = True) -> None:
    parse_request("gemini", {"contents": contents, "tools": [FN]}, {}, path_model=model_name, path_stream=False,
                  strict=strict)


def gemini_refusal(contents: list[dict[str, Any]], model_name: str = GEMINI_3) -> str:
    with pytest.raises(WireRejection) as caught:
        parse_gemini(contents, model_name)
    assert caught.value.status == 400
    return caught.value.message


def test_gemini_3_refuses_an_unsigned_first_call_of_the_current_turn() -> None:
    message = gemini_refusal([said(), model(call()), answered(answer())])
    assert message == GEMINI_RULE.format(name="lookup", position=2)


@pytest.mark.parametrize("contents", [
    pytest.param([said(), model(call("lookup", "c2ln")), answered(answer()), model(call("define"))],
                 id="second-step-unsigned"),
    pytest.param([said(), model(call("lookup"), call("define", "c2ln")), answered(answer(), answer("define"))],
                 id="parallel-with-the-second-signed"),
    pytest.param([said(), model({"text": "Looking.", "thoughtSignature": "c2ln"}, call("lookup")),
                  answered(answer())], id="signed-text-but-unsigned-call"),
])
def test_gemini_3_refuses_every_step_whose_first_call_is_unsigned(contents: list[dict[str, Any]]) -> None:
    assert gemini_refusal(contents).startswith("Function call is missing a thought_signature in functionCall parts.")


@pytest.mark.parametrize("contents", [
    pytest.param([said(), model(call(signature="c2ln")), answered(answer())], id="signed"),
    pytest.param([said(), model(call(signature="c2ln", key="thought_signature")), answered(answer())],
                 id="snake-case"),
    pytest.param([said(), model(call(signature=SKIP)), answered(answer())], id="documented-dummy"),
    # Of parallel calls only the first is signed.
    pytest.param([said(), model(call(signature="c2ln"), call("define")), answered(answer(), answer("define"))],
                 id="parallel-first-signed"),
    # An earlier turn is not validated.
    pytest.param([said(), model(call()), answered(answer()), model({"text": "a letter"}), said("And b?")],
                 id="earlier-turn"),
    pytest.param([said(), model(call()), answered(answer()), model({"text": "a letter"}), said("And b?"),
                  model(call(signature="c2ln")), answered(answer())], id="earlier-turn-then-signed"),
])
def test_gemini_3_takes_a_current_turn_whose_steps_are_signed(contents: list[dict[str, Any]]) -> None:
    parse_gemini(contents)


@pytest.mark.parametrize("model_name", ["gemini-2.5-flash", "gemini-2.0-flash", "gemini-3-pro-image-preview"])
def test_models_that_do_not_validate_signatures_take_an_unsigned_call(model_name: str) -> None:
    parse_gemini([said(), model(call()), answered(answer())], model_name)


def test_gemini_lenient_mode_takes_an_unsigned_call() -> None:
    parse_gemini([said(), model(call()), answered(answer())], strict=False)


def test_gemini_3_on_vertex_refuses_an_unsigned_call() -> None:
    path = f"/v1/projects/p/locations/global/publishers/google/models/{GEMINI_3}:generateContent"
    routed = route("POST", path)
    assert routed is not None
    with pytest.raises(WireRejection):
        parse_request(routed[0], {"contents": [said(), model(call()), answered(answer())], "tools": [FN]}, {},
                      path_model=routed[1], path_stream=routed[2], strict=True)


# --- Bedrock Converse bodies ----------------------------------------------------------------------------------

REASONING = {"reasoningContent": {"reasoningText": {"text": "Look the word up.", "signature": "c2ln"}}}
REDACTED_REASONING = {"reasoningContent": {"redactedContent": "EmwKAhgBEgy3va3pzix"}}
TOOL_USE = {"toolUse": {"toolUseId": "tooluse_01", "name": "lookup", "input": {"word": "a"}}}
TOOL_RESULT = {"toolResult": {"toolUseId": "tooluse_01", "content": [{"text": "a: a letter"}]}}
TOOL_CONFIG = {"tools": [{"toolSpec": {"name": "lookup", "description": "Look a word up.",
                                       "inputSchema": {"json": {"type": "object"}}}}]}


def converse(messages: list[dict[str, Any]], thinking: dict[str, Any] | None = MANUAL) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": messages, "toolConfig": TOOL_CONFIG}
    if thinking is not None:
        body["additionalModelRequestFields"] = {"thinking": thinking}
    return body


def turn(*first: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"text": "Look up a."}]}, {"role": "assistant", "content": list(first)},
            {"role": "user", "content": [TOOL_RESULT]}]


def parse_bedrock(body: dict[str, Any], model_id: str = BEDROCK_CLAUDE, *, strict: bool = True) -> None:
    parse_request("bedrock", body, {}, path_model=model_id, path_stream=False, strict=strict)


@pytest.mark.parametrize(("first", "found"), [((TOOL_USE,), "tool_use"), (({"text": "Looking."}, TOOL_USE), "text")])
def test_bedrock_claude_manual_thinking_refuses_a_turn_without_reasoning_first(
    first: tuple[dict[str, Any], ...], found: str
) -> None:
    with pytest.raises(WireRejection) as caught:
        parse_bedrock(converse(turn(*first)))
    assert caught.value.status == 400
    assert caught.value.message == ("The model returned the following errors: messages.1.content.0.type: "
                                    + ANTHROPIC_RULE.format(found=found))


@pytest.mark.parametrize(("body", "model_id"), [
    pytest.param(converse(turn(REASONING, TOOL_USE)), BEDROCK_CLAUDE, id="reasoning-first"),
    pytest.param(converse(turn(REDACTED_REASONING, TOOL_USE)), BEDROCK_CLAUDE, id="redacted-first"),
    pytest.param(converse(turn(TOOL_USE), None), BEDROCK_CLAUDE, id="thinking-off"),
    pytest.param(converse(turn(TOOL_USE), {"type": "adaptive"}), BEDROCK_CLAUDE, id="adaptive"),
    pytest.param(converse(turn(TOOL_USE)), "us.amazon.nova-pro-v1:0", id="not-claude"),
])
def test_bedrock_takes_what_the_rule_does_not_cover(body: dict[str, Any], model_id: str) -> None:
    parse_bedrock(body, model_id)


def test_bedrock_lenient_mode_takes_the_unthinking_turn() -> None:
    parse_bedrock(converse(turn(TOOL_USE)), strict=False)


# --- over HTTP: each wire's error shape -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_each_wire_answers_the_rule_with_its_own_400() -> None:
    async with FakeVendor() as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        anthropic = await client.post("/v1/messages", headers=ANTHROPIC_HEADERS,
                                      json=messages_body([user(), assistant(USE), results(RESULT)], MANUAL))
        gemini = await client.post(f"/v1beta/models/{GEMINI_3}:generateContent", headers=GEMINI_HEADERS,
                                   json={"contents": [said(), model(call()), answered(answer())], "tools": [FN]})
        bedrock = await client.post(f"/model/{BEDROCK_CLAUDE}/converse", headers=BEDROCK_HEADERS,
                                    json=converse(turn(TOOL_USE)))
    assert anthropic.status_code == 400
    assert anthropic.json()["type"] == "error"
    assert anthropic.json()["error"]["type"] == "invalid_request_error"
    assert "found `tool_use`" in anthropic.json()["error"]["message"]
    assert gemini.status_code == 400
    assert gemini.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert gemini.json()["error"]["message"].startswith("Function call is missing a thought_signature")
    assert bedrock.status_code == 400
    assert bedrock.headers["x-amzn-errortype"].startswith("ValidationException")
    assert bedrock.json()["message"].startswith("The model returned the following errors: messages.1.content.0")


# --- the FakeVendor's own answers meet the rules when replayed ------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_claude_tool_call_under_manual_thinking_begins_with_a_thinking_block(stream: bool) -> None:
    async with FakeVendor() as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        fv.script(FakeReply(tool_calls=FakeToolCall("lookup", {"word": "a"}, id="toolu_01")))
        body = messages_body([user()], MANUAL) | {"stream": stream}
        response = await client.post("/v1/messages", headers=ANTHROPIC_HEADERS, json=body)
    assert response.status_code == 200
    if stream:
        starts = [json.loads(line[len("data: "):]) for line in response.text.splitlines()
                  if line.startswith("data: ") and "content_block_start" in line]
        blocks = [s["content_block"] for s in starts]
    else:
        blocks = response.json()["content"]
    assert blocks[0]["type"] == "redacted_thinking" and blocks[0]["data"]
    assert [b["type"] for b in blocks[1:]] == ["tool_use"]
    # Replayed as received, the next request meets the rule.
    replay = [user(), assistant(*(b if b["type"] != "tool_use" else USE for b in blocks)), results(RESULT)]
    parse_anthropic(messages_body(replay, MANUAL))


@pytest.mark.anyio
async def test_a_claude_answer_without_manual_thinking_gets_no_thinking_block() -> None:
    async with FakeVendor() as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        fv.script(FakeReply(tool_calls=FakeToolCall("lookup", {"word": "a"})))
        response = await client.post("/v1/messages", headers=ANTHROPIC_HEADERS,
                                     json=messages_body([user()], {"type": "adaptive"}))
    assert [b["type"] for b in response.json()["content"]] == ["tool_use"]


@pytest.mark.anyio
async def test_a_scripted_reasoning_stays_the_thinking_block() -> None:
    async with FakeVendor() as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        fv.script(FakeReply(reasoning="Look it up.", tool_calls=FakeToolCall("lookup", {"word": "a"})))
        response = await client.post("/v1/messages", headers=ANTHROPIC_HEADERS, json=messages_body([user()], MANUAL))
    content = response.json()["content"]
    assert [b["type"] for b in content] == ["thinking", "tool_use"] and content[0]["thinking"] == "Look it up."


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_bedrock_claude_tool_call_under_manual_thinking_begins_with_reasoning(stream: bool) -> None:
    async with FakeVendor() as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        fv.script(FakeReply(tool_calls=FakeToolCall("lookup", {"word": "a"}, id="tooluse_01")))
        op = "converse-stream" if stream else "converse"
        response = await client.post(f"/model/{BEDROCK_CLAUDE}/{op}", headers=BEDROCK_HEADERS,
                                     json=converse([{"role": "user", "content": [{"text": "Look up a."}]}]))
    assert response.status_code == 200
    if stream:
        assert b"redactedContent" in response.content
        first = REDACTED_REASONING
    else:
        content = response.json()["output"]["message"]["content"]
        assert list(content[0]) == ["reasoningContent"] and content[0]["reasoningContent"]["redactedContent"]
        assert [list(b) for b in content[1:]] == [["toolUse"]]
        first = content[0]
    parse_bedrock(converse(turn(first, TOOL_USE)))


# --- the library's providers meet the rules through a tool loop ---------------------------------------------

LOOKUP = ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {"word": {"type": "string"}}})


def wire_provider(wire: str, fv: FakeVendor) -> HTTPProvider:
    if wire == "anthropic":
        return AnthropicProvider(CLAUDE, api_key=KEY, base_url=fv.base_url)
    if wire == "gemini":
        return GeminiProvider(GEMINI_3, api_key=KEY, base_url=fv.base_url)
    return BedrockProvider(BEDROCK_CLAUDE, region="us-east-1", base_url=fv.base_url,
                           access_key_id="AKIDEXAMPLE1234", secret_access_key="fake/Secret+Key/0123456789abcdef")


async def answer_of(p: HTTPProvider, request: LLMRequest, stream: bool) -> LLMResponse:
    if not stream:
        return await p.complete(request)
    async with p.stream(request) as events:
        ends = [e async for e in events if isinstance(e, StreamEnd)]
    return ends[-1].response


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("reasoning", ["", "I should look both up."], ids=["unscripted", "scripted"])
@pytest.mark.parametrize("wire", ["anthropic", "bedrock", "gemini"])
async def test_a_providers_tool_loop_under_thinking_passes_the_replay_rules(
    wire: str, reasoning: str, stream: bool
) -> None:
    async with FakeVendor() as fv:
        fv.script(FakeReply(reasoning=reasoning, tool_calls=FakeToolCall("lookup", {"word": "a"})),
                  FakeReply(tool_calls=FakeToolCall("lookup", {"word": "b"})), "Both are letters.")
        messages = [Message.user("Look up a and b.")]
        request = LLMRequest(messages, tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
        async with wire_provider(wire, fv) as p:
            for _ in range(3):
                response = await answer_of(p, request, stream)
                messages += [response.to_message(),
                             *(Message.tool(c.id, f"{c.arguments['word']}: a letter") for c in response.tool_calls)]
                request = LLMRequest(messages, tools=[LOOKUP], thinking_budget=2048, max_tokens=8192)
        assert response.content == "Both are letters."
        assert [r.outcome for r in fv.requests] == ["ok", "ok", "ok"], [r.status for r in fv.requests]
        if wire != "gemini":  # the thinking was replayed, not left out of the later requests (llm.setting_dropped)
            assert [r.conversation.settings.get("thinking") for r in fv.requests if r.conversation] == ["enabled"] * 3
