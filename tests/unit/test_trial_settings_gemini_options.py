"""A trial of docs/settings.md: Gemini's options "dict into dict at every level (generation fields may sit at its top
level)" — but ``temperature``, ``maxOutputTokens`` and ``stopSequences`` given at the top level stayed there.

``GenerateContentRequest`` has no such top-level fields: the vendor refuses the unknown name with a 400 (the
FakeVendor ignores it, so the temperature never reached the model), and the value escaped the judging every other
option gets (a temperature of 3 or NaN, six stop sequences).  ``topP``, ``topK`` and ``seed`` were lifted into
``generationConfig`` already.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import Agent, LLMRequest, Message, ModelSettings, UnsupportedSettingError
from agentactors.providers.gemini.encode import encode_request as gemini_body
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.testing.fakevendor import FakeVendor

MODEL = "gemini-2.5-flash"


def _body(options: dict[str, Any]) -> dict[str, Any]:
    return gemini_body(LLMRequest([Message.user("Hi")], vendor_options={"gemini": options}), MODEL, stream=False)


@pytest.mark.parametrize(
    ("key", "value"),
    [("temperature", 0.5), ("maxOutputTokens", 50), ("max_output_tokens", 50), ("stopSequences", ["END"]),
     ("stop_sequences", ["END"])],
)
def test_a_generation_field_at_the_top_level_goes_into_generation_config(key: str, value: Any) -> None:
    body = _body({key: value})
    assert key not in body
    assert body["generationConfig"] == {key: value}


@pytest.mark.parametrize(
    ("options", "setting"),
    [({"temperature": 3.0}, "temperature"), ({"temperature": float("nan")}, "temperature"),
     ({"maxOutputTokens": 0}, "max_tokens"), ({"stopSequences": list("abcdef")}, "stop")],
)
def test_a_top_level_generation_field_is_judged_as_the_setting_is(options: dict[str, Any], setting: str) -> None:
    with pytest.raises(UnsupportedSettingError) as caught:
        _body(options)
    assert caught.value.setting == setting


def test_a_top_level_option_still_wins_over_the_setting() -> None:
    request = LLMRequest([Message.user("Hi")], temperature=0.2, vendor_options={"gemini": {"temperature": 0.9}})
    assert gemini_body(request, MODEL, stream=False)["generationConfig"] == {"temperature": 0.9}


@pytest.mark.anyio
async def test_a_top_level_temperature_reaches_the_model(fake_vendor: FakeVendor) -> None:
    provider = GeminiProvider(MODEL, api_key="test-key-trial-settings", base_url=fake_vendor.base_url)
    agent = Agent(provider, settings=ModelSettings(extra={"gemini": {"temperature": 0.5, "stopSequences": ["END"]}}))
    result = await agent.run("Hi")
    assert result.error is None, result.error
    (seen,) = fake_vendor.requests
    assert seen.conversation is not None
    assert seen.conversation.settings["temperature"] == 0.5
    assert seen.conversation.settings["stop"] == ["END"]
    assert "temperature" not in seen.body
