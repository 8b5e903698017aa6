"""The provider port: the ``LLMProvider`` protocol, the :class:`Capabilities` value, and one reader per capability.

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

What a model can do is one frozen value, :class:`Capabilities`, which a provider answers per model
with ``capabilities(model)``.  It is read through :func:`capabilities_of`, never by calling the method
at the point of use: a provider written against the first protocol has no ``capabilities`` method, and
:func:`capabilities_of` derives the value from the members that protocol had (:class:`CapabilityMembers`:
``carries_tools``, ``carries_forced_tool_choice``, ``supports_forced_tool_choice(model)``,
``supports_response_format(model)``, ``supports_streaming``), each with its old default.  So a duck-typed
test double or a user's adapter is treated the same way everywhere, and nothing rejects a provider
because ``isinstance(p, LLMProvider)`` is false.  The built-in providers still offer those members.

The readers of single capabilities (:func:`native_tools_for`, :func:`forced_tool_choice_for`,
:func:`forced_tool_choice_carried_by`, :func:`streaming_for`, :func:`response_format_for`) are thin
functions over the value; :func:`name_of` and :func:`default_model_of` read identity.

Two questions take more than a model, so no per-model value can hold their answer; they stay optional
members, each read by its reader:

* ``response_format_refusal(fmt, model, *, tools)`` — :func:`response_format_refusal`: why a
  response format the provider carries cannot carry *this* one (a schema the vendor's constrained
  decoding cannot compile, a format beside tools on a model that refuses both); default: nothing to refuse.
* ``forced_tool_choice_refusal(model, settings)`` — :func:`forced_tool_choice_refusal`: why
  the run's settings rule out a forced tool choice the model otherwise takes (Anthropic's extended
  thinking); default: settings rule nothing out.

They answer with a reason (``str``) or ``None``, so the output strategy auto picks
(``docs/output.md``) can say why; a composite provider (a decorator, a fallback chain, a pool) asks its
members through the same readers.

A value of the wrong type, or an exception raised while reading it, gets the default too:
a broken capability never breaks a call.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Collection, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final, Protocol, TypeAlias, runtime_checkable

import attrs

from ..errors import (
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
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
from ..parts import Audio, Document, Image
from ..settings import ModelSettings
from .errors import classify_exception

__all__ = [
    "MEDIA_KINDS",
    "Capabilities",
    "CapabilityMembers",
    "CapabilityMembersMixin",
    "LLMProvider",
    "StreamAccumulator",
    "StreamContext",
    "broken_contract",
    "capabilities_of",
    "check_forced_tool_choice",
    "check_response_format",
    "check_provider",
    "completes_by_coroutine",
    "default_model_of",
    "events_for_response",
    "forced_tool_choice_carried_by",
    "forced_tool_choice_for",
    "forced_tool_choice_refusal",
    "name_of",
    "native_tools_for",
    "UNOPENED",
    "not_a_context_manager",
    "not_an_iterator",
    "resolve_model",
    "response_format_for",
    "response_format_refusal",
    "stream_from_complete",
    "streaming_for",
]

StreamContext: TypeAlias = AbstractAsyncContextManager[AsyncIterator[StreamEvent]]

#: The media kinds a model may take: the ``kind`` of each media part of :mod:`agentactors.parts`.
MEDIA_KINDS: Final = frozenset({Image.kind, Document.kind, Audio.kind})


# --- the value -----------------------------------------------------------------------------------


def _media_kinds(value: Iterable[str]) -> frozenset[str]:
    if isinstance(value, str):
        raise TypeError(f"media is a set of kinds, not the string {value!r}: write {{{value!r}}}")
    kinds = frozenset(value)  # the same object when it is one already
    if not kinds <= MEDIA_KINDS:
        unknown = sorted(str(k) for k in kinds - MEDIA_KINDS)
        raise ValueError(f"unknown media kinds {unknown}: the kinds are {sorted(MEDIA_KINDS)}")
    return kinds


_FLAGS: Final = (
    "native_tools",
    "forced_tool_choice",
    "streaming",
    "response_format",
    "thinking",
    "parallel_tool_calls",
)


@attrs.frozen(slots=True, kw_only=True)
class Capabilities:
    """What one model can do through one provider: ``provider.capabilities(model)``, read by :func:`capabilities_of`.

    Each field answers a question asked *before* a request is sent (the transport is chosen, a forced
    choice or a response format refused unsent), so none can be learned from a response.  The defaults
    are what a provider that says nothing gets — ``Capabilities()`` is the value :func:`capabilities_of`
    derives from a duck-typed provider with none of the old members: only an explicit yes is yes for
    what would be refused or dropped, and "yes" for what every provider has always been assumed to do.

    :param native_tools: the provider calls tools natively (tool specs sent, calls in the response).
        ``False``: the loop sends no specs and uses the JSON-fallback transport (tools described in the
        prompt, calls parsed from the text).  Default ``True``.
    :param forced_tool_choice: a forced tool choice (``required`` / a named tool) may be sent to the
        model; ``False``: such a request raises :class:`~agentactors.UnsupportedToolChoiceError` before
        sending.  Default ``False``.
    :param streaming: ``stream()`` delivers the answer as it is generated.  ``False`` is for an adapter
        whose ``stream()`` exists only to satisfy the port: decorators then call ``complete()`` and deliver
        its response as a one-response stream.  Default ``True``.
    :param response_format: a JSON-schema response format (``LLMRequest.response_format``) reaches the
        model and the vendor enforces it; ``False``: such a request is a request-kind
        :class:`~agentactors.ProviderError` before sending (a format the wire dropped silently would drop
        the guarantee with it).  Default ``False``.
    :param thinking: the model reasons before it answers and the thinking settings (``thinking_budget``,
        ``reasoning_effort``) reach it — for a model the wire's tables do not know, the wire sends them as
        given and the vendor judges.  Default ``False``.
    :param media: the media part kinds (:data:`MEDIA_KINDS`: ``"image"``, ``"document"``, ``"audio"``) the
        model takes; a part of another kind is refused before sending.  Default: none.
    :param parallel_tool_calls: the ``parallel_tool_calls`` setting reaches the model (``False``: the wire
        drops it, with ``llm.setting_dropped``; the model may still call several tools in one step).
        Default ``False``.
    """

    native_tools: bool = True
    forced_tool_choice: bool = False
    streaming: bool = True
    response_format: bool = False
    thinking: bool = False
    media: frozenset[str] = attrs.field(default=frozenset(), converter=_media_kinds)
    parallel_tool_calls: bool = False

    def __attrs_post_init__(self) -> None:
        # One check for every flag, not a validator call each: a value is made each time a provider is asked.
        flags = (
            self.native_tools,
            self.forced_tool_choice,
            self.streaming,
            self.response_format,
            self.thinking,
            self.parallel_tool_calls,
        )
        for name, value in zip(_FLAGS, flags, strict=True):
            if value.__class__ is not bool:
                raise TypeError(f"Capabilities.{name} must be a bool, not {type(value).__name__}")

    @classmethod
    def common(cls, values: Iterable[Capabilities]) -> Capabilities:
        """What every one of ``values`` can do: the AND of each flag, the media kinds they all take.

        A composite whose every member may serve any call (a pool, a default fallback chain) can do this.
        :raises ValueError: no values.
        """
        items = tuple(values)
        if not items:
            raise ValueError("Capabilities.common() needs at least one value")
        return cls(
            native_tools=all(c.native_tools for c in items),
            forced_tool_choice=all(c.forced_tool_choice for c in items),
            streaming=all(c.streaming for c in items),
            response_format=all(c.response_format for c in items),
            thinking=all(c.thinking for c in items),
            media=frozenset.intersection(*(c.media for c in items)),
            parallel_tool_calls=all(c.parallel_tool_calls for c in items),
        )


# --- the protocol --------------------------------------------------------------------------------


class CapabilityMembers(Protocol):
    """The capability members of the first protocol: the compatibility surface :class:`LLMProvider` inherits.

    A provider without :meth:`LLMProvider.capabilities` is read through these (by
    :func:`capabilities_of`); every built-in provider still offers them, so code written against
    them keeps working.  A new provider implements ``capabilities(model)`` instead, and may inherit
    :class:`CapabilityMembersMixin` to offer these too.
    """

    @property
    def carries_tools(self) -> bool:
        """Whether the provider calls tools natively (:attr:`Capabilities.native_tools`).

        Read by :func:`native_tools_for` (the agent choosing its transport), through
        :func:`capabilities_of`; default: yes (only an explicit ``False`` is no).
        """
        ...

    @property
    def carries_forced_tool_choice(self) -> bool:
        """Whether the provider can carry a forced tool choice at all (``False`` for a server that ignores it).

        :meth:`supports_forced_tool_choice` refines it per model.  Read by
        :func:`forced_tool_choice_carried_by` and, with the per-model answer, by
        :func:`forced_tool_choice_for`; default: no (only an explicit ``True`` is yes).
        """
        ...

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """Whether a forced tool choice may be sent to ``model`` (``None``: the default model).

        Read only through :func:`forced_tool_choice_for` (with :attr:`carries_forced_tool_choice`,
        both must be exactly ``True``); default: no.
        """
        ...

    def supports_response_format(self, model: str | None) -> bool:
        """Whether a JSON-schema response format may be sent to ``model`` (:attr:`Capabilities.response_format`).

        Read only through :func:`response_format_for`; default: no (only an explicit ``True`` is yes).
        """
        ...

    @property
    def supports_streaming(self) -> bool:
        """Whether ``stream()`` delivers the answer as it is generated (:attr:`Capabilities.streaming`).

        Read by :func:`streaming_for`; default: yes (only an explicit ``False`` is no).
        """
        ...


@runtime_checkable
class LLMProvider(CapabilityMembers, Protocol):
    """A model provider: identity, what a model can do, and the two calls.  See the module docstring.

    The port is the six members declared here: ``name``, ``default_model``, ``capabilities(model)``,
    ``complete``, ``stream``, ``aclose``.  The members it inherits from :class:`CapabilityMembers` are
    the first protocol's, kept as a compatibility surface: every built-in provider offers them (a
    provider that implements :meth:`capabilities` gets them from :class:`CapabilityMembersMixin`), and
    nothing reads them but :func:`capabilities_of`, for a provider without :meth:`capabilities`.

    Nothing checks ``isinstance(provider, LLMProvider)`` before using a provider: a duck-typed provider
    with only the first protocol's members, or only the port's, is used and read all the same.
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

    def capabilities(self, model: str | None) -> Capabilities:
        """What ``model`` (``None``: the default model) can do through this provider.

        Should be total and cheap: it is asked before forced requests, when an output strategy is
        chosen and when a decorator opens a stream.  Read only through :func:`capabilities_of` (and the
        single-capability readers over it); default: the value derived from the members of
        :class:`CapabilityMembers`, or ``Capabilities()`` for a provider with none of them.
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


class CapabilityMembersMixin:
    """The members of :class:`CapabilityMembers`, answered from the provider's own ``capabilities(model)``.

    For a provider that implements :meth:`LLMProvider.capabilities` and should stay readable by code
    written against the first protocol (the resilience decorators, fallback chains and pools inherit
    it).  The provider-wide members answer for model ``None``: the default model.
    """

    __slots__ = ()

    def capabilities(self, model: str | None) -> Capabilities:  # pragma: no cover - the subclass's
        raise NotImplementedError

    @property
    def carries_tools(self) -> bool:
        """``capabilities(None).native_tools``."""
        return self.capabilities(None).native_tools

    @property
    def carries_forced_tool_choice(self) -> bool:
        """``capabilities(None).forced_tool_choice``: whether the default model takes a forced choice."""
        return self.capabilities(None).forced_tool_choice

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """``capabilities(model).forced_tool_choice``."""
        return self.capabilities(model).forced_tool_choice

    def supports_response_format(self, model: str | None) -> bool:
        """``capabilities(model).response_format``."""
        return self.capabilities(model).response_format

    @property
    def supports_streaming(self) -> bool:
        """``capabilities(None).streaming``."""
        return self.capabilities(None).streaming


# --- the readers ---------------------------------------------------------------------------------


def _read(provider: object, attribute: str, default: object) -> object:
    """``provider.attribute``, or ``default`` when it is missing or reading it raises."""
    try:
        return getattr(provider, attribute, default)
    except Exception:
        # A capability is a property of someone else's object; a bug in it must not break a call.
        return default


def _says_yes(method: object, model: str | None) -> bool:
    """Whether ``method(model)`` answers exactly ``True`` (not callable, or raising: no)."""
    if not callable(method):
        return False
    try:
        return method(model) is True
    except Exception:
        return False


def _forced_from_members(provider: object, model: str | None) -> bool:
    if _read(provider, "carries_forced_tool_choice", None) is not True:
        return False
    per_model = _read(provider, "supports_forced_tool_choice", None)
    return True if per_model is None else _says_yes(per_model, model)


def _from_members(provider: object, model: str | None) -> Capabilities:
    """The value a provider without ``capabilities()`` has: read from its :class:`CapabilityMembers`."""
    return Capabilities(
        native_tools=_read(provider, "carries_tools", True) is not False,
        forced_tool_choice=_forced_from_members(provider, model),
        streaming=_read(provider, "supports_streaming", True) is not False,
        response_format=_says_yes(_read(provider, "supports_response_format", None), model),
    )


def capabilities_of(provider: object, model: str | None) -> Capabilities:
    """What ``model`` (``None``: the default model) can do through ``provider``: the one capability reader.

    ``provider.capabilities(model)`` when it answers with a :class:`Capabilities`.  Otherwise — a
    provider written against the first protocol, a method that raises or answers something else — the
    value derived from its :class:`CapabilityMembers`, each with its old default: native tools unless
    ``carries_tools`` is exactly ``False``; a forced choice only when ``carries_forced_tool_choice`` is
    exactly ``True`` and ``supports_forced_tool_choice(model)``, if it has one, answers exactly ``True``;
    streaming unless ``supports_streaming`` is exactly ``False``; a response format only when
    ``supports_response_format(model)`` answers exactly ``True``; thinking, media and the
    ``parallel_tool_calls`` setting: no.
    """
    method = _read(provider, "capabilities", None)
    if callable(method):
        try:
            value = method(model)
        except Exception:
            value = None
        if isinstance(value, Capabilities):
            return value
    return _from_members(provider, model)


def check_provider(value: object, what: str = "provider", *, or_else: str = "") -> None:
    """Raise ``TypeError`` unless ``value`` is a provider instance whose ``complete`` is a coroutine function.

    The one check of a provider where one is taken (an :class:`~agentactors.Agent`, a ``ProviderActor``, a
    resilience decorator), said there rather than at the first model call: a provider class (its ``complete`` an
    unbound function) failed then with "missing 1 required positional argument", a sync ``complete`` with
    "can't be used in 'await' expression", ``None`` or a provider's name with an ``AttributeError`` on ``complete``.
    ``what`` names the argument; ``or_else`` adds what else it takes (``"or an ActorRef to a ProviderActor"``).
    """
    if isinstance(value, type):
        raise TypeError(f"{what} must be an LLMProvider instance, not the class {value.__name__}: pass an instance "
                        f"({value.__name__}(...))")
    if not callable(getattr(value, "complete", None)):
        also = f" {or_else}" if or_else else ""
        raise TypeError(f"{what} must be an LLMProvider (with complete() and stream()){also}, "
                        f"not {type(value).__name__}")
    if not completes_by_coroutine(value):
        raise TypeError(
            f"{what} {type(value).__name__}'s complete is a plain function; it is awaited: write "
            "`async def complete(self, request) -> LLMResponse` (a coroutine function)"
        )


def completes_by_coroutine(provider: object) -> bool:
    """Whether calling ``provider.complete`` makes a coroutine, as the port's ``async def complete`` does: an
    ``async def`` (a bound method, a ``functools.partial`` of one) or an object whose ``__call__`` is one.

    Asked where a provider is taken (an :class:`~agentactors.Agent`, a resilience decorator): a plain ``complete``
    failed at the first model call with "object ... can't be used in 'await' expression".  A plain function that
    returns a coroutine is refused too — it cannot be told from one that returns an answer without calling it.
    """
    complete = getattr(provider, "complete", None)
    return inspect.iscoroutinefunction(complete) or inspect.iscoroutinefunction(type(complete).__call__)


def name_of(provider: object) -> str:
    """``provider.name`` when it is a non-empty string, else the type's name."""
    name = _read(provider, "name", None)
    return name if isinstance(name, str) and name else type(provider).__name__


