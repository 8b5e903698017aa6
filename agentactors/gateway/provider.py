"""``ProviderActor``: one (usually decorated) LLM provider shared by many agents, with its budgets and queue.

Spawn it with ``ProviderActor.shared(rt, provider, **budgets)`` (one per
provider object per runtime; the runtime closes the provider when it exits) or
``rt.spawn(actor)`` (which spawns it with its :attr:`~ProviderActor.spawn_concurrency`
unless ``concurrency=`` says otherwise).  An agent binds to the
same shared actor (:func:`bound_provider_actor`), which is released once every
agent bound to it is collected, unless ``ProviderActor.shared`` pinned it.  Its scheduler (slots,
rate buckets, the queue of waiting requests) is built by ``on_start``, inside
the running event loop, so the actor itself can be constructed anywhere.

Messages:

``Complete(request)``
    answers the :class:`~agentactors.messages.LLMResponse`, or raises the
    provider's error in the asker.
``Stream(request)``
    answers a :class:`ProviderStream`: the receive end of a bounded channel of
    stream events (one writer, one reader: :mod:`agentactors._channel`).  The actor opens
    the provider's stream in a task it owns (in the runtime's task group) that
    feeds the channel; a slow consumer slows the feeder (backpressure).  Closing
    the channel (``async with`` it), or abandoning the ask, cancels that task and
    with it the HTTP request.  A failure is raised by the consumer's next receive
    after the events that preceded it — it is never lost.
``Stream(request, pull=True)``
    answers a :class:`~._pulled.PulledStream`: the same events, errors and
    budgets, but read in the asker's own task — each read takes the provider's
    next event — with no feeding task and no buffer (the tool loop's way: less
    memory a live stream, no task switch a delta; :mod:`._pulled` says what it
    keeps and what it gives up).

Budgets, shared by every request through the actor: ``max_concurrency``
requests in flight (a stream counts until it ends), ``requests_per_minute`` and
``tokens_per_minute`` (token buckets, :mod:`.budgets`).  A request's tokens are
estimated from its size before it is sent (about 4 characters a token, plus
``max_tokens`` counted up to one minute's budget) and corrected by the usage the
response reports — within plausibility: a report beyond the request's estimate and a minute's budget is
charged at that ceiling and recorded as ``provider.usage_implausible``.  A
request larger than the whole token budget waits for a full bucket and then goes
(rather than never).

A hedge's copy is one more request: when the provider's chain holds a ``with_hedge`` (looked for once, when the
actor is made, through the public ``inner`` and ``members``), each call runs with the actor's extra admission at
hand (:func:`extra_admitter`), and the hedge asks it for its copy, never waiting: granted, the copy holds a slot
until it ends and counts in both rate budgets; refused, the call is not hedged (``hedge.skipped``).  An actor
whose chain holds no hedge calls its provider as before, with nothing more a call.

The vendor's own word, budgets or not: when the provider reports what its vendor said of its rate limits
(an HTTPProvider's ``rate_limit``, read through decorators but not through a fallback chain or a pool, whose
members have other limits), a request that would find none left waits until its share has refilled at the
vendor's pace (or, the limit not said, for the reset the vendor gave) — at most
:data:`~agentactors.gateway.scheduling.VENDOR_HOLD_BOUND` — instead of meeting its 429; the requests in flight
count against what was left (:mod:`._vendor`).

A call cancelled once admitted (a run cancelled or past its deadline mid-call), or a stream closed before its
``StreamEnd``, may have been billed: it is noted for the run to charge at an estimate (``docs/costs.md``, "Calls cut
short").

Waiting: a request that finds no slot or budget waits in its asker's own task,
and the scheduler (:mod:`.scheduling`) decides who goes next — by priority class
(the run's ``priority``, with starvation bounded by ``max_overtakes``), then by
``scheduling`` (``"oldest_run"``: runs in progress first; ``"fifo"``); past
``max_waiting`` / ``max_wait`` a request is refused at once with
:class:`~agentactors.errors.Overloaded`.  Waiting for budget is recorded as
``provider.throttled`` (the wait in seconds), every wait as ``provider.waited``,
every refusal as ``provider.overloaded``.  A request of a run with cost budgets that waited is sent only if
none of them was spent meanwhile (the run's budget check, :func:`~.ticket.current_check`): else its slot and
budgets go to the next waiter and the run's :class:`~agentactors.errors.CostLimitExceededError` is raised in
the asker, which the loop makes the run's result (``docs/costs.md``, "Concurrent runs").
"""

from __future__ import annotations

import contextvars
import functools
import logging
import math
import numbers
import operator
import sys
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Final

import anyio
import anyio.lowlevel
import attrs

from .._channel import Channel, open_channel
from .._containment import cancellation_alone
from ..actors.crossing import Waker
from ..actors.ref import ActorRef
from ..actors.runtime import Runtime
from ..errors import ActorStopped, ProviderError, redact
from ..messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent, Usage
from ..pricing import note_cut_short
from ..providers.port import UNOPENED, check_provider, name_of, not_a_context_manager, not_an_iterator
from ._estimate import estimate_tokens, estimated_cut_short
from ._pulled import PulledStream, Tally, note_unread_end, refund_if_unsent
from ._vendor import vendor_of
from .scheduling import POLICIES, Policy, Scheduler
from .ticket import current_check

__all__ = [
    "Complete",
    "ExtraAdmission",
    "ProviderActor",
    "ProviderStream",
    "Stream",
    "estimate_tokens",
    "estimated_cut_short",
    "extra_admitter",
]

log = logging.getLogger("agentactors.actors")

# Handlers the actor is spawned with: enough that every asker waits in the scheduler, not the mailbox.
_HANDLERS: Final = 1_000_000


@attrs.frozen(slots=True)
class Complete:
    """Ask a :class:`ProviderActor` for a complete response to ``request``."""

    request: LLMRequest


