"""How a function's signature becomes a tool, and the model's arguments reach it: the corners a review found.

Each test here failed before its fix: a positional-only default shifted the arguments after it, a
dataclass in a union got the fields of another member, an infinite default made a schema no wire can send,
a tool's mutated default leaked into the schema the model reads, ...
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import json
import math
from typing import Annotated, Any, NewType, NotRequired, Optional, Required, TypedDict

import attrs
import pydantic
import pytest

from agentactors.messages import ToolCall
from agentactors.tools import ToolContext, ToolStatus, tool
from agentactors.tools.docstrings import parse_docstring
from agentactors.tools.executor import ToolExecutorActor
from agentactors.tools.schema import ConversionError, convert, schema_for


def call(call_id: str, name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments)


# --- positional-only parameters ------------------------------------------------------------------


@tool
def span(start: int = 1, end: int = 10, /, step: int = 1) -> str:
    """A range, as text."""
    return f"{start}..{end} by {step}"


def test_an_omitted_positional_only_parameter_keeps_its_default_and_the_next_its_value() -> None:
    # Was: {"end": 5} became span(5) — start=5, end=10.
    args, kwargs = span.prepare({"end": 5}, None)
    assert span.fn(*args, **kwargs) == "1..5 by 1"
    args, kwargs = span.prepare({"start": 3, "step": 2}, None)
    assert span.fn(*args, **kwargs) == "3..10 by 2"
    args, kwargs = span.prepare({}, None)
    assert span.fn(*args, **kwargs) == "1..10 by 1"


@pytest.mark.anyio
async def test_positional_only_defaults_through_the_executor() -> None:
    (result,) = await ToolExecutorActor([span]).execute([call("1", "span", end=5)])
    assert result.status is ToolStatus.ok and result.content == "1..5 by 1"


# --- defaults in the schema ----------------------------------------------------------------------


def test_a_non_finite_default_is_left_out_of_the_schema() -> None:
    # Was: "default": Infinity — not JSON: the request carrying the schema could not be sent (or was a 400).
    @tool
    def search(query: str, max_price: float = math.inf, ratio: float = math.nan) -> str:
        return query

    props = search.parameters["properties"]
    assert "default" not in props["max_price"] and "default" not in props["ratio"]
    json.dumps(search.parameters, allow_nan=False)


@dataclasses.dataclass
class Box:
    tags: tuple[str, ...] = ()


def test_the_schema_default_is_a_copy_a_tool_mutating_its_default_cannot_change() -> None:
    # Was: the schema held the function's own default list: what one call appended, every later model read.
    @tool
    def remember(item: str, seen: list[str] = []) -> list[str]:  # noqa: B006 - the very bug under test
        seen.append(item)
        return seen

    remember("the secret of another user")
    assert remember.parameters["properties"]["seen"]["default"] == []

    shared: dict[str, list[int]] = {"a": [1]}

    @tool
    def boxed(box: Box, table: dict[str, list[int]] = shared) -> None:
        return None

    shared["a"].append(2)
    assert boxed.parameters["properties"]["table"]["default"] == {"a": [1]}


# --- ToolContext, however it is spelt ------------------------------------------------------------


@tool
def whoami(x: int, ctx: ToolContext | None = None) -> str:
    return f"{x}:{ctx.call_id if ctx is not None else None}"


@tool
def whoami_optional(ctx: Optional[ToolContext] = None) -> str:  # noqa: UP045 - the spelling under test
    return ctx.tool_name if ctx is not None else "none"


@tool
def whoami_annotated(ctx: Annotated[ToolContext, "the call"]) -> str:
    return ctx.tool_name


def test_an_optional_or_annotated_tool_context_is_injected_not_asked_of_the_model() -> None:
    # Was: ToolContext | None was described as a parameter (and failed: its EventSink has no schema).
    for t in (whoami, whoami_optional, whoami_annotated):
        assert t.takes_context
        assert "ctx" not in t.parameters["properties"]
    assert whoami(3) == "3:None"  # still a plain function when called directly


@pytest.mark.anyio
async def test_an_optional_tool_context_reaches_the_tool() -> None:
    ex = ToolExecutorActor([whoami, whoami_optional, whoami_annotated])
    results = await ex.execute(
        [call("c1", "whoami", x=2), call("c2", "whoami_optional"), call("c3", "whoami_annotated")]
    )
    assert [r.content for r in results] == ["2:c1", "whoami_optional", "whoami_annotated"]


# --- unions of records ---------------------------------------------------------------------------


class Level(enum.IntEnum):
    low = 1
    high = 2


@dataclasses.dataclass
class Circle:
    radius: float


@dataclasses.dataclass
class Square:
    side: float


@attrs.frozen
class Segment:
    start: int
    end: int


class Named(TypedDict):
    name: str


class Point(pydantic.BaseModel):
    x: int
    y: int


@tool
def area(shape: Circle | Square) -> str:
    """The area of a shape."""
    return type(shape).__name__


def test_a_union_of_records_converts_to_the_member_whose_fields_were_sent() -> None:
    # Was: any object became the first record (Circle), and Circle(side=2) failed: "expected a valid Circle".
    assert convert({"side": 2}, Circle | Square) == Square(2.0)
    assert convert({"radius": 1}, Circle | Square) == Circle(1.0)
    assert convert([{"side": 1}, {"radius": 2}], list[Circle | Square]) == [Square(1.0), Circle(2.0)]
    assert convert({"start": 1, "end": 2}, Named | Segment) == Segment(1, 2)
    assert convert({"name": "n"}, Segment | Named) == {"name": "n"}
    assert convert({"x": 1, "y": 2}, Segment | Point) == Point(x=1, y=2)
    assert convert({"start": 1, "end": 2}, Point | Segment | None) == Segment(1, 2)
    # Containers of records too: the first member the value validates against.
    assert convert([{"side": 3}], list[Circle] | list[Square]) == [Square(3.0)]


@pytest.mark.anyio
async def test_a_union_of_records_through_the_executor() -> None:
    ex = ToolExecutorActor([area])
    square, circle = await ex.execute([call("1", "area", shape={"side": 2}), call("2", "area", shape={"radius": 1})])
    assert (square.status, square.content) == (ToolStatus.ok, "Square")
    assert (circle.status, circle.content) == (ToolStatus.ok, "Circle")


def test_a_union_prefers_the_member_of_the_value_s_own_type() -> None:
    # Was: float | int turned the JSON integer 2 into 2.0 (float came first and takes integers too).
    assert type(convert(2, float | int)) is int
    assert type(convert(2.5, float | int)) is float
    assert type(convert(2.0, int | float)) is float
    assert type(convert(2, float | None)) is float  # no int member: the float it stands for
    assert type(convert(2.0, int | None)) is int  # an integral float for an int


def test_a_union_member_that_cannot_convert_the_value_gives_way_to_the_next() -> None:
    # Was: "" for date | str was taken for a date (format is no constraint to the validator): ConversionError.
    assert convert("", datetime.date | str) == ""
    assert convert("2024-01-02", datetime.date | str) == datetime.date(2024, 1, 2)
    assert convert(["", "2024-01-02"], list[datetime.date | str | None]) == ["", datetime.date(2024, 1, 2)]
    with pytest.raises(ConversionError, match="date"):
        convert("soon", datetime.date | None)  # no member takes it: the first member's reason


def test_a_bool_is_no_member_of_an_int_enum_in_a_union() -> None:
    # Was: True == 1, so Level | bool turned true into Level.low.
    assert convert(True, Level | bool) is True
    assert convert(1, Level | bool) is Level.low


# --- **kwargs ------------------------------------------------------------------------------------


@tool
def tagged(name: str, **tags: int) -> dict[str, int]:
    """Tag a thing."""
    return {"_" + name: 0, **tags}


def test_annotated_var_keywords_type_the_extra_properties() -> None:
    # Was: **tags: int let the model pass anything as a tag (the schema said nothing about them).
    assert tagged.parameters["additionalProperties"] == {"type": "integer"}
    assert tagged.validate({"name": "n", "a": 1}) == []
    assert [i.path for i in tagged.validate({"name": "n", "a": "x"})] == ["a"]
    _, kwargs = tagged.prepare({"name": "n", "a": 2.0}, None)
    assert type(kwargs["a"]) is int

    @tool
    def open_ended(name: str, **rest: Any) -> None:
        return None

    @tool
    def unannotated(name: str, **rest) -> None:  # type: ignore[no-untyped-def]
        return None

    assert "additionalProperties" not in open_ended.parameters
    assert "additionalProperties" not in unannotated.parameters


@pytest.mark.anyio
async def test_var_keywords_through_the_executor() -> None:
    ok, bad = await ToolExecutorActor([tagged]).execute(
        [call("1", "tagged", name="n", a=1.0), call("2", "tagged", name="n", a="one")]
    )
    assert (ok.status, json.loads(ok.content)) == (ToolStatus.ok, {"_n": 0, "a": 1})
    assert bad.status is ToolStatus.invalid


# --- Annotated constraints on an optional value --------------------------------------------------


def test_constraints_on_an_optional_apply_to_its_value() -> None:
    # Was: max_length on str | None was dropped (the schema had no "type" to say which length it was).
    @tool
    def note(
        text: Annotated[str | None, pydantic.Field(max_length=3)] = None,
        count: Annotated[int | None, pydantic.Field(ge=1)] = None,
        tags: Annotated[list[str] | None, pydantic.Field(min_length=1)] = None,
    ) -> None:
        return None

    assert note.validate({"text": "abc", "count": 1, "tags": ["a"]}) == []
    assert note.validate({"text": None, "count": None, "tags": None}) == []
    assert [i.path for i in note.validate({"text": "abcd"})] == ["text"]
    assert [i.path for i in note.validate({"count": 0})] == ["count"]
    assert [i.path for i in note.validate({"tags": []})] == ["tags"]


# --- TypedDict under postponed annotations -------------------------------------------------------


class Options(TypedDict):
    query: str
    limit: NotRequired[int]


class Sparse(TypedDict, total=False):
    query: Required[str]
    limit: int


def test_not_required_keys_stay_optional_in_a_module_with_postponed_annotations() -> None:
    # This module has `from __future__ import annotations`: Python's TypedDict then counts NotRequired[...]
    # keys as required (__required_keys__ is computed from the strings).  Was: "limit" required.
    @tool
    def find(options: Options, sparse: Sparse) -> None:
        return None

    props = find.parameters["properties"]
    assert props["options"]["required"] == ["query"]
    assert props["sparse"]["required"] == ["query"]
    assert find.validate({"options": {"query": "q"}, "sparse": {"query": "q"}}) == []


# --- numbers a float cannot hold -----------------------------------------------------------------


def test_an_integer_too_large_for_a_float_parameter_is_an_invalid_argument() -> None:
    # Was: OverflowError from float(), reported as the tool's own error.
    @tool
    def scale(factor: float, factors: list[float] | None = None) -> float:
        return factor

    huge = 10**400
    assert scale.validate({"factor": huge}) == []  # JSON Schema's "number" has no bound
    with pytest.raises(ConversionError, match="factor"):
        scale.prepare({"factor": huge}, None)
    with pytest.raises(ConversionError, match=r"factors\[1\]"):
        scale.prepare({"factor": 1, "factors": [1, huge]}, None)


@pytest.mark.anyio
async def test_an_integer_too_large_for_a_float_through_the_executor() -> None:
    @tool
    async def half(x: float) -> float:
        return x / 2

    (result,) = await ToolExecutorActor([half]).execute([call("1", "half", x=10**400)])
    assert result.status is ToolStatus.invalid
    assert "OverflowError" not in result.content


# --- NewType -------------------------------------------------------------------------------------

UserId = NewType("UserId", int)


def test_a_new_type_is_described_and_converted_as_its_supertype() -> None:
    # Was: TypeError "cannot describe __main__.UserId as JSON Schema".
    @tool
    def user(uid: UserId, uids: list[UserId] | None = None) -> int:
        return uid

    assert user.parameters["properties"]["uid"] == {"type": "integer"}
    _, kwargs = user.prepare({"uid": 2.0, "uids": [3.0]}, None)
    assert type(kwargs["uid"]) is int and kwargs["uids"] == [3]


# --- methods decorated in their class ------------------------------------------------------------


def test_a_method_decorated_in_its_class_body_is_refused_with_the_way_to_do_it() -> None:
    # Was: "self" became a required parameter the model was asked to fill.
    with pytest.raises(TypeError, match=r"tool\(obj\.lookup\)"):

        class Client:
            @tool
            def lookup(self, key: str) -> str:
                return key

    class Store:
        def lookup(self, key: str) -> str:
            return key

    bound = tool(Store().lookup)  # the documented way: the bound method
    assert list(bound.parameters["properties"]) == ["key"]


# --- docstrings ----------------------------------------------------------------------------------


def test_google_types_with_parentheses_do_not_swallow_the_entry() -> None:
    # Was: "pair (tuple(int, int)): ..." was read as more text of the entry before it.
    _, params = parse_docstring(
        """Do.

        Args:
            limit (Optional[int], optional): How many.
            pair (tuple(int, int)): A pair.
            last: The last.
        """
    )
    assert params == {"limit": "How many.", "pair": "A pair.", "last": "The last."}


def test_numpy_entries_naming_several_parameters_describe_each() -> None:
    # Was: "x, y : float" ended the section: x, y and every parameter after them had no description.
    _, params = parse_docstring(
        """Do.

        Parameters
        ----------
        x, y : float
            Coordinates.
        label : str
            A label.
        """
    )
    assert params == {"x": "Coordinates.", "y": "Coordinates.", "label": "A label."}


# --- dataclass InitVar ---------------------------------------------------------------------------


@dataclasses.dataclass
class Scaled:
    value: float
    factor: dataclasses.InitVar[float]
    unit: dataclasses.InitVar[str] = "m"

    def __post_init__(self, factor: float, unit: str) -> None:
        self.value *= factor


def test_a_dataclass_init_var_is_a_field_the_model_fills() -> None:
    # Was: left out of the schema, so that Scaled(...) failed on every call ("expected a valid Scaled").
    @tool
    def measure(s: Scaled) -> float:
        return s.value

    schema = measure.parameters["properties"]["s"]
    assert schema["properties"]["factor"] == {"type": "number"}
    assert schema["properties"]["unit"] == {"type": "string", "default": "m"}
    assert schema["required"] == ["value", "factor"]
    _, kwargs = measure.prepare({"s": {"value": 2, "factor": 3}}, None)
    assert kwargs["s"].value == 6.0


# --- a None default for a type that takes no None ------------------------------------------------


def test_a_none_default_lets_the_model_send_the_null_it_was_shown() -> None:
    # Was: {"type": "integer", "default": null}: the model sent the default it read, and was refused.
    @tool
    def page(limit: int = None, label: Annotated[str, "a label"] = None) -> str:  # type: ignore[assignment]  # noqa: RUF013
        return f"{limit}:{label}"

    props = page.parameters["properties"]
    assert props["limit"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert props["label"]["description"] == "a label" and props["label"]["default"] is None
    assert page.validate({"limit": None, "label": None}) == []
    assert page.validate({"limit": 3}) == []
    assert [i.path for i in page.validate({"limit": "3"})] == ["limit"]

    @dataclasses.dataclass
    class Query:
        limit: int = None  # type: ignore[assignment]

    assert schema_for(Query)["properties"]["limit"]["anyOf"][1] == {"type": "null"}
    assert convert({"limit": None}, Query) == Query(None)  # type: ignore[arg-type]


# --- functools.partial and defaults that are credentials -----------------------------------------

DSN = "postgres://reader:hunter2-7c1d2e3f@db/prod"


def _query(sql: str, dsn: str, limit: int = 10) -> str:
    return f"{dsn}|{sql}|{limit}"


def _query_open(sql: str, dsn: str, **options: Any) -> str:
    return f"{dsn}|{sql}|{sorted(options)}"


def test_a_value_bound_by_partial_is_neither_shown_to_the_model_nor_replaceable() -> None:
    # Was: dsn appeared in the schema as a default (sent to the vendor with every request), and the model
    # could pass its own dsn.
    made = tool(functools.partial(_query, dsn=DSN), name="query")
    assert list(made.parameters["properties"]) == ["sql", "limit"]
    assert "hunter2" not in json.dumps(made.parameters)
    assert [i.path for i in made.validate({"sql": "s", "dsn": "evil"})] == ["dsn"]
    nested = tool(functools.partial(functools.partial(_query, dsn=DSN), limit=3), name="nested")
    assert list(nested.parameters["properties"]) == ["sql"]

    opened = tool(functools.partial(_query_open, dsn=DSN), name="opened")
    assert opened.validate({"sql": "s", "dsn": "evil", "x": 1}) == []  # **options: other names pass
    args, kwargs = opened.prepare({"sql": "s", "dsn": "evil", "x": 1}, None)
    assert opened.fn(*args, **kwargs) == f"{DSN}|s|['x']"


@pytest.mark.anyio
async def test_a_value_bound_by_partial_through_the_executor() -> None:
    opened = tool(functools.partial(_query_open, dsn=DSN), name="opened")
    (result,) = await ToolExecutorActor([opened]).execute([call("1", "opened", sql="s", dsn="evil")])
    assert (result.status, result.content) == (ToolStatus.ok, f"{DSN}|s|[]")


def test_a_credential_shaped_default_is_not_shown_to_the_model() -> None:
    @tool
    def fetch(url: str, token: str = "sk-live-0123456789abcdefghijklmnop", retries: int = 2) -> str:
        return url

    props = fetch.parameters["properties"]
    assert "default" not in props["token"] and props["retries"]["default"] == 2


class Coded(pydantic.BaseModel):
    code: str = pydantic.Field(pattern=r"^(a+)+$")
    x: int


class Plain(pydantic.BaseModel):
    code: str
    x: int


def test_a_union_member_s_catastrophic_pattern_is_judged_in_bounded_time() -> None:
    # Choosing the member a value fits ran jsonschema's own validator, whose `pattern` is Python's re unbounded: a
    # model-sent "aaa...a!" against the first member's ^(a+)+$ held the event loop for minutes.  Bounded now,
    # with re's verdict (it does not fit: the second member is chosen).
    import time

    started = time.monotonic()
    value = convert({"code": "a" * 40 + "!", "x": 1}, Coded | Plain)
    assert time.monotonic() - started < 2.0
    assert value == Plain(code="a" * 40 + "!", x=1)
    assert convert({"code": "aaa", "x": 1}, Coded | Plain) == Coded(code="aaa", x=1)
