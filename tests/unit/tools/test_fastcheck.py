"""The compiled fast check never calls invalid arguments valid, and it decides the common valid calls alone."""

import enum
from collections import OrderedDict
from typing import Annotated, Any, Literal

import attrs
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors.tools import tool
from agentactors.tools.fastcheck import compile_check
from agentactors.tools.validation import ArgumentValidator


class Unit(enum.Enum):
    c = "celsius"
    f = "fahrenheit"


@attrs.frozen
class Window:
    start: int
    end: int


@tool
def forecast(
    city: str,
    days: Annotated[int, "1 to 7"] = 3,
    unit: Unit = Unit.c,
    window: Window | None = None,
    tags: list[str] = [],  # noqa: B006 - a JSON default, never mutated
    mode: Literal["brief", "full"] = "brief",
    ratio: float = 0.5,
    pair: tuple[int, str] | None = None,
    labels: set[str] | None = None,
    extra: dict[str, int] | None = None,
    flag: bool = False,
) -> str:
    """Weather forecast."""
    return city


def _valid_by_jsonschema(schema: dict[str, Any], instance: Any) -> bool:
    return not any(True for _ in jsonschema.Draft202012Validator(schema).iter_errors(instance))


def test_generated_schemas_compile_and_decide_valid_calls_alone() -> None:
    check = compile_check(forecast.parameters)
    assert check is not None
    assert check({"city": "Oslo"})
    assert check(
        {
            "city": "Oslo",
            "days": 2,
            "unit": "fahrenheit",
            "window": {"start": 1, "end": 2},
            "tags": ["a", "b"],
            "mode": "full",
            "ratio": 1,
            "pair": [1, "x"],
            "labels": ["a", "b"],
            "extra": {"k": 1},
            "flag": True,
        }
    )
    assert check({"city": "Oslo", "window": None, "pair": None})


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"city": 1},
        {"city": "x", "days": True},
        {"city": "x", "days": "3"},
        {"city": "x", "unit": "kelvin"},
        {"city": "x", "window": {"start": 1}},
        {"city": "x", "window": {"start": 1, "end": 2, "x": 3}},
        {"city": "x", "tags": ["a", 1]},
        {"city": "x", "mode": "verbose"},
        {"city": "x", "pair": [1, "x", 2]},
        {"city": "x", "pair": [1]},
        {"city": "x", "labels": ["a", "a"]},
        {"city": "x", "extra": {"k": "v"}},
        {"city": "x", "flag": 1},
        {"city": "x", "colour": "red"},
    ],
)
def test_invalid_calls_are_never_certain(arguments: dict[str, Any]) -> None:
    check = compile_check(forecast.parameters)
    assert check is not None
    assert not check(arguments)
    assert forecast.validate(arguments)  # and jsonschema reports the issues


def test_uncertain_but_valid_falls_back_to_no_issues() -> None:
    check = compile_check({"type": "object", "properties": {"n": {"type": "integer"}}})
    assert check is not None
    assert not check({"n": 2.0})  # 2.0 is a JSON-Schema integer: left to jsonschema
    validator = ArgumentValidator({"type": "object", "properties": {"n": {"type": "integer"}}})
    assert validator.issues({"n": 2.0}) == []
    assert not check(OrderedDict(n=1))  # a dict subclass: left to jsonschema
    assert validator.issues(OrderedDict(n=1)) == []
    assert [i.got for i in validator.issues({"n": True})] == ["a boolean"]


def test_enum_membership_keeps_bool_and_int_apart() -> None:
    check = compile_check({"enum": [1, "a", None]})
    assert check is not None
    assert check(1) and check("a") and check(None)
    assert not check(True) and not check(1.0) and not check([1])
    assert not _valid_by_jsonschema({"enum": [1]}, True)


