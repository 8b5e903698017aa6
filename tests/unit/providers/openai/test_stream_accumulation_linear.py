"""A long stream costs its own characters: fragments are kept and joined once, never re-copied per fragment.

``text += fragment`` on a value held in a dict copies the whole text so far at every fragment (CPython's in-place
concatenation only applies to a local name): a reasoning block streamed in 20,000 fragments was quadratic.
The count: a fragment that is a ``str`` subclass sees, through ``__radd__``, every concatenation it is the right
operand of, and how many characters of text-so-far it copied.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentactors.providers.openai import stream as openai_stream
from agentactors.providers.openai.stream import OpenAIStreamDecoder

FRAGMENTS = 2_000


class _Counted(str):
    """A fragment that counts the characters copied when text so far is concatenated with it."""

    copied = 0

    def __radd__(self, left: str) -> str:
        _Counted.copied += len(left)
        return str.__add__(left, self)


def _counting_loads(text: str) -> Any:
    def hook(obj: dict[str, Any]) -> dict[str, Any]:
        return {k: _Counted(v) if k == "text" and isinstance(v, str) else v for k, v in obj.items()}

    return json.loads(text, object_hook=hook)


def _chunk(delta: dict[str, Any]) -> str:
    return json.dumps({"id": "r", "model": "m", "choices": [{"index": 0, "delta": delta}]})


def test_openrouter_reasoning_details_in_many_fragments_copy_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_stream, "_loads", _counting_loads)
    _Counted.copied = 0
    decoder = OpenAIStreamDecoder(request=None, model="m", provider="openrouter")
    piece = "abcdefghij"
    for _ in range(FRAGMENTS):
        decoder.feed("", _chunk({"reasoning_details": [{"type": "reasoning.text", "text": piece, "index": 0}]}))
    decoder.feed("", json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    decoder.feed("", "[DONE]")
    response = decoder.finish()
    assert response.provider_data is not None
    (detail,) = response.provider_data["openai"]["reasoning_details"]
    assert detail["text"] == piece * FRAGMENTS  # the same block, whole
    # Linear: at most the final text's length copied again (a quadratic build copies ~FRAGMENTS/2 times that).
    assert _Counted.copied <= 2 * len(piece) * FRAGMENTS


def test_a_detail_field_that_turns_into_another_value_keeps_the_last_one() -> None:
    decoder = OpenAIStreamDecoder(request=None, model="m", provider="openrouter")
    for value in ("a", "b", 7, "c", "d"):
        decoder.feed("", _chunk({"reasoning_details": [{"type": "reasoning.text", "data": value, "index": 0}]}))
    decoder.feed("", json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    decoder.feed("", "[DONE]")
    response = decoder.finish()
    assert response.provider_data is not None
    (detail,) = response.provider_data["openai"]["reasoning_details"]
    assert detail["data"] == "cd"  # "ab" replaced by 7, then a text again from "c"
    assert decoder.finish().provider_data == response.provider_data  # finish() twice: the same
