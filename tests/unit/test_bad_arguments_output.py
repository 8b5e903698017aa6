"""``Agent(output_type=..., output_retries=..., output_validator=...)`` and ``resilient_chain(hedge_after=...)``
refuse a bad argument when built, saying what the argument takes, in the words the user wrote.

Each case below was refused before, but in words that did not help:

* ``output_type=[int]`` (a list *value*, not the type ``list[int]``) was "unhashable type: 'list'";
  ``output_type=(int, str)``, ``5`` and ``"int"`` were "cannot describe ... as JSON Schema" with a list of
  families, none of which the user could see they had missed.  Each now says what ``output_type`` takes and
  what to write instead (``list[int]``, ``int | str``, ``int``, ``Literal[5]``), also inside ``ToolOutput`` and
  the other strategies (refused where the spec is written).
* ``output_retries=True`` / ``None`` / ``1.5`` / ``"2"`` were a ``ValueError``: the wrong *type* is a
  ``TypeError`` (a negative count stays a ``ValueError``).
* ``resilient_chain(p, hedge_after="bogus")`` was "after must be ..." — the name of :func:`with_hedge`'s
  parameter, not of the one written; refused now as ``hedge_after``, before any layer is built, whatever the
  chain's shape (and by ``guarded(...)`` too).

Every valid form keeps working.
"""

from __future__ import annotations

import enum
import math
from typing import Annotated, Any, Literal, Optional, Union

import pydantic
import pytest

from agentactors import Agent, ScriptedProvider
from agentactors.output.spec import NativeOutput, PromptedOutput, ToolOutput
from agentactors.resilience import resilient_chain, with_hedge
from agentactors.resilience.preset import guarded


def p(name: str = "p") -> ScriptedProvider:
    return ScriptedProvider(["ok"], name=name)


class Color(enum.Enum):
    red = "red"
    blue = "blue"


class Person(pydantic.BaseModel):
    name: str


# --- output_type -------------------------------------------------------------------------------------

# (value, what the message must say: the argument, what it takes, what to write instead)
OUTPUT_TYPE_BAD: list[tuple[object, tuple[str, ...]]] = [
    ([int], ("output_type", "a type", "not a list", "list[int]")),
    ([int, str], ("output_type", "not a list", "list[int | str]")),
    (["a", "b"], ("output_type", "not a list", "Literal['a', 'b']")),
    ((int, str), ("output_type", "not a tuple", "int | str", "Union[int, str]", "tuple[int, str]")),
    ({int}, ("output_type", "not a set", "set[int]")),
    ({"a": int}, ("output_type", "not a dict", "TypedDict")),
    (5, ("output_type", "not the int 5", "Literal[5]")),
    (1.5, ("output_type", "not the float 1.5")),
    (True, ("output_type", "not the bool True")),
    ("int", ("output_type", "not the str 'int'", "write int,")),
    (list[[int]], ("output_type", "not a list", "list[int]")),  # type: ignore[valid-type,misc]
    (dict[str, "Person"], ("output_type", "not the str 'Person'")),
    ("Person", ("output_type", "not the str 'Person'", "the class itself")),
    (b"int", ("output_type", "not the bytes")),
    (Color.red, ("output_type", "not the Color", "Literal[Color.red]")),
]


def _id(value: object) -> str:
    return repr(value).replace("<class '", "").replace("'>", "")


@pytest.mark.parametrize(("value", "says"), OUTPUT_TYPE_BAD, ids=[_id(v) for v, _ in OUTPUT_TYPE_BAD])
def test_agent_output_type_value_not_a_type_says_what_to_write(value: object, says: tuple[str, ...]) -> None:
    with pytest.raises(TypeError) as caught:
        Agent(p(), output_type=value)  # type: ignore[arg-type]
    text = str(caught.value)
    for part in says:
        assert part in text, f"{part!r} not in {text!r}"
    assert "unhashable" not in text and "JSON Schema" not in text


@pytest.mark.parametrize("spec", [ToolOutput, NativeOutput, PromptedOutput], ids=lambda s: s.__name__)
@pytest.mark.parametrize(("value", "says"), OUTPUT_TYPE_BAD[:6], ids=[_id(v) for v, _ in OUTPUT_TYPE_BAD[:6]])
def test_output_spec_refuses_a_value_not_a_type_where_written(
    spec: Any, value: object, says: tuple[str, ...]
) -> None:
    with pytest.raises(TypeError) as caught:
        spec(value)
    text = str(caught.value)
    for part in says:
        assert part in text, f"{part!r} not in {text!r}"