def default_model_of(provider: object) -> str | None:
    """``provider.default_model`` when it is set (a non-empty value, as text), else ``None``."""
    model = _read(provider, "default_model", None)
    return str(model) if model else None


def native_tools_for(provider: object) -> bool:
    """Whether ``provider`` calls tools natively: :attr:`Capabilities.native_tools` of its default model.

    Default (a provider that does not say, a non-bool value, an exception): yes — what an agent has
    always assumed of a provider that does not say (a fallback chain is the AND of its members' answers).
    """
    return capabilities_of(provider, None).native_tools


def forced_tool_choice_carried_by(provider: object) -> bool:
    """Whether ``provider`` carries a forced tool choice: :attr:`Capabilities.forced_tool_choice` for model ``None``.

    For a provider of the first protocol, ``carries_forced_tool_choice`` (and its per-model answer for
    the default model); only an explicit ``True`` is yes, anything else (missing, ``None``, a truthy
    non-bool, an exception) is no.
    """
    return capabilities_of(provider, None).forced_tool_choice


def forced_tool_choice_for(provider: object, model: str | None) -> bool:
    """Whether ``provider`` can send a forced tool choice to ``model``: :attr:`Capabilities.forced_tool_choice`.

    Anything but an explicit yes (a missing member, ``None``, a truthy non-bool, an exception) is no.
    """
    return capabilities_of(provider, model).forced_tool_choice


