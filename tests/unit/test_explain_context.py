"""``explain`` tells the whole context of the answering request: its settings, what a context budget left out of it,
and whether it was streamed — from the live events and from the JSONL record alike.

Each test runs an agent on a :class:`ScriptedProvider`, recorded in memory and in a JSONL file, and checks both
explanations (their lines are the same, but for the notes a record adds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from agentactors import (
    Agent,
    Explanation,
    InMemoryRecorder,
    JsonlRecorder,
    ModelSettings,
    NativeOutput,
    Runtime,
    ScriptedProvider,
    ToolCall,
    ToolChoice,
    explain,
    tool,
)
from agentactors.events import Event
from agentactors.loop.result import RunResult
from agentactors.otel import OTelRecorder

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


@tool
async def page(n: int) -> str:
    """One page of a long document."""
    return f"page {n}: " + "words " * 500


@tool
async def lookup(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 21 °C, sunny"


class Count(BaseModel):
    n: int


async def both(
    agent: Agent[Any], prompt: str, path: Path, *, stream: bool = False, recorders: tuple[Any, ...] = ()
) -> tuple[RunResult[Any], Explanation, Explanation]:
    """Run ``agent`` on ``prompt`` (through ``agent.stream`` with ``stream``), recorded in memory and in a JSONL
    file: its result, its explanation from the live events and the one from the record."""
    memory = InMemoryRecorder()
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[memory, jsonl, *recorders]):
            if stream:
                async with agent.stream(prompt) as run:
                    async for _ in run:
                        pass
                result = run.result
            else:
                result = await agent.run(prompt)
    assert result.run_id is not None
    live = explain(result, memory.events)
    recorded = Explanation.from_jsonl(path, result.run_id)
    return result, live, recorded


def same_lines(live: Explanation, recorded: Explanation) -> list[str]:
    """The lines both explanations give (asserted equal), the record's own notes left out."""
    own = {f"    note: {n}" for n in recorded.request_notes if n not in live.request_notes}
    own |= {f"  note: {n}" for n in recorded.notes if n not in live.notes}
    lines = [line for line in recorded.lines() if line not in own]
    assert live.lines() == lines
    return lines


def line_after(lines: list[str], start: str, prefix: str) -> str:
    """The first line starting with ``prefix`` after the one starting with ``start``."""
    at = next(i for i, line in enumerate(lines) if line.startswith(start))
    return next(line for line in lines[at:] if line.startswith(prefix))


# --- 1. the settings the answering request was sent with -------------------------------------------------------


async def test_the_settings_the_answer_was_asked_with_are_told_never_a_credential(tmp_path: Path) -> None:
    settings = ModelSettings(
        temperature=0.3, top_p=0.9, max_tokens=50, stop=("END",), seed=7, reasoning_effort="low",
        thinking_budget=1024, extra={"openai": {"user": "u1", "api_key": SECRET}},
    )
    provider = ScriptedProvider(["ok"])
    agent = Agent(provider, model="m-1", tools=[lookup], settings=settings, tool_choice=ToolChoice("none"))
    _, live, recorded = await both(agent, "hi", tmp_path / "e.jsonl")
    lines = same_lines(live, recorded)
    line = line_after(lines, "  the request that produced the answer", "    settings: ")
    assert line == (
        '    settings: model m-1, temperature 0.3, max_tokens 50, top_p 0.9, stop ["END"], seed 7, '
        "tool_choice none, reasoning_effort low, thinking_budget 1024, vendor_options openai(user, api_key) "
        "(values not shown)"
    )
    for explanation in (live, recorded):
        assert SECRET not in str(explanation)
        assert "u1" not in line  # a vendor option's value is never shown, a credential or not


async def test_a_response_format_is_told_by_its_name_and_unset_settings_not_at_all(tmp_path: Path) -> None:
    provider = ScriptedProvider(['{"n": 3}'])
    _, live, recorded = await both(Agent(provider, output_type=NativeOutput(Count)), "how many?", tmp_path / "e.jsonl")
    line = line_after(same_lines(live, recorded), "  the request that produced the answer", "    settings: ")
    assert line == "    settings: response_format Count"


async def test_a_request_with_no_setting_says_so(tmp_path: Path) -> None:
    _, live, recorded = await both(Agent(ScriptedProvider(["ok"])), "hi", tmp_path / "e.jsonl")
    line = line_after(same_lines(live, recorded), "  the request that produced the answer", "    settings: ")
    assert line == "    settings: none set (the provider's defaults)"


# --- 2. what a context budget left out of the answering request -------------------------------------------------


