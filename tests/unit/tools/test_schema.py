"""``@tool``: schemas from type hints and docstrings, conversion back to Python values, constructor validation."""

import dataclasses
import datetime as dt
import enum
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict, Union, assert_type

import attrs
import jsonschema
import pytest

from agentactors.messages import ToolSpec
from agentactors.tools import ResultCeiling, Tool, ToolContext, parse_docstring, schema_for, tool
from agentactors.tools.schema import ConversionError, convert, describe_schema


class Color(enum.Enum):
    red = "red"
    blue = "blue"


class Level(enum.IntEnum):
    low = 1
    high = 2


@attrs.frozen
class Point:
    """A point on the map."""

    x: float
    y: float = 0.0
    label: str = attrs.field(default="", metadata={"description": "what to call it"})
    tags: tuple[str, ...] = attrs.field(factory=tuple)
    _secret: int = 0


@dataclasses.dataclass
class Box:
    corner: Point
    size: Annotated[int, "edge length"] = 1
    color: Color = Color.red
    note: str = dataclasses.field(default="", metadata={"description": "free text"})


class Filters(TypedDict):
    kind: Literal["a", "b"]
    since: NotRequired[dt.date]


@attrs.frozen
class Node:
    name: str
    children: "list[Node]" = attrs.field(factory=list)


# --- scalar and container matrix -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (type(None), {"type": "null"}),
        (Any, {}),
        (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}),  # noqa: UP045
        (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        (Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}),  # noqa: UP007
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (list, {"type": "array"}),
        (Sequence[int], {"type": "array", "items": {"type": "integer"}}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "items": False,
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (set[str], {"type": "array", "uniqueItems": True, "items": {"type": "string"}}),
        (frozenset[int], {"type": "array", "uniqueItems": True, "items": {"type": "integer"}}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (
            Mapping[str, list[str]],
            {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
        ),
        (dict, {"type": "object"}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, "x"], {"enum": [1, "x"]}),
        (Color, {"type": "string", "enum": ["red", "blue"]}),
        (Level, {"type": "integer", "enum": [1, 2]}),
        (dt.datetime, {"type": "string", "format": "date-time"}),
        (dt.date, {"type": "string", "format": "date"}),
        (uuid.UUID, {"type": "string", "format": "uuid"}),
        (Path, {"type": "string"}),
        (Annotated[int, "how many"], {"type": "integer", "description": "how many"}),
        (
            Annotated[list[Annotated[str, "a tag"]], "the tags"],
            {"type": "array", "items": {"type": "string", "description": "a tag"}, "description": "the tags"},
        ),
    ],
)
def test_schema_matrix(annotation: Any, expected: dict[str, Any]) -> None:
    assert schema_for(annotation) == expected
    jsonschema.Draft202012Validator.check_schema(expected)


