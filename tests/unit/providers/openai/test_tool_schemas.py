"""Tool schemas fitted to OpenAI's wires (Chat Completions, Responses, and Azure, which reuses both).

* An array with no ``items`` (a bare ``list`` / ``set`` / ``tuple`` / ``Sequence`` parameter, or an MCP
  server's schema) is valid JSON Schema but a 400 on OpenAI ("array schema missing items"): every wire
  sends ``"items": {}`` (any element, the same meaning) in its place, at any depth.
* ``strict_tools`` sends the schema fitted to strict mode (every property required, every object closed),
  and refuses, before sending, a tool strict mode cannot carry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from agentactors import tool
from agentactors.errors import ErrorKind, UnsupportedSettingError
from agentactors.messages import LLMRequest, Message, ToolSpec
from agentactors.providers.azure import AzureChatWire, AzureResponsesWire
from agentactors.providers.openai.provider import OpenAIWire
from agentactors.providers.responses.provider import ResponsesWire

Params = Callable[[LLMRequest], dict[str, Any]]


def _chat(request: LLMRequest) -> dict[str, Any]:
    body = OpenAIWire(official=True).encode_request(request, "gpt-4o", stream=False)
    return body["tools"][0]["function"]  # type: ignore[no-any-return]


def _responses(request: LLMRequest) -> dict[str, Any]:
    body = ResponsesWire(official=True).encode_request(request, "gpt-4o", stream=False)
    return body["tools"][0]  # type: ignore[no-any-return]


def _azure_chat(request: LLMRequest) -> dict[str, Any]:
    body = AzureChatWire("dep", api_version="2024-10-21", model="gpt-4o").encode_request(request, "dep", stream=False)
    return body["tools"][0]["function"]  # type: ignore[no-any-return]


def _azure_responses(request: LLMRequest) -> dict[str, Any]:
    body = AzureResponsesWire("dep", model="gpt-4o").encode_request(request, "dep", stream=False)
    return body["tools"][0]  # type: ignore[no-any-return]


WIRES = pytest.mark.parametrize(
    ("encode", "key"),
    [
        (_chat, "openai"),
        (_responses, "openai-responses"),
        (_azure_chat, "openai"),
        (_azure_responses, "openai-responses"),
    ],
    ids=["chat", "responses", "azure-chat", "azure-responses"],
)


def _arrays_without_items(node: Any, path: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        kind = node.get("type")
        if (kind == "array" or (isinstance(kind, list) and "array" in kind)) and "items" not in node:
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


# An MCP server's schema: arrays without items under anyOf, $defs, items and nested properties.
MCP_SPEC = ToolSpec(
    "mcp_tool",
    "From a server.",
    {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "array"}, {"type": "string"}]},
            "b": {"type": "object", "properties": {"c": {"type": ["array", "null"]}}},
            "d": {"type": "array", "items": {"type": "array"}},
            "e": {"$ref": "#/$defs/E"},
            "f": {"oneOf": [{"allOf": [{"type": "array"}]}]},
            "g": {"type": "array", "items": {"type": "string"}},
        },
        "$defs": {"E": {"type": "array"}},
    },
)


@WIRES
def test_arrays_without_items_get_an_any_items_schema(encode: Params, key: str) -> None:
    for spec in (tag.spec, MCP_SPEC):
        sent = encode(LLMRequest([Message.user("hi")], tools=[spec]))["parameters"]
        assert _arrays_without_items(sent) == [], spec.name
    sent = encode(LLMRequest([Message.user("hi")], tools=[MCP_SPEC]))["parameters"]
    assert sent["properties"]["a"]["anyOf"][0] == {"type": "array", "items": {}}
    assert sent["properties"]["d"] == {"type": "array", "items": {"type": "array", "items": {}}}
    assert sent["properties"]["g"] == {"type": "array", "items": {"type": "string"}}  # kept as written
    assert sent["$defs"]["E"] == {"type": "array", "items": {}}


def test_the_tool_spec_itself_is_not_changed_and_the_fitting_is_remembered() -> None:
    before = repr(MCP_SPEC.parameters)
    request = LLMRequest([Message.user("hi")], tools=[MCP_SPEC])
    first = _chat(request)["parameters"]
    assert repr(MCP_SPEC.parameters) == before  # the spec (the tool's validator reads it) keeps its schema
    assert _chat(request)["parameters"] is first  # fitted once per schema, not per request
    # A schema with nothing to fit is sent as it is, not copied.
    plain = ToolSpec("p", "", {"type": "object", "properties": {"x": {"type": "string"}}})
    assert _chat(LLMRequest([Message.user("hi")], tools=[plain]))["parameters"] is plain.parameters


class Filter(BaseModel):
    field: str
    exact: bool = False


@tool
def search(query: str, limit: int = 10, where: Filter | None = None) -> str:
    """Search."""
    return "ok"


def _strict(encode: Params, key: str, *specs: ToolSpec, option: Any = True) -> dict[str, Any]:
    return encode(LLMRequest([Message.user("hi")], tools=list(specs), vendor_options={key: {"strict_tools": option}}))


def _objects(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            found.append(node)
        for value in node.values():
            found += _objects(value)
    elif isinstance(node, list):
        for value in node:
            found += _objects(value)
    return found


@WIRES
def test_a_strict_tool_is_sent_fitted_to_strict_mode(encode: Params, key: str) -> None:
    function = _strict(encode, key, search.spec)
    assert function["strict"] is True
    sent = function["parameters"]
    assert sent["required"] == ["query", "limit", "where"]
    # Optional: nullable, its default said in words (strict mode takes no `default`).
    assert sent["properties"]["limit"] == {"type": ["integer", "null"], "description": "(default: 10)"}
    for node in _objects(sent):  # every object closed, every property required, nested ones too
        assert node["additionalProperties"] is False
        assert sorted(node["required"]) == sorted(node["properties"])
    # The tool keeps its own schema (its validator reads it); a tool not named is sent as built.
    assert search.spec.parameters["required"] == ["query"]
    loose = _strict(encode, key, search.spec, option=["other"])
    assert loose["parameters"] is search.spec.parameters
    assert loose.get("strict", False) is False


@WIRES
def test_a_schema_strict_mode_takes_already_is_sent_as_written(encode: Params, key: str) -> None:
    ready = ToolSpec(
        "final_result",
        "",
        {
            "type": "object",
            "properties": {"answers": {"type": "array", "items": {"$ref": "#/$defs/A"}}},
            "required": ["answers"],
            "additionalProperties": False,
            "$defs": {
                "A": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"],
                      "additionalProperties": False}
            },
        },
    )
    assert _strict(encode, key, ready)["parameters"] is ready.parameters  # $defs and $ref kept


@tool
def labels(tags: dict[str, str]) -> str:
    """An open mapping."""
    return "ok"


@tool
def bag(xs: list) -> str:  # type: ignore[type-arg]
    """A bare list."""
    return "ok"


@tool
def pair(p: tuple[int, str]) -> str:
    """A tuple."""
    return "ok"


@WIRES
@pytest.mark.parametrize(("spec", "field"), [(labels.spec, "tags"), (bag.spec, "xs"), (pair.spec, "p")])
def test_a_strict_tool_strict_mode_cannot_carry_is_refused_before_sending(
    encode: Params, key: str, spec: ToolSpec, field: str
) -> None:
    with pytest.raises(UnsupportedSettingError) as caught:
        _strict(encode, key, search.spec, spec)
    error = caught.value
    assert error.kind is ErrorKind.request and error.retryable is False and error.setting == "strict_tools"
    assert repr(spec.name) in str(error) and field in str(error) and "nothing was sent" in str(error)
    # Named tools only: the others are strict, this one is sent as it is.
    assert _strict(encode, key, search.spec, spec, option=["search"])["parameters"]["required"] == [
        "query", "limit", "where"
    ]
