"""BedrockProvider against the FakeVendor: Converse and ConverseStream (binary event stream) over real HTTP,
SigV4 headers checked by the server, tool loops, errors by type, in-band exceptions, cut streams, and no
credential anywhere it could leak."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agentactors.errors import ErrorKind, ProviderError, StreamInterruptedError, UnsupportedToolChoiceError
from agentactors.messages import (
    LLMRequest,
    Message,
    ReasoningDelta,
    StopReason,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCallEnd,
    ToolChoice,
    ToolSpec,
)
from agentactors.providers.bedrock import BedrockProvider
from agentactors.testing.fakevendor import FakeError, FakeMalformed, FakeReply, FakeToolCall, FakeVendor

pytestmark = pytest.mark.anyio

KEY_ID = "AKIDFAKEVENDORTEST01"
SECRET = "fake/Secret+Key/0123456789abcdefghijklmnopqrs"
TOKEN = "FwoGZXIvYXdzEFAKESESSIONTOKEN0123456789abcdefghijklmnop"
NOVA = "us.amazon.nova-pro-v1:0"
CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
WEATHER = ToolSpec("get_weather", "Weather for a city", {"type": "object", "properties": {"city": {"type": "string"}},
                                                         "required": ["city"]})


def bedrock(fv: FakeVendor, model: str = NOVA, **kw: Any) -> BedrockProvider:
    creds = {"access_key_id": KEY_ID, "secret_access_key": SECRET, **kw}
    return BedrockProvider(model, region="eu-west-1", base_url=fv.base_url, **creds)


async def collect(p: BedrockProvider, request: LLMRequest) -> list[StreamEvent]:
    async with p.stream(request) as events:
        return [e async for e in events]


async def test_converse_answers_and_the_server_sees_a_sigv4_request(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="Paris is sunny.", input_tokens=11, output_tokens=4))
    async with bedrock(fake_vendor) as p:
        answer = await p.complete(LLMRequest([Message.system("Be brief."), Message.user("Weather in Paris?")]))
    assert answer.content == "Paris is sunny."
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (11, 4)
    assert answer.stop_reason is StopReason.end_turn
    (seen,) = fake_vendor.requests
    assert seen.wire == "bedrock"
    assert seen.model == NOVA
    assert seen.path == "/model/us.amazon.nova-pro-v1%3A0/converse"
    assert seen.headers["authorization"] == "[REDACTED]"  # the fake keeps no signature either
    assert seen.headers["x-amz-date"].endswith("Z")
    assert "x-amz-security-token" not in seen.headers
    assert seen.conversation is not None and seen.conversation.system == "Be brief."


async def test_a_session_token_is_sent_signed(fake_vendor: FakeVendor) -> None:
    fake_vendor.script("ok")
    async with bedrock(fake_vendor, session_token=TOKEN) as p:
        assert (await p.complete(LLMRequest([Message.user("hi")]))).content == "ok"
    (seen,) = fake_vendor.requests
    assert seen.headers["x-amz-security-token"] == "[REDACTED]"
    assert seen.key_leaks == ()


async def test_a_wrong_access_key_is_an_account_error() -> None:
    async with FakeVendor(expected_api_key="AKIDSOMEONEELSE00000") as fv, bedrock(fv) as p:
        with pytest.raises(ProviderError) as caught:
            await p.complete(LLMRequest([Message.user("hi")]))
    assert (caught.value.kind, caught.value.status) == (ErrorKind.account, 403)


async def test_an_unsigned_request_is_refused_by_the_fake() -> None:
    import httpx

    async with FakeVendor() as fv, httpx.AsyncClient() as client:
        body = {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}
        response = await client.post(f"{fv.base_url}/model/{NOVA}/converse", json=body)
    assert response.status_code == 403
    assert response.headers["x-amzn-errortype"].startswith("MissingAuthenticationTokenException")


async def test_converse_stream_text_and_reasoning(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="one two three four five", reasoning="think hard", output_tokens=9))
    async with bedrock(fake_vendor, model=CLAUDE) as p:
        events = await collect(p, LLMRequest([Message.user("count")], thinking_budget=2048, max_tokens=4096))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "one two three four five"
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "think hard"
    end = events[-1]
    assert isinstance(end, StreamEnd)
    assert end.response.usage.output_tokens == 9
    assert end.response.provider_data is not None  # the signed reasoning, for replay
    (seen,) = fake_vendor.requests
    assert seen.path.endswith("/converse-stream")
    assert seen.stream


async def test_a_tool_loop_over_the_stream(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeToolCall("get_weather", {"city": "Paris"}), "Sunny in Paris.")
    async with bedrock(fake_vendor) as p:
        request = LLMRequest([Message.user("Weather in Paris?")], tools=[WEATHER])
        events = await collect(p, request)
        (end_call,) = [e for e in events if isinstance(e, ToolCallEnd)]
        assert (end_call.call.name, end_call.call.arguments) == ("get_weather", {"city": "Paris"})
        first = events[-1]
        assert isinstance(first, StreamEnd) and first.response.stop_reason is StopReason.tool_use
        follow = LLMRequest([*request.messages, first.response.to_message(),
                             Message.tool(end_call.call.id, "sunny")], tools=[WEATHER])
        answer = await p.complete(follow)
    assert answer.content == "Sunny in Paris."
    second = fake_vendor.requests[1].conversation
    assert second is not None
    assert [r.content for r in second.tool_results] == ["sunny"]
    assert [r.name for r in second.tool_results] == ["get_weather"]


async def test_forced_choice_is_sent_where_bedrock_takes_it(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeToolCall("get_weather", {"city": "Oslo"}))
    async with bedrock(fake_vendor) as p:
        await p.complete(LLMRequest([Message.user("w")], tools=[WEATHER], tool_choice=ToolChoice.tool("get_weather")))
    conversation = fake_vendor.requests[0].conversation
    assert conversation is not None
    assert (conversation.tool_choice, conversation.tool_choice_name) == ("tool", "get_weather")


@pytest.mark.parametrize("model", ["meta.llama3-70b-instruct-v1:0", "us.deepseek.r1-v1:0"])
async def test_forced_choice_is_refused_before_sending(fake_vendor: FakeVendor, model: str) -> None:
    async with bedrock(fake_vendor, model=model) as p:
        with pytest.raises(UnsupportedToolChoiceError):
            await p.complete(LLMRequest([Message.user("w")], tools=[WEATHER], tool_choice=ToolChoice.required()))
        with pytest.raises(UnsupportedToolChoiceError):
            p.stream(LLMRequest([Message.user("w")], tools=[WEATHER], tool_choice=ToolChoice.required()))
    assert fake_vendor.requests == ()


@pytest.mark.parametrize(
    ("status", "code", "kind", "retryable"),
    [
        (429, None, ErrorKind.transient, True),
        (429, "ModelNotReadyException", ErrorKind.transient, True),
        (503, None, ErrorKind.transient, True),
        (500, None, ErrorKind.transient, True),
        (400, None, ErrorKind.request, False),
        (400, "ServiceQuotaExceededException", ErrorKind.account, False),
        (403, None, ErrorKind.account, False),
        (408, None, ErrorKind.transient, True),
    ],
)
@pytest.mark.parametrize("streamed", [False, True], ids=["converse", "stream"])
async def test_error_types(
    fake_vendor: FakeVendor, status: int, code: str | None, kind: ErrorKind, retryable: bool, streamed: bool
) -> None:
    fake_vendor.script(FakeError(status, code=code, retry_after=3 if status == 429 else None))
    async with bedrock(fake_vendor) as p:
        with pytest.raises(ProviderError) as caught:
            if streamed:
                await collect(p, LLMRequest([Message.user("hi")]))
            else:
                await p.complete(LLMRequest([Message.user("hi")]))
    err = caught.value
    assert (err.kind, err.retryable, err.status) == (kind, retryable, status)
    assert not isinstance(err, StreamInterruptedError)
    if status == 429:
        assert err.retry_after == 3


async def test_an_in_band_exception_after_text_is_an_interrupted_stream(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="a b c d e f", stream_error=FakeError(429), stream_error_after=2))
    async with bedrock(fake_vendor) as p:
        with pytest.raises(StreamInterruptedError) as caught:
            await collect(p, LLMRequest([Message.user("hi")]))
    assert caught.value.kind is ErrorKind.transient
    assert caught.value.partial_text == "a b c d "


async def test_an_in_band_exception_first_is_the_classified_error(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="a b", stream_error=FakeError(400, message="bad input"), stream_error_after=0))
    async with bedrock(fake_vendor) as p:
        with pytest.raises(ProviderError) as caught:
            await collect(p, LLMRequest([Message.user("hi")]))
    assert not isinstance(caught.value, StreamInterruptedError)
    assert caught.value.kind is ErrorKind.request
    assert "bad input" in str(caught.value)


async def test_a_cut_stream_is_not_an_answer(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="a b c d e f", cut_after=2))
    async with bedrock(fake_vendor) as p:
        with pytest.raises(StreamInterruptedError) as caught:
            await collect(p, LLMRequest([Message.user("hi")]))
    assert caught.value.kind is ErrorKind.transient


async def test_a_malformed_stream_is_transient(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeMalformed(body="{not json"))
    async with bedrock(fake_vendor) as p:
        with pytest.raises(ProviderError) as caught:
            await collect(p, LLMRequest([Message.user("hi")]))
    assert caught.value.kind is ErrorKind.transient


async def test_no_credential_reaches_an_error_a_repr_or_a_log_line(
    fake_vendor: FakeVendor, caplog: pytest.LogCaptureFixture
) -> None:
    fake_vendor.script(FakeError(400, message="bad"), FakeReply(text="ok"))
    caplog.set_level(logging.DEBUG)
    async with bedrock(fake_vendor, session_token=TOKEN) as p:
        with pytest.raises(ProviderError) as caught:
            await p.complete(LLMRequest([Message.user("hi")]))
        await p.complete(LLMRequest([Message.user("hi")]))
        shown = f"{p!r} {caught.value!s} {caught.value!r} {caught.value.body_excerpt}"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for secret in (SECRET, TOKEN):
        assert secret not in shown
        assert secret not in logged
    assert "Signature=" not in logged
    assert "credentials='explicit'" in repr(p)
    assert all(not r.key_leaks for r in fake_vendor.requests)
