"""Duplicate call ids are resolved before anything runs: a reused id becomes a fresh one everywhere (docs/loop.md)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.events import InMemoryRecorder
from agentactors.loop.call_ids import unique_ids
from agentactors.messages import LLMRequest, LLMResponse, Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools import tool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def _ids(message: Message) -> list[str]:
    return [c.id for c in message.tool_calls]


async def test_two_calls_with_one_id_run_under_two_ids_and_the_next_request_pairs_them() -> None:
    seen: list[int] = []

    @tool
    async def charge(amount: int) -> str:
        seen.append(amount)
        return f"charged {amount}"

    provider = ScriptedProvider(
        [LLMResponse("", (ToolCall("call_1", "charge", {"amount": 5}), ToolCall("call_1", "charge", {"amount": 7}))),
         "done"]
    )
    recorder = InMemoryRecorder()
    result = await Agent(provider, tools=[charge], recorders=[recorder]).run("pay")
    assert sorted(seen) == [5, 7]  # each call ran once, under its own id
    follow_up = provider.requests[1].messages
    assistant = next(m for m in follow_up if m.role == "assistant")
    results = [m for m in follow_up if m.role == "tool"]
    assert _ids(assistant) == ["call_1", "call_1_2"]
    assert [(m.tool_call_id, m.content) for m in results] == [("call_1", "charged 5"), ("call_1_2", "charged 7")]
    assert [c.id for c in result.tool_calls] == ["call_1", "call_1_2"]
    (event,) = recorder.of_type("tools.duplicate_call_id")
    assert (event.call_id, event.renamed_to, event.name) == ("call_1", "call_1_2", "charge")
    finished = {e.call_id for e in recorder.of_type("tools.finished")}
    assert finished == {"call_1", "call_1_2"}


async def test_an_id_already_in_the_conversation_is_renamed_too() -> None:
    @tool
    async def ping(n: int) -> str:
        return f"pong {n}"

    def model(request: LLMRequest) -> Any:
        steps = sum(1 for m in request.messages if m.role == "assistant")
        if steps < 4:  # the history holds one assistant turn: three steps of calls
            return ToolCall("call_0", "ping", {"n": steps})  # a server that numbers calls per response
        return "done"

    history = (
        Message.user("earlier"),
        Message.assistant("", (ToolCall("call_0_2", "ping", {"n": -1}),)),
        Message.tool("call_0_2", "pong -1", "ping"),
        Message.user("again"),
    )
    provider = ScriptedProvider(model)
    async with Runtime():
        result = await Agent(provider, tools=[ping]).run(history)
    assert result.content == "done"
    ids = [c.id for m in result.messages for c in m.tool_calls]
    assert ids == ["call_0_2", "call_0", "call_0_3", "call_0_4"]
    answered = [m.tool_call_id for m in result.messages if m.role == "tool"]
    assert answered == ids


async def test_fresh_ids_stay_within_the_vendors_length_limit() -> None:
    long_id = "x" * 40

    @tool
    async def noop() -> str:
        return "ok"

    provider = ScriptedProvider([LLMResponse("", (ToolCall(long_id, "noop"), ToolCall(long_id, "noop"))), "done"])
    result = await Agent(provider, tools=[noop]).run("go")
    first, second = (c.id for c in result.tool_calls)
    assert first == long_id and second == "x" * 38 + "_2" and len(second) == 40


async def test_calls_with_unique_ids_are_left_alone() -> None:
    @tool
    async def noop() -> str:
        return "ok"

    calls = (ToolCall("a", "noop"), ToolCall("b", "noop"))
    provider = ScriptedProvider([LLMResponse("", calls), "done"])
    result = await Agent(provider, tools=[noop]).run("go")
    assert result.tool_calls == calls


async def test_an_empty_call_id_gets_a_fresh_one_and_its_result_pairs_with_it() -> None:
    # Some OpenAI-compatible servers send calls without ids: an empty id went on the wire, which vendors refuse.
    @tool
    async def noop() -> str:
        return "ok"

    provider = ScriptedProvider([LLMResponse("", (ToolCall("", "noop"),)), "done"])
    recorder = InMemoryRecorder()
    result = await Agent(provider, tools=[noop], recorders=[recorder]).run("go")
    (call,) = result.tool_calls
    assert call.id and len(call.id) <= 40
    follow_up = provider.requests[1].messages
    assert _ids(next(m for m in follow_up if m.role == "assistant")) == [call.id]
    assert [m.tool_call_id for m in follow_up if m.role == "tool"] == [call.id]
    (event,) = recorder.of_type("tools.invalid_call_id")
    assert event.data["renamed_to"] == call.id and event.data["length"] == 0


async def test_a_call_id_over_the_vendors_length_limit_gets_a_fresh_one() -> None:
    @tool
    async def noop() -> str:
        return "ok"

    huge = "id" * 50_000
    provider = ScriptedProvider([LLMResponse("", (ToolCall(huge, "noop"), ToolCall("b", "noop"))), "done"])
    recorder = InMemoryRecorder()
    result = await Agent(provider, tools=[noop], recorders=[recorder]).run("go")
    first, second = (c.id for c in result.tool_calls)
    assert len(first) <= 40 and first.startswith("idid") and second == "b"
    assert [m.tool_call_id for m in provider.requests[1].messages if m.role == "tool"] == [first, "b"]
    (event,) = recorder.of_type("tools.invalid_call_id")
    assert event.data["length"] == 100_000 and len(event.data["call_id"]) <= 41  # never the whole id in a record


def test_many_calls_sharing_one_id_are_renamed_in_linear_time() -> None:
    # Each rename counted up from _2 again past every id given before: 6,000 calls took ~4 s.
    calls = [ToolCall("x", "t") for _ in range(6_000)]
    started = time.process_time()
    renamed = unique_ids(calls, set())
    assert time.process_time() - started < 1.0
    assert [c.id for c in renamed[:3]] == ["x", "x_2", "x_3"]
    assert len({c.id for c in renamed}) == len(calls)


def test_a_fresh_id_is_never_one_already_taken() -> None:
    taken = {"x", "x_2", "x_4"}
    renamed = unique_ids([ToolCall("x", "t"), ToolCall("x", "t"), ToolCall("x_3", "t")], taken)
    assert [c.id for c in renamed] == ["x_3", "x_5", "x_3_2"]
