"""A schema is checked and compiled once per process, however many tools (or relistings) carry it.

An MCP server listed again after a reconnect, thousands of tools sharing one schema, an agent built per
request with the same output type: each used to pay the meta-schema check and the compilation (a few
milliseconds apiece) again.  What must hold besides: the compiled form is the process's own copy (a caller
mutating its dict afterwards changes nothing), issues keep the schema's order, and an invalid schema
still fails each time, naming its tool.
"""

from __future__ import annotations

import uuid
from typing import Any

import jsonschema
import pytest

from agentactors.messages import ToolSpec
from agentactors.tools import Tool


def _schema() -> dict[str, Any]:
    """A schema no other test has compiled (a fresh property name), in order: b before a."""
    fresh = f"p_{uuid.uuid4().hex}"
    return {
        "type": "object",
        "properties": {"b": {"type": "integer"}, "a": {"type": "string"}, fresh: {"type": "boolean"}},
        "required": ["b", "a"],
        "additionalProperties": False,
    }


async def _remote(**arguments: Any) -> str:
    return "ok"


def _tool(name: str, schema: dict[str, Any]) -> Tool[Any, Any]:
    return Tool.from_spec(ToolSpec(name, "A remote tool.", schema), _remote)


def test_a_schema_seen_before_is_not_checked_or_compiled_again(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[object] = []
    original = jsonschema.Draft202012Validator.check_schema

    def counting(schema: Any, *args: Any, **kwargs: Any) -> None:
        checked.append(schema)
        original(schema, *args, **kwargs)

    monkeypatch.setattr(jsonschema.Draft202012Validator, "check_schema", counting)
    schema = _schema()
    # Equal content in distinct dicts, as a relisting or a thousand same-shaped tools bring it.
    tools = [_tool(f"tool_{i}", {**schema, "properties": dict(schema["properties"])}) for i in range(200)]
    assert len(checked) == 1
    for t in tools:  # each validates as its schema says
        assert t.validate({"b": 1, "a": "x"}) == []
        assert [i.path for i in t.validate({"b": "x", "a": 2})] == ["b", "a"]


def test_mutating_the_schema_afterwards_changes_nothing_compiled() -> None:
    schema = _schema()
    first = _tool("first", schema)
    schema["properties"]["b"] = {"type": "string"}  # the caller's dict, changed after the tool was built
    schema["required"] = []
    assert [i.path for i in first.validate({"a": "x"})] == ["b"]  # still required, still an integer
    assert [i.path for i in first.validate({"b": "1", "a": "x"})] == ["b"]
    second = _tool("second", schema)  # the changed schema is another schema, compiled as it now is
    assert second.validate({"b": "1", "a": "x"}) == []


def test_issues_keep_the_order_of_each_schema() -> None:
    schema = _schema()
    reordered = {**schema, "properties": dict(reversed(list(schema["properties"].items())))}
    assert [i.path for i in _tool("in_order", schema).validate({"b": "x", "a": 1})] == ["b", "a"]
    assert [i.path for i in _tool("reversed", reordered).validate({"b": "x", "a": 1})] == ["a", "b"]


def test_an_invalid_schema_fails_every_time_naming_its_tool() -> None:
    bad = {"type": "object", "properties": {"n": {"type": "integr"}}}
    for name in ("one", "two"):
        with pytest.raises(ValueError, match=rf"tool '{name}': its parameters are not a valid JSON Schema"):
            _tool(name, bad)


def test_a_schema_with_no_json_form_is_still_compiled() -> None:
    # A float('inf') bound has no JSON text (no cache key): it is compiled as it is, and works.
    schema = {"type": "object", "properties": {"n": {"type": "number", "maximum": float("inf")}}}
    t = _tool("unbounded", schema)
    assert t.validate({"n": 1e300}) == []
    assert [i.path for i in t.validate({"n": "x"})] == ["n"]
