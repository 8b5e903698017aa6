"""A token budget's estimate serialises a tool's schema once for the spec's life, not for every request.

Each request a token budget admits is estimated; the tools' JSON schemas were serialised again every time (~7 µs a
tool of ten parameters, every request of every run).  The size is remembered per spec, and forgotten with it.
"""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest

from agentactors.gateway import _estimate
from agentactors.gateway._estimate import estimate_tokens
from agentactors.messages import LLMRequest, Message, ToolSpec


def spec(name: str, params: int) -> ToolSpec:
    properties = {f"p{i}": {"type": "string", "description": "a parameter " * 5} for i in range(params)}
    return ToolSpec(name, "does a thing", {"type": "object", "properties": properties})


def uncached(request: LLMRequest) -> int:
    chars = sum(len(m.content) for m in request.messages)
    chars += sum(len(s.name) + len(s.description) + len(json.dumps(s.parameters, separators=(",", ":")))
                 for s in request.tools)
    return chars // 4 + 1 + (request.max_tokens or 0)


def test_the_estimate_is_what_serialising_every_time_gave_and_a_schema_is_serialised_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = (spec("a", 10), spec("b", 3))
    request = LLMRequest(messages=(Message.user("hello there"),), tools=tools, max_tokens=100)
    expected = uncached(request)
    calls: list[Any] = []
    real = json.dumps

    def counting(value: Any, **kwargs: Any) -> str:
        calls.append(value)
        return real(value, **kwargs)

    monkeypatch.setattr(json, "dumps", counting)
    assert [estimate_tokens(request) for _ in range(5)] == [expected] * 5
    assert len(calls) == 2  # once a spec


def test_a_collected_spec_is_forgotten_and_a_new_one_at_its_address_counted_afresh() -> None:
    before = len(_estimate._SCHEMA_CHARS)
    small = spec("t", 1)
    estimate_tokens(LLMRequest(messages=(Message.user("x"),), tools=(small,)))
    assert len(_estimate._SCHEMA_CHARS) == before + 1
    del small
    gc.collect()
    assert len(_estimate._SCHEMA_CHARS) == before
    for params in (1, 12, 2, 30):  # whatever ids they get, each counted as itself
        request = LLMRequest(messages=(Message.user("x"),), tools=(spec("t", params),))
        assert estimate_tokens(request) == uncached(request)
