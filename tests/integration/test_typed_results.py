"""Typed results over loopback against the FakeVendor on all three wires: each strategy, JSON and streamed, and
the exact request bodies checked against the vendors' documented fields (the FakeVendor's strict checks
accept them, and reject what the vendors reject).  Real clock, real sockets, both backends."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import pytest

from agentactors import (
    Agent,
    AnthropicProvider,
    GeminiProvider,
    InMemoryRecorder,
    ModelSettings,
    NativeOutput,
    OpenAIProvider,
    PromptedOutput,
    ProviderError,
    ToolOutput,
    tool,
)
from agentactors.providers.http.provider import HTTPProvider
from agentactors.testing.fakevendor import FakeReply, FakeToolCall, FakeVendor
from tests.support.providers import CANARY, MODELS, WIRES

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("wire", WIRES)]


@dataclasses.dataclass
class Person:
    """Someone."""

    name: str
    age: int
    nickname: str = ""


PERSON = {"name": "Ada Lovelace", "age": 36}
STRICT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        # Optional: required and nullable in strict mode; its default moves into the description.
        "nickname": {"type": ["string", "null"], "description": '(default: "")'},
    },
    "required": ["name", "age", "nickname"],
    "additionalProperties": False,
    "description": "Someone.",
}


def make(wire: str, fv: FakeVendor) -> HTTPProvider:
    if wire == "openai":
        return OpenAIProvider(MODELS[wire], api_key=CANARY, base_url=fv.openai_base_url,
                              carries_forced_tool_choice=True, carries_response_format=True)
    if wire == "anthropic":
        return AnthropicProvider(MODELS[wire], api_key=CANARY, base_url=fv.base_url)
    return GeminiProvider(MODELS[wire], api_key=CANARY, base_url=fv.base_url)


def body_of(fv: FakeVendor, index: int = 0) -> dict[str, Any]:
    record = fv.requests[index]
    assert record.outcome == "ok", record  # the strict FakeVendor accepted the request
    body: dict[str, Any] = record.body
    return body


def tool_choice_of(wire: str, body: dict[str, Any]) -> Any:
    if wire == "gemini":
        return body["toolConfig"]["functionCallingConfig"]
    return body["tool_choice"]


FORCED = {
    "openai": {"type": "function", "function": {"name": "final_result"}},
    "anthropic": {"type": "tool", "name": "final_result"},
    "gemini": {"mode": "ANY", "allowedFunctionNames": ["final_result"]},
}


@pytest.mark.parametrize("streamed", [False, True])
async def test_tool_output_is_a_forced_call_of_the_output_tool(fake_vendor: FakeVendor, wire: str,
                                                               streamed: bool) -> None:
    fake_vendor.script(FakeReply(tool_calls=FakeToolCall("final_result", PERSON)))
    async with make(wire, fake_vendor) as provider:
        agent = Agent(provider, output_type=ToolOutput(Person))
        if streamed:
            async with agent.stream("Who wrote the first program?") as run:
                values = [v async for v in run.partial_output()]
            result = run.result
            assert values[-1] == Person("Ada Lovelace", 36)
        else:
            result = await agent.run("Who wrote the first program?")
    assert result.output == Person("Ada Lovelace", 36)
    body = body_of(fake_vendor)
    assert tool_choice_of(wire, body) == FORCED[wire]
    if wire == "openai":
        (spec,) = body["tools"]
        assert spec["function"]["name"] == "final_result"
        assert spec["function"]["parameters"]["required"] == ["name", "age"]
    elif wire == "anthropic":
        (spec,) = body["tools"]
        assert (spec["name"], spec["input_schema"]["required"]) == ("final_result", ["name", "age"])
    else:
        (decl,) = body["tools"][0]["functionDeclarations"]
        assert decl["name"] == "final_result" and "additionalProperties" not in decl["parameters"]


@pytest.mark.parametrize("streamed", [False, True])
async def test_native_output_sends_each_vendors_documented_field(fake_vendor: FakeVendor, wire: str,
                                                                 streamed: bool) -> None:
    fake_vendor.script(FakeReply(text='{"name": "Ada Lovelace", "age": 36, "nickname": null}', words_per_chunk=1))
    async with make(wire, fake_vendor) as provider:
        agent = Agent(provider, output_type=NativeOutput(Person, name="person"))
        if streamed:
            async with agent.stream("Who?") as run:
                values = [v async for v in run.partial_output()]
            result = run.result
            assert len(values) >= 2 and values[-1] == result.output
        else:
            result = await agent.run("Who?")
    assert result.output == Person("Ada Lovelace", 36)  # strict mode's null for an optional field: absent
    body = body_of(fake_vendor)
    assert "tools" not in body
    if wire == "openai":
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {
                "name": "person",
                "schema": STRICT_SCHEMA,
                "strict": True,
            },
        }
    elif wire == "anthropic":
        assert body["output_config"] == {"format": {"type": "json_schema", "schema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                           "nickname": {"type": "string", "default": ""}},
            "required": ["name", "age"],
            "additionalProperties": False,
            "description": "Someone.",
        }}}
    else:
        generation = body["generationConfig"]
        assert generation["responseMimeType"] == "application/json"
        assert generation["responseJsonSchema"]["required"] == ["name", "age"]
        assert generation["responseJsonSchema"]["properties"]["age"] == {"type": "integer"}
    conversation = fake_vendor.requests[0].conversation
    assert conversation is not None and conversation.response_format is not None


@pytest.mark.parametrize("streamed", [False, True])
async def test_prompted_output_reads_json_from_the_text(fake_vendor: FakeVendor, wire: str, streamed: bool) -> None:
    fake_vendor.script(FakeReply(text='Here you are:\n```json\n{"response": "replace"}\n```'))
    async with make(wire, fake_vendor) as provider:
        agent: Agent[Any] = Agent(provider, output_type=PromptedOutput(Literal["refund", "replace"]))  # type: ignore[arg-type]
        if streamed:
            async with agent.stream("What now?") as run:
                result = await run.wait()
        else:
            result = await agent.run("What now?")
    assert result.output == "replace"
    body = body_of(fake_vendor)
    assert "tools" not in body and "response_format" not in body and "output_config" not in body
    conversation = fake_vendor.requests[0].conversation
    assert conversation is not None and '"enum":["refund","replace"]' in conversation.system


async def test_auto_re_asks_over_the_wire_with_the_issues(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(
        FakeReply(tool_calls=FakeToolCall("final_result", {"name": "Ada", "age": "old"})),
        FakeReply(tool_calls=FakeToolCall("final_result", PERSON)),
    )
    async with make(wire, fake_vendor) as provider:
        result = await Agent(provider, output_type=Person).run("Who?")
    assert result.output == Person("Ada Lovelace", 36) and result.steps == 2
    second = fake_vendor.requests[1]
    assert second.outcome == "ok" and second.conversation is not None
    (fed_back,) = second.conversation.tool_results
    assert "- age: expected an integer, got a string" in fed_back.content
    assert tool_choice_of(wire, body_of(fake_vendor, 1)) == FORCED[wire]  # still forced on the re-ask


async def test_a_schema_the_wire_cannot_carry_is_a_request_error_naming_the_field(fake_vendor: FakeVendor,
                                                                                    wire: str) -> None:
    @dataclasses.dataclass
    class Scores:
        by_player: dict[str, int]

    async with make(wire, fake_vendor) as provider:
        result = await Agent(provider, output_type=NativeOutput(Scores)).run("Scores?")
    if wire == "gemini":  # responseJsonSchema takes JSON Schema as it is, open mappings included
        assert fake_vendor.requests[0].outcome == "ok"
        return
    assert isinstance(result.error, ProviderError) and result.error.kind.value == "request"
    assert "by_player is an open mapping" in str(result.error)
    assert len(fake_vendor.requests) == 0  # never sent


async def test_the_strict_fakevendor_rejects_what_the_vendors_reject(fake_vendor: FakeVendor, wire: str) -> None:
    """The checks are real: a response format a vendor refuses is refused here too (so the fitting matters)."""
    import httpx

    bodies = {
        "openai": ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x"}],
                   "response_format": {"type": "json_schema", "json_schema": {
                       "name": "p", "strict": True, "schema": {"type": "object", "properties": {"a": {}}}}}}),
        "anthropic": ("/v1/messages", {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
                      "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}}),
        "gemini": ("/v1beta/models/g:generateContent", {"contents": [{"role": "user", "parts": [{"text": "x"}]}],
                   "generationConfig": {"responseJsonSchema": {"type": "object"}}}),
    }
    path, body = bodies[wire]
    headers = {"authorization": f"Bearer {CANARY}", "x-api-key": CANARY, "x-goog-api-key": CANARY,
               "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient() as client:
        response = await client.post(fake_vendor.base_url + path, json=body, headers=headers)
    assert response.status_code == 400
    assert {"openai": "additionalProperties", "anthropic": "additionalProperties",
            "gemini": "response_mime_type"}[wire] in response.text


# --- an output type together with settings: both in the body -------------------------------------------------------


def _settings_of(wire: str, body: dict[str, Any]) -> dict[str, Any]:
    """temperature, max tokens and stop sequences where each wire puts them."""
    if wire == "gemini":
        generation = body["generationConfig"]
        return {"temperature": generation.get("temperature"), "max_tokens": generation.get("maxOutputTokens"),
                "stop": generation.get("stopSequences")}
    stop = body.get("stop_sequences" if wire == "anthropic" else "stop")
    return {"temperature": body.get("temperature"), "max_tokens": body.get("max_tokens"), "stop": stop}


@pytest.mark.parametrize("strategy", ["tool", "native", "prompted"])
async def test_an_output_type_and_settings_travel_together(fake_vendor: FakeVendor, wire: str, strategy: str) -> None:
    spec: Any = {"tool": ToolOutput(Person), "native": NativeOutput(Person, name="person"),
                 "prompted": PromptedOutput(Person)}[strategy]
    reply = (FakeReply(tool_calls=FakeToolCall("final_result", PERSON)) if strategy == "tool"
             else FakeReply(text='{"name": "Ada Lovelace", "age": 36, "nickname": null}'))
    fake_vendor.script(reply, reply)
    async with make(wire, fake_vendor) as provider:
        agent = Agent(provider, output_type=spec, settings=ModelSettings(temperature=0.25, max_tokens=700))
        first = await agent.run("Who?")
        second = await agent.run("Who?", settings=ModelSettings(max_tokens=900, stop=["END"]))
    assert first.output == second.output == Person("Ada Lovelace", 36)
    expected = [{"temperature": 0.25, "max_tokens": 700, "stop": None},  # the agent's settings
                {"temperature": 0.25, "max_tokens": 900, "stop": ["END"]}]  # the run's over the agent's
    for index, settings in enumerate(expected):
        body = body_of(fake_vendor, index)
        assert _settings_of(wire, body) == settings
        if strategy == "tool":
            assert tool_choice_of(wire, body) == FORCED[wire]
        elif strategy == "native" and wire == "openai":
            assert body["response_format"]["json_schema"]["name"] == "person"
        elif strategy == "native" and wire == "anthropic":
            assert body["output_config"]["format"]["type"] == "json_schema"
        elif strategy == "native":
            assert body["generationConfig"]["responseMimeType"] == "application/json"
            assert body["generationConfig"]["responseJsonSchema"]["required"] == ["name", "age"]
        else:
            assert "tools" not in body and "response_format" not in body and "output_config" not in body
            conversation = fake_vendor.requests[index].conversation
            assert conversation is not None and '"age":{"type":"integer"}' in conversation.system


# --- what a vendor refuses before sending, so auto does not pick it ------------------------------------------------


@tool
async def lookup(name: str) -> str:
    """Look a person up."""
    return f"{name} is 36"


async def test_gemini_before_3_refuses_a_json_response_beside_tools(fake_vendor: FakeVendor, wire: str) -> None:
    if wire != "gemini":
        pytest.skip("a rule of Gemini's models before 3")
    import httpx

    body = {"contents": [{"role": "user", "parts": [{"text": "x"}]}],
            "tools": [{"functionDeclarations": [{"name": "f", "description": "d",
                                                 "parameters": {"type": "object", "properties": {}}}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {"type": "object"}}}
    async with httpx.AsyncClient() as client:
        old = await client.post(fake_vendor.base_url + "/v1beta/models/gemini-2.5-flash:generateContent", json=body,
                                headers={"x-goog-api-key": CANARY})
        fake_vendor.script(FakeReply(text="{}"))
        new = await client.post(fake_vendor.base_url + "/v1beta/models/gemini-3-pro-preview:generateContent",
                                json=body, headers={"x-goog-api-key": CANARY})
    assert old.status_code == 400
    assert "Function calling with a response mime type: 'application/json' is unsupported" in old.text
    assert new.status_code == 200
    # The provider refuses it before sending, naming the model.
    sent = len(fake_vendor.requests)
    async with GeminiProvider("gemini-2.5-flash", api_key=CANARY, base_url=fake_vendor.base_url) as provider:
        result = await Agent(provider, tools=[lookup], output_type=NativeOutput(Person)).run("Who?")
    assert isinstance(result.error, ProviderError) and result.error.kind.value == "request"
    assert "gemini-2.5-flash" in str(result.error)
    assert len(fake_vendor.requests) == sent


async def test_anthropic_thinking_gets_native_up_front(fake_vendor: FakeVendor, wire: str) -> None:
    if wire != "anthropic":
        pytest.skip("a rule of Anthropic's extended thinking")
    fake_vendor.script(FakeReply(text='{"name": "Ada Lovelace", "age": 36}'))
    recorder = InMemoryRecorder()
    async with AnthropicProvider("claude-sonnet-4-5", api_key=CANARY, base_url=fake_vendor.base_url) as provider:
        agent = Agent(provider, output_type=Person, recorders=[recorder],
                      settings=ModelSettings(thinking_budget=2048, max_tokens=8000))
        result = await agent.run("Who?")
    assert result.output == Person("Ada Lovelace", 36)
    assert [e.strategy for e in recorder.events if e.type == "output.strategy"] == ["native"]
    assert len([e for e in recorder.events if e.type == "llm.request"]) == 1
    assert len(fake_vendor.requests) == 1
    body = body_of(fake_vendor)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and body["max_tokens"] == 8000
    assert body["output_config"]["format"]["type"] == "json_schema"
