"""Reading the Gemini ``generateContent`` wire: candidates, parts, function calls, usage, finish reasons, errors.

Pure, no I/O.  A whole body (:func:`decode_response`) and a stream's chunks
(:mod:`.stream`) are read by the same :class:`CandidateAssembly`, so a streamed answer and
a whole one decode alike.

* ``text`` parts → ``LLMResponse.content``; ``thought: true`` parts → ``reasoning``;
* ``functionCall`` parts → :class:`ToolCall`\\ s; Gemini rarely sends call ids, so a call without one
  (or with an id already used in the conversation) gets a random id, and the vendor's id, if any,
  is kept in ``provider_data["gemini"]["id"]`` to be echoed back;
* a part's ``thoughtSignature`` → ``provider_data["gemini"]["thought_signature"]`` (on the call,
  or on the message for the first signed text part), replayed by the encoder, with
  ``provider_data["gemini"]["model"]`` beside it: the model the request was sent to (not the answer's
  ``modelVersion``), as a signature is valid for that model only;
* ``usageMetadata`` is cumulative across chunks; output tokens include thinking tokens; the ``AUDIO``
  entries of its ``*TokensDetails`` are the usage's audio counts, the ``IMAGE`` and ``DOCUMENT`` ones (a PDF
  page is an image to Gemini) its image counts (each billed at its own rates);
* ``promptFeedback.blockReason`` is a content-policy :class:`~agentactors.ProviderError`; an error
  body is classified by :func:`classify_error`'s rules.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from ..._json import value_problem
from ...errors import ErrorKind, MalformedResponseError, ProviderError
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
from ..errors import classify_error_body, classify_http_error
from .models import WIRE

__all__ = ["WIRE", "CandidateAssembly", "classify_error", "decode_response"]

# usageMetadata's per-modality breakdowns: their AUDIO entries are Usage's audio counts, their IMAGE and DOCUMENT
# ones its image counts (a document's pages are images to Gemini, billed as image tokens: genai-prices' own reading
# counts them so), read as ints.
_MODALITY_DETAILS = frozenset(
    {"promptTokensDetails", "toolUsePromptTokensDetails", "cacheTokensDetails", "candidatesTokensDetails"}
)
_FINISH: Mapping[str, StopReason] = {
    "STOP": StopReason.end_turn,
    "MAX_TOKENS": StopReason.max_tokens,
    "SAFETY": StopReason.content_filter,
    "RECITATION": StopReason.content_filter,
    "PROHIBITED_CONTENT": StopReason.content_filter,
    "BLOCKLIST": StopReason.content_filter,
    "SPII": StopReason.content_filter,
    "IMAGE_SAFETY": StopReason.content_filter,
    "IMAGE_PROHIBITED_CONTENT": StopReason.content_filter,
    "IMAGE_RECITATION": StopReason.content_filter,
}
_INVALID_KEY_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_EXPIRED", "API_KEY_SERVICE_BLOCKED"})


# The shared classifier walks error details it does not type-check; a body it chokes on is
# classified again from its scalar fields (code, message, status) rather than escaping as a TypeError.
_CLASSIFIER_FAILURES = (TypeError, AttributeError, KeyError, ValueError)


def _scalars_only(body: Any) -> dict[str, Any]:
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return {"error": err} if isinstance(err, str) else {}
    return {"error": {k: v for k, v in err.items() if k in ("code", "message", "status") and isinstance(v, int | str)}}


def _refined(err: ProviderError, body: Any, raw: bytes | None) -> ProviderError:
    """``err`` with its kind corrected by what Gemini's structured error says (see :func:`_gemini_kind`)."""
    kind = _gemini_kind(body, err.status or 0)
    if kind is None or kind is err.kind:
        return err
    return ProviderError(
        err.message,
        provider=err.provider,
        model=err.model,
        kind=kind,
        status=err.status,
        retry_after=err.retry_after,
        request_id=err.request_id,
        body_excerpt=raw if raw is not None else json.dumps(body, ensure_ascii=False),
    )


