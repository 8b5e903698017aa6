"""Hostile model text through whole runs, on both backends: what runs, what the user sees, what the run keeps."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from agentactors._json import MAX_DEPTH
from agentactors.agent.core import Agent
from agentactors.events import InMemoryRecorder
from agentactors.loop.nudges import Nudges
from agentactors.messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent, TextDelta, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool
from agentactors.tools.results import ToolStatus

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Deltas:
    """A provider that streams each answer as the exact deltas given (``None`` and ``""`` included)."""

    name = "deltas"
    default_model = "d-1"

    def __init__(self, answers: list[Sequence[str | None]], *, carries_tools: bool = True) -> None:
        self.answers = answers
        self.carries_tools = carries_tools
        self.requests: list[LLMRequest] = []

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        return True

    def supports_response_format(self, model: str | None) -> bool:
        return True

    def _next(self, request: LLMRequest) -> Sequence[str | None]:
        self.requests.append(request)
        return self.answers.pop(0)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse("".join(d or "" for d in self._next(request)))

    def stream(self, request: LLMRequest) -> Any:
        deltas = self._next(request)

        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            async def events() -> AsyncIterator[StreamEvent]:
                for d in deltas:
                    yield TextDelta(d)  # type: ignore[arg-type]  # a None delta is what is tested
                yield StreamEnd(LLMResponse("".join(d or "" for d in deltas)))

            yield events()

        return cm()

    async def aclose(self) -> None:
        return None


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


async def test_deltas_without_text_are_skipped_and_the_answer_is_whole() -> None:
    # A None delta (a provider's bug, carrying nothing) used to fail the whole generation.
    tokens: list[str] = []
    result = await Agent(Deltas([["The ", None, "", "answer."]])).run("q", on_token=tokens.append)
    assert result.ok and result.content == "The answer."
    assert "".join(tokens) == "The answer."


@pytest.mark.parametrize("stream", [False, True])
async def test_a_call_inside_a_think_block_never_runs(stream: bool) -> None:
    ran: list[str] = []

    @tool
    async def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    reply = '<think>I could {"tool":"delete","arguments":{"path":"/"}} but I will not.</think>Nothing to delete.'
    provider = Deltas([_chunks(reply, 5)], carries_tools=False)
    tokens: list[str] = []
    agent = Agent(provider, tools=[delete])
    result = await (agent.run("tidy up", on_token=tokens.append) if stream else agent.run("tidy up"))
    assert ran == []
    assert result.tool_calls == () and result.steps == 1
    assert result.content == "Nothing to delete."
    if stream:
        assert "".join(tokens) == "Nothing to delete."


async def test_a_call_after_thinking_with_a_stray_brace_still_runs() -> None:
    seen: list[int] = []

    @tool
    async def add(a: int, b: int) -> int:
        """Add."""
        seen.append(a + b)
        return a + b

    reply = '<think>the set {1, 2 "is</think>Adding.\n{"tool":"add","arguments":{"a":1,"b":2}}'
    provider = Deltas([_chunks(reply, 4), ["3."]], carries_tools=False)
    tokens: list[str] = []
    result = await Agent(provider, tools=[add]).run("1+2", on_token=tokens.append)
    assert seen == [3] and result.content == "3."
    assert "".join(tokens) == "Adding.3."


async def test_arguments_past_the_json_policy_are_refused_as_on_the_native_path() -> None:
    ran: list[Any] = []

    @tool
    async def put(x: Any) -> str:
        """Store."""
        ran.append(x)
        return "ok"

    deep = "[" * (MAX_DEPTH + 10) + "]" * (MAX_DEPTH + 10)
    reply = f'Storing.\n{{"tool":"put","arguments":{{"x":{deep}}}}}'
    recorder = InMemoryRecorder()
    provider = Deltas([[reply], ["Could not store it."]], carries_tools=False)
    result = await Agent(provider, tools=[put], recorders=[recorder]).run("store")
    assert ran == []
    assert [e.status for e in recorder.of_type("tools.finished")] == [ToolStatus.invalid]
    results = provider.requests[1].messages[-1].content
    assert "Invalid arguments for tool 'put'" in results and f"deeper than {MAX_DEPTH} levels" in results
    assert result.content == "Could not store it."


async def test_a_long_call_streams_in_linear_work_and_never_shows() -> None:
    written: list[int] = []

    @tool
    async def write(content: str) -> str:
        """Write."""
        written.append(len(content))
        return "written"

    body = '{"a": "}"} ' * 20_000  # braces and quotes inside the argument's string
    reply = "Writing.\n" + json.dumps({"tool": "write", "arguments": {"content": body}})
    provider = Deltas([_chunks(reply, 3), ["Done."]], carries_tools=False)
    tokens: list[str] = []
    result = await Agent(provider, tools=[write]).run("write", on_token=tokens.append)
    assert written == [len(body)]
    assert "".join(tokens) == "Writing.Done."
    assert result.content == "Done."


class _BrokenNudge:
    """A user's nudge policy with a bug: it notes a result the step does not have."""

    def __init__(self, is_read_only: object) -> None:
        pass

    def after_tools(self, view: Any) -> list[tuple[int, str]]:
        return [(99, "a note for no result")]

    def should_continue(self, answer: str, previous: Any) -> str | None:
        return None


async def test_a_nudge_policy_with_a_bug_never_ends_the_run() -> None:
    @tool
    async def look() -> str:
        """Look."""
        return "seen"

    provider = ScriptedProvider([LLMResponse("", (ToolCall("c1", "look"),)), "Seen it."])
    result = await Agent(provider, tools=[look], nudges=Nudges((_BrokenNudge,))).run("look")
    assert result.ok and result.content == "Seen it."
    assert [m.content for m in result.messages if m.role == "tool"] == ["seen"]
