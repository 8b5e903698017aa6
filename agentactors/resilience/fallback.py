"""``with_fallback``: when a member cannot serve, ask the next one — but only when that can help.

A request fault is the request's fault on every member, so it never moves; a
cancellation never moves; a stream that already delivered an event never
moves (the consumer saw part of it).  What does move is decided from the error
kind alone: transient and circuit_open by default, account / context /
content_policy when asked for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, ClassVar, TypeVar

import attrs

import agentactors.resilience._gate as _gate

from ..errors import (
    AllProvidersFailedError,
    ErrorKind,
    ProviderError,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from ..events import emit
from ..messages import LLMRequest, LLMResponse, ResponseFormat, StreamEnd, StreamEvent
from ..pricing import with_cut_short
from ..providers.port import (
    Capabilities,
    LLMProvider,
    StreamContext,
    broken_contract,
    check_forced_tool_choice,
    default_model_of,
    forced_tool_choice_for,
    forced_tool_choice_refusal,
    response_format_for,
    response_format_refusal,
)
from ..settings import ModelSettings
from ._checks import check_flag, error_kinds
from .decorator import as_provider_error, name_of, streaming_adapted
from .multi import MultiProvider
from .streams import Carried, OpenedStream, open_stream, relay, stream_of
from .timeout import abandoned_attempts, hand_on, own_request, serve_carried

__all__ = ["DEFAULT_FALLBACK_ON", "FallbackProvider", "with_fallback"]

T = TypeVar("T")
FallbackOn = Iterable[ErrorKind | str] | Callable[[ProviderError], bool]

DEFAULT_FALLBACK_ON: frozenset[ErrorKind] = frozenset({ErrorKind.transient, ErrorKind.circuit_open})


@attrs.frozen(slots=True)
class _Step:
    """One member's turn: the member, the model it will call and the request it gets."""

    index: int
    member: Any
    model: str | None
    request: LLMRequest

    @property
    def name(self) -> str:
        return name_of(self.member)


def _kinds(fallback_on: FallbackOn | None) -> tuple[frozenset[ErrorKind], Callable[[ProviderError], bool] | None]:
    return error_kinds(fallback_on, DEFAULT_FALLBACK_ON)