def _gemini_kind(body: Any, status: int) -> ErrorKind | None:
    """What Gemini's structured error says beyond the generic classifier, or None."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return None
    raw_message = err.get("message")
    message = raw_message if isinstance(raw_message, str) else ""
    raw_details = err.get("details")
    details = [d for d in raw_details if isinstance(d, dict)] if isinstance(raw_details, list) else []
    if any(d.get("reason") in _INVALID_KEY_REASONS for d in details) or "api key not valid" in message.lower():
        # A bad key arrives as 400 INVALID_ARGUMENT: asking again, anywhere, will not help.
        return ErrorKind.account
    if status == 429 or err.get("status") == "RESOURCE_EXHAUSTED":
        # Gemini's per-minute message reads "You exceeded your current quota ..." just like a
        # billing failure elsewhere; the QuotaFailure violations are what tell the two apart.
        quota_ids: list[str] = []
        for d in details:
            violations = d.get("violations")
            for v in violations if isinstance(violations, list) else ():
                if isinstance(v, dict):
                    quota_ids.append(f"{v.get('quotaId', '')} {v.get('quotaMetric', '')}".lower())
        if any("perday" in q.replace("_", "").replace("-", "") for q in quota_ids) or "limit: 0" in message:
            return ErrorKind.account  # a daily cap, or a model this tier may not use at all
        return ErrorKind.transient
    return None


def classify_error(
    status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
) -> ProviderError:
    """A non-2xx Gemini answer → the classified error, refined by what Gemini's structured error says.

    ``x-should-retry`` still wins; otherwise an invalid key (a 400 ``INVALID_ARGUMENT`` on this
    wire) is an account error, and a 429 ``RESOURCE_EXHAUSTED`` is transient unless its
    ``QuotaFailure`` violations name a per-day quota (or a limit of 0): then it is the account's.
    """
    try:
        parsed: Any = json.loads(body)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, list) and parsed and isinstance(parsed[0], dict):
        parsed = parsed[0]  # streamGenerateContent without alt=sse wraps errors in an array
    try:
        err = classify_http_error(
            status, headers, parsed if isinstance(parsed, dict) else body, provider=provider, model=model
        )
    except _CLASSIFIER_FAILURES:
        err = classify_http_error(status, headers, _scalars_only(parsed), provider=provider, model=model)
    if any(name.lower() == "x-should-retry" for name in headers):
        return err  # the vendor's explicit header already decided
    return _refined(err, parsed, body)


# -- decoding ------------------------------------------------------------------------------------


class CandidateAssembly:
    """One candidate assembled from a whole response or from stream chunks (usage is cumulative).

    The one decoder of this wire: :func:`decode_response` adds a whole body, the stream decoder
    adds chunk after chunk, and both end in :meth:`response`, so a response decodes alike
    whichever way it arrived.
    """

    __slots__ = (
        "_asked",
        "_provider",
        "_used_ids",
        "calls",
        "finish",
        "image_usage",
        "model",
        "reasoning",
        "response_id",
        "saw_candidate",
        "signature",
        "text",
        "usage",
    )

    def __init__(self, request: LLMRequest | None, *, model: str, provider: str) -> None:
        self.model = model
        self._asked = model  # what the encoder will be given (``model`` turns into the answer's modelVersion)
        self._provider = provider
        self._used_ids: set[str] = set()
        if request is not None:
            for m in request.messages:
                self._used_ids.update(c.id for c in m.tool_calls)
                if m.tool_call_id:
                    self._used_ids.add(m.tool_call_id)
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[ToolCall] = []
        self.signature: str | None = None
        self.finish: str | None = None
        self.usage: dict[str, int] = {}
        # The image parts of usageMetadata's per-modality breakdowns, by breakdown (apart from ``usage``, whose keys
        # are the vendor's: no field it sends can stand for one).
        self.image_usage: dict[str, int] = {}
        self.response_id: str | None = None
        self.saw_candidate = False

    def malformed(self, message: str) -> MalformedResponseError:
        """The transient error for data this wire does not allow."""
        return MalformedResponseError(message, provider=self._provider, model=self.model)

    def add(self, chunk: Any) -> list[StreamEvent]:
        """Fold one ``GenerateContentResponse`` (a body or a chunk) in; the stream events it produces."""
        if not isinstance(chunk, dict):
            raise self.malformed(f"expected a JSON object, got {type(chunk).__name__}")
        if isinstance(chunk.get("error"), dict | str):
            try:
                err = classify_error_body(chunk, provider=self._provider, model=self.model)
            except _CLASSIFIER_FAILURES:
                err = classify_error_body(_scalars_only(chunk), provider=self._provider, model=self.model)
            raise _refined(err, chunk, None)
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            reason = str(feedback["blockReason"])
            detail = feedback.get("blockReasonMessage")
            raise ProviderError(
                f"Gemini blocked the prompt ({reason})" + (f": {detail}" if isinstance(detail, str) else ""),
                provider=self._provider,
                model=self.model,
                kind=ErrorKind.content_policy,
            )
        self._add_usage(chunk.get("usageMetadata"))
        if isinstance(chunk.get("modelVersion"), str) and chunk["modelVersion"]:
            self.model = chunk["modelVersion"]
        if isinstance(chunk.get("responseId"), str):
            self.response_id = chunk["responseId"]
        candidates = chunk.get("candidates")
        if candidates is None:
            return []  # a usage-only chunk
        if not isinstance(candidates, list):
            raise self.malformed("candidates is not a list")
        if not candidates:
            return []
        candidate = candidates[0]
        if not isinstance(candidate, dict):
            raise self.malformed("a candidate is not an object")
        self.saw_candidate = True
        content = candidate.get("content")
        if content is not None and not isinstance(content, dict):
            raise self.malformed("candidate.content is not an object")
        parts = content.get("parts") if content else None
        if parts is not None and not isinstance(parts, list):
            raise self.malformed("content.parts is not a list")
        events: list[StreamEvent] = []
        for part in parts or ():  # no parts (a SAFETY finish, say) is an empty answer, not malformed
            events.extend(self._add_part(part))
        finish = candidate.get("finishReason")
        if finish is not None:
            if not isinstance(finish, str):
                raise self.malformed("finishReason is not a string")
            self.finish = finish
        return events

    def _add_part(self, part: Any) -> list[StreamEvent]:
        if not isinstance(part, dict):
            raise self.malformed("a content part is not an object")
        sig = part.get("thoughtSignature")
        sig = sig if isinstance(sig, str) and sig else None
        call = part.get("functionCall")
        if call is not None:
            return self._add_call(call, sig)
        if sig is not None and self.signature is None:
            self.signature = sig
        text = part.get("text")
        if text is None:
            return []  # inlineData, executableCode, ...: not part of a text answer
        if not isinstance(text, str):
            raise self.malformed("a text part's text is not a string")
        if not text:
            return []
        if part.get("thought") is True:
            self.reasoning.append(text)
            return [ReasoningDelta(text)]
        self.text.append(text)
        return [TextDelta(text)]

    def _add_call(self, raw: Any, sig: str | None) -> list[StreamEvent]:
        if not isinstance(raw, dict):
            raise self.malformed("functionCall is not an object")
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise self.malformed("functionCall has no name")
        data: dict[str, Any] = {}
        if sig is not None:
            data["thought_signature"] = sig
            if self._asked:
                data["model"] = self._asked  # a signature is bound to the model asked: see encode._replayed_signature
        vendor_id = raw.get("id")
        call_id = vendor_id if isinstance(vendor_id, str) and vendor_id else None
        if call_id is None or call_id in self._used_ids:
            if call_id is not None:
                data["id"] = call_id  # a reused vendor id: ours keeps the conversation unambiguous
            call_id = f"call_{uuid.uuid4().hex[:24]}"
        self._used_ids.add(call_id)
        args = raw.get("args")
        fragment = json.dumps({} if args is None else args, ensure_ascii=False, separators=(",", ":"))
        provider_data = {WIRE: data} if data else None
        if isinstance(args, dict) and (bound := value_problem(args)) is not None:
            call = ToolCall(call_id, name, {}, arguments_error="unparseable", arguments_error_detail=bound,
                            provider_data=provider_data)
        elif args is None or isinstance(args, dict):
            call = ToolCall(call_id, name, args or {}, provider_data=provider_data)
        else:
            call = ToolCall(
                call_id,
                name,
                {},
                raw_arguments=fragment,
                arguments_error="unparseable",
                arguments_error_detail="Gemini sent functionCall.args that is not a JSON object",
                provider_data=provider_data,
            )
        index = len(self.calls)
        self.calls.append(call)
        return [ToolCallStart(index, call_id, name), ToolCallDelta(index, fragment), ToolCallEnd(index, call)]

    def _add_usage(self, meta: Any) -> None:
        # Streamed figures are running totals: a field present overwrites, a field absent keeps the last.
        if isinstance(meta, dict):
            for key, value in meta.items():
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    self.usage[key] = value
                elif key in _MODALITY_DETAILS and isinstance(value, list):
                    # [{"modality": "AUDIO", "tokenCount": 12}, ...]: the audio and image parts (billed at their own
                    # rates); a breakdown sent again replaces both, as a count sent again does.
                    audio = image = 0
                    for entry in value:
                        if (
                            isinstance(entry, dict) and isinstance(count := entry.get("tokenCount"), int)
                            and not isinstance(count, bool) and count >= 0
                        ):
                            modality = entry.get("modality")  # (compared, not hashed: it may be any JSON value)
                            if modality == "AUDIO":
                                audio += count
                            elif modality == "IMAGE" or modality == "DOCUMENT":
                                image += count
                    self.usage[key] = audio
                    self.image_usage[key] = image

    def response(self) -> LLMResponse:
        """The response assembled so far."""
        u, images = self.usage, self.image_usage
        thoughts = u.get("thoughtsTokenCount", 0)
        usage = Usage(
            input_tokens=u.get("promptTokenCount", 0) + u.get("toolUsePromptTokenCount", 0),
            # Output includes thinking, as on the other wires (and in Gemini's totalTokenCount).
            output_tokens=u.get("candidatesTokenCount", 0) + thoughts,
            cache_read_tokens=u.get("cachedContentTokenCount", 0),
            reasoning_tokens=thoughts,
            input_audio_tokens=u.get("promptTokensDetails", 0) + u.get("toolUsePromptTokensDetails", 0),
            cache_audio_read_tokens=u.get("cacheTokensDetails", 0),
            output_audio_tokens=u.get("candidatesTokensDetails", 0),
            input_image_tokens=images.get("promptTokensDetails", 0) + images.get("toolUsePromptTokensDetails", 0),
            cache_image_read_tokens=images.get("cacheTokensDetails", 0),
            output_image_tokens=images.get("candidatesTokensDetails", 0),
        )
        if self.finish is None:
            stop = StopReason.tool_use if self.calls else StopReason.end_turn
        else:
            stop = _FINISH.get(self.finish, StopReason.other)
            if stop is StopReason.end_turn and self.calls:
                stop = StopReason.tool_use  # Gemini says STOP even when it called functions
        return LLMResponse(
            content="".join(self.text),
            tool_calls=tuple(self.calls),
            stop_reason=stop,
            usage=usage,
            model=self.model,
            provider=self._provider,
            raw_stop_reason=self.finish,
            reasoning="".join(self.reasoning),
            provider_data={WIRE: self._signed(self.signature)} if self.signature else None,
            response_id=self.response_id,
        )

    def _signed(self, signature: str) -> dict[str, Any]:
        """A message's signature with the model it was made for (nothing stamped for a nameless request)."""
        data = {"thought_signature": signature}
        if self._asked:
            data["model"] = self._asked
        return data


def decode_response(body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
    """An :class:`LLMResponse` from a ``generateContent`` body (parsed JSON); the first candidate is the answer.

    Raises the classified error for an error body, a content-policy error for a blocked prompt and
    a transient :class:`~agentactors.MalformedResponseError` for a body without candidates.
    """
    assembly = CandidateAssembly(request, model=model, provider=provider)
    assembly.add(body)
    if not assembly.saw_candidate:
        raise assembly.malformed("no candidates (and no promptFeedback.blockReason)")
    return assembly.response()
