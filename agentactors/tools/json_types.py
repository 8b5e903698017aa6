"""The JSON Schema type name of a Python value, shared by schema generation, validation texts and the
Gemini schema sanitiser (one mapping, so they never disagree on what ``True`` or ``3.0`` is); and a schema
described in a few words (:func:`describe_schema`), for the texts of validation issues and tool listings."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["describe_schema", "json_type_name"]


def json_type_name(value: Any) -> str | None:
    """``"null"``, ``"boolean"``, ``"integer"``, ``"number"``, ``"string"``, ``"array"`` or ``"object"``;
    ``None`` for a value JSON has no type for.  ``bool`` is checked before ``int`` (it is one)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


def describe_schema(schema: Any) -> str:
    """A short human description of a schema: ``integer``, ``array of string``, ``one of 'a', 'b'``."""
    if not isinstance(schema, dict) or not schema:
        return "any value"
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"][:12])
    if "const" in schema:
        return "the constant " + json.dumps(schema["const"], ensure_ascii=False)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(dict.fromkeys(describe_schema(s) for s in schema[key]))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array":
        items = schema.get("items")
        if isinstance(items, dict) and items:
            return f"array of {describe_schema(items)}"
        if "prefixItems" in schema:
            return "array [" + ", ".join(describe_schema(s) for s in schema["prefixItems"]) + "]"
        return "array"
    if kind == "object" and isinstance(schema.get("properties"), dict):
        return "object {" + ", ".join(schema["properties"]) + "}"
    if kind == "string" and "format" in schema:
        return f"string ({schema['format']})"
    return str(kind) if kind else "any value"
