"""The JSON Schema type name of a Python value, shared by schema generation, validation texts and the
Gemini schema sanitiser (one mapping, so they never disagree on what ``True`` or ``3.0`` is)."""

from __future__ import annotations

from typing import Any

__all__ = ["json_type_name"]


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