@attrs.frozen(slots=True)
class Stream:
    """Ask a :class:`ProviderActor` for a :class:`ProviderStream` of ``request``'s events.

    ``pull=True``: a :class:`~._pulled.PulledStream` instead — read in the asker's own task, each read taking the
    provider's next event, with no feeding task and no buffer (what the tool loop asks: a live stream holds ~4.5 KB
    less, and no delta changes task).  Read it in the task that asked, inside ``async with``.
    """

    request: LLMRequest
    pull: bool = attrs.field(default=False, kw_only=True)


class _Failure:
    """The last item of a failed stream: the consumer's next receive raises ``error``."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class ProviderStream:
    """The consumer's end of a streamed request: an async iterator of stream events.

    Use it as ``async with stream: async for event in stream: ...``.  A
    successful stream ends after its :class:`~agentactors.messages.StreamEnd`.
    A provider failure is raised by the receive that follows the last event
    delivered.  If the actor's task was cancelled (the runtime stopped) before
    the stream ended, receiving raises :class:`~agentactors.errors.ActorStopped`.
    Closing (``aclose``, leaving ``async with``) cancels the feeding task and
    the HTTP request; events not yet received are discarded.  A stream dropped
    unfinished without closing is closed the same way when it is collected (the
    loop does it): its feeder does not wait for a reader for ever, holding its slot.
    A stream closed or cancelled before its ``StreamEnd`` was sent and is billed: its
    feeding task notes its call for the run to charge (``docs/costs.md``, "Calls cut
    short") once it has left the provider's stream: soon after the close, by the
    runtime's exit at the latest (``aclose()`` does not wait for it).  One closed with
    its ``StreamEnd`` unread in the buffer (the feeder ran ahead: ``stream_buffer``) is
    charged by the close, at that end's usage, as a read one would be.
    """

    __slots__ = ("_channel", "_finished", "_request", "_scope", "_waker")

    def __init__(self, channel: Channel, scope: anyio.CancelScope, waker: Waker, request: LLMRequest) -> None:
        """``waker``: the runtime loop's thread-safe scheduler, for a stream dropped unclosed (``__del__``);
        ``request``: what was streamed, for the charge of an end left unread (:meth:`close`)."""
        self._channel = channel
        self._scope = scope
        self._waker = waker
        self._request = request
        self._finished = False

    def __aiter__(self) -> ProviderStream:
        return self

    async def __anext__(self) -> StreamEvent:
        """:meth:`receive`, ending the iteration after ``StreamEnd`` (or once closed).

        Cancellation: as :meth:`receive`'s — a cancelled read takes no event; the stream stays open.
        """
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> StreamEvent:
        """The next event; ``anyio.EndOfStream`` after ``StreamEnd`` or once closed.

        Cancellation: a cancellation point; a cancelled read takes no event from the buffer, and the stream
        stays open (the feeder goes on): close it to stop the request.
        """
        if self._finished:
            raise anyio.EndOfStream
        try:
            item = await self._channel.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if self._finished:  # closed by the consumer meanwhile
                raise anyio.EndOfStream from None
            self.close()
            raise ActorStopped("the provider actor's stream was cancelled before it ended") from None
        if type(item) is _Failure:
            self.close()
            raise item.error
        if isinstance(item, StreamEnd):
            self._finished = True
        event: StreamEvent = item
        return event

    def close(self) -> None:
        """Stop the stream now: cancel the feeding task (and the HTTP request); drop unread events.

        A ``StreamEnd`` among them (the feeder ran ahead of the reader and is done) was billed in full, and no
        read will charge it: it is noted for the run, at its usage (:func:`~._pulled.note_unread_end`) — once: the
        feeder notes an end only when the reader had left before it was put in the buffer (:meth:`_pump`).
        """
        if not self._finished:  # (after its StreamEnd was read, nothing is left to look for)
            self._finished = True
            end = _unread_end(self._channel)
            if end is not None:
                note_unread_end(self._request, end)
        self._scope.cancel()
        self._channel.close_reading()

    async def aclose(self) -> None:
        """:meth:`close`, then a checkpoint.

        Cancellation: the stream is closed before the checkpoint, so a cancelled caller has closed it too
        (the feeding task and its request are cancelled; ``aclose`` does not wait for them to end).
        """
        self.close()
        await anyio.lowlevel.checkpoint()

    def release_unclaimed(self) -> None:
        """The asker gave up after the stream was answered but before it took it: close it, unread.

        The :class:`~agentactors.actors.mailbox.ReleasableAnswer` protocol: the
        kernel calls this so the feeding task and its HTTP request do not
        outlive an ask nobody will read.
        """
        self.close()

    async def __aenter__(self) -> ProviderStream:
        """The stream itself.

        Cancellation: it never awaits (and so is no cancellation point).
        """
        return self

    async def __aexit__(self, *exc: object) -> None:
        """:meth:`close`.

        Cancellation: it never awaits: the stream is closed whatever the caller's state.
        """
        self.close()

    def __del__(self) -> None:
        # A stream its consumer dropped unfinished and unclosed: its feeder would wait for room in the buffer
        # for ever, holding its slot and its HTTP request.  Closed by the loop, not here: a finaliser may run in
        # another thread (the cycle collector's), where neither the scope nor the channel may be touched.
        if not self._finished:
            self._finished = True
            try:
                self._waker(functools.partial(_close, self._scope, self._channel))
            except Exception:  # the loop has closed: the feeder is gone with it
                pass


def _unread_end(channel: Channel) -> StreamEnd | None:
    """The ``StreamEnd`` waiting in ``channel``'s buffer, taken out of it, or ``None`` (the events before it are
    dropped: the reader is leaving)."""
    while True:
        try:
            item = channel.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            return None
        if isinstance(item, StreamEnd):
            return item


def _close(scope: anyio.CancelScope, channel: Channel) -> None:
    """What :meth:`ProviderStream.close` does, for a stream already collected (run by the loop)."""
    scope.cancel()
    channel.close_reading()


# -- a hedge's extra copy: admitted by the actor its call runs in, or not sent ------------------------------------

#: The admission of one extra request by the ProviderActor whose call the current code serves — set around each
#: call of an actor whose provider holds a hedge (:class:`_Admitting`), read by the hedge when it is about to send
#: its copy (:func:`extra_admitter`).  ``None`` outside such a call.
_EXTRA: Final[contextvars.ContextVar[Callable[[LLMRequest], ExtraAdmission | None] | None]] = contextvars.ContextVar(
    "agentactors_extra_admission", default=None
)


def extra_admitter() -> Callable[[LLMRequest], ExtraAdmission | None] | None:
    """How the code serving a ProviderActor's call asks it for one more request (``with_hedge``'s copy), or ``None``.

    ``None`` outside a ProviderActor's call, or in one whose actor saw no hedge in its provider's chain (followed
    through the public ``inner`` of decorators and ``members`` of fallback chains and pools; a wrapper that shows
    neither hides what it wraps): the copy is sent unadmitted, as with no actor.  Otherwise a callable: given the
    copy's request, it takes a slot, a request and the copy's token estimate from the actor's budgets at once, if
    nobody waits and they are there, and answers the :class:`ExtraAdmission` to release when the copy ends — or
    ``None``: refused (it never waits), and the copy must not be sent.
    """
    return _EXTRA.get()


class ExtraAdmission:
    """One extra request a ProviderActor admitted for a call in flight (a hedge's copy): :meth:`release` it once the
    copy has ended, whichever way.  Its slot is held until then; its request counts in ``requests_per_minute``; its
    token estimate in ``tokens_per_minute`` stands (a copy is cut short or answers the call, whose own estimate the
    answer's usage corrects), unless the copy was refused before any work — given back as a request's is."""

    __slots__ = ("_estimate", "_released", "_sched")

    def __init__(self, sched: Scheduler, estimate: int) -> None:
        self._sched = sched
        self._estimate = estimate
        self._released = False

    def release(self, error: BaseException | None = None) -> None:
        """The copy ended — answered, cancelled, or failed with ``error``: its slot goes back (once; again is
        nothing), and the tokens of a copy refused before any work (:func:`~._pulled.refund_if_unsent`; its request
        too when it was never sent: an open breaker's refusal).  Never a service-time sample: the call's own is."""
        if self._released:
            return
        self._released = True
        sched = self._sched
        try:
            if isinstance(error, ProviderError):
                refund_if_unsent(sched, error, self._estimate)
        finally:
            sched.release(0.0, False)


class _Admitting:
    """What a ProviderActor whose provider holds a hedge sends its calls to: the provider, with the actor's extra
    admission set for the hedge to read (:func:`extra_admitter`) — around a call, around the opening of a stream
    (its copies start before its first event).  Named and priced as the provider (a pulled stream's charge reads
    it), which it shows as ``inner``."""

    __slots__ = ("_admit", "inner")

    def __init__(self, provider: Any, admit: Callable[[LLMRequest], ExtraAdmission | None]) -> None:
        self.inner = provider
        self._admit = admit

    @property
    def name(self) -> str:
        return name_of(self.inner)

    @property
    def default_model(self) -> str | None:
        model = getattr(self.inner, "default_model", None)
        return model if isinstance(model, str) else None

    async def complete(self, request: LLMRequest) -> LLMResponse:
        token = _EXTRA.set(self._admit)
        try:
            response: LLMResponse = await self.inner.complete(request)
            return response
        finally:
            _EXTRA.reset(token)

    def stream(self, request: LLMRequest) -> _AdmittedStream:
        return _AdmittedStream(self.inner.stream(request), self._admit)


class _AdmittedStream:
    """A provider's stream context, entered with the actor's extra admission set (:class:`_Admitting`)."""

    __slots__ = ("_admit", "_opened")

    def __init__(self, opened: Any, admit: Callable[[LLMRequest], ExtraAdmission | None]) -> None:
        self._opened = opened
        self._admit = admit

    async def __aenter__(self) -> Any:
        token = _EXTRA.set(self._admit)
        try:
            return await self._opened.__aenter__()
        finally:
            _EXTRA.reset(token)

    async def __aexit__(self, *exc: Any) -> bool | None:
        result: bool | None = await self._opened.__aexit__(*exc)
        return result


# Where the hedge lives, named, not imported (the resilience layer sits above this one).
_HEDGE: Final = ("agentactors.resilience.hedge", "HedgeProvider")


def _holds_hedge(provider: object) -> bool:
    """Whether ``provider`` is, or wraps, a ``HedgeProvider`` (or a subclass): followed through the public ``inner``
    and ``members`` (:func:`_walk`).  Asked once, when an actor is made."""
    return any(
        any((cls.__module__, cls.__qualname__) == _HEDGE for cls in type(node).__mro__) for node in _walk(provider)
    )


class ProviderActor:
    """Hosts one provider for many agents: one connection pool, one breaker state, one budget, one queue.

    :param provider: an :class:`~agentactors.providers.port.LLMProvider`, usually decorated.
    :param max_concurrency: requests in flight at once (a stream counts until it ends).
    :param requests_per_minute: request budget, or ``None`` for no limit.
    :param tokens_per_minute: token budget (estimated, corrected by reported usage), or ``None``.
    :param stream_buffer: events a stream may run ahead of its consumer.
    :param scheduling: which waiting request goes first within a priority class: ``"oldest_run"``
        (the request of the run that started first, so runs in progress finish before new ones
        start) or ``"fifo"`` (arrival order).
    :param max_waiting: refuse a request with :class:`~agentactors.errors.Overloaded` when this many
        already wait (``None``: no bound).
    :param max_wait: refuse a request with ``Overloaded`` when its wait for a slot and budget would
        exceed this many seconds — estimated on arrival, or reached while it waits (``None``: no bound
        on slot waits; budget waits are bounded by
        :data:`~agentactors.gateway.scheduling.BUDGET_WAIT_BOUND`).
    :param max_overtakes: while a lower priority class waits, at most this many requests of higher
        classes are served in a row (``None``: strict priority).

    A refusal's ``retry_after`` is always set, and never zero: the expected wait (at the service time of
    the calls served: a breaker's refusal, a request fault, a cancelled call is not timed), or before
    any answer was seen (or only instant ones) the requests ahead at
    :data:`~agentactors.gateway.scheduling.DEFAULT_SERVICE_ESTIMATE` each (or the age of the oldest
    request in flight, when longer).

    The arguments are checked here: a bound that is not a number of its kind (a bool, a string, a float
    where an int is meant) raises ``TypeError``, one out of range (NaN included) ``ValueError``, each
    naming the argument.  An optional bound given as ``math.inf`` is no bound, as ``None`` is.

    Errors: a provider error is raised in the asker (the actor goes on); an
    unknown message raises ``TypeError``; a refused request raises ``Overloaded``
    (nothing was sent).  Cancellation: abandoning an ask (asker cancelled, ask
    timeout, the run's deadline) cancels the provider call; a request still
    waiting never reaches the provider and gives its place up.
    """

    __slots__ = (
        "_call",
        "_sched",
        "max_concurrency",
        "max_overtakes",
        "max_wait",
        "max_waiting",
        "provider",
        "requests_per_minute",
        "scheduling",
        "stream_buffer",
        "tokens_per_minute",
    )

    def __init__(
        self,
        provider: Any,
        *,
        max_concurrency: int = 64,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        stream_buffer: int = 16,
        scheduling: Policy = "oldest_run",
        max_waiting: int | None = None,
        max_wait: float | None = None,
        max_overtakes: int | None = 16,
    ) -> None:
        check_provider(provider)
        if not isinstance(scheduling, str) or scheduling not in POLICIES:
            raise ValueError(f"scheduling must be one of {sorted(POLICIES)}, not {scheduling!r}")
        self.provider = provider
        self.max_concurrency = _whole("max_concurrency", max_concurrency, 1)
        self.requests_per_minute = _rate("requests_per_minute", requests_per_minute)
        self.tokens_per_minute = _rate("tokens_per_minute", tokens_per_minute)
        self.stream_buffer = _whole("stream_buffer", stream_buffer, 0)
        self.scheduling = scheduling
        self.max_waiting = _bound("max_waiting", max_waiting, 0)
        self.max_wait = _seconds("max_wait", max_wait)
        self.max_overtakes = _bound("max_overtakes", max_overtakes, 1)
        self._sched: Scheduler | None = None
        #: What a call is sent to: the provider itself, or — when its chain holds a hedge (:func:`_holds_hedge`,
        #: decided once, here) — the provider with this actor's extra admission set around each call
        #: (:class:`_Admitting`).  So an actor without a hedge does nothing more a call.
        self._call: Any = _Admitting(provider, self._admit_extra) if _holds_hedge(provider) else provider

    def __repr__(self) -> str:
        return (
            f"ProviderActor({getattr(self.provider, 'name', self.provider)!r}, max_concurrency={self.max_concurrency})"
        )

    @property
    def spawn_concurrency(self) -> int:
        """The handler concurrency to spawn this actor with: room for every asker to wait *inside* the actor.

        Requests past ``max_concurrency`` then wait in the actor's scheduler — where ``scheduling``,
        priorities, ``max_waiting`` and ``max_wait`` apply — each in its asker's own task, rather than
        in the mailbox in arrival order.  Spawned with ``concurrency=max_concurrency`` instead, the
        actor still bounds what is in flight, but waiting asks queue in the mailbox, unseen by it.
        """
        return _HANDLERS

    @classmethod
    def shared(cls, rt: Runtime, provider: Any, **budgets: Any) -> ActorRef:
        """The runtime's one ProviderActor for ``provider`` (keyed by identity), spawned on first use.

        ``budgets`` are this class's keyword arguments (``max_concurrency``,
        ``requests_per_minute``, ``tokens_per_minute``, ``stream_buffer``, ``scheduling``,
        ``max_waiting``, ``max_wait``, ``max_overtakes``); asking again with different budgets for
        the same provider raises ``ValueError`` (spawn a ProviderActor yourself to hold a second
        budget); asking with none returns the one there is.  Budgets compare as the actor has them:
        the defaults spelt out are the same budgets.  The actor is spawned with
        ``concurrency=`` :attr:`spawn_concurrency`.  The runtime closes the provider when it exits
        (a :meth:`Runtime.service` cleanup).  An actor that was stopped is replaced by a new one on
        the next call, with the budgets it had unless that call gives others.

        A provider asked for here is *pinned*: its actor (and budgets) live as long as the runtime.  One that
        only agents ran with (:func:`bound_provider_actor`) is released once they are all collected.

        :raises RuntimeError: outside ``async with rt``.
        """
        if not isinstance(rt, Runtime):  # else "'int' object has no attribute 'service'"
            raise TypeError(f"ProviderActor.shared() takes a Runtime first, not {type(rt).__name__}")
        check_provider(provider)  # before the registry is asked: a bad provider is no entry of it
        return _SharedProviders.of(rt).entry(rt, cls, provider, budgets, pin=True).ref

    async def on_start(self) -> None:
        """Build the scheduler (slots, rate buckets, queue), inside the running event loop.

        A direct actor's first asker runs this itself before its request, without a
        checkpoint (it never awaits): the first wave of asks all go directly, none
        queues for a worker task.

        Cancellation: none can reach it part-way — it never awaits — so once called the scheduler is
        built (a first asker cancelled before it runs leaves the actor unstarted, and the next ask runs it).
        """
        self._setup()

    def _setup(self) -> Scheduler:
        sched = self._sched = Scheduler(
            self._name,
            slots=self.max_concurrency,
            requests_per_minute=self.requests_per_minute,
            tokens_per_minute=self.tokens_per_minute,
            policy=self.scheduling,
            max_waiting=self.max_waiting,
            max_wait=self.max_wait,
            max_overtakes=self.max_overtakes,
            vendor=vendor_of(self.provider),
        )
        return sched

    async def receive(self, message: Any) -> Any:
        """Answer :class:`Complete` or :class:`Stream` (see the module docstring).  Runs after :meth:`on_start`.

        Cancellation: an asker that gives up (cancelled, its ask's timeout, the run's deadline) cancels this
        handler.  While the request waits for a slot and budget it gives its place up and never reaches the
        provider; once admitted, the provider call is cancelled (its HTTP request with it), the slot is released
        and the call is noted as cut short — the vendor may bill it, so the run charges an estimate.  For a
        :class:`Stream` the answer is the stream: an asker that gives up before taking it has it released
        (``release_unclaimed``: a :class:`ProviderStream`'s feeding task and request end, a pulled stream's slot
        is given back); once taken, closing or abandoning the stream is what stops them.
        """
        if not isinstance(message, Complete):
            if isinstance(message, Stream):
                return await self._stream(message.request, message.pull)
            raise TypeError(f"ProviderActor handles Complete and Stream, not {type(message).__name__}")
        # -- complete: handled in this frame (no coroutine of its own: one frame less per request in flight)
        request = message.request
        sched = self._sched if self._sched is not None else self._setup()
        # Estimated for a token budget, or a vendor's report in force (its tokens refill by what requests take).
        estimate = (
            estimate_tokens(request, max_output=sched.max_output)
            if sched.tokens is not None or sched.window is not None
            else 0
        )
        # The common case — a slot and the budgets free, nobody waiting — takes them without a checkpoint.
        # (No local more than needed here, helpers instead: a run waiting on its model call holds this frame,
        # eight bytes a local.)
        if not sched.try_admit(estimate):
            await sched.admit(estimate, request.model)
            _recheck(sched, estimate)  # a run with budgets: spent by others while it waited?
        started = sched.started() if sched.tracks else 0.0
        try:
            response: LLMResponse = await self._call.complete(request)
        except BaseException:
            # (Three arguments, the exception read there: a deeper stack is a bigger frame, and a waiting run holds it.)
            self._failed_call(request, estimate, started)
            raise
        # No token budget: nothing to correct (and no call to make).  A custom provider's non-answer (None, a str)
        # has no usage to correct by: handed back as it is, for the asker's step to name (loop/controller.py).
        # Corrected before the slot goes back: the release grants the next waiter, against the corrected budget.
        try:
            if sched.tokens is not None and (type(response) is LLMResponse or isinstance(response, LLMResponse)):
                sched.settle(estimate, response.usage)
        finally:  # (a recorder that raises on usage_implausible must not keep the slot)
            sched.release(started)
        return response

    def _failed_call(self, request: LLMRequest, estimate: int, started: float) -> None:
        """In ``receive``'s handler of a call that raised (the exception being handled): its slot released — timed
        only if it was served (a call refused before any work, or cancelled, is no service-time sample) — its
        tokens given back if it was never worked on, and a cancelled one noted as cut short (the vendor may bill
        it)."""
        exc = sys.exception()
        sched = self._sched
        assert sched is not None and exc is not None  # (made before the call was admitted; called in a handler)
        if isinstance(exc, ProviderError):
            served = False
            try:
                served = refund_if_unsent(sched, exc, estimate)
            finally:
                sched.release(started, served, failed=True)
            return
        # (A group of nothing else too: on trio, a call cancelled while its connection opens raises one —
        # open_tcp_stream's nursery; a group that also holds a failure is that failure's, as the HTTP layers say.)
        cancelled = isinstance(exc, anyio.get_cancelled_exc_class()) or (
            isinstance(exc, BaseExceptionGroup) and cancellation_alone(exc) is not None
        )
        if cancelled:
            self._cut_short(request)
        sched.release(started, not cancelled, failed=True)

    def _cut_short(self, request: LLMRequest) -> None:
        """``request``'s call was cancelled after it was admitted — sent, or about to be: the vendor may bill it.

        Noted for the run to charge at an estimate (:func:`~agentactors.pricing.note_cut_short`; the loop takes it
        as the cancellation passes through the step) — unless a layer inside (``with_hedge``: every copy it sent)
        noted it more exactly already.  Priced as the vendor's behind the decorators (:func:`~._vendor.vendor_of`),
        else as the hosted provider's.  Conservative: a call cancelled while its HTTP request was still being
        connected is charged too (``docs/costs.md``).
        """
        source = vendor_of(self.provider) or self.provider
        note_cut_short(request, (estimated_cut_short(source, request),), replace=False)

    # -- stream ----------------------------------------------------------------------------------

    async def _stream(self, request: LLMRequest, pull: bool = False) -> ProviderStream | PulledStream:
        rt = Runtime.current()
        if rt is None or not rt.running:
            raise ActorStopped("a ProviderActor streams only inside a running Runtime")
        sched = self._sched if self._sched is not None else self._setup()
        # Estimated for a token budget, or a vendor's report in force (its tokens refill by what requests take).
        estimate = (
            estimate_tokens(request, max_output=sched.max_output)
            if sched.tokens is not None or sched.window is not None
            else 0
        )
        if not sched.try_admit(estimate):
            await sched.admit(estimate, request.model)
            _recheck(sched, estimate)  # a run with budgets: spent by others while it waited?
        started = sched.started() if sched.tracks else 0.0
        if pull:
            return PulledStream(self._call, self._name, request, sched, estimate, started)
        channel = open_channel(self.stream_buffer)
        scope = anyio.CancelScope()
        try:
            rt.spawn_task(self._feed, sched, request, channel, scope, estimate, started, name=f"stream:{self!r}")
        except BaseException:
            sched.release(started, False)
            channel.close_writing()
            channel.close_reading()
            raise
        return ProviderStream(channel, scope, sched.waker, request)

    async def _feed(
        self,
        sched: Scheduler,
        request: LLMRequest,
        channel: Channel,
        scope: anyio.CancelScope,
        estimate: int,
        started: float,
    ) -> None:
        """Pump the provider's stream into ``channel``; runs in the runtime's task group."""
        usage: Usage | None = None
        # Whether its time is a service-time sample: not when it was cut short (closed, cancelled) or refused
        # before any work (refund_if_unsent).
        served = False
        failure: _Failure | None = None
        try:
            with scope:
                failure, usage = await self._pump(request, channel)
                served = usage is not None
                if failure is not None:
                    served = True
                    if isinstance(failure.error, ProviderError):
                        served = refund_if_unsent(sched, failure.error, estimate)
                    try:
                        await channel.send(failure)
                    except anyio.BrokenResourceError:
                        pass  # the consumer already left; nobody is waiting for the error
        finally:
            channel.close_writing()
            try:
                if usage is not None:  # (corrected before the release grants the next waiter)
                    sched.settle(estimate, usage)
            finally:
                sched.release(started, served, failed=failure is not None)

    async def _pump(self, request: LLMRequest, channel: Channel) -> tuple[_Failure | None, Usage | None]:
        """Deliver the events.  Returns the failure to deliver last (if any) and the reported usage.

        A stream its consumer closed or left before its ``StreamEnd`` (or cancelled with the runtime) was sent, and
        is billed: noted for the run to charge once the provider's block is left (:meth:`_left_early`).
        """
        tally = Tally()
        left = False
        opened: Any = UNOPENED
        events: Any = UNOPENED
        try:
            opened = self._call.stream(request)
            async with opened as events:
                try:
                    async for event in events:
                        tally.seen(event)
                        if tally.usage is None:
                            try:
                                await channel.send(event)
                            except anyio.BrokenResourceError:
                                left = True  # the consumer closed: leaving the block closes the request
                                break
                            tally.sent += 1
                            continue
                        # Its StreamEnd.  Put in the buffer without waiting first, so that a reader gone before it
                        # was there is told from one that leaves it there unread (whose close charges it).
                        try:
                            channel.send_nowait(event)
                        except anyio.WouldBlock:  # no room: wait for it (in the buffer meanwhile)
                            try:
                                await channel.send(event)
                            except anyio.BrokenResourceError:
                                pass  # left unread in the buffer: the reader's close charged it
                        except anyio.BrokenResourceError:
                            note_unread_end(request, event)  # the reader left before it came: billed, unread
                        break
                finally:
                    # Left early (after StreamEnd, or the consumer gone): finish the provider's iterator
                    # now rather than when it is collected (trio warns about a half-read async generator,
                    # and its own cleanup must run in this task, not in a finaliser).
                    aclose = getattr(events, "aclose", None)
                    if aclose is not None:
                        with anyio.CancelScope(shield=True):
                            await aclose()
        except Exception as exc:
            if not tally.sent:  # a provider that broke the contract before its first event: named (the rare path)
                model = request.model
                broken = not_a_context_manager(opened, exc, provider=self._name, model=model) if events is UNOPENED \
                    else not_an_iterator(events, exc, provider=self._name, model=model)
                if broken is not None:
                    return _Failure(broken), None
            return _Failure(tally.failure(exc, self._name, request)), None
        except BaseException as exc:
            if tally.usage is None and isinstance(exc, anyio.get_cancelled_exc_class()):
                self._left_early(request, tally)  # closed (its scope cancelled) or the runtime stopped mid-stream
            raise
        if tally.usage is None:
            if left:
                self._left_early(request, tally)
                return None, None
            return _Failure(tally.no_end(self._name, request)), None
        return None, tally.usage

    def _left_early(self, request: LLMRequest, tally: Tally) -> None:
        """A fed stream was left before its ``StreamEnd`` — closed by its consumer, cancelled — once its request
        went out (or was going: conservative, as :meth:`_cut_short`): noted for the run to charge, its prompt and
        the text the feeder had taken from the vendor (delivered or buffered), at an estimate; without replacing
        what a layer inside noted (``with_hedge``: every copy it sent) — it is called after the block is left."""
        source = vendor_of(self.provider) or self.provider
        note_cut_short(request, (estimated_cut_short(source, request, delivered="".join(tally.texts)),),
                       replace=False)

    @property
    def _name(self) -> str:
        return name_of(self.provider)

    def _admit_extra(self, request: LLMRequest) -> ExtraAdmission | None:
        """One more request for a call in flight (a hedge's copy of it, ``request``), admitted now or never.

        Taken as a request arriving at an idle actor takes its slot and budgets (:meth:`Scheduler.try_admit`):
        only if nobody waits and a slot, a request and the copy's token estimate are there — never waiting
        (a hedge that waits for a slot is no hedge).  ``None``: refused, nothing taken.
        """
        sched = self._sched
        if sched is None:  # (never: the call the copy is of was admitted, which built it)
            return None
        estimate = (
            estimate_tokens(request, max_output=sched.max_output)
            if sched.tokens is not None or sched.window is not None
            else 0
        )
        if not sched.try_admit(estimate):
            return None
        return ExtraAdmission(sched, estimate)


def _recheck(sched: Scheduler, estimate: int) -> None:
    """A request of a run with cost budgets was granted after a wait: send it only if none of them was spent meanwhile.

    The run checked its budgets before it asked (``loop.cost.stop_before``), but a wait in the queue may be long,
    and the runs ahead of it spend the same budgets: kept, 20 runs queued on one slot under a $2 budget each sent
    their $1 call.  When ``check`` says the run must stop, the request gives its slot, request and tokens back to
    the next waiter, and the run's error is raised in the asker (the loop makes it the run's result, as before a
    call: nothing was sent).  Only after a wait: a request admitted at once was checked just before it asked.

    :raises CostLimitExceededError: (what ``check`` answers) a budget the run charges was spent.
    """
    check = current_check()  # (the run's budget check; None for a run without budgets: nothing to ask)
    if check is None:
        return
    try:
        error = check.recheck()
    except BaseException:  # (a check that fails must not keep the slot it was granted)
        sched.give_back(estimate)
        raise
    if error is not None:
        sched.give_back(estimate)
        raise error


# -- arguments: checked once, at construction, so that nothing on a request's way has to ---------------------
# (A NaN bound compares false with everything — `free <= 0`, `waiting >= max_waiting` — and silently bounds
# nothing; an infinite token budget broke the first settle; a float slot count let a half slot through.)


_SETTINGS: Final = (
    "max_concurrency",
    "requests_per_minute",
    "tokens_per_minute",
    "stream_buffer",
    "scheduling",
    "max_waiting",
    "max_wait",
    "max_overtakes",
)


def _settings(actor: ProviderActor) -> dict[str, Any]:
    """Every budget ``actor`` has, as it has it (checked, defaults filled in): what :meth:`ProviderActor.shared`
    compares and a replacement is made with."""
    return {name: getattr(actor, name) for name in _SETTINGS}


def _whole(name: str, value: object, least: int) -> int:
    """``value`` as an int of at least ``least`` (a bool, a float or a string is not one).

    :raises TypeError: not an integer.
    :raises ValueError: below ``least``.
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {value!r}")
    try:
        whole = operator.index(value)  # type: ignore[arg-type]  # ints and int-likes (numpy's), nothing else
    except TypeError:
        raise TypeError(f"{name} must be an int, not {value!r}") from None
    if whole < least:
        raise ValueError(f"{name} must be >= {least}, not {whole!r}")
    return whole


def _bound(name: str, value: object, least: int) -> int | None:
    """An optional bound: ``None`` or infinity (no bound, as :mod:`anyio` spells one) or :func:`_whole`."""
    if value is None or (isinstance(value, float) and value == math.inf):
        return None
    return _whole(name, value, least)


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number or None, not {value!r}")
    return float(value)


def _rate(name: str, value: object) -> float | None:
    """A per-minute budget: a positive number; ``None`` or infinity: no limit (kept as ``None``, which every
    bucket reads as none — an infinite bucket would overflow its first settle)."""
    if value is None:
        return None
    rate = _number(name, value)
    if rate == math.inf:
        return None
    if not rate > 0:
        raise ValueError(f"{name} must be a positive number, or None for no limit; not {value!r}")
    return rate


def _seconds(name: str, value: object) -> float | None:
    """A bound in seconds: >= 0; ``None`` or infinity: no bound (kept as ``None``)."""
    if value is None:
        return None
    seconds = _number(name, value)
    if seconds == math.inf:
        return None
    if not seconds >= 0:
        raise ValueError(f"{name} must be >= 0 seconds, or None for no bound; not {value!r}")
    return seconds


def bound_provider_actor(rt: Runtime, provider: Any, agent: object) -> ActorRef:
    """The runtime's shared ProviderActor for ``provider``, as an agent binding to it needs it (the agent layer's).

    The same actor :meth:`ProviderActor.shared` gives, but held for ``agent`` (weakly; an agent counts once):
    an entry only agents made (none pinned it with ``ProviderActor.shared``) is released once every agent bound
    to it has been collected — its actor stopped and, when that can be undone (:func:`_reopens`), its
    provider's connections closed — so a provider made per request (one API key per tenant) does not keep an
    actor and a keep-alive socket until the runtime exits.  Nobody else holds the ref: an agent caches it.

    :raises RuntimeError: outside ``async with rt``, or from another thread than its loop's.
    :raises TypeError: ``agent`` cannot be weakly referenced.
    """
    registry = _SharedProviders.of(rt)
    entry = registry.entry(rt, ProviderActor, provider, {}, pin=False)
    if agent not in entry.agents:
        entry.agents.add(agent)
        # An int, not the entry: the watch must hold neither the agent nor the provider.
        rt.when_collected(agent, registry.release, rt, id(provider))
    return entry.ref


class _Entry:
    """One provider's shared actor: the provider (held: its id stays its own), the ref, its budgets; ``pinned``
    (asked for with :meth:`ProviderActor.shared`: kept until the runtime exits), and the agents bound to it."""

    __slots__ = ("agents", "budgets", "pinned", "provider", "ref")

    def __init__(self, provider: Any, ref: ActorRef, budgets: dict[str, Any], pinned: bool) -> None:
        self.provider = provider
        self.ref = ref
        self.budgets = budgets
        self.pinned = pinned
        self.agents: weakref.WeakSet[Any] = weakref.WeakSet()


class _SharedProviders:
    """A runtime's shared ProviderActors, one per provider object (the :meth:`ProviderActor.shared` registry).

    Kept as a :meth:`Runtime.service`; each entry holds the provider itself, so its id cannot be reused while
    the entry is there.  An unpinned entry is dropped once its agents are collected (:meth:`release`); a
    provider that was not closed then is held weakly in ``released``, closed at the exit if still alive.
    """

    __slots__ = ("entries", "released")

    def __init__(self) -> None:
        self.entries: dict[int, _Entry] = {}
        self.released: dict[int, weakref.ref[Any]] = {}

    @staticmethod
    def of(rt: Runtime) -> _SharedProviders:
        """``rt``'s registry, made on first use (the runtime's exit runs :meth:`aclose`)."""
        return rt.service(_SharedProviders, _SharedProviders, cleanup=_SharedProviders.aclose)

    def entry(self, rt: Runtime, cls: type[ProviderActor], provider: Any, budgets: dict[str, Any], *,
              pin: bool) -> _Entry:
        """``provider``'s entry, its actor spawned (or a stopped one replaced); ``pin``: kept until the exit."""
        key = id(provider)
        entry = self.entries.get(key)
        if entry is not None and entry.provider is not provider:  # (never: the entry holds its provider)
            entry = None
        if entry is not None and not entry.ref.stopped:
            # Compared as the actor has them (defaults filled in, values checked): the defaults spelt out are
            # not different budgets, and a misspelt keyword is the constructor's TypeError, not "different".
            if budgets and _settings(cls(provider, **budgets)) != entry.budgets:
                raise ValueError(
                    f"provider {getattr(provider, 'name', provider)!r} already has a ProviderActor in this runtime "
                    f"with budgets {entry.budgets}; spawn a ProviderActor yourself for different budgets"
                )
            entry.pinned = entry.pinned or pin
            return entry
        # A stopped actor's replacement keeps its budgets unless new ones are given: an Agent asking for the
        # provider's actor (no budgets) must not silently lift the limits it was configured with.
        actor = cls(provider, **(budgets or (entry.budgets if entry is not None else {})))
        ref = rt.spawn(
            actor,
            name=f"provider:{getattr(provider, 'name', type(provider).__name__)}",
            concurrency=actor.spawn_concurrency,
            mailbox_size=max(256, actor.max_concurrency * 4),
        )
        if entry is None:
            entry = self.entries[key] = _Entry(provider, ref, _settings(actor), pin)
            held = self.released.get(key)
            if held is not None and held() is provider:  # released before, in use again: the entry closes it
                del self.released[key]
        else:
            entry.ref, entry.budgets, entry.pinned = ref, _settings(actor), entry.pinned or pin
        return entry

    async def release(self, rt: Runtime, key: int) -> None:
        """An agent bound to entry ``key`` was collected: drop the entry if it is unpinned and has no agent left.

        The entry goes first (a bind meanwhile makes a new one, with an actor of its own), then its actor is
        stopped (drained: nothing can be in flight — a run holds its agent — but it is the graceful way).  The
        provider's connections are closed only when that can be undone (:func:`_reopens`: its next call opens
        new ones, should its user still hold it) and no other entry reaches it (a decorator's inner provider
        may serve another entry's calls right now); otherwise it is held weakly and closed at the exit, as
        before, if it is still alive then.  Never raises (its failure would escalate in the runtime).
        """
        entry = self.entries.get(key)
        if entry is None or entry.pinned or entry.agents:
            return
        del self.entries[key]
        provider = entry.provider
        if getattr(provider, "aclose", None) is not None:
            self._hold(key, provider)
        await rt.stop(entry.ref)
        if key in self.entries or not _reopens(provider) or self._reached(provider):
            return  # in use again (the new entry closes it), or not ours to close now
        held = self.released.get(key)
        if held is not None and held() is provider:
            del self.released[key]
        await _close_provider(provider)

    def _hold(self, key: int, provider: Any) -> None:
        """Keep ``provider`` weakly for the exit to close (forgotten when it is collected)."""

        def forget(ref: weakref.ref[Any]) -> None:
            if self.released.get(key) is ref:
                del self.released[key]

        try:
            self.released[key] = weakref.ref(provider, forget)
        except TypeError:  # not weakly referenceable: not held (it would be a leak); nothing closes it
            pass

    def _reached(self, provider: Any) -> bool:
        """Whether another entry's provider is, or wraps, one that ``provider`` is or wraps."""
        mine = _chain(provider)
        return any(not mine.isdisjoint(_chain(e.provider)) for e in self.entries.values())

    async def aclose(self) -> None:
        """Close every provider (the runtime's exit, after its actors stopped); a failure is logged.

        That is every entry's and every released one still alive.  A provider without ``aclose`` (a duck-typed
        one: ``complete`` is all the loop needs) is skipped.
        """
        providers = [e.provider for e in self.entries.values()]
        providers += [p for p in (ref() for ref in self.released.values()) if p is not None]
        self.entries.clear()
        self.released.clear()
        for provider in providers:
            await _close_provider(provider)


async def _close_provider(provider: Any) -> None:
    """``provider.aclose()`` when it has one; a failure is logged."""
    close = getattr(provider, "aclose", None)
    if close is None:  # optional for a duck-typed provider: it owns nothing to release
        return
    try:
        await close()
    except Exception as exc:
        log.warning("closing provider %r raised %s", provider, redact(f"{type(exc).__name__}: {exc}"))


# The ``aclose`` methods known to be undoable: an HTTPProvider's drops its owned pool (its next call makes a new
# one, and its keeper with it); a decorator's and a fallback chain's or pool's close their inner providers only.
# Named, not imported: the resilience layer sits above this one.
_REOPENING: Final = frozenset({
    ("agentactors.providers.http.provider", "HTTPProvider.aclose"),
})
_CLOSING_INNER: Final = frozenset({
    ("agentactors.resilience.decorator", "ProviderDecorator.aclose"),
    ("agentactors.resilience.multi", "MultiProvider.aclose"),
})
# How deep a chain of decorators is followed (a deeper one, or a cycle, is not closed).
_MAX_DEPTH: Final = 64


def _close_kind(provider: object) -> tuple[str, str] | None:
    close = getattr(type(provider), "aclose", None)
    if close is None:
        return None
    return (getattr(close, "__module__", ""), getattr(close, "__qualname__", ""))


def _inners(provider: object) -> tuple[Any, ...]:
    """The providers ``provider`` wraps, read through the public ``inner`` and ``members`` (a property that
    raises is read as absent)."""
    try:
        members = getattr(provider, "members", None)
        inner = getattr(provider, "inner", None)
    except Exception:
        return ()
    if isinstance(members, tuple | list):
        return tuple(members)
    return () if inner is None or inner is provider else (inner,)


def _reopens(provider: object, depth: int = 0) -> bool:
    """Whether ``provider.aclose()`` can be undone: its next call works as before (it only closes pools that are
    made again) — an HTTPProvider, or the library's decorators, chains and pools of such providers only."""
    if depth > _MAX_DEPTH:
        return False
    kind = _close_kind(provider)
    if kind in _REOPENING:
        return True
    if kind not in _CLOSING_INNER:
        return False
    inners = _inners(provider)
    return bool(inners) and all(_reopens(inner, depth + 1) for inner in inners)


def _chain(provider: object) -> set[int]:
    """The ids of ``provider`` and of every provider it wraps (:func:`_walk`)."""
    return {id(node) for node in _walk(provider)}


def _walk(provider: object) -> Iterator[object]:
    """``provider`` and every provider it wraps, each once (:func:`_inners`, at most :data:`_MAX_DEPTH` deep)."""
    seen: set[int] = set()
    todo = [(provider, 0)]
    while todo:
        node, depth = todo.pop()
        if id(node) in seen or depth > _MAX_DEPTH:
            continue
        seen.add(id(node))
        yield node
        todo.extend((inner, depth + 1) for inner in _inners(node))