def test_format_is_an_annotation_as_in_the_validator() -> None:
    schema = {"type": "string", "format": "date"}
    check = compile_check(schema)
    assert check is not None and check("not a date")
    assert _valid_by_jsonschema(schema, "not a date")


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/x", "$defs": {"x": {}}},
        {"oneOf": [{"type": "string"}]},
        {"allOf": [{"type": "string"}]},
        {"not": {"type": "string"}},
        {"type": "object", "patternProperties": {"^a": {}}},
        {"type": "number", "multipleOf": 3},
        {"type": "object", "properties": {"x": {"x-vendor": 1}}},
        {"type": "integer", "minimum": "1"},
        {"type": "string", "pattern": "("},
    ],
)
def test_schemas_outside_the_subset_do_not_compile(schema: dict[str, Any]) -> None:
    assert compile_check(schema) is None


# --- property: "certainly valid" implies jsonschema finds nothing --------------------------------

_NAMES = st.sampled_from(["a", "b", "c"])
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 2.5, -1.5]),
    st.sampled_from(["", "a", "bb"]),
)

_leaf_schemas = st.one_of(
    st.sampled_from(
        [{}, {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]
    ),
    st.lists(
        st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"]),
        min_size=1,
        max_size=3,
        unique=True,
    ).map(lambda kinds: {"type": kinds}),
    st.lists(_SCALARS, min_size=1, max_size=4).map(lambda values: {"enum": values}),
    _SCALARS.map(lambda value: {"const": value}),
    st.builds(
        lambda low, high, kind: {
            k: v for k, v in (("type", kind), ("minimum", low), ("exclusiveMaximum", high)) if v is not None
        },
        st.none() | st.integers(-2, 2) | st.just(0.5),
        st.none() | st.integers(-2, 3),
        st.sampled_from([None, "integer", "number"]),
    ),
    st.builds(
        lambda low, high, pattern: {
            k: v
            for k, v in (("type", "string"), ("minLength", low), ("maxLength", high), ("pattern", pattern))
            if v is not None
        },
        st.none() | st.integers(0, 2),
        st.none() | st.integers(0, 2),
        st.none() | st.just("^a"),
    ),
)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    objects = st.builds(
        lambda props, required, additional, typed: {
            **({"type": "object"} if typed else {}),
            "properties": props,
            **({"required": required} if required else {}),
            **({} if additional is None else {"additionalProperties": additional}),
        },
        st.dictionaries(_NAMES, children, max_size=3),
        st.lists(_NAMES, max_size=2, unique=True),
        st.none() | st.booleans() | children,
        st.booleans(),
    )
    arrays = st.builds(
        lambda items, prefix, low, high, unique, typed: {
            k: v
            for k, v in (
                ("type", "array" if typed else None),
                ("items", items),
                ("prefixItems", prefix),
                ("minItems", low),
                ("maxItems", high),
                ("uniqueItems", unique),
            )
            if v is not None
        },
        st.none() | st.booleans() | children,
        st.none() | st.lists(children, min_size=1, max_size=2),
        st.none() | st.integers(0, 2),
        st.none() | st.integers(0, 3),
        st.none() | st.booleans(),
        st.booleans(),
    )
    any_of = st.lists(children, min_size=1, max_size=3).map(lambda options: {"anyOf": options})
    return objects | arrays | any_of


_schemas = st.recursive(_leaf_schemas, _extend, max_leaves=6)
_instances = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_NAMES, children, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(_schemas, _instances)
def test_certainly_valid_is_never_wrong(schema: dict[str, Any], instance: Any) -> None:
    check = compile_check(schema)
    assert check is not None  # the strategy only builds the supported subset
    if check(instance):
        assert _valid_by_jsonschema(schema, instance), (schema, instance)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            ["city", "days", "unit", "window", "tags", "mode", "ratio", "pair", "labels", "extra", "flag", "other"]
        ),
        _instances,
        max_size=8,
    )
)
def test_generated_tool_schema_agrees_with_jsonschema(arguments: dict[str, Any]) -> None:
    check = compile_check(forecast.parameters)
    assert check is not None
    if check(arguments):
        assert _valid_by_jsonschema(forecast.parameters, arguments)
    assert (forecast.validate(arguments) == []) == _valid_by_jsonschema(forecast.parameters, arguments)
