"""One reading of a local ``$ref`` everywhere one is followed by hand (``tools.json_refs.pointed_at``).

The validator (``referencing``) reads a reference as RFC 6901 pointer in a URI fragment: into an array by index,
percent-decoded, ``~1``/``~0`` unescaped.  Inlining a schema before it is sent (OpenAI's strict tools, constrained
outputs, a tool's schema), the served endpoint's ``response_format`` check and the null rule walked mappings only,
so a schema the validator took — a ``$ref`` to ``#/properties/a/anyOf/0`` — was refused when sent
("points at nothing").
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.providers.gemini.schema import GeminiSchemaError, to_gemini_schema
from agentactors.serve._openai_input import BadRequest, read_chat_request
from agentactors.tools.json_nulls import drop_null_optionals
from agentactors.tools.json_refs import check_refs_resolve, inline_refs, pointed_at

INTO_AN_ARRAY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "a": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "integer"}]},
        "b": {"$ref": "#/properties/a/anyOf/0"},
        "c/d": {"type": "boolean"},
        "e": {"$ref": "#/properties/c~1d"},
        "f g": {"type": "number"},
        "h": {"$ref": "#/properties/f%20g"},
    },
    "required": ["a", "b", "e", "h"],
    "additionalProperties": False,
}


def test_a_pointer_reads_arrays_escapes_and_percent_encoding_as_the_validator_does() -> None:
    check_refs_resolve(INTO_AN_ARRAY)  # the validator takes every one of them
    assert pointed_at(INTO_AN_ARRAY, "#/properties/a/anyOf/0") == {"type": "string", "maxLength": 5}
    assert pointed_at(INTO_AN_ARRAY, "#/properties/c~1d") == {"type": "boolean"}
    assert pointed_at(INTO_AN_ARRAY, "#/properties/f%20g") == {"type": "number"}
    assert pointed_at(INTO_AN_ARRAY, "#") is INTO_AN_ARRAY
    for ref in ("#/properties/a/anyOf/2", "#/properties/a/anyOf/01", "#/properties/a/anyOf/-1", "#/nothing",
                "#properties", "other.json#/a", "#/properties/a/anyOf/\u00b2"):
        with pytest.raises(LookupError):
            pointed_at(INTO_AN_ARRAY, ref)


def test_inlining_follows_a_pointer_into_an_array() -> None:
    inlined = inline_refs(INTO_AN_ARRAY)
    assert inlined["properties"]["b"] == {"type": "string", "maxLength": 5}
    assert inlined["properties"]["e"] == {"type": "boolean"}
    assert inlined["properties"]["h"] == {"type": "number"}


def test_gemini_reads_the_same_pointers() -> None:
    schema = to_gemini_schema(INTO_AN_ARRAY)
    assert schema["properties"]["b"]["type"] == "string" and schema["properties"]["h"]["type"] == "number"
    with pytest.raises(GeminiSchemaError, match="points at nothing"):
        to_gemini_schema({"type": "object", "properties": {"x": {"$ref": "#/properties/y/0"}}})


def test_the_served_endpoint_takes_a_response_format_pointing_into_an_array() -> None:
    def fmt(schema: dict[str, Any]) -> dict[str, Any]:
        return {"type": "json_schema", "json_schema": {"name": "r", "strict": True, "schema": schema}}

    request = read_chat_request({"model": "m", "messages": [{"role": "user", "content": "x"}],
                                 "response_format": fmt(INTO_AN_ARRAY)})
    assert request is not None
    broken = {**INTO_AN_ARRAY, "properties": {**INTO_AN_ARRAY["properties"], "b": {"$ref": "#/properties/a/anyOf/9"}}}
    with pytest.raises(BadRequest, match="points at nothing"):
        read_chat_request({"model": "m", "messages": [{"role": "user", "content": "x"}],
                           "response_format": fmt(broken)})


def test_the_null_rule_follows_a_pointer_into_an_array() -> None:
    schema = {"type": "object", "properties": {"n": {"anyOf": [{"type": "null"}, {"type": "string"}]},
                                               "m": {"$ref": "#/properties/n/anyOf/0"},
                                               "k": {"$ref": "#/properties/n/anyOf/1"}}}
    assert drop_null_optionals({"m": None, "k": None}, schema) == {"m": None}
