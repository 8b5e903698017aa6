"""``with_hedge``: when a call is slow, ask a second time; the first answer wins, the other is cancelled.

A vendor's slowest few percent of calls take many times its median, and most of that tail is bad
luck (a busy replica, a slow queue), not the request: a second copy sent after a delay usually
answers long before the first.  That is a hedged request ("The Tail at Scale", Dean and Barroso):
the tail falls for a few percent more calls.  The decorator keeps that price bounded — at most
``max_extra`` of the calls over a rolling window are hedged — and never hedges what a second copy
cannot help: a request the vendor refused (a request-kind error of a copy to the first copy's member ends both
copies at once; one of a hedge sent to another member, ``to``, is that copy's failure alone), a
member whose circuit breaker is not closed — below the hedge, or above it (a half-open breaker's probe
is one request) — or that cannot carry the request (a forced tool choice, a response format: the hedge
target, or the first copy's member, which refuses it before sending), a stream that already delivered its
first event.

Both copies run as tasks of one task group; the loser is cancelled (its HTTP request closed) and
waited for before the call returns, so nothing of it outlives the call.

**Admission.**  Under a ``ProviderActor`` the copy is one more request, and the actor admits it: about to send
it, the hedge asks the actor whose call it serves for one extra admission
(:func:`~agentactors.gateway.provider.extra_admitter`), at once — a hedge that waited for a slot would be no hedge.
Granted (a slot free, nobody waiting, the request and the copy's token estimate in the budgets), the copy is sent and
counted: its slot held until it ends, whichever way (the loser's cancellation gives it back), its request in
``requests_per_minute``, its token estimate in ``tokens_per_minute`` (it stands, as a cancelled call's; given back
when the copy is refused before any work, as a request's is).  Refused, there is no hedge for this call — the first
copy goes on, the call's share of ``max_extra`` is not spent — and ``hedge.skipped(member, model,
reason="admission")`` says so.  A copy sent to ``to`` is admitted by the same actor.  The actor looks for a hedge
once, when it is made, through the public ``inner`` of decorators and ``members`` of fallback chains and pools; a
hedge it cannot see (inside a wrapper that shows neither), or with no actor around, sends its copy unadmitted, as
before: leave room for ``max_extra`` in the limits of whatever admits its calls then.

**What the losing copy costs.**  It was sent, so the vendor bills it — its prompt at least (OpenAI bills a
non-streamed request in full even after the client hung up).  The winner's response carries it for the run to
charge (:func:`agentactors.pricing.with_cut_short`): as the layers inside it noted it when they did (each copy is
sent a request of its own, :func:`~agentactors.resilience.timeout.own_request`: a ``BatchProvider`` copy at the batch
price, or nothing for one withdrawn before its submission), at its real usage when its answer came back anyway, else
at an estimate — its prompt (:func:`~agentactors.gateway.provider.estimate_tokens`) and, for a stream, the output it
had delivered — marked estimated (:attr:`agentactors.pricing.Cost.estimated`).  The winner's ``usage`` stays what
its vendor said.  When the caller is cancelled mid-call, every copy in flight is noted
(:func:`agentactors.pricing.note_cut_short`) for the run to charge as its call cut short, and so is every copy of a
stream its consumer left before its end (broke out, closed it) — the winner with the output it had delivered; a
stream whose winner failed notes its losing copies alone, as for a call that failed.  A copy a ``with_timeout``
below gave up on was sent too: the hedge collects it (as ``with_retry`` does:
:func:`~agentactors.resilience.timeout.abandoned_attempts`) and charges it with the others — on the winner's
answer, in the note, or handed to the layer around when no copy answered — so that each copy is charged once,
with or without a retry around.  A copy cancelled because the other was refused with a request error was sent:
it is charged as those are.  A note is added to what was noted against the caller's request before (a sibling's
sharing it), never replacing it.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import anyio.abc

import agentactors.resilience._gate as _gate

from ..errors import ErrorKind, MalformedResponseError, ProviderError
from ..events import emit
from ..gateway.provider import ExtraAdmission, estimated_cut_short, extra_admitter
from ..messages import LLMRequest, LLMResponse, ReasoningDelta, StreamEnd, StreamEvent, TextDelta
from ..pricing import CUT_SHORT, CutShort, add_cut_short, cut_short_of, pop_cut_short, with_cut_short
from ..providers.port import (
    UNOPENED,
    LLMProvider,
    StreamAccumulator,
    StreamContext,
    broken_contract,
    default_model_of,
    forced_tool_choice_for,
    not_a_context_manager,
    not_an_iterator,
    response_format_for,
)
from ._checks import check_callable, check_provider
from ._circuit import CircuitState
from ._numbers import is_number, whole
from .breaker import CircuitBreakerProvider
from .decorator import Clock, ProviderDecorator, as_provider_error, default_clock, model_of, name_of
from .streams import cut_short, stream_of
from .timeout import abandoned_attempts, hand_on, keep_abandoned, own_request

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["HedgeProvider", "with_hedge"]

T = TypeVar("T")

_PERCENTILE = re.compile(r"^p(\d{1,2}(?:\.\d+)?)$")
#: How many latencies a percentile ``after`` needs before it hedges at all (fewer say little of a tail).
MIN_SAMPLES = 20
#: How many recent latencies a percentile is taken over.
SAMPLES = 200
# Breaker states that admit a hedge: a half-open breaker admits its probes only, an open one nothing.
_ADMITTING = frozenset({CircuitState.closed, CircuitState.disabled})


def parse_after(value: object, label: str = "after") -> float:
    """The seconds ``value`` says, or for a percentile (``"p95"``) the percentile (``95.0``).

    :raises ValueError: naming ``label`` (``hedge_after`` when :func:`~agentactors.resilience.resilient_chain`
        checks its own setting): not a finite number of seconds ``>= 0`` (nor a bool), nor a percentile.
    """
    if isinstance(value, str):
        match = _PERCENTILE.match(value.strip().lower())
        if match is None or not 0 < float(match[1]) < 100:
            raise ValueError(f"{label} must be seconds or a percentile like 'p95', not {value!r}")
        return float(match[1])
    if not is_number(value) or not 0 <= value < math.inf:  # type: ignore[operator]  # NaN fails every comparison
        raise ValueError(f"{label} must be a non-negative number of seconds or a percentile like 'p95', not {value!r}")
    return float(value)  # type: ignore[arg-type]




class HedgeProvider(ProviderDecorator):
    """The provider :func:`with_hedge` returns.  See there for the semantics.

    :attr:`hedged` and :attr:`calls` count hedges sent and calls made (all time); :meth:`delay` is
    the wait a call made now would start with before hedging.
    """

    def __init__(
        self,
        inner: LLMProvider | Any,
        *,
        after: float | str,
        max_extra: float,
        to: LLMProvider | Any | None,
        window: int,
        clock: Clock | None,
    ) -> None:
        super().__init__(inner)
        # ValueErrors naming the setting, as with_retry's: no bools (window=True was a window of one call),
        # no NaN (it fails every comparison), a whole number of calls.
        if not is_number(max_extra) or not 0 <= max_extra <= 1:
            raise ValueError(f"max_extra must be a fraction of the calls, between 0 and 1, not {max_extra!r}")
        calls = whole(window)
        if calls is None or calls < 1:
            raise ValueError(f"window must be a positive whole number of calls, not {window!r}")
        if to is not None:
            check_provider(to, "to")
        check_callable(clock, "clock", "a callable returning seconds")  # else a TypeError in the first call
        self._percentile: float | None = None
        self._seconds = 0.0
        parsed = parse_after(after)
        if isinstance(after, str):
            self._percentile = parsed
        else:
            self._seconds = parsed
        self.max_extra = float(max_extra)
        self.to = to
        self.window = calls
        self._clock: Clock = clock or default_clock
        self._latencies: deque[float] = deque(maxlen=SAMPLES)
        self._hedges: deque[int] = deque()  # the call numbers of the hedged calls still in the window
        self.calls = 0
        self.hedged = 0

    # -- when to hedge ----------------------------------------------------------------------------

    def delay(self) -> float | None:
        """Seconds to wait for the first answer before hedging; ``None``: no hedge (too few latencies known)."""
        if self._percentile is None:
            return self._seconds
        if len(self._latencies) < MIN_SAMPLES:
            return None
        ordered = sorted(self._latencies)
        rank = min(len(ordered) - 1, max(0, math.ceil(self._percentile / 100 * len(ordered)) - 1))
        return ordered[rank]

    def _within_budget(self, call: int) -> bool:
        """Whether one more hedge keeps the hedged share of the last ``window`` calls at most ``max_extra``."""
        oldest = call - self.window
        hedges = self._hedges
        while hedges and hedges[0] <= oldest:
            hedges.popleft()
        return len(hedges) + 1 <= self.max_extra * min(call, self.window)

    def _admits(self, provider: Any, model: str | None) -> bool:
        """No breaker on the hedge's way down (through decorators) is open, half-open or forced open.

        (Breakers above the hedge are asked through their send gates: :func:`._gate.hedgeable`.)"""
        while isinstance(provider, ProviderDecorator):
            if isinstance(provider, CircuitBreakerProvider) and provider.state_for(model) not in _ADMITTING:
                return False
            provider = provider.inner
        return True

    def _target(self, request: LLMRequest) -> tuple[Any, LLMRequest, str | None]:
        """Who gets the hedge, the request it gets and its model: ``to`` calls its own default model."""
        if self.to is None:
            return self._inner, request, model_of(self._inner, request)
        own = default_model_of(self.to)
        sub = request.with_model(own) if own else request
        return self.to, sub, own or request.model

    @staticmethod
    def _carries(target: Any, request: LLMRequest, model: str | None) -> bool:
        """Whether ``target`` can take ``request`` for ``model``: a forced tool choice or a response format it
        refuses would be refused before sending (a request error, ending the call the first copy may serve)."""
        if request.tool_choice.forced and not forced_tool_choice_for(target, model):
            return False
        return request.response_format is None or response_format_for(target, model)

    def _hedge(
        self, call: int, request: LLMRequest
    ) -> tuple[Any, LLMRequest, str | None, ExtraAdmission | None] | None:
        """The hedge to send now for call number ``call`` — its target, request, model and the admission of the
        ``ProviderActor`` the call runs in — or ``None`` when none may be sent.

        Not when a breaker above that admitted this call is not closed now (:func:`._gate.hedgeable`: a
        half-open one admitted it as its one probe), nor when the first copy cannot carry the request: it
        refuses it before sending, a request error ending the call — with ``after=0`` the hedge may be decided
        before the first copy has run at all (trio runs ready tasks in a random order), and a copy sent to
        ``to`` would be billed for a call that fails anyway.  Last, the actor around (if it saw this hedge:
        :func:`~agentactors.gateway.provider.extra_admitter`) is asked for one more request, at once: refused
        (no slot, no budget, or requests waiting), no hedge — ``hedge.skipped(member, model, reason="admission")``
        — and the call's share of ``max_extra`` is not spent.
        """
        if not self._within_budget(call) or not _gate.hedgeable():
            return None
        if self.to is not None and not self._carries(self._inner, request, model_of(self._inner, request)):
            return None
        target, sub, model = self._target(request)  # (without ``to``, the target is the first copy's member)
        if not self._admits(target, model) or not self._carries(target, sub, model):
            return None
        admission: ExtraAdmission | None = None
        admit = extra_admitter()  # (None with no ProviderActor around, or one that cannot see this hedge)
        if admit is not None:
            admission = admit(sub)
            if admission is None:
                emit("hedge.skipped", member=name_of(target), model=model, reason="admission")
                return None
        self._hedges.append(call)
        self.hedged += 1
        # A request of its own (``with_model`` made one already for another model): what is noted against it is
        # this copy's alone (_Race.billed).
        return target, own_request(sub) if sub is request else sub, model, admission

    def _took(self, seconds: float) -> None:
        self._latencies.append(seconds)

    # -- the port ---------------------------------------------------------------------------------

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The first copy's answer, or a hedged copy's when it answers first (see :func:`with_hedge`).

        Cancellation: every copy in flight is cancelled with the call and waited for (nothing of it outlives the
        call), each noted for the run as a call cut short, and a ``ProviderActor``'s admission of the hedge given
        back; the cancellation is re-raised unchanged.
        """
        self.calls += 1
        call = self.calls
        delay = self.delay()
        if delay is None:
            started = self._clock()
            sent = own_request(request)
            try:
                response = await self._inner.complete(sent)
            except anyio.get_cancelled_exc_class():  # the caller left mid-call: the copy in flight is billed
                noted = pop_cut_short(sent)  # as the layers inside noted it (a batch's price, or nothing), else:
                add_cut_short(request, noted if noted is not None else (
                    estimated_cut_short(self._inner, request, model_of(self._inner, request)),))
                raise
            finally:
                hand_on(sent, request)
            if type(response) is not LLMResponse and not isinstance(response, LLMResponse):
                raise _no_answer(response, self._inner, model_of(self._inner, request))
            self._took(self._clock() - started)
            return response
        # The first copy runs in the caller's task (most calls answer before ``after``: they pay for one timer
        # task, not a task per copy); the timer sends the hedge, and the winner cancels the other copy.
        race: _Race[LLMResponse] = _Race(self._clock)
        primary = race.add("primary", self._inner, model_of(self._inner, request))
        sent = primary.request = own_request(request)  # each copy is sent a request of its own (_Race.billed)
        try:
            # The copies a timeout inside abandons are the race's to charge (_Race.abandoned): the timer's task,
            # which sends the hedge, inherits the list.
            with abandoned_attempts() as race.abandoned:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._hedge_later, race, call, request, delay)
                    await race.run(primary, lambda _: _answer(self._inner, sent, primary.model))
                    await race.done.wait()
                    tg.cancel_scope.cancel()  # the timer, or the losing copy: its request closed before returning
            answered: LLMResponse = self._settled(race, request)
            if race.started > 1 or race.abandoned:
                answered = with_cut_short(answered, race.billed(race.winner))
            return answered
        except anyio.get_cancelled_exc_class():
            add_cut_short(request, race.billed(None))  # every copy in flight (a won answer lost too)
            raise
        finally:
            race.release()
            race.hand_on(request)

    async def _hedge_later(self, race: _Race[LLMResponse], call: int, request: LLMRequest, delay: float) -> None:
        """After ``delay``, unless the call is over: the hedge, run in this task, if one may be sent."""
        await anyio.sleep(delay)
        if race.done.is_set():
            return
        hedge = self._hedge(call, request)
        if hedge is None:
            return
        target, sub, model, admission = hedge
        attempt = race.add("hedge", target, model)
        attempt.request, attempt.admission = sub, admission  # (released when the copy ends: _Race.run)
        emit("hedge.sent", member=name_of(target), model=model, after=delay)
        await race.run(attempt, lambda _: _answer(target, sub, model))

    def _settled(self, race: _Race[Any], request: LLMRequest) -> Any:
        """The race's winner (its latency taken, ``hedge.won`` said when a hedge ran), or its error raised."""
        winner = race.winner
        if winner is None:
            raise race.lost(request)
        self._took(winner.seconds)
        if race.started > 1:
            emit("hedge.won", winner=winner.label, member=name_of(winner.provider), model=winner.model)
        return winner.value

    def stream(self, request: LLMRequest) -> StreamContext:
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: LLMRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        """Race the opening of the streams up to their first events; relay the winner's from its task."""
        self.calls += 1
        call = self.calls
        delay = self.delay()
        race: _Race[_Opened | None] = _Race(self._clock)

        def attempt(provider: Any, sub: LLMRequest, model: str | None) -> Run[_Opened | None]:
            return lambda me: _Opened.run(me, sub, race)

        failure: BaseException | None = None
        try:
            async with anyio.create_task_group() as tg:
                # The copies' tasks inherit the race's list of what a timeout inside abandons (_Race.abandoned);
                # set only while they start, never across the yield (the consumer's code runs in this context).
                with abandoned_attempts() as race.abandoned:
                    model = model_of(self._inner, request)
                    sent = own_request(request)  # each copy is sent a request of its own (_Race.billed)
                    race.start(tg, "primary", self._inner, model, attempt(self._inner, sent, model), sent)
                    if delay is not None:
                        with anyio.move_on_after(delay):
                            await race.done.wait()
                        if not race.done.is_set():
                            hedge = self._hedge(call, request)
                            if hedge is not None:
                                target, sub, hedge_model, admission = hedge
                                race.start(tg, "hedge", target, hedge_model, attempt(target, sub, hedge_model), sub,
                                           admission)
                                emit("hedge.sent", member=name_of(target), model=hedge_model, after=delay)
                await race.done.wait()
                if race.winner is None:
                    tg.cancel_scope.cancel()  # a request error, or every copy failed: raised past the task group
                else:
                    opened: _Opened = self._settled(race, request)
                    # The losers are over by the winner's end (cancelled when it claimed the race): its last event
                    # carries them, to be charged with it.
                    events = opened.relay(lambda: race.billed(race.winner))
                    try:
                        yield events
                    except BaseException as exc:  # raised past the task group, which would wrap it in a group
                        failure = exc
                    finally:
                        await events.aclose()
                        opened.close()  # (the relay closes it as it ends: not when it never started)
                        tg.cancel_scope.cancel()  # the winner's stream closes in its own task
        except anyio.get_cancelled_exc_class():
            if race.winner is not None and isinstance(race.winner.value, _Opened):
                race.winner.value.close()  # cancelled between the winner's first event and its relay
            add_cut_short(request, race.billed(None))  # cancelled before a winner: every copy in flight
            race.release()
            race.hand_on(request)
            raise
        race.release()  # (each copy's task released its own as it ended: here only what no task started)
        try:
            if race.winner is None:
                raise race.lost(request)
            if not opened.ended:
                if not opened.over or isinstance(failure, anyio.get_cancelled_exc_class()):
                    # The consumer left mid-stream — cancelled, or quietly (it broke out, closed it): every copy is
                    # billed, the winner with what it had delivered.  This note is the one kept (a ProviderActor's
                    # stream around adds nothing to it): noting the losers alone left the winner uncharged.
                    add_cut_short(request, race.billed(None))
                else:
                    # The winner failed, or ended without its StreamEnd: what was to ride on that end (the losers,
                    # the copies abandoned) is noted for the run, as for a call that failed.
                    lost = race.billed(race.winner)
                    if lost:
                        add_cut_short(request, lost)
        finally:
            race.hand_on(request)
        if failure is not None:
            raise failure


