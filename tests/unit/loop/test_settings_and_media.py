"""Settings through a run (run over agent, built once per run) and media through the loop (tools, JSON transport)."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import (
    Agent,
    Audio,
    Document,
    Image,
    LLMRequest,
    Message,
    ModelSettings,
    ScriptedProvider,
    Text,
    ToolCall,
    ToolChoice,
    ToolStatus,
    tool,
)
from agentactors.gateway.provider import estimate_tokens
from agentactors.loop.controller import LoopConfig
from agentactors.loop.json_transport import to_wire_messages
from agentactors.parts import IMAGE_TOKENS, PAGE_TOKENS, Part
from agentactors.tools.executor import ExecutionContext, ToolExecutorActor
from agentactors.tools.results import ResultCeiling, ToolResult, split_parts

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 30
PDF = b"%PDF-1.4\n<< /Type /Pages /Count 3 >>\n"


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _two_steps(request: LLMRequest) -> Any:
    return "done" if request.messages[-1].role == "tool" else [ToolCall("c1", "add", {"a": 1, "b": 2})]


async def test_a_runs_settings_win_over_the_agents_field_by_field_in_every_step() -> None:
    provider = ScriptedProvider(_two_steps)
    agent = Agent(provider, tools=[add], settings=ModelSettings(temperature=0.2, max_tokens=100, seed=1,
                                                                extra={"openai": {"n": 1}}))
    result = await agent.run("q", settings=ModelSettings(temperature=0.9, reasoning_effort="low",
                                                         extra={"openai": {"user": "u"}}))
    assert result.content == "done" and len(provider.requests) == 2
    for request in provider.requests:
        assert (request.temperature, request.max_tokens, request.seed, request.reasoning_effort) == (0.9, 100, 1, "low")
        assert request.vendor_options == {"openai": {"n": 1, "user": "u"}}
    # the next run has the agent's settings only: a run's own never stick
    await agent.run("q")
    assert provider.requests[-1].temperature == 0.2 and provider.requests[-1].reasoning_effort is None


async def test_settings_are_built_into_a_skeleton_once_per_run_not_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[ModelSettings | None] = []
    original = LoopConfig._build

    def counting(self: LoopConfig, native: bool, choice: ToolChoice, settings: ModelSettings | None) -> LLMRequest:
        builds.append(settings)
        return original(self, native, choice, settings)

    monkeypatch.setattr(LoopConfig, "_build", counting)
    agent = Agent(ScriptedProvider(_two_steps), tools=[add], settings=ModelSettings(seed=3))
    await agent.run("q")
    await agent.run("q")
    assert builds == [ModelSettings(seed=3)]  # the agent's: built once, kept for every run
    builds.clear()
    await agent.run("q", settings=ModelSettings(top_p=0.5))
    assert builds == [ModelSettings(seed=3, top_p=0.5)]  # the run's: merged and built once for its two steps
    builds.clear()
    forced = Agent(ScriptedProvider(_two_steps), tools=[add], tool_choice=ToolChoice.required())
    await forced.run("q", settings=ModelSettings(top_p=0.5))
    assert len(builds) == 2  # a forced first step, then auto: one skeleton each


async def test_stream_takes_settings_too_and_bad_settings_fail_at_the_call() -> None:
    provider = ScriptedProvider(["hello"])
    agent = Agent(provider)
    async with agent.stream("q", settings=ModelSettings(stop="END")) as run:
        async for _ in run:
            pass
    assert run.result.content == "hello" and provider.requests[0].stop == ("END",)
    with pytest.raises(TypeError, match="settings must be a ModelSettings"):
        Agent(provider, settings={"temperature": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="settings must be a ModelSettings"):
        await agent.run("q", settings={"temperature": 1})  # type: ignore[arg-type]


async def test_a_prompt_of_parts_reaches_the_provider_whole() -> None:
    provider = ScriptedProvider(["a cat"])
    image = Image(data=PNG)
    result = await Agent(provider, system="S").run(Message.user([Text("What is this?"), image]))
    assert result.content == "a cat"
    request = provider.requests[0]
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.messages[1].parts == (Text("What is this?"), image)


async def test_a_list_of_parts_is_one_user_message() -> None:
    provider = ScriptedProvider(["a cat", "a dog"])
    image = Image(data=PNG)
    agent = Agent(provider)
    parts: list[Part] = [Text("What is this?"), image]
    assert (await agent.run(parts)).content == "a cat"
    assert provider.requests[0].messages == (Message.user([Text("What is this?"), image]),)
    with pytest.raises(TypeError, match="holds Message objects"):
        await agent.run([Message.user("q"), image])  # type: ignore[arg-type]


async def test_a_tool_that_returns_media_feeds_them_back() -> None:
    image = Image(data=PNG)

    @tool
    async def plot() -> list[Any]:
        """Plot the data."""
        return [Text("the chart"), image]

    provider = ScriptedProvider([[ToolCall("c1", "plot", {})], "it rises"])
    result = await Agent(provider, tools=[plot]).run("plot it")
    assert result.content == "it rises"
    sent = provider.requests[1].messages[-1]
    assert sent.role == "tool" and sent.content == "the chart" and sent.media == (image,)


async def test_the_executor_splits_parts_and_measures_the_text_only() -> None:
    image = Image(data=PNG)

    @tool(result_ceiling=ResultCeiling(5))
    async def tiny() -> Image:
        """An image and no text."""
        return image

    @tool(result_ceiling=ResultCeiling(5))
    async def wordy() -> list[Any]:
        """Too much text beside an image."""
        return [Text("far too long a caption"), image]

    @tool
    async def mixed() -> list[Any]:
        """Parts mixed with other values are not parts."""
        return [image, b"raw"]

    executor = ToolExecutorActor([tiny, wordy, mixed])
    ok, refused, error = await executor.execute(
        [ToolCall("1", "tiny", {}), ToolCall("2", "wordy", {}), ToolCall("3", "mixed", {})], ExecutionContext()
    )
    assert ok.status is ToolStatus.ok and ok.content == "" and ok.parts == (image,)
    assert ok.to_message().media == (image,)
    assert refused.status is ToolStatus.invalid and refused.refused and refused.parts == ()  # nothing leaves
    assert error.status is ToolStatus.error and error.parts == ()
    assert split_parts("text") is None and split_parts([]) is None and split_parts([1, image]) is None
    assert split_parts((Text("a"), Text("b"), image)) == ("a\nb", (image,))
    plain = ToolResult.of("c", "t", ToolStatus.ok, "x")
    assert plain.parts == () and plain.to_message() == Message.tool("c", "x", "t")


def test_the_json_transport_carries_tool_media_with_the_results() -> None:
    image = Image(data=PNG)
    conversation = [
        Message.user("q"),
        Message.assistant("", [ToolCall("a", "plot", {}), ToolCall("b", "sum", {})]),
        Message.tool("a", [Text("chart"), image], "plot"),
        Message.tool("b", "3", "sum"),
    ]
    wire = to_wire_messages(conversation)
    assert [m.role for m in wire] == ["user", "assistant", "user"]
    assert wire[2].media == (image,) and "chart" in wire[2].content and "3" in wire[2].content


def test_token_estimates_count_media() -> None:
    text_only = LLMRequest([Message.user("x" * 40)])
    with_media = LLMRequest([Message.user([Text("x" * 40), Image(data=PNG), Document(data=PDF)])])
    assert estimate_tokens(with_media) == estimate_tokens(text_only) + IMAGE_TOKENS + 3 * PAGE_TOKENS
    audio = LLMRequest([Message.user([Audio(b"ID3" + b"\0" * 32_000)])])
    assert estimate_tokens(audio) == 1 + (2 * 32 + 1)  # 32 KB at 128 kbit/s: 2 s, 32 tokens a second
