"""``null`` for an optional property read as absent: what a model in a strict mode sends for "not given".

OpenAI's strict mode (a strict tool, a strict output format) requires every property, so an optional one is
made nullable and comes back as ``null`` when the model means to leave it out; models outside strict mode
often send ``null`` for an optional parameter too.  The schema the value is checked against says the property
may be left out, not that it may be ``null``: :func:`drop_null_optionals` takes such a ``null`` out, so the
check passes and the default applies.  A property whose own schema accepts ``null`` (``X | None``) keeps it: there
``null`` is a value — also when that schema is a ``$ref`` into the schema itself (MCP servers and pydantic write
nested types so), and when the reference does not resolve (not known to refuse ``null``: the schema check decides).
One rule for tool arguments and typed outputs (``docs/output.md``:
:mod:`agentactors.output.target` reads an output call's arguments with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .json_refs import pointed_at

__all__ = ["accepts_null", "drop_null_optionals", "has_null", "null_optionals"]

_MAX_DEPTH = 64


def drop_null_optionals(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` without ``null`` properties that are optional and do not accept ``null`` (read as absent).

    Strict mode fits nested objects the same way — a list's items, a tuple's, an optional sub-object
    (``anyOf``), a mapping's values — so the walk follows the schema into each of them (never deeper than
    the schema).  ``value`` itself is not changed; what holds nothing to drop is returned as it is.
    """
    return _drop(value, schema, 0, schema)


def _drop(value: Any, schema: Mapping[str, Any], depth: int, root: Mapping[str, Any]) -> Any:
    if depth > _MAX_DEPTH:
        return value
    schema = _branch(value, schema)
    if isinstance(value, list):
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if not isinstance(prefix, list):
            prefix = []
        if not prefix and not isinstance(items, Mapping):
            return value
        out_items: list[Any] = []
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else items
            out_items.append(_drop(item, sub, depth + 1, root) if isinstance(sub, Mapping) else item)
        return out_items
    if not isinstance(value, dict):
        return value
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    if not isinstance(properties, Mapping):
        if not isinstance(extra, Mapping):
            return value
        properties = {}
    required = schema.get("required")
    required = required if isinstance(required, list) else ()
    out: dict[str, Any] = {}
    for key, item in value.items():
        sub = properties.get(key)
        if item is None and key not in required and isinstance(sub, Mapping) and not accepts_null(sub, root):
            continue
        if sub is None and key not in properties:
            sub = extra  # a mapping's value (dict[str, Note]), when the schema names its type
        out[key] = _drop(item, sub, depth + 1, root) if isinstance(sub, Mapping) else item
    return out


def _branch(value: Any, schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The alternative of an ``anyOf`` / ``oneOf`` that ``value``'s shape belongs to (else ``schema`` itself).

    An object goes with the first object alternative that names all its keys; a list with the first array
    alternative.  (Only to know which ``null`` is optional: the schema check that follows decides.)
    """
    for key in ("anyOf", "oneOf"):
        alternatives = schema.get(key)
        if not isinstance(alternatives, list):
            continue
        for alt in alternatives:
            if not isinstance(alt, Mapping):
                continue
            if isinstance(value, dict):
                names = alt.get("properties")
                if isinstance(names, Mapping) and all(k in names for k in value):
                    return alt
            elif isinstance(value, list) and (alt.get("type") == "array" or "items" in alt or "prefixItems" in alt):
                return alt
    return schema


def has_null(value: Any) -> bool:
    """Whether ``value`` holds a ``null`` anywhere (iterative: no stack of its own)."""
    stack: list[Any] = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        item = pop()
        if item is None:
            return True
        if isinstance(item, dict):
            push(item.values())
        elif isinstance(item, list | tuple):
            push(item)
    return False


def accepts_null(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None, _depth: int = 0) -> bool:
    """Whether ``schema`` lets ``null`` through (a null type, a null branch, a null enum member, or no constraint).

    A ``$ref`` is followed into ``root`` (the schema it belongs to; a ``#/...`` pointer only): what it refers to
    decides.  One that cannot be followed there (no ``root``, another document, a missing target, a loop) may
    accept ``null``, as far as is known: ``True``, so the ``null`` is kept and the schema check decides.
    """
    if _depth > _MAX_DEPTH:
        return True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind) or not schema:
        return True
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _local(ref, root)
        if target is None or accepts_null(target, root, _depth + 1):
            return True
    for key in ("anyOf", "oneOf"):
        subs = schema.get(key)
        if isinstance(subs, list) and any(isinstance(s, Mapping) and accepts_null(s, root, _depth + 1) for s in subs):
            return True
    enum = schema.get("enum")
    return isinstance(enum, list) and None in enum


def _local(ref: str, root: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The schema ``ref`` (a ``#/...`` JSON pointer) points at in ``root``, or ``None``."""
    if root is None:
        return None
    try:
        node = pointed_at(root, ref)
    except LookupError:
        return None
    return node if isinstance(node, Mapping) else None


def null_optionals(schema: Mapping[str, Any]) -> tuple[bool, bool]:
    """``(at the top, deeper)``: whether an object of ``schema`` has an optional property that does not accept
    ``null`` — at its root, and anywhere below it.  Known once per schema, so a value whose schema has
    none is never walked."""
    return _optional_here(schema, schema), _optional_below(schema, 0, schema)


def _optional_here(node: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    properties = node.get("properties")
    if not isinstance(properties, Mapping):
        return False
    required = node.get("required")
    required = required if isinstance(required, list) else ()
    return any(name not in required and isinstance(sub, Mapping) and not accepts_null(sub, root)
               for name, sub in properties.items())


def _children(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        out += [s for s in properties.values() if isinstance(s, Mapping)]
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), Mapping):
            out.append(node[key])
    for key in ("prefixItems", "anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            out += [s for s in node[key] if isinstance(s, Mapping)]
    return out


def _optional_below(node: Mapping[str, Any], depth: int, root: Mapping[str, Any]) -> bool:
    if depth > _MAX_DEPTH:
        return True  # (not known: the walk, bounded itself, decides)
    return any(_optional_here(child, root) or _optional_below(child, depth + 1, root) for child in _children(node))
