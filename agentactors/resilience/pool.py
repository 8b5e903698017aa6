"""``with_pool``: spread calls over equivalent deployments of one model, around the ones that cannot serve.

Two regions, two API keys, two replicas of a self-hosted model: the same model behind several
members.  Per call the pool puts its members in an order and tries them in it, like a fallback
chain whose order is chosen afresh each time:

1. members whose circuit breaker is open are skipped (not called at all);
2. the others are ranked by headroom — first those with room, then those near their vendor's rate
   limit (as their last response's headers said, :mod:`agentactors.providers.http.ratelimits`), then
   those the vendor told to wait (a ``retry-after`` still running, a budget at zero).  A half-open
   member ranks with the healthy ones: its breaker admits its probe and refuses the rest at no
   cost, so a recovered deployment gets its share back;
3. within a rank, by the strategy: ``least_loaded`` (fewest calls in flight through this pool,
   ties taken in turn), ``round_robin`` (in turn), ``weighted`` (smooth weighted round robin: over
   any run of calls each member serves its share of ``weights``).

A member that fails in a way another one could fix — transient, or a breaker's refusal — hands the
call to the next; anything else (a request fault, a cancellation, a stream cut after its first
event) is raised at once, as :func:`with_fallback` does.  Everything here is synchronous between the
awaits of the member calls: one pool is shared by every agent of an event loop without a lock.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Final, Literal, TypeVar

import attrs

import agentactors.resilience._gate as _gate

from ..errors import (
    AllProvidersFailedError,
    CircuitOpenError,
    ErrorKind,
    ProviderError,
    StreamInterruptedError,
)
from ..events import emit
from ..messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent
from ..pricing import with_cut_short
from ..providers.http.ratelimits import RateLimitState
from ..providers.port import (
    LLMProvider,
    StreamContext,
    broken_contract,
    check_forced_tool_choice,
    default_model_of,
)
from ._checks import check_callable
from ._circuit import CircuitState
from ._numbers import is_number
from .breaker import CircuitBreakerProvider
from .chain import describe_chain
from .decorator import Clock, as_provider_error, default_clock, name_of
from .multi import MultiProvider
from .streams import Carried, OpenedStream, open_stream, relay, stream_of
from .timeout import abandoned_attempts, hand_on, own_request, serve_carried

__all__ = ["STRATEGIES", "PoolProvider", "Strategy", "with_pool"]

T = TypeVar("T")
Strategy = Literal["least_loaded", "round_robin", "weighted"]
STRATEGIES: Final = frozenset({"least_loaded", "round_robin", "weighted"})

_MOVES: Final = frozenset({ErrorKind.transient, ErrorKind.circuit_open})
# Health ranks: lower is tried first.  Open breakers are not ranked: they are skipped.
_HEALTHY: Final = 0
_LOW_HEADROOM: Final = 1
_TOLD_TO_WAIT: Final = 2
_OPEN: Final = frozenset({CircuitState.open, CircuitState.forced_open})


@attrs.frozen(slots=True)
class _Member:
    """A member and what the pool reads of it: its breaker and its vendor's rate-limit state, if any."""

    index: int
    provider: Any
    breaker: CircuitBreakerProvider | None
    vendor: Any  # the innermost provider with a ``rate_limit`` (an HTTPProvider), or None

    @property
    def name(self) -> str:
        return name_of(self.provider)

    def model_for(self, requested: str | None) -> str | None:
        # Equivalent deployments may name the model differently (an Azure deployment): a member's own wins.
        own = default_model_of(self.provider)
        model = own or requested
        return str(model) if model else None

    def rate_limit(self) -> RateLimitState | None:
        state = getattr(self.vendor, "rate_limit", None) if self.vendor is not None else None
        return state if isinstance(state, RateLimitState) else None