class FallbackProvider(MultiProvider):
    """The provider :func:`with_fallback` returns.  See there for the semantics.

    A :class:`~agentactors.resilience.MultiProvider`: the primary calls the model asked for, each
    fallback its own default model; with ``skip_incapable`` a forced tool choice or a response format
    needs one capable member, not all.
    """

    label: ClassVar[str] = "fallback"

    def __init__(
        self,
        members: Sequence[LLMProvider | Any],
        *,
        fallback_on: FallbackOn | None,
        skip_incapable: bool,
        name: str | None,
    ) -> None:
        check_flag(skip_incapable, "skip_incapable")
        super().__init__(members, name=name)
        self._kinds, self._predicate = _kinds(fallback_on)
        self.skip_incapable = skip_incapable

    # -- the port: identity and capabilities ------------------------------------------------------

    def model_for(self, index: int, requested: str | None) -> str | None:
        """The primary calls what was asked for (or its default); a fallback is bound to its own model."""
        own = default_model_of(self.members[index])
        model = (requested or own) if index == 0 else (own or requested)
        return str(model) if model else None

    def capabilities(self, model: str | None) -> Capabilities:
        """What the chain can do when asked for ``model``; each member answers for the model it would call.

        Every member must be able to — or, with ``skip_incapable``, for a forced tool choice and a
        response format, at least one (the others are skipped).  Streaming always (a member that cannot
        stream is adapted).
        """
        values = self.member_capabilities(model)
        common = Capabilities.common(values)
        if self.skip_incapable:
            common = attrs.evolve(
                common,
                forced_tool_choice=any(c.forced_tool_choice for c in values),
                response_format=any(c.response_format for c in values),
            )
        return streaming_adapted(common)

    def response_format_refusal(
        self, fmt: ResponseFormat, model: str | None, *, tools: bool = False, members: Collection[str] | None = None
    ) -> str | None:
        """Why the chain cannot carry ``fmt`` when asked for ``model``, or ``None``.

        Each member answers for the model it would call, through
        :func:`~agentactors.providers.port.response_format_refusal`.  Every member must carry it — or,
        with ``skip_incapable``, every member that carries a response format at all (the others are
        skipped), and at least one.  ``members`` (names: the members the chain skipped for a forced
        tool choice) narrows the question to those members, each of which must carry it: a request
        re-issued without the forced choice is served by one of them or by none.
        """
        steps = list(self.member_models(model))
        if members is not None:
            wanted = set(members)
            named = [(m, mm) for m, mm in steps if name_of(m) in wanted]
            if named:  # names that match no member (a nested chain's) leave the whole chain to answer
                for m, mm in named:
                    reason = response_format_refusal(m, mm, fmt, tools=tools)
                    if reason is not None:
                        return f"member {name_of(m)!r}: {reason}"
                return None
        carried = 0
        for m, mm in steps:
            if self.skip_incapable and not response_format_for(m, mm):
                continue
            reason = response_format_refusal(m, mm, fmt, tools=tools)
            if reason is not None:
                return f"member {name_of(m)!r}: {reason}"
            carried += 1
        return None if carried else f"no member of {self._name} can carry a JSON-schema response format"

    def forced_tool_choice_refusal(self, model: str | None, settings: ModelSettings | None) -> str | None:
        """Why ``settings`` rule out a forced tool choice on a member the chain would send it to, or ``None``.

        Every member that takes a forced choice for the model it would call is asked (through
        :func:`~agentactors.providers.port.forced_tool_choice_refusal`): the chain does not skip a member
        for its settings, so one that refuses them would end the call.
        """
        for m, mm in self.member_models(model):
            if self.skip_incapable and not forced_tool_choice_for(m, mm):
                continue
            reason = forced_tool_choice_refusal(m, mm, settings)
            if reason is not None:
                return f"member {name_of(m)!r}: {reason}"
        return None

    # -- the port: calls --------------------------------------------------------------------------

    def _plan(self, request: LLMRequest) -> list[_Step]:
        steps = []
        for i, member in enumerate(self.members):
            model = self.model_for(i, request.model)
            sub = request if i == 0 else request.with_model(model)
            steps.append(_Step(i, member, model, sub))
        if request.tool_choice.forced and not self.skip_incapable:
            # The request is wrong for this chain if any member would reject it: say so now,
            # not on the day the primary fails and the incapable member is reached.
            for step in steps:
                # Said as the member itself says it: a member made with carries_forced_tool_choice=False (a server
                # other than the vendor's) is named so, not sent looking for another model.
                check_forced_tool_choice(step.member, step.request, step.model)
        if request.response_format is not None and not self.skip_incapable:
            # The same for a response format: refused now, before any member is called.
            for step in steps:
                if not response_format_for(step.member, step.model):
                    raise _no_response_format(step)
        return steps

    @staticmethod
    def _incapable(request: LLMRequest, step: _Step) -> str | None:
        """Why ``skip_incapable`` skips ``step``'s member for ``request`` (``None``: it can serve it)."""
        if request.tool_choice.forced and not forced_tool_choice_for(step.member, step.model):
            return "forced_tool_choice"
        if request.response_format is not None and not response_format_for(step.member, step.model):
            return "response_format"
        return None

    def _moves(self, error: ProviderError) -> bool:
        if error.kind is ErrorKind.request or isinstance(error, StreamInterruptedError):
            return False
        if self._predicate is not None:
            return bool(self._predicate(error))
        return error.kind in self._kinds

    async def _walk(self, request: LLMRequest, call: Callable[[_Step], Any]) -> tuple[_Step, Any]:
        """Try the members in order; return (the step that served, what ``call`` returned)."""
        errors: list[ProviderError] = []
        skipped: list[str] = []
        moved_from: _Step | None = None
        for step in self._plan(request):
            reason = self._incapable(request, step)
            if reason is not None:
                emit("fallback.skipped", member=step.name, model=step.model, reason=reason)
                skipped.append(step.name)
                continue
            if step.request is request and step.index:
                # A member after the first is sent a request of its own (with_model made one for another model),
                # so that what its layers note against it is told as its own: handed on to the caller's request
                # when it is done (_member).  Made here, when it is tried: the no-fault path makes no copy.
                step = attrs.evolve(step, request=own_request(request))
            if moved_from is not None:
                # A circuit breaker above that admitted this call may have opened while the member before failed
                # (other calls' failures): then no further member is called, as a retry below it sends no further
                # attempt — the breaker's "no calls while open" holds for every request below it.
                shut = _gate.refusal()
                if shut is not None:
                    label = f"fallback {self._name}"
                    raise self.shut_out(errors, step.name, shut, event="fallback.exhausted", label=label)
                last = errors[-1]
                emit("fallback.moved", from_member=moved_from.name, to_member=step.name, to_model=step.request.model,
                     reason=last.kind, error=last)
            try:
                result = await call(step)
            except Exception as exc:
                # Cancellation is a BaseException and leaves at once: no member is tried after it.
                error = as_provider_error(exc, step.member, step.model)
            else:
                return step, result
            # Raised here, not in the except block: there a foreign exception (its text may hold a
            # credential) would ride along as the classified error's __context__.
            if not self._moves(error):
                if errors:
                    error.add_note(f"fallback {self._name}: tried before: " + "; ".join(str(e) for e in errors))
                raise error
            errors.append(error)
            moved_from = step
        raise self._exhausted(request, errors, skipped)

    def _exhausted(self, request: LLMRequest, errors: list[ProviderError], skipped: list[str]) -> ProviderError:
        if not errors:
            names = ", ".join(name_of(m) for m in self.members)
            if not request.tool_choice.forced:
                return ProviderError(
                    f"no member of fallback chain {self._name} can carry a JSON-schema response format; "
                    f"members: {names}",
                    provider=self._name,
                    model=request.model or self.default_model,
                    kind=ErrorKind.request,
                )
            return UnsupportedToolChoiceError(
                f"no member of fallback chain {self._name} can carry a forced tool choice "
                f"({request.tool_choice.mode!r}); members: {names}",
                provider=self._name,
                model=request.model or self.default_model,
            )
        emit("fallback.exhausted", errors=tuple(errors))
        return AllProvidersFailedError(
            f"every member of fallback chain {self._name} failed or was skipped",
            errors,
            provider=self._name,
            skipped=skipped,
        )

    @staticmethod
    def _served(response: LLMResponse, step: _Step) -> LLMResponse:
        return response if response.provider else attrs.evolve(response, provider=step.name)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The first member's response that does not fail in a way that moves (see :func:`with_fallback`).

        A member's attempt a ``with_timeout`` abandoned was sent and is billed: it rides on the answer of the member
        that served (:func:`~agentactors.pricing.with_cut_short`), or, when every member failed, goes to the layer
        around that collects them, else to the run (:func:`~.timeout.keep_abandoned`).

        Cancellation: re-raised at once, unchanged; no member is tried after it (never a move).  The attempts
        abandoned so far are handed on as when every member failed.
        """
        async def fallback(step: _Step) -> LLMResponse:
            if step.index:
                try:
                    response: LLMResponse = await step.member.complete(step.request)
                finally:
                    hand_on(step.request, request)  # what its layers noted against its own request
            else:  # the primary is sent the caller's request itself: nothing to hand on
                response = await step.member.complete(step.request)
            if type(response) is not LLMResponse and not isinstance(response, LLMResponse):
                # The member broke the contract (a custom provider's None, str, dict): its failure, named —
                # transient, so the chain moves on — rather than an AttributeError of the chain's (_served).
                raise broken_contract("the answer of complete()", response, "an LLMResponse",
                                      provider=step.name, model=step.model)
            return response

        collecting = abandoned_attempts()
        try:
            with collecting as abandoned:
                step, response = await self._walk(request, fallback)
        except BaseException:
            collecting.keep(request)  # (outside the block: inside it, its own list is the one collecting)
            raise
        response = self._served(response, step)
        return with_cut_short(response, abandoned) if abandoned else response

    def stream(self, request: LLMRequest) -> StreamContext:
        """The first member's stream that reaches its first event; later failures do not move."""
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: LLMRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        async def open_member(step: _Step) -> OpenedStream:
            try:
                return await open_stream(
                    lambda: stream_of(step.member, step.request), provider=step.name, model=step.model
                )
            except BaseException:
                hand_on(step.request, request)  # what a member that failed or was cancelled noted
                raise

        # Failover happens only while opening a member's stream and reading its first event.
        collecting = abandoned_attempts()
        try:
            with collecting as abandoned:
                step, opened = await self._walk(request, open_member)
        except BaseException:
            collecting.keep(request)  # (outside the block: inside it, its own list is the one collecting)
            raise

        def name_server(event: StreamEvent) -> StreamEvent:
            if isinstance(event, StreamEnd):
                response: object = event.response
                if type(response) is not LLMResponse and not isinstance(response, LLMResponse):
                    # No answer to name or carry: relayed as it is, for the run's step to name (what was to ride on
                    # it is charged as for a stream without its end: streams.Carried).
                    return event
                if abandoned or not response.provider:
                    # (the members abandoned before this one, billed: they ride on its end, as on an answer)
                    return StreamEnd(with_cut_short(self._served(response, step), abandoned))
            return event

        if not abandoned and not step.index:  # the common case: the primary serves, nothing to carry
            async with opened.stack:
                events = relay(opened, provider=step.member, model=step.model, transform=name_server)
                try:
                    yield events
                finally:
                    await events.aclose()
            return
        # The attempts abandoned before this member ride on its end; if it never gets there they are charged
        # all the same (kept for the layer around, else noted for the run), with this member's call when the
        # consumer left it alive — cancelled, broke out, closed it — not when it failed or ended without its
        # StreamEnd (charged as a call that failed is).  Before, they were dropped.  Also when nothing was
        # abandoned, for a member after the first: its call left alive is charged as its own (its name, its
        # model), not as the pulled stream around would estimate it (the chain's name, the caller's model).
        carried = Carried(relay(opened, provider=step.member, model=step.model, transform=name_server))
        async with serve_carried(
            opened, carried, request, step.request, step.member, step.model, abandoned
        ) as served:
            yield served


