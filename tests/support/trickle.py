"""A provider that streams each answer a few characters per event: what typed output's partial values are tested on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agentactors import (
    LLMRequest,
    LLMResponse,
    StopReason,
    StreamEnd,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from agentactors.messages import StreamEvent


class Trickle:
    """Answers ``answers`` in order (a ``ToolCall`` as a tool-use answer, a str as text), ``step`` characters an
    event when streamed (text, then each call's arguments); ``forced``: whether it says it carries a forced tool
    choice.  ``requests`` holds what it was asked."""

    name = "trickle"
    default_model = "t-1"
    carries_tools = True

    def __init__(self, answers: list[Any], *, forced: bool = True, step: int = 4) -> None:
        self.answers = answers
        self.carries_forced_tool_choice = forced
        self.step = step
        self.requests: list[LLMRequest] = []

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        return self.carries_forced_tool_choice

    def supports_response_format(self, model: str | None) -> bool:
        return True

    def _next(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, ToolCall):
            return LLMResponse("", (answer,), StopReason.tool_use)
        return LLMResponse(answer)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return self._next(request)

    def stream(self, request: LLMRequest) -> Any:
        response = self._next(request)
        step = self.step

        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            async def events() -> AsyncIterator[StreamEvent]:
                text = response.content
                for i in range(0, len(text), step):
                    yield TextDelta(text[i : i + step])
                for index, c in enumerate(response.tool_calls):
                    yield ToolCallStart(index, c.id, c.name)
                    raw = c.arguments_json
                    for i in range(0, len(raw), step):
                        yield ToolCallDelta(index, raw[i : i + step])
                    yield ToolCallEnd(index, c)
                yield StreamEnd(response)

            yield events()

        return cm()

    async def aclose(self) -> None:
        pass
