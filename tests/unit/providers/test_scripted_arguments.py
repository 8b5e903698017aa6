"""A ScriptedProvider written wrong is refused where it is written, not at the call that reaches the mistake.

A script item no call could answer with (a dict, an exception class, an empty list) was refused only when a call
reached it — a test then failed far from the line at fault, or not at all when the item was never used; a
``name`` that is no string named the provider in errors and events as whatever it was; ``script=5`` said only
"'int' object is not iterable".
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import LLMResponse, ToolCall
from agentactors.providers.scripted import ScriptedProvider, StreamCut


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ({"content": "hi"}, "item #2 is a dict"),
        (ValueError, "an exception class"),
        ([], "item #2 is a list"),
        ([ToolCall("c1", "add", {}), "and text"], "item #2 is a list"),
        (42, "item #2 is an int"),
        (None, "item #2 is a NoneType"),
    ],
)
def test_an_item_no_call_could_answer_with_is_refused_when_the_script_is_written(item: Any, said: str) -> None:
    with pytest.raises(TypeError, match=said):
        ScriptedProvider(["fine", item])


def test_every_kind_of_item_is_still_taken() -> None:
    call = ToolCall("c1", "add", {"a": 1})
    ScriptedProvider([
        "text", call, [call], (call, call), LLMResponse(content="x"), ValueError("raised"),
        StreamCut("partial", RuntimeError("cut")), lambda request: "late",
    ])
    ScriptedProvider(lambda request: "every call")


@pytest.mark.parametrize(("kwargs", "error", "said"), [
    ({"name": 5}, TypeError, "name must be a non-empty str"),
    ({"name": ""}, ValueError, "name must be a non-empty str"),
    ({"model": 4}, TypeError, "model must be a str or None"),
])
def test_a_name_or_model_of_the_wrong_kind_is_refused(
    kwargs: dict[str, Any], error: type[Exception], said: str
) -> None:
    with pytest.raises(error, match=said):
        ScriptedProvider(["x"], **kwargs)


def test_extend_refuses_what_the_constructor_refuses_and_appends_nothing_then() -> None:
    provider = ScriptedProvider(["first"])
    with pytest.raises(TypeError, match="item #3 is a dict"):
        provider.extend(["second", {"content": "no"}])
    provider.extend(["second"])
    assert "2 items left" in repr(provider)


def test_a_script_that_is_no_sequence_says_what_a_script_is() -> None:
    with pytest.raises(TypeError, match="script must be a sequence of items, one item or a callable, not an int"):
        ScriptedProvider(5)  # type: ignore[arg-type]
