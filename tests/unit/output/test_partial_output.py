"""``run.partial_output()``: successively more complete values while the output tool's arguments or the JSON
text stream in, then the final validated value.  Both backends."""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Any

import pytest

from agentactors import (
    Agent,
    ScriptedProvider,
    ToolCall,
)
from agentactors.output.partial import parse_partial
from tests.support.trickle import Trickle

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Story:
    title: str = ""
    body: str = ""


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


# --- a number still arriving is not a number yet ---------------------------------------------------------------


@dataclasses.dataclass
class Quote:
    item: str
    price: int


@pytest.mark.parametrize("step", [1, 3, 4])
@pytest.mark.parametrize("strategy", ["tool", "native"])
async def test_a_number_still_arriving_is_never_offered_cut_short(strategy: str, step: int) -> None:
    arguments = {"item": "Widget", "price": 123456789}
    answer: Any = ToolCall("c1", "final_result", arguments) if strategy == "tool" else json.dumps(arguments)
    provider = Trickle([answer], forced=strategy == "tool", step=step)
    async with Agent(provider, output_type=Quote).stream("q") as run:
        values = [v async for v in run.partial_output()]
    assert values[-1] == run.result.output == Quote("Widget", 123456789)
    assert {v.price for v in values} == {123456789}, values


@pytest.mark.parametrize("step", [1, 3])
@pytest.mark.parametrize(
    ("output_type", "arguments"),
    [(list[int], {"response": [100000, 250000, 999999]}), (int, {"response": 1000000000000}),
     (list[float], {"response": [1.5e10, -2.25]}), (dict[str, bool], {"response": {"a": True, "b": False}})],
)
async def test_numbers_and_literals_in_lists_and_wrapped_values_arrive_whole(
    output_type: Any, arguments: dict[str, Any], step: int
) -> None:
    provider = Trickle([ToolCall("c1", "final_result", arguments)], step=step)
    async with Agent(provider, output_type=output_type).stream("q") as run:
        values = [v async for v in run.partial_output()]
    final = arguments["response"]
    assert values[-1] == run.result.output == final
    for value in values:
        if isinstance(final, list):
            assert value == final[: len(value)], values
        elif isinstance(final, dict):
            assert all(final[k] == v for k, v in value.items()), values
        else:
            assert value == final, values


def test_a_prefix_ending_in_a_number_or_literal_drops_it() -> None:
    from agentactors.output.partial import settled

    assert parse_partial(settled('{"item": "W", "price": 12')) == {"item": "W"}
    assert parse_partial(settled('[1, 2')) == [1]
    assert parse_partial(settled('{"a": [tr')) == {"a": []}
    assert parse_partial(settled('{"a": -1.5e')) == {}
    assert settled('{"a": 12 ') == '{"a": 12 '  # whitespace ended it: whole
    assert settled("12") == ""


# --- linear time: a delta costs its own characters, an element is checked once -------------------------


@dataclasses.dataclass
class Item:
    name: str
    qty: int
    note: str = ""


def _items(n: int) -> list[dict[str, Any]]:
    # Quotes, brackets, braces and escapes inside strings: the scanner must not take them for structure.
    return [{"name": f'item "{i}" [x] {{y}} \\ end', "qty": i, "note": "a,b" * (i % 3)} for i in range(n)]


class _CountingChecks:
    """Counts ``OutputTarget.check`` calls and the characters of the values they were given."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from agentactors.output.target import OutputTarget

        self.calls = 0
        self.chars = 0
        real = OutputTarget.check

        def check(target: Any, arguments: Any, member: Any = None) -> Any:
            self.calls += 1
            self.chars += len(json.dumps(arguments, default=str))
            return real(target, arguments, member)

        monkeypatch.setattr(OutputTarget, "check", check)


@pytest.mark.parametrize("strategy", ["tool", "native"])
async def test_a_long_typed_list_is_followed_in_linear_work(strategy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    items = _items(600)  # ~40 KB, in ~2,500 deltas of 16 characters
    answer: Any = ToolCall("c1", "final_result", {"response": items}) if strategy == "tool" else json.dumps(items)
    provider = Trickle([answer], forced=strategy == "tool", step=16)
    counting = _CountingChecks(monkeypatch)
    async with Agent(provider, output_type=list[Item]).stream("list") as run:
        values = [v async for v in run.partial_output()]
    size = len(json.dumps({"response": items}))
    assert values[-1] == run.result.output == [Item(**i) for i in items]
    # Every partial value is a prefix of the answer: elements are never changed, only added (the last one grows).
    for value in values[:-1]:
        done = max(len(value) - 1, 0)
        assert value[:done] == values[-1][:done]
    assert len(values) > 20
    # Each element is checked about once, and all checks together read a few times the answer, not ~1,000×.
    assert counting.calls < 2 * len(items)
    assert counting.chars < 6 * size


async def test_the_last_partial_value_of_a_list_is_the_whole_list(monkeypatch: pytest.MonkeyPatch) -> None:
    items = _items(50)
    provider = Trickle([ToolCall("c1", "final_result", {"response": items})], step=7)
    seen: list[Any] = []
    async with Agent(provider, output_type=list[Item]).stream("list") as run:
        async for event in run:
            if event.type == "output.partial":
                seen.append(event.data["value"])
    assert seen[-1] == [Item(**i) for i in items]


async def test_a_list_whose_element_does_not_check_stops_growing() -> None:
    items: list[Any] = [*_items(3), {"name": 5, "qty": "x"}, *_items(3)]
    provider = Trickle([ToolCall("c1", "final_result", {"response": items})], step=5)
    async with Agent(provider, output_type=list[Item], output_retries=0).stream("list") as run:
        values = [v async for v in run.partial_output()]
    assert values and all(len(v) <= 3 for v in values)
    assert run.result.output is None


async def test_a_large_object_offers_no_partial_past_the_limit_then_its_final_value() -> None:
    @dataclasses.dataclass
    class Report:
        title: str
        body: str

    body = "word " * 8_000  # 40 KB in one string field: checked whole, so offered only up to 16 KB
    provider = Trickle([ToolCall("c1", "final_result", {"title": "t", "body": body})], step=64)
    async with Agent(provider, output_type=Report).stream("report") as run:
        values = [v async for v in run.partial_output()]
    assert values[-1] == Report("t", body)
    assert all(len(v.body) <= 16 * 1024 for v in values[:-1])
    assert 3 < len(values) < 200  # an offer per 1/8 growth, not one per delta (~640 of them)


def test_the_scanner_finds_structure_across_any_split_of_the_text() -> None:
    from agentactors.output.partial import _Scanner

    text = json.dumps({"response": _items(4)})
    whole = _Scanner(track=True)
    whole.feed(text)
    assert whole.done and len(whole.seps) == 5
    for step in (1, 2, 3, 5):
        split = _Scanner(track=True)
        for i in range(0, len(text), step):
            split.feed(text[i : i + step])
        assert (split.seps, split.closed, split.done) == (whole.seps, whole.closed, whole.done)
    elements = [text[a + 1 : b] for a, b in itertools.pairwise(whole.seps)]
    assert [json.loads(e) for e in elements] == _items(4)
