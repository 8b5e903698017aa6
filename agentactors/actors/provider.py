"""``ProviderActor``: one (usually decorated) LLM provider shared by many agents, with its budgets.

Spawn it with ``ProviderActor.shared(rt, provider, **budgets)`` (one per
provider object per runtime, spawned with ``concurrency=max_concurrency``; the
runtime closes the provider when it exits) or
``rt.spawn(ProviderActor(...), concurrency=actor.max_concurrency)``.  Its
semaphore and rate buckets are built by ``on_start``, inside the running event
loop, so the actor itself can be constructed anywhere.

Messages:

``Complete(request)``
    answers the :class:`~agentactors.messages.LLMResponse`, or raises the
    provider's error in the asker.
``Stream(request)``
    answers a :class:`ProviderStream`: the receive end of a bounded channel of
    stream events.  The actor opens the provider's stream in a task it owns (in
    the runtime's task group) that feeds the channel; a slow consumer slows the
    feeder (backpressure).  Closing the channel (``async with`` it), or
    abandoning the ask, cancels that task and with it the HTTP request.  A
    failure is raised by the consumer's next receive after the events that
    preceded it — it is never lost.

Budgets, shared by every request through the actor: ``max_concurrency``
requests in flight (a stream counts until it ends), ``requests_per_minute`` and
``tokens_per_minute``.  The rate budgets are token buckets holding one minute's
budget and refilled continuously (budget/60 per second), on ``anyio.current_time``
so that virtual clocks apply.  A request's tokens are estimated from its size
before it is sent (about 4 characters a token, plus ``max_tokens``) and
corrected by the usage the response reports.  Waiting for budget is recorded
as a ``provider.throttled`` event with the wait in seconds.  Waiters are
served in arrival order.  A request larger than the whole token budget waits
for a full bucket and then goes (rather than never).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

import anyio
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..errors import ActorStopped, ErrorKind, MalformedResponseError, ProviderError, redact
from ..messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent, TextDelta, Usage
from ..providers.base import interrupted
from .ref import ActorRef
from .runtime import Runtime

__all__ = ["Complete", "ProviderActor", "ProviderStream", "Stream", "estimate_tokens"]

log = logging.getLogger("agentactors.actors")

_EPSILON: Final = 1e-6  # seconds: float noise after sleeping exactly the computed wait


@attrs.frozen(slots=True)
class Complete:
    """Ask a :class:`ProviderActor` for a complete response to ``request``."""

    request: LLMRequest


@attrs.frozen(slots=True)
class Stream:
    """Ask a :class:`ProviderActor` for a :class:`ProviderStream` of ``request``'s events."""

    request: LLMRequest


def estimate_tokens(request: LLMRequest) -> int:
    """A conservative token estimate for budgeting: ~4 characters a token, plus ``max_tokens``.

    Media parts count by their own estimate (``estimated_tokens``, :mod:`agentactors.parts`): a flat
    :data:`~agentactors.parts.IMAGE_TOKENS` an image, :data:`~agentactors.parts.PAGE_TOKENS` a PDF page,
    :data:`~agentactors.parts.AUDIO_TOKENS_PER_SECOND` a second of audio.
    """
    chars = 0
    media = 0
    for message in request.messages:
        chars += len(message.content)
        for call in message.tool_calls:
            chars += len(call.name) + len(call.raw_arguments or call.arguments_json)
        for part in message.media:
            media += part.estimated_tokens
    for spec in request.tools:
        chars += len(spec.name) + len(spec.description) + len(json.dumps(spec.parameters, separators=(",", ":")))
    return chars // 4 + 1 + media + (request.max_tokens or 0)