class _Attempt:
    """One copy of the call: its label (``primary`` / ``hedge``), its provider and model, its task's scope."""

    __slots__ = (
        "admission", "failed", "label", "model", "provider", "request", "scope", "seconds", "started", "value",
    )

    def __init__(self, label: str, provider: Any, model: str | None, started: float) -> None:
        self.label = label
        self.provider = provider
        self.model = model
        self.scope = anyio.CancelScope()
        self.started = started
        self.seconds = 0.0
        self.value: Any = None
        #: The request this copy was sent: its own (``to``'s own model for a hedge), so that what the layers inside
        #: noted against it is this copy's alone (:meth:`_Race.billed`).
        self.request: LLMRequest | None = None
        self.failed = False  # it ended with an error: not billed (a vendor's error, or refused before sending)
        #: The ``ProviderActor``'s admission of this copy (a hedge's, under an actor that saw the hedge): released
        #: when the copy ends, whichever way (:meth:`_Race.run`).
        self.admission: ExtraAdmission | None = None


Run = Callable[[_Attempt], Awaitable[T]]


class _Race(Generic[T]):
    """The copies of one call, racing to the first answer (for a stream: its first event).

    Done when one copy wins, when a copy fails with a request-kind error (the other would fail alike),
    or when every copy started has failed.
    """

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.done = anyio.Event()
        self.attempts: list[_Attempt] = []
        self.winner: _Attempt | None = None
        self.errors: list[ProviderError] = []
        self._elsewhere: set[int] = set()  # the ids of the errors of copies sent to another member than the first's
        self.started = 0
        #: The copies a ``with_timeout`` inside gave up on (they failed with its ``ProviderTimeout``, so
        #: :meth:`billed` does not count them as copies): sent, and billed.  The hedge collects them itself, as a
        #: retry does (:func:`~agentactors.resilience.timeout.abandoned_attempts`) — with no retry around, the
        #: timeout's own note for the run was overwritten by the hedge's, or left behind when the other copy
        #: answered; for a hedge to another member, it was against a request no run takes.
        self.abandoned: list[CutShort] = []

    def add(self, label: str, provider: Any, model: str | None) -> _Attempt:
        """A copy about to start: from now on the race waits for it too."""
        attempt = _Attempt(label, provider, model, self.clock())
        self.attempts.append(attempt)
        self.started += 1
        return attempt

    def start(
        self, tg: anyio.abc.TaskGroup, label: str, provider: Any, model: str | None, run: Run[T],
        request: LLMRequest | None = None, admission: ExtraAdmission | None = None,
    ) -> None:
        """A copy run in a task of its own."""
        attempt = self.add(label, provider, model)
        attempt.request, attempt.admission = request, admission
        tg.start_soon(self.run, attempt, run)

    def release(self) -> None:
        """Release the copies' admissions still held (each copy's own task releases its own as it ends: this is for
        one whose task never ran, once the call is over)."""
        for attempt in self.attempts:
            if attempt.admission is not None:
                attempt.admission.release()

    def billed(self, winner: _Attempt | None) -> tuple[CutShort, ...]:
        """The copies other than ``winner`` that were sent and did not fail, and those a timeout inside abandoned
        (:attr:`abandoned`): what the vendor bills for them.  Taken once: the abandoned, and what was noted
        against each copy's request, are handed over.

        A copy the layers inside noted as it was cancelled (against its own request: a ``BatchProvider``'s item at
        the batch price, or ``()`` for one withdrawn before its submission) as they noted it — any copy's note,
        also a failed one's or the winner's (its inner layers' calls cut short); else a copy whose answer came back
        anyway (it lost by an instant) at its real usage, with the calls cut short its answer carried
        (:func:`~agentactors.pricing.cut_short_of`); any other at an estimate — its prompt, and for a stream
        the output it had delivered (:func:`~agentactors.gateway.provider.estimated_cut_short`).  ``winner=None``:
        every copy (the caller left, and a won answer it never received is billed too).
        """
        out: list[CutShort] = [*self.abandoned]
        self.abandoned.clear()  # (the same list: the copies' tasks hold it in their context)
        for attempt in self.attempts:
            if attempt.request is None:
                continue
            noted = pop_cut_short(attempt.request)
            if noted is not None:  # the layers inside said what it cost: their word, even "nothing", is kept
                out.extend(noted)
                continue
            if attempt is winner or attempt.failed:
                continue
            value = attempt.value
            if isinstance(value, LLMResponse):
                out.append(CutShort(value.provider or name_of(attempt.provider), value.model or attempt.model,
                                    value.usage.input_tokens, value.usage.output_tokens, estimated=False))
                # What its own layers cut short on its way (its retry's abandoned attempts, a hedge's losing copy)
                # rode on its answer, which nobody receives: charged with it (before, dropped).
                data = value.provider_data
                if data and CUT_SHORT in data:
                    out.extend(cut_short_of(value))
            else:
                out.append(estimated_cut_short(attempt.provider, attempt.request, attempt.model,
                                     value.delivered if isinstance(value, _Opened) else ""))
        return tuple(out)

    async def run(self, attempt: _Attempt, run: Run[T]) -> None:
        """Run one copy to its answer (it claims the race) or its failure (recorded); the winner cancels it.

        Its admission by the ``ProviderActor`` around (a hedge's) is released as it ends, whichever way — with its
        error, for the actor to refund what a request refused before any work gives back."""
        error: ProviderError | None = None
        try:
            with attempt.scope:
                try:
                    value = await run(attempt)
                except Exception as exc:
                    attempt.failed = True
                    error = as_provider_error(exc, attempt.provider, attempt.model)
                    self._failed(attempt, error)
                    return
                if attempt.value is None:
                    attempt.value = value
                self.claim(attempt)
        finally:
            if attempt.admission is not None:
                attempt.admission.release(error)

    def claim(self, attempt: _Attempt) -> bool:
        """``attempt`` answered: it wins unless another did first."""
        if self.winner is not None or self.done.is_set():
            return False
        attempt.seconds = self.clock() - attempt.started
        self.winner = attempt
        self.done.set()
        for other in self.attempts:
            if other is not attempt:
                other.scope.cancel()
        return True

    def _failed(self, attempt: _Attempt, error: ProviderError) -> None:
        self.errors.append(error)
        if attempt.provider is not self.attempts[0].provider:
            self._elsewhere.add(id(error))
        if self.winner is not None:
            return  # answered already: a loser's late failure changes nothing, and must not cancel the winner
        if error.kind is ErrorKind.request and id(error) not in self._elsewhere:
            # The other copy would fail alike: it is cancelled now, not waited for.  The first copy of a
            # ``complete()`` runs in the caller's task, which would otherwise wait for its answer.  Not so for a
            # hedge sent to another member (``to``): its refusal says nothing of the first copy's request (another
            # vendor, another model), which goes on — before, a hedge refused by ``to`` failed a call its first copy
            # would have answered.
            self.done.set()
            for other in self.attempts:
                other.scope.cancel()
        elif len(self.errors) >= self.started:
            self.done.set()

    def lost(self, request: LLMRequest) -> ProviderError:
        """No copy answered: the copies a timeout abandoned, and those cancelled when the other copy was refused
        with a request error (they were sent: billed), go to the layer around (the retry's list, else noted for
        the run, added to its note: :func:`~agentactors.resilience.timeout.keep_abandoned`), and the error to
        raise is returned (:meth:`error`)."""
        billed = self.billed(None)  # (a copy that failed is not billed: only what its inner layers noted)
        if billed:
            keep_abandoned(request, billed)
        return self.error()

    def hand_on(self, request: LLMRequest) -> None:
        """What was noted against a copy's own request and not taken (:meth:`billed`) is handed on to the
        caller's ``request``, as if no copy had been made (:func:`~agentactors.resilience.timeout.hand_on`)."""
        for attempt in self.attempts:
            if attempt.request is not None:
                hand_on(attempt.request, request)

    def error(self) -> ProviderError:
        """What the call raises when no copy answered: a request error if there is one, else the first — of the
        copies sent to the first copy's member (what the call would have raised without a hedge: a hedge to another
        member (``to``) that failed too does not make a transient failure a request fault nobody retries); the
        other copy's error is noted on it (its text, as redacted as the error's own)."""
        own = [error for error in self.errors if id(error) not in self._elsewhere] or self.errors
        raised = next((error for error in own if error.kind is ErrorKind.request), own[0])
        for other in self.errors:
            if other is not raised:
                raised.add_note(f"hedge: the other copy failed too: {other}")
        return raised


