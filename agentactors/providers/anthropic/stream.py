"""The Anthropic Messages stream decoder: SSE events in, stream events and the final response out.

Pure, no I/O: :class:`~agentactors.providers.http.provider.HTTPProvider` feeds it the events that
``httpx-sse`` decodes.  The final response is built by the same
:func:`~agentactors.providers.anthropic.decode.assemble` as a JSON body, so a streamed
answer and a non-streamed one decode alike (the blocks kept for replay stamped with the model asked).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...errors import MalformedResponseError
from ...messages import (
    LLMRequest,
    LLMResponse,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    parse_arguments,
)
from .decode import assemble, classify_error_body, merge_usage, parse_usage, tool_call_from_stream

__all__ = ["AnthropicStreamDecoder"]

_CONTENT_EVENTS = frozenset(
    {"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
)


class _Block:
    """One content block being streamed."""

    __slots__ = ("call_index", "parts", "signature", "start")

    def __init__(self, start: dict[str, Any], call_index: int | None) -> None:
        self.start = start
        self.call_index = call_index
        self.parts: list[str] = []
        self.signature: str | None = None


class AnthropicStreamDecoder:
    """Decodes one Messages SSE stream, fed one event at a time (see :class:`~.codec.StreamDecoder`).

    ``message_start`` → per block ``content_block_start`` / ``content_block_delta`` /
    ``content_block_stop`` → ``message_delta`` → ``message_stop`` (terminal).  ``ping`` and
    unknown event types are ignored, anywhere.  ``error`` raises the classified
    :class:`ProviderError` (``overloaded_error`` is transient) — never a partial answer.
    Data that breaks the wire's rules raises a transient :class:`MalformedResponseError`;
    :meth:`finish` raises one too when ``message_stop`` never came.
    Not thread-safe; one instance per stream.
    """

    def __init__(self, *, request: LLMRequest | None, model: str | None, provider: str) -> None:
        self._request = request
        self._model = model
        self._provider = provider
        self._started = False
        self._done = False
        self._message_id: Any = None
        self._model_seen: Any = None
        self._stop_reason: Any = None
        self._stop_sequence: Any = None
        self._usage = Usage()
        self._open: dict[int, _Block] = {}
        self._finished: list[tuple[int, Mapping[str, Any] | ToolCall]] = []
        self._seen_indices: set[int] = set()
        self._calls = 0

    @property
    def done(self) -> bool:
        """Whether ``message_stop`` has arrived."""
        return self._done

    def _bad(self, why: str) -> MalformedResponseError:
        return MalformedResponseError(why, provider=self._provider, model=self._model)

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        """Decode one SSE event; returns the stream events it produces (see the class docstring)."""
        if self._done or not data.strip():
            return []  # after message_stop nothing can change the answer; empty data is a keep-alive
        try:
            payload = json.loads(data)
        except (ValueError, RecursionError):
            raise self._bad(f"SSE data is not JSON (event {event!r})") from None
        if not isinstance(payload, dict):
            raise self._bad(f"SSE data is not a JSON object (event {event!r})")
        kind = payload.get("type")
        if not isinstance(kind, str):
            kind = event
        if kind == "error" or event == "error":
            raise classify_error_body(payload, provider=self._provider, model=self._model)
        try:
            return self._dispatch(kind, payload)
        except (TypeError, ValueError) as exc:  # a value the data model refuses
            raise self._bad(f"{kind}: {exc}") from exc

    def _dispatch(self, kind: str, payload: dict[str, Any]) -> list[StreamEvent]:
        if kind == "ping":
            return []
        if kind == "message_start":
            return self._message_start(payload)
        if kind not in _CONTENT_EVENTS:
            return []  # new event types must not break old clients
        if not self._started:
            raise self._bad(f"{kind} before message_start")
        if kind == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, Mapping):
                if "stop_reason" in delta:
                    self._stop_reason = delta["stop_reason"]
                if "stop_sequence" in delta:
                    self._stop_sequence = delta["stop_sequence"]
            self._usage = merge_usage(self._usage, payload.get("usage"))
            return []
        if kind == "message_stop":
            closing: list[StreamEvent] = []
            for open_index in sorted(self._open):  # a block left open is closed as it stands
                closing.extend(self._close(open_index))
            self._done = True
            return closing
        index = payload.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise self._bad(f"{kind} without an integer index")
        if kind == "content_block_start":
            return self._block_start(index, payload.get("content_block"))
        if index not in self._open:
            raise self._bad(f"{kind} for block {index}, which is not open")
        if kind == "content_block_delta":
            return self._block_delta(self._open[index], payload.get("delta"))
        return self._close(index)

    def _message_start(self, payload: dict[str, Any]) -> list[StreamEvent]:
        message = payload.get("message")
        if self._started or not isinstance(message, Mapping):
            raise self._bad("a second message_start" if self._started else "message_start without a message")
        self._started = True
        self._message_id = message.get("id")
        self._model_seen = message.get("model")
        self._stop_reason = message.get("stop_reason")
        self._stop_sequence = message.get("stop_sequence")
        self._usage = parse_usage(message.get("usage"))
        return []

    def _block_start(self, index: int, block: Any) -> list[StreamEvent]:
        if index in self._seen_indices:
            raise self._bad(f"content block {index} started twice")
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise self._bad(f"content block {index} without a type")
        self._seen_indices.add(index)
        start = dict(block)
        kind = start["type"]
        out: list[StreamEvent] = []
        if kind == "tool_use":
            call_id, name = start.get("id"), start.get("name")
            if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
                raise self._bad("tool_use block without a string id and name")
            self._open[index] = _Block(start, self._calls)
            out.append(ToolCallStart(self._calls, call_id, name))
            self._calls += 1
            return out
        blk = _Block(start, None)
        self._open[index] = blk
        if kind == "text":
            initial = start.get("text", "")
            if not isinstance(initial, str):
                raise self._bad("text block without text")
            if initial:
                blk.parts.append(initial)
                out.append(TextDelta(initial))
        elif kind == "thinking":
            initial = start.get("thinking", "")
            if not isinstance(initial, str):
                raise self._bad("thinking block without text")
            if initial:
                blk.parts.append(initial)
                out.append(ReasoningDelta(initial))
        return out

    def _block_delta(self, blk: _Block, delta: Any) -> list[StreamEvent]:
        if not isinstance(delta, Mapping):
            raise self._bad("content_block_delta without a delta")
        dtype, kind = delta.get("type"), blk.start["type"]
        if dtype == "text_delta":
            piece = delta.get("text")
            if kind != "text" or not isinstance(piece, str):
                raise self._bad(f"text_delta for a {kind} block")
            blk.parts.append(piece)
            return [TextDelta(piece)] if piece else []
        if dtype == "thinking_delta":
            piece = delta.get("thinking")
            if kind != "thinking" or not isinstance(piece, str):
                raise self._bad(f"thinking_delta for a {kind} block")
            blk.parts.append(piece)
            return [ReasoningDelta(piece)] if piece else []
        if dtype == "signature_delta":
            sig = delta.get("signature")
            if kind != "thinking" or not isinstance(sig, str):
                raise self._bad(f"signature_delta for a {kind} block")
            blk.signature = (blk.signature or "") + sig
            return []
        if dtype == "input_json_delta":
            piece = delta.get("partial_json")
            if not isinstance(piece, str) or kind in ("text", "thinking", "redacted_thinking"):
                raise self._bad(f"input_json_delta for a {kind} block")
            blk.parts.append(piece)  # the first fragment is often "": nothing to announce
            if blk.call_index is not None and piece:
                return [ToolCallDelta(blk.call_index, piece)]
            return []
        return []  # citations_delta and future delta types carry nothing we replay or show

    def _close(self, index: int) -> list[StreamEvent]:
        blk = self._open.pop(index)
        kind = blk.start["type"]
        if blk.call_index is not None:
            call = self._finish_call(blk)
            self._finished.append((index, call))
            return [ToolCallEnd(blk.call_index, call)]
        block = dict(blk.start)
        if kind == "text":
            block["text"] = "".join(blk.parts)
        elif kind == "thinking":
            block["thinking"] = "".join(blk.parts)
            if blk.signature is not None:
                block["signature"] = blk.signature
        elif blk.parts:
            # A server-side call (server_tool_use, mcp_tool_use, ...): keep its input for replay.
            args, error = parse_arguments("".join(blk.parts))
            if error is None and "".join(blk.parts).strip():
                block["input"] = args
        self._finished.append((index, block))
        return []

    def _finish_call(self, blk: _Block) -> ToolCall:
        call_id, name = str(blk.start["id"]), str(blk.start["name"])
        raw = "".join(blk.parts)
        start_input = blk.start.get("input", {})
        if not raw.strip() and isinstance(start_input, Mapping) and start_input:
            return ToolCall(id=call_id, name=name, arguments=dict(start_input))
        return tool_call_from_stream(call_id, name, raw, request=self._request)

    def finish(self) -> LLMResponse:
        """The complete response; a transient :class:`MalformedResponseError` if ``message_stop`` never came."""
        if not self._done:
            where = "before message_start" if not self._started else "before message_stop"
            raise self._bad(f"the stream ended {where} (truncated)")
        items = [item for _, item in sorted(self._finished, key=lambda pair: pair[0])]
        try:
            return assemble(
                items,
                message_id=self._message_id,
                model_seen=self._model_seen,
                stop_reason=self._stop_reason,
                stop_sequence=self._stop_sequence,
                usage=self._usage,
                model=self._model,
                provider=self._provider,
            )
        except (TypeError, ValueError) as exc:
            raise self._bad(str(exc)) from exc
