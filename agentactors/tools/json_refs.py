"""Local ``$ref``\\ s of a JSON Schema inlined: one self-contained schema, no ``$defs``.

Vendors take ``$ref`` unevenly (Gemini's tool schemas not at all, strict modes with limits), and a schema
nested inside another — a pydantic model's ``model_json_schema()`` as one tool parameter — would point its
``#/$defs/...`` at the wrong root.  Inlining makes every schema this package builds or sends self-contained.
A recursive reference cannot be inlined: it is refused, naming the cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["inline_refs"]

_MAX_DEPTH = 64
# Keywords whose values are data, not schemas: never walked for references.
_DATA = frozenset({"enum", "const", "default", "examples"})


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by what it points at, and ``$defs`` dropped.

    :raises ValueError: a reference that is recursive, external or points at nothing.
    """
    root = schema

    def resolve(ref: str, seen: tuple[str, ...]) -> Any:
        if not ref.startswith("#/"):
            raise ValueError(f"$ref {ref!r} is not a local reference; only '#/...' references can be inlined")
        if ref in seen:
            raise ValueError(f"$ref {ref!r} refers to itself ({' -> '.join((*seen, ref))}): a recursive "
                             "schema cannot be inlined")
        node: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise ValueError(f"$ref {ref!r} points at nothing in the schema")
            node = node[part]
        return walk(node, (*seen, ref), 0)

    def walk(node: Any, seen: tuple[str, ...], depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise ValueError("the schema is nested deeper than 64 levels")
        if isinstance(node, list):
            return [walk(v, seen, depth + 1) for v in node]
        if not isinstance(node, Mapping):
            return node
        if isinstance(node.get("$ref"), str):
            target = resolve(node["$ref"], seen)
            extra = {k: v for k, v in node.items() if k not in ("$ref", "$defs", "definitions")}
            extra = walk(extra, seen, depth + 1) if extra else {}
            return {**target, **extra} if isinstance(target, dict) else target
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "definitions"):
                continue
            if key in _DATA:
                out[key] = value
            elif key in ("properties", "patternProperties") and isinstance(value, Mapping):
                # A map of names to schemas: the names are data (a property may be called "enum").
                out[key] = {name: walk(sub, seen, depth + 1) for name, sub in value.items()}
            else:
                out[key] = walk(value, seen, depth + 1)
        return out

    out = walk(schema, (), 0)
    return out if isinstance(out, dict) else {}
