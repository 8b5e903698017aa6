"""Property: random stacks of the resilience decorators against random vendor behaviour (both backends, virtual time).

A stack is 1-4 decorators in any order and with any parameters (timeout, retry, breaker, hedge, fallback, pool)
over fake vendors whose every call is drawn: an answer after a virtual delay, a ``ProviderError`` of each
``ErrorKind`` (some with a ``retry_after``), a foreign exception, a hang until cancelled, a forced tool choice
refused before sending; for streams, some events then a failure, a complete stream, a hang mid-stream.  Calls are
``complete()`` and ``stream()`` (consumed whole), some forcing a tool choice, some concurrent, some cancelled from
outside after a virtual delay.

Every layer is watched by a neutral :class:`Tap` (a ``ProviderDecorator``) that records each invocation, its parent
invocation (through a context variable: a hedge's copies inherit it), the events it passed and how it ended; the
vendors record theirs.  What is asserted is what ``docs/resilience.md`` and the docstrings say:

* every call ends in a response, or a stream ending in exactly one ``StreamEnd``, or a ``ProviderError``, or the
  outside cancellation — within a bound of virtual time derived from the stack's parameters when the stack bounds
  its vendors' hangs; never a bare exception;
* a failure after a stream's first event is a ``StreamInterruptedError`` out of every layer; the consumer's events
  are one vendor call's, in order, none twice;
* ``with_retry`` makes at most ``max_attempts`` attempts and none after an error it may not retry (request kind,
  ``StreamInterruptedError``, ``CircuitOpenError``);
* ``with_fallback`` / ``with_pool`` never move on a request error, a cancellation or after a stream's first event;
* ``with_hedge`` sends at most one extra copy, never after a request error of the first, and no copy outlives it;
* ``UnsupportedToolChoiceError`` is raised before sending and never retried, moved, hedged or counted by a breaker;
* nothing outlives its caller: every invocation started has ended when the call is over; no ``ResourceWarning``.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

import anyio
import attrs
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentactors.errors import (
    CircuitOpenError,
    ErrorKind,
    ProviderError,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from agentactors.messages import LLMRequest, LLMResponse, Message, StreamEnd, StreamEvent, TextDelta, ToolChoice
from agentactors.providers import classify_exception
from agentactors.providers.port import Capabilities, StreamContext, forced_tool_choice_for
from agentactors.resilience import (
    CircuitBreakerProvider,
    PoolProvider,
    ProviderDecorator,
    with_circuit_breaker,
    with_fallback,
    with_hedge,
    with_pool,
    with_retry,
    with_timeout,
)
from agentactors.testing import virtual_backends
from tests.support.resilience import LOOKUP

# -- what the vendors do ------------------------------------------------------------------------------

DELAYS = (0.0, 0.2, 1.0, 3.0)
GAPS = (0.0, 0.1)
#: The longest a vendor call takes when it does not hang: the longest delay, then 4 events 0.1 s apart.
VENDOR_MAX = 3.0 + 4 * 0.1
#: The longest wait a retry takes (``max_delay``; the retry_after values it honours are shorter).
MAX_DELAY = 2.0
RETRY_AFTERS = (None, 0.5, 2.0, 100.0)
FOREIGN = "foreign"  # a RuntimeError: not a ProviderError (classified as a request fault)

behaviour = st.one_of(
    st.tuples(st.just("ok"), st.sampled_from(DELAYS), st.integers(1, 4), st.sampled_from(GAPS)),
    st.tuples(
        st.just("err"),
        st.sampled_from(DELAYS),
        st.sampled_from([*[k.value for k in ErrorKind if k is not ErrorKind.circuit_open], FOREIGN]),
        st.sampled_from(RETRY_AFTERS),
    ),
    st.tuples(st.just("hang")),
    st.tuples(st.just("cut"), st.sampled_from(DELAYS), st.integers(1, 3), st.sampled_from(["transient", FOREIGN])),
    st.tuples(st.just("hangmid"), st.sampled_from(DELAYS), st.integers(1, 3)),
    # Failing while the stream is opened (the answer's headers), hanging there, or a stream with no event at all.
    st.tuples(
        st.just("openerr"),
        st.sampled_from(DELAYS),
        st.sampled_from([*[k.value for k in ErrorKind if k is not ErrorKind.circuit_open], FOREIGN]),
        st.sampled_from(RETRY_AFTERS),
    ),
    st.tuples(st.just("openhang")),
    st.tuples(st.just("empty"), st.sampled_from(DELAYS)),
    # A vendor SDK that sends from a task group: its error wrapped in an ExceptionGroup of one.
    st.tuples(st.just("group"), st.sampled_from(DELAYS), st.sampled_from(["transient", "request", "account"])),
)
vendor_spec = st.builds(
    lambda script, refuses, honest, checkpoint: ("vendor", tuple(script), refuses, honest, checkpoint),
    st.lists(behaviour, min_size=1, max_size=5),
    st.booleans(),
    st.booleans(),
    st.booleans(),  # its stream's exit awaits (closing an HTTP response), unshielded
)


def _wrap(child: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    one = st.one_of(
        st.tuples(
            st.just("timeout"),
            st.sampled_from([None, 1.0, 5.0]),
            st.sampled_from([None, 0.5, 2.0]),
            st.sampled_from([None, 0.3, 1.0]),
            child,
        ).filter(lambda t: t[1:4] != (None, None, None)),
        st.tuples(
            st.just("retry"),
            st.integers(1, 4),
            st.sampled_from([0.0, 0.1, 0.5]),
            st.sampled_from([1.0, 60.0]),
            st.sampled_from([None, None, 1.0, 4.0]),  # deadline
            child,
        ),
        st.tuples(
            st.just("breaker"),
            st.integers(1, 3),
            st.integers(2, 4),
            st.sampled_from([0.5, 2.0, 10.0]),
            st.integers(1, 2),
            st.sampled_from([1.0, 60.0]),
            st.booleans(),  # count_mid_stream
            child,
        ),
        st.tuples(
            st.just("hedge"),
            st.sampled_from([0.0, 0.3, 1.5]),
            st.sampled_from([0.5, 1.0]),
            st.one_of(st.none(), vendor_spec),  # to: another vendor
            child,
        ),
        st.tuples(st.just("fallback"), st.booleans(), st.booleans(), st.lists(child, min_size=2, max_size=3)),
        st.tuples(
            st.just("pool"), st.sampled_from(["least_loaded", "round_robin"]), st.lists(child, min_size=2, max_size=2)
        ),
    )
    return one


def _decorators(spec: Any) -> int:
    if spec[0] == "vendor":
        return 0
    kids = spec[-1] if isinstance(spec[-1], list) else [spec[-1]]
    if spec[0] == "hedge" and spec[3] is not None:
        kids = [*kids, spec[3]]
    return 1 + sum(_decorators(k) for k in kids)


stacks = st.recursive(vendor_spec, _wrap, max_leaves=4).filter(lambda s: 1 <= _decorators(s) <= 4)

call_spec = st.tuples(
    st.sampled_from(["complete", "stream"]),
    st.booleans(),  # a forced tool choice
    st.sampled_from([None, None, 0.0, 0.1, 0.7, 2.5]),  # cancelled from outside after this long
    st.sampled_from([None, None, None, 0, 1, 2]),  # a stream's consumer leaves after this many events
    st.booleans(),  # ... by raising an error of its own (else by breaking out)
)
waves = st.lists(
    st.tuples(st.sampled_from([0.0, 0.5, 5.0]), st.lists(call_spec, min_size=1, max_size=5)), min_size=1, max_size=4
)

# -- the record of every invocation -------------------------------------------------------------------

_parent: ContextVar[int | None] = ContextVar("stack_property_parent", default=None)


@attrs.define
class Inv:
    id: int
    node: Any  # the spec of the layer (a tap's decorator, or the vendor)
    owner: Any  # the tap or the vendor
    call: str  # the caller's call id
    kind: str  # complete / stream
    forced: bool
    parent: int | None
    start: float
    end: float | None = None
    outcome: BaseException | str | None = None  # "ok", "cancelled", or the exception
    events: int = 0


class Log:
    def __init__(self) -> None:
        self.invs: list[Inv] = []
        self.ids = itertools.count()

    def start(self, owner: Any, request: LLMRequest, kind: str) -> Inv:
        inv = Inv(
            next(self.ids),
            owner.spec,
            owner,
            request.messages[0].content,
            kind,
            request.tool_choice.forced,
            _parent.get(),
            anyio.current_time(),
        )
        self.invs.append(inv)
        return inv

    @staticmethod
    def end(inv: Inv, outcome: BaseException | str) -> None:
        assert inv.end is None, f"invocation {inv} ended twice"
        inv.end = anyio.current_time()
        inv.outcome = "cancelled" if isinstance(outcome, anyio.get_cancelled_exc_class()) else outcome


class Oops(Exception):
    """The stream consumer's own error."""


