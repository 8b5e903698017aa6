"""OpenAIResponsesProvider and AzureOpenAIProvider against the FakeVendor over loopback, on both backends.

Real sockets, real clock: complete and stream, tool-call round trips with the reasoning item replayed
(the FakeVendor refuses, as the service does, a stateless request whose reasoning item lacks its
encrypted content), truncation, errors in the body and in the stream, forced choices refused unsent,
Azure's routes and both ways to authenticate.
"""

from __future__ import annotations

import pytest

from agentactors.errors import ErrorKind, ProviderError, StreamInterruptedError, UnsupportedToolChoiceError
from agentactors.messages import (
    LLMRequest,
    Message,
    ReasoningDelta,
    StopReason,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolChoice,
)
from agentactors.providers.azure import AzureOpenAIProvider
from agentactors.providers.responses import OpenAIResponsesProvider
from agentactors.testing.fakevendor import FakeError, FakeReply, FakeToolCall, FakeVendor
from tests.support.providers import CANARY, TIME, WEATHER, ask, collect

pytestmark = pytest.mark.anyio

ANSWER = "The capital of France is Paris, on the Seine."
CALLS = (FakeToolCall("get_weather", {"city": "Paris", "days": 3}), FakeToolCall("get_time", {"city": "Paris"}))


def responses(fv: FakeVendor, model: str = "gpt-5-mini") -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(model, api_key=CANARY, base_url=fv.openai_base_url)


async def test_complete_text(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text=ANSWER, input_tokens=31, output_tokens=12))
    async with responses(fake_vendor, "gpt-4o") as p:
        response = await p.complete(ask())
    assert (response.content, response.stop_reason, response.provider) == (ANSWER, StopReason.end_turn,
                                                                            "openai-responses")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (31, 12)
    (record,) = fake_vendor.requests
    assert (record.wire, record.path, record.model, record.outcome) == ("responses", "/v1/responses", "gpt-4o", "ok")
    assert record.api_key_present and record.key_leaks == ()
    assert record.body is not None and record.body["store"] is False and record.body["instructions"] == "Be brief."
    assert record.conversation is not None and record.conversation.last_user_text == "What is the capital of France?"


async def test_stream_text_and_reasoning(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text=ANSWER, reasoning="Paris is the capital.", words_per_chunk=1))
    async with responses(fake_vendor) as p:
        events, response = await collect(p, ask())
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == len(ANSWER.split()) and "".join(deltas) == ANSWER
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Paris is the capital."
    assert response.content == ANSWER and response.reasoning == "Paris is the capital."
    (record,) = fake_vendor.requests
    assert record.stream and record.outcome == "ok"
    assert record.body is not None and record.body["include"] == ["reasoning.encrypted_content"]


@pytest.mark.parametrize("streamed", [False, True])
async def test_parallel_calls_round_trip_with_reasoning_replayed(fake_vendor: FakeVendor, streamed: bool) -> None:
    fake_vendor.script(
        FakeReply(text="Let me check.", reasoning="Two tools.", tool_calls=CALLS),
        FakeReply(text="Sunny, 14:00."),
    )
    request = ask("Weather and time in Paris?", tools=[WEATHER, TIME])
    async with responses(fake_vendor) as p:
        if streamed:
            events, first = await collect(p, request)
            assert [type(e) for e in events if isinstance(e, ToolCallStart | ToolCallEnd)] == [
                ToolCallStart, ToolCallEnd, ToolCallStart, ToolCallEnd,
            ]
            assert any(isinstance(e, ToolCallDelta) for e in events)
        else:
            first = await p.complete(request)
        assert first.stop_reason is StopReason.tool_use
        assert [(c.name, c.arguments) for c in first.tool_calls] == [(c.name, c.arguments) for c in CALLS]
        results = [Message.tool(c.id, f"result {n}", name=c.name) for n, c in enumerate(first.tool_calls)]
        followup = LLMRequest([*request.messages, first.to_message(), *results], tools=request.tools)
        second = await p.complete(followup)
    assert second.content == "Sunny, 14:00."
    sent = fake_vendor.requests[1].body
    assert sent is not None
    kinds = [item.get("type", "message") for item in sent["input"]]
    assert kinds == ["message", "reasoning", "message", "function_call", "function_call", "function_call_output",
                     "function_call_output"]
    assert sent["input"][1]["encrypted_content"]  # replayed untouched
    conv = fake_vendor.requests[1].conversation
    assert conv is not None and [r.content for r in conv.tool_results] == ["result 0", "result 1"]


