"""One model call on the stream path: answer text delivered as it arrives, then the response.

The controller takes this path when someone wants the text as it comes (``on_token``, or
``agent.stream``): it asks the ProviderActor ``Stream(request, pull=True)`` instead of
``Complete(request)`` and reads the stream it answers with itself, in the run's task (no task of the
actor's feeds it: :class:`~agentactors.gateway.PulledStream`).  Think blocks never reach ``on_text``
or ``llm.text_delta``; on the JSON transport neither do the tool-call blocks (held back from a
possible block start until resolved).  A typed run someone listens to also follows its answer's JSON as it streams
(``output.partial`` events, through the :class:`~agentactors.output.partial.PartialOutput` given).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final, Protocol

from ..actors.frame import Frame, hold, release
from ..actors.ref import ActorRef
from ..errors import MalformedResponseError
from ..events import EventSink
from ..gateway.provider import Stream
from ..messages import (
    LLMRequest,
    LLMResponse,
    ReasoningDelta,
    StopReason,
    StreamEnd,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ..output.partial import PartialOutput
from ..providers.port import broken_contract
from .json_transport import StreamFilter
from .thinking import ThinkFilter

__all__ = ["generate_streamed", "hosted_name"]

log = logging.getLogger("agentactors.loop")


class _Asks(Protocol):
    """What the stream path needs of the ProviderActor reference."""

    async def ask(self, message: Any) -> Any: ...


async def generate_streamed(
    provider: _Asks,
    request: LLMRequest,
    *,
    native: bool,
    sink: EventSink | None,
    on_text: Callable[[str], None] | None,
    partial: PartialOutput | None = None,
    frame: Frame | None = None,
) -> LLMResponse:
    """Ask ``provider`` to stream ``request``; deliver the answer text as it arrives; return the response.

    ``native``: the provider carries tools natively (else the JSON transport's blocks are held back);
    ``sink`` gets ``llm.text_delta`` and ``llm.reasoning_delta``; ``on_text`` each piece of answer text
    (a callback that raises is logged, and the run goes on); ``partial`` follows a typed answer.

    The stream is pulled — read here, in the run's task (``Stream(request, pull=True)``: no task of the
    actor's feeds it).  ``frame``, the run's, is held on the provider actor while it is read
    (:func:`~agentactors.actors.frame.hold`): a drain of the actor waits for the stream, as for any
    handler, and a halt (``rt.stop``, the runtime's exit) cancels the run through it.

    :raises MalformedResponseError: the stream ended without its final response, or yielded something that is no
        stream event (the provider named: the loop makes it the run's failed result).

    Cancellation: the stream is closed (``async with``) and its request cancelled; text already
    delivered stays delivered — the run's result keeps no half answer.
    """

    thinking = ThinkFilter()
    blocks = StreamFilter() if not native else None
    response: Any = _NO_END  # (a StreamEnd's response, an LLMResponse — or what a broken provider put there)
    stream = await provider.ask(Stream(request, pull=True))
    ref = provider if type(provider) is ActorRef else None  # a taped run's provider is a wrapper: not held
    held = frame is not None and ref is not None and hold(frame, ref)
    try:
        async with stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    # A delta without text (``""``, or a provider's ``None``) carries nothing: skipped.
                    text = thinking.feed(event.text) if event.text else ""
                    if blocks is not None and text:
                        text = blocks.feed(text)
                    if text:
                        _deliver(text, sink, on_text, partial)
                elif isinstance(event, StreamEnd):
                    response = event.response
                elif isinstance(event, ReasoningDelta):
                    if sink is not None:
                        sink.emit("llm.reasoning_delta", text=event.text)
                elif partial is not None:
                    if isinstance(event, ToolCallDelta):
                        partial.call_delta(event.index, event.arguments_fragment)
                    elif isinstance(event, ToolCallStart):
                        partial.call_started(event.index, event.name)
                    elif not isinstance(event, ToolCallEnd):
                        raise _not_an_event(provider, request, event)
                elif not isinstance(event, _CALL_EVENTS):
                    # (a tool call's event when nobody follows the calls, one test; anything else is no event)
                    raise _not_an_event(provider, request, event)
    finally:
        if held and frame is not None and ref is not None:
            release(frame, ref)
    tail = thinking.finish()
    if blocks is not None:
        # A reply cut at max_tokens inside a call block: that call, cut, is never shown (parse_reply marks it).
        cut = getattr(response, "stop_reason", None) is StopReason.max_tokens  # (no end, or a broken one: not cut)
        tail = blocks.feed(tail) + blocks.finish(cut=cut) if tail else blocks.finish(cut=cut)
    if tail:
        _deliver(tail, sink, on_text, partial)
    if response is _NO_END:
        raise MalformedResponseError(
            "the stream ended without its final StreamEnd event", provider=hosted_name(provider), model=request.model
        )
    return response  # type: ignore[no-any-return]  # (a broken one: the step names its provider, .controller)


_NO_END: Final = object()  # no StreamEnd came

# A tool call's stream events: what is left of messages.StreamEvent once text, reasoning and the end are read.
_CALL_EVENTS: Final = (ToolCallStart, ToolCallDelta, ToolCallEnd)


def hosted_name(ref: Any) -> str:
    """The ``name`` of the provider a ProviderActor reference hosts (``"provider"`` when it has none): what a
    failure the provider caused is named after (the step's, :mod:`.controller`, and the stream's)."""
    name = getattr(getattr(getattr(ref, "actor", None), "provider", None), "name", None)
    return name if isinstance(name, str) and name else "provider"


def _not_an_event(provider: Any, request: LLMRequest, event: object) -> MalformedResponseError:
    """A provider's stream yielded ``event``, which is no stream event (a ``str``, a vendor SDK's chunk): the run
    fails with the provider named, rather than the item being skipped (text it held would be lost unsaid)."""
    return broken_contract("an item of its stream", event, "a stream event (TextDelta ... StreamEnd)",
                           provider=hosted_name(provider), model=request.model)


def _deliver(
    text: str, sink: EventSink | None, on_text: Callable[[str], None] | None, partial: PartialOutput | None
) -> None:
    """A piece of answer text to whoever listens: the sink, ``on_text``, the partial output.

    (A function, not a closure of the call's: each streaming run would hold one.)
    """
    if sink is not None:
        sink.emit("llm.text_delta", text=text)
    if on_text is not None:
        try:
            on_text(text)
        except Exception:  # a user callback must not break the run
            log.exception("on_token callback raised; the run goes on")
    if partial is not None:
        partial.feed_text(text)
