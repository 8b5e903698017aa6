"""``Tool(...)`` / ``@tool(...)`` refuse an argument of the wrong type or value at construction, naming the
tool — not at the first call, nor in ``as_tool`` / ``handoff`` or a wire's request body much later."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentactors import Agent, ScriptedProvider
from agentactors.agent.handoffs import handoff
from agentactors.messages import ToolSpec
from agentactors.tools import Tool, tool
from agentactors.tools.results import ResultCeiling


async def lookup(city: str) -> str:
    """The weather in a city."""
    return "sunny"


BAD: list[tuple[str, Any]] = [
    ("description", 5),
    ("description", b"bytes"),
    ("name", 5),
    ("name", ""),
    ("timeout", "3"),
    ("timeout", 0),
    ("timeout", -1.0),
    ("timeout", math.nan),
    ("timeout", True),
    ("timeout", 10**400),  # was an OverflowError from float(), not a ValueError
    ("approval_timeout", 10**400),
    ("approval_timeout", "1"),
    ("result_ceiling", 1000),
    ("hint", 5),
    ("hint", "  "),
    ("sequential", 1),
    ("read_only", "yes"),
    ("requires_approval", None),
    ("approval", "later"),
    ("approval", ["pause"]),
]


@pytest.mark.parametrize(("field", "value"), BAD, ids=[f"{f}={v!r}"[:40] for f, v in BAD])
def test_a_bad_argument_is_refused_at_construction_naming_the_tool_and_the_argument(field: str, value: Any) -> None:
    label = "name" if field == "name" else field
    with pytest.raises((TypeError, ValueError), match=label) as direct:
        Tool(lookup, **{field: value})
    with pytest.raises((TypeError, ValueError), match=label) as decorated:
        tool(**{field: value})(lookup)
    for caught in (direct, decorated):
        assert type(caught.value) in (TypeError, ValueError)
        if field != "name":  # a bad name cannot name the tool: it says what it was given
            assert "'lookup'" in str(caught.value)


def test_a_description_of_the_wrong_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="tool 'lookup': description must be a str, not int"):
        Tool(lookup, description=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tool 'lookup': description must be a str, not int"):
        tool(description=5)(lookup)  # type: ignore[call-overload]


def test_a_spec_that_is_not_a_tool_spec_names_the_tool() -> None:
    with pytest.raises(TypeError, match=r"'lookup'.*spec must be a ToolSpec"):
        Tool(lookup, spec="lookup")  # type: ignore[arg-type]


def test_as_tool_and_handoff_refuse_a_description_of_the_wrong_type_when_made() -> None:
    agent = Agent(ScriptedProvider(["ok"]), name="helper")
    with pytest.raises(TypeError, match="description must be a str"):
        agent.as_tool(description=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="description must be a str"):
        handoff(agent, description=5)  # type: ignore[arg-type]


def test_the_values_the_arguments_mean_are_still_accepted() -> None:
    made = Tool(
        lookup,
        name="weather",
        description="",
        timeout=10**6,
        result_ceiling=ResultCeiling(1000),
        hint=lambda text: None,
        sequential=True,
        read_only=True,
        requires_approval=True,
        approval="wait",
        approval_timeout=math.inf,
    )
    assert made.name == "weather" and made.timeout == 1e6 and made.approval_timeout == math.inf
    assert Tool(lookup, spec=ToolSpec("lookup", "d", {"type": "object", "properties": {}})).description == "d"
