"""Writing the Gemini ``generateContent`` wire: an :class:`~agentactors.LLMRequest` as a request body.

Pure functions, no I/O: :class:`~agentactors.providers.gemini.provider.GeminiWire` calls
:func:`encode_request` and the provider sends what it returns.  Mapping of the internal (OpenAI-chat
shaped) conversation, per ``docs/wire.md``:

* system messages → ``systemInstruction.parts[].text``; user → role ``user``;
  assistant → role ``model`` with a ``text`` part and one ``functionCall`` part per
  call, each carrying the ``thoughtSignature`` it was received with;
* tool results → ``functionResponse`` parts in a role ``user`` content, consecutive
  results in one content, the function name recovered from the assistant call
  with the matching id;
* tools → one ``functionDeclarations`` entry with schemas sanitised by
  :func:`~agentactors.providers.gemini.schema.to_gemini_schema`; the tool choice →
  ``toolConfig.functionCallingConfig``;
* the request's settings → ``generationConfig`` (``docs/settings.md``; per-model data in
  :mod:`.models`): ``maxOutputTokens``, ``temperature``, ``topP``, ``stopSequences`` (at most 5),
  ``seed``, and ``thinkingConfig`` — ``thinkingLevel`` from ``reasoning_effort`` on the models that take
  levels, ``thinkingBudget`` from ``thinking_budget`` (or from the effort on 2.5 models); the wire has no
  ``parallel_tool_calls`` and caches prefixes on its own (an extended retention is dropped with an
  ``llm.setting_dropped`` event);
* content parts → ``inlineData`` (bytes, base64) or ``fileData`` (a URL: Files API, ``gs://`` or HTTPS);
  media a tool returned follow the ``functionResponse`` parts in the same user content;
* ``LLMRequest.response_format`` → ``generationConfig.responseJsonSchema`` (plain JSON Schema,
  which the API takes on every current model) with ``responseMimeType: "application/json"``;
* ``vendor_options["gemini"]`` is merged into the body last (generation fields
  such as ``thinkingConfig`` may be given at its top level); ``contents``, the conversation, and ``model`` and
  ``stream``, which are the URL's, are refused (:func:`~agentactors.providers._settings.check_owned`).

Gemini's integers are 32-bit (``int32 seed``, ``maxOutputTokens``, ``thinkingBudget`` in the API's
``GenerationConfig``): a larger value is refused before sending, and so is a ``temperature`` above 2 for a
model :mod:`.models` knows (Gemini takes 0 to 2) — whether a setting or a vendor option sets it (the merged
``generationConfig`` is judged).  Tool names follow ``FunctionDeclaration.name``'s rule (a letter or ``_`` first,
then letters, digits, ``_ . : -``, at most 64: :class:`~agentactors.providers.errors.UnsupportedToolNameError`).

Ids are echoed on ``functionCall.id`` / ``functionResponse.id``: the recorded corpus shows the API
accepting client-made ids, and they disambiguate parallel calls of one function.  Thought signatures
are replayed in the form the vendor's own SDK sends them (base64url, padding kept), to the model that made
them only: one stamped with another model (``provider_data["gemini"]["model"]``, names compared as
:func:`~.models.bare_name` reads them) is left out, as Gemini 3 rejects it.  An assistant turn with calls but no
signature to send (another provider or another model made them) gets Google's documented :data:`SKIP_SIGNATURE`
on its first call when the model is Gemini 3 or later, which otherwise rejects the whole request.

Errors: a request-kind :class:`~agentactors.ProviderError` for a conversation the wire cannot express (a
tool result answering no known call, a tool schema with a recursive ``$ref``);
:class:`~agentactors.UnsupportedContentError` / :class:`~agentactors.UnsupportedSettingError` for what the
model cannot take.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ...errors import ErrorKind, ProviderError
from ...messages import LLMRequest, Message, ToolCall
from ...parts import Part, Text
from .._media import guessed_media_type
from .._settings import GEMINI_TOOL_NAMES, check_owned, check_tool_names, dropped, refused, sent_integer, sent_number
from .._thought_signatures import SKIP_SIGNATURE, signs_calls
from .models import (
    MAX_STOP_SEQUENCES,
    MAX_TEMPERATURE,
    WIRE,
    bare_name,
    check_parts,
    check_sent_thinking,
    model_row,
    thinking_config,
    wire_media_type,
)
from .schema import GeminiSchemaError, to_gemini_schema

__all__ = ["SKIP_SIGNATURE", "encode_request"]

_TOOL_MODES: Mapping[str, str] = {"auto": "AUTO", "none": "NONE", "required": "ANY", "tool": "ANY"}
# generationConfig fields a caller may put at the top level of vendor_options["gemini"] (GenerateContentRequest has
# none of them: left there, the vendor would refuse the unknown name).
_GENERATION_FIELDS = frozenset(
    name
    for camel, snake in (
        ("thinkingConfig", "thinking_config"),
        ("responseModalities", "response_modalities"),
        ("responseMimeType", "response_mime_type"),
        ("responseSchema", "response_schema"),
        ("responseJsonSchema", "response_json_schema"),
        ("candidateCount", "candidate_count"),
        ("temperature", "temperature"),
        ("maxOutputTokens", "max_output_tokens"),
        ("stopSequences", "stop_sequences"),
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
# Body fields no vendor option may set: the conversation, and the model and streaming, which are the URL's: an option
# naming them could not switch them, only put a stray field in the body.
_OWNED = frozenset({"contents", "model", "stream"})
# GenerationConfig's integers are int32.
_INT32 = (-(2**31), 2**31 - 1)
_BASE64 = re.compile(r"[A-Za-z0-9+/_\-]*={0,2}")
_TO_URLSAFE = str.maketrans("+/", "-_")


def _wire_data(data: Mapping[str, Any] | None) -> Mapping[str, Any]:
    value = data.get(WIRE) if data else None
    return value if isinstance(value, Mapping) else {}


def _replayed_signature(data: Mapping[str, Any] | None, model: str, bare: str) -> str | None:
    """The signature to send with a part (``None``: none), for ``model`` (``bare``: its :func:`~.models.bare_name`).

    A signature stamped with another model (``provider_data["gemini"]["model"]``: the model its request was sent
    to) is not sent: Gemini 3 rejects a signature another model made.  One without a stamp is sent as before.
    """
    wire = _wire_data(data)
    sig = wire.get("thought_signature")
    if not isinstance(sig, str) or not sig:
        return None
    made_by = wire.get("model")
    if isinstance(made_by, str) and made_by != model and bare_name(made_by) != bare:
        return None  # the rare path: a fallback from another Gemini model; the first call gets SKIP_SIGNATURE
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


def encode_request(request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
    """The request body (see the module docstring for the mapping; ``stream`` changes only the URL)."""
    check_owned(WIRE, model, request.options_for(WIRE), _OWNED)
    check_parts(request.messages, model)
    check_tool_names(WIRE, model, request.tools, GEMINI_TOOL_NAMES)
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
    generation = _generation(request, model)
    if request.response_format is not None:
        generation["responseMimeType"] = "application/json"
        generation["responseJsonSchema"] = dict(request.response_format.schema)
    options = request.options_for(WIRE)
    lifted = {k: options.pop(k) for k in list(options) if k in _GENERATION_FIELDS}
    generation = _deep_merge(generation, lifted)
    if generation:
        body["generationConfig"] = generation
    given = {**lifted, **options}
    body = _deep_merge(body, options)
    _check_thinking(body.get("generationConfig"), model)
    if given:
        _check_sent(body.get("generationConfig"), model, given)  # the options' values judged as the settings were
    return body


# GenerationConfig's int32 fields: (camelCase, snake_case, the setting an error names).
_INT_FIELDS = (
    ("maxOutputTokens", "max_output_tokens", "max_tokens"),
    ("seed", "seed", "seed"),
    ("topK", "top_k", "vendor_options"),
    ("candidateCount", "candidate_count", "vendor_options"),
)


def _check_sent(generation: Any, model: str, options: Mapping[str, Any]) -> None:
    """Judge the ``generationConfig`` a body merged with vendor options sends, as the settings are judged.

    Its integers are int32 (a positive ``maxOutputTokens``), a known model's temperature is 0 to 2, ``topP`` 0 to
    1, at most :data:`~.models.MAX_STOP_SEQUENCES` stop sequences.  Either spelling of a field is read (the API
    takes both).  ``options``: the vendor options, top level and ``generationConfig``'s, to name the source.
    """
    if not isinstance(generation, Mapping):
        return
    nested = options.get("generationConfig", options.get("generation_config"))
    named = {**options, **(nested if isinstance(nested, Mapping) else {})}
    low, high = _INT32
    for camel, snake, setting in _INT_FIELDS:
        for key in (camel, snake):
            least = 1 if setting == "max_tokens" else low
            sent_integer(WIRE, model, setting, key, generation.get(key), named, low=least, high=high)
    for name in ("thinkingConfig", "thinking_config"):
        config = generation.get(name)
        if isinstance(config, Mapping):
            for key in ("thinkingBudget", "thinking_budget"):
                sent_integer(WIRE, model, "thinking_budget", key, config.get(key), {**named, **config},
                             low=-1, high=high)  # -1: dynamic thinking
            check_sent_thinking(config, model)  # the model's levels and budget range
    ceiling = MAX_TEMPERATURE if model_row(model) is not None else None
    sent_number(WIRE, model, "temperature", "temperature", generation.get("temperature"), named, low=0.0,
                high=ceiling)
    for key in ("topP", "top_p"):
        sent_number(WIRE, model, "top_p", key, generation.get(key), named, low=0.0, high=1.0)
    for key in ("stopSequences", "stop_sequences"):
        stop = generation.get(key)
        if isinstance(stop, list | tuple) and len(stop) > MAX_STOP_SEQUENCES:
            raise refused(WIRE, model, "stop", f"Gemini takes at most {MAX_STOP_SEQUENCES} stop sequences")


def _check_thinking(generation: Any, model: str) -> None:
    """Refuse a ``thinkingConfig`` holding a level and a budget (any spelling): Gemini answers that with a 400.

    The settings alone give one or the other (:func:`~.models.thinking_config`), so the other one came from
    ``vendor_options`` — typically a level there and a ``thinking_budget`` in the settings, or the reverse.
    """
    if not isinstance(generation, Mapping):
        return
    keys: set[str] = set()
    for name in ("thinkingConfig", "thinking_config"):
        config = generation.get(name)
        if isinstance(config, Mapping):
            keys.update(k for k, v in config.items() if v is not None)
    if keys & {"thinkingLevel", "thinking_level"} and keys & {"thinkingBudget", "thinking_budget"}:
        raise refused(WIRE, model, "vendor_options",
                      "Gemini takes a thinkingLevel or a thinkingBudget, not both, and the settings and "
                      "vendor_options between them ask for both (set reasoning_effort or thinking_budget, or the "
                      "vendor option's thinkingConfig, not one of each)")


def _generation(request: LLMRequest, model: str) -> dict[str, Any]:
    """``generationConfig`` from the request's settings (``vendor_options`` are merged over it later)."""
    generation: dict[str, Any] = {}
    for name in ("max_tokens", "seed", "thinking_budget"):
        _check_int32(name, getattr(request, name), model)
    if request.max_tokens is not None:
        generation["maxOutputTokens"] = request.max_tokens
    if request.temperature is not None:
        if request.temperature > MAX_TEMPERATURE and model_row(model) is not None:
            raise refused(WIRE, model, "temperature",
                          f"Gemini takes 0 to {MAX_TEMPERATURE:g}, not {request.temperature!r}")
        generation["temperature"] = request.temperature
    if request.top_p is not None:
        generation["topP"] = request.top_p
    if request.stop:
        if len(request.stop) > MAX_STOP_SEQUENCES:
            raise refused(WIRE, model, "stop", f"Gemini takes at most {MAX_STOP_SEQUENCES} stop sequences")
        generation["stopSequences"] = list(request.stop)
    if request.seed is not None:
        generation["seed"] = request.seed
    thinking = thinking_config(request, model)
    if thinking is not None:
        generation["thinkingConfig"] = thinking
    if request.parallel_tool_calls is not None and request.tools:
        dropped(WIRE, model, "parallel_tool_calls", request.parallel_tool_calls,
                "generateContent has no parallel_tool_calls setting")
    if request.cache is not None and request.cache.retention == "extended":
        dropped(WIRE, model, "cache", "extended retention",
                "Gemini's implicit cache has no retention setting (explicit caches are vendor_options' cachedContent)")
    return generation


