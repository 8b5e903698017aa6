"""One depth and size policy where JSON enters (``agentactors._json``): the wires' tool arguments, typed answers.

Over the bound a tool call is marked ``unparseable`` (the model reads an ``invalid`` result it can fix) and a
typed answer is asked again — never a ``RecursionError`` / ``ValueError`` out of ``agent.run``.  The stores'
side is in ``tests/unit/sessions/test_bounds.py``, explain's in ``tests/unit/test_explain.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from agentactors import Agent, Message, ToolCall, tool
from agentactors._json import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_TEXT_CHARS,
    JsonBoundError,
    check_value,
    loads_bounded,
)
from agentactors.messages import LLMRequest, ToolSpec, parse_arguments
from agentactors.output import PromptedOutput, ToolOutput
from agentactors.providers.anthropic.decode import _tool_call_from_block
from agentactors.providers.bedrock.decode import tool_call as bedrock_tool_call
from agentactors.providers.openai.decode import build_tool_call
from agentactors.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.anyio


def nested(depth: int) -> Any:
    """An object ``depth`` containers deep: ``{"a": {"a": ... {}}}``."""
    value: Any = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def nested_text(depth: int) -> str:
    return '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1)


# --- the policy ---------------------------------------------------------------------------------------


def test_the_deepest_value_the_policy_allows_is_read_and_one_deeper_is_not() -> None:
    assert loads_bounded(nested_text(MAX_DEPTH), what="x") == nested(MAX_DEPTH)
    with pytest.raises(JsonBoundError, match=f"deeper than {MAX_DEPTH} levels") as info:
        loads_bounded(nested_text(MAX_DEPTH + 1), what="x")
    assert info.value.limit == "depth"


def test_a_depth_past_the_interpreters_recursion_limit_is_the_same_typed_error() -> None:
    with pytest.raises(JsonBoundError, match="deeper than"):
        loads_bounded("[" * 100_000 + "]" * 100_000, what="x")


def test_check_value_walks_without_recursion() -> None:
    value: Any = []
    for _ in range(200_000):  # far past the recursion limit: a recursive check would fail on it
        value = [value]
    with pytest.raises(JsonBoundError, match="deeper than 64"):
        check_value(value)
    assert check_value(nested(MAX_DEPTH)) == nested(MAX_DEPTH)


@pytest.mark.parametrize("text", ['{"x": ' + "1" * 5000 + "}", "[" + "9" * (MAX_INT_DIGITS + 1) + "]"])
def test_an_integer_too_long_is_a_typed_error(text: str) -> None:
    with pytest.raises(JsonBoundError) as info:
        loads_bounded(text, what="x")
    assert info.value.limit == "digits"
    assert loads_bounded("[" + "9" * MAX_INT_DIGITS + "]", what="x") == [int("9" * MAX_INT_DIGITS)]


def test_an_integer_too_long_is_refused_even_where_the_process_raised_pythons_limit() -> None:
    with pytest.raises(JsonBoundError, match=f"more than {MAX_INT_DIGITS} digits"):
        check_value({"x": [10**MAX_INT_DIGITS]})
    check_value({"x": [10**MAX_INT_DIGITS - 1, -(10**MAX_INT_DIGITS - 1), True, 1.5e300]})


def test_text_too_long_is_refused_before_it_is_parsed() -> None:
    with pytest.raises(JsonBoundError, match="longer than") as info:
        loads_bounded(" " * (MAX_TEXT_CHARS + 1), what="x")
    assert info.value.limit == "size"


def test_text_that_is_not_json_stays_a_decode_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads_bounded('{"a": [1, 2', what="x")


# --- tool arguments at the wires ------------------------------------------------------------------------


def test_arguments_past_the_bound_are_unparseable_not_a_crash() -> None:
    assert parse_arguments(nested_text(MAX_DEPTH)) == (nested(MAX_DEPTH), None)
    assert parse_arguments(nested_text(600)) == ({}, "unparseable")
    assert parse_arguments('{"n": ' + "7" * 5000 + "}") == ({}, "unparseable")
    call = ToolCall.from_raw("c1", "t", "[" * 5000 + "]" * 5000)
    assert call.arguments_error == "unparseable"


def test_the_openai_wire_says_why_deep_arguments_were_refused() -> None:
    request = LLMRequest([Message.user("q")], tools=[ToolSpec("t", "", {"type": "object"})])
    call = build_tool_call(request, "c1", "t", nested_text(600), "tool_calls")
    assert call.arguments_error == "unparseable"
    assert call.arguments_error_detail is not None and "deeper than 64" in call.arguments_error_detail
    plain = build_tool_call(request, "c1", "t", '{"a": 1', "tool_calls")
    assert plain.arguments_error_detail is not None and "not a complete JSON object" in plain.arguments_error_detail


@pytest.mark.parametrize(
    "decode",
    [
        lambda args: _tool_call_from_block(
            {"type": "tool_use", "id": "c1", "name": "t", "input": args}, provider="p", model=None
        ),
        lambda args: bedrock_tool_call({"toolUseId": "c1", "name": "t", "input": args}, provider="p", model=None),
    ],
    ids=["anthropic", "bedrock"],
)
def test_object_wires_mark_deep_arguments(decode: Any) -> None:
    deep = decode(nested(MAX_DEPTH + 1))
    assert deep.arguments_error == "unparseable" and deep.arguments == {}
    assert "deeper than 64" in (deep.arguments_error_detail or "")
    fine = decode(nested(MAX_DEPTH))
    assert fine.arguments_error is None and fine.arguments == nested(MAX_DEPTH)


def test_the_gemini_wire_marks_deep_arguments() -> None:
    from agentactors.providers.gemini.decode import decode_response

    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"functionCall": {"name": "t", "args": nested(MAX_DEPTH + 1)}}]},
                "finishReason": "STOP",
            }
        ]
    }
    response = decode_response(body, request=None, model="m", provider="gemini")
    (call,) = response.tool_calls
    assert call.arguments_error == "unparseable" and "deeper than 64" in (call.arguments_error_detail or "")


@tool
def lookup(order: dict[str, Any]) -> str:
    """Look an order up."""
    return "found"


async def test_a_deep_tool_call_gets_an_invalid_result_the_model_can_fix() -> None:
    deep = build_tool_call(None, "c1", "lookup", json.dumps({"order": nested(600)}), "tool_calls")  # as a wire reads it
    fixed = ToolCall("c2", "lookup", {"order": {"id": 1}})
    agent = Agent(ScriptedProvider([[deep], [fixed], "done"]), tools=[lookup])
    result = await agent.run("go")
    assert result.ok and result.content == "done"
    first, second = (m for m in result.messages if m.role == "tool")
    assert first.is_error and "deeper than 64" in first.content and "not executed" in first.content
    assert second.content == "found"


# --- typed answers --------------------------------------------------------------------------------------


class Answer(BaseModel):
    x: int


@pytest.mark.parametrize(
    "bad",
    [
        '{"x": 1, "y": ' + "[" * 600 + "]" * 600 + "}",
        '{"x": 1, "y": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"x": ' + "1" * 5000 + "}",
        'Here it is:\n```json\n{"x": ' + "1" * 5000 + "}\n```",
        'Sure: {"x": 2, "y": ' + "[" * 600 + "]" * 600 + "} and that's it",
    ],
    ids=["deep", "past-recursion", "digits", "fenced-digits", "prose-deep"],
)
async def test_a_prompted_typed_answer_past_the_bound_is_asked_again(bad: str) -> None:
    provider = ScriptedProvider([bad, '{"x": 3}'])
    result = await Agent(provider, output_type=PromptedOutput(Answer)).run("q")
    assert result.ok and result.output == Answer(x=3) and result.steps == 2
    retry = [m for m in result.messages if m.role == "user"][-1]
    assert "deeper than 64" in retry.content or "digits" in retry.content


async def test_an_output_tool_call_built_past_the_bound_is_asked_again() -> None:
    deep = ToolCall("o1", "final_result", {"x": 1, "y": nested(600)})
    good = ToolCall("o2", "final_result", {"x": 4})
    provider = ScriptedProvider([[deep], [good]])
    result = await Agent(provider, output_type=ToolOutput(Answer)).run("q")
    assert result.ok and result.output == Answer(x=4) and result.steps == 2


def test_bytes_that_are_not_utf8_are_not_json_not_a_limit() -> None:
    """A line cut inside a character (a killed writer): a parse error, as any cut line — not a bound refused."""
    with pytest.raises(json.JSONDecodeError, match="not UTF-8"):
        loads_bounded('{"text": "é"}'.encode()[:-3], what="the line")
    with pytest.raises(json.JSONDecodeError, match="not UTF-8"):
        loads_bounded(b'{"text": "\xff"}', what="the line")
