"""A provider that streams each answer a few characters per event: what typed output's partial values are tested on;
and :func:`streamed`, a response as a stream cut in given pieces."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
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
        step = self.step
        return streamed(self._next(request), lambda text: [text[i : i + step] for i in range(0, len(text), step)])

    async def aclose(self) -> None:
        pass


def streamed(
    response: LLMResponse, pieces: Callable[[str], Iterable[str]], *, raw: bool = False
) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
    """``response`` as a provider's stream: its text, then each call's arguments, in the ``pieces`` cut from them
    (``raw``: a call's arguments as the model sent them, ``raw_arguments``, not re-encoded), then its ``StreamEnd``."""

    @asynccontextmanager
    async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
        async def events() -> AsyncIterator[StreamEvent]:
            for piece in pieces(response.content):
                yield TextDelta(piece)
            for index, c in enumerate(response.tool_calls):
                yield ToolCallStart(index, c.id, c.name)
                for piece in pieces((c.raw_arguments or "") if raw else c.arguments_json):
                    yield ToolCallDelta(index, piece)
                yield ToolCallEnd(index, c)
            yield StreamEnd(response)

        yield events()

    return cm()
