from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from agentactors import (
    LLMRequest,
    LLMResponse,
    Message,
    ProviderError,
    ScriptedProvider,
    StopReason,
    StreamEnd,
    StreamInterruptedError,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolChoice,
    ToolSpec,
    UnsupportedToolChoiceError,
    forced_tool_choice_for,
)
from agentactors.providers.scripted import ScriptExhaustedError, StreamCut

pytestmark = pytest.mark.anyio
ADD = ToolSpec("add", "add two ints", {"type": "object", "properties": {"a": {"type": "integer"}}})


def req(text: str = "hi", **kw: object) -> LLMRequest:
    return LLMRequest([Message.user(text)], **kw)  # type: ignore[arg-type]


async def test_items_consumed_in_order_and_requests_recorded() -> None:
    p = ScriptedProvider(["one", [ToolCall("c1", "add", {"a": 1})], LLMResponse("three", model="x")])
    r1 = await p.complete(req("a"))
    r2 = await p.complete(req("b"))
    r3 = await p.complete(req("c"))
    assert (r1.content, r1.provider, r1.model) == ("one", "scripted", "scripted-model")
    assert r2.stop_reason is StopReason.tool_use and r2.tool_calls[0].arguments == {"a": 1}
    assert r3.content == "three" and r3.model == "x"
    assert [r.messages[0].content for r in p.requests] == ["a", "b", "c"]


async def test_bare_string_script_is_one_item() -> None:
    p = ScriptedProvider("hello world")
    assert (await p.complete(req())).content == "hello world"
    with pytest.raises(ScriptExhaustedError) as info:
        await p.complete(req("second question"))
    assert "second question" in str(info.value) and "#2" in str(info.value)


async def test_exceptions_and_callables() -> None:
    boom = ProviderError("down", provider="scripted", kind="transient")

    async def later(request: LLMRequest) -> str:
        await anyio.lowlevel.checkpoint()
        return "from async " + request.messages[-1].content

    p = ScriptedProvider([boom, lambda r: "sync " + r.messages[-1].content, later])
    with pytest.raises(ProviderError):
        await p.complete(req())
    assert (await p.complete(req("x"))).content == "sync x"
    assert (await p.complete(req("y"))).content == "from async y"
    every = ScriptedProvider(lambda r: f"echo {len(r.messages)}")
    for _ in range(5):
        assert (await every.complete(req())).content == "echo 1"


async def test_stream_text_in_several_deltas_and_tool_calls() -> None:
    p = ScriptedProvider(["the quick brown fox jumps over", [ToolCall("c1", "add", {"a": 1})]])
    async with p.stream(req()) as events:
        got = [e async for e in events]
    deltas = [e.text for e in got if isinstance(e, TextDelta)]
    assert len(deltas) > 1 and "".join(deltas) == "the quick brown fox jumps over"
    assert isinstance(got[-1], StreamEnd) and sum(isinstance(e, StreamEnd) for e in got) == 1
    async with p.stream(req()) as events:
        got = [e async for e in events]
    kinds = [type(e) for e in got]
    assert kinds[0] is ToolCallStart and ToolCallDelta in kinds and ToolCallEnd in kinds and kinds[-1] is StreamEnd


async def test_stream_cut_after_first_event_is_interrupted() -> None:
    err = ProviderError("reset", provider="scripted", kind="transient")
    p = ScriptedProvider([StreamCut("partial answer here", err), StreamCut("", err)])
    seen: list[str] = []
    with pytest.raises(StreamInterruptedError) as info:
        async with p.stream(req()) as events:
            async for e in events:
                if isinstance(e, TextDelta):
                    seen.append(e.text)
    assert info.value.partial_text == "partial answer here" and "".join(seen) == "partial answer here"
    with pytest.raises(ProviderError) as before:
        async with p.stream(req()) as events:
            async for _ in events:
                pass
    assert before.value is err  # failing before the first event is the error itself


@pytest.mark.virtual_time
async def test_latency_is_virtual() -> None:
    p = ScriptedProvider(["a", "b"], latency=2.0)
    t0 = anyio.current_time()
    await p.complete(req())
    async with p.stream(req()) as events:
        async for _ in events:
            pass
    assert anyio.current_time() - t0 == pytest.approx(4.0)


async def test_forced_choice_rejected_before_anything_is_sent() -> None:
    p = ScriptedProvider(["never"], rejects_forced_tool_choice=["picky-model"])
    forced = req(tools=[ADD], tool_choice=ToolChoice.tool("add"), model="picky-model")
    with pytest.raises(UnsupportedToolChoiceError) as info:
        await p.complete(forced)
    assert info.value.retryable is False and info.value.model == "picky-model"
    with pytest.raises(UnsupportedToolChoiceError):
        p.stream(forced)
    assert p.requests == [] and p.remaining == 1  # nothing recorded, no item consumed
    # The same request to a model that accepts it goes through.
    assert (await p.complete(req(tools=[ADD], tool_choice=ToolChoice.required(), model="ok"))).content == "never"
    no_forced = ScriptedProvider(["x"], carries_forced_tool_choice=False)
    with pytest.raises(UnsupportedToolChoiceError):
        await no_forced.complete(req(tools=[ADD], tool_choice=ToolChoice.required()))
    assert no_forced.requests == []


def test_forced_tool_choice_reader_needs_an_explicit_yes() -> None:
    class Maybe:
        carries_forced_tool_choice = 1  # truthy but not True

    class Yes:
        carries_forced_tool_choice = True

    class PerModel:
        carries_forced_tool_choice = True

        def supports_forced_tool_choice(self, model: str | None) -> bool:
            return model == "good"

    class Raising:
        carries_forced_tool_choice = True

        def supports_forced_tool_choice(self, model: str | None) -> bool:
            raise RuntimeError

    assert forced_tool_choice_for(Yes(), "m") is True
    assert forced_tool_choice_for(object(), "m") is False
    assert forced_tool_choice_for(Maybe(), "m") is False
    assert forced_tool_choice_for(PerModel(), "good") is True
    assert forced_tool_choice_for(PerModel(), "bad") is False
    assert forced_tool_choice_for(Raising(), "m") is False


async def test_no_model_is_a_request_error() -> None:
    from agentactors.providers.port import resolve_model

    class NoDefault:
        name = "x"
        default_model = None

    with pytest.raises(ProviderError) as info:
        resolve_model(NoDefault(), req())
    assert info.value.kind.value == "request"
