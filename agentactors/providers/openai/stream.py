"""The OpenAI Chat Completions stream decoder, fed one SSE event at a time.

Tool calls accumulate **by index**: the first delta of an index carries id, type
and name (``arguments: ""``), later deltas only the index and an arguments
fragment; some servers (Groq) send a whole call in one delta.  Calls end when
``finish_reason`` arrives (or at ``[DONE]`` if it never did).  The stream has
succeeded only when ``[DONE]`` arrives; an in-band error (``{"error": ...}``
data, or an ``event: error``) raises the classified
:class:`~agentactors.ProviderError`.  What is kept for replay (the message's and each call's) is stamped with the
model asked, as :mod:`.decode` stamps it.
"""

from __future__ import annotations

import json
from typing import Any

from ...messages import (
    LLMRequest,
    LLMResponse,
    ReasoningDelta,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from ..errors import classify_error_body
from .decode import (
    WIRE,
    build_tool_call,
    malformed,
    map_finish_reason,
    new_call_id,
    parse_usage,
    raw_arguments,
    reasoning_of,
    stamped,
)

__all__ = ["OpenAIStreamDecoder"]

# Detail fields of an OpenRouter reasoning_details entry that stream in fragments.
_DETAIL_TEXT = ("text", "summary", "data")


class _Call:
    """One tool call being assembled from deltas."""

    __slots__ = ("ended", "extra", "id", "name", "parts", "started")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.parts: list[str] = []
        self.extra: dict[str, Any] = {}
        self.started = False
        self.ended: ToolCall | None = None


class OpenAIStreamDecoder:
    """Decodes one Chat Completions stream (see the module docstring).

    ``feed`` raises the classified :class:`~agentactors.ProviderError` for an
    in-band error and a transient :class:`~agentactors.MalformedResponseError`
    for data this wire does not allow; ``finish`` raises
    ``MalformedResponseError`` when ``[DONE]`` never arrived.
    """

    def __init__(self, *, request: LLMRequest | None, model: str, provider: str) -> None:
        self._request = request
        self._model = model
        self._provider = provider
        self._done = False
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._refused = False
        self._calls: dict[int, _Call] = {}
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._served: str | None = None
        self._response_id: str | None = None
        self._extra: dict[str, Any] = {}
        self._details: dict[Any, dict[str, Any]] = {}
        # (detail key, field) -> the fragments of a detail's text field so far, joined once in finish(): ``+=`` on
        # a dict's value copies the whole text at each fragment (a block streamed in 20,000 was quadratic).
        self._detail_parts: dict[tuple[Any, str], list[str]] = {}
        self._alias: dict[int, int] = {}

    @property
    def done(self) -> bool:
        """Whether ``[DONE]`` has arrived."""
        return self._done

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        """The stream events of one SSE event (see :class:`~agentactors.providers.codec.StreamDecoder`)."""
        if self._done:
            return []  # nothing after [DONE] belongs to this answer
        text = data.strip()
        if event == "error":
            body = _loads(text)
            if not isinstance(body, dict) or body.get("error") is None:
                body = {"error": {"message": text}}
            raise classify_error_body(body, provider=self._provider, model=self._model)
        if text == "[DONE]":
            self._done = True
            return self._end_calls()
        chunk = _loads(text)
        if not isinstance(chunk, dict):
            raise self._malformed("a stream event is not a JSON object")
        if chunk.get("error") is not None:
            raise classify_error_body(chunk, provider=self._provider, model=self._model)
        self._note_chunk(chunk)
        choices = chunk.get("choices")
        if choices is None:
            return []
        if not isinstance(choices, list):
            raise self._malformed("choices is not a list")
        out: list[StreamEvent] = []
        for choice in choices:
            if not isinstance(choice, dict):
                raise self._malformed("a choice is not an object")
            if _choice_index(choice.get("index")) != 0:
                continue  # n > 1: only the first choice is the answer
            out.extend(self._delta(choice.get("delta")))
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                self._finish = finish
                out.extend(self._end_calls())
        return out

    def finish(self) -> LLMResponse:
        """The whole response once ``[DONE]`` arrived; a transient ``MalformedResponseError`` before."""
        if not self._done:
            raise self._malformed("the stream ended before [DONE] (truncated)")
        ended = (self._calls[i].ended for i in sorted(self._calls))
        calls = tuple(c for c in ended if c is not None)
        stop = StopReason.content_filter if self._refused else map_finish_reason(self._finish, has_calls=bool(calls))
        extra = dict(self._extra)
        if self._details:
            for (key, field), parts in self._detail_parts.items():
                self._details[key][field] = "".join(parts)
            extra["reasoning_details"] = list(self._details.values())
        return LLMResponse(
            content="".join(self._text),
            tool_calls=calls,
            stop_reason=stop,
            usage=self._usage or Usage(),
            model=self._served or self._model,
            provider=self._provider,
            raw_stop_reason=self._finish,
            reasoning="".join(self._reasoning),
            provider_data={WIRE: stamped(extra, self._model)} if extra else None,
            response_id=self._response_id,
        )

    # -- internals --------------------------------------------------------------------------------

    def _malformed(self, detail: str) -> Exception:
        return malformed(detail, provider=self._provider, model=self._model)

    def _note_chunk(self, chunk: dict[str, Any]) -> None:
        served, rid = chunk.get("model"), chunk.get("id")
        if isinstance(served, str) and served:
            self._served = served
        if isinstance(rid, str) and rid:
            self._response_id = rid
        x_groq = chunk.get("x_groq")
        groq_usage = x_groq.get("usage") if isinstance(x_groq, dict) else None
        usage = parse_usage(chunk.get("usage")) or parse_usage(groq_usage)
        if usage is not None:
            self._usage = usage  # cumulative on this wire: the last report is the whole answer's

    def _delta(self, delta: Any) -> list[StreamEvent]:
        if delta is None:
            return []
        if not isinstance(delta, dict):
            raise self._malformed("a delta is not an object")
        out: list[StreamEvent] = []
        reasoning = reasoning_of(delta)
        if reasoning:
            self._reasoning.append(reasoning)
            out.append(ReasoningDelta(reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._text.append(content)
            out.append(TextDelta(content))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self._refused = True
            self._text.append(refusal)
            out.append(TextDelta(refusal))
        for key in ("extra_content", "thought_signature"):
            if delta.get(key) is not None:
                self._extra[key] = delta[key]
        details = delta.get("reasoning_details")
        if isinstance(details, list):
            self._merge_details(details)
        calls = delta.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise self._malformed("tool_calls is not a list")
            for item in calls:
                out.extend(self._call_delta(item))
        return out

    def _merge_details(self, details: list[Any]) -> None:
        # OpenRouter streams each reasoning block in fragments keyed by index; replay wants whole blocks.
        for d in details:
            if not isinstance(d, dict):
                continue
            key = d.get("index", len(self._details))
            key = key if isinstance(key, int | str) else len(self._details)
            current = self._details.get(key)
            if current is None:
                self._details[key] = dict(d)
                continue
            for field, value in d.items():
                if field in _DETAIL_TEXT and isinstance(value, str) and isinstance(current.get(field), str):
                    parts = self._detail_parts.get((key, field))
                    if parts is None:
                        parts = self._detail_parts[key, field] = [current[field]]
                    parts.append(value)
                elif value not in (None, ""):
                    current[field] = value
                    self._detail_parts.pop((key, field), None)  # a text that starts again starts from this value

    def _index_for(self, item: dict[str, Any], name: Any) -> int:
        call_id = item.get("id")
        call_id = call_id if isinstance(call_id, str) else ""
        function = item.get("function")
        arguments = function.get("arguments") if isinstance(function, dict) else None
        fragment = isinstance(arguments, str) and arguments != ""
        index = item.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            current = self._calls.get(self._alias.get(index, index))
            if (call_id or name) and current is not None and _another_call(current, call_id, name, fragment):
                # A server that reuses an index for every call: the new call takes the next free slot,
                # and the fragments that follow under that index belong to it.
                self._alias[index] = max(self._calls) + 1
            return self._alias.get(index, index)
        if call_id:
            for i, call in self._calls.items():
                if call.id == call_id:
                    return i
            last = max(self._calls, default=-1)
            current = self._calls.get(last)
            # An unknown id continues the last call unless the delta starts another (see _another_call).
            return last if current is not None and not _another_call(current, call_id, name, fragment) else last + 1
        last = max(self._calls, default=0)
        current = self._calls.get(last)
        return last + 1 if name and current is not None and _another_call(current, call_id, name, fragment) else last

    def _call_delta(self, item: Any) -> list[StreamEvent]:
        if not isinstance(item, dict):
            raise self._malformed("a tool call delta is not an object")
        function = item.get("function")
        if function is None:
            function = {}
        if not isinstance(function, dict):
            raise self._malformed("a tool call's function is not an object")
        name = function.get("name")
        index = self._index_for(item, name)
        call = self._calls.setdefault(index, _Call())
        if call.ended is not None:
            raise self._malformed(f"arguments for tool call {index} arrived after it ended")
        call_id = item.get("id")
        if isinstance(call_id, str) and call_id and not call.id:
            call.id = call_id
        if isinstance(name, str) and name and not call.name:
            call.name = name
        if item.get("extra_content") is not None:
            call.extra["extra_content"] = item["extra_content"]
        fragment = raw_arguments(function.get("arguments"))
        out: list[StreamEvent] = []
        if not call.started and call.name:
            out.extend(self._start(index, call))
        if fragment:
            call.parts.append(fragment)
            if call.started:
                out.append(ToolCallDelta(index, fragment))
        return out

    def _start(self, index: int, call: _Call) -> list[StreamEvent]:
        call.started = True
        call.id = call.id or new_call_id()  # Gemini's compat endpoint sends id ""
        # Fragments that came before the name are delivered now, in order.
        return [ToolCallStart(index, call.id, call.name), *(ToolCallDelta(index, p) for p in call.parts)]

    def _end_calls(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        final = max(self._calls, default=-1)
        for index in sorted(self._calls):
            call = self._calls[index]
            if call.ended is not None:
                continue
            if not call.name:
                raise self._malformed(f"tool call {index} never got a name")
            if not call.started:
                out.extend(self._start(index, call))
            call.ended = build_tool_call(
                self._request, call.id, call.name, "".join(call.parts), self._finish,
                stamped(dict(call.extra), self._model) if call.extra else None,
                last=index == final,
            )
            out.append(ToolCallEnd(index, call.ended))
        return out


def _another_call(current: _Call, call_id: str, name: Any, fragment: bool = False) -> bool:
    """Whether a delta for ``current``'s slot, carrying ``call_id`` and ``name``, starts another call.

    Only a name does: when the slot's call has one already and it is another name, or the call's arguments are
    already a whole object.  A server names a call once (OpenAI) or resends the name with every fragment of it
    (MiniMax behind NVIDIA NIM; vLLM's harmony parser, with a new id each time), so the same name before the
    arguments are whole is the same call.  Ids say nothing here: some servers send a fresh id with every
    fragment of one call (LM Studio, Poolside, mlx-openai-server: the first is the call's), others ``""`` for
    every call (Gemini's compat endpoint, each call whole under one index or none); a call never has a fragment
    without its name but for the server that names it in a later fragment (the call keeps its first id).  The
    common fragment carries neither id nor name: the caller asks only when one is there.

    But for one case of the same name: a call with no arguments at all yet (``""``), followed by a delta under
    another non-empty id that brings none either (``fragment`` false) — two parallel calls of a tool without
    parameters, each whole (``"arguments": ""``); a server sending a fresh id per fragment sends arguments in them.
    """
    if not name or not isinstance(name, str) or not current.name:
        return False
    if name != current.name:
        return True
    parts = current.parts
    if call_id and current.id and call_id != current.id and not parts and not fragment:
        return True
    if not parts or not parts[-1].rstrip().endswith("}"):
        return False
    return isinstance(_loads("".join(parts)), dict)


def _choice_index(value: Any) -> int:
    """A choice's ``index``, read as ``0`` when it is not an integer (absent, ``null``, ``"0"``).

    Only an integer index names another of ``n`` choices; anything else is a server's sloppy rendering of
    the one choice, and skipping it would end the stream as an empty answer — the whole-body decoder reads
    ``choices[0]`` whatever its index says.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
