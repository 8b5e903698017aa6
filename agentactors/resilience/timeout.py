"""``with_timeout``: bound a call, a stream's first event and the silence between events.

Built on anyio cancel scopes.  A scope only absorbs *its own* cancellation
(``cancelled_caught``), so when the bound expires the call is cancelled and
turned into :class:`~agentactors.errors.ProviderTimeout`, while a cancellation
coming from outside (the caller's scope, a task group) passes through untouched.

A call abandoned so was sent, and the vendor bills it: it is charged as a call cut
short (``docs/costs.md``) — kept for the layer around that collects such calls (:func:`abandoned_attempts`:
a ``with_retry``, ``with_fallback``, ``with_pool``, ``with_hedge``), which puts it on the answer a later
attempt or member brings, or hands it on when the call fails; else noted for the run (:func:`keep_abandoned`).
The layers inside get a copy of the request of their own (:func:`own_request`), so that what they note of
*this* call is told from what was noted against the request before it or by a sibling sharing it.
"""

from __future__ import annotations

import copy
import math
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from contextlib import asynccontextmanager
from contextvars import ContextVar, Token
from typing import Any

import anyio
import attrs

from ..errors import MalformedResponseError, ProviderError, ProviderTimeout
from ..gateway.provider import estimated_cut_short
from ..messages import LLMRequest, LLMResponse, StreamEvent
from ..pricing import CutShort, add_cut_short, pop_cut_short
from ..providers.port import (
    UNOPENED,
    LLMProvider,
    StreamAccumulator,
    StreamContext,
    broken_contract,
    interrupted,
    not_a_context_manager,
    not_an_iterator,
)
from ._numbers import seconds_or_none
from .decorator import ProviderDecorator, as_provider_error, model_of, name_of
from .streams import Carried, OpenedStream, cut_short, stream_of

__all__ = [
    "Collecting",
    "TimeoutProvider",
    "abandoned_attempts",
    "charge_unfinished",
    "hand_on",
    "keep_abandoned",
    "own_request",
    "with_timeout",
]

# The attempts abandoned under the innermost ``with_retry`` call in progress (its own list), or None outside one.
# A context variable, not an argument: layers between the retry and the timeout (a hedge's copies, in tasks of
# their own, inherit it) need not pass it on.
_abandoned: ContextVar[list[CutShort] | None] = ContextVar("agentactors_abandoned_attempts", default=None)


class Collecting:
    """The block of :func:`abandoned_attempts`, collecting into :attr:`ledger` while it runs.

    A class, not a ``@contextmanager`` generator: every call through a retry, a fallback, a pool or a hedge enters
    one, and a generator's frame and wrapper cost three times as much (~1.6 us against ~0.5).
    """

    __slots__ = ("ledger", "token")

    def __init__(self) -> None:
        self.ledger: list[CutShort] = []
        self.token: Token[list[CutShort] | None] | None = None

    def __enter__(self) -> list[CutShort]:
        self.token = _abandoned.set(self.ledger)
        return self.ledger

    def __exit__(self, *exc: object) -> None:
        if self.token is not None:
            _abandoned.reset(self.token)
            self.token = None

    def keep(self, request: LLMRequest) -> None:
        """After the block, when the call ends without an answer: what it collected goes to the layer around that
        collects them, else is noted for the run (:func:`keep_abandoned`) — once (the ledger is emptied)."""
        if self.ledger:
            keep_abandoned(request, self.ledger)
            self.ledger.clear()


def abandoned_attempts() -> Collecting:
    """Collect, for the code in the block, the attempts a ``with_timeout`` inside abandons (:func:`keep_abandoned`).

    ``with_retry``, ``with_fallback`` and ``with_pool`` wrap each call in it: the attempts given up before the answer
    ride on that answer (:func:`~agentactors.pricing.with_cut_short`), or, when the call fails or is cancelled, go
    to the layer around that collects them, else are noted for the run — handed on *outside* the block
    (:meth:`Collecting.keep`): inside it, the ledger collecting is the block's own.
    """
    return Collecting()