class _Opened:
    """A stream opened in its attempt's task, up to its first event; the rest is relayed from that task.

    The stream's context manager is entered and left in the attempt's own task (a decorator below may
    hold a cancel scope across it), and the events cross to the consumer through a memory stream
    without a buffer, so the vendor is read no faster than the consumer reads.
    """

    def __init__(self, first: StreamEvent, receive: MemoryObjectReceiveStream[Any], provider: Any, model: str | None):
        self.first = first
        self.receive = receive
        self.provider = provider
        self.model = model
        # The output text (answer and reasoning) delivered so far, in pieces: joined when read (:attr:`delivered`),
        # never `+=` on the attribute, which copied the whole text so far at every delta (quadratic in a long stream).
        self._pieces = [_text_of(first)]
        self.ended = False  # its StreamEnd was relayed: the call is over (and charged with its response)
        #: The relay reached the stream's end, with or without its StreamEnd, or its failure: not left alive by
        #: the consumer (a stream left alive is billed as a copy in flight).
        self.over = False

    def close(self) -> None:
        """Close the consumer's end of the events (idempotent): the relay does as it ends, but a stream left, or
        cancelled, before its first read never started the relay, and left it to the garbage collector
        (``ResourceWarning``)."""
        self.receive.close()

    @property
    def delivered(self) -> str:
        """The output text (answer and reasoning) delivered so far: what a stream cut short is charged for."""
        return "".join(self._pieces)

    @staticmethod
    async def run(me: _Attempt, request: LLMRequest, race: _Race[Any]) -> _Opened | None:
        """Open the stream; once it has a first event, claim the race and pump the rest until closed.

        A failure before the first event is raised (the race records it); one after it — the stream's
        own, or what its context manager raised on the way out (an inner timeout's) — is sent to the
        consumer.  Returns ``None`` when another copy won.
        """
        send, receive = anyio.create_memory_object_stream[Any](0)
        won = False
        inner: object = UNOPENED
        with send, receive:
            try:
                inner = stream_of(me.provider, request)
                async with inner as events:
                    try:
                        first = await events.__anext__()
                    except StopAsyncIteration:
                        raise MalformedResponseError(
                            "the stream ended before its first event", provider=name_of(me.provider), model=me.model
                        ) from None
                    except Exception as exc:  # (its value no async iterator: the member named, its block left so)
                        broken = not_an_iterator(events, exc, provider=name_of(me.provider), model=me.model)
                        if broken is None:
                            raise
                        raise broken from None
                    me.value = _Opened(first, receive.clone(), me.provider, me.model)
                    won = race.claim(me)
                    if not won:
                        me.value.receive.close()
                        return None
                    await _pump(events, send)
            except Exception as exc:
                if not won:
                    # A stream() that returned no async context manager: the member's broken contract, named (its
                    # context, Python's own TypeError, holds nothing of the vendor's).
                    broken = not_a_context_manager(inner, exc, provider=name_of(me.provider), model=me.model)
                    if broken is None:
                        raise
                    raise broken from None
                await _send(send, _Failure(exc))
        return None

    async def relay(
        self, losers: Callable[[], tuple[CutShort, ...]] = tuple
    ) -> AsyncGenerator[StreamEvent, None]:
        """The winner's events; its :class:`StreamEnd`'s response carries the ``losers`` (cut short) to charge."""
        acc = StreamAccumulator()
        acc.add(self.first)
        with self.receive:  # closed too when the consumer leaves after the first event
            yield self.first
            async for item in self.receive:
                if isinstance(item, _Failure):
                    self.over = True
                    raise cut_short(item.error, provider=self.provider, model=self.model, partial_text=acc.text)
                acc.add(item)
                if isinstance(item, StreamEnd):
                    answer: object = item.response
                    if not isinstance(answer, LLMResponse):
                        # No answer to carry the losers: relayed as it is, for the run's step to name; the stream is
                        # over without its end, and the losers are charged as for one (HedgeProvider._stream).
                        self.over = True
                    else:
                        self.ended = True
                        lost = losers()
                        if lost:
                            item = StreamEnd(with_cut_short(answer, lost))
                else:
                    self._pieces.append(_text_of(item))
                yield item
            self.over = True  # (reached only when the winner's task ended the stream: it was not left alive)


