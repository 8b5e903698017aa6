"""``ModelSettings.extra`` is keyed by wire, and the wires are known: a key no wire reads is a typo, refused."""

from __future__ import annotations

import pytest

from agentactors.providers.anthropic.models import WIRE as ANTHROPIC
from agentactors.providers.bedrock.models import WIRE as BEDROCK
from agentactors.providers.gemini.models import WIRE as GEMINI
from agentactors.providers.openai.models import WIRE as OPENAI
from agentactors.providers.responses.models import WIRE as RESPONSES
from agentactors.settings import ModelSettings


@pytest.mark.parametrize("typo", ["opnai", "OpenAI", "responses", "azure", "vertex", ""])
def test_an_unknown_wire_in_extra_is_refused_naming_the_known_ones(typo: str) -> None:
    # {"opnai": {...}} was kept, and no wire read it: the options silently reached no body.
    with pytest.raises(ValueError, match="unknown wire") as caught:
        ModelSettings(extra={"openai": {"n": 1}, typo: {"user": "u"}})
    message = str(caught.value)
    assert repr(typo) in message
    for wire in (OPENAI, RESPONSES, ANTHROPIC, GEMINI, BEDROCK):
        assert repr(wire) in message


def test_every_wire_that_reads_its_options_is_a_key_extra_takes() -> None:
    # Each codec reads request.options_for(WIRE): every one of them, and only they, are the keys.
    for wire in (OPENAI, RESPONSES, ANTHROPIC, GEMINI, BEDROCK):
        assert ModelSettings(extra={wire: {"k": 1}}).extra == {wire: {"k": 1}}
    everything: dict[str, dict[str, object]] = {w: {} for w in (OPENAI, RESPONSES, ANTHROPIC, GEMINI, BEDROCK)}
    assert ModelSettings(extra=everything).extra == everything


def test_an_empty_extra_and_a_merge_still_work() -> None:
    assert ModelSettings(extra={}).extra == {}
    merged = ModelSettings(extra={"anthropic": {"top_k": 5}}).merge(ModelSettings(extra={"openai": {"n": 1}}))
    assert merged.extra == {"anthropic": {"top_k": 5}, "openai": {"n": 1}}
