"""Opening a stream up to its first event, and relaying the rest.

Every decorator makes its decision (retry, fail over, count) *before* the
consumer sees anything, so each one opens the inner stream and pulls its first
event itself.  From then on the inner stream is relayed as is, and any failure
is a :class:`~agentactors.errors.StreamInterruptedError` that nobody replays.

The inner stream's context manager stays entered (in an ``AsyncExitStack``)
across the relay, in the caller's task, and every exception is handed to it on
exit: an inner :func:`~agentactors.resilience.with_timeout` turns its own
cancellation into :class:`~agentactors.errors.ProviderTimeout` only if it sees
that cancellation on its way out.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import attrs

from .._scrub import scrub_chain
from ..errors import MalformedResponseError, StreamInterruptedError
from ..messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent
from ..pricing import CutShort, with_cut_short
from ..providers.port import (
    UNOPENED,
    StreamAccumulator,
    StreamContext,
    interrupted,
    not_a_context_manager,
    not_an_iterator,
    stream_from_complete,
    streaming_for,
)
from .decorator import name_of

__all__ = ["Carried", "OpenedStream", "cut_short", "open_stream", "relay", "stream_of"]


def stream_of(provider: Any, request: LLMRequest) -> StreamContext:
    """``provider.stream(request)``, or its ``complete()`` as a one-response stream when it cannot stream.

    A provider "cannot stream" when :func:`~agentactors.providers.port.streaming_for`
    says so (no callable ``stream``, or ``supports_streaming`` is ``False``) or its
    ``stream()`` raises ``NotImplementedError``.  Such a member is adapted, never skipped.
    """
    if not streaming_for(provider):
        return stream_from_complete(provider, request)
    try:
        return provider.stream(request)  # type: ignore[no-any-return]
    except NotImplementedError:
        return stream_from_complete(provider, request)


@attrs.define(slots=True)
class OpenedStream:
    """An inner stream that has produced its first event; ``stack`` holds its context manager open."""

    stack: AsyncExitStack
    events: AsyncIterator[StreamEvent]
    first: StreamEvent


async def open_stream(open_cm: Callable[[], StreamContext], *, provider: str, model: str | None) -> OpenedStream:
    """Enter the stream ``open_cm()`` returns and read its first event.

    Raises whatever failed before the first event (after the inner context
    manager saw it, so it may have turned it into another error).  A stream
    that ends without any event is a :class:`MalformedResponseError`
    (transient): the contract promises at least a ``StreamEnd``.

    Cancellation: a cancellation before the first event is shown to the inner stream's context manager, which
    closes the stream, and then propagates unchanged; nothing stays open.
    """
    stack = AsyncExitStack()
    swallowed: MalformedResponseError | None = None
    cm: object = UNOPENED
    try:
        cm = open_cm()
        events = await stack.enter_async_context(cm)
        try:
            first = await events.__anext__()
        except (AttributeError, TypeError) as exc:
            # Its value is no async iterator (a list, None): the member named — its block left with that error below.
            broken = not_an_iterator(events, exc, provider=provider, model=model)
            if broken is None:
                raise
            raise broken from None
    except StopAsyncIteration:
        await stack.aclose()
        raise MalformedResponseError("the stream ended before its first event", provider=provider, model=model)
    except BaseException as exc:
        # A stream() that returned no async context manager (nothing was entered): named, raised below.
        swallowed = not_a_context_manager(cm, exc, provider=provider, model=model)
        # Else the inner context manager must see the failure: it may be its own timeout's cancellation.
        if swallowed is None:
            if not await stack.__aexit__(type(exc), exc, exc.__traceback__):
                raise
            swallowed = MalformedResponseError(
                "the stream ended before its first event (its context manager swallowed a failure)",
                provider=provider,
                model=model,
            )
            # The member's failure as the cause, scrubbed (a custom provider's text may hold a credential); raised
            # below, outside this block, so the raw failure is not kept as the error's __context__ either.
            swallowed.__cause__ = scrub_chain(exc)
    if swallowed is not None:
        raise swallowed
    return OpenedStream(stack, events, first)


async def relay(
    opened: OpenedStream,
    *,
    provider: object,
    model: str | None,
    transform: Callable[[StreamEvent], StreamEvent] | None = None,
    on_failure: Callable[[BaseException], None] | None = None,
    on_end: Callable[[], None] | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """Yield the first event and the rest; a later failure becomes ``StreamInterruptedError``.

    ``transform`` rewrites each event on the way (a fallback chain names the
    member that served on ``StreamEnd``).  ``on_failure`` is told about an
    inner failure (an ``Exception``) before it is raised; ``on_end`` that the
    inner stream ended (not that its consumer stopped reading).

    Cancellation: it passes through untouched; the inner stream stays open in ``opened.stack`` until the caller
    closes it.
    """
    acc = StreamAccumulator()
    event = opened.first
    while True:
        acc.add(event)
        yield transform(event) if transform is not None else event
        try:
            event = await opened.events.__anext__()
        except StopAsyncIteration:
            if on_end is not None:
                on_end()
            return
        except Exception as exc:
            error = cut_short(exc, provider=provider, model=model, partial_text=acc.text)
        else:
            continue
        # Raised after the except block: in it, the foreign exception would be the error's __context__.
        if on_failure is not None:
            on_failure(error)
        raise error


def cut_short(exc: Exception, *, provider: object, model: str | None, partial_text: str) -> StreamInterruptedError:
    """The :class:`~agentactors.errors.StreamInterruptedError` for ``exc``, a failure after the first event of
    ``provider`` (an object: its name is taken).

    :func:`~agentactors.providers.port.interrupted` classifies ``exc`` first, as a failure before the first
    event is: a foreign exception's text is redacted and its cause chain scrubbed, so a credential in it
    (a URL's ``?key=``) does not ride along as the interruption's cause.  Raise the result outside the
    ``except`` block that caught ``exc``, or ``exc`` becomes its ``__context__``.
    """
    return interrupted(exc, provider=name_of(provider), model=model, partial_text=partial_text)


class Carried:
    """A stream's events relayed by a layer that must charge its calls cut short (``with_retry``, ``with_fallback``).

    Its text is kept (``acc``: what a stream left alive had delivered); ``ended``: its ``StreamEnd`` was relayed;
    ``over``: it reached its end, with or without that event, or failed — not left alive by its consumer (a stream
    left alive is billed as a call in flight).  ``abandoned``: calls cut short before this stream, put on its
    ``StreamEnd``'s response (:func:`~agentactors.pricing.with_cut_short`) and then emptied — not noted again.
    """

    __slots__ = ("abandoned", "acc", "ended", "events", "inner", "over")

    def __init__(self, inner: AsyncGenerator[StreamEvent, None], abandoned: list[CutShort] | None = None) -> None:
        self.inner = inner
        self.abandoned: list[CutShort] = abandoned if abandoned is not None else []
        self.acc = StreamAccumulator()
        self.ended = False
        self.over = False
        self.events = self._events()

    async def _events(self) -> AsyncGenerator[StreamEvent, None]:
        try:
            async for event in self.inner:
                if isinstance(event, StreamEnd):
                    self.over = True
                    # An end without an answer (a custom provider's None, str) is relayed as it is, for the run's step
                    # to name; it carries nothing, and counts as no end: what was to ride on it is charged as for a
                    # stream that ended without its StreamEnd.
                    self.ended = isinstance(event.response, LLMResponse)
                    if self.abandoned and self.ended:
                        event = StreamEnd(with_cut_short(event.response, self.abandoned))
                        self.abandoned = []  # on the answer now: not noted again
                else:
                    self.acc.add(event)
                yield event
        except Exception:  # the stream failed (not the consumer leaving: GeneratorExit, a cancellation)
            self.over = True
            raise
        self.over = True  # ended, with or without its StreamEnd

    async def aclose(self) -> None:
        """Close the relay, then the stream it relays (both, whatever the first raises).

        Cancellation: a cancellation while closing the relay still closes the stream it relays (a ``finally``),
        then propagates.
        """
        try:
            await self.events.aclose()
        finally:
            await self.inner.aclose()
