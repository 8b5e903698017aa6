"""``explain`` shows EXACTLY the request the provider received, or says where it cannot.

Each test runs an agent on a :class:`ScriptedProvider` (which keeps every request it received:
``provider.requests``) and compares the last one with ``explain(...).request`` — live and from the JSONL record —
for the cases where the request sent differs from the run's conversation or from the request the loop built: the
JSON tool transport, a context budget, a hedge or a fallback member with its own model, settings, redaction, a
delegated run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    CachePolicy,
    Explanation,
    InMemoryRecorder,
    JsonlRecorder,
    LLMRequest,
    LLMResponse,
    ModelSettings,
    NativeOutput,
    ProviderError,
    Runtime,
    ScriptedProvider,
    StopReason,
    ToolCall,
    ToolStatus,
    Usage,
    explain,
    tool,
    with_fallback,
    with_hedge,
    with_pool,
)
from agentactors.loop.result import RunResult

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool
async def lookup(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 21 °C, sunny; " + "details " * 40


async def recorded(agent: Agent[Any], prompt: str, path: Path) -> tuple[RunResult[Any], Explanation, Explanation]:
    """Run ``agent`` on ``prompt``, recorded in memory and in a JSONL file: its result and both explanations."""
    memory = InMemoryRecorder()
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[memory, jsonl]):
            result = await agent.run(prompt)
    assert result.run_id is not None
    return result, explain(result, memory.events), Explanation.from_jsonl(path, result.run_id)


# --- the JSON tool transport ---------------------------------------------------------------------------------


async def test_json_transport_the_tool_results_the_request_rendered_are_told(tmp_path: Path) -> None:
    calls = '{"tool": "lookup", "arguments": {"city": "Lisbon"}}\n{"tool": "lookup", "arguments": {"city": "Porto"}}'
    provider = ScriptedProvider([calls, "done"], carries_tools=False)
    agent = Agent(provider, tools=[lookup], system="Be brief.")
    result, live, recorded_ = await recorded(agent, "weather?", tmp_path / "events.jsonl")
    sent = provider.requests[-1]
    assert [m.role for m in sent.messages] == ["system", "user", "assistant", "user"]  # results as a text block
    for explanation in (live, recorded_):
        assert explanation.request == sent  # the rendered blocks, not the conversation
        assert explanation.native_tools is False
        # The results the answering request held (as text blocks in a user message) are its tool results.
        results = explanation.tool_results
        assert [(r.name, r.status) for r in results] == [("lookup", ToolStatus.ok), ("lookup", ToolStatus.ok)]
        assert [r.call_id for r in results] == [c.id for c in result.tool_calls]
        assert results[0].content == result.messages[2].content  # what the tool returned, as the model read it
        assert results[1].content == result.messages[3].content
        assert results[0].size_chars == len(results[0].content) and not results[0].truncated
        text = str(explanation)
        assert "tools offered: none natively (the JSON tool transport: the system message lists the tools)" in text
        assert "lookup [ok," in text


# --- a context budget ----------------------------------------------------------------------------------------


@tool
async def page(n: int) -> str:
    """One page of a long document."""
    return f"page {n}: " + "words " * 500


async def test_a_trimmed_request_is_the_one_told(tmp_path: Path) -> None:
    provider = ScriptedProvider([*(ToolCall(f"c{n}", "page", {"n": n}) for n in range(4)), "done"])
    agent = Agent(provider, tools=[page], context_budget_chars=10_000)
    result, live, recorded_ = await recorded(agent, "read it", tmp_path / "events.jsonl")
    sent = provider.requests[-1]
    assert sent.messages != tuple(result.messages[: len(sent.messages)]), "the budget trimmed the request"
    for explanation in (live, recorded_):
        assert explanation.request == sent
        # The results it saw are the ones it was sent: the oldest trimmed (told so), its true size kept.
        results = explanation.tool_results
        assert [r.content for r in results] == [m.content for m in sent.messages if m.role == "tool"]
        first = results[0]
        assert first.truncated and first.original_chars == len(result.messages[2].content) > first.size_chars
        assert first.size_chars == len(first.content)
        assert not results[1].truncated
        assert f"page [ok, {first.original_chars:,} chars, truncated to {first.size_chars:,}]" in str(explanation)


# --- settings, response formats, redaction -------------------------------------------------------------------


async def test_every_request_setting_is_rebuilt_from_the_record(tmp_path: Path) -> None:
    provider = ScriptedProvider(["ok"])
    settings = ModelSettings(
        temperature=0.3, top_p=0.9, max_tokens=50, stop=("END",), seed=7, parallel_tool_calls=False,
        reasoning_effort="low", thinking_budget=1024, cache=CachePolicy(tools=False, retention="extended"),
        timeout=30.0,
    )
    _, live, recorded_ = await recorded(Agent(provider, tools=[lookup], settings=settings), "hi", tmp_path / "e.jsonl")
    assert live.request == provider.requests[-1]
    assert recorded_.request == provider.requests[-1]
    assert recorded_.notes == ()


async def test_a_response_format_is_rebuilt_from_the_record(tmp_path: Path) -> None:
    from pydantic import BaseModel

    class Count(BaseModel):
        n: int

    provider = ScriptedProvider(['{"n": "many"}', '{"n": 3}'])  # the first does not validate: asked again
    result, live, recorded_ = await recorded(
        Agent(provider, output_type=NativeOutput(Count)), "how many?", tmp_path / "e.jsonl"
    )
    assert result.output == Count(n=3) and len(provider.requests) == 2
    assert live.request == provider.requests[-1]
    assert recorded_.request == provider.requests[-1]
    assert recorded_.answer == '{"n": 3}'


async def test_a_redacted_vendor_option_is_noted_not_shown_silently(tmp_path: Path) -> None:
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    provider = ScriptedProvider(["ok"])
    settings = ModelSettings(extra={"openai": {"user": "u1", "api_key": secret}})
    _, live, recorded_ = await recorded(Agent(provider, settings=settings), "hi", tmp_path / "e.jsonl")
    assert live.request == provider.requests[-1]  # the live events hold the request itself
    assert secret not in (tmp_path / "e.jsonl").read_text()
    assert recorded_.request is not None
    assert recorded_.request.vendor_options == {"openai": {"user": "u1", "api_key": "[REDACTED]"}}
    assert any("redacted" in n and "vendor_options" in n for n in recorded_.request_notes), recorded_.request_notes
    assert "note: the record redacted credentials" in str(recorded_)
    assert secret not in str(recorded_)


async def test_a_typed_answer_through_the_output_tool_is_the_answer_told(tmp_path: Path) -> None:
    from pydantic import BaseModel

    class Count(BaseModel):
        n: int

    tries = [ToolCall("o1", "final_result", {"n": "many"}), ToolCall("o2", "final_result", {"n": 3})]
    provider = ScriptedProvider(tries)
    result, live, recorded_ = await recorded(Agent(provider, output_type=Count), "how many?", tmp_path / "e.jsonl")
    assert result.output == Count(n=3) and result.content == ""
    for explanation in (live, recorded_):
        assert explanation.request == provider.requests[-1]
        # The request that produced the answer holds the first try, refused; the answer is the second call.
        assert [(r.call_id, r.status) for r in explanation.tool_results] == [("o1", ToolStatus.error)]
        assert explanation.answer == 'final_result({"n":3})'


# --- a hedge and a fallback member with a model of its own ---------------------------------------------------


async def test_a_hedge_that_won_is_told_with_the_model_it_was_sent(tmp_path: Path) -> None:
    async def slow(request: LLMRequest) -> LLMResponse:
        await anyio.sleep(5)
        return LLMResponse("slow", (), StopReason.end_turn, Usage(1, 1))

    first = ScriptedProvider(slow, name="slow", model="m-slow")
    second = ScriptedProvider(["fast"], name="fast", model="m-fast")
    agent = Agent(with_hedge(first, after=0.1, to=second, max_extra=1.0), model="m-slow")
    _, live, recorded_ = await recorded(agent, "hi", tmp_path / "e.jsonl")
    assert second.requests[-1].model == "m-fast"
    for explanation in (live, recorded_):
        assert explanation.served_by == "fast"
        assert explanation.request == second.requests[-1]  # the hedge's copy: its target's own model
        assert explanation.path[0].hedges == ("fast (model m-fast) after 0.10s, won",)
        assert "hedged: fast (model m-fast) after 0.10s, won" in str(explanation)


async def test_a_hedge_whose_copys_model_the_record_cannot_tell_is_noted(tmp_path: Path) -> None:
    # Asked for no model, a hedge to the same member (sent the request as is) and one to another member (sent it
    # for that member's own model) both name the model called: the request is the chain's, and a note says so.
    calls: list[LLMRequest] = []

    async def first_slow_then_fast(request: LLMRequest) -> LLMResponse:
        calls.append(request)
        if len(calls) == 1:
            await anyio.sleep(5)
        return LLMResponse(f"copy {len(calls)}", (), StopReason.end_turn, Usage(1, 1))

    provider = ScriptedProvider(first_slow_then_fast, name="same", model="m")
    agent = Agent(with_hedge(provider, after=0.1, max_extra=1.0))
    _, live, recorded_ = await recorded(agent, "hi", tmp_path / "e.jsonl")
    assert provider.requests[-1].model is None
    for explanation in (live, recorded_):
        assert explanation.request == provider.requests[-1]
        assert any("hedge to same was for model m" in n for n in explanation.request_notes), explanation.request_notes


async def test_a_fallback_member_with_its_own_model_is_told_with_it(tmp_path: Path) -> None:
    def down(request: LLMRequest) -> Any:
        return ProviderError("down", provider="p1", kind="transient", status=503)

    p1 = ScriptedProvider(down, name="p1", model="m1")
    p2 = ScriptedProvider(["ok"], name="p2", model="m2")
    _, live, recorded_ = await recorded(Agent(with_fallback(p1, p2)), "hi", tmp_path / "e.jsonl")
    assert p2.requests[-1].model == "m2"
    for explanation in (live, recorded_):
        # fallback.moved names the model the chain asked of p2 (to_model): the request told is p2's.
        assert explanation.request == p2.requests[-1]
        assert not explanation.request_notes, explanation.request_notes


async def test_a_pool_member_after_a_failover_is_told_with_its_model(tmp_path: Path) -> None:
    def down(request: LLMRequest) -> Any:
        return ProviderError("down", provider="p1", kind="transient", status=503)

    p1 = ScriptedProvider(down, name="p1", model="m1")
    p2 = ScriptedProvider(["ok"], name="p2", model="m2")
    _, live, recorded_ = await recorded(Agent(with_pool(p1, p2, strategy="round_robin")), "hi", tmp_path / "e.jsonl")
    for explanation in (live, recorded_):
        assert explanation.request == p2.requests[-1], (explanation.request, p2.requests[-1])


# --- a delegated run -----------------------------------------------------------------------------------------


async def test_a_delegated_run_is_named_by_its_run_id(tmp_path: Path) -> None:
    child = Agent(ScriptedProvider(["child says"]), name="child")
    provider = ScriptedProvider([ToolCall("d1", "child", {"input": "q"}), "parent done"])
    parent = Agent(provider, tools=[child.as_tool()], name="parent")
    result, live, recorded_ = await recorded(parent, "ask the child", tmp_path / "e.jsonl")
    (child_result,) = result.children
    for explanation in (live, recorded_):
        assert explanation.request == provider.requests[-1]
        assert explanation.children == {"d1": (child_result.run_id,)}
        assert f"child [ok, 10 chars]: child says (delegated run {child_result.run_id})" in str(explanation)


# --- a streamed run (already exact: kept so) ----------------------------------------------------------------


async def test_a_streamed_run_tells_the_request_it_streamed_from(tmp_path: Path) -> None:
    provider = ScriptedProvider([ToolCall("c1", "lookup", {"city": "Lisbon"}), "streamed answer here"])
    memory = InMemoryRecorder()
    path = tmp_path / "e.jsonl"
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[memory, jsonl]):
            async with Agent(provider, tools=[lookup]).stream("weather?") as run:
                async for _ in run:
                    pass
    result = run.result
    assert result.run_id is not None
    for explanation in (explain(result, memory.events), Explanation.from_jsonl(path, result.run_id)):
        assert explanation.streamed and explanation.request == provider.requests[-1]
        assert [r.call_id for r in explanation.tool_results] == ["c1"]