def _check_int32(name: str, value: int | None, model: str) -> None:
    """Refuse an integer setting ``GenerationConfig`` cannot hold (an ``int32``: the API answers a 400)."""
    low, high = _INT32
    if value is not None and not low <= value <= high:
        raise refused(WIRE, model, name, f"Gemini takes a 32-bit integer ({low} to {high}), not {value}")


def _part(part: Part) -> dict[str, Any]:
    """One content part as a Gemini ``Part`` (checked by ``check_parts`` before encoding began)."""
    if isinstance(part, Text):
        return {"text": part.text}
    media_type = wire_media_type(guessed_media_type(part) or "")
    if part.url is not None:
        return {"fileData": {"mimeType": media_type, "fileUri": part.url}}
    return {"inlineData": {"mimeType": media_type, "data": part.base64()}}


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
    bare = bare_name(model)
    signing = signs_calls(bare)
    names = {call.id: call.name for m in messages if m.role == "assistant" for call in m.tool_calls}
    echo = {call.id: _echo_id(call) for m in messages if m.role == "assistant" for call in m.tool_calls}
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None  # the open content collecting consecutive tool results
    returned: list[Part] = []  # the media parts at the end of that content
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
                returned = []
                contents.append({"role": "user", "parts": results})
            # Media a tool returned go after the run's function responses, in the same content.
            index = len(results) - len(returned)
            results.insert(index, {"functionResponse": response})
            for p in m.media:
                results.append(_part(p))
                returned.append(p)
            continue
        results = None
        if m.role == "user":
            user_parts = [_part(p) for p in m.parts] if m.media else [{"text": m.content}]
            contents.append({"role": "user", "parts": user_parts})
            continue
        parts: list[dict[str, Any]] = []
        if m.content:
            part: dict[str, Any] = {"text": m.content}
            sig = _replayed_signature(m.provider_data, model, bare)
            if sig is not None:
                part["thoughtSignature"] = sig
            parts.append(part)
        signatures = [_replayed_signature(call.provider_data, model, bare) for call in m.tool_calls]
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
