"""Typed output, a second adversarial pass (the first: ``test_output_hostile.py``).  Both backends.

* a partial value is held to the depth and integer policy the final answer is held to
  (:mod:`agentactors._json`): streamed JSON nested past ``MAX_DEPTH`` used to come out as partial values up to
  jiter's own limit (~200 deep) — to the caller, into ``output.partial`` events and a JSONL record — while the
  very same answer, complete, is refused;
* a model that keeps answering invalid output until ``max_steps`` ends with the result saying why: the issues
  it last had, how many answers were refused;
* union outputs, recursive types, output validators that raise or are async: what they give is pinned here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pydantic
import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    JsonlRecorder,
    ModelRetry,
    OutputValidationError,
    PromptedOutput,
    Runtime,
    ScriptedProvider,
    ToolCall,
)
from agentactors._json import MAX_DEPTH, MAX_INT_DIGITS
from agentactors.events import read_jsonl
from agentactors.output.partial import PartialOutput
from agentactors.output.target import OutputTarget
from tests.support.trickle import Trickle

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Doc:
    title: str
    body: Any = None


def _depth(value: Any) -> int:
    """Containers nested in ``value`` (as agentactors._json counts them)."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth + 1)
            todo.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def _nested(levels: int) -> str:
    return '{"title": "t", "body": ' + '{"a": ' * levels + "1" + "}" * levels + "}"


# --- partial values under the depth policy -------------------------------------------------------------


@pytest.mark.parametrize("text", [True, False])
def test_a_partial_value_past_the_depth_policy_is_never_offered(text: bool) -> None:
    target = OutputTarget(Doc)
    got: list[Doc] = []
    partial = PartialOutput(target, text=text, emit=got.append)
    if not text:
        partial.call_started(0, "final_result")
    answer = _nested(150)
    for i in range(0, len(answer), 5):
        piece = answer[i : i + 5]
        partial.feed_text(piece) if text else partial.call_delta(0, piece)
    assert got, "the shallow prefixes were offered"
    assert max(_depth(dataclasses.asdict(v)) for v in got) <= MAX_DEPTH


def test_a_partial_value_with_an_integer_past_the_digit_policy_is_never_offered() -> None:
    got: list[Any] = []
    partial = PartialOutput(OutputTarget(list[int]), text=True, emit=got.append)
    partial.feed_text('{"response": [1, 2, ' + "9" * (MAX_INT_DIGITS + 10) + ", 3]}")
    assert all(len(str(n)) <= MAX_INT_DIGITS for v in got for n in v)


async def test_streaming_a_too_deep_answer_records_no_partial_past_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    provider = Trickle([_nested(150), '{"title": "t", "body": {"a": 1}}'], forced=False, step=16)
    agent = Agent(provider, output_type=PromptedOutput(Doc))
    memory = InMemoryRecorder()
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[memory, jsonl]) as rt:
            async with agent.stream("write", runtime=rt) as run:
                values = [v async for v in run.partial_output()]
    assert run.result.output == Doc("t", {"a": 1})  # the deep answer was refused, the second one taken
    assert max(_depth(dataclasses.asdict(v)) for v in values) <= MAX_DEPTH
    assert any(e.type == "output.invalid" for e in memory.events)
    assert [e.type for e in read_jsonl(path)]  # the record reads back whole


# --- invalid answers until max_steps --------------------------------------------------------------------


@dataclasses.dataclass
class Point:
    x: int
    y: int


async def test_invalid_answers_until_max_steps_end_with_the_issues_they_last_had() -> None:
    script = [ToolCall(f"c{i}", "final_result", {"x": "one", "y": 2}) for i in range(5)]
    result = await Agent(ScriptedProvider(script), output_type=Point, output_retries=10, max_steps=3).run("where")
    assert result.bounded
    error: Any = result.error
    assert isinstance(error, OutputValidationError), error
    assert error.attempts == 3 and "max_steps=3" in str(error)
    assert any("x" in line and "integer" in line for line in error.issues), error.issues


async def test_the_output_run_says_why_a_bounded_typed_run_has_no_answer() -> None:
    from agentactors.output.config import OutputConfig
    from agentactors.output.run import OutputRun

    config = OutputConfig.build(Point, retries=10, validator=None)
    assert config is not None
    output = OutputRun(config, provider=ScriptedProvider([]), model=None, native=True, has_tools=False, sink=None,
                       run_id="r", agent=None, deps=None)
    assert output.bounded_error(3) is None  # no answer refused: nothing to say
    output.begin_step()
    verdict = await output.check_calls([ToolCall("c1", "final_result", {"x": "one", "y": 2})], 1)
    assert not verdict.ok and not verdict.exhausted
    error = output.bounded_error(3)
    assert isinstance(error, OutputValidationError) and error.attempts == 1
    assert "max_steps=3" in str(error) and "output_retries=10" in str(error)
    assert any("x" in line for line in error.issues)
    assert "one" not in str(error)  # never the value


