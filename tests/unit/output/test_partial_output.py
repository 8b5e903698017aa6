"""``run.partial_output()``: successively more complete values while the output tool's arguments or the JSON
text stream in, then the final validated value.  Both backends."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from agentactors import (
    Agent,
    LLMRequest,
    LLMResponse,
    ScriptedProvider,
    StopReason,
    StreamEnd,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from agentactors.messages import StreamEvent
from agentactors.output.partial import parse_partial

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Story:
    title: str = ""
    body: str = ""


class Trickle:
    """A provider that streams its answer a few characters per event (tool arguments or text)."""

    name = "trickle"
    default_model = "t-1"
    carries_tools = True

    def __init__(self, answers: list[Any], *, forced: bool = True, step: int = 4) -> None:
        self.answers = answers
        self.carries_forced_tool_choice = forced
        self.step = step
        self.requests: list[LLMRequest] = []

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        return self.carries_forced_tool_choice

    def supports_response_format(self, model: str | None) -> bool:
        return True

    def _next(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, ToolCall):
            return LLMResponse("", (answer,), StopReason.tool_use)
        return LLMResponse(answer)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return self._next(request)

    def stream(self, request: LLMRequest) -> Any:
        response = self._next(request)

        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            async def events() -> AsyncIterator[StreamEvent]:
                text = response.content
                for i in range(0, len(text), self.step):
                    yield TextDelta(text[i : i + self.step])
                for index, c in enumerate(response.tool_calls):
                    yield ToolCallStart(index, c.id, c.name)
                    raw = c.arguments_json
                    for i in range(0, len(raw), self.step):
                        yield ToolCallDelta(index, raw[i : i + self.step])
                    yield ToolCallEnd(index, c)
                yield StreamEnd(response)

            yield events()

        return cm()

    async def aclose(self) -> None:
        pass


STORY = {"title": "The Lighthouse", "body": "A keeper counts the ships that never come."}


def _grows(values: list[Story]) -> bool:
    return all(
        len(b.title) >= len(a.title) and len(b.body) >= len(a.body) and (b.title + b.body).startswith(a.title)
        for a, b in itertools.pairwise(values)
    )


async def test_partial_values_grow_while_the_output_tool_arguments_stream_then_the_final_value() -> None:
    provider = Trickle([ToolCall("c1", "final_result", STORY)])
    agent = Agent(provider, output_type=Story)
    async with agent.stream("tell") as run:
        values = [v async for v in run.partial_output()]
    assert len(values) > 5
    assert all(isinstance(v, Story) for v in values)
    assert values[-1] == run.result.output == Story(**STORY)
    partials = values[:-1]
    assert len(set(map(repr, partials))) == len(partials), "a value equal to the last one is not repeated"
    assert _grows(partials)
    assert partials[0].body == "" and partials[-1] == Story(**STORY)


async def test_partial_values_of_the_native_strategy_follow_the_json_text() -> None:
    provider = Trickle([json.dumps(STORY)], forced=False)
    async with Agent(provider, output_type=Story).stream("tell") as run:
        values = [v async for v in run.partial_output()]
    assert provider.requests[0].response_format is not None
    assert len(values) > 5 and _grows(values[:-1]) and values[-1] == Story(**STORY)


async def test_partial_values_of_prompted_json_in_a_fence_after_prose() -> None:
    provider = ScriptedProvider(
        ['Sure.\n```json\n{"title": "T", "body": "a long body of text"}\n```'],
        carries_forced_tool_choice=False,
        carries_response_format=False,
    )
    async with Agent(provider, output_type=Story).stream("tell") as run:
        values = [v async for v in run.partial_output()]
    assert values[-1] == Story("T", "a long body of text")
    assert len(values) >= 2


async def test_a_prefix_that_does_not_validate_yet_is_skipped() -> None:
    @dataclasses.dataclass
    class Pair:
        left: str
        right: str

    provider = Trickle([ToolCall("c1", "final_result", {"left": "aaaaaaaa", "right": "bbbbbbbb"})], step=3)
    async with Agent(provider, output_type=Pair).stream("pair") as run:
        values = [v async for v in run.partial_output()]
    assert all(isinstance(v, Pair) for v in values)  # never a half object missing a required field
    assert values[-1] == Pair("aaaaaaaa", "bbbbbbbb")


async def test_partial_output_on_its_own_enters_and_leaves_the_run() -> None:
    provider = Trickle([ToolCall("c1", "final_result", STORY)])
    values = [v async for v in Agent(provider, output_type=Story).stream("tell").partial_output()]
    assert values[-1] == Story(**STORY)


async def test_a_refused_answer_streams_its_partials_too_and_only_the_last_value_is_validated() -> None:
    provider = Trickle([ToolCall("c1", "final_result", {"title": 5}), ToolCall("c2", "final_result", STORY)])
    async with Agent(provider, output_type=Story).stream("tell") as run:
        values = [v async for v in run.partial_output()]
    assert values[-1] == run.result.output == Story(**STORY)


async def test_a_run_without_a_valid_answer_yields_no_final_value() -> None:
    provider = Trickle([ToolCall("c1", "final_result", {"title": 5})])
    async with Agent(provider, output_type=Story, output_retries=0).stream("tell") as run:
        values = [v async for v in run.partial_output()]
    # Only what the stream held before the bad title began (an empty Story): no final value follows it.
    assert values in ([], [Story()]) and run.result.output is None


async def test_a_text_run_yields_the_text_so_far_then_the_whole_answer() -> None:
    provider = Trickle(["one two three four"])
    async with Agent(provider).stream("count") as run:
        values = [v async for v in run.partial_output()]
    assert values[-1] == "one two three four" == run.result.output
    assert all(b.startswith(a) for a, b in itertools.pairwise(values))
    assert len(values) > 2


def test_partial_json_is_parsed_by_jiter_with_trailing_strings() -> None:
    assert parse_partial('{"a": [1, {"b": "he') == {"a": [1, {"b": "he"}]}
