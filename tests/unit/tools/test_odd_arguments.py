"""Tool arguments no JSON value is: NaN, ±Infinity, lone surrogates, a key named twice — issues the model reads.

Python's ``json`` reads ``NaN``, ``Infinity`` and ``1e999`` (infinity), and ``"\\ud800"`` as half a character;
a repeated key it reads silently as its last value.  Each slipped past a tool's schema (every comparison with
NaN is false, so ``minimum`` / ``maximum`` let it through) and reached the tool: a NaN "probability", a string no
database takes, a guess between two values.  Now, whichever way the arguments arrived — raw text (the OpenAI-style
wires), an object (Anthropic, Gemini, a custom provider) — the call is ``invalid`` and the tool does not run; the
model reads where and what kind of value, never the value.  Both backends.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentactors import Agent, LLMRequest, ScriptedProvider, ToolCall, tool
from agentactors.messages import ToolSpec, parse_arguments
from agentactors.providers.openai.decode import build_tool_call
from agentactors.tools import ToolStatus
from agentactors.tools.executor import ToolExecutorActor
from agentactors.tools.fastcheck import compile_check, sees_every_value
from agentactors.tools.registry import Tool
from agentactors.tools.validation import ArgumentValidator

pytestmark = pytest.mark.anyio

ran: list[dict[str, Any]] = []


@tool
async def score(p: float, label: str) -> str:
    """Record a probability."""
    ran.append({"p": p, "label": label})
    return "recorded"


async def take_anything(**arguments: Any) -> str:
    ran.append(arguments)
    return "took"


# A bounded number (the bounds NaN used to pass) and an open object (no type below it: the validator walks).
BOUNDED = ToolSpec(
    "bounded",
    "Takes a probability and free-form data.",
    {
        "type": "object",
        "properties": {"p": {"type": "number", "minimum": 0, "maximum": 1}, "data": {}},
        "required": ["p"],
    },
)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()


def executor() -> ToolExecutorActor:
    return ToolExecutorActor([score, Tool.from_spec(BOUNDED, take_anything)])


# (raw text, the same arguments as an object, the issue line the model reads)
ODD = [
    ('{"p": NaN, "label": "x"}', {"p": math.nan, "label": "x"}, "- p: expected a finite number, got a NaN"),
    ('{"p": Infinity, "label": "x"}', {"p": math.inf, "label": "x"}, "- p: expected a finite number, got an infinity"),
    ('{"p": 1e999, "label": "x"}', {"p": math.inf, "label": "x"}, "- p: expected a finite number, got an infinity"),
    (
        '{"p": -Infinity, "label": "x"}',
        {"p": -math.inf, "label": "x"},
        "- p: expected a finite number, got a negative infinity",
    ),
    (
        '{"p": 0.5, "label": "half \\ud800 a pair"}',
        {"p": 0.5, "label": "half \ud800 a pair"},
        "- label: expected a string of whole Unicode characters, got a string with a lone surrogate",
    ),
]


@pytest.mark.parametrize(("raw", "obj", "line"), ODD, ids=["nan", "infinity", "1e999", "-infinity", "surrogate"])
@pytest.mark.parametrize("arrived_as", ["text", "object"])
async def test_odd_values_are_an_invalid_call_on_every_transport(raw: str, obj: dict[str, Any], line: str,
                                                                 arrived_as: str) -> None:
    call = ToolCall.from_raw("c1", "score", raw) if arrived_as == "text" else ToolCall("c1", "score", obj)
    assert call.arguments_error is None  # it parses: the validator is where it is refused
    result = await executor().execute_one(call)
    assert result.status is ToolStatus.invalid and ran == []
    assert line in result.content.splitlines()
    for shown in ("1e999", "\ud800", "half"):  # the kind of value ("a NaN"), never the value or the text around it
        assert shown not in result.content


@pytest.mark.parametrize("p", [math.nan, math.inf, -math.inf])
async def test_nan_and_infinity_do_not_pass_a_minimum_and_maximum(p: float) -> None:
    result = await executor().execute_one(ToolCall("c1", "bounded", {"p": p}))
    assert result.status is ToolStatus.invalid and ran == []
    assert "- p: expected a finite number" in result.content


async def test_odd_values_deep_in_an_open_schema_are_found_with_their_place() -> None:
    data = {"rows": [{"v": 1.5}, {"v": math.nan}], "\udc00key": 1, "name": "\ud83d"}
    result = await executor().execute_one(ToolCall("c1", "bounded", {"p": 0.5, "data": data}))
    assert result.status is ToolStatus.invalid and ran == []
    lines = result.content.splitlines()
    assert "- data.rows[1].v: expected a finite number, got a NaN" in lines
    assert "- data: expected keys of whole Unicode characters, got a key with a lone surrogate" in lines
    assert "- data.name: expected a string of whole Unicode characters, got a string with a lone surrogate" in lines
    assert not any("\ud800" <= ch <= "\udfff" for ch in result.content)  # no half character even in a path


async def test_ordinary_floats_and_non_ascii_text_still_run() -> None:
    data = {"rows": [0.0, -0.0, 1e308, -2.5], "name": "héllo 😀", "ключ": "значение"}
    results = await executor().execute(
        [ToolCall("c1", "score", {"p": 0.25, "label": "naïve 😀"}), ToolCall("c2", "bounded", {"p": 1, "data": data})]
    )
    assert [r.status for r in results] == [ToolStatus.ok, ToolStatus.ok]
    assert sorted(ran, key=lambda a: "data" in a) == [{"p": 0.25, "label": "naïve 😀"}, {"p": 1, "data": data}]


@pytest.mark.parametrize(
    "raw", ['{"p": 0.5, "label": "a", "label": "b"}', '{"p": 0.5, "label": "a", "extra": {"k": 1, "k": 2}}']
)
def test_a_key_named_twice_does_not_parse_and_the_detail_names_it(raw: str) -> None:
    args, error = parse_arguments(raw)
    assert (args, error) == ({}, "unparseable")  # never the last value, silently
    call = build_tool_call(None, "c1", "score", raw, "tool_calls")  # the OpenAI-style wires say why
    assert call.arguments_error == "unparseable" and call.arguments_error_detail is not None
    assert "more than once" in call.arguments_error_detail


async def test_a_key_named_twice_is_an_invalid_call_that_says_which_key() -> None:
    call = ToolCall.from_raw("c1", "score", '{"p": 0.5, "label": "yes", "label": "no"}')  # no detail of its own
    result = await executor().execute_one(call)
    assert result.status is ToolStatus.invalid and ran == []
    assert "the arguments name the key 'label' more than once" in result.content
    assert "yes" not in result.content and '"no"' not in result.content


async def test_a_run_whose_model_sends_nan_reads_the_issue_and_corrects_itself() -> None:
    seen: list[str] = []

    def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "user":
            return [ToolCall.from_raw("c1", "score", '{"p": NaN, "label": "x"}')]
        if "recorded" not in last.content:
            seen.append(last.content)
            return [ToolCall.from_raw("c2", "score", '{"p": 0.5, "label": "x"}')]
        return "done"

    result = await Agent(ScriptedProvider(model), tools=[score]).run("score it")
    assert result.content == "done" and ran == [{"p": 0.5, "label": "x"}]
    assert len(seen) == 1 and "- p: expected a finite number, got a NaN" in seen[0]


def test_the_fast_check_is_never_certain_of_an_odd_value() -> None:
    schema = score.spec.parameters
    check = compile_check(schema)
    assert check is not None and sees_every_value(schema)  # @tool's typed parameters: no walk needed
    assert check({"p": 0.5, "label": "x"})
    for odd in ({"p": math.nan, "label": "x"}, {"p": math.inf, "label": "x"}, {"p": 0.5, "label": "\udfff"}):
        assert not check(odd)
    enum = compile_check({"enum": [math.inf, "a\ud800", 1]})
    assert enum is not None and not enum(math.inf) and not enum("a\ud800") and enum(1)


@pytest.mark.parametrize(
    ("schema", "sees_all"),
    [
        ({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}, True),
        ({"type": "object", "properties": {"a": {"type": "integer"}}}, False),  # other keys, unlooked at
        ({"type": "object", "properties": {"a": {}}, "additionalProperties": False}, False),
        ({"type": "array", "items": {"type": "string"}}, True),
        ({"type": "array"}, False),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, True),
        ({"minimum": 0}, False),  # untyped: a string passes it unlooked at
    ],
)
def test_which_schemas_let_the_fast_check_vouch_for_every_value(schema: dict[str, Any], sees_all: bool) -> None:
    assert sees_every_value(schema) is sees_all
    validator = ArgumentValidator(schema)
    odd: Any = {"a": math.nan} if schema.get("type") == "object" else [math.nan] if "items" in schema else math.nan
    if schema.get("type") == "array" and "items" not in schema:
        odd = [math.nan]
    if "anyOf" in schema:
        odd = "\ud800"
    assert validator.issues(odd)  # refused either way: with a walk or without one
