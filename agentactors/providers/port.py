"""The provider port: the ``LLMProvider`` protocol, and one reader per capability.

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

Capabilities are read through the functions of this module, never with ``getattr``
at the point of use: each has one reader and one default, so a provider that lacks
a capability (a duck-typed test double, a user's adapter written against an older
protocol) is treated the same way everywhere.

* ``name`` — :func:`name_of`; default: the type's name.
* ``default_model`` — :func:`default_model_of`; default: ``None``.
* ``carries_tools`` — :func:`native_tools_for`; default: yes (only an explicit ``False`` is no).
* ``carries_forced_tool_choice`` — :func:`forced_tool_choice_carried_by`; default: no (only an
  explicit ``True`` is yes).
* ``supports_forced_tool_choice(model)`` — :func:`forced_tool_choice_for`, together with the
  previous one; default: no.
* ``supports_streaming`` — :func:`streaming_for`; default: yes.
* ``supports_response_format(model)`` — :func:`response_format_for`: whether a JSON-schema
  response format (:class:`~agentactors.messages.ResponseFormat`) reaches ``model``; default: no.
  A request with a response format for a model that cannot carry it raises a request-kind
  :class:`~agentactors.ProviderError` before anything is sent (:func:`check_response_format`).
* ``response_format_refusal(fmt, model, *, tools)`` (optional) — :func:`response_format_refusal`: why a
  response format the provider carries cannot carry *this* one (a schema the vendor's constrained
  decoding cannot compile, a format beside tools on a model that refuses both); default: nothing to refuse.
* ``forced_tool_choice_refusal(model, settings)`` (optional) — :func:`forced_tool_choice_refusal`: why
  the run's settings rule out a forced tool choice the model otherwise takes (Anthropic's extended
  thinking); default: settings rule nothing out.

The last two answer with a reason (``str``) or ``None``, so the output strategy auto picks
(``docs/output.md``) can say why; a composite provider (a decorator, a fallback chain, a pool) asks its
members through the same readers.

A value of the wrong type, or an exception raised while reading it, gets the default too:
a broken capability never breaks a call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ..errors import ErrorKind, ProviderError, StreamInterruptedError, UnsupportedToolChoiceError
from ..messages import (
    LLMRequest,
    LLMResponse,
    ReasoningDelta,
    ResponseFormat,
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
from ..settings import ModelSettings

__all__ = [
    "LLMProvider",
    "StreamAccumulator",
    "StreamContext",
    "check_forced_tool_choice",
    "check_response_format",
    "default_model_of",
    "events_for_response",
    "forced_tool_choice_carried_by",
    "forced_tool_choice_for",
    "forced_tool_choice_refusal",
    "name_of",
    "native_tools_for",
    "resolve_model",
    "response_format_for",
    "response_format_refusal",
    "stream_from_complete",
    "streaming_for",
]

StreamContext: TypeAlias = AbstractAsyncContextManager[AsyncIterator[StreamEvent]]


@runtime_checkable
class LLMProvider(Protocol):
    """A model provider: identity, capabilities, and the two calls.  See the module docstring for the contract.

    Every member below is part of the port.  Code that holds a provider reads the
    capabilities through this module's reader functions (named in each member's
    docstring), which give a provider that lacks one the documented default.
    """

    @property
    def name(self) -> str:
        """The provider's name in responses (``LLMResponse.provider``), errors, events and breaker keys.

        Read by :func:`name_of` (the decorators and the fallback chain naming themselves,
        errors raised before sending); default: the type's name.
        """
        ...

    @property
    def default_model(self) -> str | None:
        """The model called when ``request.model`` is ``None``; ``None`` when the provider has no default.

        Read by :func:`default_model_of` and :func:`resolve_model` (every provider before it
        sends; a fallback chain to choose each member's model); default: ``None``.
        """
        ...

    @property
    def carries_tools(self) -> bool:
        """Whether the provider calls tools natively (tool specs sent, tool calls in the response).

        ``False``: the loop sends no tool specs and uses the JSON-fallback transport
        (tools described in the prompt, calls parsed from the text).  The transport is
        chosen before the first request, so this cannot be learned from a response.
        Read by :func:`native_tools_for` (the agent choosing its transport; decorators and
        fallback chains forwarding it); default: yes.
        """
        ...

    @property
    def carries_forced_tool_choice(self) -> bool:
        """Whether the provider can carry a forced tool choice (``required`` / a named tool) to any model.

        A per-provider switch (``False`` for a compatible server that ignores
        ``tool_choice``); :meth:`supports_forced_tool_choice` refines it per model.
        Read by :func:`forced_tool_choice_carried_by` (decorators and chains forwarding it)
        and, with the per-model answer, by :func:`forced_tool_choice_for`; default: no.
        """
        ...

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """Whether a forced tool choice may be sent to ``model`` (``None``: the default model).

        Should be total and cheap: it is asked before every forced request.  Read only
        through :func:`forced_tool_choice_for` (a provider before it sends, a fallback
        chain planning its members and its ``skip_incapable``, the decorators forwarding
        it, users choosing a tool choice); default: no.
        """
        ...

    def supports_response_format(self, model: str | None) -> bool:
        """Whether a JSON-schema response format (``LLMRequest.response_format``) may be sent to ``model``.

        ``model`` is ``None`` for the default model.  Yes only when the wire carries the schema to the
        vendor and the vendor enforces it (OpenAI's ``json_schema`` response format, Anthropic's
        ``output_config.format``, Gemini's ``responseSchema``): a format the wire would drop silently
        would drop the guarantee with it.  Should be total and cheap: it is asked when an output
        strategy is chosen for each model call.
        Read only through :func:`response_format_for` (``auto`` output choosing the native strategy,
        a fallback chain planning its members, the decorators forwarding it, a provider refusing such
        a request before it sends, with :func:`check_response_format`); default: no.
        """
        ...

    @property
    def supports_streaming(self) -> bool:
        """Whether :meth:`stream` delivers the answer as it is generated.

        ``False`` is for an adapter whose ``stream()`` exists only to satisfy the port:
        the resilience decorators then call :meth:`complete` and deliver its response as
        a one-response stream (so do they for a provider without a callable ``stream``
        or whose ``stream()`` raises ``NotImplementedError``).  A decorator or a fallback
        chain always answers ``True``: its own ``stream()`` adapts such a member and
        applies its stream policy (first-event and idle timeouts, mid-stream counting)
        to the adapted stream.  Read by :func:`streaming_for`; default: yes.
        """
        ...

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Send ``request`` and return the whole response.

        Raises :class:`~agentactors.ProviderError` (any subclass) for every failure,
        classified by whose fault it is; a request fault (no model, a forced choice the
        model rejects) is raised before anything is sent.

        Cancellation: cancelling the caller abandons the call and closes the underlying
        HTTP request, so the vendor sees the disconnect; nothing is retried or recorded
        as a failure.
        """
        ...

    def stream(self, request: LLMRequest) -> StreamContext:
        """Stream ``request``: an async context manager whose value is an async iterator of stream events.

        Request faults are raised when ``stream()`` is called or, at the latest, when
        its context is entered, before anything is sent.  A successful stream yields exactly one
        :class:`~agentactors.StreamEnd`, last, carrying the whole response; a stream
        whose terminal event never arrived raises instead of ending.  A failure before
        the first event is the classified error itself (a decorator may retry or fail
        over); after it, :class:`~agentactors.StreamInterruptedError` with the text
        delivered so far, never retried (the consumer has seen part of the answer).

        Cancellation: cancelling the consumer, or leaving the context manager early,
        closes the underlying HTTP request; the iterator yields nothing more.
        """
        ...

    async def aclose(self) -> None:
        """Release what the provider owns (an HTTP provider's pooled client); a decorator closes its inner one.

        Calling it twice is harmless.  A :class:`~agentactors.Runtime` closes the
        providers it started actors for; providers are also async context managers.

        Cancellation: the provider lets go of what it owns before it awaits anything, so
        a cancelled ``aclose()`` still leaves it closed (an HTTP provider's next call
        creates a new client); connections the cancelled close did not reach are left to
        the garbage collector.
        """
        ...


# --- the capability readers ----------------------------------------------------------------------


def _read(provider: object, attribute: str, default: object) -> object:
    """``provider.attribute``, or ``default`` when it is missing or reading it raises."""
    try:
        return getattr(provider, attribute, default)
    except Exception:
        # A capability is a property of someone else's object; a bug in it must not break a call.
        return default


def name_of(provider: object) -> str:
    """``provider.name`` when it is a non-empty string, else the type's name."""
    name = _read(provider, "name", None)
    return name if isinstance(name, str) and name else type(provider).__name__


def default_model_of(provider: object) -> str | None:
    """``provider.default_model`` when it is set (a non-empty value, as text), else ``None``."""
    model = _read(provider, "default_model", None)
    return str(model) if model else None


def native_tools_for(provider: object) -> bool:
    """Whether ``provider`` calls tools natively (see :attr:`LLMProvider.carries_tools`).

    The one reader of ``carries_tools``: only an explicit ``False`` is no.  A missing
    attribute, a non-bool value or an exception is the default, yes — what an agent has
    always assumed of a provider that does not say (a fallback chain is the AND of its
    members' answers).
    """
    return _read(provider, "carries_tools", True) is not False


def forced_tool_choice_carried_by(provider: object) -> bool:
    """Whether ``provider`` can carry a forced tool choice at all (see :attr:`LLMProvider.carries_forced_tool_choice`).

    The one reader of ``carries_forced_tool_choice``: only an explicit ``True`` is yes;
    anything else (missing, ``None``, a truthy non-bool, an exception) is no.
    """
    return _read(provider, "carries_forced_tool_choice", None) is True


def forced_tool_choice_for(provider: object, model: str | None) -> bool:
    """Whether ``provider`` can send a forced tool choice to ``model``.

    The one reader of the capability: ``carries_forced_tool_choice`` must be
    exactly ``True``, and ``supports_forced_tool_choice(model)``, when the
    provider has it, must return exactly ``True``.  Anything but an explicit yes
    (a missing attribute, ``None``, a truthy non-bool, an exception) is no.
    """
    if not forced_tool_choice_carried_by(provider):
        return False
    per_model = _read(provider, "supports_forced_tool_choice", None)
    if per_model is None:
        return True
    if not callable(per_model):
        return False
    try:
        return per_model(model) is True
    except Exception:
        return False


def streaming_for(provider: object) -> bool:
    """Whether ``provider.stream()`` is worth calling (see :attr:`LLMProvider.supports_streaming`).

    The one reader of ``supports_streaming``: no when the provider has no callable
    ``stream`` or says exactly ``False``; otherwise (missing, a non-bool value, an
    exception) the default, yes.
    """
    if not callable(_read(provider, "stream", None)):
        return False
    return _read(provider, "supports_streaming", True) is not False


def resolve_model(provider: LLMProvider | Any, request: LLMRequest) -> str:
    """The model a call goes to: ``request.model`` or the provider's ``default_model``.

    Raises a request-kind :class:`~agentactors.ProviderError` when there is neither.
    """
    model = request.model or default_model_of(provider)
    if not model:
        raise ProviderError(
            "no model: set LLMRequest.model or give the provider a default model",
            provider=name_of(provider),
            kind=ErrorKind.request,
        )
    return str(model)


def check_forced_tool_choice(provider: object, request: LLMRequest, model: str | None) -> None:
    """Raise :class:`UnsupportedToolChoiceError` when ``request`` forces a choice ``model`` rejects."""
    if request.tool_choice.forced and not forced_tool_choice_for(provider, model):
        raise UnsupportedToolChoiceError(provider=name_of(provider), model=model)


def response_format_for(provider: object, model: str | None) -> bool:
    """Whether ``provider`` can send a JSON-schema response format to ``model``.

    The one reader of ``supports_response_format(model)``: only an explicit ``True`` is yes; a
    provider without the method, a non-bool answer or an exception is no — a response format the
    wire drops silently would drop the guarantee with it.
    """
    per_model = _read(provider, "supports_response_format", None)
    if not callable(per_model):
        return False
    try:
        return per_model(model) is True
    except Exception:
        return False


def _reason(answer: object) -> str | None:
    return answer if isinstance(answer, str) and answer else None


def response_format_refusal(
    provider: object,
    model: str | None,
    fmt: ResponseFormat,
    *,
    tools: bool = False,
    members: Collection[str] | None = None,
) -> str | None:
    """Why ``provider`` cannot send the JSON-schema response format ``fmt`` to ``model``, or ``None`` when it can.

    First :func:`response_format_for` (no response format at all: a reason), then the provider's optional
    ``response_format_refusal(fmt, model, *, tools)``: a schema its vendor's constrained decoding cannot
    compile (an open mapping under OpenAI's strict mode, say), or — ``tools``: the request offers tools
    beside it — a model that refuses both together.  A provider that would refuse the request before
    sending says why here, so a caller choosing what to send (auto's output strategy) need not try.

    ``members`` names members of a fallback chain (the ones it skipped for a forced tool choice): the
    chain then answers for those members alone, each of which must carry ``fmt``.  Only composite
    providers take it; it is passed only when given.

    Default: ``None`` past :func:`response_format_for` — a provider without the method, an answer that
    is not a non-empty ``str`` or an exception refuses nothing here (the provider still checks before
    sending).
    """
    if not response_format_for(provider, model):
        return f"{name_of(provider)} / {model or 'its default model'} cannot carry a JSON-schema response format"
    method = _read(provider, "response_format_refusal", None)
    if not callable(method):
        return None
    try:
        if members is None:
            return _reason(method(fmt, model, tools=tools))
        return _reason(method(fmt, model, tools=tools, members=tuple(members)))
    except Exception:
        return None


def forced_tool_choice_refusal(provider: object, model: str | None, settings: ModelSettings | None) -> str | None:
    """Why ``settings`` rule out a forced tool choice for ``model`` on ``provider``, or ``None``.

    The one reader of the optional ``forced_tool_choice_refusal(model, settings)``: a provider whose
    request with these settings would be refused for a forced choice before sending says why — Anthropic
    with extended thinking on (a ``thinking_budget``, adaptive thinking from a ``reasoning_effort``, or
    ``thinking`` in its ``extra`` options).  ``settings`` are the caller's (an agent's merged with a
    run's); the provider adds its own defaults, as it does before sending.  Whether ``model`` takes a
    forced choice at all is :func:`forced_tool_choice_for`.

    Default: ``None`` — a provider without the method, an answer that is not a non-empty ``str`` or an
    exception: the settings rule nothing out (the provider still checks before sending).
    """
    method = _read(provider, "forced_tool_choice_refusal", None)
    if not callable(method):
        return None
    try:
        return _reason(method(model, settings))
    except Exception:
        return None


def check_response_format(provider: object, request: LLMRequest, model: str | None) -> None:
    """Raise a request-kind :class:`ProviderError` when ``request`` has a response format ``model`` cannot carry."""
    if request.response_format is not None and not response_format_for(provider, model):
        raise ProviderError(
            f"model {model!r} of provider {name_of(provider)!r} cannot carry a JSON-schema response format "
            "(NativeOutput); use ToolOutput or PromptedOutput, or a model that supports it",
            provider=name_of(provider),
            model=model,
            kind=ErrorKind.request,
            retryable=False,
        )


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
        """The answer text delivered so far."""
        return "".join(self.text_parts)

    def add(self, event: StreamEvent) -> None:
        """Take one stream event into account."""
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
