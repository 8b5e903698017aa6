"""A trial of docs/settings.md: "a value in ``extra`` that the table above refuses as a setting (the merged body is
judged) | all | ``UnsupportedSettingError``", and the table refuses "``reasoning_effort`` the model does not accept"
on every wire and a Gemini ``thinking_budget`` "out of the model's range, or 0 where thinking cannot be turned off".

Found: OpenAI's and Responses' wires judge an effort given as an option, but on Anthropic an
``output_config.effort`` outside the model's listed efforts (``"ultra"``, ``"max"`` on Opus 4.5) was sent; on Gemini a
``thinkingLevel`` the model does not take, a level on a model without levels, a ``thinkingBudget`` out of the
model's range and ``thinkingBudget: 0`` on 2.5 Pro were sent — each a 400 from the vendor, after sending.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import LLMRequest, Message, UnsupportedSettingError
from agentactors.providers.anthropic.encode import encode_request as anthropic_body
from agentactors.providers.gemini.encode import encode_request as gemini_body


def _request(wire: str, options: dict[str, Any], **fields: Any) -> LLMRequest:
    return LLMRequest([Message.user("Hi")], vendor_options={wire: options}, **fields)


@pytest.mark.parametrize(
    ("model", "options", "setting"),
    [
        ("claude-opus-4-6", {"output_config": {"effort": "ultra"}}, "reasoning_effort"),
        ("claude-opus-4-5", {"output_config": {"effort": "max"}}, "reasoning_effort"),
        ("claude-opus-4-7", {"output_config": {"effort": 3}}, "reasoning_effort"),
    ],
)
def test_anthropic_judges_an_effort_given_as_an_option(
    model: str, options: dict[str, Any], setting: str
) -> None:
    with pytest.raises(UnsupportedSettingError) as caught:
        anthropic_body(_request("anthropic", options), model, stream=False)
    assert caught.value.setting == setting
    assert "vendor_options['anthropic']" in str(caught.value)


@pytest.mark.parametrize(
    ("model", "options"),
    [
        ("claude-opus-4-6", {"output_config": {"effort": "max"}, "thinking": {"type": "adaptive"}}),
        ("claude-opus-4-7", {"output_config": {"effort": "xhigh"}}),
        ("claude-opus-4-5", {"output_config": {"effort": "low"}}),
        ("claude-x-next", {"output_config": {"effort": "whatever"}, "thinking": {"type": "adaptive"}}),  # unknown
        ("claude-sonnet-4-5", {"output_config": {"format": {"type": "json_schema", "schema": {}}}}),  # no effort
        ("claude-sonnet-4-5", {"output_config": {"effort": "low"}}),  # no effort parameter in the table: as given
    ],
)
def test_anthropic_sends_an_effort_option_the_model_takes(model: str, options: dict[str, Any]) -> None:
    body = anthropic_body(_request("anthropic", options), model, stream=False)
    assert body["output_config"] == options["output_config"]


@pytest.mark.parametrize(
    ("model", "thinking", "setting"),
    [
        ("gemini-3-pro-preview", {"thinkingLevel": "minimal"}, "reasoning_effort"),
        ("gemini-2.5-flash", {"thinkingLevel": "low"}, "reasoning_effort"),
        ("gemini-2.5-flash", {"thinkingBudget": 1_000_000}, "thinking_budget"),
        ("gemini-2.5-pro", {"thinking_budget": 0}, "thinking_budget"),
        ("gemini-2.5-flash-lite", {"thinkingBudget": 100}, "thinking_budget"),
        ("gemini-2.0-flash", {"thinkingBudget": 1024}, "thinking_budget"),
    ],
)
@pytest.mark.parametrize("nested", [True, False])
def test_gemini_judges_a_thinking_config_given_as_an_option(
    model: str, thinking: dict[str, Any], setting: str, nested: bool
) -> None:
    options = {"generationConfig": {"thinkingConfig": thinking}} if nested else {"thinkingConfig": thinking}
    with pytest.raises(UnsupportedSettingError) as caught:
        gemini_body(_request("gemini", options), model, stream=False)
    assert caught.value.setting == setting
    assert "vendor_options['gemini']" in str(caught.value)


@pytest.mark.parametrize(
    ("model", "thinking"),
    [
        ("gemini-3-pro-preview", {"thinkingLevel": "high"}),
        ("gemini-3-flash-preview", {"thinkingLevel": "minimal", "includeThoughts": True}),
        ("gemini-2.5-pro", {"thinkingBudget": -1}),  # dynamic thinking
        ("gemini-2.5-pro", {"thinkingBudget": 32768}),
        ("gemini-2.5-flash", {"thinkingBudget": 0}),
        ("gemini-2.5-flash", {"includeThoughts": True}),
        ("gemini-x-next", {"thinkingLevel": "whatever"}),  # unknown: the vendor judges it
    ],
)
def test_gemini_sends_a_thinking_option_the_model_takes(model: str, thinking: dict[str, Any]) -> None:
    body = gemini_body(_request("gemini", {"thinkingConfig": thinking}), model, stream=False)
    assert body["generationConfig"]["thinkingConfig"] == thinking