def _member(index: int, provider: Any) -> _Member:
    # The member and the providers it decorates, outer to inner (not into a nested chain's members).
    spine = [node.provider for node in describe_chain(provider).spine()]
    breaker = next((p for p in spine if isinstance(p, CircuitBreakerProvider)), None)
    vendor = next((p for p in spine if hasattr(p, "rate_limit")), None)
    return _Member(index, provider, breaker, vendor)


class PoolProvider(MultiProvider):
    """The provider :func:`with_pool` returns.  See there for the semantics.

    A :class:`~agentactors.resilience.MultiProvider` (each member calls its own default model; what the
    pool can do is what every member can).  ``in_flight`` is the number of calls each member has in
    flight through this pool, in member order.
    """

    label: ClassVar[str] = "pool"

    def __init__(
        self,
        members: Iterable[LLMProvider | Any],
        *,
        strategy: Strategy,
        weights: Sequence[float] | None,
        min_headroom: float,
        name: str | None,
        clock: Clock | None,
    ) -> None:
        super().__init__(members, name=name)
        members = self.members  # (taken once by the base: an iterator of members is read once)
        # Each a ValueError (a TypeError for the clock) naming its setting, here rather than in the first call.
        if not isinstance(strategy, str) or strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {sorted(STRATEGIES)}, not {strategy!r}")
        if weights is not None:
            if not isinstance(weights, Iterable) or isinstance(weights, str | bytes):
                raise ValueError(f"weights must be one positive number per member, not {weights!r}")
            weights = list(weights)
            if len(weights) != len(members):
                raise ValueError(f"weights needs one weight per member ({len(members)}), got {len(weights)}")
            # Numbers, not strings (float("2") was taken) nor bools; `not w > 0` refuses NaN as well.
            if any(not (is_number(w) and w > 0 and math.isfinite(w)) for w in weights):
                raise ValueError(f"weights must be positive, finite numbers, not {weights!r}")
            weights = [float(w) for w in weights]
            # Only "weighted" reads them: with another strategy they were silently ignored.
            if strategy != "weighted":
                raise ValueError(f"weights are used only by strategy='weighted', not by strategy={strategy!r}: "
                                 "say strategy='weighted' or leave weights out")
        elif strategy == "weighted":
            raise ValueError("strategy='weighted' needs weights=")
        if not is_number(min_headroom) or not 0 <= min_headroom < 1:
            raise ValueError(f"min_headroom must be a number within [0, 1), not {min_headroom!r}")
        check_callable(clock, "clock", "a callable returning seconds")
        self.strategy = strategy
        self.weights: tuple[float, ...] = tuple(weights) if weights is not None else (1.0,) * len(members)
        self.min_headroom = min_headroom
        self._members = tuple(_member(i, m) for i, m in enumerate(members))
        self._clock: Clock = clock or default_clock
        self._turn = itertools.count()
        self._current = [0.0] * len(members)  # smooth weighted round robin state
        self.in_flight = [0] * len(members)

    def __repr__(self) -> str:
        return f"PoolProvider({', '.join(repr(m) for m in self.members)}, strategy={self.strategy!r})"

    # -- choosing ---------------------------------------------------------------------------------

    def _health(self, member: _Member, model: str | None, now: float) -> int | None:
        """The member's rank for this call (``None``: its breaker is open — skip it)."""
        if member.breaker is not None and member.breaker.state_for(model) in _OPEN:
            return None
        limits = member.rate_limit()
        if limits is None:
            return _HEALTHY
        if limits.blocked(now):
            return _TOLD_TO_WAIT
        headroom = limits.headroom(now)
        return _LOW_HEADROOM if headroom is not None and headroom < self.min_headroom else _HEALTHY

    def order(self, request: LLMRequest) -> list[tuple[_Member, str | None]]:
        """The members to try for ``request``, in order, each with the model it would call.

        Members whose breaker is open are left out (``pool.skipped``).  Choosing is a decision
        (round-robin turns and weighted shares advance), so call it once per call.
        """
        now = self._clock()
        ranked: list[tuple[int, _Member, str | None]] = []
        for member in self._members:
            model = member.model_for(request.model)
            rank = self._health(member, model, now)
            if rank is None:
                emit("pool.skipped", member=member.name, index=member.index, reason="circuit_open")
                continue
            ranked.append((rank, member, model))
        if not ranked:
            return []
        best = min(r for r, _, _ in ranked)
        turn = next(self._turn)
        n = len(self._members)
        if self.strategy == "weighted":
            chosen = self._weighted_pick([m.index for r, m, _ in ranked if r == best])

            def key(item: tuple[int, _Member, str | None]) -> tuple[float, ...]:
                rank, member, _ = item
                return (rank, member.index != chosen, -self.weights[member.index], member.index)
        elif self.strategy == "round_robin":

            def key(item: tuple[int, _Member, str | None]) -> tuple[float, ...]:
                rank, member, _ = item
                return (rank, (member.index - turn) % n)
        else:
            in_flight = self.in_flight

            def key(item: tuple[int, _Member, str | None]) -> tuple[float, ...]:
                rank, member, _ = item
                return (rank, in_flight[member.index], (member.index - turn) % n)

        ranked.sort(key=key)
        return [(member, model) for _, member, model in ranked]

    def _weighted_pick(self, candidates: list[int]) -> int:
        """Smooth weighted round robin over ``candidates`` (nginx's): each gets its weight's share of picks."""
        current, weights = self._current, self.weights
        total = 0.0
        for i in candidates:
            current[i] += weights[i]
            total += weights[i]
        chosen = max(candidates, key=lambda i: current[i])
        current[chosen] -= total
        return chosen

    # -- calling ----------------------------------------------------------------------------------

    def _check_forced(self, request: LLMRequest) -> None:
        if request.tool_choice.forced:
            for member in self._members:
                # As the member itself says it (a provider declared not to carry it is named so).
                check_forced_tool_choice(member.provider, request, member.model_for(request.model))

    def _all_open(self, request: LLMRequest) -> CircuitOpenError:
        waits = []
        for member in self._members:
            if member.breaker is not None:
                stats = member.breaker.stats_for(member.model_for(request.model))
                if stats.retry_after is not None:
                    waits.append(stats.retry_after)
        return CircuitOpenError(
            f"every member of {self._name} has an open circuit breaker",
            provider=self._name,
            model=request.model or self.default_model,
            retry_after=min(waits) if waits else None,
        )

    async def _walk(
        self, request: LLMRequest, call: Callable[[Any, LLMRequest], Any]
    ) -> tuple[_Member, Any, LLMRequest]:
        """Try the members in :meth:`order`; return the one that served, what ``call`` returned and the request it
        was sent.

        The first member tried is sent the caller's request itself when it calls the model asked for (the no-fault
        path makes no copy); any other gets a request of its own — ``with_model`` made one for another model,
        :func:`~.timeout.own_request` one for a later member — so that what its layers note against it is told as
        its own, and handed on to the caller's request when it is done: here when it failed or was cancelled, by
        the caller of this method when it served (at once for an answer, at its end for a stream).
        """
        self._check_forced(request)
        plan = self.order(request)
        if not plan:
            raise self._all_open(request)
        errors: list[ProviderError] = []
        previous: _Member | None = None
        for member, model in plan:
            sub = request if model == request.model else request.with_model(model)
            if previous is not None:
                # A circuit breaker above that admitted this call may have opened meanwhile: no further member is
                # called (as with_fallback and a retry below it do), the last member's error is raised.
                shut = _gate.refusal()
                if shut is not None:
                    raise self.shut_out(errors, member.name, shut, event="pool.exhausted", label=self._name)
                last = errors[-1]
                emit("pool.moved", from_member=previous.name, to_member=member.name, to_model=sub.model,
                     reason=last.kind, error=last)
                if sub is request:
                    sub = own_request(request)
            self.in_flight[member.index] += 1
            try:
                result = await call(member.provider, sub)
                if call is _complete and type(result) is not LLMResponse and not isinstance(result, LLMResponse):
                    # A non-answer (a custom provider's None, str, dict) is the member's failure: moved on from.
                    raise broken_contract("the answer of complete()", result, "an LLMResponse",
                                          provider=member.name, model=model)
            except Exception as exc:
                error = as_provider_error(exc, member.provider, model)
            except BaseException:
                # Cancellation leaves at once, no member is tried after it: what this one's layers noted goes with it.
                hand_on(sub, request)
                raise
            else:
                return member, result, sub
            finally:
                self.in_flight[member.index] -= 1
            hand_on(sub, request)  # what the layers of a member that failed noted (nothing if sent the request)
            # Raised here, not in the except block: there a foreign exception (its text may hold a
            # credential) would ride along as the classified error's __context__.
            if error.kind not in _MOVES or isinstance(error, StreamInterruptedError):
                if errors:
                    error.add_note(f"{self._name}: tried before: " + "; ".join(str(e) for e in errors))
                raise error
            errors.append(error)
            previous = member
        emit("pool.exhausted", errors=tuple(errors))
        raise AllProvidersFailedError(f"every member of {self._name} failed", errors, provider=self._name)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The first member's response, in this call's order (see :func:`with_pool`).

        A member's attempt a ``with_timeout`` abandoned was sent and is billed: it rides on the answer of the member
        that served (:func:`~agentactors.pricing.with_cut_short`), or, when the call fails, goes to the layer around
        that collects them, else to the run (:func:`~.timeout.keep_abandoned`) — as ``with_fallback`` does.

        Cancellation: re-raised at once, unchanged; no member is tried after it, and the member's call in flight is
        no longer counted in flight.  The attempts abandoned so far are handed on as when every member failed.
        """
        collecting = abandoned_attempts()
        try:
            with collecting as abandoned:
                member, response, sub = await self._walk(request, _complete)
        except BaseException:
            collecting.keep(request)  # (outside the block: inside it, its own list is the one collecting)
            raise
        hand_on(sub, request)  # what the serving member's layers noted against its own request (if it had one)
        served: LLMResponse = response if response.provider else attrs.evolve(response, provider=member.name)
        return with_cut_short(served, abandoned) if abandoned else served

    def stream(self, request: LLMRequest) -> StreamContext:
        """The first member's stream that reaches its first event; a failure after it does not move."""
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: LLMRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        async def open_member(provider: Any, sub: LLMRequest) -> OpenedStream:
            return await open_stream(lambda: stream_of(provider, sub), provider=name_of(provider), model=sub.model)

        collecting = abandoned_attempts()
        try:
            with collecting as abandoned:
                member, opened, sub = await self._walk(request, open_member)
        except BaseException:
            collecting.keep(request)  # (outside the block: inside it, its own list is the one collecting)
            raise
        model = member.model_for(request.model)
        # The stream is in flight until it ends: count it against the member that serves it.
        self.in_flight[member.index] += 1
        try:
            if not abandoned and sub is request:  # the common case: nothing to carry
                async with opened.stack:
                    events = relay(opened, provider=member.provider, model=model)
                    try:
                        yield events
                    finally:
                        await events.aclose()
                return

            def carry(event: StreamEvent) -> StreamEvent:
                # (the members abandoned before this one, billed: they ride on its end, as on an answer — not on an
                # end without one, relayed as it is for the run's step to name: streams.Carried charges them)
                if isinstance(event, StreamEnd) and isinstance(event.response, LLMResponse):
                    return StreamEnd(with_cut_short(event.response, abandoned))
                return event

            # As with_fallback's: the attempts abandoned before this member ride on its end, and are charged all the
            # same when it never gets there; a member's call left alive is charged as that member's.
            carried = Carried(relay(opened, provider=member.provider, model=model,
                                    transform=carry if abandoned else None))
            async with serve_carried(opened, carried, request, sub, member.provider, model, abandoned) as served:
                yield served
        finally:
            self.in_flight[member.index] -= 1


