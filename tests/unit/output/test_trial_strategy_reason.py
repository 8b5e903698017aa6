"""The reason auto gives for ``native`` when the run's settings rule a forced choice out reads as one sentence.

Found by a trial of ``docs/output.md``: it read "... takes a forced tool choice, but not with this run's settings
(...), but carries a JSON-schema response format" — two "but"s, the second seeming to contradict the first.
"""

from __future__ import annotations

import pytest

from agentactors import AnthropicProvider, ModelSettings
from agentactors.messages import ResponseFormat
from agentactors.output.choice import CallShape, auto_strategy

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

FORMAT = ResponseFormat("Answer", {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})


async def test_native_for_thinking_settings_reads_as_one_sentence() -> None:
    async with AnthropicProvider("claude-sonnet-4-5", api_key="sk-test") as provider:
        shape = CallShape(provider, None, native_tools=True, has_tools=False,
                          settings=ModelSettings(thinking_budget=2048, max_tokens=4096), fmt=FORMAT)
        strategy, reason = auto_strategy(shape)
    assert strategy == "native"
    assert reason.count(", but") == 1, reason
    assert "thinking_budget" in reason and "carries a JSON-schema response format" in reason


async def test_native_for_a_model_that_cannot_force_keeps_its_but() -> None:
    from agentactors import ScriptedProvider

    shape = CallShape(ScriptedProvider([], carries_forced_tool_choice=False), None, native_tools=True,
                      has_tools=False, fmt=FORMAT)
    assert auto_strategy(shape) == (
        "native", "scripted / its default model cannot force a tool choice, but carries a JSON-schema response format"
    )
