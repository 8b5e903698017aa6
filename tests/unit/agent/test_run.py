"""Streams people can use: typed events for isinstance filters, run.text_stream(), and abandoned streams cancelled."""

from __future__ import annotations

import gc
import itertools
import json
import pickle
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import attrs
import pytest

import agentactors
from agentactors import (
    Agent,
    Event,
    InMemoryRecorder,
    JsonlRecorder,
    LLMRequest,
    Runtime,
    ScriptedProvider,
    ToolCall,
    tool,
)
from agentactors.events import (
    EventSink,
    LLMEvent,
    LLMRequested,
    LLMResponded,
    LLMTextDelta,
    RetryEvent,
    RetryScheduled,
    RunEvent,
    RunFinished,
    RunStarted,
    StepFinished,
    ToolEvent,
    ToolFinished,
    ToolStarted,
    event_class,
    event_from_dict,
    make_event,
    read_jsonl,
    use_sink,
)
from agentactors.messages import StreamEvent
from agentactors.providers.port import StreamContext
from agentactors.testing import FakeReply, FakeVendor

pytestmark = pytest.mark.anyio


@tool
async def lookup(city: str) -> str:
    """Weather for a city."""
    return f"{city}: 21 °C"


def weather_agent() -> Agent:
    return Agent(
        ScriptedProvider([[ToolCall("c1", "lookup", {"city": "Lisbon"})], "It is 21 °C in Lisbon today."]),
        tools=[lookup],
    )


# -- typed events -------------------------------------------------------------------------------------


async def test_emitted_events_are_instances_of_their_type_and_family() -> None:
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]):
        await weather_agent().run("weather?")
    by_type = {e.type: e for e in recorder.events}
    assert isinstance(by_type["run.started"], RunStarted) and isinstance(by_type["run.started"], RunEvent)
    assert isinstance(by_type["run.finished"], RunFinished)
    assert isinstance(by_type["llm.request"], LLMRequested) and isinstance(by_type["llm.request"], LLMEvent)
    assert isinstance(by_type["llm.response"], LLMResponded)
    assert isinstance(by_type["tools.started"], ToolStarted) and isinstance(by_type["tools.finished"], ToolFinished)
    assert isinstance(by_type["step.finished"], StepFinished)
    assert all(isinstance(e, Event) for e in recorder.events)
    # the payload and the record are what they were
    finished = by_type["tools.finished"]
    assert finished.name == "lookup" and finished.data["name"] == "lookup" and finished.get("status") is not None
    assert finished.to_dict()["type"] == "tools.finished"
    tool_events = [e for e in recorder.events if isinstance(e, ToolEvent)]
    assert [e.type for e in tool_events] == ["tools.started", "tools.finished"]


def test_event_construction_and_classification() -> None:
    plain = Event("llm.text_delta", data={"text": "hi"})
    assert type(plain) is Event and plain.text == "hi", "Event(...) still builds a plain Event"
    assert event_class("llm.text_delta") is LLMTextDelta
    assert event_class("retry.scheduled") is RetryScheduled
    assert event_class("tools.progress") is ToolEvent, "a tool's own type gets its family"
    assert event_class("retry.something_new") is RetryEvent
    assert event_class("custom") is Event and event_class("nobody.knows") is Event
    typed = make_event("llm.text_delta", "r1", 3, 1.5, 2, {"text": "x"})
    assert isinstance(typed, LLMTextDelta) and (typed.run_id, typed.seq, typed.time, typed.step) == ("r1", 3, 1.5, 2)
    assert repr(typed).startswith("LLMTextDelta(type='llm.text_delta'")
    assert attrs.evolve(typed, seq=4).seq == 4 and type(attrs.evolve(typed, seq=4)) is LLMTextDelta
    again = pickle.loads(pickle.dumps(typed))
    assert type(again) is LLMTextDelta and again.text == "x"
    with pytest.raises(AttributeError):
        _ = typed.missing


async def test_sink_emits_the_typed_class_and_user_types_get_their_family() -> None:
    recorder = InMemoryRecorder()
    with use_sink(EventSink([recorder], run_id="r")):
        agentactors.events.emit("tools.progress", done=3)
        agentactors.events.emit("my.own", x=1)
    assert [type(e) for e in recorder.events] == [ToolEvent, Event]


async def test_jsonl_records_read_back_as_typed_events(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[jsonl]):
            result = await weather_agent().run("weather?")
    with path.open("a") as f:
        f.write(json.dumps({"summary": True}) + "\n\n")  # not an event: skipped
    events = list(read_jsonl(path, run_id=result.run_id))
    assert events and all(e.run_id == result.run_id for e in events)
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert any(isinstance(e, ToolFinished) and e.name == "lookup" for e in events)
    with pytest.raises(ValueError, match="needs a string 'type'"):
        event_from_dict({"seq": 1})


