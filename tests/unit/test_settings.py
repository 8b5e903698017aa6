"""ModelSettings: validated where built, merged field by field, and one field each on LLMRequest."""

from __future__ import annotations

import pickle
from typing import Any

import attrs
import pytest

from agentactors import CachePolicy, LLMRequest, Message, ModelSettings
from agentactors.settings import REASONING_EFFORTS

FIELDS = [f.name for f in attrs.fields(ModelSettings)]


def test_every_field_is_optional_and_unset_by_default() -> None:
    settings = ModelSettings()
    assert all(getattr(settings, name) is None for name in FIELDS)
    assert not settings and settings.request_fields() == {}
    assert FIELDS == ["temperature", "top_p", "max_tokens", "stop", "seed", "parallel_tool_calls",
                      "reasoning_effort", "thinking_budget", "cache", "timeout", "extra"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"temperature": -0.1}, ValueError, "temperature must be between 0 and 2"),
        ({"temperature": 2.5}, ValueError, "temperature must be between 0 and 2"),
        ({"temperature": "hot"}, TypeError, "temperature must be a number"),
        ({"temperature": True}, TypeError, "temperature must be a number"),
        ({"temperature": float("nan")}, ValueError, "finite"),
        ({"top_p": 1.5}, ValueError, "top_p must be between 0 and 1"),
        ({"max_tokens": 0}, ValueError, "max_tokens must be positive"),
        ({"max_tokens": 10.0}, TypeError, "max_tokens must be an int"),
        ({"seed": "7"}, TypeError, "seed must be an int"),
        ({"parallel_tool_calls": 1}, TypeError, "parallel_tool_calls must be a bool"),
        ({"reasoning_effort": "turbo"}, ValueError, "reasoning_effort must be one of none, minimal"),
        ({"reasoning_effort": 3}, TypeError, "reasoning_effort must be a str"),
        ({"thinking_budget": -1}, ValueError, "thinking_budget must be >= 0"),
        ({"thinking_budget": 1.5}, TypeError, "thinking_budget must be an int"),
        ({"timeout": 0}, ValueError, "timeout must be a positive number"),
        ({"cache": "yes"}, TypeError, "cache must be a bool or a CachePolicy"),
        ({"stop": ["END", ""]}, ValueError, "stop sequences must be non-empty"),
        ({"extra": {"openai": 3}}, TypeError, "extra is keyed by wire"),
        ({"extra": ["openai"]}, TypeError, "extra must be a mapping"),
    ],
)
def test_a_bad_value_fails_where_it_is_built(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ModelSettings(**kwargs)


def test_values_are_normalised() -> None:
    settings = ModelSettings(stop="END", cache=True, extra={"openai": {"n": 1}})
    assert settings.stop == ("END",)  # a bare string is one stop sequence
    assert settings.cache == CachePolicy()
    assert ModelSettings(cache=False).cache == CachePolicy.off()
    assert not CachePolicy.off().enabled and CachePolicy().enabled
    assert ModelSettings(stop=["A", "B"]).stop == ("A", "B")
    assert set(REASONING_EFFORTS) == {"none", "minimal", "low", "medium", "high", "xhigh", "max"}


def test_cache_policy_is_validated() -> None:
    with pytest.raises(ValueError, match="retention must be 'default' or 'extended'"):
        CachePolicy(retention="forever")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"CachePolicy\.tools must be a bool"):
        CachePolicy(tools=1)  # type: ignore[arg-type]


def test_merge_is_field_by_field_and_the_others_set_fields_win() -> None:
    agent = ModelSettings(temperature=0.2, max_tokens=500, seed=1,
                          extra={"anthropic": {"top_k": 5}, "openai": {"n": 1}})
    run = ModelSettings(temperature=0.9, reasoning_effort="low", extra={"openai": {"user": "u1"}})
    merged = agent.merge(run)
    assert merged.temperature == 0.9 and merged.max_tokens == 500 and merged.seed == 1
    assert merged.reasoning_effort == "low"
    # extra merges wire by wire, key by key: the run's OpenAI option joins, the agent's Anthropic one stays
    assert merged.extra == {"anthropic": {"top_k": 5}, "openai": {"n": 1, "user": "u1"}}
    assert agent.merge(None) is agent and agent.merge(ModelSettings()) is agent
    assert ModelSettings().merge(run) is run
    # an explicit False wins over a True: set is not the same as unset
    assert ModelSettings(cache=True).merge(ModelSettings(cache=False)).cache == CachePolicy.off()
    assert ModelSettings(parallel_tool_calls=True).merge(ModelSettings(parallel_tool_calls=False)).parallel_tool_calls \
        is False


def test_request_fields_name_llmrequest_fields_with_extra_as_vendor_options() -> None:
    settings = ModelSettings(temperature=0.1, top_p=0.9, max_tokens=9, stop="X", seed=3, parallel_tool_calls=False,
                             reasoning_effort="high", thinking_budget=2048, cache=True, timeout=5.0,
                             extra={"gemini": {"candidateCount": 1}})
    fields = settings.request_fields()
    assert fields["vendor_options"] == {"gemini": {"candidateCount": 1}} and "extra" not in fields
    request = LLMRequest([Message.user("q")], **fields)
    for name in FIELDS:
        expected = getattr(settings, name)
        assert getattr(request, "vendor_options" if name == "extra" else name) == expected, name


def test_llmrequest_checks_its_new_fields_as_modelsettings_does() -> None:
    with pytest.raises(ValueError, match="top_p"):
        LLMRequest([Message.user("q")], top_p=3)
    with pytest.raises(ValueError, match="reasoning_effort"):
        LLMRequest([Message.user("q")], reasoning_effort="ultra")
    with pytest.raises(ValueError, match="thinking_budget"):
        LLMRequest([Message.user("q")], thinking_budget=-5)
    with pytest.raises(ValueError, match="timeout"):
        LLMRequest([Message.user("q")], timeout=-1)
    assert LLMRequest([Message.user("q")], cache=True).cache == CachePolicy()
    # The temperature's ceiling is left to the wire (a compatible server may take more than 2); what no wire
    # takes (NaN, a negative, a string) is refused: tests/unit/test_value_types_hostile.py.
    assert LLMRequest([Message.user("q")], temperature=5.0).temperature == 5.0


def test_with_defaults_fills_only_what_the_request_leaves_unset() -> None:
    defaults = ModelSettings(temperature=0.3, max_tokens=100, stop=("END",), seed=7,
                             extra={"openai": {"n": 1, "user": "d"}})
    request = LLMRequest([Message.user("q")], temperature=0.9, vendor_options={"openai": {"user": "mine"}})
    filled = request.with_defaults(defaults)
    assert filled.temperature == 0.9 and filled.max_tokens == 100 and filled.stop == ("END",) and filled.seed == 7
    assert filled.vendor_options == {"openai": {"n": 1, "user": "mine"}}
    assert request.with_defaults(None) is request and request.with_defaults(ModelSettings()) is request
    full = LLMRequest([Message.user("q")], temperature=0.1, stop=("S",))
    assert full.with_defaults(ModelSettings(temperature=0.5, stop="T")) is full


def test_settings_pickle_copy_and_evolve() -> None:
    settings = ModelSettings(temperature=0.5, stop="X", cache=CachePolicy(retention="extended"), extra={"openai": {}})
    assert pickle.loads(pickle.dumps(settings)) == settings
    assert attrs.evolve(settings, seed=2).seed == 2
    assert hash(CachePolicy()) == hash(CachePolicy())
