"""Properties of ``@tool``'s two halves: what the validator accepts is exactly what ``jsonschema`` accepts,
and every accepted value converts into the annotated type (schema.py's promise: "a value that validates
against the schema converts into the annotated type").

Generated annotations (scalars, literals, enums, dates, records of each kind, and lists, tuples, sets,
mappings and unions of them) with values built to be valid for them — numbers as JSON blurs them
(``2.0`` for an int) included — and, for the validator, arbitrary values with the odd ones (NaN, infinity,
half characters) mixed in.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import types
import typing
from typing import Any, Literal, TypedDict

import attrs
import jsonschema
import pydantic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentactors.tools import tool
from agentactors.tools._odd import has_odd
from agentactors.tools.fastcheck import compile_check, sees_every_value
from agentactors.tools.schema import convert, schema_for
from agentactors.tools.validation import ArgumentValidator


class Colour(enum.Enum):
    red = "red"
    blue = "blue"


class Level(enum.IntEnum):
    low = 1
    high = 2


@dataclasses.dataclass
class Circle:
    radius: float


@dataclasses.dataclass
class Square:
    side: float
    label: str = "square"


@attrs.frozen
class Segment:
    start: int
    end: int


class Named(TypedDict):
    name: str
    weight: float


class Point(pydantic.BaseModel):
    x: int
    y: int


_INTS = st.integers(-(2**40), 2**40)
_NUMBERS = st.floats(allow_nan=False, allow_infinity=False, width=64)
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=5)  # whole characters only


def _int_values() -> st.SearchStrategy[Any]:
    return _INTS | _INTS.map(float)  # 2.0 is a JSON integer


def _float_values() -> st.SearchStrategy[Any]:
    return _INTS | _NUMBERS


def _record(cls: type, fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(fields)


# (annotation, valid JSON values for it)
_LEAVES: list[tuple[Any, st.SearchStrategy[Any]]] = [
    (int, _int_values()),
    (float, _float_values()),
    (str, _TEXT),
    (bool, st.booleans()),
    (type(None), st.none()),
    (Any, st.none() | st.booleans() | _INTS | _TEXT),
    (Literal["a", "b"], st.sampled_from(["a", "b"])),
    (Literal[1, 2, True], st.sampled_from([1, 2, True, 1.0])),
    (Colour, st.sampled_from(["red", "blue"])),
    (Level, st.sampled_from([1, 2, 2.0])),
    (datetime.date, st.dates().map(lambda d: d.isoformat())),
    (Circle, _record(Circle, {"radius": _float_values()})),
    (Square, _record(Square, {"side": _float_values()})),
    (Segment, _record(Segment, {"start": _int_values(), "end": _int_values()})),
    (Named, _record(Named, {"name": _TEXT, "weight": _float_values()})),
    (Point, _record(Point, {"x": _INTS, "y": _INTS})),
]
_UNION: Any = typing.Union
_HASHABLE: list[tuple[Any, st.SearchStrategy[Any]]] = [(int, _INTS), (str, _TEXT)]


def _extend(children: st.SearchStrategy[tuple[Any, st.SearchStrategy[Any]]]) -> st.SearchStrategy[Any]:
    # Annotations made at run time (types.GenericAlias is what list[X] is; typing.Union[...] what X | Y is).
    def listed(child: tuple[Any, Any]) -> tuple[Any, Any]:
        return types.GenericAlias(list, (child[0],)), st.lists(child[1], max_size=3)

    def tupled(child: tuple[Any, Any]) -> tuple[Any, Any]:
        return types.GenericAlias(tuple, (child[0], ...)), st.lists(child[1], max_size=3)

    def pair(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
        return types.GenericAlias(tuple, (a[0], b[0])), st.tuples(a[1], b[1]).map(list)

    def mapping(child: tuple[Any, Any]) -> tuple[Any, Any]:
        return types.GenericAlias(dict, (str, child[0])), st.dictionaries(_TEXT, child[1], max_size=3)

    def optional(child: tuple[Any, Any]) -> tuple[Any, Any]:
        return _UNION[child[0], None], st.none() | child[1]

    def union(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
        return _UNION[a[0], b[0]], a[1] | b[1]

    def sets(child: tuple[Any, Any], frozen: bool) -> tuple[Any, Any]:
        kind = frozenset if frozen else set
        return types.GenericAlias(kind, (child[0],)), st.sets(child[1], max_size=3).map(list)

    hashable = st.sampled_from(_HASHABLE)
    return (
        children.map(listed)
        | children.map(tupled)
        | st.builds(pair, children, children)
        | children.map(mapping)
        | children.map(optional)
        | st.builds(union, children, children)
        | st.builds(sets, hashable, st.booleans())
    )


_ANNOTATED = st.recursive(st.sampled_from(_LEAVES), _extend, max_leaves=4)


def _conforms(value: Any, tp: Any) -> bool:
    """Whether a converted value is of annotation ``tp`` (as the tool's author would check it)."""
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    if tp in (int, float, str, bool):
        return type(value) is tp
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if origin is typing.Union:
        return any(_conforms(value, a) for a in args)
    if origin is list:
        return type(value) is list and all(_conforms(v, args[0]) for v in value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return type(value) is tuple and all(_conforms(v, args[0]) for v in value)
        return type(value) is tuple and len(value) == len(args) and all(map(_conforms, value, args))
    if origin in (set, frozenset):
        return type(value) is origin and all(_conforms(v, args[0]) for v in value)
    if origin is dict:
        return type(value) is dict and all(type(k) is str and _conforms(v, args[1]) for k, v in value.items())
    if typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp)
        return type(value) is dict and all(k in hints and _conforms(value[k], hints[k]) for k in value)
    if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or attrs.has(tp) or issubclass(tp, pydantic.BaseModel)):
        hints = typing.get_type_hints(tp)
        return type(value) is tp and all(_conforms(getattr(value, k), h) for k, h in hints.items())
    if isinstance(tp, type):
        return type(value) is tp
    raise AssertionError(f"no check for {tp!r}")


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_every_valid_value_converts_into_the_annotated_type(data: st.DataObject) -> None:
    annotation, values = data.draw(_ANNOTATED)
    value = data.draw(values)

    def fn(x: Any) -> None:
        return None

    fn.__annotations__ = {"x": annotation, "return": None}
    made = tool(fn)
    assert made.validate({"x": value}) == [], (annotation, value)
    _, kwargs = made.prepare({"x": value}, None)
    assert _conforms(kwargs["x"], annotation), (annotation, value, kwargs["x"])
    assert _conforms(convert(value, annotation), annotation)


# --- the validator's verdict is jsonschema's, and odd values are never let through ----------------

_ODD_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.just(2**64),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, math.nan, math.inf, -math.inf, 1e308]),
    st.sampled_from(["", "a", "é", "\ud800", "a\udc00"]),
)
_ODD_VALUES = st.recursive(
    _ODD_SCALARS,
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["x", "a", "\ud800"]), children, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_the_validator_accepts_exactly_what_jsonschema_does_and_nothing_odd(data: st.DataObject) -> None:
    annotation, values = data.draw(_ANNOTATED)
    value = data.draw(values | _ODD_VALUES)
    schema = {
        "type": "object",
        "properties": {"x": schema_for(annotation)},
        "required": ["x"],
        "additionalProperties": False,
    }
    arguments = {"x": value}
    valid = jsonschema.Draft202012Validator(schema).is_valid(arguments) and not has_odd(arguments)
    assert (ArgumentValidator(schema).issues(arguments) == []) is valid, (annotation, value)
    fast = compile_check(schema)
    if fast is not None and fast(arguments):  # "certainly valid" is never wrong; nothing odd where it saw all
        assert jsonschema.Draft202012Validator(schema).is_valid(arguments)
        assert not sees_every_value(schema) or not has_odd(arguments)
