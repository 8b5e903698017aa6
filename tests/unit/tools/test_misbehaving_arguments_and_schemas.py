"""Arguments and schemas that break validation in odd ways: nested past what a recursive check can walk.

A model can send arguments nested a few hundred levels deep (a JSON parser takes them); under a recursive
schema (``$ref``) ``jsonschema`` recurses once per level and runs out of stack.  That must be the call's
``invalid`` result, not a ``RecursionError`` out of the executor that ends the run.  A tool schema nested
too deeply to check (an MCP server can list one) must be refused as an invalid schema, a ``ValueError``
like any other, so that whoever builds the tool can leave that one tool out.  Both backends.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import Agent, Runtime, ScriptedProvider, ToolCall
from agentactors.messages import ToolSpec
from agentactors.tools import ToolStatus
from agentactors.tools.executor import ToolExecutorActor
from agentactors.tools.registry import Tool

pytestmark = pytest.mark.anyio

#: A tree of nodes: the schema refers to itself, so ``jsonschema`` follows the arguments as deep as they go.
RECURSIVE = {
    "type": "object",
    "properties": {"tree": {"$ref": "#/$defs/node"}},
    "required": ["tree"],
    "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
}


def nested(depth: int, leaf: Any) -> dict[str, Any]:
    value: dict[str, Any] = {"child": leaf}
    for _ in range(depth):
        value = {"child": value}
    return value


async def take_tree(**arguments: Any) -> str:
    return "ran"


def tree_tool() -> Tool[Any, Any]:
    return Tool.from_spec(ToolSpec("take_tree", "Takes a tree.", RECURSIVE), take_tree)


@pytest.mark.parametrize("depth", [400, 900])
async def test_arguments_nested_too_deeply_for_the_check_are_an_invalid_result(depth: int) -> None:
    executor = ToolExecutorActor([tree_tool()])
    with anyio.fail_after(30):
        result = await executor.execute_one(ToolCall("1", "take_tree", {"tree": nested(depth, 5)}))
    assert result.status is ToolStatus.invalid
    assert "nested too deeply" in result.content
    assert "the call was not executed" in result.content


async def test_a_run_whose_model_sends_arguments_nested_too_deeply_goes_on_to_its_answer() -> None:
    provider = ScriptedProvider(
        [
            ToolCall("1", "take_tree", {"tree": nested(600, 5)}),
            ToolCall("2", "take_tree", {"tree": nested(3, {})}),
            "done",
        ]
    )
    agent = Agent(provider, tools=[tree_tool()], max_steps=5)
    with anyio.fail_after(30):
        async with Runtime():
            result = await agent.run("go")
    assert result.content == "done"
    texts = [m.content for m in result.messages if m.role == "tool"]
    assert texts[0].startswith("Invalid arguments for tool 'take_tree'") and "nested too deeply" in texts[0]
    assert texts[1] == "ran"


def test_arguments_a_little_too_deep_are_still_listed_issue_by_issue() -> None:
    # The fallback is for the stack running out, not for every nested call: a shallow error says where it is.
    issues = tree_tool().validate({"tree": nested(3, 5)})
    assert [issue.path for issue in issues] == ["tree.child.child.child.child"]


@pytest.mark.parametrize("depth", [100, 300])
def test_a_schema_nested_too_deeply_to_check_is_an_invalid_schema(depth: int) -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"anyOf": [schema, {"type": "null"}]}
    spec = ToolSpec("deep", "Deep.", {"type": "object", "properties": {"a": schema}})
    with pytest.raises(ValueError, match="nested too deeply"):
        Tool.from_spec(spec, take_tree)