class _Bucket:
    """A token bucket holding ``per_minute`` units, refilled at ``per_minute / 60`` a second."""

    __slots__ = ("capacity", "level", "rate", "stamp")

    def __init__(self, per_minute: float, now: float) -> None:
        self.capacity = float(per_minute)
        self.level = float(per_minute)
        self.rate = float(per_minute) / 60.0
        self.stamp = now

    def delay(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` may be taken (an amount over capacity waits for a full bucket)."""
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, amount: float) -> None:
        self.level -= amount  # may go below zero: an oversized request is paid back over time

    def give_back(self, amount: float) -> None:
        self.level = min(self.capacity, self.level + amount)


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
    the HTTP request; events not yet received are discarded.
    """

    __slots__ = ("_finished", "_receive", "_scope")

    def __init__(self, receive: MemoryObjectReceiveStream[Any], scope: anyio.CancelScope) -> None:
        self._receive = receive
        self._scope = scope
        self._finished = False

    def __aiter__(self) -> ProviderStream:
        return self

    async def __anext__(self) -> StreamEvent:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> StreamEvent:
        """The next event; ``anyio.EndOfStream`` after ``StreamEnd`` or once closed."""
        if self._finished:
            raise anyio.EndOfStream
        try:
            item = await self._receive.receive()
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
        """Stop the stream now: cancel the feeding task (and the HTTP request); drop unread events."""
        self._finished = True
        self._scope.cancel()
        self._receive.close()

    async def aclose(self) -> None:
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
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class ProviderActor:
    """Hosts one provider for many agents: one connection pool, one breaker state, one budget.

    :param provider: an :class:`~agentactors.providers.base.LLMProvider`, usually decorated.
    :param max_concurrency: requests in flight at once (a stream counts until it ends).
    :param requests_per_minute: request budget, or ``None`` for no limit.
    :param tokens_per_minute: token budget (estimated, corrected by reported usage), or ``None``.
    :param stream_buffer: events a stream may run ahead of its consumer.

    Errors: a provider error is raised in the asker (the actor goes on); an
    unknown message raises ``TypeError``.  Cancellation: abandoning an ask
    (asker cancelled, ask timeout) cancels the provider call; a request still
    waiting for budget never reaches the provider.
    """

    __slots__ = (
        "_lock",
        "_requests",
        "_slots",
        "_tokens",
        "max_concurrency",
        "provider",
        "requests_per_minute",
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
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        if requests_per_minute is not None and requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive")
        if tokens_per_minute is not None and tokens_per_minute <= 0:
            raise ValueError("tokens_per_minute must be positive")
        if stream_buffer < 0:
            raise ValueError("stream_buffer must be >= 0")
        self.provider = provider
        self.max_concurrency = max_concurrency
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.stream_buffer = stream_buffer
        self._slots: anyio.Semaphore | None = None
        self._lock: anyio.Lock | None = None
        self._requests: _Bucket | None = None
        self._tokens: _Bucket | None = None

    def __repr__(self) -> str:
        return (
            f"ProviderActor({getattr(self.provider, 'name', self.provider)!r}, max_concurrency={self.max_concurrency})"
        )

    @classmethod
    def shared(cls, rt: Runtime, provider: Any, **budgets: Any) -> ActorRef:
        """The runtime's one ProviderActor for ``provider`` (keyed by identity), spawned on first use.

        ``budgets`` are this class's keyword arguments (``max_concurrency``,
        ``requests_per_minute``, ``tokens_per_minute``, ``stream_buffer``);
        asking again with different budgets for the same provider raises
        ``ValueError`` (spawn a ProviderActor yourself to hold a second
        budget); asking with none returns the one there is.  The actor is
        spawned with ``concurrency=max_concurrency``.  The runtime closes the
        provider when it exits (a :meth:`Runtime.service` cleanup).  An actor
        that was stopped is replaced by a new one on the next call.

        :raises RuntimeError: outside ``async with rt``.
        """
        registry = rt.service(_SharedProviders, _SharedProviders, cleanup=_SharedProviders.aclose)
        entry = registry.entries.get(id(provider))
        if entry is not None and not entry[1].stopped:
            if budgets and budgets != entry[2]:
                raise ValueError(
                    f"provider {getattr(provider, 'name', provider)!r} already has a ProviderActor in this runtime "
                    f"with budgets {entry[2]}; spawn a ProviderActor yourself for different budgets"
                )
            return entry[1]
        actor = cls(provider, **budgets)
        ref = rt.spawn(
            actor,
            name=f"provider:{getattr(provider, 'name', type(provider).__name__)}",
            concurrency=actor.max_concurrency,
            mailbox_size=max(256, actor.max_concurrency * 4),
        )
        registry.entries[id(provider)] = (provider, ref, dict(budgets))
        return ref

    async def on_start(self) -> None:
        """Build the semaphore and the rate buckets, inside the running event loop.

        A direct actor's first asker runs this itself before its request, without a
        checkpoint (it never awaits): the first wave of asks all go directly, none
        queues for a worker task.
        """
        self._setup()

    def _setup(self) -> None:
        self._slots = anyio.Semaphore(self.max_concurrency)
        if self.requests_per_minute is not None or self.tokens_per_minute is not None:
            now = anyio.current_time()
            self._lock = anyio.Lock()
            if self.requests_per_minute is not None:
                self._requests = _Bucket(self.requests_per_minute, now)
            if self.tokens_per_minute is not None:
                self._tokens = _Bucket(self.tokens_per_minute, now)

    async def receive(self, message: Any) -> Any:
        """Answer :class:`Complete` or :class:`Stream` (see the module docstring).  Runs after :meth:`on_start`."""
        if not isinstance(message, Complete):
            if isinstance(message, Stream):
                return await self._stream(message.request)
            raise TypeError(f"ProviderActor handles Complete and Stream, not {type(message).__name__}")
        # -- complete: handled in this frame (no coroutine of its own: one frame less per request in flight)
        request = message.request
        # Without rate budgets there is nothing to wait for; a free slot is taken without a checkpoint.
        estimate = await self._admit(request) if self._lock is not None else 0
        slots = self._slots
        if slots is None:
            await self._acquire_slot()
        else:
            try:
                slots.acquire_nowait()  # inline: the common case costs no coroutine and no checkpoint
            except anyio.WouldBlock:
                await slots.acquire()
        try:
            response: LLMResponse = await self.provider.complete(request)
        except ProviderError as exc:
            self._refund_if_unsent(exc, estimate)
            raise
        finally:
            self._release_slot()
        if self._tokens is not None:  # no token budget: nothing to correct (and no call to make)
            self._settle(estimate, response.usage)
        return response

    # -- stream ----------------------------------------------------------------------------------

    async def _stream(self, request: LLMRequest) -> ProviderStream:
        rt = Runtime.current()
        if rt is None or not rt.running:
            raise ActorStopped("a ProviderActor streams only inside a running Runtime")
        estimate = await self._admit(request)
        await self._acquire_slot()
        send, receive = anyio.create_memory_object_stream[Any](self.stream_buffer)
        scope = anyio.CancelScope()
        try:
            rt.spawn_task(self._feed, request, send, scope, estimate, name=f"stream:{self!r}")
        except BaseException:
            self._release_slot()
            send.close()
            receive.close()
            raise
        return ProviderStream(receive, scope)

    async def _feed(
        self, request: LLMRequest, send: MemoryObjectSendStream[Any], scope: anyio.CancelScope, estimate: int
    ) -> None:
        """Pump the provider's stream into ``send``; runs in the runtime's task group."""
        usage: Usage | None = None
        try:
            with scope, send:
                failure, usage = await self._pump(request, send)
                if failure is not None:
                    if isinstance(failure.error, ProviderError):
                        self._refund_if_unsent(failure.error, estimate)
                    try:
                        await send.send(failure)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        pass  # the consumer already left; nobody is waiting for the error
        finally:
            self._release_slot()
        if usage is not None:
            self._settle(estimate, usage)

    async def _pump(
        self, request: LLMRequest, send: MemoryObjectSendStream[Any]
    ) -> tuple[_Failure | None, Usage | None]:
        """Deliver the events.  Returns the failure to deliver last (if any) and the reported usage."""
        texts: list[str] = []
        sent = 0
        usage: Usage | None = None
        try:
            async with self.provider.stream(request) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        texts.append(event.text)
                    elif isinstance(event, StreamEnd):
                        usage = event.response.usage
                    try:
                        await send.send(event)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        return None, usage  # the consumer closed: leaving the block closes the request
                    sent += 1
                    if usage is not None:
                        break
        except Exception as exc:
            if sent:
                # The contract says a failure after the first event is StreamInterruptedError; make
                # sure of it even for a provider that breaks it (the consumer already saw a part).
                exc = interrupted(exc, provider=self._name, model=request.model, partial_text="".join(texts))
            return _Failure(exc), None
        if usage is None:
            error = MalformedResponseError(
                "the stream ended without its final StreamEnd event", provider=self._name, model=request.model
            )
            return _Failure(error), None
        return None, usage

    @property
    def _name(self) -> str:
        return str(getattr(self.provider, "name", type(self.provider).__name__))

    # -- budgets ---------------------------------------------------------------------------------

    async def _acquire_slot(self) -> None:
        slots = self._slots
        if slots is None:  # pragma: no cover - on_start sets the actor up first
            slots = self._slots = anyio.Semaphore(self.max_concurrency)
        try:
            slots.acquire_nowait()  # the common case pays no checkpoint
        except anyio.WouldBlock:
            await slots.acquire()

    def _release_slot(self) -> None:
        if self._slots is not None:
            self._slots.release()

    async def _admit(self, request: LLMRequest) -> int:
        """Wait for request and token budget (FIFO); returns the tokens taken."""
        lock = self._lock
        if lock is None:
            return 0
        tokens = self._tokens
        requests = self._requests
        estimate = estimate_tokens(request) if tokens is not None else 0
        async with lock:
            while True:
                now = anyio.current_time()
                wait_requests = requests.delay(1, now) if requests is not None else 0.0
                wait_tokens = tokens.delay(estimate, now) if tokens is not None else 0.0
                wait = max(wait_requests, wait_tokens)
                if wait <= _EPSILON:
                    break
                rt = Runtime.current()
                if rt is not None:
                    rt.emit(
                        "provider.throttled",
                        provider=self._name,
                        budget="requests" if wait_requests >= wait_tokens else "tokens",
                        wait=wait,
                        estimated_tokens=estimate,
                    )
                await anyio.sleep(wait)
            if requests is not None:
                requests.take(1)
            if tokens is not None:
                tokens.take(estimate)
        return estimate

    def _settle(self, estimate: int, usage: Usage) -> None:
        """Correct the token budget by what the response says it used."""
        tokens = self._tokens
        if tokens is None:
            return
        used = usage.input_tokens + usage.output_tokens
        if used > 0:
            tokens.give_back(estimate - used) if used < estimate else tokens.take(used - estimate)

    def _refund_if_unsent(self, exc: ProviderError, estimate: int) -> None:
        # A request fault is raised before (or instead of) any work by the vendor: no tokens spent.
        if self._tokens is not None and exc.kind is ErrorKind.request:
            self._tokens.give_back(estimate)


class _SharedProviders:
    """A runtime's shared ProviderActors, one per provider object (the :meth:`ProviderActor.shared` registry).

    Kept as a :meth:`Runtime.service`; each entry holds the provider itself,
    so its id cannot be reused while the runtime runs.
    """

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[int, tuple[Any, ActorRef, dict[str, Any]]] = {}

    async def aclose(self) -> None:
        """Close every provider (the runtime's exit, after its actors stopped); a failure is logged."""
        entries = list(self.entries.values())
        self.entries.clear()
        for provider, _ref, _budgets in entries:
            try:
                await provider.aclose()
            except Exception as exc:
                log.warning("closing provider %r raised %s", provider, redact(f"{type(exc).__name__}: {exc}"))