def _no_response_format(step: _Step) -> ProviderError:
    return ProviderError(
        f"member {step.name!r} (model {step.model!r}) cannot carry a JSON-schema response format; "
        "use skip_incapable=True to skip it, or another output strategy",
        provider=step.name,
        model=step.model,
        kind=ErrorKind.request,
        retryable=False,
    )


def with_fallback(
    primary: LLMProvider | Any,
    *fallbacks: LLMProvider | Any,
    fallback_on: FallbackOn | None = None,
    skip_incapable: bool = False,
    name: str | None = None,
) -> FallbackProvider:
    """Try ``primary``, then each of ``fallbacks`` in order, until one serves.

    * **Models**: the primary calls ``request.model`` or its ``default_model``;
      each fallback calls its own ``default_model`` when it has one (so one
      request can fail over across vendors: ``AnthropicProvider(model=...)``),
      else ``request.model``.
    * **When it moves**: on the kinds in ``fallback_on`` — default
      ``{transient, circuit_open}``; add ``"account"``, ``"context"`` or
      ``"content_policy"`` (strings or :class:`~agentactors.errors.ErrorKind`)
      to opt in — or when ``fallback_on(error)`` returns true if it is a
      predicate.  Never on a request error, never on cancellation (re-raised at
      once) and never after a stream's first event
      (:class:`~agentactors.errors.StreamInterruptedError` reaches the consumer).
      An error that does not move is raised as is, noting what failed before it.
    * **Forced tool choice**: each member's ``forced_tool_choice_for(member,
      model)`` is checked before anything is sent.  By default a member that
      cannot carry it makes the whole chain raise
      :class:`~agentactors.errors.UnsupportedToolChoiceError` at once (the
      request is wrong for this chain; no member is called).  With
      ``skip_incapable=True`` such a member is skipped (``fallback.skipped``)
      and the next capable one serves; if every member is skipped, the
      ``UnsupportedToolChoiceError`` names the chain.  A JSON-schema response
      format (``LLMRequest.response_format``) is planned the same way (a request
      error at once, or ``fallback.skipped`` with reason ``response_format``).
      An :class:`~agentactors.errors.AllProvidersFailedError` names the members
      it skipped in ``skipped``.
    * **Exhausted**: :class:`~agentactors.errors.AllProvidersFailedError` — both
      an ``ExceptionGroup`` and a ``ProviderError`` — with the members' errors
      in order, primary first.
    * A member without streaming is adapted (its ``complete()`` becomes a
      one-response stream), never skipped.
    * ``LLMResponse.provider`` (and the ``StreamEnd`` response's) names the
      member that served when the member did not name itself.
    * ``capabilities(model)`` is what every member can do for the model it
      would call (with ``skip_incapable``, a forced tool choice and a response
      format need one capable member).  ``aclose()`` closes every member.

    * **Under a circuit breaker** (``with_circuit_breaker(with_fallback(...))``):
      before moving on, it asks the breakers above whether the call they admitted
      may still send (as ``with_retry`` does before each attempt).  Once one has
      opened since, no further member is called: the last member's error is
      raised unwrapped with a note saying why, and ``fallback.exhausted`` is
      recorded with ``reason="circuit_open"`` and a ``detail``.

    Events: ``fallback.moved(from_member, to_member, to_model, reason, error)``,
    ``fallback.skipped(member, reason)``, ``fallback.exhausted(errors)``.
    """
    return FallbackProvider((primary, *fallbacks), fallback_on=fallback_on, skip_incapable=skip_incapable, name=name)
