"""A ``null`` that a property's schema accepts through a ``$ref`` is a value, not "left out" (tools/json_nulls).

MCP servers and pydantic write a property's schema as a ``$ref`` into ``$defs``; a ``null`` the referenced schema
accepts reached the tool dropped, as if the model had left the property out (found by
tests/integration/test_mcp_generated.py: an MCP server received ``{}`` for ``{"x": null}``).
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import ToolSpec
from agentactors.tools.json_nulls import drop_null_optionals
from agentactors.tools.registry import Tool

NULLABLE_BY_REF: dict[str, Any] = {
    "type": "object",
    "properties": {"x": {"$ref": "#/$defs/maybe"}, "n": {"type": "integer"}},
    "$defs": {"maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
}


def test_a_null_the_referenced_schema_accepts_is_kept() -> None:
    assert drop_null_optionals({"x": None}, NULLABLE_BY_REF) == {"x": None}
    # A null the schema does not accept is still read as omitted.
    assert drop_null_optionals({"x": None, "n": None}, NULLABLE_BY_REF) == {"x": None}


def test_a_ref_to_a_schema_that_takes_no_null_still_drops_it() -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}}
    assert drop_null_optionals({"x": None}, schema) == {}


def test_a_ref_that_does_not_resolve_keeps_the_null() -> None:
    # Not known to refuse null: the value stays, and the schema check decides.
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/absent"}}}
    assert drop_null_optionals({"x": None}, schema) == {"x": None}


@pytest.mark.anyio
async def test_a_tool_receives_the_null_it_was_sent() -> None:
    received: list[dict[str, Any]] = []

    async def record(**arguments: Any) -> str:
        received.append(arguments)
        return "ok"

    built: Tool[Any, Any] = Tool.from_spec(ToolSpec("t", "", NULLABLE_BY_REF), record)
    assert built.validate({"x": None}) == []
    await built.start({"x": None})
    assert received == [{"x": None}]


@pytest.mark.anyio
async def test_a_tool_whose_only_optional_is_a_ref_taking_no_null_gets_its_default() -> None:
    # The tool decides once whether its schema has a null to drop at all (null_optionals): a $ref it could not
    # follow there read as "may be null", so the null a model sends for "left out" reached the check and failed.
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"opts": {"$ref": "#/$defs/Opts"}},
        "$defs": {"Opts": {"type": "object", "properties": {"depth": {"type": "integer"}}}},
    }
    received: list[dict[str, Any]] = []

    async def record(**arguments: Any) -> str:
        received.append(arguments)
        return "ok"

    built: Tool[Any, Any] = Tool.from_spec(ToolSpec("t", "", schema), record)
    assert built.validate({"opts": None}) == []
    await built.start({"opts": None})
    assert received == [{}]
