"""The strategy wrappers refuse a bad argument where it is written, with a typed error that says what it takes.

Found by a trial of ``docs/output.md``: ``PromptedOutput(T, template=5)`` was refused only when the agent was built,
as "argument of type 'int' is not iterable"; ``NativeOutput(T, strict="no")`` was taken as strict (a truthy str),
and sent; ``ToolOutput(T, description=5)`` was refused later, by the tool registry; ``name=5`` was a
``ValueError`` although the wrong *type* is a ``TypeError`` (as ``output_retries=True`` is).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agentactors import NativeOutput, PromptedOutput, ToolOutput


@dataclasses.dataclass
class Cat:
    name: str


@pytest.mark.parametrize(
    ("spec", "arguments", "words"),
    [
        (PromptedOutput, {"template": 5}, ("template", "str", "int")),
        (PromptedOutput, {"template": b"{schema}"}, ("template", "str", "bytes")),
        (NativeOutput, {"strict": "no"}, ("strict", "bool", "str")),
        (NativeOutput, {"strict": 1}, ("strict", "bool", "int")),
        (ToolOutput, {"description": 5}, ("description", "str", "int")),
        (ToolOutput, {"name": 5}, ("name", "str", "int")),
        (NativeOutput, {"name": 5}, ("name", "str", "int")),
    ],
)
def test_a_wrong_type_is_a_type_error_naming_the_argument(
    spec: Any, arguments: dict[str, Any], words: tuple[str, ...]
) -> None:
    with pytest.raises(TypeError) as caught:
        spec(Cat, **arguments)
    for word in words:
        assert word in str(caught.value), (word, str(caught.value))


@pytest.mark.parametrize("make", [lambda: ToolOutput(Cat, name=""), lambda: NativeOutput(Cat, name="")])
def test_an_empty_name_stays_a_value_error(make: Any) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        make()


def test_every_valid_form_is_kept() -> None:
    assert PromptedOutput(Cat, template="Answer per {schema}").template == "Answer per {schema}"
    assert PromptedOutput(Cat).template is None
    assert NativeOutput(Cat, strict=False).strict is False
    assert ToolOutput(Cat, description="the cat", name="cat").description == "the cat"
    assert ToolOutput(Cat).description is None
