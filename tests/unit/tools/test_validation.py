"""Argument validation: one line per issue (path, expected, the JSON *type* sent), never the values."""

import enum
from typing import Annotated, Any, Literal

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors.messages import ToolSpec
from agentactors.tools import Tool, tool
from agentactors.tools.results import MAX_LISTED_ISSUES


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
) -> str:
    """Weather forecast."""
    return city


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


def test_valid_arguments_have_no_issues() -> None:
    assert forecast.validate({"city": "Oslo"}) == []
    assert (
        forecast.validate(
            {
                "city": "Oslo",
                "days": 2,
                "unit": "fahrenheit",
                "window": {"start": 1, "end": 2},
                "tags": ["a"],
                "mode": "full",
            }
        )
        == []
    )
    assert forecast.validate({"city": "Oslo", "window": None}) == []


def test_each_issue_names_path_expected_and_type() -> None:
    args = {
        "city": 12,
        "days": "three-SECRETVALUE",
        "unit": "kelvin-SECRETVALUE",
        "window": {"start": "x-SECRETVALUE", "stop": 3},
        "tags": ["ok", 5],
        "mode": "verbose-SECRETVALUE",
        "colour": "SECRETVALUE",
    }
    issues = forecast.validate(args)
    text = forecast.invalid_text(issues)
    assert "SECRETVALUE" not in text and "12" not in text.split("Its parameters")[0]
    assert text.splitlines()[0] == "Invalid arguments for tool 'forecast' — the call was not executed."
    got = {i.path: (i.expected, i.got) for i in issues}
    assert got["city"] == ("a string", "an integer")
    assert got["days"] == ("an integer", "a string")
    assert got["unit"] == ('one of "celsius", "fahrenheit"', "a string that is not one of them")
    assert got["mode"][0] == 'one of "brief", "full"'
    assert got["tags[1]"] == ("a string", "an integer")
    assert got["colour"][0].startswith("no such property (allowed: city, days, unit, window, tags, mode)")
    assert got["colour"][1] == "a string"
    # window is Window | None: the union reports what it accepts and what came
    assert got["window"] == ("object {start, end} or null", "an object")
    last = text.splitlines()[-1]
    assert last.startswith("Fix the arguments and call 'forecast' again. Its parameters: city (string, required);")
    assert "days (integer)" in last


def test_missing_required_and_nested_paths() -> None:
    @tool
    def book(window: Window, seats: int) -> None:
        return None

    issues = book.validate({"window": {"start": 1}})
    lines = [i.line() for i in issues]
    assert "- window.end: expected integer (required), got nothing" in lines
    assert "- seats: expected integer (required), got nothing" in lines
    assert len(lines) == 2


def test_at_most_ten_issues_listed() -> None:
    spec = ToolSpec(
        "wide",
        "",
        {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(15)}},
    )
    t = Tool.from_spec(spec, lambda **kw: kw)
    issues = t.validate({f"p{i}": "s" for i in range(15)})
    assert len(issues) == 15
    text = t.invalid_text(issues)
    assert len(lines_of(text)) == MAX_LISTED_ISSUES + 1  # ten issues and the "... and 5 more issues" line
    assert "- ... and 5 more issues" in text


def test_constraint_issues_do_not_leak_values() -> None:
    spec = ToolSpec(
        "c",
        "",
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1, "maximum": 5},
                "s": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"},
                "xs": {"type": "array", "minItems": 2, "uniqueItems": True},
                "k": {"const": "fixed"},
            },
        },
    )
    t = Tool.from_spec(spec, lambda **kw: kw)
    issues = t.validate({"n": 987654, "s": "LEAKY-VALUE", "xs": ["dup"], "k": "LEAKY-CONST"})
    text = t.invalid_text(issues)
    for secret in ("987654", "LEAKY", "dup"):
        assert secret not in text
    by_expected = {i.expected: i.got for i in issues}
    assert by_expected["a number ≤ 5"] == "an integer out of that range"
    assert by_expected["a string of at most 3 chars"] == "a string of 11 chars"
    assert by_expected["a string matching the pattern ^[a-z]+$"] == "a string that does not match"
    assert by_expected["an array of at least 2 items"] == "an array of 1 items"
    assert by_expected['the constant "fixed"'] == "a string that differs"


def test_tuple_too_long_and_root_type() -> None:
    @tool
    def pair(p: tuple[int, int]) -> None:
        return None

    issues = pair.validate({"p": [1, 2, 3]})
    assert [i.line() for i in issues] == ["- p: expected an array of at most 2 items, got an array of 3 items"]
    root = pair.validate([1, 2])  # type: ignore[arg-type]
    assert root[0].path == "arguments" and root[0].got == "an array"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8).map(lambda s: "V#" + s),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "start"]), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["city", "days", "unit", "window", "tags", "mode", "extra"]), json_values, max_size=7
    )
)
def test_no_sent_string_value_ever_appears(arguments: dict[str, Any]) -> None:
    issues = forecast.validate(arguments)
    text = forecast.invalid_text(issues)
    assert "V#" not in text
    assert len(lines_of(text)) <= MAX_LISTED_ISSUES + 1
    for issue in issues:
        assert issue.got.split()[0] in ("a", "an", "null", "nothing")


@pytest.mark.parametrize("bad", [{"a": 1}, {"days": 1}])
def test_validator_is_compiled_once(bad: dict[str, Any]) -> None:
    first = forecast._validator
    forecast.validate(bad)
    assert forecast._validator is first
