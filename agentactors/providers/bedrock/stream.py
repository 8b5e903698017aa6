"""The ConverseStream decoder: event-stream messages in, stream events and the final response out.

Pure, no I/O: :class:`~agentactors.providers.http.provider.HTTPProvider` feeds it the messages that
:class:`~agentactors.providers.bedrock.eventstream.EventStreamFramer` (botocore's parser) reads from the raw
body, as ``(event type, JSON payload)`` — the same ``feed(event, data)`` the SSE wires use.  The final
response is built by :func:`~agentactors.providers.bedrock.decode.assemble`, as a Converse body is.

The order: ``messageStart`` → per block an optional ``contentBlockStart`` (tool uses only: text and
reasoning blocks start with their first delta) / ``contentBlockDelta`` (``text``, ``toolUse.input`` JSON
fragments, ``reasoningContent.text`` then one ``reasoningContent.signature``, or ``redactedContent``) /
``contentBlockStop`` → ``messageStop`` (``stopReason``) → ``metadata`` (usage).  The stream is complete
when both ``messageStop`` and ``metadata`` arrived.  The answer's blocks are in the order they were streamed
(opened), not sorted by ``contentBlockIndex``: a vendor whose indices do not follow its own order must not make
the answer's text differ from the text the caller was streamed.
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
)
from ..anthropic.decode import tool_call_from_stream
from .decode import assemble, classify_exception_event, parse_usage

__all__ = ["EXCEPTION_PREFIX", "BedrockStreamDecoder"]

#: The event name an exception message is fed under: ``exception:<its :exception-type>``.
EXCEPTION_PREFIX = "exception:"


class _Block:
    """One content block being streamed."""

    __slots__ = ("call", "call_index", "kind", "order", "parts", "redacted", "signature")

    def __init__(
        self, kind: str, order: int, call: tuple[str, str] | None = None, call_index: int | None = None
    ) -> None:
        self.kind = kind
        self.order = order  # blocks opened before it: the answer keeps the order the caller saw them in
        self.call = call
        self.call_index = call_index
        self.parts: list[str] = []
        self.signature: str | None = None
        self.redacted: str | None = None


class BedrockStreamDecoder:
    """Decodes one ConverseStream, fed one event-stream message at a time (see :class:`~.codec.StreamDecoder`).

    An exception message raises the classified :class:`~agentactors.ProviderError` (``throttlingException``
    transient, ``validationException`` a request fault) — never a partial answer; data that breaks the wire's
    rules raises a transient :class:`MalformedResponseError`, as :meth:`finish` does when ``messageStop`` or
    ``metadata`` never came.  Unknown event types are ignored.  One instance per stream.
    """

    def __init__(self, *, request: LLMRequest | None, model: str | None, provider: str) -> None:
        self._request = request
        self._model = model
        self._provider = provider
        self._started = False
        self._stopped = False
        self._metadata = False
        self._stop_reason: Any = None
        self._extra: dict[str, Any] | None = None
        self._usage = Usage()
        self._open: dict[int, _Block] = {}
        # (contentBlockIndex, order opened, block): the answer is assembled in the order the blocks were streamed.
        self._finished: list[tuple[int, int, Mapping[str, Any] | ToolCall]] = []
        self._opened = 0
        self._calls = 0

    @property
    def done(self) -> bool:
        """Whether ``messageStop`` and ``metadata`` have both arrived."""
        return self._stopped and self._metadata

    def _bad(self, why: str) -> MalformedResponseError:
        return MalformedResponseError(why, provider=self._provider, model=self._model)

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        """Decode one message (``event``: its ``:event-type``; ``data``: its JSON payload)."""
        try:
            payload = json.loads(data) if data.strip() else {}
        except (ValueError, RecursionError):
            raise self._bad(f"event-stream payload is not JSON (event {event!r})") from None
        if event.startswith(EXCEPTION_PREFIX):
            raise classify_exception_event(event[len(EXCEPTION_PREFIX):], payload, provider=self._provider,
                                           model=self._model)
        if not isinstance(payload, dict):
            raise self._bad(f"event-stream payload is not a JSON object (event {event!r})")
        if self.done:
            return []
        try:
            return self._dispatch(event, payload)
        except (TypeError, ValueError) as exc:  # a value the data model refuses
            raise self._bad(f"{event}: {exc}") from exc

    def _dispatch(self, event: str, payload: dict[str, Any]) -> list[StreamEvent]:
        if event == "messageStart":
            if self._started:
                raise self._bad("a second messageStart")
            self._started = True
            return []
        if event not in ("contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"):
            return []  # new event types must not break old clients
        if not self._started:
            raise self._bad(f"{event} before messageStart")
        if self._stopped and event != "metadata":
            # messageStop closed every block and the answer with them (only usage may follow): a block
            # opened after it would be streamed to the caller yet never reach the final response.
            return []
        if event == "messageStop":
            closing: list[StreamEvent] = []
            for open_index in sorted(self._open):  # a block left open is closed as it stands
                closing.extend(self._close(open_index))
            self._stopped = True
            self._stop_reason = payload.get("stopReason")
            fields = payload.get("additionalModelResponseFields")
            if isinstance(fields, Mapping):
                self._extra = {"additionalModelResponseFields": dict(fields)}
            return closing
        if event == "metadata":
            self._metadata = True
            self._usage = parse_usage(payload.get("usage"))
            return []
        index = payload.get("contentBlockIndex")
        if not isinstance(index, int) or isinstance(index, bool):
            raise self._bad(f"{event} without an integer contentBlockIndex")
        if event == "contentBlockStart":
            return self._start(index, payload.get("start"))
        if event == "contentBlockDelta":
            return self._delta(index, payload.get("delta"))
        return self._close(index) if index in self._open else []

    def _start(self, index: int, start: Any) -> list[StreamEvent]:
        if index in self._open or any(i == index for i, _, _ in self._finished):
            raise self._bad(f"content block {index} started twice")
        use = start.get("toolUse") if isinstance(start, Mapping) else None
        if not isinstance(use, Mapping):
            return []  # a start that carries nothing we show: the deltas open the block
        call_id, name = use.get("toolUseId"), use.get("name")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
            raise self._bad("toolUse start without a string toolUseId and name")
        self._open[index] = _Block("toolUse", self._order(), (call_id, name), self._calls)
        self._calls += 1
        return [ToolCallStart(self._calls - 1, call_id, name)]

    def _order(self) -> int:
        self._opened += 1
        return self._opened

    def _block(self, index: int, kind: str) -> _Block:
        block = self._open.get(index)
        if block is None:
            block = self._open[index] = _Block(kind, self._order())
        elif block.kind != kind:
            raise self._bad(f"a {kind} delta for a {block.kind} block")
        return block

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        if not isinstance(delta, Mapping):
            raise self._bad("contentBlockDelta without a delta")
        if "text" in delta:
            piece = delta["text"]
            if not isinstance(piece, str):
                raise self._bad("text delta without text")
            self._block(index, "text").parts.append(piece)
            return [TextDelta(piece)] if piece else []
        if "toolUse" in delta:
            use = delta["toolUse"]
            piece = use.get("input") if isinstance(use, Mapping) else None
            block = self._open.get(index)
            if not isinstance(piece, str) or block is None or block.call_index is None:
                raise self._bad("toolUse delta for a block that is not a started tool use")
            block.parts.append(piece)
            return [ToolCallDelta(block.call_index, piece)] if piece else []
        if "reasoningContent" in delta:
            return self._reasoning(index, delta["reasoningContent"])
        return []  # citations and future delta kinds carry nothing we show or replay

    def _reasoning(self, index: int, content: Any) -> list[StreamEvent]:
        if not isinstance(content, Mapping):
            raise self._bad("reasoningContent delta is not an object")
        block = self._block(index, "reasoningContent")
        if isinstance(content.get("text"), str):
            block.parts.append(content["text"])
            return [ReasoningDelta(content["text"])] if content["text"] else []
        if isinstance(content.get("signature"), str):
            block.signature = (block.signature or "") + content["signature"]
        elif isinstance(content.get("redactedContent"), str):
            block.redacted = (block.redacted or "") + content["redactedContent"]
        return []

    def _close(self, index: int) -> list[StreamEvent]:
        block = self._open.pop(index)
        if block.call is not None and block.call_index is not None:
            call = self._finish_call(block.call, "".join(block.parts))
            self._finished.append((index, block.order, call))
            return [ToolCallEnd(block.call_index, call)]
        if block.kind == "text":
            self._finished.append((index, block.order, {"text": "".join(block.parts)}))
        elif block.redacted is not None:
            self._finished.append((index, block.order, {"reasoningContent": {"redactedContent": block.redacted}}))
        else:
            said: dict[str, Any] = {"text": "".join(block.parts)}
            if block.signature is not None:
                said["signature"] = block.signature
            self._finished.append((index, block.order, {"reasoningContent": {"reasoningText": said}}))
        return []

    def _finish_call(self, call: tuple[str, str], raw: str) -> ToolCall:
        call_id, name = call
        return tool_call_from_stream(call_id, name, raw, request=self._request)

    def finish(self) -> LLMResponse:
        """The complete response; a transient :class:`MalformedResponseError` if the stream was cut short."""
        if not self.done:
            missing = "messageStart" if not self._started else "messageStop" if not self._stopped else "metadata"
            raise self._bad(f"the stream ended before {missing} (truncated)")
        # In the order the caller was shown them, not by contentBlockIndex: a vendor whose indices do not follow
        # the stream's order must not make the answer's text differ from the text streamed.
        blocks = [item for _, _, item in sorted(self._finished, key=lambda entry: entry[1])]
        try:
            return assemble(blocks, stop_reason=self._stop_reason, usage=self._usage, model=self._model,
                            provider=self._provider, extra=self._extra)
        except (TypeError, ValueError) as exc:
            raise self._bad(str(exc)) from exc
