"""Gemini's tool schemas: an array always carries ``items``, and a tuple keeps its element types.

Gemini answers an array with no ``items`` (a bare ``list`` / ``set`` / ``tuple`` / ``Sequence`` parameter, an
MCP server's schema) with 400 "...properties[xs].items: missing field" on every request: it is sent with
``items: {}`` (any element, as the converter already spells ``items: true``).  ``tuple[int, str]`` is
``prefixItems`` + ``items: false``; Gemini has no tuples, so the elements' schemas go as an ``anyOf``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentactors import tool
from agentactors.messages import LLMRequest, Message, ToolSpec
from agentactors.providers.gemini.provider import GeminiWire
from agentactors.providers.gemini.schema import to_gemini_schema


def _sent(spec: ToolSpec) -> dict[str, Any]:
    body = GeminiWire().encode_request(LLMRequest([Message.user("hi")], tools=[spec]), "gemini-2.5-flash", stream=False)
    return body["tools"][0]["functionDeclarations"][0]["parameters"]  # type: ignore[no-any-return]


def _arrays_without_items(node: Any, path: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        if node.get("type") == "array" and "items" not in node:
            found.append(path or "<root>")
        for key, value in node.items():
            found += _arrays_without_items(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _arrays_without_items(value, f"{path}[{i}]")
    return found


@tool
def tag(xs: list, s: set, t: tuple, e: tuple[()], q: Sequence, n: list[list], o: list | None = None) -> str:  # type: ignore[type-arg]
    """Tag things."""
    return "ok"


def test_arrays_without_items_are_sent_with_items() -> None:
    sent = _sent(tag.spec)
    assert _arrays_without_items(sent) == []
    assert sent["properties"]["xs"] == {"type": "array", "items": {}}
    assert sent["properties"]["n"] == {"type": "array", "items": {"type": "array", "items": {}}}
    assert sent["properties"]["o"] == {"type": "array", "nullable": True, "items": {}}
    mcp = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "array"}, {"type": "string"}]},
            "b": {"type": "object", "properties": {"c": {"type": ["array", "null"]}}},
            "e": {"$ref": "#/$defs/E"},
            "g": {"type": ["array", "string"]},
        },
        "$defs": {"E": {"type": "array"}},
    }
    assert _arrays_without_items(to_gemini_schema(mcp)) == []


@tool
def move(to: tuple[int, str], path: tuple[float, ...]) -> str:
    """Move."""
    return "ok"


def test_a_tuple_keeps_its_element_types() -> None:
    sent = _sent(move.spec)["properties"]
    assert sent["to"] == {
        "type": "array",
        "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "minItems": 2,
        "maxItems": 2,
    }
    assert sent["path"] == {"type": "array", "items": {"type": "number"}}
    # One positional schema is the items themselves; a boolean `items` beside prefixItems is no schema.
    assert to_gemini_schema({"type": "array", "prefixItems": [{"type": "string"}], "items": False}) == {
        "type": "array",
        "items": {"type": "string"},
    }
    assert to_gemini_schema({"type": "array", "prefixItems": [], "items": False}) == {"type": "array", "items": {}}
    assert to_gemini_schema({"type": "array", "items": True}) == {"type": "array", "items": {}}
