"""What the fake vendor answers when nothing was scripted: an echo, or (auto-tool mode) tool calls.

The auto-tool mode lets demo agents solve multi-tool tasks without scripting
thousands of conversations: while the request offers tools that the
conversation has not called yet, the fake model calls the next one with
arguments made up from its JSON Schema; then it answers with text that quotes
the tool results.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._fake_script import Conversation, FakeReply, FakeToolCall

__all__ = ["default_reply", "example_arguments", "example_value"]

_MAX_DEPTH = 8
_STRING_FORMATS = {
    "date": "2024-01-01",
    "date-time": "2024-01-01T00:00:00Z",
    "time": "12:00:00",
    "email": "user@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return {}
    node: Any = root
    for key in ref[2:].split("/"):
        if not isinstance(node, Mapping) or key not in node:
            return {}
        node = node[key]
    return node


def example_value(schema: Any, root: Mapping[str, Any] | None = None, depth: int = 0) -> Any:
    """A value that satisfies the common constraints of ``schema`` (enum → first value, ints, strings, ...)."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return "example"
    root = schema if root is None else root
    if isinstance(schema.get("$ref"), str):
        return example_value(_resolve(schema["$ref"], root), root, depth + 1)
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    if "default" in schema:
        return schema["default"]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            usable = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
            return example_value((usable or options)[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    kind = str(kind).lower()
    if kind == "string":
        fmt = schema.get("format")
        text = _STRING_FORMATS.get(str(fmt), "example")
        min_len = schema.get("minLength")
        if isinstance(min_len, int) and len(text) < min_len:
            text = text + "x" * (min_len - len(text))
        max_len = schema.get("maxLength")
        return text[:max_len] if isinstance(max_len, int) and max_len >= 0 else text
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        value: int | float = 1
        if isinstance(low, int | float):
            value = low + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
        elif isinstance(high, int | float) and high < 1:
            value = high - (1 if "exclusiveMaximum" in schema and "maximum" not in schema else 0)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        count = schema.get("minItems")
        count = count if isinstance(count, int) and count > 0 else 1
        return [example_value(schema.get("items", {}), root, depth + 1) for _ in range(count)]
    if kind == "object":
        return example_arguments(schema, root, depth)
    return "example"


def example_arguments(schema: Any, root: Mapping[str, Any] | None = None, depth: int = 0) -> dict[str, Any]:
    """Arguments for a tool whose parameters are ``schema``: its required properties (all, if none is required)."""
    if not isinstance(schema, Mapping):
        return {}
    root = schema if root is None else root
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return {}
    required = schema.get("required")
    names = [n for n in required if n in props] if isinstance(required, list) else list(props)
    return {name: example_value(props[name], root, depth + 1) for name in names}


def _answer_text(conv: Conversation) -> str:
    question = " ".join(conv.last_user_text.split())
    if len(question) > 200:
        question = question[:199] + "…"
    if conv.tool_results:
        found = "; ".join(f"{r.name or r.call_id or 'tool'}: {' '.join(r.content.split())[:200]}"
                          for r in conv.tool_results)
        return f"Here is what the tools said ({found}). That answers: {question or 'your question'}"
    return f"Echo: {question}" if question else "Hello from the fake vendor."


def default_reply(conv: Conversation | None, *, auto_tools: bool | int) -> FakeReply:
    """The unscripted answer to a request whose conversation reads as ``conv``."""
    if conv is None:
        return FakeReply(text="Hello from the fake vendor.")
    budget = len(conv.tools) if auto_tools is True else int(auto_tools)
    # A forced choice is honoured in any mode, as a vendor honours it (it never answers such a request with text);
    # auto_tools decides only whether the model calls the tools it is merely offered.
    forced = conv.tool_choice in ("required", "tool")
    if (auto_tools is not False or forced) and conv.tools and conv.tool_choice != "none":
        by_name = {t.name: t for t in conv.tools}
        target = None
        if conv.tool_choice == "tool" and conv.tool_choice_name in by_name:
            target = by_name[conv.tool_choice_name]
        else:
            called = {c.name for c in conv.tool_calls}
            fresh = [t for t in conv.tools if t.name not in called]
            if conv.tool_choice == "required":
                target = (fresh or list(conv.tools))[0]
            elif fresh and len(conv.tool_calls) < budget:
                target = fresh[0]
        if target is not None:
            return FakeReply(tool_calls=(FakeToolCall(target.name, example_arguments(target.parameters)),))
    text = _answer_text(conv)
    if conv.max_tokens is not None and len(text) > conv.max_tokens * 4:
        # Honour max_tokens the way a real model does: cut the text and say so.
        return FakeReply(text=text[: conv.max_tokens * 4], stop="max_tokens", output_tokens=conv.max_tokens)
    return FakeReply(text=text)
