"""Reading the OpenAI Responses wire: response bodies, output items, usage, statuses, errors.

Pure functions, no I/O.  A whole body and a stream end the same way: the stream decoder
(:mod:`.stream`) hands the ``response`` object of its terminal event to :func:`decode_response`, so a
streamed answer and a JSON one are assembled by this one module.

The output is a list of items: ``reasoning`` (``summary`` parts, ``encrypted_content``), ``message``
(``output_text`` / ``refusal`` parts; newer models mark ``phase``), ``function_call`` (``call_id`` is what
the result refers to, ``id`` the item's own ``fc_...`` id).  What the next request must replay —
reasoning items verbatim, each message item's id and phase, the order of the items — is kept in the
response's opaque ``provider_data[WIRE]["items"]``, with ``provider_data[WIRE]["model"]`` beside them: the model the
request was sent to (the ``model`` given, not the body's snapshot name), as a reasoning item's ``encrypted_content``
is readable by that model only and the encoder leaves another model's out; each call's item id in its own
``provider_data``.

Vendor data is untrusted: readers are total, a body this wire does not allow raises a transient
:class:`~agentactors.MalformedResponseError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from ..._json import bound_problem
from ...errors import ProviderError
from ...messages import LLMRequest, LLMResponse, StopReason, ToolCall, Usage
from ..errors import classify_http_error
from ..openai.decode import dict_or_empty, malformed, token_count, tool_required
from ._codes import classify_in_band, refine
from .models import WIRE

__all__ = [
    "WIRE",
    "build_tool_call",
    "classify_error",
    "refine_by_code",
    "decode_response",
    "malformed",
    "parse_usage",
    "stop_reason",
]

# incomplete_details.reason → StopReason (the documented reasons).
_INCOMPLETE = {"max_output_tokens": StopReason.max_tokens, "content_filter": StopReason.content_filter}
# An output item's own status when generation stopped inside it.
_UNFINISHED = frozenset({"incomplete", "in_progress"})


def _unfinished(item: dict[str, Any]) -> bool:
    """Whether an output item's own ``status`` says generation stopped inside it (any other value, a list
    included, says nothing)."""
    status = item.get("status")
    return isinstance(status, str) and status in _UNFINISHED


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def parse_usage(usage: Any) -> Usage | None:
    """Responses usage: ``input_tokens`` (cached tokens included), ``output_tokens`` (reasoning included),
    ``input_tokens_details.cached_tokens`` → ``cache_read_tokens``, ``output_tokens_details.reasoning_tokens``."""
    if not isinstance(usage, dict):
        return None
    return Usage(
        input_tokens=token_count(usage.get("input_tokens")),
        output_tokens=token_count(usage.get("output_tokens")),
        cache_read_tokens=token_count(dict_or_empty(usage.get("input_tokens_details")).get("cached_tokens")),
        reasoning_tokens=token_count(dict_or_empty(usage.get("output_tokens_details")).get("reasoning_tokens")),
    )


def build_tool_call(
    request: LLMRequest | None,
    call_id: str,
    name: str,
    raw: str | None,
    item_id: str | None,
    *,
    cut: bool,
    last: bool = False,
) -> ToolCall:
    """A :class:`ToolCall` from raw argument text (the item id kept for replay), marked when it does not parse.

    ``cut``: the response is ``incomplete``; ``last``: the cut fell on this call (the output's last item, or an
    item whose own ``status`` is not ``completed``).  No arguments at all there were cut off right after the
    name (a finished call with none says ``"{}"``), so they are marked even for a tool that requires nothing —
    never run with its defaults — as the Chat wire marks a call cut by ``finish_reason: "length"``.
    """
    call = ToolCall.from_raw(
        call_id,
        name,
        raw,
        required=tool_required(request, name),
        provider_data={WIRE: {"id": item_id}} if item_id else None,
    )
    if call.arguments_error is None:
        if not (cut and last) or (raw is not None and raw.strip()):
            return call
        call = attrs.evolve(call, arguments_error="unparseable")
    if (bound := bound_problem(raw)) is not None:
        detail = bound
    elif cut:
        detail = "the arguments were cut off at max_output_tokens (status 'incomplete'); ask for less or split the call"
    elif call.arguments_error == "empty":
        detail = "the arguments were empty but the tool requires some"
    else:
        detail = "the arguments are not a complete JSON object"
    return attrs.evolve(call, arguments_error_detail=detail)


def stop_reason(body: Mapping[str, Any], *, has_calls: bool, refused: bool) -> tuple[StopReason, str | None]:
    """``(StopReason, raw)`` from a response's ``status`` and ``incomplete_details``."""
    status = _str(body.get("status")) or None
    if status == "incomplete":
        reason = _str(dict_or_empty(body.get("incomplete_details")).get("reason")) or None
        return _INCOMPLETE.get(reason or "", StopReason.other), reason or status
    if refused:
        return StopReason.content_filter, status
    return (StopReason.tool_use if has_calls else StopReason.end_turn), status


# --- decoding a response body ------------------------------------------------------------------


@attrs.define
class _Output:
    """What the output items add up to."""

    text: list[str] = attrs.Factory(list)
    reasoning: list[str] = attrs.Factory(list)
    calls: list[ToolCall] = attrs.Factory(list)
    items: list[dict[str, Any]] = attrs.Factory(list)  # the replay skeleton, in order
    refused: bool = False


def _message_text(item: Mapping[str, Any], out: _Output) -> str:
    pieces: list[str] = []
    content = item.get("content")
    for part in content if isinstance(content, list) else ():
        part = dict_or_empty(part)
        kind = part.get("type")
        if kind == "output_text":
            pieces.append(_str(part.get("text")))
        elif kind == "refusal":
            # A refusal is the model's answer to show; it is a content-filter stop.
            out.refused = True
            pieces.append(_str(part.get("refusal")))
    return "".join(pieces)