@pytest.mark.parametrize(
    "value",
    [
        str,
        int,
        float,
        bool,
        list,
        dict,
        list[int],
        dict[str, int],
        tuple[int, str],
        set[str],
        int | None,
        Optional[int],  # noqa: UP045 - the spelling is what is tested
        Union[int, str],  # noqa: UP007 - the spelling is what is tested
        Literal["a", "b"],
        Literal[5],
        Annotated[int, "meta"],
        Color,
        Person,
        Person | None,
        Any,
        ToolOutput(int),
        NativeOutput(list[int]),
        PromptedOutput(Literal["x"]),  # type: ignore[arg-type]
    ],
    ids=_id,
)
def test_agent_keeps_valid_output_types(value: Any) -> None:
    Agent(p(), output_type=value)


def test_output_type_none_is_still_refused_as_before() -> None:
    with pytest.raises(TypeError, match="output_type cannot be None"):
        Agent(p(), output_type=None)  # type: ignore[arg-type]


# --- output_retries / output_validator ----------------------------------------------------------------

RETRIES_BAD: list[tuple[object, type[Exception]]] = [
    (True, TypeError),
    (False, TypeError),
    (None, TypeError),
    (1.5, TypeError),
    (2.0, TypeError),
    ("2", TypeError),
    (math.nan, TypeError),
    (-1, ValueError),
]


@pytest.mark.parametrize(("value", "error"), RETRIES_BAD, ids=[_id(v) for v, _ in RETRIES_BAD])
@pytest.mark.parametrize("output_type", [str, int], ids=["str", "int"])
def test_agent_output_retries_wrong_type_is_type_error(value: object, error: type[Exception], output_type: Any) -> None:
    with pytest.raises(error, match="output_retries") as caught:
        Agent(p(), output_type=output_type, output_retries=value)  # type: ignore[arg-type]
    assert type(caught.value) is error


@pytest.mark.parametrize("value", [0, 1, 5])
def test_agent_keeps_valid_output_retries(value: int) -> None:
    Agent(p(), output_type=int, output_retries=value)


@pytest.mark.parametrize("value", [5, "fn", [len]], ids=_id)
@pytest.mark.parametrize("output_type", [str, int], ids=["str", "int"])
def test_agent_output_validator_not_callable_is_type_error(value: object, output_type: Any) -> None:
    with pytest.raises(TypeError, match="output_validator must be callable"):
        Agent(p(), output_type=output_type, output_validator=value)  # type: ignore[arg-type]


# --- resilient_chain(hedge_after=...) / guarded(hedge_after=...) --------------------------------------

SHAPES = {
    "one": lambda: (p(),),
    "two": lambda: (p(), p("q")),
    "pool": lambda: ([p(), p("q")],),
}

HEDGE_AFTER_BAD: list[object] = ["bogus", "p100", "p0", -1, math.nan, math.inf, True, [1]]


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize("value", HEDGE_AFTER_BAD, ids=_id)
def test_resilient_chain_names_hedge_after(shape: Any, value: object) -> None:
    with pytest.raises(ValueError, match=r"^hedge_after must be") as caught:
        resilient_chain(*shape(), hedge_after=value)  # type: ignore[arg-type]
    assert "p95" in str(caught.value)


@pytest.mark.parametrize("value", HEDGE_AFTER_BAD, ids=_id)
def test_guarded_names_hedge_after(value: object) -> None:
    with pytest.raises(ValueError, match=r"^hedge_after must be"):
        guarded(p(), hedge_after=value)  # type: ignore[arg-type]


def test_resilient_chain_names_hedge_max_extra_with_a_hedge() -> None:
    with pytest.raises(ValueError, match=r"^hedge_max_extra must be"):
        resilient_chain(p(), hedge_after=1.0, hedge_max_extra=2)


@pytest.mark.parametrize("value", ["bogus", -1, True])
def test_with_hedge_keeps_its_own_name(value: object) -> None:
    with pytest.raises(ValueError, match=r"^after must be"):
        with_hedge(p(), after=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize("value", [None, 0, 0.5, 2, "p95", " P99.9 "], ids=_id)
def test_resilient_chain_keeps_valid_hedge_after(shape: Any, value: Any) -> None:
    resilient_chain(*shape(), hedge_after=value)


def test_an_output_validator_taking_three_required_arguments_is_refused_when_the_agent_is_made() -> None:
    # Accepted before, and the run failed at its first answer: "v() missing 1 required positional argument".
    def v(value: Any, ctx: Any, extra: Any) -> Any:
        return value

    with pytest.raises(TypeError, match="output_validator takes"):
        Agent(ScriptedProvider(["x"]), output_type=int, output_validator=v)
