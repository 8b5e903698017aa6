"""The Converse request body: messages, tools and choices per model, settings, reasoning, caching, parts."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from agentactors.errors import UnsupportedContentError, UnsupportedSettingError, UnsupportedToolChoiceError
from agentactors.events import EventSink, InMemoryRecorder, use_sink
from agentactors.messages import LLMRequest, Message, ResponseFormat, ToolCall, ToolChoice, ToolSpec
from agentactors.parts import Audio, Document, Image, Text
from agentactors.providers.bedrock import encode_request
from agentactors.settings import CachePolicy

NOVA = "us.amazon.nova-pro-v1:0"
MICRO = "amazon.nova-micro-v1:0"
CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
CLAUDE_37 = "anthropic.claude-3-7-sonnet-20250219-v1:0"
MISTRAL = "mistral.mistral-large-2407-v1:0"
LLAMA = "meta.llama3-1-70b-instruct-v1:0"
TOOL = ToolSpec("lookup", "Look it up", {"type": "object", "properties": {"q": {"type": "string"}}})
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


@contextmanager
def capture() -> Iterator[list[Any]]:
    """The ``llm.setting_dropped`` events left while inside."""
    recorder = InMemoryRecorder()
    dropped: list[Any] = []
    with use_sink(EventSink([recorder], run_id="run-t")):
        yield dropped
    dropped.extend(e for e in recorder.events if e.type == "llm.setting_dropped")


def body(model: str = NOVA, **kw: Any) -> dict[str, Any]:
    kw.setdefault("messages", [Message.user("hi")])
    return encode_request(LLMRequest(**kw), model, stream=False)


def test_system_messages_become_system_blocks_and_roles_alternate() -> None:
    out = body(messages=[
        Message.system("one"), Message.user("a"), Message.system("two"), Message.user("b"),
        Message.assistant("", [ToolCall("t1", "lookup", {"q": "x"}), ToolCall("t2", "lookup", {"q": "y"})]),
        Message.tool("t1", "r1"), Message.tool("t2", "r2", is_error=True), Message.user("then?"),
    ], tools=[TOOL])
    assert out["system"] == [{"text": "one"}, {"text": "two"}]
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]
    assert out["messages"][0]["content"] == [{"text": "a"}, {"text": "b"}]
    assert out["messages"][1]["content"] == [
        {"toolUse": {"toolUseId": "t1", "name": "lookup", "input": {"q": "x"}}},
        {"toolUse": {"toolUseId": "t2", "name": "lookup", "input": {"q": "y"}}},
    ]
    assert out["messages"][2]["content"] == [
        {"toolResult": {"toolUseId": "t1", "content": [{"text": "r1"}], "status": "success"}},
        {"toolResult": {"toolUseId": "t2", "content": [{"text": "r2"}], "status": "error"}},
        {"text": "then?"},
    ]


def test_empty_assistant_text_is_dropped() -> None:
    out = body(messages=[Message.user("a"), Message.assistant("", [ToolCall("t", "lookup", {})]),
                         Message.tool("t", "r")], tools=[TOOL])
    assert all("text" not in b for b in out["messages"][1]["content"])


def test_tools_and_choices() -> None:
    auto = body(tools=[TOOL])
    assert auto["toolConfig"] == {"tools": [{"toolSpec": {"name": "lookup", "description": "Look it up",
                                                          "inputSchema": {"json": TOOL.parameters}}}]}
    assert body(tools=[TOOL], tool_choice=ToolChoice.required())["toolConfig"]["toolChoice"] == {"any": {}}
    named = body(tools=[TOOL], tool_choice=ToolChoice.tool("lookup"))["toolConfig"]["toolChoice"]
    assert named == {"tool": {"name": "lookup"}}
    assert body(MISTRAL, tools=[TOOL], tool_choice=ToolChoice.required())["toolConfig"]["toolChoice"] == {"any": {}}


def test_a_named_tool_is_refused_for_mistral_large() -> None:
    with pytest.raises(UnsupportedToolChoiceError):
        body(MISTRAL, tools=[TOOL], tool_choice=ToolChoice.tool("lookup"))


def test_choice_none_leaves_the_tools_out_unless_the_history_needs_them() -> None:
    assert "toolConfig" not in body(tools=[TOOL], tool_choice=ToolChoice.none())
    history = [Message.user("a"), Message.assistant("", [ToolCall("t", "lookup", {})]), Message.tool("t", "r")]
    with capture() as events:
        out = body(messages=history, tools=[TOOL], tool_choice=ToolChoice.none())
    assert "toolChoice" not in out["toolConfig"]
    assert [e.setting for e in events] == ["tool_choice"]


def test_inference_config_and_dropped_settings() -> None:
    with capture() as events:
        out = body(max_tokens=100, temperature=0.3, top_p=0.9, stop=["END"], seed=7, parallel_tool_calls=False)
    assert out["inferenceConfig"] == {"maxTokens": 100, "temperature": 0.3, "topP": 0.9, "stopSequences": ["END"]}
    assert {e.setting for e in events} == {"seed", "parallel_tool_calls"}
    assert "inferenceConfig" not in body()


def test_claude_thinking_goes_to_additional_fields_and_refuses_a_forced_choice() -> None:
    out = body(CLAUDE_37, thinking_budget=2048, max_tokens=4096)
    assert out["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    with pytest.raises(UnsupportedToolChoiceError):
        body(CLAUDE_37, thinking_budget=2048, tools=[TOOL], tool_choice=ToolChoice.required())
    with pytest.raises(UnsupportedSettingError):
        body(CLAUDE_37, thinking_budget=2048, temperature=0.2)


@pytest.mark.parametrize(("model", "field"), [("openai.gpt-oss-120b-1:0", "reasoning_effort"),
                                              ("qwen.qwen3-32b-v1:0", "reasoning_config")])
def test_reasoning_effort_per_family(model: str, field: str) -> None:
    assert body(model, reasoning_effort="high")["additionalModelRequestFields"] == {field: "high"}
    with pytest.raises(UnsupportedSettingError):
        body(model, thinking_budget=2048)


def test_reasoning_effort_is_dropped_for_a_model_without_it() -> None:
    with capture() as events:
        out = body(LLAMA, reasoning_effort="high")
    assert "additionalModelRequestFields" not in out
    assert [e.setting for e in events] == ["reasoning_effort"]


def test_vendor_options_merge_last() -> None:
    out = body(CLAUDE_37, thinking_budget=2048, max_tokens=4096, vendor_options={"bedrock": {
        "additionalModelRequestFields": {"top_k": 5}, "guardrailConfig": {"guardrailIdentifier": "g"},
        "tool_extras": {"lookup": {"strict": True}}}}, tools=[TOOL])
    assert out["additionalModelRequestFields"]["top_k"] == 5
    assert "thinking" in out["additionalModelRequestFields"]
    assert out["guardrailConfig"] == {"guardrailIdentifier": "g"}
    assert out["toolConfig"]["tools"][0]["toolSpec"]["strict"] is True
    assert "tool_extras" not in out


def test_cache_points_after_system_tools_and_the_newest_message() -> None:
    out = body(CLAUDE, messages=[Message.system("s"), Message.user("u")], tools=[TOOL], cache=CachePolicy())
    point = {"cachePoint": {"type": "default"}}
    assert out["system"][-1] == point
    assert out["toolConfig"]["tools"][-1] == point
    assert out["messages"][-1]["content"][-1] == point
    with capture() as events:
        plain = body(LLAMA, messages=[Message.system("s"), Message.user("u")], cache=CachePolicy())
    assert point not in plain["system"]
    assert [e.setting for e in events] == ["cache"]


def test_response_format_is_a_json_schema_string() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
              "additionalProperties": False}
    out = body(CLAUDE, response_format=ResponseFormat("Thing", schema, description="a thing"))
    spec = out["outputConfig"]["textFormat"]
    assert spec["type"] == "json_schema"
    assert spec["structure"]["jsonSchema"]["name"] == "Thing"
    assert spec["structure"]["jsonSchema"]["description"] == "a thing"
    assert isinstance(spec["structure"]["jsonSchema"]["schema"], str)


def test_images_and_documents() -> None:
    pdf = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF"
    out = body(messages=[Message.user([Text("see"), Image(PNG, media_type="image/png"),
                                       Document(pdf, title="Q3 report: final!"),
                                       Document("plain", media_type="text/plain")])])
    blocks = out["messages"][0]["content"]
    assert blocks[0] == {"text": "see"}
    assert blocks[1] == {"image": {"format": "png", "source": {"bytes": base64.b64encode(PNG).decode()}}}
    assert blocks[2]["document"]["format"] == "pdf"
    assert blocks[2]["document"]["name"] == "Q3 report- final"
    assert blocks[3]["document"]["format"] == "txt"
    assert blocks[3]["document"]["name"] == "document-2"


@pytest.mark.parametrize(
    ("model", "part"),
    [
        (NOVA, Audio(b"RIFF0000WAVEfmt ", media_type="audio/wav")),
        (NOVA, Image(url="https://example.com/cat.png")),
        (MICRO, Image(PNG, media_type="image/png")),
        (NOVA, Image(b"\x00" * 4_000_000, media_type="image/png")),
    ],
)
def test_parts_the_model_cannot_carry_are_refused(model: str, part: Any) -> None:
    with pytest.raises(UnsupportedContentError):
        body(model, messages=[Message.user([Text("x"), part])])


def test_reasoning_blocks_replay_verbatim_before_text_and_calls() -> None:
    blocks = [{"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "c2ln"}}},
              {"reasoningContent": {"redactedContent": "b3BhcXVl"}}]
    turn = Message.assistant("ok", [ToolCall("t", "lookup", {})], provider_data={"bedrock": {"blocks": blocks}})
    out = body(CLAUDE_37, messages=[Message.user("a"), turn, Message.tool("t", "r")], tools=[TOOL])
    assert out["messages"][1]["content"][:2] == blocks
    assert out["messages"][1]["content"][2] == {"text": "ok"}
