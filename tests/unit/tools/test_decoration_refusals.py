"""``@tool`` refuses, when the tool is made, what would otherwise go wrong later or say nothing useful.

- a default its own parameter's type refuses (``def f(a: int = "x")``): the schema would contradict itself
  (``{"type": "integer", "default": "x"}``) and a call that omits ``a`` would run the tool with ``"x"``;
- something with no signature to read (``tool(int)``): the error says what ``@tool`` takes;
- a lambda, or a function whose name no model can call: the error says to give one with ``name=``.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal

import pytest

from agentactors.messages import ToolSpec
from agentactors.tools import Tool, tool

_SENTINEL = object()


class Colour(enum.Enum):
    red = "red"
    blue = "blue"


@dataclasses.dataclass
class Window:
    start: int
    end: int


# --- defaults the parameter's own type refuses --------------------------------------------------


def test_a_default_of_another_type_is_refused_naming_the_parameter() -> None:
    def lookup(city: str, limit: int = "ten") -> str:  # type: ignore[assignment]
        return city

    with pytest.raises(TypeError, match=r"tool 'lookup': the default of parameter 'limit' .*integer.*string"):
        tool(lookup)


@pytest.mark.parametrize(
    ("annotation", "default", "where"),
    [
        (list[int], (1, "two"), "tags"),
        (Literal["a", "b"], "c", "tags"),
        (Window, {"start": 1}, "tags"),
        (dict[str, int], {"x": "y"}, "tags"),
        (Annotated[int, "a count"], 2.5, "tags"),
    ],
    ids=["list-item", "literal", "dataclass-missing-field", "dict-value", "annotated"],
)
def test_defaults_that_break_their_schema_anywhere_are_refused(annotation: Any, default: Any, where: str) -> None:
    def search(q: str, tags: Any = default) -> str:
        return q

    search.__annotations__["tags"] = annotation
    with pytest.raises(TypeError, match=f"parameter '{where}'"):
        tool(search)


def test_defaults_the_schema_accepts_stay_fine() -> None:
    @tool
    def search(  # every default here is one its parameter's schema takes
        q: str,
        limit: int = 10,
        ratio: float = 1,  # an int is a JSON number
        whole: int = 2.0,  # type: ignore[assignment]  # 2.0 is an integer to JSON Schema
        since: str | None = None,
        old_style: int = None,  # type: ignore[assignment]  # noqa: RUF013  # implicit Optional: takes null too
        tags: list[str] = ("a", "b"),  # type: ignore[assignment]  # a tuple is a JSON array
        colour: Colour = Colour.red,
        mode: Literal["fast", "slow"] = "fast",
        window: Window | None = None,
        anything: Any = "x",
        marker: object = _SENTINEL,  # not JSON: not in the schema, not checked
        nothing: int = _SENTINEL,  # type: ignore[assignment]  # a sentinel: the function's own business
    ) -> str:
        return q

    props = search.parameters["properties"]
    assert props["limit"]["default"] == 10 and props["tags"]["default"] == ["a", "b"]
    assert "default" not in props["marker"] and "default" not in props["nothing"]


def test_an_explicit_spec_is_the_authors_and_is_not_checked_against_the_function() -> None:
    def f(a: int = "x") -> int:  # type: ignore[assignment]
        return 1

    spec = ToolSpec("f", "", {"type": "object", "properties": {"a": {"type": "integer"}}})
    assert Tool.from_spec(spec, f).name == "f"


# --- what @tool takes, and what it calls a tool -------------------------------------------------


@pytest.mark.parametrize("fn", [int, dict], ids=["int", "dict"])
def test_a_callable_without_a_signature_is_refused_saying_what_tool_takes(fn: Any) -> None:
    with pytest.raises(TypeError, match=r"@tool needs a function") as caught:
        tool(fn)
    message = str(caught.value)
    # Led by what @tool takes, not by inspect's words; the class is named, and what to do instead.
    assert message.startswith("@tool needs a function") and f"'{fn.__name__}'" in message
    assert "wrap it in a def" in message


def test_a_lambda_is_refused_with_how_to_name_it() -> None:
    with pytest.raises(ValueError, match=r"a lambda has no name.*name=") as caught:
        tool(lambda x: x)
    assert "'<lambda>'" in str(caught.value)
    named = tool(lambda x: x, name="identity")
    assert named.name == "identity"


def test_a_function_whose_name_no_model_can_call_is_told_to_give_one() -> None:
    def café(x: int) -> int:
        return x

    with pytest.raises(ValueError, match=r"tool name 'café' is invalid.*name="):
        tool(café)
    assert tool(café, name="cafe").name == "cafe"


def test_an_invalid_explicit_name_keeps_its_own_message() -> None:
    with pytest.raises(ValueError, match=r"^tool name 'a b' is invalid"):
        tool(lambda: 1, name="a b")
