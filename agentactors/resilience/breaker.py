"""``with_circuit_breaker``: stop calling a vendor that is failing, and find out cheaply when it is back.

Only vendor faults count.  A request fault (a 400, an
``UnsupportedToolChoiceError`` raised before sending), an account, context or
content-policy error, a cancellation or an inner breaker's refusal is
*ignored*: neither a success nor a failure, and it gives a half-open permit
back.  Counting such an error as a success — as resilience4j, Polly and
pybreaker do — can close a half-open breaker on a 400; we don't.

The state machine lives in :mod:`._circuit` and runs on the injected clock,
lazily, with no background task.  An admitted call carries its permit down the
stack (:mod:`._gate`), so a retry below the breaker sends no further attempt
once the circuit has opened: the breaker's "no calls while open" holds for
every request, not only for the calls it admits.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import asynccontextmanager
from typing import Any, Final, TypeVar

import attrs

import agentactors.resilience._gate as _gate

from ..errors import CircuitOpenError, ErrorKind, MalformedResponseError, ProviderError
from ..events import emit
from ..messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent
from ..providers.port import LLMProvider, StreamContext, broken_contract, name_of
from ._checks import check_callable, check_flag
from ._circuit import BreakerPolicy, Circuit, CircuitState, CircuitStats, Outcome, Permit
from .decorator import Clock, ProviderDecorator, as_provider_error, default_clock, model_of
from .streams import open_stream, relay, stream_of

__all__ = ["CircuitBreakerProvider", "CircuitState", "CircuitStats", "with_circuit_breaker"]

T = TypeVar("T")
KeyFunc = Callable[[str, str | None], Hashable]
# At most one breaker.rejected event per key per this many seconds of the clock (each carries a count).
_REJECTION_SAMPLE = 1.0


class CircuitBreakerProvider(ProviderDecorator):
    """The provider :func:`with_circuit_breaker` returns.  See there for the semantics.

    ``state`` / ``state_for(model)`` read a circuit's state; ``stats_for(model)``
    its counters; ``force_open()``, ``disable()`` and ``reset()`` override it.
    """

    def __init__(
        self,
        inner: LLMProvider | Any,
        *,
        policy: BreakerPolicy,
        count_mid_stream: bool,
        key: KeyFunc | None,
        clock: Clock | None,
    ) -> None:
        super().__init__(inner)
        # Else a TypeError from the first call's key_for() or clock(), classified as that call's failure.
        check_flag(count_mid_stream, "count_mid_stream")
        check_callable(key, "key", "a callable key(provider_name, model) -> hashable")
        check_callable(clock, "clock", "a callable returning seconds")
        self.policy = policy
        self.count_mid_stream = count_mid_stream
        self._key_fn = key
        self._clock: Clock = clock or default_clock
        # The clock as the circuits see it: never going back (see _now).
        self._last_now = -math.inf
        self._skew = 0.0
        self._circuits: dict[Hashable, Circuit] = {}
        self._override: CircuitState | None = None

    # -- inspection and manual control ------------------------------------------------------------

    def key_for(self, model: str | None) -> Hashable:
        """The circuit key of calls to ``model``: ``(provider name, model)`` unless ``key=`` says otherwise.

        ``None`` means the provider's default model, as it does in a request.
        """
        model = model or self.default_model
        return self._key_fn(self.name, model) if self._key_fn is not None else (self.name, model)

    @property
    def state(self) -> CircuitState:
        """The state of the circuit for the provider's default model."""
        return self.state_for(self.default_model)

    def state_for(self, model: str | None) -> CircuitState:
        """The state a call to ``model`` would find now (reading changes nothing)."""
        if self._override is not None:
            return self._override
        circuit = self._circuits.get(self.key_for(model))
        if circuit is None:
            return CircuitState.closed
        now = self._now_or_none()
        return circuit.state if now is None else circuit.state_at(now)

    def stats_for(self, model: str | None = None) -> CircuitStats:
        """Counters and state of the circuit for ``model`` (default: the provider's default model)."""
        key = self.key_for(model)
        circuit = self._circuits.get(key)
        now = self._now_or_none() or 0.0
        stats = circuit.stats(now) if circuit is not None else CircuitStats(key=key, state=CircuitState.closed)
        if self._override is not None:
            stats = attrs.evolve(stats, state=self._override)
        return stats

    def force_open(self) -> None:
        """Refuse every call (all keys) until :meth:`reset`; refusals carry ``retry_after=None``."""
        self._set_override(CircuitState.forced_open)

    def disable(self) -> None:
        """Admit every call (all keys) and count nothing, until :meth:`reset`."""
        self._set_override(CircuitState.disabled)

    def reset(self) -> None:
        """Back to closed with empty counters, for every key; clears :meth:`force_open` / :meth:`disable`."""
        before = self.state
        self._override = None
        circuits, self._circuits = self._circuits, {}
        for circuit in circuits.values():
            if circuit.state is not CircuitState.closed:
                self._state_changed(circuit, circuit.state, CircuitState.closed, "reset")
        if before in (CircuitState.forced_open, CircuitState.disabled):
            emit("breaker.state_changed", key=None, from_state=before, to_state=CircuitState.closed, reason="reset")

    def _set_override(self, state: CircuitState) -> None:
        before = self.state
        self._override = state
        if before is not state:
            emit("breaker.state_changed", key=None, from_state=before, to_state=state, reason="manual")

    def _now(self) -> float:
        """The clock, made monotonic: time that goes back is taken as standing still.

        A breaker outlives event loops (a module-level provider, a script that calls ``anyio.run`` twice),
        and each trio loop's clock starts at its own random offset (10,000 to 200,000 s): one that starts
        behind the last would keep an open circuit open for the difference — hours.  The real time between
        the two readings is unknown, so none is assumed: an open circuit keeps the open time it had left,
        a probe its remaining wait, the rolling window its counts.  A clock that jumps ahead (a later
        loop's) only makes time pass, which every transition already handles.
        """
        now = self._clock() + self._skew
        if now < self._last_now:
            self._skew += self._last_now - now
            now = self._last_now
        self._last_now = now
        return now

    def _now_or_none(self) -> float | None:
        try:
            return self._now()
        except Exception:  # the default clock outside an event loop: report the stored state
            return None

    # -- admission and settlement -----------------------------------------------------------------

    def _circuit(self, model: str | None) -> Circuit:
        key = self.key_for(model)
        circuit = self._circuits.get(key)
        if circuit is None:
            circuit = self._circuits[key] = Circuit(key, self.policy, self._state_changed)
        return circuit

    def _state_changed(self, circuit: Circuit, before: CircuitState, after: CircuitState, reason: str) -> None:
        # Refusals not yet reported are reported now, so the counts of breaker.rejected add up.
        if circuit.rejected_since_event:
            emit(
                "breaker.rejected", key=circuit.key, count=circuit.rejected_since_event, retry_after=None, state=before
            )
        circuit.rejection_event_at = None
        circuit.rejected_since_event = 0
        emit("breaker.state_changed", key=circuit.key, from_state=before, to_state=after, reason=reason)

    def _admit(self, model: str | None) -> tuple[Circuit, Permit] | None:
        """A permit for one call (``None`` when disabled), or :class:`CircuitOpenError` — no inner call."""
        if self._override is CircuitState.disabled:
            return None
        circuit = self._circuit(model)
        now = self._now()
        got = None if self._override is CircuitState.forced_open else circuit.admit(now)
        if isinstance(got, Permit):
            return circuit, got
        # Refused: sampled reporting (a storm of refusals must not become a storm of events).
        circuit.rejected_since_event += 1
        last = circuit.rejection_event_at
        if last is None or now - last >= _REJECTION_SAMPLE:
            emit(
                "breaker.rejected",
                key=circuit.key,
                count=circuit.rejected_since_event,
                retry_after=got,
                state=self._override or circuit.state,
            )
            circuit.rejection_event_at = now
            circuit.rejected_since_event = 0
        raise CircuitOpenError(provider=self.name, model=model, retry_after=got, last_error=circuit.last_error)

    def _settle(self, ticket: tuple[Circuit, Permit] | None, failure: BaseException | None) -> None:
        """Tell the circuit how the call ended: ``None`` is a success; ``failure`` is classified."""
        if ticket is None:
            return
        circuit, permit = ticket
        error: ProviderError | None = None
        if failure is None:
            outcome = Outcome.success
        elif isinstance(failure, ProviderError) and failure.kind is ErrorKind.transient:
            outcome, error = Outcome.failure, failure
        else:
            outcome = Outcome.ignored
        if permit.settled:
            return
        circuit.record(permit, outcome, self._now(), error)
        if outcome is Outcome.ignored:
            if isinstance(failure, ProviderError):
                kind = failure.kind.value
            else:  # not the vendor's doing: a cancellation, or the stream consumer's own error
                kind = "consumer_error" if isinstance(failure, Exception) else "cancelled"
            emit("breaker.ignored", key=circuit.key, kind=kind)

    def _refusal(self, model: str | None, permit: Permit | None) -> str | None:
        """Why a call admitted with ``permit`` may not send another attempt now (see :class:`_Admission`)."""
        override = self._override
        if override is CircuitState.disabled:
            return None
        key = self.key_for(model)
        if override is CircuitState.forced_open:
            return f"the circuit breaker for {key!r} was forced open"
        # Looked up again rather than remembered: after reset() the key's circuit is a new, closed one.
        circuit = self._circuits.get(key)
        if circuit is None:
            return None
        now = self._now()
        if circuit.still_admits(permit, now):
            return None
        state = circuit.state_at(now)
        if state is CircuitState.half_open:
            return f"the circuit breaker for {key!r} is half-open and this call holds no probe permit"
        return f"the circuit breaker for {key!r} opened"

    async def _send(
        self, ticket: tuple[Circuit, Permit] | None, model: str | None, send: Callable[[], Awaitable[T]]
    ) -> T:
        """Run an admitted call's send under its gate (see :mod:`._gate`); a failure settles its ticket.

        A vendor failure is raised as the classified ``ProviderError``; cancellation (or an interpreter
        exit) says nothing about the vendor and only gives the permit back.  The classified error is raised
        after the ``except`` block, not in it: raised there, a foreign exception (whose text may hold a
        credential; the classified error's cause is its scrubbed stand-in) would ride along as its
        ``__context__``.
        """
        gate = _gate.enter(_Admission(self, model, ticket[1] if ticket is not None else None))
        try:
            result = await send()
        except Exception as exc:
            failure = as_provider_error(exc, self._inner, model)
            self._settle(ticket, failure)
        except BaseException as exc:
            self._settle(ticket, exc)
            raise
        else:
            return result
        finally:
            _gate.leave(gate)
        raise failure

    # -- the port ---------------------------------------------------------------------------------

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The inner provider's answer if the circuit admits the call, else :class:`CircuitOpenError` at once.

        Cancellation: re-raised unchanged and never counted — neither success nor failure
        (``breaker.ignored`` with kind ``cancelled``); a half-open probe permit the call held is given back.
        """
        model = model_of(self._inner, request)
        ticket = self._admit(model)
        response: object = await self._send(ticket, model, lambda: self._inner.complete(request))
        if type(response) is not LLMResponse and not isinstance(response, LLMResponse):
            # A non-answer (a custom provider's None, str, dict) is the member's failure, counted, not a success.
            broken = broken_contract("the answer of complete()", response, "an LLMResponse",
                                     provider=name_of(self._inner), model=model)
            self._settle(ticket, broken)
            raise broken
        self._settle(ticket, None)
        return response

    def stream(self, request: LLMRequest) -> StreamContext:
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: LLMRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        model = model_of(self._inner, request)
        ticket = self._admit(model)
        # The gate covers opening the stream only (all a retry below may repeat), and is left before the
        # yield: the consumer's block runs in the same context and must not inherit it.
        opened = await self._send(
            ticket, model, lambda: open_stream(lambda: stream_of(self._inner, request), provider=self.name, model=model)
        )
        if not self.count_mid_stream:
            # The vendor answered; what happens after the first event is not counted.
            self._settle(ticket, None)
        inner_failures: list[BaseException] = []
        end = _EndWatch() if self.count_mid_stream else None
        try:
            async with opened.stack:
                events = relay(opened, provider=self._inner, model=model, on_failure=inner_failures.append,
                               transform=end.see if end is not None else None,
                               on_end=end.ended if end is not None else None)
                try:
                    yield events
                finally:
                    await events.aclose()
        except BaseException as exc:
            # The inner stream's own failure if it had one; else what ended the block (an inner timeout
            # raised as the stream closed, the consumer's error, a cancellation): _settle classifies it.
            self._settle(ticket, inner_failures[0] if inner_failures else exc)
            raise
        self._settle(ticket, end.broken(name_of(self._inner), model) if end is not None else None)


class _EndWatch:
    """What a stream counted mid-stream ended with: a ``StreamEnd`` carrying an answer, a ``StreamEnd`` carrying
    something else, or none at all — the last two a provider that answered nothing (the run fails naming it), so
    the breaker counts them failures as it counts ``complete()``'s non-answer.  Only for ``count_mid_stream=True``
    (one check per event, which the default's streams do not pay)."""

    __slots__ = ("answer", "over")

    def __init__(self) -> None:
        self.answer: object = _NOT_SEEN
        self.over = False  # the inner stream ended (its consumer may have stopped reading before)

    def see(self, event: StreamEvent) -> StreamEvent:
        if self.answer is _NOT_SEEN and isinstance(event, StreamEnd):
            self.answer = event.response
        return event

    def ended(self) -> None:
        self.over = True

    def broken(self, provider: str, model: str | None) -> MalformedResponseError | None:
        """The failure to count, or ``None``: a stream its consumer left before the end is no provider's fault."""
        answer = self.answer
        if answer is _NOT_SEEN:
            if not self.over:
                return None
            return MalformedResponseError("the stream ended without its final StreamEnd event", provider=provider,
                                          model=model)
        if isinstance(answer, LLMResponse):
            return None
        return broken_contract("the StreamEnd's response", answer, "an LLMResponse", provider=provider, model=model)


_NOT_SEEN: Final = object()


class _Admission:
    """The send gate of one admitted call (see :mod:`._gate`): its breaker, model and permit."""

    __slots__ = ("breaker", "model", "permit")

    def __init__(self, breaker: CircuitBreakerProvider, model: str | None, permit: Permit | None) -> None:
        self.breaker = breaker
        self.model = model
        self.permit = permit

    def refusal(self) -> str | None:
        return self.breaker._refusal(self.model, self.permit)

    def hedgeable(self) -> bool:
        # Half-open admits its probes only (half_open_max_calls concurrent requests): a hedge below would send a
        # probe twice; open or forced open, nothing at all.
        return self.breaker.state_for(self.model) in (CircuitState.closed, CircuitState.disabled)


def with_circuit_breaker(
    provider: LLMProvider | Any,
    *,
    window: float = 60.0,
    min_calls: int = 10,
    failure_rate: float = 0.5,
    consecutive_failures: int | None = 5,
    open_duration: float = 30.0,
    max_open_duration: float = 300.0,
    half_open_max_calls: int = 1,
    half_open_successes: int = 1,
    max_half_open_wait: float = 60.0,
    count_mid_stream: bool = False,
    key: KeyFunc | None = None,
    clock: Clock | None = None,
) -> CircuitBreakerProvider:
    """Wrap ``provider`` in a circuit breaker (closed → open → half-open → closed).

    * **Trips** when, over the rolling ``window`` (seconds, in 10 buckets), at
      least ``min_calls`` outcomes were counted and the failure share reached
      ``failure_rate`` — checked after every counted outcome, successes
      included — or after ``consecutive_failures`` failures in a row regardless
      of volume (``None`` turns that rule off).
    * **Counts** transient failures as failures and successes as successes;
      every other outcome (request, account, context, content_policy,
      circuit_open, cancellation) is ignored and gives a half-open permit back.
    * **Open** for ``open_duration``, doubled after each failed probe up to
      ``max_open_duration``; an error's ``retry_after`` (a 429's) opens it for
      ``max(open_duration, retry_after)``, also capped.  A refused call raises
      :class:`~agentactors.errors.CircuitOpenError` (``retry_after`` = seconds
      until a probe may pass, ``last_error`` = what opened it) without calling
      the inner provider.
    * **Half-open** admits ``half_open_max_calls`` concurrent probes and closes
      after ``half_open_successes`` successful ones; a probe that has not
      answered after ``max_half_open_wait`` frees its permit, and its late
      outcome is ignored.
    * **Keyed** by ``(provider name, model)`` so one bad model does not open the
      breaker for its siblings; ``key(provider_name, model) -> hashable``
      overrides that (``key=lambda p, m: p`` for one circuit per provider).
    * **Streams**: a failure before the first event is classified as usual and
      the first event counts as the success; a failure after it is not counted
      unless ``count_mid_stream=True`` (then the outcome is taken when the
      stream ends: a stream that ended with no answer — no ``StreamEnd``, or
      one carrying no ``LLMResponse`` — is a failure; one its consumer stopped
      reading early is not).
    * **Admitted calls carry their permit down**: while the inner call runs, a
      :func:`~agentactors.resilience.with_retry` below this breaker asks it
      before every attempt after the first, and sends none once the circuit
      has opened (or was forced open) since the call was admitted — nor, in a
      half-open circuit, for a call that is not its live probe.  So no attempt
      is sent to a member whose breaker opened while the call was retrying.  A
      :func:`~agentactors.resilience.with_fallback` or
      :func:`~agentactors.resilience.with_pool` below asks it too before moving
      a call to its next member.
    * Transitions are computed from ``clock`` (default ``anyio.current_time``)
      on each call: no background task, no ``await`` inside a state change, so
      one breaker can be shared by every agent of an event loop without a lock.
      A clock that goes back (the next event loop's: trio's clocks start at
      random offsets) is taken as standing still, so a breaker that outlives
      its loop is never stuck open for the difference.
    * Errors that are not a ``ProviderError`` are classified and raised as the
      classified ``ProviderError``; cancellation is re-raised unchanged.

    Events: ``breaker.state_changed(key, from_state, to_state, reason)``,
    ``breaker.rejected(key, count, retry_after)`` (the first refusal, then at
    most one per second of clock per key, ``count`` refusals since the last),
    ``breaker.ignored(key, kind)``.
    """
    policy = BreakerPolicy(
        window=window,
        min_calls=min_calls,
        failure_rate=failure_rate,
        consecutive_failures=consecutive_failures,
        open_duration=open_duration,
        max_open_duration=max_open_duration,
        half_open_max_calls=half_open_max_calls,
        half_open_successes=half_open_successes,
        max_half_open_wait=max_half_open_wait,
    )
    return CircuitBreakerProvider(provider, policy=policy, count_mid_stream=count_mid_stream, key=key, clock=clock)
