"""JSON Schema → the OpenAPI subset Gemini accepts in ``functionDeclarations[].parameters``.

Gemini rejects, with a 400 on every request, much of what tool schemas commonly
carry: ``$ref``/``$defs``, ``additionalProperties``, ``const``, type unions,
``properties`` on a non-object, ``required`` naming an undeclared property,
non-string enums, string formats other than ``enum``/``date-time``.  This module
keeps what Gemini understands and rewrites or drops the rest, so a tool schema
written for any vendor can be sent to Gemini unchanged.

The conversion is a whitelist: unknown keywords disappear rather than reach the
wire.  Rules:

* kept: ``type`` (lower-case; OpenAPI upper-case input is accepted), ``description``,
  ``enum`` (strings only), ``format`` (where Gemini allows it for the type),
  ``items``, ``properties``, ``required``, ``nullable``, ``minItems``/``maxItems``,
  ``minLength``/``maxLength``, ``minProperties``/``maxProperties``,
  ``minimum``/``maximum``, ``pattern``, ``propertyOrdering``, ``anyOf``;
* ``const`` becomes a single-value ``enum``; ``oneOf`` becomes ``anyOf``
  (a looser but accepted constraint); ``allOf`` is merged into one schema;
* ``"type": ["X", "null"]``, ``anyOf: [X, {"type": "null"}]`` and a ``null`` enum
  member become ``X`` + ``"nullable": true``; several non-null types become an
  ``anyOf`` of one branch per type;
* local ``$ref``\\ s (``#/$defs/...``, ``#/definitions/...``, any JSON pointer into
  the root) are inlined; a recursive reference cannot be inlined and raises
  :class:`GeminiSchemaError` naming the cycle;
* non-string enum values (and a non-string ``const``) cannot be expressed, so the
  enum is dropped and the allowed values are appended to the description;
* an array always carries ``items`` (Gemini answers one without it with a 400): ``{}``, any element, when
  the schema names none (a bare ``list``); a tuple's ``prefixItems`` become an ``anyOf`` of its elements'
  schemas (its ``items: false`` is no element schema);
* ``properties``/``required`` appear only on objects, ``required`` names only
  declared properties (and is dropped when empty), a nested object with no
  properties carries none (Gemini rejects an empty ``properties`` below the top).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import AgentActorsError
from ...tools.json_refs import pointed_at
from ...tools.json_types import json_type_name

__all__ = ["GeminiSchemaError", "to_gemini_schema"]

# Deeper than any real tool schema; guards against pathological input before Python's own limit does.
_MAX_DEPTH = 64
_MAX_NODES = 10_000
_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})
# Gemini answers any other format with 400 "only 'enum' and 'date-time' are supported for STRING type".
_FORMATS: Mapping[str, frozenset[str]] = {
    "string": frozenset({"enum", "date-time"}),
    "number": frozenset({"float", "double"}),
    "integer": frozenset({"int32", "int64"}),
}
_BY_TYPE: Mapping[str, tuple[str, ...]] = {
    "string": ("minLength", "maxLength", "pattern"),
    "number": ("minimum", "maximum"),
    "integer": ("minimum", "maximum"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


class GeminiSchemaError(AgentActorsError, ValueError):
    """A JSON Schema that cannot be expressed in Gemini's subset (a recursive ``$ref``, a bad pointer)."""


