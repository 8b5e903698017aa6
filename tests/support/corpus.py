"""Reading the recorded vendor interactions (``tests/corpus``) and replaying their answers over httpx.

Every wire's conformance suite reads the same files the same way: one JSON object per interaction, its
``request`` (``body``, ``path``, ...) and its ``response`` (``status``, ``headers`` and either the ``json``
body or the raw ``sse`` text).  The helpers live here so a change to the recording format is made once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from agentactors.errors import ProviderError
from agentactors.messages import (
    LLMRequest,
    LLMResponse,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from agentactors.providers.codec import StreamDecoder
from agentactors.providers.http.provider import iter_sse
from agentactors.providers.port import LLMProvider
from tests.support.paths import CORPUS

__all__ = ["CORPUS", "check_stream_events", "decode_sse", "load", "outcome", "replay_transport"]


def load(corpus_dir: Path, name: str) -> dict[str, Any]:
    """The recorded interaction in ``corpus_dir / name`` (the file name, ``.json`` included)."""
    data: dict[str, Any] = json.loads((corpus_dir / name).read_text(encoding="utf-8"))
    return data


def replay_transport(data: dict[str, Any], sent: list[httpx.Request]) -> httpx.MockTransport:
    """A transport answering every request with ``data``'s recorded response; each request lands in ``sent``.

    The body is the recorded SSE text when the interaction streamed, the recorded JSON otherwise, sent with
    the recorded status and headers, so the provider under test meets the vendor's bytes.
    """
    recorded = data["response"]

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        text = recorded["sse"] if "sse" in recorded else json.dumps(recorded["json"])
        return httpx.Response(recorded["status"], headers=recorded["headers"], content=text.encode("utf-8"))

    return httpx.MockTransport(handler)


def decode_sse(decoder: StreamDecoder, sse: str) -> tuple[list[StreamEvent], LLMResponse]:
    """``decoder`` fed the recorded ``sse`` text event by event: the events it gave, and its final answer.

    The recording is whole, so the decoder must have seen its wire's terminal event.
    """
    events: list[StreamEvent] = []
    for event, data in iter_sse(sse):
        events.extend(decoder.feed(event, data))
    assert decoder.done
    return events, decoder.finish()


async def outcome(
    provider: LLMProvider, request: LLMRequest, *, stream: bool
) -> tuple[list[StreamEvent], LLMResponse | None, ProviderError | None]:
    """What ``provider`` made of ``request``: the events it streamed (up to any error), its answer, its error.

    ``stream`` picks :meth:`stream` over :meth:`complete`; the answer is ``None`` when streaming (it is the
    last event's) or when the provider raised.
    """
    events: list[StreamEvent] = []
    try:
        if stream:
            async with provider.stream(request) as answer:
                async for event in answer:
                    events.append(event)
            return events, None, None
        return events, await provider.complete(request), None
    except ProviderError as exc:
        return events, None, exc


def check_stream_events(events: list[StreamEvent], resp: LLMResponse) -> None:
    """The stream events (the final ``StreamEnd`` left out) say what ``resp`` says, in a well-formed order.

    The text and reasoning deltas join into the answer's; the tool calls start in order with their ids and
    names and end as the answer's calls; every argument fragment of a call lies between its start and end.
    """
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == resp.content
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == resp.reasoning
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [(s.index, s.id, s.name) for s in starts] == [(i, c.id, c.name) for i, c in enumerate(resp.tool_calls)]
    assert [e.call for e in ends] == list(resp.tool_calls)
    for s, e in zip(starts, ends, strict=True):
        first, last = events.index(s), events.index(e)
        inside = [k for k, ev in enumerate(events) if isinstance(ev, ToolCallDelta) and ev.index == s.index]
        assert all(first < k < last for k in inside)