def _complete(provider: Any, request: LLMRequest) -> Awaitable[LLMResponse]:
    """A member's ``complete`` (one function for every call: no closure made per call)."""
    return provider.complete(request)  # type: ignore[no-any-return]


def with_pool(
    *members: LLMProvider | Any,
    strategy: Strategy = "least_loaded",
    weights: Sequence[float] | None = None,
    min_headroom: float = 0.1,
    name: str | None = None,
    clock: Clock | None = None,
) -> PoolProvider:
    """Spread calls over ``members``, equivalent deployments of one model (two regions, two keys).

    * **Order, per call**: members whose circuit breaker is open are skipped (``pool.skipped``;
      the breaker is found by walking the member's decorators, so put breakers *inside* the
      pool: ``with_pool(with_circuit_breaker(with_retry(a)), with_circuit_breaker(with_retry(b)))``);
      then members with room, then those near their vendor's rate limit (headroom below
      ``min_headroom`` of a budget, as their last response's ``x-ratelimit-*`` /
      ``anthropic-ratelimit-*`` headers said, until the reset they gave), then those told to wait
      (a ``retry-after`` still running, or a budget at zero).  A half-open member ranks with the
      healthy: its breaker admits the probe and refuses the rest for free.  Within a rank:
      ``strategy="least_loaded"`` (fewest calls in flight through the pool; ties in turn),
      ``"round_robin"``, or ``"weighted"`` (``weights``, one positive number per member: each
      member serves its share of the calls, smoothly interleaved; only ``"weighted"`` reads them, so
      ``weights`` with another strategy is a ``ValueError``).
    * **Failover**: a transient failure or a breaker's refusal moves the call to the next member
      (``pool.moved``); a request fault, a cancellation or a stream failure after its first event
      never moves.  All failed: :class:`~agentactors.errors.AllProvidersFailedError` (kind of the
      last error), so a :func:`with_fallback` above moves on; every breaker open:
      :class:`~agentactors.errors.CircuitOpenError` naming the pool, with the soonest ``retry_after``.
    * **Models**: each member calls its own ``default_model`` when it has one (deployments may name
      the model differently), else ``request.model``.
    * **Capabilities**: ``capabilities(model)`` is what every member can do for the model it would call
      (any member may serve any call; so are the first protocol's ``carries_tools``,
      ``supports_forced_tool_choice(model)``, ...); a forced choice some member cannot carry raises
      :class:`~agentactors.errors.UnsupportedToolChoiceError` before anything is sent.
    * **Streams**: failover only before the first event, like :func:`with_fallback`; a stream counts
      as in flight until it ends.
    * **Calls cut short** (``docs/costs.md``), as :func:`with_fallback` charges them: an attempt a
      :func:`with_timeout` in a member abandoned was sent, and rides on the answer of the member that
      serves (a stream's ``StreamEnd``), or goes to the layer around when every member failed, else to
      the run — once.  A member after the first, or of another model, is sent a request of its own, and
      what its layers note against it (a hedge's copies, a batch price) is handed on to the caller's.
    * ``LLMResponse.provider`` names the member that served when the member did not.
      ``aclose()`` closes every member.
    * Under a circuit breaker whose circuit opened since it admitted the call, no further member is
      called: the last member's error is raised, noted, and ``pool.exhausted`` has ``reason="circuit_open"``
      (as :func:`~agentactors.resilience.with_fallback`).

    Events: ``pool.skipped(member, index, reason)``, ``pool.moved(from_member, to_member, reason,
    error)``, ``pool.exhausted(errors)``.
    """
    return PoolProvider(members, strategy=strategy, weights=weights, min_headroom=min_headroom, name=name, clock=clock)