async def _answer(provider: Any, request: LLMRequest, model: str | None) -> LLMResponse:
    """A copy's ``complete()`` in a race: a non-answer (a custom provider's ``None``, ``str``, ``dict``) is the copy's
    failure (:func:`_no_answer`), never the race's winner."""
    response = await provider.complete(request)
    if type(response) is not LLMResponse and not isinstance(response, LLMResponse):
        raise _no_answer(response, provider, model)
    return response


def _no_answer(response: object, provider: Any, model: str | None) -> MalformedResponseError:
    """The error of a member whose ``complete()`` answered ``response``, no ``LLMResponse``: transient (a breaker
    counts it, a fallback moves on), not retryable."""
    return broken_contract("the answer of complete()", response, "an LLMResponse", provider=name_of(provider),
                           model=model)


def _text_of(event: StreamEvent) -> str:
    """The output text an event delivers (answer or reasoning; a tool call's arguments), for a cut-short charge."""
    if isinstance(event, TextDelta | ReasoningDelta):
        return event.text or ""
    fragment = getattr(event, "arguments_fragment", None)
    return fragment if isinstance(fragment, str) else ""


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


async def _pump(events: AsyncIterator[StreamEvent], send: MemoryObjectSendStream[Any]) -> None:
    """Send the stream's events after the first to the consumer; a failure is sent as one, then the end."""
    while True:
        try:
            event = await events.__anext__()
        except StopAsyncIteration:
            return
        except Exception as exc:
            await _send(send, _Failure(exc))
            return
        if not await _send(send, event):
            return  # the consumer left before the end