def to_gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return the Gemini form of the JSON Schema ``schema`` (a new dict; the input is not modified).

    The top-level schema keeps an empty ``properties`` map when it has one
    (Gemini accepts that for a tool without parameters).  Raises
    :class:`GeminiSchemaError` for a recursive or unresolvable ``$ref`` and for a
    schema nested deeper than 64 levels.
    """
    if not isinstance(schema, Mapping):
        raise GeminiSchemaError(f"a schema must be an object, not {type(schema).__name__}")
    out = _Converter(schema).convert(schema, depth=0, refs=())
    if out.get("type") == "object" and "properties" not in out and isinstance(schema.get("properties"), Mapping):
        out["properties"] = {}
    return out


class _Converter:
    __slots__ = ("_nodes", "_root")

    def __init__(self, root: Mapping[str, Any]) -> None:
        self._root = root
        self._nodes = 0

    # -- references and combinators --------------------------------------------------------------

    def _resolve(self, ref: object, refs: tuple[str, ...]) -> tuple[Mapping[str, Any], tuple[str, ...]]:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise GeminiSchemaError(f"only local $ref pointers ('#/...') can be inlined for Gemini, not {ref!r}")
        if ref in refs:
            cycle = " -> ".join((*refs[refs.index(ref) :], ref))
            raise GeminiSchemaError(
                f"recursive $ref {ref!r} cannot be inlined for Gemini (cycle: {cycle}); "
                "flatten the schema or bound its depth"
            )
        try:
            target = pointed_at(self._root, ref)
        except LookupError as exc:
            raise GeminiSchemaError(str(exc)) from None
        if isinstance(target, bool):
            target = {}
        if not isinstance(target, Mapping):
            raise GeminiSchemaError(f"$ref {ref!r} does not point at a schema")
        return target, (*refs, ref)

    def _expand(
        self, node: Mapping[str, Any], refs: tuple[str, ...], depth: int
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """Inline ``$ref`` (siblings win over the target, as in draft 2019+) and merge ``allOf``."""
        if depth > _MAX_DEPTH:
            raise GeminiSchemaError(f"the schema is nested deeper than {_MAX_DEPTH} levels")
        node = dict(node)
        if "$ref" in node:
            target, refs = self._resolve(node.pop("$ref"), refs)
            expanded, refs = self._expand(target, refs, depth + 1)
            node = {**expanded, **node}
        all_of = node.pop("allOf", None)
        if isinstance(all_of, list):
            for sub in all_of:
                if not isinstance(sub, Mapping):
                    continue
                part, sub_refs = self._expand(sub, refs, depth + 1)
                node = _merge(node, part)
                refs = tuple(dict.fromkeys((*refs, *sub_refs)))
        return node, refs

    # -- conversion ------------------------------------------------------------------------------

    def convert(self, raw: Any, *, depth: int, refs: tuple[str, ...]) -> dict[str, Any]:
        if isinstance(raw, bool) or raw is None:
            return {}  # true / absent: anything goes, which Gemini spells as no constraint
        if not isinstance(raw, Mapping):
            raise GeminiSchemaError(f"a schema must be an object, not {type(raw).__name__}")
        self._nodes += 1
        if self._nodes > _MAX_NODES:
            # Shared $refs expand multiplicatively; a schema this large would be rejected anyway.
            raise GeminiSchemaError(f"the schema expands to more than {_MAX_NODES} sub-schemas once $refs are inlined")
        node, refs = self._expand(raw, refs, depth)
        nullable = node.get("nullable") is True
        types, type_nullable = _types(node.get("type"))
        nullable = nullable or type_nullable

        enum: list[Any] | None = None
        if "const" in node:
            enum = [node["const"]]
        elif isinstance(node.get("enum"), list):
            enum = list(node["enum"])
        if enum is not None and None in enum:
            nullable = True
            enum = [v for v in enum if v is not None]

        branches_raw = node.get("anyOf", node.get("oneOf"))
        branches: list[dict[str, Any]] = []
        if isinstance(branches_raw, list):
            for sub in branches_raw:
                branch = self.convert(sub, depth=depth + 1, refs=refs)
                if branch == {"nullable": True} or branch.get("type") == "null":
                    nullable = True
                else:
                    branches.append(branch)

        if not types:
            types = _infer_type(node, enum)
        description = node.get("description") if isinstance(node.get("description"), str) else None

        if len(types) > 1:
            # A union of real types: one branch per type, each keeping what applies to it.
            rest = {k: v for k, v in node.items() if k not in ("type", "description", "nullable", "anyOf", "oneOf")}
            out: dict[str, Any] = {
                "anyOf": [self.convert({**rest, "type": t}, depth=depth + 1, refs=refs) for t in types]
            }
        else:
            out = self._typed(node, types[0] if types else None, enum, depth, refs)
            if enum is not None and "enum" not in out and enum:
                description = _with_allowed(description, enum)

        if branches:
            if len(branches) == 1 and not types:
                # anyOf [X, null]: X itself, made nullable; the node's own description wins.
                merged = {**branches[0], **out}
                if "description" in branches[0] and description is None:
                    description = branches[0]["description"]
                out = merged
            elif "anyOf" not in out:
                out["anyOf"] = branches
        if description:
            out["description"] = description
        elif "description" in out and not out["description"]:
            del out["description"]
        if nullable:
            out["nullable"] = True
        return _ordered(out)

    def _typed(
        self, node: Mapping[str, Any], kind: str | None, enum: list[Any] | None, depth: int, refs: tuple[str, ...]
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if kind is not None:
            out["type"] = kind
        if enum is not None and enum and (kind in ("string", None)) and all(isinstance(v, str) for v in enum):
            out["type"] = "string"
            out["enum"] = enum
        fmt = node.get("format")
        if isinstance(fmt, str) and kind is not None and fmt in _FORMATS.get(kind, ()):
            out["format"] = fmt
        for key in _BY_TYPE.get(kind or "", ()):
            value = node.get(key)
            if key == "pattern":
                if isinstance(value, str):
                    out[key] = value
            elif isinstance(value, int | float) and not isinstance(value, bool):
                out[key] = value
        if kind == "array":
            # prefixItems first: a tuple's `items` is the boolean false ("nothing past these"), no element schema.
            prefix = node.get("prefixItems")
            items = prefix if isinstance(prefix, list) else node.get("items")
            if isinstance(items, list):
                # Tuple validation has no Gemini form: accept any of the positional schemas.
                converted = [self.convert(i, depth=depth + 1, refs=refs) for i in items]
                if len(converted) == 1:
                    out["items"] = converted[0]
                elif converted:
                    out["items"] = {"anyOf": converted}
            elif isinstance(items, Mapping):
                out["items"] = self.convert(items, depth=depth + 1, refs=refs)
            # Gemini refuses an array without items ("items: missing field", a 400 on every request); a bare
            # list's (JSON Schema's "any element") is spelled as the converter spells `items: true`.
            out.setdefault("items", {})
        elif kind == "object":
            props = node.get("properties")
            if isinstance(props, Mapping) and props:
                out["properties"] = {
                    str(name): self.convert(sub, depth=depth + 1, refs=refs) for name, sub in props.items()
                }
                required = _names_in(node.get("required"), out["properties"])
                if required:
                    out["required"] = required
                ordering = _names_in(node.get("propertyOrdering"), out["properties"])
                if ordering:
                    out["propertyOrdering"] = ordering
        return out


# -- helpers -------------------------------------------------------------------------------------


def _types(value: Any) -> tuple[list[str], bool]:
    """(non-null types in order, whether null was among them); OpenAPI upper-case is accepted."""
    raw: list[Any] = value if isinstance(value, list) else [value] if value is not None else []
    types: list[str] = []
    nullable = False
    for t in raw:
        if not isinstance(t, str):
            continue
        t = t.lower()
        if t == "null":
            nullable = True
        elif t in _TYPES and t not in types:
            types.append(t)
    return types, nullable


def _infer_type(node: Mapping[str, Any], enum: list[Any] | None) -> list[str]:
    # Gemini rejects properties/items on a schema without the matching type (JSON Schema allows it).
    if isinstance(node.get("properties"), Mapping) or "required" in node:
        return ["object"]
    if "items" in node or "prefixItems" in node:
        return ["array"]
    if enum:
        kinds = {_json_kind(v) for v in enum}
        if len(kinds) == 1:
            return [kinds.pop()]
    return []


def _json_kind(value: Any) -> str:
    # Enum values come from JSON; a null (or anything JSON has no name for) is described as an object.
    name = json_type_name(value)
    return name if name is not None and name != "null" else "object"


def _with_allowed(description: str | None, values: Sequence[Any]) -> str:
    listed = ", ".join(json.dumps(v, ensure_ascii=False, sort_keys=True) for v in values)
    note = f"Allowed values: {listed}." if len(values) > 1 else f"Must be {listed}."
    return f"{description.rstrip()} {note}" if description else note


def _names_in(value: Any, properties: Mapping[str, Any]) -> list[str]:
    if not isinstance(value, list):
        return []
    seen: list[str] = []
    for name in value:
        if isinstance(name, str) and name in properties and name not in seen:
            seen.append(name)
    return seen


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``allOf`` merge: properties and required are unions, otherwise the first value seen wins."""
    out = dict(base)
    for key, value in extra.items():
        if key == "properties" and isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = {**value, **out[key]}
        elif key == "required" and isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = [*out[key], *(v for v in value if v not in out[key])]
        elif key not in out:
            out[key] = value
    return out


_ORDER = ("type", "format", "description", "nullable", "enum", "anyOf", "items", "properties", "required")


def _ordered(out: dict[str, Any]) -> dict[str, Any]:
    # A stable, readable key order (the wire does not care; logs and diffs do).
    head = {k: out[k] for k in _ORDER if k in out}
    head.update((k, v) for k, v in out.items() if k not in head)
    return head
