"""``ScriptedProvider``: the deterministic provider of every unit test, example and in-process benchmark."""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeAlias

import anyio
import attrs

from ..errors import ErrorKind, ProviderError
from ..messages import (
    LLMRequest,
    LLMResponse,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolCall,
    all_tool_calls,
    response_of,
    split_text,
)
from .port import (
    MEDIA_KINDS,
    Capabilities,
    StreamContext,
    check_forced_tool_choice,
    check_response_format,
    events_for_response,
    interrupted,
)

__all__ = ["ScriptExhaustedError", "ScriptItem", "ScriptedProvider", "StreamCut"]


@attrs.frozen(slots=True)
class StreamCut:
    """A script item for a stream that delivers ``text`` and then fails with ``error``.

    ``complete()`` raises ``error`` directly; ``stream()`` yields ``text`` in
    deltas, then raises :class:`~agentactors.StreamInterruptedError` carrying
    it.  With empty ``text`` the failure comes before the first event, so it is
    ``error`` itself (retryable / failover-able as classified).
    """

    text: str
    error: BaseException


# str | ToolCall | list[ToolCall] | LLMResponse | BaseException | StreamCut | callable
ScriptItem: TypeAlias = Any


class ScriptExhaustedError(ProviderError):
    """A :class:`ScriptedProvider` was called more times than its script has items."""


def _describe(request: LLMRequest) -> str:
    last_user = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
    if len(last_user) > 60:
        last_user = last_user[:57] + "..."
    return f"{len(request.messages)} messages, last user message {last_user!r}"


# What a script item that is an answer already is: no callable, no awaitable (checked before the costlier test).
_PLAIN = (str, list, ToolCall, LLMResponse)
_SEQUENCE = (list, tuple)  # made once: ``list | tuple`` in isinstance() builds a union every call


#: A scripted response's usage (none): the very value an unset ``LLMResponse.usage`` is, so a run's loop,
#: which adds no usage that is that value, sums nothing for a scripted model.
_ZERO_USAGE = LLMResponse().usage

#: What a scripted model can do unless told otherwise: everything a model can.
_FULLY_CAPABLE = Capabilities(
    native_tools=True,
    forced_tool_choice=True,
    streaming=True,
    response_format=True,
    thinking=True,
    media=MEDIA_KINDS,
    parallel_tool_calls=True,
)


