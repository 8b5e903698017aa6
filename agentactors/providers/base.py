"""The provider port: the ``LLMProvider`` protocol and the forced-tool-choice capability.

Vendor adapters, resilience decorators and test doubles all implement
:class:`LLMProvider`; nothing above it knows a vendor's wire.

Contract every implementation keeps:

* ``complete(request)`` returns an :class:`~agentactors.LLMResponse` or raises a
  :class:`~agentactors.ProviderError` (or anyio's cancellation exception).
* ``stream(request)`` returns an async context manager whose value is an async
  iterator of stream events; a successful stream ends with exactly one
  :class:`~agentactors.StreamEnd`.  A failure after the first event is a
  :class:`~agentactors.StreamInterruptedError`.  Leaving the context manager early
  closes the underlying HTTP request.
* The model called is ``request.model`` or ``default_model``; with neither, a
  ``ProviderError(kind=request)`` is raised before anything is sent.
* A request that forces a tool choice (``required`` / ``tool``) for a model that
  rejects it raises :class:`~agentactors.UnsupportedToolChoiceError` before
  anything is sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ..errors import ErrorKind, ProviderError, StreamInterruptedError, UnsupportedToolChoiceError
from ..messages import (
    LLMRequest,
    LLMResponse,
    ReasoningDelta,
    StopReason,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)

__all__ = [
    "LLMProvider",
    "StreamAccumulator",
    "StreamContext",
    "check_forced_tool_choice",
    "events_for_response",
    "forced_tool_choice_for",
    "resolve_model",
    "stream_from_complete",
]

StreamContext: TypeAlias = AbstractAsyncContextManager[AsyncIterator[StreamEvent]]


@runtime_checkable
class LLMProvider(Protocol):
    """A model provider.  See the module docstring for the contract."""

    @property
    def name(self) -> str: ...

    @property
    def default_model(self) -> str | None: ...

    @property
    def carries_tools(self) -> bool:
        """Native tool calling.  ``False``: the loop uses the JSON-fallback transport."""
        ...

    @property
    def carries_forced_tool_choice(self) -> bool:
        """Whether this provider can carry ``required`` / ``tool`` choices at all."""
        ...

    async def complete(self, request: LLMRequest) -> LLMResponse: ...

    def stream(self, request: LLMRequest) -> StreamContext: ...

    async def aclose(self) -> None: ...


def forced_tool_choice_for(provider: object, model: str | None) -> bool:
    """Whether ``provider`` can send a forced tool choice to ``model``.

    The one reader of the capability: ``carries_forced_tool_choice`` must be
    exactly ``True``, and ``supports_forced_tool_choice(model)``, when the
    provider has it, must return exactly ``True``.  Anything but an explicit yes
    (a missing attribute, ``None``, a truthy non-bool, an exception) is no.
    """
    if getattr(provider, "carries_forced_tool_choice", None) is not True:
        return False
    per_model = getattr(provider, "supports_forced_tool_choice", None)
    if per_model is None:
        return True
    try:
        return per_model(model) is True
    except Exception:
        return False


def resolve_model(provider: LLMProvider | Any, request: LLMRequest) -> str:
    """The model a call goes to: ``request.model`` or the provider's ``default_model``."""
    model = request.model or getattr(provider, "default_model", None)
    if not model:
        raise ProviderError(
            "no model: set LLMRequest.model or give the provider a default model",
            provider=getattr(provider, "name", type(provider).__name__),
            kind=ErrorKind.request,
        )
    return str(model)


def check_forced_tool_choice(provider: object, request: LLMRequest, model: str | None) -> None:
    """Raise :class:`UnsupportedToolChoiceError` when ``request`` forces a choice ``model`` rejects."""
    if request.tool_choice.forced and not forced_tool_choice_for(provider, model):
        raise UnsupportedToolChoiceError(provider=getattr(provider, "name", type(provider).__name__), model=model)


# --- stream helpers -----------------------------------------------------------------------------


def events_for_response(response: LLMResponse, *, chunks: Callable[[str], Any] | None = None) -> list[StreamEvent]:
    """The stream events that deliver ``response``: reasoning, text, tool calls, then ``StreamEnd``.

    ``chunks(text)`` may split the text into several deltas (test doubles do).
    """
    out: list[StreamEvent] = []
    if response.reasoning:
        out.append(ReasoningDelta(response.reasoning))
    if response.content:
        pieces = chunks(response.content) if chunks is not None else (response.content,)
        out.extend(TextDelta(p) for p in pieces)
    for i, call in enumerate(response.tool_calls):
        out.append(ToolCallStart(i, call.id, call.name))
        raw = call.raw_arguments if call.raw_arguments is not None else call.arguments_json
        pieces = chunks(raw) if (chunks is not None and raw) else ((raw,) if raw else ())
        out.extend(ToolCallDelta(i, p) for p in pieces)
        out.append(ToolCallEnd(i, call))
    out.append(StreamEnd(response))
    return out


def stream_from_complete(provider: LLMProvider | Any, request: LLMRequest) -> StreamContext:
    """Adapt a provider without streaming: its ``complete()`` becomes a one-response stream."""

    @asynccontextmanager
    async def _cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
        response = await provider.complete(request)

        async def _gen() -> AsyncIterator[StreamEvent]:
            for event in events_for_response(response):
                yield event

        yield _gen()

    return _cm()


class StreamAccumulator:
    """Builds the complete response from stream events (for consumers that need it before StreamEnd).

    ``text`` is the answer text so far, which is what a
    :class:`StreamInterruptedError` carries as ``partial_text``.
    """

    __slots__ = ("_args", "_calls", "_names", "events_seen", "reasoning_parts", "response", "text_parts")

    def __init__(self) -> None:
        self.text_parts: list[str] = []
        self.reasoning_parts: list[str] = []
        self._calls: dict[int, ToolCall] = {}
        self._names: dict[int, tuple[str, str]] = {}
        self._args: dict[int, list[str]] = {}
        self.events_seen = 0
        self.response: LLMResponse | None = None

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def add(self, event: StreamEvent) -> None:
        self.events_seen += 1
        if isinstance(event, TextDelta):
            self.text_parts.append(event.text)
        elif isinstance(event, ReasoningDelta):
            self.reasoning_parts.append(event.text)
        elif isinstance(event, ToolCallStart):
            self._names[event.index] = (event.id, event.name)
            self._args[event.index] = []
        elif isinstance(event, ToolCallDelta):
            self._args.setdefault(event.index, []).append(event.arguments_fragment)
        elif isinstance(event, ToolCallEnd):
            self._calls[event.index] = event.call
        elif isinstance(event, StreamEnd):
            self.response = event.response

    def result(self) -> LLMResponse:
        """The response: the ``StreamEnd`` one if it arrived, else what was assembled."""
        if self.response is not None:
            return self.response
        calls = tuple(self._calls[i] for i in sorted(self._calls))
        return LLMResponse(
            content=self.text,
            tool_calls=calls,
            stop_reason=StopReason.tool_use if calls else StopReason.end_turn,
            usage=Usage(),
            reasoning="".join(self.reasoning_parts),
        )


def interrupted(
    exc: BaseException, *, provider: str, model: str | None, partial_text: str
) -> StreamInterruptedError:
    """The error a stream raises when it fails after its first event."""
    if isinstance(exc, StreamInterruptedError):
        return exc
    status = getattr(exc, "status", None)
    err = StreamInterruptedError(
        f"stream interrupted after it started: {exc}",
        provider=provider,
        model=model,
        partial_text=partial_text,
        status=status if isinstance(status, int) else None,
    )
    err.__cause__ = exc
    return err