def _error(kind: str, retry_after: float | None, name: str) -> Exception:
    if kind == FOREIGN:
        return RuntimeError("the vendor's SDK broke")
    return ProviderError(f"{kind} failure", provider=name, kind=kind, retry_after=retry_after)


class Vendor:
    """A fake vendor: each call takes the next behaviour of its script (round and round)."""

    def __init__(self, spec: Any, name: str, log: Log) -> None:
        _, self.script, self.refuses, self.honest, self.checkpoint = spec
        self.spec = spec
        self.name = name
        self.default_model = f"{name}-model"
        self.log = log
        self.turn = 0

    def capabilities(self, model: str | None) -> Capabilities:
        # An honest vendor that refuses a forced choice says so; a dishonest one finds out when called.
        return Capabilities(forced_tool_choice=not (self.refuses and self.honest), streaming=True)

    def _take(self, request: LLMRequest, kind: str) -> tuple[Inv, Any]:
        inv = self.log.start(self, request, kind)
        if request.tool_choice.forced and self.refuses:
            error = UnsupportedToolChoiceError(provider=self.name, model=request.model)
            Log.end(inv, error)
            raise error
        b = self.script[self.turn % len(self.script)]
        self.turn += 1
        return inv, b

    def _text(self, inv: Inv, i: int) -> str:
        return f"<{inv.id}.{i}>"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        inv, b = self._take(request, "complete")
        try:
            if b[0] in ("hang", "hangmid", "openhang"):
                await anyio.sleep(b[1] if b[0] == "hangmid" else 0)
                await anyio.sleep_forever()
            await anyio.sleep(b[1])
            if b[0] in ("err", "openerr"):
                raise _error(b[2], b[3], self.name)
            if b[0] == "group":
                raise ExceptionGroup("the SDK's task group", [_error(b[2], None, self.name)])
            if b[0] == "cut":
                raise _error(b[3], None, self.name)
            response = LLMResponse(content=self._text(inv, 0), model=request.model, provider=self.name)
        except BaseException as exc:
            Log.end(inv, exc)
            raise
        Log.end(inv, "ok")
        return response

    def stream(self, request: LLMRequest) -> StreamContext:
        inv, b = self._take(request, "stream")
        return self._stream(inv, b, request)

    @asynccontextmanager
    async def _stream(self, inv: Inv, b: Any, request: LLMRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        async def events() -> AsyncGenerator[StreamEvent, None]:
            if b[0] == "hang":
                await anyio.sleep_forever()
            await anyio.sleep(b[1])
            if b[0] == "err":
                raise _error(b[2], b[3], self.name)
            if b[0] == "group":
                raise ExceptionGroup("the SDK's task group", [_error(b[2], None, self.name)])
            if b[0] == "empty":
                return
            count = b[2]
            gap = b[3] if b[0] == "ok" else 0.0
            text = ""
            for i in range(count):
                piece = self._text(inv, i)
                text += piece
                inv.events += 1
                yield TextDelta(piece)
                await anyio.sleep(gap)
            if b[0] == "cut":
                raise _error(b[3], None, self.name)
            if b[0] == "hangmid":
                await anyio.sleep_forever()
            inv.events += 1
            yield StreamEnd(LLMResponse(content=text, model=request.model, provider=self.name))

        try:
            if b[0] == "openhang":
                await anyio.sleep_forever()
            if b[0] == "openerr":
                await anyio.sleep(b[1])
                raise _error(b[2], b[3], self.name)
        except BaseException as exc:
            Log.end(inv, exc)
            raise
        gen = events()
        try:
            yield gen
        except BaseException as exc:
            try:
                await self._close(gen)
            except BaseException as late:
                Log.end(inv, late)
                raise
            Log.end(inv, exc)
            raise
        try:
            await self._close(gen)
        except BaseException as late:
            Log.end(inv, late)
            raise
        Log.end(inv, "ok")

    async def _close(self, gen: AsyncGenerator[StreamEvent, None]) -> None:
        try:
            if self.checkpoint:
                await anyio.lowlevel.checkpoint()  # (raises in a cancelled scope: as closing a response would)
        finally:
            with anyio.CancelScope(shield=True):
                await gen.aclose()

    async def aclose(self) -> None:
        pass


class Tap(ProviderDecorator):
    """A neutral layer recording every invocation of the layer it wraps (its spec is ``node``)."""

    def __init__(self, inner: Any, node: Any, log: Log) -> None:
        super().__init__(inner)
        self.spec = node
        self.log = log

    async def complete(self, request: LLMRequest) -> LLMResponse:
        inv = self.log.start(self, request, "complete")
        token = _parent.set(inv.id)
        try:
            response: LLMResponse = await self._inner.complete(request)
        except BaseException as exc:
            Log.end(inv, exc)
            raise
        finally:
            _parent.reset(token)
        Log.end(inv, "ok")
        return response

    def stream(self, request: LLMRequest) -> StreamContext:
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: LLMRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        inv = self.log.start(self, request, "stream")
        try:
            token = _parent.set(inv.id)
            try:
                cm = self._inner.stream(request)
                events = await cm.__aenter__()
            finally:
                _parent.reset(token)  # (before the yield: the consumer's block runs in this context)
            try:

                async def counted() -> AsyncGenerator[StreamEvent, None]:
                    async for event in events:
                        inv.events += 1
                        yield event

                gen = counted()
                try:
                    yield gen
                finally:
                    await gen.aclose()
            except BaseException as exc:
                if not await cm.__aexit__(type(exc), exc, exc.__traceback__):
                    raise
            else:
                await cm.__aexit__(None, None, None)
        except BaseException as exc:
            Log.end(inv, exc)
            raise
        Log.end(inv, "ok")


# -- building a stack, and the time it may take --------------------------------------------------------


def build(spec: Any, log: Log, names: Callable[[], str], seed: int, breakers: list[CircuitBreakerProvider]) -> Any:
    kind = spec[0]
    if kind == "vendor":
        return Vendor(spec, names(), log)
    if kind == "timeout":
        _, attempt, first, idle, child = spec
        inner = build(child, log, names, seed, breakers)
        made: Any = with_timeout(inner, attempt=attempt, first_event=first, idle=idle)
    elif kind == "retry":
        _, attempts, base, max_ra, deadline, child = spec
        made = with_retry(
            build(child, log, names, seed, breakers),
            max_attempts=attempts,
            deadline=deadline,
            base_delay=base,
            max_delay=MAX_DELAY,
            max_retry_after=max_ra,
            rng=random.Random(seed),
        )
    elif kind == "breaker":
        _, consecutive, min_calls, open_for, probes, wait, mid_stream, child = spec
        made = with_circuit_breaker(
            build(child, log, names, seed, breakers),
            count_mid_stream=mid_stream,
            consecutive_failures=consecutive,
            min_calls=min_calls,
            open_duration=open_for,
            half_open_max_calls=probes,
            max_half_open_wait=wait,
        )
        breakers.append(made)
    elif kind == "hedge":
        _, after, extra, to, child = spec
        made = with_hedge(
            build(child, log, names, seed, breakers),
            after=after,
            max_extra=extra,
            to=None if to is None else build(to, log, names, seed, breakers),
            window=10,
        )
    elif kind == "fallback":
        _, account, skip, kids = spec
        made = with_fallback(
            *(build(k, log, names, seed, breakers) for k in kids),
            fallback_on={"transient", "circuit_open", "account"} if account else None,
            skip_incapable=skip,
        )
    else:
        _, strategy, kids = spec
        made = with_pool(*(build(k, log, names, seed, breakers) for k in kids), strategy=strategy)
    return Tap(made, spec, log)


def _layers(provider: Any) -> list[Any]:
    """Every provider of a built stack, outer to inner."""
    out = [provider]
    for nxt in (getattr(provider, "inner", None), getattr(provider, "to", None), *getattr(provider, "members", ())):
        if nxt is not None:
            out.extend(_layers(nxt))
    return out


def bound(spec: Any, stream: bool) -> float:
    """The longest a call through ``spec`` may take (virtual seconds; ``inf``: a hang is not bounded)."""
    kind = spec[0]
    if kind == "vendor":
        return math.inf if any(b[0] in ("hang", "hangmid", "openhang") for b in spec[1]) else VENDOR_MAX
    if kind == "timeout":
        _, attempt, first, idle, child = spec
        inner = bound(child, stream)
        limit = attempt if attempt is not None else math.inf
        if stream and first is not None and idle is not None:
            limit = min(limit, first + 4 * idle + 1e-6)  # at most 4 events, then the end (or a hang)
        return min(inner, limit)
    if kind == "retry":
        attempts: int = spec[1]
        return attempts * bound(spec[-1], stream) + (attempts - 1) * MAX_DELAY
    if kind == "breaker":
        return bound(spec[-1], stream)
    if kind == "hedge":
        after: float = spec[1]
        to = spec[3]
        return after + max(bound(spec[-1], stream), bound(to, stream) if to is not None else 0.0)
    return sum(bound(k, stream) for k in spec[-1])


# -- the scenario ---------------------------------------------------------------------------------------


@attrs.define
class Result:
    call: str
    spec: Any
    started: float
    ended: float = 0.0
    outcome: Any = None  # an LLMResponse, a list of events, an exception or "cancelled"
    outside: float | None = None  # when it was cancelled from outside (if it was)
    before: list[Any] = attrs.Factory(list)  # breaker stats before a lone call
    after: list[Any] = attrs.Factory(list)


def scenario(stack: Any, plan: list[tuple[float, list[Any]]], seed: int, backend: str) -> tuple[Log, list[Result]]:
    log = Log()
    counter = itertools.count()
    breakers: list[CircuitBreakerProvider] = []
    provider = build(stack, log, lambda: f"v{next(counter)}", seed, breakers)
    pools = [inv for inv in _layers(provider) if isinstance(inv, PoolProvider)]
    results: list[Result] = []

    async def one(call: str, spec: Any, lone: bool) -> None:
        how, forced, cancel_after, leave_after, oops = spec
        request = LLMRequest(
            [Message.user(call)], tools=[LOOKUP], tool_choice=ToolChoice.required() if forced else ToolChoice.auto()
        )
        result = Result(call, spec, anyio.current_time())
        results.append(result)
        limit = bound(stack, how == "stream")
        watchdog = cancel_after if cancel_after is not None else (limit + 1.0 if limit < math.inf else 10_000.0)
        if lone:
            result.before = [b.stats_for(None) for b in breakers]
        with anyio.move_on_after(watchdog) as scope:
            try:
                if how == "complete":
                    result.outcome = await provider.complete(request)
                else:
                    events: list[Any] = []
                    result.outcome = events
                    async with provider.stream(request) as stream:
                        async for event in stream:
                            if leave_after is not None and len(events) >= leave_after:
                                if oops:
                                    raise Oops(call)
                                break
                            events.append(event)
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:  # a bare exception is a finding: kept, asserted below
                result.outcome = exc
        result.ended = anyio.current_time()
        if scope.cancelled_caught:
            result.outcome = "cancelled"
            result.outside = watchdog
        if lone:
            result.after = [b.stats_for(None) for b in breakers]

    async def main() -> None:
        n = 0
        for gap, calls in plan:
            await anyio.sleep(gap)
            async with anyio.create_task_group() as tg:
                for spec in calls:
                    tg.start_soon(one, f"call-{n}", spec, len(calls) == 1)
                    n += 1

    name, options = dict(enumerate(virtual_backends()))[0 if backend == "asyncio" else 1]
    anyio.run(main, backend=name, backend_options=options)
    # Nothing held once every call is over: no probe permit, no call counted in flight by a pool.
    for b in breakers:
        assert b.stats_for(None).probes_in_flight == 0, f"a probe permit outlived its call: {b.stats_for(None)}"
    for pool in pools:
        assert pool.in_flight == [0] * len(pool.members), f"calls counted in flight after the end: {pool.in_flight}"
    return log, results


# -- the invariants -------------------------------------------------------------------------------------


def _honest(spec: Any) -> bool:
    """Whether every vendor of the stack says what it can do (a dishonest one refuses a choice it claims)."""
    if spec[0] == "vendor":
        return bool(spec[3]) or not spec[2]
    kids = spec[-1] if isinstance(spec[-1], list) else [spec[-1]]
    if spec[0] == "hedge" and spec[3] is not None:
        kids = [*kids, spec[3]]
    return all(_honest(k) for k in kids)


def _not_retryable(error: Any) -> bool:
    return isinstance(error, ProviderError) and (
        error.kind is ErrorKind.request or isinstance(error, StreamInterruptedError | CircuitOpenError)
    )


def check(stack: Any, log: Log, results: list[Result]) -> None:
    by_id = {inv.id: inv for inv in log.invs}
    children: dict[int, list[Inv]] = {}
    for inv in log.invs:
        if inv.parent is not None:
            children.setdefault(inv.parent, []).append(inv)
    # Nothing outlives the call: every invocation has ended, none after its parent.
    for inv in log.invs:
        assert inv.end is not None, f"invocation never ended (leaked): {inv}"
        if inv.parent is not None:
            parent = by_id[inv.parent]
            assert parent.end is not None and inv.end <= parent.end, f"{inv} outlived its parent {parent}"
    hedge_calls: dict[int, tuple[float, list[float | None]]] = {}
    for inv in log.invs:  # (in the order they started)
        node, kids = inv.node, sorted(children.get(inv.id, []), key=lambda i: (i.start, i.id))
        layer = node[0]
        if layer == "vendor":
            continue
        # Every layer raises ProviderErrors only (or cancellation, or the consumer's own error, unchanged).
        if isinstance(inv.outcome, BaseException) and not isinstance(inv.outcome, Oops):
            assert isinstance(inv.outcome, ProviderError), f"{layer} raised a bare {inv.outcome!r}"
            # A failure after the first event it passed is a StreamInterruptedError, from every layer.
            if inv.kind == "stream" and inv.events:
                assert isinstance(inv.outcome, StreamInterruptedError), f"{layer} after {inv.events} events: {inv}"
        if layer == "retry":
            _, attempts, base, max_ra, deadline, _child = node
            assert len(kids) <= attempts, f"retry made {len(kids)} attempts, max_attempts={attempts}"
            for n, (k, nxt) in enumerate(itertools.pairwise(kids), start=1):
                assert not _not_retryable(k.outcome), f"retry retried {k.outcome!r}"
                assert k.outcome != "cancelled", "retry went on after a cancellation"
                assert not k.events, "retry replayed a stream that had delivered an event"
                # The wait: exactly the vendor's retry_after when it is honoured, else the jittered backoff.
                assert k.end is not None
                if k.outcome == "ok":  # a stream that ended before its first event: malformed, retried
                    assert k.kind == "stream" and not k.events, k
                    ra = None
                else:
                    assert isinstance(k.outcome, BaseException)
                    ra = classify_exception(k.outcome, provider="x").retry_after
                gap = nxt.start - k.end
                if ra is not None and 0 < ra <= max_ra:
                    assert math.isclose(gap, ra, abs_tol=1e-6), f"waited {gap}, retry_after {ra}"
                else:
                    backoff = min(MAX_DELAY, base * 2 ** (n - 1))
                    assert 0.75 * backoff - 1e-6 <= gap <= backoff + 1e-6, f"waited {gap}, backoff {backoff}"
                if deadline is not None:
                    assert nxt.start <= kids[0].start + deadline + 1e-6, f"attempt past the {deadline}s deadline"
        if layer == "hedge":
            # Per call (in call order): when its hedge was sent, if it was.
            hedge_calls.setdefault(id(inv.owner), (node[2], []))[1].append(kids[1].start if len(kids) == 2 else None)
        if layer in ("fallback", "pool"):
            for k in kids[:-1]:
                o = k.outcome
                assert o != "cancelled", f"{layer} moved on a cancellation"
                assert not (isinstance(o, ProviderError) and o.kind is ErrorKind.request), f"{layer} moved on {o!r}"
                assert not isinstance(o, StreamInterruptedError), f"{layer} moved after a stream's first event"
                assert not k.events, f"{layer} moved after a stream's first event"
        if layer == "hedge":
            assert len(kids) <= 2, f"hedge sent {len(kids)} copies"
            hedge = inv.owner.inner
            if hedge.to is not None and inv.forced:
                # A forced tool choice the first copy's member or `to` cannot carry: no copy is sent to `to`.
                incapable = not forced_tool_choice_for(hedge.inner, hedge.inner.default_model) or not (
                    forced_tool_choice_for(hedge.to, hedge.to.default_model)
                )
                if incapable:
                    assert all(k.owner is not hedge.to for k in kids), f"a copy went to `to`: {kids}"

            won = [k for k in kids if k.outcome == "ok"]
            if inv.kind == "complete" and inv.outcome == "ok" and len(kids) == 2 and won:
                first_win = min(k.end or 0.0 for k in won)
                for k in kids:
                    if k.outcome != "ok" and (k.end or 0.0) > first_win:
                        # The loser is cancelled (its member sees it), not left to fail on its own.
                        assert k.outcome == "cancelled", f"hedge loser ended {k.outcome!r}"
            if len(kids) == 2:
                first, second = kids
                o = first.outcome
                # (Strictly before: with after=0 the hedge may be decided before the first copy ran at all.)
                if first.end is not None and first.end < second.start:
                    assert not isinstance(o, ProviderError), f"hedged after the first copy failed: {o!r}"
        # An UnsupportedToolChoiceError raised below ends this layer's invocation: nothing sent after it.
        for i, k in enumerate(kids):
            if isinstance(k.outcome, UnsupportedToolChoiceError) and layer != "hedge":
                later = [x for x in kids[i + 1 :] if x.start >= (k.end or 0)]
                assert not later, f"{layer} sent {later} after {k.outcome!r}"
    # A hedge sends at most about max_extra of the calls' hedges.  (Its window slides with the newest call that
    # decided: concurrent calls decide out of order, so the share is checked over all calls, with a window's slack.)
    for max_extra, sent_at in hedge_calls.values():
        hedged = sum(1 for at in sent_at if at is not None)
        assert hedged <= max_extra * (len(sent_at) + 10) + 1e-9, f"hedged past max_extra: {sent_at}"
    # Each call's outcome.
    for r in results:
        how, forced, cancel_after, leave_after, oops = r.spec
        limit = bound(stack, how == "stream")
        o = r.outcome
        if o == "cancelled":
            assert r.outside is not None
            assert cancel_after is not None or limit == math.inf, (
                f"{r.call} hung: not over after {r.outside - 1.0:g}s, the stack's bound"
            )
            # Cancellation is prompt: nothing waits on the way out.
            assert r.ended - r.started <= r.outside + 1e-6, f"{r.call} took {r.ended - r.started} to cancel"
            continue
        assert r.ended - r.started <= limit + 1e-6, f"{r.call} took {r.ended - r.started}, bound {limit}"
        if isinstance(o, Oops):
            # The consumer's own error comes back as it was raised: never classified, never wrapped.
            assert how == "stream" and oops and o.args == (r.call,), f"{r.call}: {o!r}"
            continue
        if how == "stream" and oops and leave_after is not None and isinstance(o, list):
            assert len(o) <= leave_after, f"{r.call}: the consumer's error was lost: {o}"
        if isinstance(o, BaseException):
            assert isinstance(o, ProviderError), f"{r.call} raised a bare {o!r}"
            if isinstance(o, UnsupportedToolChoiceError):
                assert forced, f"{r.call}: UnsupportedToolChoiceError without a forced tool choice"
            sent = [
                i for i in log.invs
                if i.call == r.call and i.node[0] == "vendor" and not isinstance(i.outcome, UnsupportedToolChoiceError)
            ]
            if isinstance(o, UnsupportedToolChoiceError) and _honest(stack):
                # Every vendor says what it can do: the refusal comes before anything is sent.
                assert not sent, f"{r.call}: {o!r} after sending {sent}"
            if isinstance(o, UnsupportedToolChoiceError) and r.before and r.ended == r.started and not sent:
                # A lone call refused before anything was sent: no breaker's counts moved.
                assert r.before == r.after, f"{r.call}: a breaker counted {o!r}"
        elif how == "complete":
            assert isinstance(o, LLMResponse)
        else:
            assert isinstance(o, list)
            ends = [e for e in o if isinstance(e, StreamEnd)]
            if leave_after is None or len(o) < leave_after:
                assert o and len(ends) == 1 and o[-1] is ends[0], f"{r.call}: not one StreamEnd at the end: {o}"
            else:
                assert len(ends) <= 1 and (not ends or o[-1] is ends[0]), f"{r.call}: {o}"
            pieces = [e.text for e in o if isinstance(e, TextDelta)]
            # One vendor call's events, in order, none twice.
            ids = {p.split(".")[0] for p in pieces}
            assert len(ids) <= 1, f"{r.call}: events of several vendor calls: {pieces}"
            assert pieces == [f"{p.split('.')[0]}.{i}>" for i, p in enumerate(pieces)], pieces


@settings(
    max_examples=int(os.environ.get("STACK_EXAMPLES", "600")),  # (a soak: STACK_EXAMPLES=20000 --timeout=0)
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(stack=stacks, plan=waves, seed=st.integers(0, 2**16), backend=st.sampled_from(["asyncio", "trio"]))
def test_random_stacks_keep_their_documented_promises(
    stack: Any, plan: list[tuple[float, list[Any]]], seed: int, backend: str
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log, results = scenario(stack, plan, seed, backend)
    resource = [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert not resource, [str(w.message) for w in resource]
    check(stack, log, results)
    # What the example exercised (shown by --hypothesis-show-statistics).
    event(f"decorators: {_decorators(stack)}")
    for r in results:
        o = r.outcome
        event(f"outcome: {type(o).__name__ if not isinstance(o, str) else o}")