class ScriptedProvider:
    """A provider that answers from a script, deterministically, without a network.

    ``script`` is a sequence of items consumed one per call, or one callable used
    for every call.  An item is a ``str`` (a text answer), a :class:`ToolCall` or
    a list of them (a tool-call turn), an :class:`LLMResponse`, an exception
    instance (raised), a :class:`StreamCut`, or a callable ``(request) -> item``
    (sync or async; an async one may await, e.g. to model latency or to wait on
    an event).  A bare ``str`` script is one item.  With ``carries_tools=False`` (the loop's JSON-fallback
    transport) a tool-call item is answered as such a model answers: its calls as JSON blocks in the text
    (``{"tool": name, "arguments": {...}}``), not as native calls the loop would not read.

    ``stream()`` delivers text in several :class:`TextDelta` events and tool
    calls as start / delta / end, then one ``StreamEnd``.  ``latency`` seconds
    (``anyio.sleep``, so virtual under a mock clock; >= 0, else ``ValueError``) pass before each answer.

    ``requests`` lists every request received, in order — unless
    ``record=False``, for a long-lived provider (a Ray worker's, a benchmark's)
    that must not keep every request it ever saw: ``requests`` then stays
    empty, and :attr:`calls` still counts them.  A forced tool choice
    for a model in ``rejects_forced_tool_choice`` (or with
    ``carries_forced_tool_choice=False``) raises
    :class:`~agentactors.UnsupportedToolChoiceError` before the request is
    recorded or an item consumed.  Running out of script raises
    :class:`ScriptExhaustedError` (kind request) naming the request.

    A JSON-schema response format (``LLMRequest.response_format``) is carried unless
    ``carries_response_format=False`` or the model is in ``rejects_response_format``: then the
    request is refused with a request-kind ``ProviderError``, before it is recorded — the way a
    vendor provider refuses it before sending.

    :meth:`capabilities` answers for a fully capable model (native tools, forced choices, streaming,
    response formats, thinking, every media kind, the ``parallel_tool_calls`` setting), narrowed by the
    keywords above — or by ``capabilities``, a :class:`~agentactors.providers.port.Capabilities` for every
    model (the ``carries_*`` and ``rejects_*`` keywords narrow it further).
    """

    def __init__(
        self,
        script: Sequence[ScriptItem] | Callable[..., Any] | str,
        *,
        name: str = "scripted",
        model: str | None = None,
        latency: float = 0.0,
        carries_tools: bool = True,
        carries_forced_tool_choice: bool = True,
        rejects_forced_tool_choice: Iterable[str] = (),
        record: bool = True,
        carries_response_format: bool = True,
        rejects_response_format: Iterable[str] = (),
        capabilities: Capabilities | None = None,
    ) -> None:
        if isinstance(script, str | LLMResponse | ToolCall | BaseException | StreamCut):
            script = [script]
        if not isinstance(name, str):
            raise TypeError(f"ScriptedProvider name must be a non-empty str, not {type(name).__name__}")
        if not name:
            raise ValueError("ScriptedProvider name must be a non-empty str")
        if model is not None and not isinstance(model, str):
            raise TypeError(f"ScriptedProvider model must be a str or None, not {type(model).__name__}")
        self._callable: Callable[..., Any] | None = script if callable(script) else None
        if self._callable is None and not isinstance(script, Iterable):
            raise TypeError(
                f"ScriptedProvider script must be a sequence of items, one item or a callable, "
                f"not {_a(type(script).__name__)}"
            )
        self._items: list[ScriptItem] = [] if self._callable is not None else list(script)  # type: ignore[arg-type]
        for number, item in enumerate(self._items, 1):
            _check_item(name, number, item)
        self._next = 0
        self._name = name
        self._model = model or "scripted-model"
        self.latency = float(latency)
        if not self.latency >= 0:  # NaN too: each call then failed in anyio.sleep, naming neither provider nor latency
            raise ValueError(f"ScriptedProvider latency must be >= 0 seconds, not {latency!r}")
        self._carries_tools = carries_tools
        self._carries_forced = carries_forced_tool_choice
        self.rejects_forced_tool_choice = frozenset(rejects_forced_tool_choice)
        self._carries_format = carries_response_format
        self.rejects_response_format = frozenset(rejects_response_format)
        if capabilities is not None and not isinstance(capabilities, Capabilities):
            raise TypeError(f"capabilities must be a Capabilities, not {type(capabilities).__name__}")
        self._caps = capabilities or _FULLY_CAPABLE
        self.requests: list[LLMRequest] = []
        self.record = bool(record)
        self._calls = 0
        self._ids = itertools.count(1)
        self.closed = False

    def __repr__(self) -> str:
        left = "callable" if self._callable else f"{len(self._items) - self._next} items left"
        return f"ScriptedProvider(name={self._name!r}, model={self._model!r}, {left})"

    # -- LLMProvider ------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The name given (default ``"scripted"``)."""
        return self._name

    @property
    def default_model(self) -> str | None:
        """The model given (default ``"scripted-model"``)."""
        return self._model

    def capabilities(self, model: str | None) -> Capabilities:
        """What ``model`` can do here: the ``capabilities`` given (default: everything), narrowed by the keywords.

        Composed from the members of the first protocol below, so a subclass that overrides one of them
        answers the same through both.
        """
        caps = self._caps
        native = self.carries_tools is True
        forced = self.carries_forced_tool_choice is True and self.supports_forced_tool_choice(model) is True
        streaming = self.supports_streaming is not False
        response_format = self.supports_response_format(model) is True
        if (native, forced, streaming, response_format) == (
            caps.native_tools,
            caps.forced_tool_choice,
            caps.streaming,
            caps.response_format,
        ):
            return caps  # nothing narrowed for this model: the one value, not a new one per question
        return Capabilities(
            native_tools=native,
            forced_tool_choice=forced,
            streaming=streaming,
            response_format=response_format,
            thinking=caps.thinking,
            media=caps.media,
            parallel_tool_calls=caps.parallel_tool_calls,
        )

    @property
    def carries_tools(self) -> bool:
        """As given (and as ``capabilities`` says): ``False`` makes the loop use the JSON-fallback transport."""
        return self._carries_tools and self._caps.native_tools

    @property
    def carries_forced_tool_choice(self) -> bool:
        """As given (and as ``capabilities`` says)."""
        return self._carries_forced and self._caps.forced_tool_choice

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """``False`` without :attr:`carries_forced_tool_choice` or for a model in ``rejects_forced_tool_choice``."""
        return self.carries_forced_tool_choice and model not in self.rejects_forced_tool_choice

    def supports_response_format(self, model: str | None) -> bool:
        """``False`` with ``carries_response_format=False`` (or ``capabilities`` saying no), or for a model in
        ``rejects_response_format``."""
        return self._carries_format and self._caps.response_format and model not in self.rejects_response_format

    @property
    def supports_streaming(self) -> bool:
        """``True`` (unless ``capabilities`` says no): :meth:`stream` delivers text and tool calls in several events."""
        return self._caps.streaming

    @property
    def calls(self) -> int:
        """How many requests were received (counted with ``record=False`` too)."""
        return self._calls

    @property
    def remaining(self) -> int:
        """Items not yet consumed (0 for a callable script)."""
        return 0 if self._callable else len(self._items) - self._next

    def extend(self, items: Iterable[ScriptItem]) -> None:
        """Append items to the script.

        :raises TypeError: an item no call could answer with (as the constructor refuses it); nothing is appended.
        """
        more = list(items)
        for number, item in enumerate(more, len(self._items) + 1):
            _check_item(self._name, number, item)
        self._items.extend(more)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The next item as a response (an exception item is raised), after ``latency`` seconds.

        Cancellation: the item is taken from the script (the call counted and recorded) before anything is
        awaited, so a cancelled call has used it up.  It waits only in the ``latency`` sleep and on what a
        callable script returns to await; with neither it is not a cancellation point.
        """
        model = self._admit(request)
        item = self._take(request)
        if callable(item) and not isinstance(item, type):
            # The first round of _resolve, here: a function script answering with data (the common case)
            # then needs no coroutine of _resolve's.
            item = item(request)
            if not isinstance(item, _PLAIN):
                if inspect.isawaitable(item):
                    item = await item
                item = await self._resolve(item, request, rounds=7)
        elif isinstance(item, BaseException):
            raise item
        if self.latency:
            await anyio.sleep(self.latency)
        if isinstance(item, StreamCut):
            raise item.error
        return self._to_response(item, model)

    def stream(self, request: LLMRequest) -> StreamContext:
        """The next item as a stream: text in several deltas, calls as start / delta / end, one ``StreamEnd``."""
        # Validate and consume now, so an UnsupportedToolChoiceError is raised
        # by stream() itself, before anything is "sent".
        model = self._admit(request)
        raw_item = self._take(request)
        return self._stream(request, model, raw_item)

    @asynccontextmanager
    async def _stream(
        self, request: LLMRequest, model: str, raw_item: Any
    ) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        item = await self._resolve(raw_item, request)
        if self.latency:
            await anyio.sleep(self.latency)
        if isinstance(item, StreamCut):
            if not item.text:
                raise item.error
            events: list[StreamEvent] = [TextDelta(t) for t in split_text(item.text)]
            failure: BaseException | None = interrupted(
                item.error, provider=self._name, model=model, partial_text=item.text
            )
        else:
            events = events_for_response(self._to_response(item, model), chunks=split_text)
            failure = None

        async def _gen() -> AsyncGenerator[StreamEvent, None]:
            for event in events:
                yield event
                await anyio.lowlevel.checkpoint()
            if failure is not None:
                raise failure

        gen = _gen()
        try:
            yield gen
        finally:
            # Closed here, not by the garbage collector (which trio reports as a ResourceWarning).
            with anyio.CancelScope(shield=True):
                await gen.aclose()

    async def aclose(self) -> None:
        """Mark the provider closed (:attr:`closed`); it keeps answering, so tests can see who closed it.

        Cancellation: not a cancellation point (it awaits nothing): a cancelled caller still marks it closed.
        """
        self.closed = True

    async def __aenter__(self) -> ScriptedProvider:
        """``async with provider:`` — the provider itself.

        Cancellation: not a cancellation point (it awaits nothing).
        """
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Leaving the block marks it closed (:meth:`aclose`).

        Cancellation: as :meth:`aclose`; a block left by a cancellation still marks it closed.
        """
        await self.aclose()

    # -- internals --------------------------------------------------------------------------------

    def _admit(self, request: LLMRequest) -> str:
        # resolve_model(self, request), with this provider's own default (never empty) read directly.
        model = str(request.model or self._model)
        if request.tool_choice.mode != "auto":  # the checks read capabilities only for what they check
            check_forced_tool_choice(self, request, model)
        if request.response_format is not None:
            check_response_format(self, request, model)
        return model

    def _take(self, request: LLMRequest) -> Any:
        self._calls += 1
        if self.record:
            self.requests.append(request)
        if self._callable is not None:
            return self._callable
        if self._next >= len(self._items):
            raise ScriptExhaustedError(
                f"script exhausted: call #{self._calls} has no item ({_describe(request)}); "
                f"the script had {len(self._items)} items",
                provider=self._name,
                model=request.model or self._model,
                kind=ErrorKind.request,
            )
        item = self._items[self._next]
        self._next += 1
        return item

    async def _resolve(self, item: Any, request: LLMRequest, rounds: int = 8) -> Any:
        # Callables may return another callable's result; resolve until data.
        for _ in range(rounds):
            if isinstance(item, BaseException):
                raise item
            if callable(item) and not isinstance(item, type):
                item = item(request)
                if not isinstance(item, _PLAIN) and inspect.isawaitable(item):
                    item = await item
                continue
            return item
        raise TypeError("a script callable kept returning callables")

    def _to_response(self, item: Any, model: str) -> LLMResponse:
        # Set field by field (messages.response_of): the constructor's converters and keywords cost a good part
        # of building a response, twice per run of a tool loop.
        if isinstance(item, str):
            return response_of(item, (), StopReason.end_turn, _ZERO_USAGE, model, self._name)
        if isinstance(item, LLMResponse):
            return attrs.evolve(item, model=item.model or model, provider=item.provider or self._name)
        if isinstance(item, ToolCall):
            item = (item,)
        if isinstance(item, _SEQUENCE) and item and all_tool_calls(item):
            if not self._carries_tools:  # (rare: the JSON transport) the calls as that model writes them
                return response_of(_as_json_blocks(item), (), StopReason.end_turn, _ZERO_USAGE, model, self._name)
            return response_of("", tuple(item), StopReason.tool_use, _ZERO_USAGE, model, self._name)
        raise TypeError(
            f"ScriptedProvider {self._name!r}: cannot answer with a {type(item).__name__} "
            "(use str, ToolCall, a list of ToolCall, LLMResponse, an exception, StreamCut or a callable)"
        )


def _check_item(name: str, number: int, item: object) -> None:
    """Refuse, where the script is written, an item no call could answer with (as :meth:`_to_response` would at
    the call that reached it: a test then failed far from the line at fault, or not at all, its item never used).

    :raises TypeError: ``item`` is none of the script's kinds (an exception *class* included: give an instance).
    """
    if isinstance(item, _PLAIN) and not isinstance(item, list):
        return
    if isinstance(item, BaseException | StreamCut):
        return
    if isinstance(item, _SEQUENCE) and item and all_tool_calls(item):
        return
    if callable(item) and not isinstance(item, type):
        return
    what = "an exception class (give an instance)" if isinstance(item, type) else _a(type(item).__name__)
    raise TypeError(
        f"ScriptedProvider {name!r}: script item #{number} is {what}: each is a str, a ToolCall, a list of "
        "ToolCalls, an LLMResponse, an exception, a StreamCut or a callable"
    )


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _as_json_blocks(calls: Sequence[ToolCall]) -> str:
    """Tool calls as a model on the JSON-fallback transport writes them (``agentactors.loop.json_transport``)."""
    return "\n".join(json.dumps({"tool": c.name, "arguments": c.arguments}, ensure_ascii=False) for c in calls)
