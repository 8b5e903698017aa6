"""A trial of docs/settings.md: ``stop`` is "a string or a sequence of strings, never a mapping", and ``LLMRequest``
"checks its fields the same way".

Found: ``LLMRequest(stop={"END": 1})`` sent the mapping's keys as stop sequences (``ModelSettings`` refuses it);
``stop=b"END"`` (bytes, iterable as ints) failed with "not 69"; ``LLMRequest(stop=5)`` with "'int' object is not
iterable"; a stop sequence that is not a string (``[1]``) is the ``ValueError`` ModelSettings has always raised.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import LLMRequest, Message, ModelSettings
from agentactors.settings import NO_STOP


def _request(stop: Any) -> LLMRequest:
    return LLMRequest([Message.user("Hi")], stop=stop)


@pytest.mark.parametrize("build", [_request, lambda stop: ModelSettings(stop=stop)])
@pytest.mark.parametrize("stop", [{"END": 1}, b"END", bytearray(b"END"), 5, 2.5])
def test_a_stop_that_is_not_a_string_or_a_sequence_of_them_is_a_type_error_naming_stop(build: Any, stop: Any) -> None:
    with pytest.raises(TypeError, match=rf"stop must be a str or a sequence of str, not {type(stop).__name__}"):
        build(stop)


@pytest.mark.parametrize("build", [_request, lambda stop: ModelSettings(stop=stop)])
@pytest.mark.parametrize("stop", [[1], ["END", None], [b"END"]])
def test_a_stop_sequence_that_is_not_a_string_is_refused_by_both(build: Any, stop: Any) -> None:
    # A ValueError, as ModelSettings always raised it (tests/unit/test_value_types_hostile.py: code catches it).
    with pytest.raises(ValueError, match="stop sequences must be non-empty strings"):
        build(stop)


@pytest.mark.parametrize("build", [_request, lambda stop: ModelSettings(stop=stop)])
def test_an_empty_stop_sequence_is_still_a_value_error(build: Any) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        build(["END", ""])


def test_the_shapes_a_request_takes_are_unchanged() -> None:
    assert _request("END").stop == ("END",)
    assert _request(["a", "b"]).stop == ("a", "b")
    assert _request(iter(["a"])).stop == ("a",)
    assert _request(None).stop == ()
    assert _request(NO_STOP).stop is NO_STOP
    assert LLMRequest([Message.user("Hi")], **ModelSettings(stop=[]).request_fields()).stop is NO_STOP
