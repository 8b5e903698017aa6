"""Each vendor provider against the FakeVendor over loopback: complete and stream, tool-call round trips,
forced tool choices and opaque data replay.  Real clock, real sockets, both backends."""

from __future__ import annotations

import json

import pytest

from agentactors.messages import (
    LLMRequest,
    Message,
    StopReason,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolChoice,
)
from agentactors.testing.fakevendor import FakeReply, FakeToolCall, FakeVendor
from tests.support.providers import MODELS, TIME, WEATHER, WIRES, ask, collect, provider

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("wire", WIRES)]

ANSWER = "The capital of France is Paris, on the Seine."
CALLS = (FakeToolCall("get_weather", {"city": "Paris", "days": 3}), FakeToolCall("get_time", {"city": "Paris"}))


async def test_complete_text(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(FakeReply(text=ANSWER, input_tokens=31, output_tokens=12))
    async with provider(wire, fake_vendor) as p:
        response = await p.complete(ask())
    assert response.content == ANSWER
    assert response.stop_reason is StopReason.end_turn
    assert response.tool_calls == ()
    assert (response.usage.input_tokens, response.usage.output_tokens) == (31, 12)
    assert response.provider == wire
    (record,) = fake_vendor.requests
    assert (record.wire, record.model, record.stream, record.outcome) == (wire, MODELS[wire], False, "ok")
    assert record.api_key_present and record.key_leaks == ()
    assert record.conversation is not None
    assert record.conversation.system == "Be brief."
    assert record.conversation.last_user_text == "What is the capital of France?"


async def test_stream_text(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(FakeReply(text=ANSWER, words_per_chunk=1, input_tokens=31, output_tokens=12))
    async with provider(wire, fake_vendor) as p:
        events, response = await collect(p, ask())
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == len(ANSWER.split()) and "".join(deltas) == ANSWER
    assert response.content == ANSWER and response.stop_reason is StopReason.end_turn
    assert response.usage.input_tokens == 31 and response.usage.output_tokens == 12
    (record,) = fake_vendor.requests
    assert record.stream and record.outcome == "ok" and not record.disconnected


async def test_tool_calls_round_trip(fake_vendor: FakeVendor, wire: str) -> None:
    """Calls come back decoded; their results go back in the wire's shape (FakeVendor checks the pairing)."""
    fake_vendor.script(FakeReply(text="Let me check." if wire != "gemini" else "", tool_calls=CALLS))
    request = ask("Weather and time in Paris?", tools=[WEATHER, TIME])
    async with provider(wire, fake_vendor) as p:
        response = await p.complete(request)
        assert response.stop_reason is StopReason.tool_use
        assert [(c.name, c.arguments) for c in response.tool_calls] == [
            ("get_weather", {"city": "Paris", "days": 3}), ("get_time", {"city": "Paris"})]
        assert all(c.arguments_error is None for c in response.tool_calls)
        assert len({c.id for c in response.tool_calls}) == 2 and all(response.tool_calls[i].id for i in (0, 1))
        followup = LLMRequest(
            [*request.messages, response.to_message(),
             Message.tool(response.tool_calls[0].id, "sunny, 21 C", name="get_weather"),
             Message.tool(response.tool_calls[1].id, "14:05", name="get_time")],
            tools=request.tools, max_tokens=256,
        )
        final = await p.complete(followup)
    _, second = fake_vendor.requests
    assert second.outcome == "ok", second  # a strict vendor accepted the results
    assert second.conversation is not None
    assert [(r.name, r.content) for r in second.conversation.tool_results] == [
        ("get_weather", "sunny, 21 C"), ("get_time", "14:05")]
    assert [c.name for c in second.conversation.tool_calls] == ["get_weather", "get_time"]
    assert "get_weather: sunny, 21 C" in final.content and "get_time: 14:05" in final.content


async def test_streamed_tool_calls(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(FakeReply(tool_calls=CALLS))
    async with provider(wire, fake_vendor) as p:
        events, response = await collect(p, ask("Weather and time?", tools=[WEATHER, TIME]))
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [s.name for s in starts] == ["get_weather", "get_time"]
    assert [e.call.arguments for e in ends] == [{"city": "Paris", "days": 3}, {"city": "Paris"}]
    for end in ends:
        fragments = "".join(e.arguments_fragment for e in events
                            if isinstance(e, ToolCallDelta) and e.index == end.index)
        if fragments:  # Gemini sends calls whole; the others stream fragments that add up to the arguments
            assert json.loads(fragments) == end.call.arguments
    assert [c.name for c in response.tool_calls] == ["get_weather", "get_time"]
    assert response.stop_reason is StopReason.tool_use


async def test_truncated_arguments_are_marked_not_emptied(fake_vendor: FakeVendor, wire: str) -> None:
    if wire == "gemini":
        pytest.skip("Gemini sends arguments as a whole object; there is no fragment to cut")
    fake_vendor.script(FakeReply(tool_calls=FakeToolCall("get_weather", '{"city": "Par'), stop="max_tokens"))
    async with provider(wire, fake_vendor) as p:
        _, response = await collect(p, ask(tools=[WEATHER]))
    (call,) = response.tool_calls
    assert call.arguments_error == "unparseable" and call.arguments == {}
    assert response.stop_reason is StopReason.max_tokens


async def test_auto_tools_solve_a_two_tool_task(wire: str) -> None:
    """The unscripted auto-tool mode drives a whole tool loop: two calls, then an answer quoting both."""
    async with FakeVendor(auto_tools=True) as fv, provider(wire, fv) as p:
        messages = [Message.user("Weather and local time in Paris?")]
        called = []
        for _ in range(4):
            response = await p.complete(LLMRequest(messages, tools=(WEATHER, TIME), max_tokens=256))
            messages.append(response.to_message())
            if not response.tool_calls:
                break
            for call in response.tool_calls:
                called.append((call.name, call.arguments))
                messages.append(Message.tool(call.id, f"{call.name} says ok", name=call.name))
    assert called == [("get_weather", {"city": "Paris"}), ("get_time", {"city": "example"})]
    assert "get_weather says ok" in response.content and "get_time says ok" in response.content
    assert [r.outcome for r in fv.requests] == ["ok", "ok", "ok"]


async def test_forced_tool_choice_reaches_the_vendor(wire: str) -> None:
    async with FakeVendor(auto_tools=True) as fv, provider(wire, fv) as p:
        response = await p.complete(ask(tools=[WEATHER, TIME], tool_choice=ToolChoice.tool("get_time")))
        required = await p.complete(ask(tools=[WEATHER, TIME], tool_choice=ToolChoice.required()))
        none = await p.complete(ask(tools=[WEATHER, TIME], tool_choice=ToolChoice.none()))
    assert [c.name for c in response.tool_calls] == ["get_time"]
    assert required.tool_calls and none.tool_calls == ()
    seen = [(r.conversation.tool_choice, r.conversation.tool_choice_name) for r in fv.requests if r.conversation]
    assert seen == [("tool", "get_time"), ("required", None), ("none", None)]


async def test_opaque_reasoning_data_is_replayed(fake_vendor: FakeVendor, wire: str) -> None:
    """Thinking blocks (Anthropic) and thought signatures (Gemini) come back on the next request."""
    fake_vendor.script(FakeReply(reasoning="I should look it up.", tool_calls=CALLS[:1]), "done")
    request = ask(tools=[WEATHER])
    async with provider(wire, fake_vendor) as p:
        response = await p.complete(request)
        assert response.reasoning == "I should look it up."
        followup = LLMRequest([*request.messages, response.to_message(),
                               Message.tool(response.tool_calls[0].id, "sunny", name="get_weather")],
                              tools=request.tools, max_tokens=256)
        await p.complete(followup)
    _, second = fake_vendor.requests
    assert second.outcome == "ok"
    if wire == "anthropic":
        assistant = second.body["messages"][-2]
        thinking = [b for b in assistant["content"] if b["type"] == "thinking"]
        assert thinking and thinking[0]["signature"]  # replayed in place, before the tool_use
        assert assistant["content"][0]["type"] == "thinking"
    elif wire == "gemini":
        model_turn = [c for c in second.body["contents"] if c["role"] == "model"][-1]
        part = next(p for p in model_turn["parts"] if "functionCall" in p)
        assert part.get("thoughtSignature") or part.get("thought_signature")