async def test_a_context_budget_that_dropped_and_trimmed_messages_is_told_at_the_request(tmp_path: Path) -> None:
    # Eight pages of 3,008 chars: the last three are kept whole, the older ones trimmed, and the oldest three
    # exchanges (a call and its result each) dropped besides.
    provider = ScriptedProvider([*(ToolCall(f"c{n}", "page", {"n": n}) for n in range(8)), "done"])
    agent = Agent(provider, tools=[page], context_budget_chars=9_800, max_steps=20)
    result, live, recorded = await both(agent, "read it", tmp_path / "e.jsonl")
    sent = provider.requests[-1]
    given = len(result.messages) - 1  # (the answer is not in the request)
    dropped = given - len(sent.messages)
    sent_ids = {m.tool_call_id for m in sent.messages if m.role == "tool"}
    gone = [c.id for c in result.tool_calls if c.id not in sent_ids]
    trimmed = [r for r in live.tool_results if r.truncated]
    assert (dropped, gone, len(trimmed)) == (6, ["c0", "c1", "c2"], 2)
    lines = same_lines(live, recorded)
    line = line_after(lines, "  the request that produced the answer", "    context budget: ")
    assert line == (
        f"    context budget: 9,800 chars: 6 earlier messages of {given} dropped (the results of page c0, page c1, "
        "page c2 among them), 2 tool results trimmed (truncated below)"
    )
    for explanation in (live, recorded):
        assert explanation.context_fit == {"chars": 9_800, "messages": given, "dropped": 6, "trimmed": 2}
        assert explanation.dropped_results == ("page c0", "page c1", "page c2")
    # Each step the budget fitted is on the timeline: a wrong answer of an earlier step is traced as well.
    told = f"step 9: the context budget (9,800 chars) dropped 6 earlier messages of {given} and trimmed 2 tool results"
    assert told in "\n".join(lines)


async def test_a_request_within_its_budget_says_nothing_of_it(tmp_path: Path) -> None:
    provider = ScriptedProvider([ToolCall("c1", "lookup", {"city": "Lisbon"}), "done"])
    _, live, recorded = await both(Agent(provider, tools=[lookup], context_budget_chars=100_000), "hi",
                                   tmp_path / "e.jsonl")
    assert not any("context budget" in line for line in same_lines(live, recorded))


async def test_the_loop_records_no_budget_event_for_a_run_without_one(tmp_path: Path) -> None:
    memory = InMemoryRecorder()
    provider = ScriptedProvider([*(ToolCall(f"c{n}", "page", {"n": n}) for n in range(6)), "done"])
    async with Runtime(recorders=[memory]):
        await Agent(provider, tools=[page]).run("read it")
    assert not [e for e in memory.events if e.type.startswith("context.")]


# --- 3. a streamed call is told as one, even one that streamed no text ------------------------------------------


def chat_spans(exporter: InMemorySpanExporter) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]


async def test_a_streamed_step_of_only_tool_calls_is_told_as_streamed(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    provider = ScriptedProvider([ToolCall("o1", "final_result", {"n": 3})])  # the answer: a call, no text
    result, live, recorded = await both(Agent(provider, output_type=Count), "how many?", tmp_path / "e.jsonl",
                                        stream=True, recorders=(OTelRecorder(tracer),))
    assert result.output == Count(n=3)
    for explanation in (live, recorded):
        assert explanation.streamed
    lines = same_lines(live, recorded)
    assert lines[0].startswith(f"run {result.run_id} (agent, streamed, 1 model calls")
    (span,) = chat_spans(exporter)
    assert span.attributes is not None and span.attributes.get("gen_ai.request.stream") is True


async def test_every_streamed_call_has_its_span_say_so_and_no_complete_call_does(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    otel = OTelRecorder(tracer)
    provider = ScriptedProvider([ToolCall("c1", "lookup", {"city": "Lisbon"}), "sunny"])
    await both(Agent(provider, tools=[lookup]), "weather?", tmp_path / "s.jsonl", stream=True, recorders=(otel,))
    spans = chat_spans(exporter)
    assert len(spans) == 2
    assert [s.attributes.get("gen_ai.request.stream") for s in spans] == [True, True]
    exporter.clear()
    provider = ScriptedProvider([ToolCall("c1", "lookup", {"city": "Lisbon"}), "sunny"])
    _, live, recorded = await both(Agent(provider, tools=[lookup]), "weather?", tmp_path / "c.jsonl",
                                   recorders=(otel,))
    assert [s.attributes.get("gen_ai.request.stream") for s in chat_spans(exporter)] == [None, None]
    assert ", complete(), " in same_lines(live, recorded)[0]


async def test_a_record_from_before_the_stream_flag_still_reads_its_text_deltas(tmp_path: Path) -> None:
    provider = ScriptedProvider(["streamed answer"])
    memory = InMemoryRecorder()
    async with Runtime(recorders=[memory]):
        async with Agent(provider).stream("hi") as run:
            async for _ in run:
                pass
    old: list[Event] = [
        e if e.type != "run.started" else Event(e.type, e.run_id, e.seq, e.time, e.step,
                                                {k: v for k, v in e.data.items() if k != "stream"})
        for e in memory.events
    ]
    assert explain(run.result, old).streamed