def _read_items(
    output: list[Any], request: LLMRequest | None, *, cut: bool, provider: str, model: str
) -> _Output:
    out = _Output()
    final = len(output) - 1
    for i, raw in enumerate(output):
        if not isinstance(raw, dict):
            raise malformed("an output item is not an object", provider=provider, model=model)
        kind = raw.get("type")
        if kind == "reasoning":
            summary = raw.get("summary")
            for part in summary if isinstance(summary, list) else ():
                text = _str(dict_or_empty(part).get("text"))
                if text:
                    out.reasoning.append(text)
            if isinstance(raw.get("encrypted_content"), str):
                # Replayed untouched.  Without its encrypted content a stateless request cannot refer to it
                # (store=False keeps nothing server-side), so such an item is not kept.
                out.items.append(dict(raw))
        elif kind == "message":
            text = _message_text(raw, out)
            out.text.append(text)
            skeleton: dict[str, Any] = {"type": "message", "text": text}
            for key in ("id", "phase"):
                if isinstance(raw.get(key), str):
                    skeleton[key] = raw[key]
            out.items.append(skeleton)
        elif kind == "function_call":
            name, call_id = raw.get("name"), raw.get("call_id")
            if not isinstance(name, str) or not name or not isinstance(call_id, str) or not call_id:
                raise malformed("a function_call item without a name or call_id", provider=provider, model=model)
            arguments = raw.get("arguments")
            item_id = raw.get("id")
            unfinished = _unfinished(raw)
            out.calls.append(
                build_tool_call(
                    request,
                    call_id,
                    name,
                    arguments if isinstance(arguments, str) else None,
                    item_id if isinstance(item_id, str) else None,
                    cut=cut or unfinished,
                    last=i == final or unfinished,
                )
            )
            out.items.append({"type": "function_call", "call_id": call_id})
        # Other item types (vendor-hosted tools: web_search_call, ...) are not requested by this codec.
    return out


def _replayed(items: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The replay skeleton worth keeping: ``None`` when the items say nothing the message does not.

    Message item ids are kept only beside reasoning (the item a reasoning item produced must follow it, as
    recorded); ``phase`` always (newer models tell commentary from the final answer by it).
    """
    reasons = any(i["type"] == "reasoning" for i in items)
    if not reasons and not any("phase" in i for i in items):
        return None
    if not reasons:
        items = [{k: v for k, v in i.items() if k != "id"} for i in items]
    return items


def _stamped(items: list[dict[str, Any]], model: str) -> dict[str, Any]:
    """The replay skeleton with the model asked (nothing stamped for a nameless request): see encode._skeleton."""
    return {"items": items, "model": model} if model else {"items": items}


def decode_response(body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
    """An :class:`LLMResponse` from a Responses body (parsed JSON), or the ``response`` of a stream's last event.

    A ``failed`` response (or one with an ``error``) raises the :class:`~agentactors.ProviderError` its
    ``ResponseError`` code stands for (:mod:`._codes`: a flagged prompt is not retried); ``incomplete`` for
    ``max_output_tokens`` is a :attr:`~agentactors.StopReason.max_tokens` answer.
    """
    if not isinstance(body, dict):
        raise malformed(f"expected a JSON object, got {type(body).__name__}", provider=provider, model=model)
    if body.get("error") is not None or body.get("status") == "failed":
        error = body.get("error")
        raise classify_in_band(error if error is not None else {"message": "the response failed"},
                               provider=provider, model=model)
    status = body.get("status")
    if status in ("in_progress", "queued"):
        raise malformed(f"the response is still {status} (background responses are not used)", provider=provider,
                        model=model)
    output = body.get("output")
    if not isinstance(output, list):
        raise malformed("no output in the response", provider=provider, model=model)
    cut = status == "incomplete"
    out = _read_items(output, request, cut=cut, provider=provider, model=model)
    stop, raw_stop = stop_reason(body, has_calls=bool(out.calls), refused=out.refused)
    served, response_id = body.get("model"), body.get("id")
    items = _replayed(out.items)
    return LLMResponse(
        content="".join(out.text),
        tool_calls=tuple(out.calls),
        stop_reason=stop,
        usage=parse_usage(body.get("usage")) or Usage(),
        model=served if isinstance(served, str) and served else model,
        provider=provider,
        raw_stop_reason=raw_stop,
        reasoning="\n\n".join(out.reasoning),
        provider_data={WIRE: _stamped(items, model)} if items else None,
        response_id=response_id if isinstance(response_id, str) and response_id else None,
    )


def classify_error(
    status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
) -> ProviderError:
    """Classify a non-2xx answer: ``{"error": {"message", "type", "param", "code"}}`` like Chat Completions.

    A flagged prompt or image (``invalid_prompt``, ``image_content_policy_violation``) is a content-policy
    error, as the same code in a 200 is (:mod:`._codes`).
    """
    try:
        parsed: Any = json.loads(body)
    except (ValueError, RecursionError):
        parsed = body
    return refine_by_code(classify_http_error(status, headers, parsed, provider=provider, model=model), parsed)


def refine_by_code(err: ProviderError, parsed: Any) -> ProviderError:
    """``err``, classified from the parsed body ``parsed``, as a content-policy error when the body's
    ``error.code`` is a flagged prompt or image (:mod:`._codes`).  A wire that speaks Responses with its own
    error classifier (Azure's) refines that classifier's verdict with this."""
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return refine(err, error)
