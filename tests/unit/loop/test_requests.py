"""The requests a run sends are exactly what LLMRequest would build, though built from a per-agent skeleton."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from agentactors.agent.core import Agent
from agentactors.loop.config import LoopConfig, request_like
from agentactors.loop.controller import LoopController
from agentactors.messages import LLMRequest, Message, ToolCall, ToolChoice
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool

pytestmark = pytest.mark.anyio


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_request_like_the_skeleton_equals_the_one_llmrequest_builds() -> None:
    skeleton = LLMRequest(
        (Message.user("placeholder"),),
        model="m",
        tools=(add.spec,),
        tool_choice=ToolChoice.tool("add"),
        max_tokens=7,
        temperature=0.5,
        stop=("END",),
        vendor_options={"openai": {"seed": 1}},
    )
    messages = (Message.system("s"), Message.user("q"))
    made = request_like(skeleton, messages)
    others = {f.name: getattr(skeleton, f.name) for f in attrs.fields(LLMRequest) if f.name != "messages"}
    assert made == LLMRequest(messages, **others)  # eq compares every field, new ones included
    assert made.messages is messages
    assert made.vendor_options == skeleton.vendor_options and made.vendor_options is not skeleton.vendor_options
    with pytest.raises(ValueError, match="at least one message"):
        request_like(skeleton, ())


async def test_every_request_of_a_run_is_what_llmrequest_builds() -> None:
    def model(request: LLMRequest) -> Any:
        return "done" if request.messages[-1].role == "tool" else [ToolCall("c1", "add", {"a": 1, "b": 2})]

    provider = ScriptedProvider(model)
    agent = Agent(provider, tools=[add], system="S", model="m1", tool_choice=ToolChoice.required())
    assert (await agent.run("q")).content == "done"
    first, second = provider.requests
    assert first == LLMRequest(first.messages, model="m1", tools=(add.spec,), tool_choice=ToolChoice.required())
    assert second == LLMRequest(second.messages, model="m1", tools=(add.spec,), tool_choice=ToolChoice.auto())
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool"]
    config = agent._config
    assert config.skeleton(True, ToolChoice.auto()) is config.skeleton(True, ToolChoice.auto())


class _Never:
    async def ask(self, message: Any) -> Any:
        raise AssertionError("no request may be sent")


class _Echo:
    async def ask(self, message: Any) -> Any:
        from agentactors.messages import LLMResponse

        return LLMResponse(content=f"{len(message.request.messages)} messages")


async def test_the_input_conversation_is_checked_as_llmrequest_would() -> None:
    with pytest.raises(TypeError, match="must hold Message objects, not str"):
        LoopController(LoopConfig(), _Never(), None, [Message.user("ok"), "not a message"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="at least one message"):
        await LoopController(LoopConfig(), _Never(), None, []).run()
    # A system prompt alone is a request: the empty conversation still reaches the model.
    result = await LoopController(LoopConfig(system="S"), _Echo(), None, []).run()
    assert result.content == "1 messages"


@pytest.mark.parametrize("field", ["max_steps", "max_empty_steps", "context_budget_chars"])
@pytest.mark.parametrize("value", [float("nan"), True, 1.5, 0, -3, "8"])
def test_a_loop_config_takes_counts_as_whole_numbers_of_at_least_one(field: str, value: object) -> None:
    # NaN compared false with the bound (max_steps=nan: a loop that never ends), True was 1, 1.5 passed.
    with pytest.raises((TypeError, ValueError), match=field):
        LoopConfig(**{field: value})  # type: ignore[arg-type]
    LoopConfig(**{field: 3})  # type: ignore[arg-type]
