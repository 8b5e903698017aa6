"""The loop's other rules: streaming events, on_token, cancellation mid-request, provider failure,
context budget, nudges, follow-ups, status routing, served_by, usage, the record, and secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.errors import ErrorKind, ProviderError, ToolStatusError
from agentactors.events import InMemoryRecorder, JsonlRecorder, current_sink
from agentactors.loop.nudges import BATCH_NOTE, CONTINUE_NOTE, REPEAT_NOTE
from agentactors.messages import LLMRequest, LLMResponse, Message, ToolCall, Usage
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import ToolContext, tool
from agentactors.tools.results import ToolStatus

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


# --- streaming -----------------------------------------------------------------------------------


async def test_stream_yields_the_typed_events_recorders_receive() -> None:
    provider = ScriptedProvider([ToolCall("c1", "lookup", {"key": "a"}), "The value is value-of-a."])
    rec = InMemoryRecorder()
    agent = Agent(provider, tools=[lookup], recorders=[rec])
    seen = []
    async with agent.stream("what is a?") as run:
        async for event in run:
            seen.append(event)
    result = run.result
    assert result.content == "The value is value-of-a."
    types = [e.type for e in seen]
    assert types[0] == "run.started" and types[-1] == "run.finished"
    for expected in ("step.started", "llm.request", "llm.text_delta", "llm.response", "tools.started",
                     "tools.finished", "step.finished"):
        assert expected in types
    assert types.index("tools.started") < types.index("tools.finished") < types.index("step.finished")
    # The stream and the recorder see the very same events.
    assert [e for e in rec.events if e.run_id == result.run_id] == seen
    assert all(e.run_id == result.run_id for e in seen)
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    assert {e.step for e in seen if e.type.startswith(("llm.", "tools.", "step."))} == {1, 2}
    text = "".join(e.text for e in seen if e.type == "llm.text_delta")
    assert text == "The value is value-of-a."


async def test_on_token_gets_answer_deltas_without_think_blocks() -> None:
    provider = ScriptedProvider(["<think>private musing</think>The visible answer is here."])
    tokens: list[str] = []
    result = await Agent(provider).run("q", on_token=tokens.append)
    assert len(tokens) > 1  # several deltas, delivered as they arrived
    assert "".join(tokens) == "The visible answer is here."
    assert result.content == "The visible answer is here."


async def test_on_token_that_raises_does_not_break_the_run() -> None:
    def bad(_: str) -> None:
        raise RuntimeError("ui gone")

    result = await Agent(ScriptedProvider(["fine answer"])).run("q", on_token=bad)
    assert result.content == "fine answer"


async def test_stream_block_left_early_cancels_the_run() -> None:
    gate = anyio.Event()

    async def slow(request: LLMRequest) -> str:
        await gate.wait()
        return "late"

    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(slow))
        async with agent.stream("q") as run:
            async for event in run:
                if event.type == "llm.request":
                    break
        assert run.result.cancelled
        await rt.wait_idle()
        assert rt.stats().tasks == 0


# --- cancellation mid-request --------------------------------------------------------------------


def _hanging(saw: list[str]) -> Any:
    async def answer(request: LLMRequest) -> str:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            saw.append("cancelled")
            raise
        return "never"

    return answer


@pytest.mark.virtual_time
@pytest.mark.parametrize("streamed", [False, True])
async def test_enclosing_scope_cancels_mid_request(streamed: bool) -> None:
    saw: list[str] = []
    provider = ScriptedProvider(_hanging(saw))
    conversation = [Message.user("hello")]
    async with Runtime() as rt:
        with anyio.move_on_after(3) as scope:
            await Agent(provider).run(conversation, on_token=(lambda t: None) if streamed else None)
        assert scope.cancelled_caught
        await rt.wait_idle()
        assert saw == ["cancelled"]
        assert rt.stats().tasks == 0 and rt.stats().busy == 0
    assert conversation == [Message.user("hello")]


@pytest.mark.virtual_time
async def test_handle_cancel_mid_request() -> None:
    saw: list[str] = []
    provider = ScriptedProvider([ToolCall("c1", "lookup", {"key": "k"}), _hanging(saw)])
    async with Runtime() as rt:
        agent = Agent(provider, tools=[lookup])
        async with agent.stream("q") as run:
            async for event in run:
                if event.type == "llm.request" and event.step == 2:
                    run.cancel()
        result = run.result
        assert result.cancelled
        assert result.messages == (Message.user("q"),)
        assert result.steps == 2
        await rt.wait_idle()
        assert saw == ["cancelled"]
        assert rt.stats().tasks == 0


# --- provider failure ----------------------------------------------------------------------------

VENDOR_BODY = '{"error": {"message": "upstream db shard 7 exploded", "internal": "trace-9f8e"}}'


async def test_provider_failure_is_generation_failed_without_vendor_body() -> None:
    error = ProviderError(
        "HTTP 503: upstream db shard 7 exploded", provider="scripted", kind=ErrorKind.transient, status=503,
        body_excerpt=VENDOR_BODY,
    )
    result = await Agent(ScriptedProvider([error])).run("q")
    assert result.generation_failed
    assert result.error is error
    assert result.content == ""
    assert "exploded" not in result.content and "trace-9f8e" not in result.content
    assert result.steps == 1
    assert result.messages == (Message.user("q"),)


async def test_failure_after_useful_text_keeps_it() -> None:
    error = ProviderError("down", provider="scripted", kind=ErrorKind.transient)
    provider = ScriptedProvider(
        [LLMResponse("Partial findings: a is 1.", (ToolCall("c1", "lookup", {"key": "a"}),)), error]
    )
    result = await Agent(provider, tools=[lookup]).run("q")
    assert not result.generation_failed
    assert result.error is error
    assert result.bounded
    assert result.content == "Partial findings: a is 1."


async def test_a_non_provider_exception_is_classified() -> None:
    result = await Agent(ScriptedProvider([RuntimeError("bug in a decorator")])).run("q")
    assert result.generation_failed
    assert isinstance(result.error, ProviderError)


# --- usage, served_by and the record -------------------------------------------------------------


async def test_usage_is_summed_and_the_record_shows_the_request_that_answered() -> None:
    provider = ScriptedProvider(
        [
            LLMResponse("", (ToolCall("c1", "lookup", {"key": "z"}),), usage=Usage(10, 2)),
            LLMResponse("z is value-of-z", usage=Usage(20, 5, reasoning_tokens=1)),
        ]
    )
    rec = InMemoryRecorder()
    result = await Agent(provider, tools=[lookup], recorders=[rec]).run("z?")
    assert result.usage == Usage(30, 7, reasoning_tokens=1)
    requests = [e.request for e in rec.of_type("llm.request")]
    assert requests == provider.requests  # the exact requests, in order
    answering = requests[-1]
    assert [m.content for m in answering.messages if m.role == "tool"] == ["value-of-z"]
    finished = rec.of_type("run.finished")[0]
    assert finished.served_by == "scripted" and finished.steps == 2
    assert result.served_by == "scripted"


async def test_served_by_names_the_fallback_member() -> None:
    fallback = pytest.importorskip("agentactors.resilience.fallback")
    primary = ScriptedProvider(
        lambda request: ProviderError("overloaded", provider="primary", kind=ErrorKind.transient), name="primary"
    )
    backup = ScriptedProvider(["From the backup."], name="backup")
    rec = InMemoryRecorder()
    agent = Agent(fallback.with_fallback(primary, backup), recorders=[rec])
    result = await agent.run("q")
    assert result.content == "From the backup."
    assert result.served_by == "backup"
    moved = rec.of_type("fallback.moved")
    assert moved and moved[0].run_id == result.run_id  # the decorator's events reach the run's record


async def test_runtime_and_agent_recorders_both_receive_the_run() -> None:
    rt_rec, agent_rec = InMemoryRecorder(), InMemoryRecorder()
    async with Runtime(recorders=[rt_rec]):
        result = await Agent(ScriptedProvider(["hi"]), recorders=[agent_rec]).run("q")
    assert [e.type for e in rt_rec.for_run(result.run_id or "")] == [e.type for e in agent_rec.events]
    assert agent_rec.types[0] == "run.started"


async def test_no_recorder_means_no_sink() -> None:
    sinks: list[object] = []

    @tool
    async def probe() -> str:
        """Probe."""
        sinks.append(current_sink())
        return "ok"

    await Agent(ScriptedProvider([ToolCall("c", "probe", {}), "done"]), tools=[probe]).run("q")
    assert sinks == [None]


# --- context budget ------------------------------------------------------------------------------


async def test_context_budget_trims_old_results_in_requests_only() -> None:
    @tool
    def page(n: int) -> str:
        """A big page."""
        return f"page{n}:" + "p" * 3000

    script: list[Any] = [ToolCall(f"c{i}", "page", {"n": i}) for i in range(5)] + ["summary"]
    provider = ScriptedProvider(script)
    budget = 10_000  # the last 6 messages (3 results, ~9,000 chars) are protected
    result = await Agent(provider, tools=[page], context_budget_chars=budget, system="S", nudges=False).run("read")
    last = provider.requests[-1]
    size = sum(len(m.content) + sum(len(c.arguments_json) + len(c.name) for c in m.tool_calls) for m in last.messages)
    assert size <= budget
    trimmed = [m for m in last.messages if m.role == "tool" and "removed to fit the context budget" in m.content]
    assert trimmed and trimmed[0].tool_call_id == "c0"
    # The run's own conversation keeps every result whole.
    assert all(len(m.content) > 3000 for m in result.messages if m.role == "tool")
    assert last.messages[0].content == "S" and last.messages[1].content == "read"


# --- nudges --------------------------------------------------------------------------------------


async def test_batching_nudge_on_the_second_sequential_read_only_call() -> None:
    provider = ScriptedProvider(
        [ToolCall("c1", "lookup", {"key": "a"}), ToolCall("c2", "lookup", {"key": "b"}), "a and b known."]
    )
    result = await Agent(provider, tools=[lookup]).run("a, b?")
    tools_msgs = [m for m in result.messages if m.role == "tool"]
    assert tools_msgs[0].content == "value-of-a"
    assert tools_msgs[1].content == "value-of-b\n\n" + BATCH_NOTE.format(name="lookup")
    assert provider.requests[2].messages[-1].content.endswith(BATCH_NOTE.format(name="lookup"))


async def test_repeated_call_nudge_and_nudges_off() -> None:
    script = [ToolCall("c1", "lookup", {"key": "a"}), ToolCall("c2", "lookup", {"key": "a"}), "a."]
    on = await Agent(ScriptedProvider(list(script)), tools=[lookup]).run("a?")
    second = [m for m in on.messages if m.role == "tool"][1].content
    assert REPEAT_NOTE.format(name="lookup") in second
    off = await Agent(ScriptedProvider(list(script)), tools=[lookup], nudges=False).run("a?")
    assert [m.content for m in off.messages if m.role == "tool"] == ["value-of-a", "value-of-a"]


async def test_bare_acknowledgment_after_followups_continues_once() -> None:
    provider = ScriptedProvider(
        [
            ToolCall("f1", "suggest_followups", {"suggestions": ["More?", "Why?"]}),
            "Sure, I can help with that!",
            "Paris is the capital of France.",
        ]
    )
    result = await Agent(provider, followups=True).run("capital of France?")
    assert result.content == "Paris is the capital of France."
    assert result.steps == 3
    assert result.followups == ("More?", "Why?")
    assert provider.requests[2].messages[-1].content.endswith(CONTINUE_NOTE)
    assert all("Sure, I can help" not in m.content for m in result.messages)


async def test_bare_acknowledgment_ends_the_turn_without_nudges() -> None:
    provider = ScriptedProvider(
        [ToolCall("f1", "suggest_followups", {"suggestions": ["x"]}), "Sure, I can help with that!"]
    )
    result = await Agent(provider, followups=True, nudges=False).run("q")
    assert result.content == "Sure, I can help with that!"
    assert result.steps == 2


# --- follow-ups ----------------------------------------------------------------------------------


async def test_followups_last_call_wins_and_the_tool_is_offered() -> None:
    provider = ScriptedProvider(
        [
            ToolCall("f1", "suggest_followups", {"suggestions": ["first"]}),
            ToolCall("f2", "suggest_followups", {"suggestions": ["second", "third"]}),
            "Answer.",
        ]
    )
    result = await Agent(provider, followups=True, nudges=False).run("q")
    assert result.followups == ("second", "third")
    assert "suggest_followups" in [t.name for t in provider.requests[0].tools]
    no = await Agent(ScriptedProvider(["x"])).run("q")
    assert no.followups == ()


# --- on_tool_status routing ----------------------------------------------------------------------


async def test_denied_routed_to_end_turn() -> None:
    provider = ScriptedProvider([LLMResponse("Checking.", (ToolCall("c1", "lookup", {"key": "a"}),)), "unused"])
    agent = Agent(
        provider,
        tools=[lookup],
        tool_policy=lambda call, ctx: "lookups are disabled",
        on_tool_status={ToolStatus.denied: "end_turn"},
    )
    result = await agent.run("q")
    assert provider.calls == 1
    assert result.steps == 1
    assert result.content == "Checking."
    assert "lookups are disabled" in result.messages[-1].content
    assert not result.bounded


async def test_error_routed_to_raise() -> None:
    @tool
    def broken() -> str:
        """Broken."""
        raise ValueError("bad")

    provider = ScriptedProvider([ToolCall("c1", "broken", {}), "unused"])
    agent = Agent(provider, tools=[broken], on_tool_status={ToolStatus.error: "raise"})
    with pytest.raises(ToolStatusError) as info:
        await agent.run("q")
    assert info.value.status is ToolStatus.error
    assert info.value.result.name == "broken"
    assert provider.calls == 1


async def test_continue_route_and_invalid_routes_rejected() -> None:
    provider = ScriptedProvider([ToolCall("c1", "nope", {}), "ok"])
    result = await Agent(provider, tools=[lookup], on_tool_status={ToolStatus.invalid: "continue"}).run("q")
    assert result.content == "ok"
    with pytest.raises(ValueError, match="on_tool_status"):
        Agent(provider, on_tool_status={ToolStatus.error: "explode"})


# --- secrets -------------------------------------------------------------------------------------

CANARY = "canary-4f1d9b2e77aa"


async def test_canary_in_tool_context_never_reaches_events_or_records(tmp_path: Path) -> None:
    @tool
    async def use_key(ctx: ToolContext, q: str) -> str:
        """Uses a credential from deps."""
        assert ctx.deps["api_key"] == CANARY
        ctx.emit("custom.used_key", q=q)
        return f"used it for {q}"

    @tool
    async def leak(ctx: ToolContext) -> str:
        """Returns the credential (the only way it may appear)."""
        return str(ctx.deps["api_key"])

    mem = InMemoryRecorder()
    path = tmp_path / "events.jsonl"
    script = [ToolCall("c1", "use_key", {"q": "x"}), "done"]
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[jsonl]):
            agent = Agent(ScriptedProvider(script), tools=[use_key, leak], recorders=[mem])
            result = await agent.run("q", deps={"api_key": CANARY})
            async with agent.stream("q", deps={"api_key": CANARY}) as run:
                streamed = [e async for e in run]
    assert mem.events and streamed
    everything = [json.dumps(e.to_dict(), default=str) + repr(e) for e in mem.events + streamed]
    assert all(CANARY not in text for text in everything)
    assert CANARY not in path.read_text()
    assert CANARY not in repr(result)
    assert any(e.type == "custom.used_key" for e in mem.events)

    # A tool that returns it puts it in its result, as asked.
    returned = await Agent(ScriptedProvider([ToolCall("c9", "leak", {}), "ok"]), tools=[leak]).run(
        "q", deps={"api_key": CANARY}
    )
    assert any(CANARY in m.content for m in returned.messages if m.role == "tool")


async def test_stream_path_failures_end_as_generation_failed() -> None:
    from agentactors.errors import StreamInterruptedError
    from agentactors.providers.scripted import StreamCut

    before = ProviderError("refused", provider="scripted", kind=ErrorKind.transient)
    tokens: list[str] = []
    first = await Agent(ScriptedProvider([before])).run("q", on_token=tokens.append)
    assert first.generation_failed and first.error is before and tokens == []

    cut = StreamCut("Half an ans", ProviderError("connection reset", provider="scripted", kind=ErrorKind.transient))
    second = await Agent(ScriptedProvider([cut])).run("q", on_token=tokens.append)
    assert second.generation_failed
    assert isinstance(second.error, StreamInterruptedError)
    assert second.content == ""
    assert "".join(tokens) == "Half an ans"  # what streamed stays streamed; the result keeps no half answer
    assert second.messages == (Message.user("q"),)


async def test_json_fallback_several_blocks_run_in_parallel_and_in_order() -> None:
    reply = 'Both.\n{"tool":"lookup","arguments":{"key":"a"}}\n{"tool":"lookup","arguments":{"key":"b"}}'
    provider = ScriptedProvider([reply, "a and b."], carries_tools=False)
    result = await Agent(provider, tools=[lookup], nudges=False).run("q")
    assert [c.arguments["key"] for c in result.tool_calls] == ["a", "b"]
    assert [c.id for c in result.tool_calls] == ["s1_1", "s1_2"]
    results_msg = provider.requests[1].messages[-1]
    assert results_msg.role == "user"
    assert results_msg.content.index("value-of-a") < results_msg.content.index("value-of-b")
