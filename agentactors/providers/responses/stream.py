"""The OpenAI Responses stream decoder, fed one SSE event at a time.

Each event is named twice (the ``event:`` line and ``data.type``); ``data.type`` is read.  Deltas become
stream events as they come — ``response.output_text.delta`` (and ``response.refusal.delta``) text,
``response.reasoning_summary_text.delta`` reasoning, ``response.output_item.added`` of a
``function_call`` a tool-call start, ``response.function_call_arguments.delta`` its fragments,
``response.output_item.done`` its end (a call with no arguments ends with the terminal event, which alone says
whether it was cut off) — and the answer itself is the ``response`` the terminal event
carries (``response.completed``, or ``response.incomplete`` when cut short), decoded by the same
:func:`~.decode.decode_response` as a JSON body.  ``response.failed`` and an ``error`` event raise the
:class:`~agentactors.ProviderError` their ``ResponseError`` code stands for (:mod:`._codes`); a stream
without a terminal event raises a transient :class:`~agentactors.MalformedResponseError`.  So does a stream
that contradicts itself about its function calls — two at one ``output_index``, arguments after a call's end, a
call streamed to the caller that the terminal response does not hold — since the caller must never have been
shown a call the answer then drops; a call announced twice starts once.  Other events (``response.created``, ``*.done``,
``content_part.*``, vendor-hosted tool progress) carry nothing new.
"""

from __future__ import annotations

import json
from typing import Any