def test_part_payloads_are_recorded_as_their_size_only(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with JsonlRecorder(path) as jsonl:
        EventSink([jsonl], run_id="r").emit("llm.request", blob=b"\x89PNG" * 1000)
    (line,) = path.read_text().splitlines()
    assert json.loads(line)["blob"] == {"omitted_bytes": 4000}


# -- text_stream ----------------------------------------------------------------------------------------


async def test_text_stream_yields_only_the_answer_text() -> None:
    async with Runtime():
        async with weather_agent().stream("weather?") as run:
            pieces = [t async for t in run.text_stream()]
        assert "".join(pieces) == "It is 21 °C in Lisbon today." and len(pieces) > 1
        assert run.result.content == "It is 21 °C in Lisbon today."


async def test_text_stream_on_its_own_enters_and_leaves_the_run() -> None:
    pieces = [t async for t in weather_agent().stream("weather?").text_stream()]
    assert "".join(pieces) == "It is 21 °C in Lisbon today."
    with pytest.raises(ValueError, match="min_interval"):
        weather_agent().stream("x").text_stream(min_interval=-1)


@pytest.mark.virtual_time
async def test_text_stream_min_interval_joins_pieces_that_arrive_closer_together() -> None:
    words = ["one", "two", "three", "four", "five", "six", "seven", "eight"]

    class Drip:
        """Streams one word every 0.1 s."""

        name = "drip"
        default_model = None
        carries_tools = True

        async def complete(self, request: LLMRequest) -> agentactors.LLMResponse:
            return agentactors.LLMResponse(" ".join(words))

        def stream(self, request: LLMRequest) -> StreamContext:
            from contextlib import asynccontextmanager

            @asynccontextmanager
            async def ctx() -> AsyncIterator[AsyncIterator[StreamEvent]]:
                async def gen() -> AsyncIterator[StreamEvent]:
                    for i, w in enumerate(words):
                        await anyio.sleep(0.1)
                        yield agentactors.TextDelta(w if i == 0 else " " + w)
                    yield agentactors.StreamEnd(agentactors.LLMResponse(" ".join(words)))

                yield gen()

            return ctx()

        async def aclose(self) -> None:
            pass

    async with Runtime():
        stamps: list[tuple[float, str]] = []
        async with Agent(Drip()).stream("go") as run:
            async for text in run.text_stream(min_interval=0.35):
                stamps.append((anyio.current_time(), text))
        plain: list[str] = []
        async with Agent(Drip()).stream("go") as run:
            plain = [t async for t in run.text_stream()]
    assert "".join(t for _, t in stamps) == " ".join(words) == "".join(plain)
    assert len(plain) == 8 and 2 <= len(stamps) < 8
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(stamps)]
    assert all(g >= 0.35 - 1e-6 for g in gaps), gaps
    assert stamps[0][1] == "one", "the first piece goes out at once"


# -- abandoned streams cancel the run and its HTTP request ------------------------------------------------


def slow_openai(fv: FakeVendor, key: str) -> agentactors.OpenAIProvider:
    fv.script(FakeReply(text="one two three four five six", words_per_chunk=1, chunk_latency=10))
    return agentactors.OpenAIProvider("gpt-4o-mini", api_key=key, base_url=fv.openai_base_url)


async def test_a_closed_text_stream_cancels_its_run_and_http_request(fake_vendor: FakeVendor) -> None:
    provider = slow_openai(fake_vendor, "sk-stream-abandon-0000")
    async with Runtime() as rt:
        agent = Agent(provider).bind(rt)
        texts = agent.stream("slowly").text_stream()  # a generator: aclose() is part of its type
        first = await texts.__anext__()
        assert first
        await texts.aclose()  # the consumer goes away
        (gone,) = await fake_vendor.wait_for_disconnects(1)
        assert gone.outcome == "disconnected"
        with anyio.fail_after(5):
            await rt.wait_idle()


async def test_a_dropped_handle_cancels_its_run(fake_vendor: FakeVendor) -> None:
    provider = slow_openai(fake_vendor, "sk-stream-abandon-0001")
    async with Runtime() as rt:
        run = Agent(provider).stream("slowly", runtime=rt)
        await run.__aenter__()
        async for event in run:
            if isinstance(event, LLMTextDelta):
                break
        del run, event
        gc.collect()
        (gone,) = await fake_vendor.wait_for_disconnects(1)
        assert gone.outcome == "disconnected"
        with anyio.fail_after(5):
            await rt.wait_idle()


async def test_a_cancelled_consumer_cancels_the_run(fake_vendor: FakeVendor) -> None:
    provider = slow_openai(fake_vendor, "sk-stream-abandon-0002")
    async with Runtime() as rt:
        with anyio.move_on_after(0.5):
            async with Agent(provider).stream("slowly", runtime=rt) as run:
                async for _ in run.text_stream():
                    pass
        assert run.done and run.result.cancelled
        (gone,) = await fake_vendor.wait_for_disconnects(1)
        assert gone.outcome == "disconnected"
