"""JSON Schema → what a vendor's constrained decoding accepts for a JSON-schema response format.

A response format (:class:`~agentactors.messages.ResponseFormat`) is enforced by the vendor while it
generates, so each vendor accepts only the part of JSON Schema its decoder can compile, and answers
anything else with a 400 on every request.  These functions fit an output type's schema to that part
*before* sending, the way each vendor's own SDK does:

* **OpenAI strict mode** (``response_format.json_schema.strict: true``): every object closed
  (``additionalProperties: false``) with every property required — an optional property becomes
  required and nullable (the loop reads ``null`` back as "absent") and loses its ``default``; the root
  an object; only the keywords OpenAI lists as supported.  With ``strict: false`` the schema goes as
  written.
* **Anthropic** (``output_config.format``): every object closed; no numeric, string-length or array
  constraints beyond ``minItems`` of 0 or 1.

A keyword a vendor does not carry is taken out and written into the node's ``description`` (so the
model still reads it); the loop validates every answer against the full schema anyway, so nothing
is lost.  What no rewrite can express — an open mapping (``dict[str, V]``), a tuple — raises
``ValueError`` naming the field, which the provider turns into a request-kind error before sending.

Local ``$ref``\\ s are inlined first (the output schemas of this package have none; a user's
hand-written one may); a recursive one cannot be, and is refused naming the cycle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..tools.json_refs import inline_refs

__all__ = ["anthropic_output_schema", "openai_strict_schema"]

_MAX_DEPTH = 64

# What OpenAI's strict mode compiles (its "supported schemas" list).
_OPENAI_KEYS = frozenset(
    {
        "type", "description", "title", "enum", "const", "properties", "required", "additionalProperties",
        "items", "anyOf", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
        "exclusiveMinimum", "minItems", "maxItems",
    }
)
# What Anthropic's structured outputs compile.
_ANTHROPIC_KEYS = frozenset(
    {
        "type", "description", "title", "enum", "const", "properties", "required", "additionalProperties",
        "items", "anyOf", "allOf", "format", "minItems", "default",
    }
)
_ANTHROPIC_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4",
                                "ipv6", "uuid"})


def _where(path: str) -> str:
    return path or "the answer (the schema's root)"


def _note(node: dict[str, Any], dropped: Mapping[str, Any]) -> None:
    if not dropped:
        return
    words = "; ".join(f"{k}: {json.dumps(v, ensure_ascii=False, default=str)}" for k, v in dropped.items())
    description = node.get("description")
    node["description"] = f"{description} ({words})" if description else f"({words})"


def _allows_null(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if isinstance(node.get("anyOf"), list):
        return any(isinstance(s, Mapping) and _allows_null(s) for s in node["anyOf"])
    return "enum" in node and None in node["enum"]


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` that also accepts ``null`` (how strict mode spells an optional property)."""
    if _allows_null(node):
        return node
    out = dict(node)
    kind = out.get("type")
    if isinstance(kind, str) and "anyOf" not in out:
        out["type"] = [kind, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    description = out.pop("description", None)
    wrapped: dict[str, Any] = {"anyOf": [out, {"type": "null"}]}
    if description:
        wrapped["description"] = description
    return wrapped


def _closed_object(node: dict[str, Any], path: str, vendor: str) -> None:
    extra = node.get("additionalProperties")
    properties = node.get("properties")
    if extra not in (None, False) or not isinstance(properties, Mapping):
        raise ValueError(
            f"{_where(path)} is an open mapping (an object with no fixed properties, like dict[str, ...]): "
            f"{vendor}'s constrained decoding only carries objects whose properties are all named; "
            "use a class with named fields, ToolOutput, or PromptedOutput"
        )
    node["additionalProperties"] = False


def _fit(node: Any, path: str, *, allowed: frozenset[str], strict_required: bool, vendor: str, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("the schema is nested deeper than 64 levels")
    if not isinstance(node, Mapping):
        return node
    if "prefixItems" in node:
        raise ValueError(f"{_where(path)} is a fixed-length tuple: {vendor}'s constrained decoding cannot carry "
                         "'prefixItems'; use a list or a class with named fields")
    out: dict[str, Any] = {}
    dropped: dict[str, Any] = {}
    for key, value in node.items():
        if key in allowed:
            out[key] = value
        elif key not in ("$defs", "definitions", "$schema"):
            dropped[key] = value
    if vendor == "Anthropic":
        if "minItems" in out and out["minItems"] not in (0, 1):
            dropped["minItems"] = out.pop("minItems")
        if "format" in out and out["format"] not in _ANTHROPIC_FORMATS:
            dropped["format"] = out.pop("format")
    kind = out.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in out
    if is_object:
        _closed_object(out, path, vendor)
        required = list(out.get("required") or [])
        properties: dict[str, Any] = {}
        for name, sub in out["properties"].items():
            fitted = _fit(sub, f"{path}.{name}" if path else name, allowed=allowed,
                          strict_required=strict_required, vendor=vendor, depth=depth + 1)
            if strict_required and name not in required:
                if isinstance(fitted, dict):
                    fitted = _nullable({k: v for k, v in fitted.items() if k != "default"})
                required.append(name)
            properties[name] = fitted
        out["properties"] = properties
        if strict_required or required:
            out["required"] = required
    if isinstance(out.get("items"), Mapping):
        out["items"] = _fit(out["items"], f"{path}[]", allowed=allowed, strict_required=strict_required,
                            vendor=vendor, depth=depth + 1)
    for key in ("anyOf", "allOf"):
        if isinstance(out.get(key), list):
            out[key] = [
                _fit(s, path, allowed=allowed, strict_required=strict_required, vendor=vendor, depth=depth + 1)
                for s in out[key]
            ]
    _note(out, dropped)
    return out


def openai_strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as OpenAI's strict mode accepts it (see the module docstring).

    :raises ValueError: the root is not an object, or a field cannot be carried (named in the message).
    """
    inlined = inline_refs(schema)
    if inlined.get("type") != "object":
        raise ValueError("OpenAI's strict mode needs an object at the schema's root")
    out = _fit(inlined, "", allowed=_OPENAI_KEYS, strict_required=True, vendor="OpenAI", depth=0)
    assert isinstance(out, dict)
    return out


def anthropic_output_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as Anthropic's ``output_config.format`` accepts it (see the module docstring).

    :raises ValueError: a field cannot be carried (named in the message).
    """
    out = _fit(inline_refs(schema), "", allowed=_ANTHROPIC_KEYS, strict_required=False, vendor="Anthropic",
               depth=0)
    assert isinstance(out, dict)
    return out
