"""openai_app streamed over a run of several model answers (uvicorn on asyncio, hypercorn on trio), read with the
official ``openai`` SDK: each answer's text comes as it streams, and an answer after the first starts with a blank
line — the words a model wrote before it called a tool are not glued to the next answer's first word."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from agentactors import Agent, ScriptedProvider, ToolCall, tool
from agentactors.messages import LLMResponse
from agentactors.serve import openai_app
from tests.support.services import load_example, serving

# On trio, the openai SDK's client leaves its HTTP library's nested async generators for the collector even
# after a stream was read to its end; trio reports them as ResourceWarnings.  They are the client's, not the app's.
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'openai:ResourceWarning"),
]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_a_later_answers_streamed_text_is_set_apart_from_the_earlier_ones() -> None:
    script: list[Any] = [
        LLMResponse(content="Let me add.", tool_calls=[ToolCall("c1", "add", {"a": 1, "b": 2})]),
        ToolCall("c2", "add", {"a": 3, "b": 3}),  # an answer with no text: nothing to set apart
        "It is 3.",
        "Again: 3.",
    ]
    agent = Agent(ScriptedProvider(script), tools=[add], name="calc")
    async with serving(openai_app({"calc": agent}), load_example("serve_all"), probe="/v1/models") as base:
        async with openai.AsyncOpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=20) as client:
            stream = await client.chat.completions.create(
                model="calc", stream=True, messages=[{"role": "user", "content": "1+2?"}]
            )
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            # a one-answer run's stream has no blank line of its own
            single = await client.chat.completions.create(
                model="calc", stream=True, messages=[{"role": "user", "content": "again"}]
            )
            alone = "".join([c.choices[0].delta.content or "" async for c in single if c.choices])
    assert text == "Let me add.\n\nIt is 3."
    assert alone == "Again: 3."