def keep_abandoned(request: LLMRequest, calls: Iterable[CutShort]) -> None:
    """``request``'s attempt was abandoned after it was sent: ``calls`` are what the vendor bills for it.

    Kept for the layer around that collects them (:func:`abandoned_attempts`: a retry, a fallback, a pool, a hedge),
    else noted for the run that asked
    (:func:`~agentactors.pricing.note_cut_short`, added to what was noted before: the run takes it when the call
    fails).
    """
    ledger = _abandoned.get()
    if ledger is not None:
        ledger.extend(calls)
    else:
        add_cut_short(request, calls)


# LLMRequest's fields, copied by own_request (by hand: a third of copy.copy's time, which goes through pickling hooks).
_FIELDS = tuple(field.name for field in attrs.fields(LLMRequest))


def own_request(request: LLMRequest) -> LLMRequest:
    """An equal request that is a different object: what the layers inside a bound (a hedge's copy, a fallback's
    member, a retry's attempt) are sent.

    Calls cut short are noted against the request *object* (:func:`~agentactors.pricing.note_cut_short`), so a
    note found against the caller's request when the bound expires could be anyone's: left from an earlier call
    with the same object, or a sibling's — two ``with_timeout`` under a fan-out of the caller's own, sharing the
    request, one abandoned before the other.  Taking it as an inner layer's charged the first call for both (the
    second went uncharged) or the wrong call.  What is noted against the copy is only this call's inner layers'.
    """
    if type(request) is not LLMRequest:
        return copy.copy(request)  # a subclass of the caller's: its own fields too
    own = object.__new__(LLMRequest)
    for name in _FIELDS:
        object.__setattr__(own, name, getattr(request, name))
    return own


def hand_on(sent: LLMRequest, request: LLMRequest) -> None:
    """What the layers inside noted against ``sent`` (this call's copy, :func:`own_request`) is noted against the
    caller's ``request``, added to what was noted there before (a sibling's): the layers around (the retry, the
    ``ProviderActor``, the run) look for it there, as if no copy had been made.  Nothing when ``sent`` is
    ``request`` (no copy was made)."""
    if sent is request:
        return
    noted = pop_cut_short(sent)
    if noted is not None:
        add_cut_short(request, noted)


def charge_unfinished(
    request: LLMRequest, sent: LLMRequest, provider: Any, model: str | None, abandoned: list[CutShort], carried: Carried
) -> None:
    """A carried stream (``with_fallback``'s, ``with_pool``'s) was left before its ``StreamEnd``: the ``abandoned``
    attempts go to the layer around that collects them, else to the run (:func:`keep_abandoned`); with them, when the
    consumer left it alive, the serving member's call (``provider``, sent ``sent``: the caller's ``request`` or one of
    its own) — as the layers inside noted it, else at an estimate with the text it had delivered, priced as that
    member's (a pulled stream around keeps this note, which it would have named after the chain)."""
    if carried.over:
        if abandoned:
            keep_abandoned(request, abandoned)
        return
    noted = pop_cut_short(sent)
    in_flight = noted if noted is not None else (estimated_cut_short(provider, sent, model, carried.acc.text),)
    # Noted for the run even when a layer around collects the abandoned attempts: a hedge around takes it as the
    # note of the copy it relayed (against that copy's own request).
    if abandoned:
        keep_abandoned(request, abandoned)
    add_cut_short(request, in_flight)


@asynccontextmanager
async def serve_carried(
    opened: OpenedStream,
    carried: Carried,
    request: LLMRequest,
    sent: LLMRequest,
    provider: Any,
    model: str | None,
    abandoned: list[CutShort],
) -> AsyncIterator[AsyncIterator[StreamEvent]]:
    """Relay a serving member's ``carried`` stream (``with_fallback``'s, ``with_pool``'s) inside its ``opened`` one;
    left before its ``StreamEnd``, charge what it leaves (:func:`charge_unfinished`); then hand on what the member's
    layers noted against ``sent`` to the caller's ``request``."""
    try:
        async with opened.stack:
            try:
                yield carried.events
            finally:
                await carried.aclose()
    finally:
        if not carried.ended:
            charge_unfinished(request, sent, provider, model, abandoned, carried)
        hand_on(sent, request)