def test_nested_attrs_dataclass_and_typeddict() -> None:
    box = schema_for(Box)
    point = box["properties"]["corner"]
    assert point["type"] == "object"
    assert point["required"] == ["x"]
    assert point["additionalProperties"] is False
    assert point["description"] == "A point on the map."
    assert point["properties"]["y"] == {"type": "number", "default": 0.0}
    assert point["properties"]["label"] == {"type": "string", "description": "what to call it", "default": ""}
    # A factory default is not a recorded default, but the field is optional; a private field uses its alias.
    assert point["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert "secret" in point["properties"] and "_secret" not in point["properties"]
    assert box["required"] == ["corner"]
    assert box["properties"]["size"] == {"type": "integer", "description": "edge length", "default": 1}
    assert box["properties"]["color"] == {"type": "string", "enum": ["red", "blue"], "default": "red"}
    assert box["properties"]["note"]["description"] == "free text"
    assert "description" not in box  # dataclasses' invented "Box(corner: ...)" docstring is not a description
    filters = schema_for(Filters)
    assert filters["required"] == ["kind"]
    assert filters["properties"]["kind"] == {"type": "string", "enum": ["a", "b"]}
    assert filters["properties"]["since"] == {"type": "string", "format": "date"}


@pytest.mark.parametrize(
    "annotation",
    [Node, dict[int, str], Mapping[bytes, int], type, complex, bytes, Annotated[object.__class__, "x"]],
)
def test_schema_rejects_what_json_cannot_describe(annotation: Any) -> None:
    with pytest.raises(TypeError):
        schema_for(annotation)


# --- functions to specs ------------------------------------------------------------------------


async def find(
    query: Annotated[str, "what to look for"],
    ctx: ToolContext,
    limit: int = 10,
    color: Color = Color.blue,
    mode: Literal["fast", "exact"] = "fast",
    where: Point | None = None,
    filters: Filters | None = None,
) -> str:
    """Find things in the index.

    A second paragraph that is not part of the description.

    Args:
        query: not used: the Annotated description wins.
        limit (int): how many results
            to return at most.
        color: which colour.
        ctx: the tool context.

    Returns:
        the matches.
    """
    return query


def test_tool_spec_from_signature_and_docstring() -> None:
    t = tool(find)
    assert isinstance(t, Tool)
    assert t.name == "find" and t.spec.name == "find"
    assert t.description == "Find things in the index." == t.spec.description
    params = t.spec.parameters
    assert list(params["properties"]) == ["query", "limit", "color", "mode", "where", "filters"]
    assert "ctx" not in params["properties"]  # injected, not the model's business
    assert params["required"] == ["query"]
    assert params["additionalProperties"] is False
    assert params["properties"]["query"] == {"type": "string", "description": "what to look for"}
    assert params["properties"]["limit"] == {
        "type": "integer",
        "description": "how many results to return at most.",
        "default": 10,
    }
    assert params["properties"]["color"]["default"] == "blue"
    assert params["properties"]["color"]["description"] == "which colour."
    assert params["properties"]["mode"] == {"type": "string", "enum": ["fast", "exact"], "default": "fast"}
    assert params["properties"]["where"]["default"] is None
    assert params["properties"]["where"]["anyOf"][1] == {"type": "null"}
    assert t.is_async and t.takes_context
    assert (t.timeout, t.result_ceiling, t.sequential, t.read_only) == (None, None, False, False)
    jsonschema.Draft202012Validator.check_schema(params)


def test_decorator_options_and_plain_call() -> None:
    ceiling = ResultCeiling(100, narrow_by="limit")

    @tool(
        name="adder",
        description="Adds.",
        timeout=2,
        result_ceiling=ceiling,
        hint="use ints",
        sequential=True,
        read_only=True,
    )
    def add(a: int, b: int = 0, limit: int = 0) -> int:
        """Ignored docstring."""
        return a + b

    assert add(2, 3) == 5  # still the plain function
    assert add.name == "adder" and add.description == "Adds."
    assert add.timeout == 2.0 and isinstance(add.timeout, float)
    assert add.result_ceiling is ceiling and ceiling.narrow_by == ("limit",)
    assert add.sequential and add.read_only and not add.is_async
    assert add.hint_text("anything") == "use ints"
    # functools.update_wrapper copies __name__ into the Tool's __dict__, where mypy does not look.
    assert vars(add)["__name__"] == "add" and add.__doc__ == "Ignored docstring."
    assert "adder" in repr(add)


def test_every_spelling_of_tool_is_typed_as_the_tool_it_makes() -> None:
    # mypy --strict checks these (make test): @tool, @tool(...), tool(fn) and tool(fn, ...) are each a Tool of the
    # function's parameters and return type.  (Positional-only parameters, so each Tool[...] below is the exact type.)
    def add(a: int, b: int, /) -> int:
        """Add."""
        return a + b

    async def fetch(url: str, /) -> bytes:
        """Fetch."""
        return url.encode()

    @tool
    def decorated(a: int, b: int, /) -> int:
        """Add."""
        return a + b

    @tool(name="plus", read_only=True)
    async def decorated_with_options(url: str, /) -> bytes:
        """Fetch."""
        return url.encode()

    plain = tool(add)
    named = tool(add, name="plus", description="Adds.", read_only=True)
    awaited = tool(fetch, timeout=5)
    made_later = tool(name="later")(add)
    assert_type(decorated, Tool[[int, int], int])
    assert_type(decorated_with_options, Tool[[str], Coroutine[Any, Any, bytes]])
    assert_type(plain, Tool[[int, int], int])
    assert_type(named, Tool[[int, int], int])
    assert_type(awaited, Tool[[str], Coroutine[Any, Any, bytes]])
    assert_type(made_later, Tool[[int, int], int])
    assert isinstance(named, Tool) and named.name == "plus" and named.description == "Adds." and named.read_only
    assert awaited.is_async and awaited.timeout == 5.0 and made_later.name == "later" and plain.name == "add"
    assert decorated(1, 2) == named(1, 2) == 3 and decorated_with_options.name == "plus"


def test_no_docstring_no_params_and_kwargs() -> None:
    def ping() -> str:
        return "pong"

    def loose(a: int, **extra: Any) -> None:
        return None

    assert tool(ping).spec.parameters == {"type": "object", "properties": {}, "additionalProperties": False}
    assert tool(ping).description == ""
    assert "additionalProperties" not in tool(loose).spec.parameters


def test_hint_callable_and_failing_hint() -> None:
    def hint_for(text: str) -> str | None:
        return "retry with a smaller id" if "KeyError" in text else None

    def broken(_: str) -> str:
        raise RuntimeError("hint bug")

    t = tool(hint=hint_for)(lambda_free)
    assert t.hint_text("Error: KeyError: 7") == "retry with a smaller id"
    assert t.hint_text("Error: ValueError: x") is None
    assert tool(hint=broken)(lambda_free).hint_text("x") is None


def lambda_free(x: int) -> int:
    return x


def test_from_spec_uses_the_given_schema() -> None:
    spec = ToolSpec(
        "lookup", "Look up a key.", {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
    )

    def impl(key: str, ctx: ToolContext) -> str:
        return key

    t = Tool.from_spec(spec, impl, timeout=1)
    assert t.spec is spec and t.takes_context and t.timeout == 1.0
    assert t.validate({"key": "a"}) == []
    assert t.validate({"key": 1})[0].got == "an integer"


def test_docstring_styles() -> None:
    google = """Summary line
    continues here.

    Args:
        a: first.
        b (list[int]): second,
            wrapped.
        *rest: ignored splat.

    Raises:
        ValueError: not a parameter.
    """
    assert parse_docstring(google) == (
        "Summary line continues here.",
        {"a": "first.", "b": "second, wrapped.", "rest": "ignored splat."},
    )
    numpy = """Summary.

    Parameters
    ----------
    a : int
        First
        parameter.
    b
        Second.

    Returns
    -------
    int
        not a parameter
    """
    assert parse_docstring(numpy) == ("Summary.", {"a": "First parameter.", "b": "Second."})
    sphinx = """Do it.

    :param a: the a.
    :param int b: the b,
        wrapped.
    :returns: nothing.
    """
    assert parse_docstring(sphinx) == ("Do it.", {"a": "the a.", "b": "the b, wrapped."})
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("Title\nParameters\n----------\nx : int\n    the x") == ("Title", {"x": "the x"})


# --- conversion back to Python values -------------------------------------------------------------


def test_convert_builds_nested_instances() -> None:
    value = convert({"corner": {"x": 1, "tags": ["a"], "secret": 3}, "color": "blue", "size": 2}, Box)
    assert value == Box(Point(1.0, tags=("a",), secret=3), size=2, color=Color.blue)
    assert isinstance(value.corner.x, float)
    assert convert({"kind": "a", "since": "2024-05-01"}, Filters) == {"kind": "a", "since": dt.date(2024, 5, 1)}
    assert convert(None, Point | None) is None
    assert convert({"x": 2}, Point | None) == Point(2.0)
    assert convert([1, 2], tuple[int, ...]) == (1, 2)
    assert convert([1, "a"], tuple[float, str]) == (1.0, "a")
    assert convert(["a", "a"], set[str]) == {"a"}
    assert convert(["a"], frozenset[str]) == frozenset({"a"})
    assert convert({"k": "red"}, dict[str, Color]) == {"k": Color.red}
    assert convert(["2024-01-02T03:04:05"], list[dt.datetime]) == [dt.datetime(2024, 1, 2, 3, 4, 5)]
    assert convert("/tmp/x", Path) == Path("/tmp/x")
    assert convert(1, Level) is Level.low
    assert convert(3, int | float) == 3 and isinstance(convert(3, int | float), int)
    with pytest.raises(ConversionError) as err:
        convert({"d": "not a date"}, dict[str, dt.date], "arg")
    assert err.value.path == "arg.d" and "not a date" not in str(err.value)


def test_an_integral_float_becomes_an_int_and_a_number_pick_its_member() -> None:
    """JSON Schema's ``integer`` takes ``2.0``; the Python value is the int, and a pick the member itself."""

    class Stars(enum.Enum):
        one = 1
        two = 2

    @dataclasses.dataclass
    class Person:
        age: int

    def same(value: Any, expected: Any) -> bool:
        return repr(value) == repr(expected) and type(value) is type(expected)

    assert same(convert(2.0, int), 2)
    assert same(convert(2.5, int), 2.5)  # not integral: the validator refuses it before conversion
    assert same(convert({"age": 36.0}, Person), Person(36))
    assert same(convert(1.0, Literal[1, 2]), 1)
    assert same(convert(1.0, Literal[True, 1]), 1)  # a number is never the bool member
    assert same(convert(True, Literal[True, 1]), True)
    assert same(convert(1.0, Literal[Stars.one]), Stars.one)
    assert convert(2.0, Stars) is Stars.two
    assert same(convert([1.0, 2], list[int]), [1, 2])
    assert same(convert({"a": 3.0}, dict[str, int]), {"a": 3})
    assert same(convert(3.0, int | None), 3)
    assert same(convert(2.0, int | float), 2.0)  # a member that takes it as it is wins
    assert same(convert(2.0, float | int), 2.0)
    assert same(convert(2.0, str | int), 2)


def test_describe_schema() -> None:
    assert describe_schema({"type": "integer"}) == "integer"
    assert describe_schema({"type": "array", "items": {"type": "string"}}) == "array of string"
    assert describe_schema({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == "integer or null"
    assert describe_schema({"enum": ["a", "b"]}) == 'one of "a", "b"'
    assert describe_schema(None) == "any value"
    assert describe_schema(schema_for(Point)) == "object {x, y, label, tags, secret}"


# --- constructor validation ----------------------------------------------------------------------


def ok_fn(a: int) -> int:
    return a


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"timeout": 0}, ValueError),
        ({"timeout": -1.0}, ValueError),
        ({"timeout": True}, ValueError),
        ({"timeout": "5"}, ValueError),
        ({"result_ceiling": 100}, TypeError),
        ({"hint": 3}, TypeError),
        ({"hint": "  "}, ValueError),
        ({"sequential": 1}, TypeError),
        ({"read_only": "yes"}, TypeError),
        ({"name": "bad name!"}, ValueError),
        ({"name": ""}, ValueError),
    ],
)
def test_tool_option_validation(kwargs: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        tool(**kwargs)(ok_fn)


def test_tool_function_validation() -> None:
    def star(*args: int) -> None: ...

    def two_contexts(a: ToolContext, b: ToolContext) -> None: ...

    def unsupported(a: complex) -> None: ...

    with pytest.raises(TypeError, match=r"callable|function"):
        Tool(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"\*args"):
        tool(star)
    with pytest.raises(TypeError, match="at most one ToolContext"):
        tool(two_contexts)
    with pytest.raises(TypeError, match="parameter 'a'"):
        tool(unsupported)
    with pytest.raises(ValueError, match="invalid"):
        tool(lambda x: x)  # '<lambda>' is not a tool name
    with pytest.raises(TypeError, match="ToolSpec"):
        Tool(ok_fn, spec={"name": "x"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="either a spec"):
        Tool(ok_fn, spec=ToolSpec("x"), name="y")
    with pytest.raises(ValueError, match="not a valid JSON Schema"):
        Tool.from_spec(ToolSpec("x", "", {"type": "object", "properties": {"a": {"type": "nonsense"}}}), ok_fn)


def test_result_ceiling_validation() -> None:
    assert ResultCeiling(5).narrow_by == ()
    assert ResultCeiling(5, ["a", "b"]).narrow_by == ("a", "b")
    for bad in (0, -1, 1.5, True, "10"):
        with pytest.raises(ValueError, match="max_chars"):
            ResultCeiling(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="narrow_by"):
        ResultCeiling(5, ("",))
    with pytest.raises(ValueError, match="narrow_by"):
        ResultCeiling(5, (1,))  # type: ignore[arg-type]


def test_pydantic_models_and_field_constraints_as_tool_parameters() -> None:
    """Item 6 of typed results: a pydantic model parameter is validated and converted before the tool runs."""
    from typing import Annotated

    import pydantic

    from agentactors.tools.registry import tool as make_tool
    from agentactors.tools.schema import ConversionError, convert, schema_for

    class Order(pydantic.BaseModel):
        item: str
        qty: int = pydantic.Field(ge=1)

    @make_tool
    def place(order: Order, note: Annotated[str, pydantic.Field(max_length=20, description="for the courier")]) -> str:
        """Place an order."""
        return f"{order.qty} x {order.item}"

    props = place.spec.parameters["properties"]
    assert props["order"] == {"type": "object", "properties": {"item": {"type": "string"},
                              "qty": {"type": "integer", "minimum": 1}}, "required": ["item", "qty"]}
    assert props["note"] == {"type": "string", "maxLength": 20, "description": "for the courier"}
    assert [i.path for i in place.validate({"order": {"item": "tea", "qty": 0}, "note": "x" * 30})] == [
        "order.qty", "note"]
    _args, kwargs = place.prepare({"order": {"item": "tea", "qty": 2}, "note": "ok"}, None)
    assert kwargs["order"] == Order(item="tea", qty=2)
    assert schema_for(Annotated[float, pydantic.Field(gt=0, lt=1)]) == {
        "type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}
    with pytest.raises(ConversionError, match="qty"):
        convert({"item": "tea", "qty": 0}, Order)
