"""``with_retry``: ask again when asking again can help, and only then.

The decision comes from the error taxonomy alone (``ProviderError.retryable``,
``retry_after``); tenacity is the engine that sequences attempts and waits.
tenacity's own clock is the real monotonic one, so the deadline is computed
here on the injected clock, and the attempt loop is ours: tenacity's loops
catch ``BaseException``, which would route cancellation through a retry
predicate instead of letting it go at once.  Before each resend it asks the
circuit breakers above it (:mod:`._gate`) whether the call they admitted may
still send: a breaker that opened during the backoff stops the retry.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

import agentactors.resilience._gate as _gate

from ..errors import CircuitOpenError, ErrorKind, ProviderError, StreamInterruptedError
from ..events import emit
from ..gateway import ticket as run_ticket
from ..gateway.provider import estimated_cut_short
from ..messages import LLMRequest, LLMResponse, StreamEvent
from ..pricing import CutShort, add_cut_short, pop_cut_short, with_cut_short
from ..providers.port import LLMProvider, StreamContext, broken_contract, name_of
from ._checks import check_callable, check_predicate
from ._numbers import is_number, whole
from .decorator import Clock, ProviderDecorator, as_provider_error, default_clock, model_of
from .streams import Carried, OpenedStream, open_stream, relay, stream_of
from .timeout import abandoned_attempts, hand_on, keep_abandoned, own_request

if TYPE_CHECKING:
    import random

    from tenacity import RetryCallState

__all__ = ["RetryingProvider", "with_retry"]

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[Any]]


class RetryingProvider(ProviderDecorator):
    """The provider :func:`with_retry` returns.  See there for the semantics."""

    def __init__(
        self,
        inner: LLMProvider | Any,
        *,
        max_attempts: int,
        base_delay: float,
        multiplier: float,
        max_delay: float,
        jitter: tuple[float, float],
        max_retry_after: float,
        deadline: float | None,
        retry_on: Callable[[ProviderError], bool] | None,
        clock: Clock | None,
        sleep: Sleep | None,
        rng: random.Random | None,
    ) -> None:
        super().__init__(inner)
        # A whole number: NaN compares false with every attempt number (the retry would never stop), and
        # infinity would retry a vendor that keeps failing for ever.
        attempts = whole(max_attempts)
        if attempts is None or attempts < 1:
            raise ValueError(f"max_attempts must be an integer >= 1, not {max_attempts!r}")
        # Numbers, not bools or strings; finite, as an infinite delay, multiplier or jitter makes a wait infinite
        # (a hang).  max_retry_after may be infinite (honour any Retry-After): an infinite Retry-After is never
        # waited for.  Each a ValueError naming its setting.
        # `not x >= 0` rather than `x < 0`: NaN compares false with everything and would pass a `<` check.
        for setting, value, least in (("base_delay", base_delay, 0), ("max_delay", max_delay, 0),
                                      ("multiplier", multiplier, 1)):
            if not is_number(value) or not math.isfinite(value) or not value >= least:
                raise ValueError(f"{setting} must be a finite number >= {least}, not {value!r}")
        # A wait is min(max_delay, base_delay * ...): with base_delay above max_delay every wait would be
        # max_delay, and the base_delay asked for never used.
        if base_delay > max_delay:
            raise ValueError(f"base_delay ({base_delay!r}) must be <= max_delay ({max_delay!r}) (every wait would be "
                             "max_delay); for no waits at all, say base_delay=0")
        lo, hi = _jitter(jitter)
        if not is_number(max_retry_after) or not max_retry_after >= 0:
            raise ValueError(f"max_retry_after must be a number >= 0, not {max_retry_after!r}")
        # A NaN deadline would compare false with every time: it would never stop a retry.
        if deadline is not None and (not is_number(deadline) or not deadline > 0):
            raise ValueError(f"deadline must be positive (seconds) or None, not {deadline!r}")
        # Not callable: the first failure's retry_on(error) raised a TypeError, which became the call's error in
        # place of the vendor's.  Each a TypeError here instead of in the first call.
        check_predicate(retry_on, "retry_on", "a callable retry_on(error) -> bool")
        check_callable(clock, "clock", "a callable returning seconds")
        check_callable(sleep, "sleep", "an async callable sleep(seconds)")
        if rng is not None and not callable(getattr(rng, "uniform", None)):
            raise TypeError(f"rng must be a random.Random (with uniform()) or None, not {type(rng).__name__}")
        self.max_attempts = attempts
        self.base_delay = float(base_delay)
        self.multiplier = float(multiplier)
        self.max_delay = float(max_delay)
        self.jitter = (lo, hi)
        self.max_retry_after = float(max_retry_after)
        self.deadline = deadline
        self.retry_on = retry_on
        self._clock: Clock = clock or default_clock
        self._sleep: Sleep = sleep or anyio.sleep
        if rng is None:
            import random  # (here, when a retrying provider is made: not with the package)

            rng = random.Random()
        self._rng = rng

    # -- the port ---------------------------------------------------------------------------------

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The inner provider's answer, asked again while asking again can help (see :func:`with_retry`).

        Cancellation: re-raised at once, unchanged — no further attempt, no wait (cancelled during a backoff, the
        wait ends there).  Attempts a ``with_timeout`` inside abandoned before it go to the layer around that
        collects them, else are noted for the run, with the attempt in flight when one was.
        """
        flight = _InFlight(request)
        collecting = abandoned_attempts()
        try:
            with collecting as abandoned:
                response = await self._attempts(self._inner.complete, request, abandoned, flight)
                if type(response) is not LLMResponse and not isinstance(response, LLMResponse):
                    # The member's broken contract, named here for whoever called this layer — a caller of the
                    # decorator itself has no run's step to name it (docs/resilience.md); not retried (its code
                    # answers the same).  Attempts abandoned before it are noted as for a call that failed.
                    raise broken_contract("the answer of complete()", response, "an LLMResponse",
                                          provider=name_of(self._inner), model=model_of(self._inner, request))
        except BaseException as exc:
            if collecting.ledger:  # (nearly always empty: one test of a list)
                self._note(request, flight, collecting.ledger, exc, "", sending=flight.sending)
            raise
        hand_on(flight.sent, request)  # (nothing when the attempt that answered was sent the request itself)
        # Attempts a with_timeout inside gave up on were sent, and are billed: they ride on the answer.
        return with_cut_short(response, abandoned) if abandoned else response

    def stream(self, request: LLMRequest) -> StreamContext:
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: LLMRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        model = model_of(self._inner, request)

        async def attempt(sent: LLMRequest) -> OpenedStream:
            return await open_stream(lambda: stream_of(self._inner, sent), provider=self.name, model=model)

        # Only opening the stream and reading its first event is retried: nothing reached the consumer yet.
        flight = _InFlight(request)
        collecting = abandoned_attempts()
        try:
            with collecting as abandoned:
                opened = await self._attempts(attempt, request, abandoned, flight)
        except BaseException as exc:
            if collecting.ledger:
                self._note(request, flight, collecting.ledger, exc, "", sending=flight.sending)
            raise
        if not abandoned:  # (then the attempt was sent the request itself: nothing to hand on)
            async with opened.stack:
                events = relay(opened, provider=self._inner, model=model)
                try:
                    yield events
                finally:
                    await events.aclose()
            return
        # Attempts abandoned before this one ride on its end; if it never gets there — the stream failed or was
        # cancelled, or the consumer left it before its end without an exception (it broke out, closed it; the
        # stream ended without its StreamEnd) — they go to the layer around that collects them, else are noted for
        # the run (a run then fails, and takes the note).  With
        # them the attempt in flight, when the stream was cancelled or left alive (as the cancellation path notes
        # it: this note is the one kept, a ProviderActor around adds nothing to it); not one that failed or
        # ended without its StreamEnd (a failure, as for a call that failed).
        carried = Carried(relay(opened, provider=self._inner, model=model), abandoned)
        try:
            async with opened.stack:
                try:
                    yield carried.events
                finally:
                    await carried.aclose()
        except BaseException as exc:
            if carried.abandoned:
                self._note(request, flight, carried.abandoned, exc, carried.acc.text, left=not carried.over)
            hand_on(flight.sent, request)
            raise
        if carried.abandoned:
            self._note(request, flight, carried.abandoned, None, carried.acc.text, left=not carried.over)
        hand_on(flight.sent, request)

    # -- the loop ---------------------------------------------------------------------------------

    def delay_for(self, attempt: int, error: ProviderError) -> float:
        """The wait after failed attempt number ``attempt`` (1-based): Retry-After, or jittered backoff."""
        ra = error.retry_after
        if ra is not None and 0 < ra <= self.max_retry_after and math.isfinite(ra):
            return ra
        return self.backoff(attempt) * self._rng.uniform(*self.jitter)

    def backoff(self, attempt: int) -> float:
        """``min(max_delay, base_delay * multiplier**(attempt-1))``, before jitter; never an overflow.

        ``2.0 ** 1024`` overflows a float (``OverflowError``): a long retry is capped, not broken.
        """
        if self.base_delay == 0:
            return 0.0
        try:
            growth = self.multiplier ** (attempt - 1)
        except OverflowError:
            return self.max_delay
        return min(self.max_delay, self.base_delay * growth)

    def refusal(self, error: ProviderError) -> tuple[str, bool] | None:
        """``None`` when ``error`` may be retried; else (why not, whether it was retryable but declined)."""
        if isinstance(error, CircuitOpenError):
            return "circuit open (its retry_after says when)", False
        if isinstance(error, StreamInterruptedError):
            return "the stream had started", False
        if error.kind is ErrorKind.request:
            return "request error", False
        wanted = self.retry_on(error) if self.retry_on is not None else error.retryable
        if not wanted:
            return "not retryable", False
        ra = error.retry_after
        # An infinite Retry-After ("inf", "1e999") is never waited for, even with max_retry_after=inf.
        if ra is not None and (ra > self.max_retry_after or math.isinf(ra)):
            return f"retry-after {ra:g}s exceeds max_retry_after {self.max_retry_after:g}s", True
        return None

    def _note(self, request: LLMRequest, flight: _InFlight, abandoned: list[CutShort], exc: BaseException | None,
              delivered: str, *, sending: bool = True, left: bool = False) -> None:
        """The call ends without an answer (``exc``; ``None``: a stream left before its end), after attempts were
        abandoned.  Called outside the retry's own :func:`~.timeout.abandoned_attempts` block: the ``abandoned``
        attempts go to the layer around that collects them (a ``with_fallback`` puts them on the answer of the member
        that serves, a ``with_hedge`` charges them with its copies), else are noted for the run
        (:func:`~.timeout.keep_abandoned`) — charged once, whatever happens next.  Before, they were noted for the
        run alone: under a fallback whose next member answered, charged only if the run failed later.

        The attempt in flight is noted for the run when it was cancelled or (``left``) its stream was left by the
        consumer before its end — as the layers inside noted it, else at an estimate with the text it had
        ``delivered`` (the ProviderActor around keeps this note, and a hedge around takes it as its copy's), or as
        nothing billed when none was in flight (cancelled during a wait).  Added to what was noted against
        ``request`` before (a sibling's sharing the request object, an earlier call's): the layers inside noted
        against the attempt's own request (:class:`_InFlight`)."""
        keep_abandoned(request, abandoned)
        abandoned.clear()
        noted = pop_cut_short(flight.sent)
        if noted is None:
            if not (left or isinstance(exc, anyio.get_cancelled_exc_class())):
                return  # failed: charged as a call that failed is
            noted = (estimated_cut_short(self._inner, request, model_of(self._inner, request), delivered),
                     ) if sending else ()
        add_cut_short(request, noted)

    async def _attempts(
        self, attempt: Callable[[LLMRequest], Awaitable[T]], request: LLMRequest, abandoned: list[CutShort],
        flight: _InFlight,
    ) -> T:
        # Imported by the first call, not with the package: tenacity is ~10 ms of `import agentactors`.
        from tenacity import AsyncRetrying, DoAttempt, DoSleep, RetryCallState

        call = _Call(self, model_of(self._inner, request))
        retrying = AsyncRetrying(
            sleep=self._sleep,
            stop=call.stop,
            wait=call.wait,
            retry=call.retry,
            reraise=True,
        )
        retrying.begin()
        state = RetryCallState(retry_object=retrying, fn=None, args=(), kwargs={})
        while True:
            try:
                do = await retrying.iter(retry_state=state)
            except ProviderError as last:
                raise call.give_up(state, last)
            if isinstance(do, DoAttempt):
                if state.attempt_number > 1:
                    # Right before sending: a breaker above may have opened during the wait.
                    shut = _gate.refusal()
                    if shut is not None:
                        raise call.shut_out(shut, waited=True)
                # Once an attempt was abandoned, each is sent a request of its own: what its layers note is its
                # own (_note), told from a note of a sibling sharing the request.  The first is sent the request.
                flight.sent = own_request(request) if abandoned else request
                flight.sending = True
                try:
                    result = await attempt(flight.sent)
                except Exception as exc:
                    # Cancellation (a BaseException) is not caught: it leaves at once, no attempt follows.
                    flight.sending = False
                    hand_on(flight.sent, request)  # what the layers of a failed attempt noted
                    failure = as_provider_error(exc, self._inner, call.model)
                    state.set_exception((type(failure), failure, failure.__traceback__))
                else:
                    flight.sending = False
                    state.set_result(result)
            elif isinstance(do, DoSleep):
                # Not worth waiting for an attempt a breaker above already forbids: let a fallback serve now.
                shut = _gate.refusal()
                if shut is not None:
                    raise call.shut_out(shut, waited=False)
                call.scheduled(state)
                state.prepare_for_next_attempt()
                await retrying.sleep(float(do))  # type: ignore[misc]
            else:
                call.recovered(state)
                return do  # type: ignore[no-any-return]