def _check(label: str, value: float | None) -> float | None:
    """``value`` as seconds: ``None`` (no bound), or a positive, finite number (:func:`._numbers.seconds_or_none`)."""
    return seconds_or_none(label, value)



def _no_answer(response: object, inner: LLMProvider, request: LLMRequest) -> MalformedResponseError:
    """The member's broken contract: its ``complete()`` answered ``response``, no ``LLMResponse``.  Named here, not
    handed on, for a caller of this decorator itself has no run's step to name it (docs/resilience.md)."""
    return broken_contract("the answer of complete()", response, "an LLMResponse",
                           provider=name_of(inner), model=model_of(inner, request))


class TimeoutProvider(ProviderDecorator):
    """The provider :func:`with_timeout` returns.  See there for the semantics."""

    def __init__(
        self,
        inner: LLMProvider | Any,
        *,
        attempt: float | None,
        first_event: float | None,
        idle: float | None,
    ) -> None:
        super().__init__(inner)
        self.attempt = _check("attempt", attempt)
        self.first_event = _check("first_event", first_event)
        self.idle = _check("idle", idle)

    def _timeout(self, model: str | None, what: str, seconds: float) -> ProviderTimeout:
        return ProviderTimeout(f"{what} timed out after {seconds:g}s", provider=self.name, model=model)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The inner provider's answer within ``attempt`` seconds, else :class:`~agentactors.errors.ProviderTimeout`.

        A failure that is not a ``ProviderError`` (a vendor SDK's own exception) is raised classified
        (:func:`~agentactors.providers.classify_exception`), as every decorator raises it.

        Cancellation: a cancellation from outside (the caller's scope, a task group) propagates unchanged, the
        inner call cancelled with it, even when it comes at the instant the bound expires; only this decorator's
        own expiry becomes ``ProviderTimeout``.  The call given up on is charged as a call cut short.
        """
        if self.attempt is None:
            try:
                response: object = await self._inner.complete(request)
            except ProviderError:
                raise
            except Exception as exc:
                failure = as_provider_error(exc, self._inner, model_of(self._inner, request))
            else:
                if type(response) is LLMResponse or isinstance(response, LLMResponse):
                    return response
                failure = _no_answer(response, self._inner, request)
            raise failure  # (outside the except block: the foreign exception is not kept as its __context__)
        sent = own_request(request)
        try:
            with anyio.move_on_after(self.attempt):
                response = await self._inner.complete(sent)
                if type(response) is LLMResponse or isinstance(response, LLMResponse):
                    return response
                raise _no_answer(response, self._inner, request)
            # Only reached when our own deadline cancelled the call (an outer cancellation propagates).
            model = model_of(self._inner, request)
            self._abandoned(request, sent, model, "")
            raise self._timeout(model, "the call", self.attempt)
        except ProviderError:
            raise
        except Exception as exc:
            failure = as_provider_error(exc, self._inner, model_of(self._inner, request))
        finally:
            hand_on(sent, request)
        raise failure

    def _abandoned(self, request: LLMRequest, sent: LLMRequest, model: str | None, delivered: str) -> None:
        """The call was sent (as ``sent``, :func:`own_request`) and this bound abandoned it: it is billed.  What a
        layer inside noted as the cancellation passed through it is kept (it knows more: a hedge's copies, a batch's
        price, or that its request was never sent); else the prompt, and a stream's ``delivered`` text, at an
        estimate.  Only this call's inner layers noted against ``sent``: a note left against ``request`` (an
        earlier call's, a sibling's) is not taken for theirs, and stays, with this call's added to it."""
        noted = pop_cut_short(sent)
        keep_abandoned(request, noted if noted is not None else (
            estimated_cut_short(self._inner, request, model, delivered),))

    def stream(self, request: LLMRequest) -> StreamContext:
        """The inner provider's stream under the bounds (see :func:`with_timeout`).

        A failure before the first event that is not a ``ProviderError`` is raised classified; one after it is a
        :class:`~agentactors.errors.StreamInterruptedError`, with or without a bound (a ``with_timeout`` with
        none relays the stream through the same path, so it keeps that promise too).

        Cancellation: a cancellation from outside propagates unchanged (the inner stream closed with it), even
        when it comes at the instant a bound expires; only this decorator's own expiry becomes
        ``ProviderTimeout`` (or ``StreamInterruptedError`` after the first event).
        """
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: LLMRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        model = model_of(self._inner, request)
        guard = _StreamGuard(self, anyio.current_time())
        acc = StreamAccumulator()
        sent = own_request(request)
        opened = False
        failure: ProviderError | None = None
        inner: object = UNOPENED
        try:
            # One scope spans the whole stream (entered before the inner stream, left after it, so scopes
            # nest properly); its deadline moves between the attempt, first-event and idle bounds.
            with guard.scope:
                inner = stream_of(self._inner, sent)
                async with inner as inner_events:
                    opened = True  # from here on, an exception may be the consumer's own: never classified
                    # Sent and answered: until the consumer asks for the first event, the time is its own.
                    guard.pause_first_event(anyio.current_time())
                    events = guard.watch(inner_events, acc, model)
                    try:
                        yield events
                    finally:
                        await events.aclose()
                    # The consumer is done: closing the inner stream is not bounded by the attempt any more.
                    guard.finish()
            if guard.scope.cancelled_caught:
                self._abandoned(request, sent, model, acc.text)
                error = self._timeout(model, guard.what, guard.seconds)
                if acc.events_seen:
                    raise interrupted(error, provider=self.name, model=model, partial_text=acc.text) from error
                raise error
        except ProviderError:
            raise
        except Exception as exc:
            if opened:
                raise
            # the inner stream failed to open (or stream() returned no async context manager: named)
            failure = not_a_context_manager(inner, exc, provider=name_of(self._inner), model=model) or \
                as_provider_error(exc, self._inner, model)
        finally:
            hand_on(sent, request)
        if failure is not None:
            raise failure


class _StreamGuard:
    """The moving deadline of one stream, and which bound it currently stands for.

    The first-event bound runs while the stream is being opened (the request
    sent, the answer's headers awaited) and again once the consumer asks for
    the first event, with what was left of it; the consumer's time in between
    is not the vendor's.  The idle bound starts each time the consumer asks for
    the next event.  The attempt bound runs throughout.
    """

    __slots__ = ("attempt_deadline", "first_event_left", "owner", "scope", "seconds", "started", "what")

    def __init__(self, owner: TimeoutProvider, start: float) -> None:
        self.owner = owner
        self.started = start
        self.attempt_deadline = start + owner.attempt if owner.attempt is not None else math.inf
        self.first_event_left = owner.first_event
        self.scope = anyio.CancelScope()
        self.what = "the stream"
        self.seconds = owner.attempt or 0.0
        self._bound(start, owner.first_event, "the first event")

    def _bound(self, now: float, left: float | None, what: str, seconds: float | None = None) -> None:
        # The nearer of the attempt deadline and this bound (``left`` seconds from now); remember which one
        # it is and its full length (``seconds``, default ``left``) for the message.
        if left is not None and now + left < self.attempt_deadline:
            self.scope.deadline = now + left
            self.what, self.seconds = what, seconds if seconds is not None else left
        else:
            self.scope.deadline = self.attempt_deadline
            self.what, self.seconds = "the stream", self.owner.attempt or 0.0

    def pause_first_event(self, now: float) -> None:
        """The stream is open: stop the first-event clock until the consumer asks for the first event."""
        if self.first_event_left is not None:
            self.first_event_left = max(0.0, self.first_event_left - (now - self.started))
        self._bound(now, None, "")

    def finish(self) -> None:
        self.scope.deadline = math.inf

    async def watch(
        self, inner: AsyncIterator[StreamEvent], acc: StreamAccumulator, model: str | None
    ) -> AsyncGenerator[StreamEvent, None]:
        """Relay ``inner``: the rest of the first-event bound for the first, the idle bound for each later one."""
        while True:
            if acc.events_seen:
                self._bound(anyio.current_time(), self.owner.idle, "waiting for the next event")
            else:
                self._bound(anyio.current_time(), self.first_event_left, "the first event", self.owner.first_event)
            error: ProviderError | None = None
            try:
                event = await inner.__anext__()
            except StopAsyncIteration:
                if acc.events_seen:
                    return
                # The contract promises at least a StreamEnd: as every decorator says of a stream without an event
                # (streams.open_stream), a malformed answer (transient: retried, failed over).
                error = MalformedResponseError(
                    "the stream ended before its first event", provider=name_of(self.owner.inner), model=model
                )
            except Exception as exc:
                if not acc.events_seen:
                    if isinstance(exc, ProviderError):
                        raise
                    # A foreign exception before the first event is classified, as every decorator raises it; the
                    # AttributeError of a context manager's value that is no async iterator names the member.
                    error = not_an_iterator(inner, exc, provider=name_of(self.owner.inner), model=model) or \
                        as_provider_error(exc, self.owner.inner, model)
                else:
                    error = cut_short(exc, provider=self.owner.inner, model=model, partial_text=acc.text)
            if error is not None:  # raised here: in the except block, exc would be its __context__
                raise error
            # Time the consumer spends on an event is not idleness of the vendor.
            self._bound(anyio.current_time(), None, "")
            acc.add(event)
            yield event


def with_timeout(
    provider: LLMProvider | Any,
    *,
    attempt: float | None = None,
    first_event: float | None = None,
    idle: float | None = None,
) -> TimeoutProvider:
    """Bound how long ``provider`` may take, raising :class:`~agentactors.errors.ProviderTimeout` (transient).

    * ``attempt`` bounds one ``complete()`` call and a whole stream (from
      opening it to leaving its ``async with`` block, the consumer's time
      included).
    * ``first_event`` bounds the wait for a stream's first event (the time to
      first token): opening the stream, then the wait once the consumer asks
      for the first event; ``idle`` bounds the wait for each later event, from
      the moment the consumer asks for it.  The consumer's own time (before
      its first read, and between events) counts against neither.
    * A bound that expires before the first event raises ``ProviderTimeout``,
      which ``with_retry`` retries, ``with_fallback`` moves on and a breaker
      counts; one that expires after it raises
      :class:`~agentactors.errors.StreamInterruptedError` (its cause is the
      ``ProviderTimeout``), which nobody replays.
    * Each bound is ``None`` (no bound) or a positive, finite number of seconds;
      a bool, a string, NaN or infinity is a ``ValueError`` naming the setting.
    * A failure of the inner provider that is not a ``ProviderError`` (a vendor
      SDK's own exception) is raised classified, as every decorator raises it
      (:func:`~agentactors.providers.classify_exception`: an unknown one is a
      request fault); after a stream's first event it is a
      ``StreamInterruptedError`` — with or without a bound.  A stream that ends
      before its first event is a
      :class:`~agentactors.errors.MalformedResponseError` (transient), as every
      decorator says of one.
    * Built on anyio cancel scopes: the timed-out call is cancelled, and only
      this decorator's own cancellation is turned into ``ProviderTimeout`` — a
      cancellation from outside (the caller's scope, a task group) propagates
      unchanged, even when both happen at once.
    * A call it gives up on was sent, and the vendor bills it: it is charged as
      a call cut short (its prompt, a stream's delivered text, at an estimate;
      what a layer inside noted wins) — on the answer of the ``with_retry``
      around, or noted for the run when the call fails (``docs/costs.md``).
      Each such call is charged once, also when calls share one request
      object (a fan-out of the caller's own): the layers inside are sent a
      copy of the request, so a note left against it, or a sibling's, is
      never taken for theirs.

    Put it innermost (``with_retry(with_timeout(p, attempt=60))``) so that each
    attempt gets its own bound; outside ``with_retry`` it bounds all attempts
    and their waits together.
    """
    return TimeoutProvider(provider, attempt=attempt, first_event=first_event, idle=idle)