from ...messages import (
    LLMRequest,
    LLMResponse,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ._codes import classify_in_band
from .decode import build_tool_call, decode_response, malformed

__all__ = ["ResponsesStreamDecoder"]

_TERMINAL = frozenset({"response.completed", "response.incomplete"})


class _Call:
    __slots__ = ("ended", "id", "index", "name")

    def __init__(self, index: int, call_id: str, name: str) -> None:
        self.index = index
        self.id = call_id
        self.name = name
        self.ended = False


class ResponsesStreamDecoder:
    """Decodes one Responses stream (see the module docstring)."""

    def __init__(self, *, request: LLMRequest | None, model: str, provider: str) -> None:
        self._request = request
        self._model = model
        self._provider = provider
        self._final: LLMResponse | None = None
        self._calls: dict[Any, _Call] = {}  # output_index (or item id) -> call
        self._reasoning_at: tuple[Any, Any] | None = None  # the summary part reasoning last came from

    @property
    def done(self) -> bool:
        """Whether ``response.completed`` (or ``response.incomplete``) has arrived."""
        return self._final is not None

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        """The stream events of one SSE event (see :class:`~agentactors.providers.codec.StreamDecoder`)."""
        if self._final is not None:
            return []
        text = data.strip()
        if text == "[DONE]":
            return []
        payload = _loads(text)
        if not isinstance(payload, dict):
            raise self._malformed("a stream event is not a JSON object")
        named = payload.get("type")
        kind = named if isinstance(named, str) else event
        if kind == "error" or event == "error":
            raise self._in_band(payload)
        if kind == "response.failed":
            response = payload.get("response")
            error = response.get("error") if isinstance(response, dict) else None
            raise self._in_band({"error": error if error is not None else {"message": "the response failed"}})
        if kind in _TERMINAL:
            return self._terminal(payload.get("response"))
        return self._delta(kind, payload)

    def finish(self) -> LLMResponse:
        """The response of the terminal event; a transient ``MalformedResponseError`` when none arrived."""
        if self._final is None:
            raise self._malformed("the stream ended before response.completed (truncated)")
        return self._final

    # -- internals --------------------------------------------------------------------------------

    def _malformed(self, detail: str) -> Exception:
        return malformed(detail, provider=self._provider, model=self._model)

    def _in_band(self, payload: dict[str, Any]) -> Exception:
        error = payload.get("error")
        if error is None:
            # The ``error`` event: {"type": "error", "code", "message", "param"}.
            error = {k: v for k, v in payload.items() if k not in ("type", "sequence_number")}
        return classify_in_band(error, provider=self._provider, model=self._model)

    def _delta(self, kind: str, payload: dict[str, Any]) -> list[StreamEvent]:
        delta = payload.get("delta")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            return [TextDelta(delta)] if isinstance(delta, str) and delta else []
        if kind == "response.reasoning_summary_text.delta":
            return self._reasoning(payload, delta)
        if kind == "response.output_item.added":
            return self._added(payload)
        if kind == "response.function_call_arguments.delta":
            call = self._calls.get(_where(payload.get("output_index"), payload.get("item_id")))
            if call is None:
                raise self._malformed("arguments arrived for a function call that never started")
            if call.ended:
                raise self._malformed("arguments arrived for a function call that had ended")
            return [ToolCallDelta(call.index, delta)] if isinstance(delta, str) and delta else []
        if kind == "response.output_item.done":
            return self._item_done(payload)
        return []

    def _reasoning(self, payload: dict[str, Any], delta: Any) -> list[StreamEvent]:
        if not isinstance(delta, str) or not delta:
            return []
        where = (payload.get("item_id"), payload.get("summary_index"))
        out: list[StreamEvent] = []
        if self._reasoning_at is not None and where != self._reasoning_at:
            out.append(ReasoningDelta("\n\n"))  # summary parts are joined by a blank line, as decoded whole
        self._reasoning_at = where
        out.append(ReasoningDelta(delta))
        return out

    def _added(self, payload: dict[str, Any]) -> list[StreamEvent]:
        item = payload.get("item")
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return []
        name, call_id = item.get("name"), item.get("call_id")
        if not isinstance(name, str) or not name or not isinstance(call_id, str) or not call_id:
            raise self._malformed("a function_call item without a name or call_id")
        where = _where(payload.get("output_index"), item.get("id"))
        if where is None:
            where = ("call", call_id)  # no index nor item id to find it by: its end comes with the terminal event
        known = self._calls.get(where)
        if known is not None:
            if known.id == call_id:
                return []  # announced twice: one call, started once
            raise self._malformed("two function calls at one output_index")
        call = _Call(len(self._calls), call_id, name)
        self._calls[where] = call
        out: list[StreamEvent] = [ToolCallStart(call.index, call_id, name)]
        arguments = item.get("arguments")
        if isinstance(arguments, str) and arguments:
            out.append(ToolCallDelta(call.index, arguments))
        return out

    def _item_done(self, payload: dict[str, Any]) -> list[StreamEvent]:
        item = payload.get("item")
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return []
        call = self._calls.get(_where(payload.get("output_index"), item.get("id")))
        if call is None or call.ended:
            return []
        arguments, item_id = item.get("arguments"), item.get("id")
        if not isinstance(arguments, str) or not arguments.strip():
            # No arguments: a call with none, or one cut off right after its name, which only the terminal
            # event tells (``response.incomplete``): it ends there, as the answer has it.
            return []
        call.ended = True
        unfinished = item.get("status") in ("incomplete", "in_progress")
        ended = build_tool_call(
            self._request,
            call.id,
            call.name,
            arguments,
            item_id if isinstance(item_id, str) else None,
            cut=unfinished,
            last=unfinished,
        )
        return [ToolCallEnd(call.index, ended)]

    def _terminal(self, response: Any) -> list[StreamEvent]:
        final = decode_response(response, request=self._request, model=self._model, provider=self._provider)
        # Each of the answer's calls is the streamed call of its call_id (in order, should a vendor repeat one).
        streamed: dict[str, list[_Call]] = {}
        for call in self._calls.values():
            streamed.setdefault(call.id, []).append(call)
        matched = [(tool_call, streamed[tool_call.id].pop(0) if streamed.get(tool_call.id) else None)
                   for tool_call in final.tool_calls]
        if any(streamed.values()):
            # The caller was handed a call (started, maybe finished) the answer does not hold: neither can be
            # trusted to be the answer, and taking the final one would drop a call the caller saw.
            raise self._malformed("a function call the stream announced is missing from the final response")
        self._final = final
        # Calls the stream never ended (or never started) end now, as the whole response has them.
        out: list[StreamEvent] = []
        for tool_call, known in matched:
            if known is None:
                call = _Call(len(self._calls), tool_call.id, tool_call.name)
                self._calls[("unstarted", len(self._calls))] = call
                out.append(ToolCallStart(call.index, call.id, call.name))
            else:
                call = known
            if not call.ended:
                call.ended = True
                out.append(ToolCallEnd(call.index, tool_call))
        return out


def _where(index: Any, item_id: Any) -> Any:
    """The key a function call is known by: its ``output_index`` (an integer), else its item id, else ``None``.

    Both come from the vendor: a key of any other type (a list is not even hashable) names no call.
    """
    if isinstance(index, int) and not isinstance(index, bool):
        return index
    return item_id if isinstance(item_id, str) and item_id else None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