class _InFlight:
    """The attempt of one call: the request it was sent (``sent``: the caller's, or once an attempt was abandoned,
    one of its own, :func:`~agentactors.resilience.timeout.own_request`) and whether it is in flight (``sending``:
    not a wait between two)."""

    __slots__ = ("sending", "sent")

    def __init__(self, request: LLMRequest) -> None:
        self.sent = request
        self.sending = False


class _Call:
    """The decisions of one call, made for tenacity on the injected clock."""

    __slots__ = ("exhausted", "model", "owner", "pending", "started", "verdict", "waits")

    def __init__(self, owner: RetryingProvider, model: str | None) -> None:
        self.owner = owner
        self.model = model
        self.started = owner._clock()
        # (error, delay) of every wait actually taken, in order.
        self.waits: list[tuple[ProviderError, float]] = []
        # The wait computed for the current failure: (attempt number, error, delay).
        self.pending: tuple[int, ProviderError, float] | None = None
        # Why the last failure was not retried, and whether it was a retryable one we stopped on.
        self.verdict = ""
        self.exhausted = False

    @staticmethod
    def _error(state: RetryCallState) -> ProviderError | None:
        outcome = state.outcome
        if outcome is None or not outcome.failed:
            return None
        exc = outcome.exception()
        return exc if isinstance(exc, ProviderError) else None

    def _delay(self, state: RetryCallState, error: ProviderError) -> float:
        # Computed once per failure, whichever of wait() and stop() tenacity asks first.
        if self.pending is None or self.pending[0] != state.attempt_number:
            self.pending = (state.attempt_number, error, self.owner.delay_for(state.attempt_number, error))
        return self.pending[2]

    def retry(self, state: RetryCallState) -> bool:
        error = self._error(state)
        if error is None:
            return False
        refusal = self.owner.refusal(error)
        if refusal is not None:
            self.verdict, self.exhausted = refusal
            return False
        return True

    def wait(self, state: RetryCallState) -> float:
        error = self._error(state)
        assert error is not None  # tenacity only waits after a failure it retries
        return self._delay(state, error)

    def stop(self, state: RetryCallState) -> bool:
        owner = self.owner
        if state.attempt_number >= owner.max_attempts:
            self.verdict, self.exhausted = f"all {owner.max_attempts} attempts made", True
            return True
        error = self._error(state)
        if error is None:
            return False
        if owner.deadline is not None:
            delay = self._delay(state, error)
            if owner._clock() + delay > self.started + owner.deadline:
                self.verdict = f"the next wait ({delay:.3g}s) would end past the {owner.deadline:g}s deadline"
                self.exhausted = True
                return True
        # The run's own deadline bounds the retry too (the earlier of the two wins): a wait that would end
        # past it is not started, so the caller (a fallback, the run) learns the vendor's error now.
        left = run_ticket.remaining()
        if left is not None:
            delay = self._delay(state, error)
            if delay > left:
                self.verdict = (
                    f"the next wait ({delay:.3g}s) would end past the run's deadline ({max(left, 0.0):.3g}s left)"
                )
                self.exhausted = True
                return True
        return False

    def scheduled(self, state: RetryCallState) -> None:
        assert self.pending is not None and self.pending[0] == state.attempt_number
        _, error, delay = self.pending
        self.waits.append((error, delay))
        emit(
            "retry.scheduled",
            provider=self.owner.name,
            model=self.model,
            attempt=state.attempt_number,
            delay=delay,
            error=error,
        )

    def recovered(self, state: RetryCallState) -> None:
        if state.attempt_number > 1:
            emit(
                "retry.recovered",
                provider=self.owner.name,
                model=self.model,
                attempts=state.attempt_number,
                elapsed=self.owner._clock() - self.started,
            )

    def give_up(self, state: RetryCallState, error: ProviderError) -> ProviderError:
        """Annotate the last error (one note per attempt) and report exhaustion; it is raised unwrapped."""
        attempts = state.attempt_number
        # A first-attempt error that was never retryable passes through untouched: retry was not involved.
        if attempts > 1 or self.exhausted:
            limit = self.owner.max_attempts
            for n, (err, delay) in enumerate(self.waits, start=1):
                error.add_note(f"retry: attempt {n}/{limit} failed: {_describe(err)}; waited {delay:.3g}s")
            error.add_note(f"retry: attempt {attempts}/{limit} failed: {_describe(error)}; not retried: {self.verdict}")
        if self.exhausted:
            emit(
                "retry.exhausted",
                provider=self.owner.name,
                model=self.model,
                attempts=attempts,
                error=error,
                reason=self.verdict,
            )
        return error

    def shut_out(self, why: str, *, waited: bool) -> ProviderError:
        """A breaker above closed its gate (``why``): annotate the last error and report; it is raised unwrapped.

        ``waited``: the wait after the last failure was taken (the check came
        right before the next attempt); otherwise it was not started.
        """
        limit = self.owner.max_attempts
        if waited:
            error, delay = self.waits[-1]
            earlier = self.waits[:-1]
            last = f"waited {delay:.3g}s, then not retried"
        else:
            assert self.pending is not None  # tenacity computed the wait for this failure
            error = self.pending[1]
            earlier = self.waits
            last = "not retried"
        attempts = len(earlier) + 1
        for n, (err, delay) in enumerate(earlier, start=1):
            error.add_note(f"retry: attempt {n}/{limit} failed: {_describe(err)}; waited {delay:.3g}s")
        error.add_note(
            f"retry: attempt {attempts}/{limit} failed: {_describe(error)}; {last}: {why} (no further attempt sent)"
        )
        self.verdict, self.exhausted = why, True
        emit(
            "retry.exhausted",
            provider=self.owner.name,
            model=self.model,
            attempts=attempts,
            error=error,
            reason="circuit_open",
            detail=why,
        )
        return error