def streaming_for(provider: object) -> bool:
    """Whether ``provider.stream()`` is worth calling: a callable ``stream`` and :attr:`Capabilities.streaming`.

    No when the provider has no callable ``stream`` or says exactly no; otherwise (missing, a non-bool
    value, an exception) the default, yes.
    """
    if not callable(_read(provider, "stream", None)):
        return False
    return capabilities_of(provider, None).streaming


def response_format_for(provider: object, model: str | None) -> bool:
    """Whether ``provider`` can send a JSON-schema response format to ``model``: :attr:`Capabilities.response_format`.

    Only an explicit yes is yes: a provider that does not say, a non-bool answer or an exception is no —
    a response format the wire drops silently would drop the guarantee with it.
    """
    return capabilities_of(provider, model).response_format


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
        name = name_of(provider)
        hint = _declared_off(provider, "carries_forced_tool_choice")
        if hint is None:
            raise UnsupportedToolChoiceError(provider=name, model=model)
        raise UnsupportedToolChoiceError(
            f"provider {name!r} does not send a forced tool choice ('required' or a named tool) to model {model!r}: "
            f"{hint}; or use ToolChoice.auto()",
            provider=name,
            model=model,
        )


def _declared_off(provider: object, flag: str) -> str | None:
    """The hint for a refusal that comes from the provider's own declaration ``flag`` being ``False`` — an
    OpenAI-compatible server is not assumed to honour what OpenAI's endpoint does — rather than from the model:
    said so, with the keyword that declares it, so that nobody tries other models for it.  ``None`` otherwise."""
    if _read(provider, flag, None) is not False:
        return None
    return f"it was made with {flag}=False (a server other than the vendor's own is not assumed to honour it); " \
        f"pass {flag}=True when the server does"


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
        name = name_of(provider)
        hint = _declared_off(provider, "carries_response_format")
        message = (
            f"model {model!r} of provider {name!r} cannot carry a JSON-schema response format "
            "(NativeOutput); use ToolOutput or PromptedOutput, or a model that supports it"
            if hint is None else
            f"provider {name!r} does not send a JSON-schema response format (NativeOutput) to model {model!r}: "
            f"{hint}; or use ToolOutput or PromptedOutput"
        )
        raise ProviderError(
            message,
            provider=name,
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


def broken_contract(
    what: str, value: object, expected: str, *, provider: str, model: str | None
) -> MalformedResponseError:
    """The error of a provider that broke the port's contract: ``what`` (``"the answer of complete()"``, ``"an item
    of its stream"``...) was ``value``, where ``expected`` was due.

    A :class:`~agentactors.errors.MalformedResponseError` — transient, so a circuit breaker counts it as the
    member's failure and a fallback chain moves on — but not retryable: the provider's own code answers the same
    again.  Only the value's type is named, never the value (it may hold anything).  Built where the violation is
    found, on a path that is already the rare one (an exception being handled, a type checked anyway).
    """
    return MalformedResponseError(
        f"{what} was a {type(value).__name__}, not {expected} (the LLMProvider contract: docs/architecture.md)",
        provider=provider,
        model=model,
        retryable=False,
    )


#: What a caller of :func:`not_a_context_manager` holds before ``stream()`` returned (``None`` is a value it may
#: return: a ``def stream`` that forgot its ``return``).
UNOPENED: Final[object] = object()


def not_a_context_manager(
    value: object, exc: BaseException, *, provider: str, model: str | None
) -> MalformedResponseError | None:
    """The error of a ``stream()`` that returned ``value``, no async context manager (a bare async generator, the
    coroutine of an ``async def stream``), when ``exc`` is what entering it raised (``async with``'s
    ``TypeError``, ``__aenter__``'s ``AttributeError``); else ``None``.

    Asked where entering a provider's stream failed (the rare path): ``value`` is closed here, so that it neither
    warns "never awaited" nor stays half open, and the provider is named, rather than Python's "does not support
    the asynchronous context manager protocol" classified as a request error.
    """
    if not isinstance(exc, Exception) or value is UNOPENED or hasattr(value, "__aenter__"):
        return None
    if inspect.iscoroutine(value):
        value.close()
    elif inspect.isasyncgen(value):
        value.aclose().close()  # (never started: nothing of it ran, nothing to finish)
    return broken_contract(
        "the value of stream()", value, "an async context manager (`async with provider.stream(request) as events`)",
        provider=provider, model=model,
    )


def not_an_iterator(
    value: object, exc: BaseException, *, provider: str, model: str | None
) -> MalformedResponseError | None:
    """The error of a ``stream()`` whose context manager's value (what ``__aenter__`` returned) is ``value``, no async
    iterator (a list, ``None``, a sync generator), when ``exc`` is what reading its first event raised (the
    ``AttributeError`` or ``TypeError`` of ``value.__anext__()``); else ``None``.

    Asked where reading a provider's first event failed (the rare path: a stream that keeps the contract pays
    nothing), so the provider is named rather than Python's "has no attribute '__anext__'" classified as a request
    error (not counted by a breaker, not moved on from by a fallback chain).  A generator or coroutine ``value`` is
    closed, never started.
    """
    if not isinstance(exc, AttributeError | TypeError) or hasattr(value, "__anext__"):
        return None
    if inspect.iscoroutine(value) or inspect.isgenerator(value):
        value.close()
    return broken_contract(
        "the value of stream()'s context manager", value, "an async iterator of stream events",
        provider=provider, model=model,
    )


def stream_from_complete(provider: LLMProvider | Any, request: LLMRequest) -> StreamContext:
    """Adapt a provider without streaming: its ``complete()`` becomes a one-response stream.

    :raises MalformedResponseError: ``complete()`` answered something that is no ``LLMResponse`` (the provider named,
        before the first event).
    """

    @asynccontextmanager
    async def _cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
        response = await provider.complete(request)
        if type(response) is not LLMResponse and not isinstance(response, LLMResponse):
            raise broken_contract("the answer of complete()", response, "an LLMResponse",
                                  provider=name_of(provider), model=request.model)

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
    """The error a stream raises when it fails after its first event: ``exc``, classified, as its cause.

    ``exc`` is classified first (:func:`~agentactors.providers.errors.classify_exception`), as a failure
    before the first event is: a :class:`ProviderError` (or the sole failure in an ``ExceptionGroup``) is
    the cause as it is; a foreign exception becomes a classified error whose text is redacted and whose
    own cause is scrubbed, so a credential in its text (a URL's ``?key=``, an ``Authorization`` header a
    proxy echoed) is not reachable through the interruption's chain.  Every stream — a wire, the scripted
    provider, the resilience decorators (``cut_short``) — builds its interruption here.

    A :class:`StreamInterruptedError` (one already built below) is returned as is.  Raise the result
    outside the ``except`` block that caught ``exc``: inside it, ``exc`` itself becomes the result's
    ``__context__``.
    """
    if isinstance(exc, StreamInterruptedError):
        return exc
    failure = classify_exception(exc, provider=provider, model=model)
    if isinstance(failure, StreamInterruptedError):  # one inside a group
        return failure
    err = StreamInterruptedError(
        f"stream interrupted after it started: {failure}",
        provider=provider,
        model=model,
        partial_text=partial_text,
        status=failure.status if isinstance(failure.status, int) else None,
        request_id=failure.request_id,
    )
    err.__cause__ = failure
    return err