async def _send(send: MemoryObjectSendStream[Any], item: Any) -> bool:
    """Hand ``item`` to the consumer; ``False`` when it left before the end."""
    try:
        await send.send(item)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        return False
    return True


def with_hedge(
    provider: LLMProvider | Any,
    *,
    after: float | str = 2.0,
    max_extra: float = 0.05,
    to: LLMProvider | Any | None = None,
    window: int = 1000,
    clock: Clock | None = None,
) -> HedgeProvider:
    """Send a second copy of a call that has not answered after ``after``; the first answer wins.

    * ``after``: seconds (``2.0``), or a percentile of the member's own recent latencies (``"p95"``:
      hedge the calls slower than 95 % of the last 200; no hedge until :data:`MIN_SAMPLES` latencies
      are known).
    * The copy goes to ``provider`` again, or to ``to`` (another member; it calls its own default model
      when it has one).  The first answer is returned; the other copy is cancelled — its HTTP request
      closed — before the call returns.  Both failing raises the first copy's member's error — a request error
      of its copies if there is one, else the one that failed first — with the other's noted (its text as redacted
      as the error's own): what the call would have raised without a hedge, so a retry around decides alike.
    * The losing copy is **charged** to the run (``RunResult.cost``) and its budgets, as the vendor bills it: at
      its real usage when its answer came back anyway, else at an estimate — its prompt, and for a stream the
      output it had delivered — marked estimated (:attr:`agentactors.pricing.Cost.estimated`); ``usage`` stays
      the winner's; a copy whose layers noted what it cost (a batch copy: the batch price) as they noted it.  A
      caller cancelled mid-call has every copy in flight charged, and a copy its timeout gave up on, or cancelled
      by the other's request error, is charged too, once (``docs/costs.md``, "Calls cut short").  ``max_extra``
      bounds that spend.
    * ``max_extra``: at most this fraction of the last ``window`` calls are hedged (``0.05``: 5 %
      more calls, at most).  A call that would pass it is not hedged; it waits for its first copy.  The share
      counts from the first call: with ``0.05`` the first hedge may go with the 20th call, never before.
    * Settings are checked as :func:`with_retry` checks its own: ``after`` a finite number of seconds
      ``>= 0`` or a percentile, ``max_extra`` a number in ``[0, 1]``, ``window`` a whole number ``>= 1``;
      a bool, a string, NaN or infinity is a ``ValueError`` naming the setting.
    * Never hedged: a call whose first copy failed before ``after`` (retrying is :func:`with_retry`'s
      job); a request-kind error of a copy to the first copy's member ends the call at once (the other would
      fail alike) — a hedge sent to ``to`` that is refused fails alone, and the first copy goes on;
      a hedge target behind a circuit breaker that is not closed (open, half-open, forced open); a call
      under a breaker *above* the hedge that is not closed when the hedge would be sent
      (``guarded(..., hedge_after=)``: a half-open breaker's probe is one request, not two); a hedge target
      that cannot carry the request's forced tool choice or response format (it would refuse it before
      sending: an :class:`~agentactors.errors.UnsupportedToolChoiceError` ending a call the first copy
      serves); a call
      whose first copy cannot carry it (it refuses before sending, the call fails: no copy is sent to ``to``
      or billed, even with ``after=0``).
    * Streams race to their first event: a stream that delivered one by ``after`` is not hedged, and
      the winner's stream is relayed as is (a failure after its first event is a
      :class:`~agentactors.errors.StreamInterruptedError`, never replayed).

    Put it below the retry and above the timeout (``with_retry(with_hedge(with_timeout(p)))``, what
    ``resilient_chain(..., hedge_after=...)`` builds), so each attempt is hedged and each copy bounded.

    Events: ``hedge.sent(member, model, after)``, ``hedge.won(winner, member, model)`` (``winner`` is
    ``"primary"`` or ``"hedge"``), ``hedge.skipped(member, model, reason="admission")``.

    Under a ``ProviderActor`` the copy asks the actor for one extra admission, without waiting: granted, it holds a
    slot until it ends and counts in ``requests_per_minute`` and ``tokens_per_minute``; refused (no slot, no budget,
    requests waiting), the call is not hedged (``hedge.skipped``) and its first copy goes on.  A hedge the actor
    cannot see (behind a wrapper with no public ``inner`` or ``members``) sends its copy unadmitted, as with no actor
    (the module's "Admission").
    """
    return HedgeProvider(provider, after=after, max_extra=max_extra, to=to, window=window, clock=clock)