def _jitter(jitter: object) -> tuple[float, float]:
    """``jitter`` as ``(low, high)``: a pair (any sequence of two) of finite numbers, ``0 <= low <= high``.

    One number (``jitter=0.5``) is not a range: it was "cannot unpack non-iterable float object".
    """
    pair = tuple(jitter) if isinstance(jitter, Sequence) and not isinstance(jitter, str | bytes) else None
    if pair is None or len(pair) != 2 or not all(is_number(v) and math.isfinite(v) for v in pair):
        raise ValueError(f"jitter must be a (low, high) pair of finite numbers, not {jitter!r}")
    lo, hi = pair
    if not 0 <= lo <= hi:
        raise ValueError(f"jitter must be (low, high) with 0 <= low <= high, not {jitter!r}")
    return float(lo), float(hi)


def _describe(error: ProviderError) -> str:
    status = f" HTTP {error.status}" if error.status is not None else ""
    return f"{error.kind.value}{status}"


def with_retry(
    provider: LLMProvider | Any,
    *,
    max_attempts: int = 3,
    base_delay: float = 0.5,
    multiplier: float = 2.0,
    max_delay: float = 8.0,
    jitter: tuple[float, float] = (0.75, 1.0),
    max_retry_after: float = 60.0,
    deadline: float | None = None,
    retry_on: Callable[[ProviderError], bool] | None = None,
    clock: Clock | None = None,
    sleep: Sleep | None = None,
    rng: random.Random | None = None,
) -> RetryingProvider:
    """Wrap ``provider`` so that a failure that asking again can fix is asked again.

    * ``max_attempts`` (an ``int``) counts every call, the first included.
      Between attempts it waits ``min(max_delay, base_delay * multiplier**(n-1))``
      times a uniform factor in ``jitter`` — or exactly the vendor's
      ``retry_after`` when ``0 < retry_after <= max_retry_after``.  A longer
      ``retry_after`` (an infinite one too, even with ``max_retry_after=inf``)
      is not waited for: the error is raised at once, so a fallback can serve
      now.  The delays, ``multiplier`` and ``jitter`` must be finite numbers
      (``ValueError`` otherwise: an infinite one would make a wait a hang);
      ``jitter`` is a ``(low, high)`` pair, and ``base_delay`` may not exceed
      ``max_delay`` (every wait would be ``max_delay``: ``base_delay=0`` for none).
    * ``retry_on(error) -> bool`` replaces the default test, ``error.retryable``
      (a ``TypeError`` when built if it is not callable, as for ``clock`` and ``sleep`` — or if it is a class:
      ``retry_on=ProviderTimeoutError`` made an instance of each error, always true).
      Whatever it says, a request error (``UnsupportedToolChoiceError``, 400...),
      a :class:`~agentactors.errors.CircuitOpenError` and a
      :class:`~agentactors.errors.StreamInterruptedError` are never retried.
      Exceptions that are not a ``ProviderError`` are classified first
      (:func:`~agentactors.providers.classify_exception`: unknown ones are request
      errors) and raised as the classified ``ProviderError``.
    * ``deadline`` (seconds, measured on ``clock`` from the first attempt): a
      wait that would end past it is not started; the error is raised instead.
      The attempts themselves are bounded by :func:`with_timeout`, not here.
      A call made for a run with a deadline (``agent.run(..., deadline=)``, which
      travels with the call: :mod:`agentactors.gateway.ticket`) is bounded by the
      earlier of the two: no wait is started that would end past the run's
      deadline either (``retry.exhausted`` says which one stopped it).
    * When it gives up, the **last** error is raised unwrapped, with one PEP 678
      note per attempt (kind, status, the wait that followed, why it stopped).
    * **Under a circuit breaker** (``with_circuit_breaker(with_retry(p))``, the
      recommended order): before every attempt after the first — before its
      wait and again right before sending — the retry asks the breakers above
      it whether the call they admitted may still send.  Once one has opened
      (or was forced open, or the call is not its live half-open probe), no
      further attempt is sent: the last error is raised unwrapped at once, with
      a note saying why, and ``retry.exhausted`` reports ``reason="circuit_open"``.
      That error is the vendor's (transient, unless ``retry_on`` retried
      another kind), so a fallback above moves on as it would after the last
      attempt, and a breaker whose circuit changed state since admitting the
      call does not count it.  Without a breaker above, this costs one
      context-variable read per failure.
    * Streams are retried only while opening them and reading their first
      event; a failure after that reaches the consumer as
      ``StreamInterruptedError`` and is never replayed.
    * Cancellation (anyio's, from any scope) is re-raised at once: no further
      attempt, no wait.
    * Attempts a :func:`with_timeout` inside gave up on were sent and are billed:
      they ride on the answer (``provider_data["cut_short"]``, a stream's
      ``StreamEnd``); when the call fails or is cancelled, or its stream is
      left before its end, they go to the layer around that collects them (a
      ``with_fallback`` puts them on the answer of the member that serves), else
      are noted for the run — charged once whatever happens next
      (``docs/costs.md``, "Calls cut short").
    * ``clock`` (default ``anyio.current_time``), ``sleep`` (``anyio.sleep``) and
      ``rng`` (a ``random.Random``) are injectable for tests on virtual time.

    Events: ``retry.scheduled(attempt, delay, error)``,
    ``retry.recovered(attempts, elapsed)``, ``retry.exhausted(attempts, error,
    reason)`` (``reason="circuit_open"`` with a ``detail`` when a breaker above
    stopped it) — delivered to the recorders of the run that made the call.
    """
    return RetryingProvider(
        provider,
        max_attempts=max_attempts,
        base_delay=base_delay,
        multiplier=multiplier,
        max_delay=max_delay,
        jitter=jitter,
        max_retry_after=max_retry_after,
        deadline=deadline,
        retry_on=retry_on,
        clock=clock,
        sleep=sleep,
        rng=rng,
    )