# --- union outputs, recursive types, validators ----------------------------------------------------------


@dataclasses.dataclass
class Cat:
    name: str


@dataclasses.dataclass
class Car:
    name: str
    wheels: int = 4


async def test_a_union_whose_members_share_fields_takes_the_first_member_the_answer_validates_as() -> None:
    union: Any = PromptedOutput(Cat | Car)  # type: ignore[arg-type]
    first = await Agent(ScriptedProvider(['{"response": {"name": "Tom"}}']), output_type=union).run("?")
    assert first.output == Cat("Tom")
    second = await Agent(ScriptedProvider(['{"name": "Kit", "wheels": 3}']), output_type=union).run("?")
    assert second.output == Car("Kit", 3)  # a field the first member does not have: closed objects


@dataclasses.dataclass
class Node:
    name: str
    children: list[Node]


class Tree(pydantic.BaseModel):
    name: str
    children: list[Tree] = []


@pytest.mark.parametrize("tp", [Node, Tree, list[Node], Node | None])
def test_a_recursive_output_type_is_a_type_error_when_the_agent_is_built(tp: Any) -> None:
    with pytest.raises(TypeError, match="refers to itself"):
        Agent(ScriptedProvider([]), output_type=tp)


async def test_an_async_validator_raising_model_retry_re_asks() -> None:
    async def positive(value: Point, ctx: Any) -> Point:
        if value.x < 0:
            raise ModelRetry("x must not be negative")
        return value

    provider = ScriptedProvider([ToolCall("c1", "final_result", {"x": -1, "y": 0}),
                                 ToolCall("c2", "final_result", {"x": 1, "y": 0})])
    result = await Agent(provider, output_type=Point, output_validator=positive).run("?")
    assert result.output == Point(1, 0)
    assert "x must not be negative" in json.dumps([m.content for m in provider.requests[1].messages])


async def test_a_validator_raising_another_exception_leaves_the_run_as_its_exception() -> None:
    async def broken(value: Point) -> Point:
        raise LookupError("the validator's own bug")

    with pytest.raises(LookupError, match="own bug"):
        await Agent(ScriptedProvider([ToolCall("c1", "final_result", {"x": 1, "y": 0})]), output_type=Point,
                    output_validator=broken).run("?")


def test_a_list_outputs_element_past_the_depth_policy_is_never_offered() -> None:
    got: list[Any] = []
    partial = PartialOutput(OutputTarget(list[Any]), text=True, emit=got.append)
    deep = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)  # an element this deep is past it inside the answer
    partial.feed_text('{"response": [1, ' + deep + ", 2]}")
    assert all(_depth({"response": v}) <= MAX_DEPTH for v in got)


# --- an output schema the wire cannot express -----------------------------------------------------------


@pytest.mark.parametrize("wire", ["openai", "openai-responses", "anthropic"])
@pytest.mark.parametrize("tp", [dict[str, int], tuple[int, str]])
async def test_a_native_schema_the_wire_cannot_express_is_a_request_error_before_sending(wire: str, tp: Any) -> None:
    from agentactors import AnthropicProvider, NativeOutput, OpenAIProvider, OpenAIResponsesProvider, ProviderError
    from agentactors.testing import FakeVendor

    async with FakeVendor() as fv:
        key = "k" * 24
        provider: Any
        if wire == "openai":
            provider = OpenAIProvider("gpt-4o", api_key=key, base_url=fv.openai_base_url, carries_response_format=True)
        elif wire == "openai-responses":
            provider = OpenAIResponsesProvider("gpt-4o", api_key=key, base_url=fv.openai_base_url)
        else:
            provider = AnthropicProvider("claude-sonnet-4-5", api_key=key, base_url=fv.base_url)
        async with provider:
            result = await Agent(provider, output_type=NativeOutput(tp)).run("?")
        sent = len(fv.requests)
    error = result.error
    assert isinstance(error, ProviderError) and error.kind.value == "request" and not error.retryable
    assert result.generation_failed and result.output is None and sent == 0
    assert "response" in str(error) and ("open mapping" in str(error) or "tuple" in str(error))
