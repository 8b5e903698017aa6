"""Typed results through the cloud endpoints against the FakeVendor: OpenAI Responses, Azure OpenAI (both
routes), Bedrock, and Gemini and Claude on Vertex AI — ToolOutput, NativeOutput, PromptedOutput and auto, JSON
and streamed, each request checked for the field its vendor documents (the strict FakeVendor accepts it).
Real clock, real sockets, both backends."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agentactors import (
    Agent,
    AnthropicProvider,
    AzureOpenAIProvider,
    BedrockProvider,
    GeminiProvider,
    InMemoryRecorder,
    NativeOutput,
    OpenAIResponsesProvider,
    PromptedOutput,
    ToolOutput,
)
from agentactors.providers.http.provider import HTTPProvider
from agentactors.testing.fakevendor import FakeReply, FakeToolCall, FakeVendor

pytestmark = pytest.mark.anyio

ENDPOINTS = ("responses", "azure-chat", "azure-responses", "bedrock", "gemini-vertex", "anthropic-vertex")
KEY = "sk-typed-cloud-0123456789abcdef"
TOKEN = "ya29.typed-cloud-token-0123456789"


@dataclasses.dataclass
class Person:
    """Someone."""

    name: str
    age: int


PERSON = {"name": "Ada Lovelace", "age": 36}


def make(endpoint: str, fv: FakeVendor) -> HTTPProvider:
    if endpoint == "responses":
        return OpenAIResponsesProvider("gpt-4o", api_key=KEY, base_url=fv.openai_base_url)
    if endpoint in ("azure-chat", "azure-responses"):
        return AzureOpenAIProvider("prod-4o", endpoint=fv.base_url, api_key=KEY, model="gpt-4o",
                                   api="chat" if endpoint == "azure-chat" else "responses")
    if endpoint == "bedrock":
        return BedrockProvider("us.anthropic.claude-sonnet-4-5-20250929-v1:0", region="us-east-1",
                               access_key_id="AKIDTYPEDCLOUD000001", secret_access_key="typed/secret/key",
                               base_url=fv.base_url)
    if endpoint == "gemini-vertex":
        return GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=lambda: TOKEN,
                                     base_url=fv.base_url)
    return AnthropicProvider.vertex("claude-sonnet-4-5", project="p", token_provider=lambda: TOKEN,
                                    base_url=fv.base_url)


def body_of(fv: FakeVendor, index: int = 0) -> dict[str, Any]:
    record = fv.requests[index]
    assert record.outcome == "ok", record  # the strict FakeVendor accepted the request
    body: dict[str, Any] = record.body
    return body


def forced_choice(endpoint: str, body: dict[str, Any]) -> Any:
    """The forced choice of the output tool, where each endpoint's wire puts it."""
    if endpoint in ("responses", "azure-responses"):
        return body["tool_choice"] == {"type": "function", "name": "final_result"}
    if endpoint == "azure-chat":
        return body["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}
    if endpoint == "bedrock":
        return body["toolConfig"]["toolChoice"] == {"tool": {"name": "final_result"}}
    if endpoint == "gemini-vertex":
        return body["toolConfig"]["functionCallingConfig"] == {"mode": "ANY", "allowedFunctionNames": ["final_result"]}
    return body["tool_choice"] == {"type": "tool", "name": "final_result"}


def native_schema(endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of a native response format, from each wire's documented field."""
    if endpoint in ("responses", "azure-responses"):
        fmt = body["text"]["format"]
        assert (fmt["type"], fmt["name"], fmt["strict"]) == ("json_schema", "person", True)
        schema: dict[str, Any] | str = fmt["schema"]  # a str on Bedrock, below
    elif endpoint == "azure-chat":
        assert body["response_format"]["type"] == "json_schema"
        schema = body["response_format"]["json_schema"]["schema"]
    elif endpoint == "bedrock":
        fmt = body["outputConfig"]["textFormat"]
        assert fmt["type"] == "json_schema"
        schema = fmt["structure"]["jsonSchema"]["schema"]
    elif endpoint == "gemini-vertex":
        assert body["generationConfig"]["responseMimeType"] == "application/json"
        schema = body["generationConfig"]["responseJsonSchema"]
    else:
        schema = body["output_config"]["format"]["schema"]
    if isinstance(schema, str):  # Bedrock carries the schema as a JSON string
        import json

        decoded: dict[str, Any] = json.loads(schema)
        return decoded
    return schema


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("streamed", [False, True])
async def test_tool_output_is_a_forced_call_checked_for_the_model(fake_vendor: FakeVendor, endpoint: str,
                                                                  streamed: bool) -> None:
    fake_vendor.script(FakeReply(tool_calls=FakeToolCall("final_result", PERSON)))
    async with make(endpoint, fake_vendor) as provider:
        assert provider.capabilities(None).forced_tool_choice
        agent = Agent(provider, output_type=ToolOutput(Person))
        if streamed:
            async with agent.stream("Who wrote the first program?") as run:
                result = await run.wait()
        else:
            result = await agent.run("Who wrote the first program?")
    assert result.output == Person("Ada Lovelace", 36), result.error
    assert forced_choice(endpoint, body_of(fake_vendor))


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("streamed", [False, True])
async def test_native_output_sends_the_documented_field(fake_vendor: FakeVendor, endpoint: str,
                                                        streamed: bool) -> None:
    fake_vendor.script(FakeReply(text='{"name": "Ada Lovelace", "age": 36}', words_per_chunk=1))
    async with make(endpoint, fake_vendor) as provider:
        assert provider.capabilities(None).response_format
        agent = Agent(provider, output_type=NativeOutput(Person, name="person"))
        if streamed:
            async with agent.stream("Who?") as run:
                result = await run.wait()
        else:
            result = await agent.run("Who?")
    assert result.output == Person("Ada Lovelace", 36), result.error
    body = body_of(fake_vendor)
    schema = native_schema(endpoint, body)
    assert schema["required"] == ["name", "age"] and schema["properties"]["age"] == {"type": "integer"}
    conversation = fake_vendor.requests[0].conversation
    assert conversation is not None and conversation.response_format is not None


@pytest.mark.parametrize("endpoint", ENDPOINTS)
async def test_prompted_output_reads_json_from_the_text(fake_vendor: FakeVendor, endpoint: str) -> None:
    fake_vendor.script(FakeReply(text='Here:\n```json\n{"name": "Ada Lovelace", "age": 36}\n```'))
    async with make(endpoint, fake_vendor) as provider:
        result = await Agent(provider, output_type=PromptedOutput(Person)).run("Who?")
    assert result.output == Person("Ada Lovelace", 36), result.error
    conversation = fake_vendor.requests[0].conversation
    assert conversation is not None and conversation.response_format is None and not conversation.tools
    assert '"age":{"type":"integer"}' in conversation.system


@pytest.mark.parametrize("endpoint", ENDPOINTS)
async def test_auto_picks_the_output_tool_and_re_asks_with_the_issues(fake_vendor: FakeVendor,
                                                                      endpoint: str) -> None:
    fake_vendor.script(
        FakeReply(tool_calls=FakeToolCall("final_result", {"name": "Ada", "age": "old"})),
        FakeReply(tool_calls=FakeToolCall("final_result", PERSON)),
    )
    recorder = InMemoryRecorder()
    async with make(endpoint, fake_vendor) as provider:
        result = await Agent(provider, output_type=Person, recorders=[recorder]).run("Who?")
    assert result.output == Person("Ada Lovelace", 36) and result.steps == 2, result.error
    assert [e.strategy for e in recorder.of_type("output.strategy")] == ["tool"]
    second = fake_vendor.requests[1]
    assert second.conversation is not None
    (fed_back,) = second.conversation.tool_results
    assert "- age: expected an integer, got a string" in fed_back.content
    assert forced_choice(endpoint, body_of(fake_vendor, 1))  # still forced on the re-ask


# --- a model that takes no forced choice: refused unsent, and auto goes around it ---------------------------------

LLAMA = "meta.llama3-1-70b-instruct-v1:0"  # Bedrock documents toolChoice auto alone for Llama


async def test_a_forced_choice_the_model_cannot_take_is_refused_before_sending(fake_vendor: FakeVendor) -> None:
    from agentactors import UnsupportedToolChoiceError

    responses = OpenAIResponsesProvider("o1-mini", api_key=KEY, base_url=fake_vendor.openai_base_url)
    bedrock = BedrockProvider(LLAMA, region="us-east-1", access_key_id="AKIDTYPEDCLOUD000001",
                              secret_access_key="typed/secret/key", base_url=fake_vendor.base_url)
    for provider in (responses, bedrock):
        async with provider:
            assert not provider.capabilities(None).forced_tool_choice
            result = await Agent(provider, output_type=ToolOutput(Person)).run("Who?")
        assert isinstance(result.error, UnsupportedToolChoiceError), result.error
    assert len(fake_vendor.requests) == 0  # never sent


async def test_auto_prompts_a_model_with_neither_forced_choice_nor_a_response_format(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text='{"name": "Ada Lovelace", "age": 36}'))
    recorder = InMemoryRecorder()
    async with BedrockProvider(LLAMA, region="us-east-1", access_key_id="AKIDTYPEDCLOUD000001",
                               secret_access_key="typed/secret/key", base_url=fake_vendor.base_url) as provider:
        caps = provider.capabilities(None)
        assert not caps.forced_tool_choice and not caps.response_format
        result = await Agent(provider, output_type=Person, recorders=[recorder]).run("Who?")
    assert result.output == Person("Ada Lovelace", 36), result.error
    assert [e.strategy for e in recorder.of_type("output.strategy")] == ["prompted"]
    body = body_of(fake_vendor)
    assert "toolConfig" not in body and "outputConfig" not in body