async def test_forced_choice_is_sent_and_refused_per_model_before_sending(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(tool_calls=CALLS[:1]))
    async with responses(fake_vendor, "gpt-4o") as p:
        response = await p.complete(ask(tools=[WEATHER], tool_choice=ToolChoice.tool("get_weather")))
        assert response.tool_calls[0].name == "get_weather"
        with pytest.raises(UnsupportedToolChoiceError):
            await p.complete(ask(tools=[WEATHER], tool_choice=ToolChoice.required()).with_model("o1-mini"))
    (record,) = fake_vendor.requests
    assert record.conversation is not None and record.conversation.tool_choice_name == "get_weather"


async def test_max_tokens_cut_is_a_max_tokens_stop(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="Paris is", stop="max_tokens"), FakeReply(text="Paris is", stop="max_tokens"))
    async with responses(fake_vendor) as p:
        whole = await p.complete(ask())
        _, streamed = await collect(p, ask())
    assert whole.stop_reason is StopReason.max_tokens is streamed.stop_reason
    assert whole.raw_stop_reason == "max_output_tokens"


async def test_errors_in_the_body_and_in_the_stream(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(
        FakeError(429, retry_after=7),
        FakeReply(text=ANSWER, words_per_chunk=1, stream_error=FakeError(500), stream_error_after=2),
        FakeReply(text=ANSWER, words_per_chunk=1, cut_after=2),
    )
    async with responses(fake_vendor) as p:
        with pytest.raises(ProviderError) as limited:
            await p.complete(ask())
        with pytest.raises(StreamInterruptedError) as in_band:
            await collect(p, ask())
        with pytest.raises(StreamInterruptedError) as cut:
            await collect(p, ask())
    assert limited.value.kind is ErrorKind.transient and limited.value.retry_after == 7
    assert isinstance(in_band.value.__cause__, ProviderError) and in_band.value.__cause__.kind is ErrorKind.transient
    assert cut.value.partial_text
    assert CANARY not in repr(limited.value) + str(in_band.value) + str(cut.value)


# --- Azure ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("streamed", [False, True])
async def test_azure_routes_with_an_api_key(fake_vendor: FakeVendor, api: str, streamed: bool) -> None:
    fake_vendor.script(FakeReply(text=ANSWER))
    async with AzureOpenAIProvider("prod-chat", endpoint=fake_vendor.base_url, api_key=CANARY, model="gpt-4o",
                                   api=api) as p:  # type: ignore[arg-type]
        if streamed:
            _, response = await collect(p, ask())
        else:
            response = await p.complete(ask())
    assert response.content == ANSWER
    (record,) = fake_vendor.requests
    assert record.api_key_present and record.key_leaks == () and record.headers["api-key"] == "[REDACTED]"
    assert record.model == "prod-chat"
    if api == "chat":
        assert record.path == "/openai/deployments/prod-chat/chat/completions?api-version=2024-10-21"
        assert record.body is not None and "model" not in record.body
    else:
        assert record.path == "/openai/v1/responses"
        assert record.body is not None and record.body["model"] == "prod-chat"


async def test_azure_token_provider_is_asked_on_every_request(fake_vendor: FakeVendor) -> None:
    tokens = iter(["entra-token-one-0123456789", "entra-token-two-0123456789"])
    asked: list[str] = []

    async def token() -> str:
        asked.append(next(tokens))
        return asked[-1]

    fake_vendor.script(FakeReply(text="one"), FakeReply(text="two"))
    async with AzureOpenAIProvider("dep", endpoint=fake_vendor.base_url, token_provider=token,
                                   api="responses") as p:
        assert (await p.complete(ask())).content == "one"
        assert (await p.complete(ask())).content == "two"
    assert len(asked) == 2
    assert all(r.headers["authorization"] == "[REDACTED]" and r.api_key_present for r in fake_vendor.requests)
    assert all("api-key" not in r.headers for r in fake_vendor.requests)


async def test_azure_chat_without_api_version_is_refused_before_sending(fake_vendor: FakeVendor) -> None:
    # Azure answers a Chat route without api-version with a bare 404 (the FakeVendor too:
    # test_cloud_config_azure.py); the provider refuses the empty version when it is made.
    with pytest.raises(ValueError, match="api_version"):
        AzureOpenAIProvider("dep", endpoint=fake_vendor.base_url, api_key=CANARY, api_version="")
    assert not fake_vendor.requests
