"""A streamed answer read in its asker's own task: :class:`PulledStream`, the answer to ``Stream(request, pull=True)``.

Why: a :class:`~.provider.ProviderStream` is fed by a task the actor owns — the task, its cancel scopes, the
channel between them and the frames waiting in each are most of what a live stream holds beyond its HTTP
connection (tracemalloc, 1,000 concurrent streams: ~4.5 KB of 28 KB a stream on asyncio, ~5 of 22 KB on trio),
and every delta crosses from that task to the reader's.  A reader that reads a stream in one task, from its first
event to its last — the tool loop does — needs neither: each receive takes the provider's next event itself.

What a pulled stream keeps of the fed one: its request holds one of the actor's ``max_concurrency`` slots until
the stream ends, fails or is closed; a failure after the first event is a
:class:`~agentactors.errors.StreamInterruptedError` with the text delivered so far, a stream that ends without its
:class:`~agentactors.messages.StreamEnd` a :class:`~agentactors.errors.MalformedResponseError`; a request fault
(or a rejection before any generation: a prompt too long for the model, an account refused) gives its estimated
tokens back, a reported usage corrects them; closing (``async with``, :meth:`aclose`) closes
the provider's stream — and its HTTP request — at once; an answer abandoned before its asker took it gives its slot
back (:class:`~agentactors.actors.mailbox.ReleasableAnswer`), and so does ``close()`` at once (the provider's
stream itself is then left by the reading task), and so does a stream its reader dropped unclosed (its finaliser
hands the release to the loop).  A stream cut short once its request went out — cancelled, or closed before its
``StreamEnd`` — notes its call for the run to charge (``docs/costs.md``, "Calls cut short"): the vendor bills it.

What it gives up: read-ahead (``stream_buffer`` does not apply: the provider is read as fast as the reader asks,
and the vendor's bytes wait in the socket meanwhile), and a task that belongs to the runtime — the stream lives in
its reader's task.  So read it in the task that asked, and leave it with ``async with``.  A halt of the actor (the
runtime's exit) does not reach the reader by itself: the tool loop holds its run's frame on the actor while it
reads (:func:`agentactors.actors.frame.hold`), so a drain waits for the stream and a halt cancels the run.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio

from ..errors import ErrorKind, MalformedResponseError, ProviderError
from ..messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent, TextDelta, Usage
from ..pricing import CutShort, add_cut_short, cut_short_of, is_batch, note_cut_short
from ..providers.port import UNOPENED, interrupted, not_a_context_manager, not_an_iterator
from ._estimate import estimated_cut_short
from ._vendor import vendor_of
from .scheduling import Scheduler

__all__ = ["PulledStream", "Tally", "note_unread_end", "refund_if_unsent"]

log = logging.getLogger("agentactors.actors")


class Tally:
    """What a stream delivered so far: its text (a failure's ``partial_text``), how many events, its usage.

    Kept by both kinds of stream (fed and pulled) so that both turn a failure into the same error.
    """

    __slots__ = ("sent", "texts", "usage")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.sent = 0
        self.usage: Usage | None = None

    def seen(self, event: StreamEvent) -> None:
        """``event`` is about to be delivered: keep its text, or the usage a ``StreamEnd`` reports."""
        if isinstance(event, TextDelta):
            self.texts.append(event.text)
        elif isinstance(event, StreamEnd):
            response = event.response
            # (a custom provider's StreamEnd without an LLMResponse: no usage to settle; the run's step names it)
            self.usage = response.usage if isinstance(response, LLMResponse) else Usage()

    def failure(self, exc: Exception, provider: str, request: LLMRequest) -> Exception:
        """What the reader is told of ``exc``: after the first event, a ``StreamInterruptedError`` in any case.

        The contract says so; this makes sure of it even for a provider that breaks it (the reader already
        saw a part).
        """
        if not self.sent:
            return exc
        return interrupted(exc, provider=provider, model=request.model, partial_text="".join(self.texts))

    @staticmethod
    def no_end(provider: str, request: LLMRequest) -> MalformedResponseError:
        """The error of a stream that ended without its ``StreamEnd``."""
        return MalformedResponseError(
            "the stream ended without its final StreamEnd event", provider=provider, model=request.model
        )


def note_unread_end(request: LLMRequest, end: StreamEnd) -> None:
    """``request``'s stream got to its ``end``, and nobody will read it (its reader left first): the vendor billed the
    whole call, so it is noted for the run to charge as a read one would be — at the end's usage (the vendor's word,
    not an estimate), with the calls cut short it carried (:func:`~agentactors.pricing.cut_short_of`).  Added to what
    was noted against ``request`` (:func:`~agentactors.pricing.add_cut_short`): a layer inside notes nothing for a
    stream that reached its end."""
    response: object = end.response
    if not isinstance(response, LLMResponse):  # (a broken provider's end: no usage to charge by; nobody reads it)
        return
    usage = response.usage
    add_cut_short(request, (
        CutShort(response.provider, response.model or request.model, usage.input_tokens, usage.output_tokens,
                 estimated=False, batch=is_batch(response)),
        *cut_short_of(response),
    ))


class PulledStream:
    """A streamed answer read in its asker's task: an async iterator of stream events, each taken by the read.

    Use it as ``async with stream: async for event in stream: ...``, in the task that asked.  The provider's
    stream is opened by the first read; a successful stream ends after its
    :class:`~agentactors.messages.StreamEnd` (closed, and its slot given back, before that event is returned);
    a provider failure is raised by the read it interrupts, the events before it delivered.

    The provider's stream block is entered by the first read and left by the last (or by ``aclose``), in the
    reading task, and it may hold that task's cancel scopes in between (``with_timeout``'s do): read it all
    inside the scopes that were current at its first read — ``async with`` around the reads keeps it so.

    Made by :class:`~.provider.ProviderActor` for ``Stream(request, pull=True)``, once the request was admitted
    (its slot is held from then on).
    """

    __slots__ = ("_done", "_estimate", "_events", "_name", "_opened", "_provider", "_request", "_sched", "_started",
                 "_tally")

    def __init__(
        self, provider: Any, name: str, request: LLMRequest, sched: Scheduler, estimate: int, started: float
    ) -> None:
        """``sched``: the actor's scheduler, whose slot the request holds (taken at ``started``, with ``estimate``
        tokens charged): given back once, when the stream ends, fails or is closed."""
        self._provider = provider
        self._name = name
        self._request = request
        self._estimate = estimate
        self._started = started
        self._opened: AbstractAsyncContextManager[AsyncIterator[StreamEvent]] | None = None
        self._events: AsyncIterator[StreamEvent] | None = None
        self._tally: Tally | None = None
        self._sched: Scheduler | None = sched
        self._done = False

    def __aiter__(self) -> PulledStream:
        return self

    async def receive(self) -> StreamEvent:
        """The next event; ``anyio.EndOfStream`` after ``StreamEnd`` or once closed (see :meth:`__anext__`).

        Cancellation: as :meth:`__anext__`: the stream is closed, its slot given back, and the cancellation
        propagates.
        """
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise anyio.EndOfStream from None

    async def __anext__(self) -> StreamEvent:
        """The next event; ``StopAsyncIteration`` after ``StreamEnd`` or once closed.

        (What ``async for`` awaits, with the read itself in it: a reader waiting on the vendor holds this one
        frame of the stream's, not a second around it.)

        :raises ProviderError: the provider's failure (a ``StreamInterruptedError`` after the first event).

        Cancellation: the read stops where it waits (on the vendor's next bytes), and the cancellation is
        handed to the provider's stream as ``async with`` would hand it (an inner ``with_timeout`` tells its own
        from the caller's there): the stream is closed, its slot given back, and the cancellation propagates —
        or, when it was the provider's own timeout, the timeout's error is raised instead.
        """
        if self._done:
            if self._opened is not None:  # closed by close(): the block is left here, in the reading task
                await self.aclose()
            raise StopAsyncIteration
        events, tally = self._events, self._tally
        if events is None or tally is None:
            events, tally = await self._open()
        try:
            event = await events.__anext__()
        except StopAsyncIteration:
            left = await self._leave(None)
            error = left if isinstance(left, Exception) else tally.no_end(self._name, self._request)
            self._finish(error)
            if left is not None and not isinstance(left, Exception):
                raise left from None
            raise error from None
        except BaseException as exc:
            # The first read: its context manager's value may be no async iterator (named, the block left with it).
            broken = not_an_iterator(events, exc, provider=self._name, model=self._request.model) \
                if not tally.sent else None
            left = await self._leave(exc if broken is None else broken)
            cause = (exc if broken is None else broken) if left is None else left
            if not isinstance(cause, Exception):  # a cancellation (or an interrupt), the read's or its block's own
                self._finish(None, False)
                self._cut_short(tally)
                if cause is exc:
                    raise
                raise cause from exc
            error = tally.failure(cause, self._name, self._request)
            self._finish(error)
            if error is exc:
                raise
            failed: tuple[Exception, bool] | None = (error, error is cause)
        else:
            failed = None
        if failed is not None:
            # Raised here, not in the except block: there the vendor's own exception (its text may hold a key a
            # proxy echoed) would become the error's __context__.  A failure raised as it is keeps its own chain;
            # an interruption keeps the cause it was built with (the classified, scrubbed error), not the raw one.
            if failed[1]:
                raise failed[0] from None
            raise failed[0]
        tally.seen(event)
        tally.sent += 1
        if isinstance(event, StreamEnd):
            left = await self._leave(None)
            self._finish(None)
            if left is not None and not isinstance(left, Exception):
                raise left
            if left is not None:  # the answer is whole: a failure on the way out of its block changes nothing
                log.debug("closing the provider's stream raised %s after its end", type(left).__name__)
        return event

    async def _open(self) -> tuple[AsyncIterator[StreamEvent], Tally]:
        """Open the provider's stream (the request goes out here).  A failure to open is raised as it is."""
        opened: Any = UNOPENED
        try:
            opened = self._provider.stream(self._request)
            events = await opened.__aenter__()
        except BaseException as exc:
            # A cancellation while it opens is a read cancelled (see __anext__): the stream is over, its slot
            # given back — not left held, nor the request sent again by a later read.
            broken = not_a_context_manager(opened, exc, provider=self._name, model=self._request.model)
            self._finish(exc if broken is None and isinstance(exc, Exception) else broken, isinstance(exc, Exception))
            if not isinstance(exc, Exception):
                self._cut_short(None)
            if broken is None:
                raise
        else:
            broken = None
        if broken is not None:  # (raised outside the except block: not chained to Python's own TypeError)
            raise broken
        self._opened, self._events, self._tally = opened, events, Tally()
        return events, self._tally

    async def _leave(self, exc: BaseException | None) -> BaseException | None:
        """Leave the provider's stream block with ``exc`` (``None``: normally), as ``async with`` leaves it.

        Not shielded: the block's own cancel scopes (``with_timeout``'s) must be the task's current ones when
        it is left; what must finish even in a cancelled task, the HTTP layer shields itself.  Returns what the
        block raised instead of ``exc`` (``None``: nothing, or ``exc`` itself; a ``MalformedResponseError`` when
        it swallowed ``exc``).
        """
        opened, events, self._opened, self._events = self._opened, self._events, None, None
        self._done = True
        if opened is None:
            return None
        # The provider's iterator is finished now, not when it is collected (trio warns about a half-read
        # async generator, and its cleanup must run in this task, not in a finaliser).
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                try:
                    await aclose()
                except Exception as raised:  # the block is still left below: the HTTP request closes
                    log.debug("closing the provider's event iterator raised %s", type(raised).__name__)
        try:
            if exc is None:
                await opened.__aexit__(None, None, None)
            elif await opened.__aexit__(type(exc), exc, exc.__traceback__) and isinstance(exc, Exception):
                return MalformedResponseError(
                    "the stream failed and its context manager swallowed the failure",
                    provider=self._name,
                    model=self._request.model,
                )
        except BaseException as raised:
            return None if raised is exc else raised
        return None

    def _cut_short(self, tally: Tally | None) -> None:
        """The stream was cut short once its request went out (or was going) — cancelled, or closed by its reader
        before its ``StreamEnd``: noted for the run to charge — its prompt and the text delivered so far, at an
        estimate (:meth:`.provider.ProviderActor._cut_short`).  After the provider's block was left, and without
        replacing a note: a layer inside that noted the call (``with_retry``, ``with_hedge``) knows more."""
        delivered = "".join(tally.texts) if tally is not None else ""
        source = vendor_of(self._provider) or self._provider
        note_cut_short(self._request, (estimated_cut_short(source, self._request, delivered=delivered),), replace=False)

    def _finish(self, failure: Exception | None, sample: bool = True) -> None:
        """Give the slot back (once), with the tokens: a request fault's refunded, a reported usage settled.

        ``sample=False``: the stream was cancelled or closed before its end — its time is no service-time sample;
        nor is a request the vendor refused before any work (:func:`refund_if_unsent`).
        """
        self._done = True
        sched, self._sched = self._sched, None
        if sched is None:
            return
        if isinstance(failure, ProviderError):
            sample = refund_if_unsent(sched, failure, self._estimate) and sample
        tally = self._tally
        try:
            if failure is None and tally is not None and tally.usage is not None:
                sched.settle(self._estimate, tally.usage)  # (before the release grants the next waiter)
        finally:
            sched.release(self._started, sample, failed=failure is not None)

    async def aclose(self) -> None:
        """Close the stream now: the provider's stream (and its HTTP request) at once; unread events are
        dropped.  Idempotent.  A stream opened and closed before its ``StreamEnd`` was sent, and is billed: its
        call is noted as cut short (:func:`~agentactors.pricing.note_cut_short`), once.

        Cancellation: the HTTP request is closed even in a cancelled task (shielded where it must be).
        """
        if self._opened is None:
            self._finish(None, False)
            return
        # Still open: left before its StreamEnd (which leaves the block itself), its request sent — billed.
        tally = self._tally
        left = await self._leave(None)
        self._finish(None, False)
        self._cut_short(tally)
        if left is not None and not isinstance(left, Exception):
            raise left  # a cancellation that reached the block's own cleanup: the task is being cancelled
        if left is not None:
            log.debug("closing the provider's stream raised %s", type(left).__name__)

    def close(self) -> None:
        """Stop the stream without awaiting: no event is read from now on, and its slot goes back at once.

        A stream already opened is left by the reading task — its next read (which raises ``EndOfStream``) or
        its ``async with`` / :meth:`aclose`: the provider's block may hold cancel scopes of that task
        (``with_timeout``'s), which no other task may leave.
        """
        self._done = True
        self._finish(None, False)

    def release_unclaimed(self) -> None:
        """The asker gave up before it took the stream: give its slot back (nothing was opened yet)."""
        self.close()

    def __del__(self) -> None:
        # A stream its reader dropped unfinished and unclosed (a consumer that vanished): its slot must come
        # back, or the actor runs one request short for good.  Handed to the loop, not released here: a
        # finaliser may run in another thread, or inside the scheduler itself.  The provider's stream, if it was
        # opened, goes with this object; its async generators are finalised by the loop's own hooks.
        # Its call, sent and billed, is not noted as cut short (docs/costs.md): a note is for the run that asked,
        # which takes it in its own failure or cancellation branch, and that run has gone by now (a run reads
        # inside `async with`, which closes the stream and notes it); a note made here would stay against the
        # request object for a later call reusing it to take as its own.  (Nor is a finaliser a safe place for
        # it: at a collection the request may be garbage of the same cycle, and pricing may import its table.)
        sched = self._sched
        if sched is not None:
            self._sched = None
            sched.release_soon(self._started)

    async def __aenter__(self) -> PulledStream:
        """``async with stream:`` — the stream itself (the provider's stream opens at the first read).

        Cancellation: not a cancellation point (it awaits nothing).
        """
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Leaving the block closes the stream (:meth:`aclose`).

        Cancellation: as :meth:`aclose`: a block left by a cancellation still closes the HTTP request and gives
        the slot back.
        """
        await self.aclose()

    def __repr__(self) -> str:
        state = "done" if self._done else "open" if self._opened is not None else "not opened"
        return f"<PulledStream {self._name} {state}>"


# The kinds of a rejection before any generation: the vendor refused the prompt as it was (malformed, too long
# for the model, not allowed to this account) and did no work — its tokens are no spend of the token budget.
# Not content_policy: a filter may stop a call after the model generated (an output filter), and those tokens
# were spent.  Not transient: a 5xx or a timeout may come after the model worked.
_REJECTED = frozenset({ErrorKind.request, ErrorKind.context, ErrorKind.account})


def refund_if_unsent(sched: Scheduler, exc: ProviderError, estimate: int) -> bool:
    """Give ``estimate`` tokens back for a rejection before any work by the vendor; whether the call was served.

    A request fault, a prompt too long for the model's context, an account the vendor refused (:data:`_REJECTED`):
    raised before (or instead of) any generation, so its tokens were not spent — kept, one prompt too long for the
    model left its whole estimate charged to the shared bucket and every other agent waited minutes for it.  The
    vendor counted the request itself: the request budget keeps it.  A breaker's refusal (``circuit_open``) was
    never sent at all: its request is given back as well.  (Kept, an open breaker's instant refusals drained the
    request and token budgets, and the requests behind them waited for budget that nothing had used.)  A vendor's
    429 with a ``retry_after`` holds the budgets that long (:meth:`~.scheduling.Scheduler.hold_off`).

    Returns ``False`` for those unserved calls (refused at once: their time is no service-time sample,
    :meth:`~.scheduling.Scheduler.release`), ``True`` otherwise.  Called only when a request failed: off the
    common path.
    """
    kind = exc.kind
    if kind is ErrorKind.circuit_open:
        sched.refund(estimate, unsent=True)
        return False
    served = True
    if kind in _REJECTED:
        sched.refund(estimate)
        served = False
    if exc.status == 429 and exc.retry_after is not None:
        # The vendor's rate limit is spent for retry_after: the actor's budgets hold the requests behind this one
        # as long (Scheduler.hold_off), rather than send each to the same 429.
        sched.hold_off(exc.retry_after, estimate)
    return served
