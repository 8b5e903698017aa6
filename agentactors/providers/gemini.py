"""The Gemini ``generateContent`` wire: a pure codec (:class:`GeminiWire`) and :class:`GeminiProvider`.

Mapping of the internal (OpenAI-chat shaped) conversation, per ``docs/wire.md``:

* system messages → ``systemInstruction.parts[].text``; user → role ``user``;
  assistant → role ``model`` with a ``text`` part and one ``functionCall`` part per
  call, each carrying the ``thoughtSignature`` it was received with;
* tool results → ``functionResponse`` parts in a role ``user`` content, consecutive
  results in one content, the function name recovered from the assistant call
  with the matching id;
* tools → one ``functionDeclarations`` entry with schemas sanitised by
  :mod:`.gemini_schema`; the tool choice → ``toolConfig.functionCallingConfig``;
* ``vendor_options["gemini"]`` is merged into the body last (generation fields
  such as ``thinkingConfig`` may be given at its top level).

Gemini has no call ids of its own in most responses, so calls without one get a
random id, unique within the conversation (never a per-response counter, which
would key a later result to an earlier call's tool).  Ids are echoed on
``functionCall.id`` / ``functionResponse.id``: the recorded corpus shows the API
accepting client-made ids, and they disambiguate parallel calls of one function.

Thought signatures are stored as received (standard base64 in responses) and
replayed in the form the vendor's own SDK sends them (base64url, padding kept).
An assistant turn with calls but no signature at all (another provider made them)
gets Google's documented :data:`SKIP_SIGNATURE` on its first call when the model
is Gemini 3 or later, which otherwise rejects the whole request.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar
from urllib.parse import quote

import httpx

from ..errors import (
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    classify_error_body,
    classify_http_error,
)
from ..messages import (
    LLMRequest,
    LLMResponse,
    Message,
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
from .gemini_schema import GeminiSchemaError, to_gemini_schema
from .http import HTTPProvider

__all__ = [
    "DEFAULT_BASE_URL",
    "FORCED_TOOL_CHOICE_REJECTED",
    "SKIP_SIGNATURE",
    "GeminiProvider",
    "GeminiStreamDecoder",
    "GeminiWire",
]

WIRE = "gemini"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"

#: Model-name prefixes that reject ``mode: ANY`` (a forced tool choice) with a 400 on every
#: request: Gemini 1.0 predates ANY, Gemma and the 2.0 thinking previews have no function
#: calling on this API.  Extend per provider with ``GeminiProvider(rejects_forced_tool_choice=...)``.
FORCED_TOOL_CHOICE_REJECTED: tuple[str, ...] = (
    "gemini-1.0-",
    "gemini-pro",
    "gemma-",
    "gemini-2.0-flash-thinking",
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
_TOOL_MODES: Mapping[str, str] = {"auto": "AUTO", "none": "NONE", "required": "ANY", "tool": "ANY"}
# generationConfig fields a caller may put at the top level of vendor_options["gemini"].
_GENERATION_FIELDS = frozenset(
    name
    for camel, snake in (
        ("thinkingConfig", "thinking_config"),
        ("responseModalities", "response_modalities"),
        ("responseMimeType", "response_mime_type"),
        ("responseSchema", "response_schema"),
        ("responseJsonSchema", "response_json_schema"),
        ("candidateCount", "candidate_count"),
        ("topP", "top_p"),
        ("topK", "top_k"),
        ("seed", "seed"),
        ("presencePenalty", "presence_penalty"),
        ("frequencyPenalty", "frequency_penalty"),
        ("responseLogprobs", "response_logprobs"),
        ("logprobs", "logprobs"),
        ("speechConfig", "speech_config"),
        ("mediaResolution", "media_resolution"),
    )
    for name in (camel, snake)
)
# Google's documented stand-in for a function call Gemini 3+ did not sign (made by another provider
# in a fallback chain, say): without a signature on a turn's first call, every request is a 400.
SKIP_SIGNATURE = "skip_thought_signature_validator"
_SIGNING_MODEL = re.compile(r"gemini-(\d+)")
_INVALID_KEY_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_EXPIRED", "API_KEY_SERVICE_BLOCKED"})
_BASE64 = re.compile(r"[A-Za-z0-9+/_\-]*={0,2}")
_TO_URLSAFE = str.maketrans("+/", "-_")


def _wire_data(data: Mapping[str, Any] | None) -> Mapping[str, Any]:
    value = data.get(WIRE) if data else None
    return value if isinstance(value, Mapping) else {}


def _replayed_signature(data: Mapping[str, Any] | None) -> str | None:
    sig = _wire_data(data).get("thought_signature")
    if not isinstance(sig, str) or not sig:
        return None
    # Responses carry standard base64, google-genai replays base64url (the corpus shows both); the
    # server decodes either, so only the alphabet changes and anything else stays untouched.
    return sig.translate(_TO_URLSAFE) if _BASE64.fullmatch(sig) else sig


def _request_error(message: str, model: str) -> ProviderError:
    return ProviderError(message, provider=WIRE, model=model, kind=ErrorKind.request)


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(dict(out[key]), value)
        elif key == "tools" and isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = [*out[key], *value]  # built-in tools (googleSearch, codeExecution) join ours
        else:
            out[key] = value
    return out


class GeminiWire:
    """The Gemini ``generateContent`` codec (pure: no I/O).  See the module docstring for the mapping.

    ``encode_request`` raises a request-kind :class:`~agentactors.ProviderError` for a
    conversation it cannot express (a tool result answering no known call, a tool
    schema with a recursive ``$ref``).  ``decode_response`` and the stream decoder
    raise :class:`~agentactors.MalformedResponseError` (transient) for bodies the
    wire does not allow, the classified error for an error body, and a
    content-policy error for a blocked prompt.
    """

    wire: str = WIRE

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        path = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"{base_url.rstrip('/')}/v1beta/{quote(path, safe='/-._~@')}:{method}"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": api_key} if api_key else {}

    # -- requests --------------------------------------------------------------------------------

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        system, contents = _contents(request.messages, model)
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"role": "user", "parts": system}
        if request.tools:
            declarations = [_declaration(t.name, t.description, t.parameters, model) for t in request.tools]
            body["tools"] = [{"functionDeclarations": declarations}]
            calling: dict[str, Any] = {"mode": _TOOL_MODES[request.tool_choice.mode]}
            if request.tool_choice.mode == "tool":
                calling["allowedFunctionNames"] = [request.tool_choice.name]
            body["toolConfig"] = {"functionCallingConfig": calling}
        generation: dict[str, Any] = {}
        if request.max_tokens is not None:
            generation["maxOutputTokens"] = request.max_tokens
        if request.temperature is not None:
            generation["temperature"] = request.temperature
        if request.stop:
            generation["stopSequences"] = list(request.stop)
        options = request.options_for(WIRE)
        lifted = {k: options.pop(k) for k in list(options) if k in _GENERATION_FIELDS}
        generation = _deep_merge(generation, lifted)
        if generation:
            body["generationConfig"] = generation
        return _deep_merge(body, options)

    # -- responses -------------------------------------------------------------------------------

    def decode_response(self, body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
        assembly = _Assembly(request, model=model, provider=provider)
        assembly.add(body)
        if not assembly.saw_candidate:
            raise assembly.malformed("no candidates (and no promptFeedback.blockReason)")
        return assembly.response()

    def stream_decoder(self, *, request: LLMRequest | None, model: str, provider: str) -> GeminiStreamDecoder:
        return GeminiStreamDecoder(request=request, model=model, provider=provider)

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
    ) -> ProviderError:
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
        if "x-should-retry" in httpx.Headers(headers):
            return err  # the vendor's explicit header already decided
        return _refined(err, parsed, body)


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


def _declaration(name: str, description: str, parameters: Mapping[str, Any], model: str) -> dict[str, Any]:
    try:
        schema = to_gemini_schema(parameters)
    except GeminiSchemaError as exc:
        raise _request_error(f"tool {name!r}: {exc}", model) from exc
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return {"name": name, "description": description, "parameters": schema}


def _contents(messages: Iterable[Message], model: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    messages = tuple(messages)
    major = _SIGNING_MODEL.match(_bare_model(model))
    signing = major is not None and int(major.group(1)) >= 3
    names = {call.id: call.name for m in messages if m.role == "assistant" for call in m.tool_calls}
    echo = {call.id: _echo_id(call) for m in messages if m.role == "assistant" for call in m.tool_calls}
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None  # the open content collecting consecutive tool results
    for m in messages:
        if m.role == "system":
            system.append({"text": m.content})
            continue
        if m.role == "tool":
            call_id = m.tool_call_id or ""
            name = names.get(call_id) or m.name
            if not name:
                raise _request_error(
                    f"tool result for call {call_id!r} answers no assistant tool call in the conversation "
                    "and names no tool: Gemini needs the function name",
                    model,
                )
            key = "error" if m.is_error else "return_value"
            response: dict[str, Any] = {"id": echo.get(call_id, call_id), "name": name, "response": {key: m.content}}
            if results is None:
                results = []
                contents.append({"role": "user", "parts": results})
            results.append({"functionResponse": response})
            continue
        results = None
        if m.role == "user":
            contents.append({"role": "user", "parts": [{"text": m.content}]})
            continue
        parts: list[dict[str, Any]] = []
        if m.content:
            part: dict[str, Any] = {"text": m.content}
            sig = _replayed_signature(m.provider_data)
            if sig is not None:
                part["thoughtSignature"] = sig
            parts.append(part)
        signatures = [_replayed_signature(call.provider_data) for call in m.tool_calls]
        if signing and signatures and not any(signatures):
            signatures[0] = SKIP_SIGNATURE  # only the first of parallel calls is ever signed
        for call, sig in zip(m.tool_calls, signatures, strict=True):
            part = {"functionCall": {"id": echo[call.id], "name": call.name, "args": dict(call.arguments)}}
            if sig is not None:
                part["thoughtSignature"] = sig
            parts.append(part)
        if parts:  # a model content without parts is a 400; an empty assistant turn says nothing
            contents.append({"role": "model", "parts": parts})
    return system, contents


def _echo_id(call: ToolCall) -> str:
    vendor = _wire_data(call.provider_data).get("id")
    return vendor if isinstance(vendor, str) and vendor else call.id


# -- decoding ------------------------------------------------------------------------------------


class _Assembly:
    """One candidate assembled from a whole response or from stream chunks (usage is cumulative)."""

    __slots__ = (
        "_provider",
        "_used_ids",
        "calls",
        "finish",
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
        self.response_id: str | None = None
        self.saw_candidate = False

    def malformed(self, message: str) -> MalformedResponseError:
        return MalformedResponseError(message, provider=self._provider, model=self.model)

    def add(self, chunk: Any) -> list[StreamEvent]:
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
        if args is None or isinstance(args, dict):
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

    def response(self) -> LLMResponse:
        u = self.usage
        thoughts = u.get("thoughtsTokenCount", 0)
        usage = Usage(
            input_tokens=u.get("promptTokenCount", 0) + u.get("toolUsePromptTokenCount", 0),
            # Output includes thinking, as on the other wires (and in Gemini's totalTokenCount).
            output_tokens=u.get("candidatesTokenCount", 0) + thoughts,
            cache_read_tokens=u.get("cachedContentTokenCount", 0),
            reasoning_tokens=thoughts,
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
            provider_data={WIRE: {"thought_signature": self.signature}} if self.signature else None,
            response_id=self.response_id,
        )


class GeminiStreamDecoder:
    """Decodes a ``streamGenerateContent?alt=sse`` stream, one SSE event at a time.

    Every event is a whole ``GenerateContentResponse`` chunk; there is no ``[DONE]``.
    The stream is complete once a chunk carries ``finishReason``; :meth:`finish`
    raises :class:`~agentactors.MalformedResponseError` if none arrived.  An error
    chunk raises the classified error; a blocked prompt a content-policy error.
    """

    def __init__(self, *, request: LLMRequest | None, model: str, provider: str) -> None:
        self._assembly = _Assembly(request, model=model, provider=provider)

    @property
    def done(self) -> bool:
        return self._assembly.finish is not None

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        text = data.strip()
        if not text:
            return []
        try:
            chunk = json.loads(text)
        except (ValueError, RecursionError):
            raise self._assembly.malformed(f"a stream chunk is not JSON ({len(text)} characters)") from None
        return self._assembly.add(chunk)

    def finish(self) -> LLMResponse:
        if not self.done:
            raise self._assembly.malformed("the stream ended before a chunk with finishReason (truncated)")
        return self._assembly.response()


# -- provider ------------------------------------------------------------------------------------


def _bare_model(model: str) -> str:
    return model.rsplit("/", 1)[-1].lower()


class GeminiProvider(HTTPProvider):
    """Google Gemini over ``POST {base_url}/v1beta/models/{model}:generateContent``
    (streams: ``:streamGenerateContent?alt=sse``).

    The key comes from ``api_key`` or the ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``
    environment variables and travels only in the ``x-goog-api-key`` header.
    Forced tool choices are refused before sending for models listed in
    :data:`FORCED_TOOL_CHOICE_REJECTED` or ``rejects_forced_tool_choice``
    (model-name prefixes).  Error and cancellation semantics are
    :class:`~agentactors.providers.http.HTTPProvider`'s.
    """

    wire_name: ClassVar[str] = WIRE
    api_key_env: ClassVar[tuple[str, ...]] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        http_client: httpx.AsyncClient | None = None,
        name: str | None = None,
        timeout: httpx.Timeout | float | None = None,
        rejects_forced_tool_choice: Iterable[str] = (),
    ) -> None:
        super().__init__(
            GeminiWire(),
            model=model,
            api_key=api_key,
            base_url=base_url,
            http_client=http_client,
            name=name,
            timeout=timeout,
        )
        self._rejects = tuple(p.lower() for p in (*FORCED_TOOL_CHOICE_REJECTED, *rejects_forced_tool_choice))

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """False for a model whose name starts with a rejected prefix; True otherwise."""
        if not self.carries_forced_tool_choice:
            return False
        bare = _bare_model(model or self.default_model or "")
        return not any(bare.startswith(prefix) for prefix in self._rejects)
