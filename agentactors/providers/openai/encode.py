"""Writing the OpenAI Chat Completions wire: an :class:`~agentactors.LLMRequest` as a request body.

Pure functions, no I/O: :class:`~agentactors.providers.openai.provider.OpenAIWire` calls
:func:`encode_request` and the provider sends what it returns.

The request's settings (``docs/settings.md``): ``max_tokens`` → ``max_completion_tokens`` on OpenAI's
endpoint and for reasoning models (``max_tokens`` elsewhere), ``temperature``, ``top_p``, ``stop``,
``seed``, ``reasoning_effort`` (validated per model), ``parallel_tool_calls`` (only with tools), an
extended cache retention → ``prompt_cache_retention: "24h"``; per-model data in :mod:`.models`.

Content parts: an image → ``image_url`` (a ``data:`` URL, or the image's own URL), a PDF → ``file``
(``file_data``), a text document → a ``text`` part, audio → ``input_audio`` (WAV / MP3).  A tool message
takes text only, so media a tool returned follow the run of tool messages as one user message
(``"Media returned by tool call <id>:"`` and the parts).

Opaque data travels in ``provider_data["openai"]``: on a :class:`~agentactors.Message` it is a dict of extra
wire fields merged into that message when it is sent; on a :class:`~agentactors.ToolCall`, extra fields of
that tool call.  Its ``"model"`` key is not a field: the decoders stamp there the model the fields were made for, and
they are sent to that model only (:func:`encode_message`).

``vendor_options["openai"]`` is merged over the request body (``seed``, ``prompt_cache_key``, ``n``,
``parallel_tool_calls``, ``reasoning``, ``max_completion_tokens``, ...); a ``None`` value removes a field
the codec would have sent (e.g. ``{"stream_options": None}`` for a server that rejects it); a ``tools`` list beside
the request's declared tools is appended to them (:func:`raw_tools`), not put in their place.  Two keys are the
codec's own and are not sent: ``strict_tools`` (``True`` for every tool, or an iterable of tool names) marks
function definitions ``strict`` and sends their schemas fitted to strict mode (:func:`tool_parameters`, which
also gives every array that has none an ``items``); ``replay_reasoning`` (``True`` / ``False``) says whether
assistant tool-call turns carry their reasoning back as ``reasoning_content`` (default: per
:data:`.models.REPLAYS_REASONING`; see :func:`encode_message`).  What the merged body then holds for a mapped setting
(``temperature``, ``top_p``, ``seed``, ``stop``, ``max_tokens`` / ``max_completion_tokens``,
``reasoning_effort``) is judged as the setting is (:func:`.models.check_sent`).  ``model``, ``messages`` and
``stream`` are refused (:func:`~agentactors.providers._settings.check_owned`): they are the provider's model,
the conversation and the call's kind, never an option.

``LLMRequest.response_format`` becomes ``response_format: {"type": "json_schema", "json_schema": {"name",
"schema", "strict"}}`` (plus ``description`` when given); a strict format's schema is fitted to strict mode
first (:mod:`agentactors.providers._constrained_schema`).

Tool names are OpenAI's rule (``^[a-zA-Z0-9_-]{1,64}$``: no dots) on OpenAI's endpoint (and Azure's); a
compatible server judges them itself, whatever model it serves.

A call id over :data:`MAX_CALL_ID` (40) characters — a caller's history from another vendor or framework: the loop
renames a model's own — is a 400 on OpenAI's endpoint and Azure's ("string too long"); it is sent as
:class:`SentIds` makes it, in the call and in its result alike (on every server of this wire: the pairing is all a
server reads in an id).  Decoded answers keep the ids the vendor sent.

Errors: :class:`~agentactors.UnsupportedContentError` / :class:`~agentactors.UnsupportedSettingError` for
what the model cannot take, :class:`~agentactors.providers.errors.UnsupportedToolNameError` for a tool name
OpenAI refuses, ``ValueError`` for a strict response format's schema strict mode cannot carry,
:class:`~agentactors.UnsupportedSettingError` for a ``strict_tools`` tool whose schema strict mode cannot carry.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...errors import UnsupportedSettingError
from ...messages import LLMRequest, Message, ResponseFormat, ToolCall, ToolChoice, ToolSpec
from ...parts import Document, Image, Part, Text
from ...tools.json_refs import inline_refs
from .._constrained_schema import openai_strict_schema
from .._settings import OPENAI_TOOL_NAMES, bare_model, check_owned, check_tool_names, refused
from .._thought_signatures import SKIP_SIGNATURE, signs_calls
from .decode import FOREIGN_MESSAGE_FIELDS, dict_or_empty
from .models import WIRE, audio_format, check_parts, check_sent, encode_settings, model_row, replays_reasoning

__all__ = [
    "GEMINI_SKIP_SIGNATURE",
    "MAX_CALL_ID",
    "SentIds",
    "encode_message",
    "encode_messages",
    "encode_part",
    "encode_request",
    "encode_response_format",
    "encode_tool_choice",
    "raw_tools",
    "short_call_id",
    "strict_tool",
    "tool_parameters",
]

# vendor_options keys the codec consumes instead of copying into the body.
_CODEC_OPTIONS = frozenset({"strict_tools", "replay_reasoning"})
# Body fields no vendor option may set or remove: the model, the conversation and the call's kind.
_OWNED = frozenset({"model", "messages", "stream"})
#: What a call another Gemini model signed is sent with to Gemini 3 and later, in its signature's place (as its
#: compatible endpoint takes one: ``extra_content.google.thought_signature``): Google's documented stand-in.
GEMINI_SKIP_SIGNATURE = SKIP_SIGNATURE
#: The longest call id Chat Completions takes (``messages[i].tool_calls[j].id``, ``tool_call_id``): OpenAI and Azure
#: answer a longer one with a 400 ("string too long. Expected a string with maximum length 40").
MAX_CALL_ID = 40
_DIGEST = 12  # hex digits of an over-long id's digest in the id it is sent as


class SentIds:
    """The ids a conversation's calls and results go out with, on a wire that takes ``cap`` characters at most.

    An id within the cap goes as it is (the common case: nothing is computed).  A longer one — a caller's history
    from another vendor or framework, such as a 64-character id — goes as its head, ``_`` and a digest of the whole
    id (``cap`` characters in all; :func:`short_call_id`): recognisably the same call's, the same in the call and in
    its result, in this request and the next (the prompt cache holds), and never another id of the conversation
    (that one keeps it; a digest salted with a count is tried next).  Called with an id, gives the id sent.
    """

    __slots__ = ("_cap", "_messages", "_table")

    def __init__(self, messages: Sequence[Message], cap: int) -> None:
        self._messages = messages
        self._cap = cap
        self._table: dict[str, str] | None = None  # over-long id -> the id sent, made at the first one met

    def __call__(self, call_id: str) -> str:
        if len(call_id) <= self._cap:
            return call_id
        table = self._table
        if table is None:  # the rare path: the conversation holds an id the vendor refuses
            table = self._table = _short_ids(self._messages, self._cap)
        sent = table.get(call_id)
        return sent if sent is not None else short_call_id(call_id, self._cap)


def short_call_id(call_id: str, cap: int, salt: int = 0) -> str:
    """``call_id`` cut to ``cap`` characters: its head, ``_`` and 12 hex digits of a digest of the whole id (and of
    ``salt``, when not 0), so two ids that share their head stay two."""
    import hashlib  # here, not at import: only a history holding an over-long id needs it (test_import_cost)

    whole = call_id if not salt else f"{call_id}#{salt}"
    digest = hashlib.sha256(whole.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST]
    return f"{call_id[: cap - _DIGEST - 1]}_{digest}"


def _short_ids(messages: Sequence[Message], cap: int) -> dict[str, str]:
    """Each over-long call id of ``messages`` (calls and results), with the id it is sent as: an unused one."""
    seen: dict[str, None] = {}  # every id, in the order met (a dict: the mapping is the same every time)
    for m in messages:
        for c in m.tool_calls:
            seen[c.id] = None
        if m.tool_call_id is not None:
            seen[m.tool_call_id] = None
    taken = {i for i in seen if len(i) <= cap}
    table: dict[str, str] = {}
    for call_id in seen:
        if len(call_id) > cap:
            salt = 0
            sent = short_call_id(call_id, cap)
            while sent in taken:
                salt += 1
                sent = short_call_id(call_id, cap, salt)
            taken.add(sent)
            table[call_id] = sent
    return table


def encode_request(
    request: LLMRequest,
    model: str,
    *,
    stream: bool,
    max_tokens_field: str = "max_tokens",
    official: bool = False,
    sent_as: str | None = None,
    own_only: bool = False,
) -> dict[str, Any]:
    """The request body (see the module docstring for the mapping).

    ``max_tokens_field`` names the field ``max_tokens`` goes in for a model not known to reason (one
    that is always gets ``max_completion_tokens``); ``official`` checks OpenAI's own size limits.
    ``sent_as``: the name the request goes out as when ``model`` is another name for it (Azure: the deployment,
    ``model`` its underlying model, which the settings are judged by) — the name the decoders stamp, which what is
    replayed is compared with (:func:`encode_message`); ``model`` itself when not given.
    ``own_only``: see :func:`encode_message` (Azure OpenAI, whose other checks are a compatible server's).
    """
    options = request.options_for(WIRE)
    check_owned(WIRE, model, options, _OWNED)
    check_parts(request.messages, model, official=official)
    if request.tools and official:
        # OpenAI's rule, on OpenAI's endpoint only: a compatible server (vLLM, Ollama, a proxy to another vendor)
        # takes the names it takes, whatever model name it serves — a model OpenAI's tables know included.
        check_tool_names(WIRE, model, request.tools, OPENAI_TOOL_NAMES)
    replay = options.get("replay_reasoning")
    if replay is None:
        replay = replays_reasoning(model)
    elif not isinstance(replay, bool):
        raise refused(WIRE, model, "replay_reasoning", f"takes True or False, not {type(replay).__name__}")
    body: dict[str, Any] = {
        "model": model,
        "messages": encode_messages(request.messages, replay_reasoning=replay, official=official,
                                    model=model if sent_as is None else sent_as, own_only=own_only),
    }
    if request.tools:
        strict = options.get("strict_tools", False)
        body["tools"] = [_encode_tool(t, strict_tool(strict, t.name), model) for t in request.tools]
        body["tool_choice"] = encode_tool_choice(request.tool_choice)
    body["stream"] = stream
    if stream:
        body["stream_options"] = {"include_usage": True}
    if request.max_tokens is not None and "max_tokens" not in options and "max_completion_tokens" not in options:
        body[_max_tokens_field(model, max_tokens_field)] = request.max_tokens
    body.update(encode_settings(request, model, tools=bool(request.tools)))
    if request.response_format is not None:
        body["response_format"] = encode_response_format(request.response_format)
    for key, value in options.items():
        if key in _CODEC_OPTIONS:
            continue
        if value is None:
            body.pop(key, None)
        elif key == "tools" and request.tools:
            body["tools"] = body["tools"] + raw_tools(WIRE, model, value)
        else:
            body[key] = value
    if not request.tools:
        # parallel_tool_calls without tools is a 400 on OpenAI.
        body.pop("parallel_tool_calls", None)
    if options:
        check_sent(body, model, options, official=official)  # the options' values judged as the settings were
    return body


def raw_tools(wire: str, model: str, value: Any) -> list[Any]:
    """A ``tools`` option given beside the request's declared tools: raw definitions appended after them.

    Copied over the body, it would replace the declared tools — the model could then not call them, and a named
    tool choice would be a 400 — so it is appended (a hosted tool beside the agent's functions); what is not a
    list of objects is refused, naming the key.
    """
    if not isinstance(value, list | tuple) or not all(isinstance(t, Mapping) for t in value):
        raise refused(wire, model, "vendor_options",
                      f"vendor_options[{wire!r}]['tools'] beside declared tools is appended to them: it must be a "
                      "list of tool definitions (objects)")
    return [dict(t) for t in value]


def _max_tokens_field(model: str, default: str) -> str:
    row = model_row(model)
    return "max_completion_tokens" if row is not None and row.reasons else default


def encode_messages(
    messages: Iterable[Message],
    *,
    replay_reasoning: bool = False,
    official: bool = False,
    model: str | None = None,
    own_only: bool = False,
) -> list[dict[str, Any]]:
    """The conversation on the wire, empty assistant turns dropped.

    Media in tool results follow the run of tool messages as one user message: a tool message
    takes text only, and nothing may come between an assistant's calls and their results.
    ``replay_reasoning``, ``official``, ``model``, ``own_only``: see :func:`encode_message`.  A call id over
    :data:`MAX_CALL_ID` characters is sent as :class:`SentIds` makes it.
    """
    if not isinstance(messages, Sequence):
        messages = tuple(messages)
    ids = SentIds(messages, MAX_CALL_ID)
    out: list[dict[str, Any]] = []
    returned: list[dict[str, Any]] = []  # media of the tool results since the last non-tool message
    for m in messages:
        if m.role != "tool" and returned:
            out.append({"role": "user", "content": returned})
            returned = []
        encoded = encode_message(m, replay_reasoning=replay_reasoning, official=official, model=model,
                                 own_only=own_only, ids=ids)
        if encoded is not None:
            out.append(encoded)
        if m.role == "tool" and m.media:
            returned.append({"type": "text", "text": f"Media returned by tool call {ids(m.tool_call_id or '')}:"})
            returned.extend(encode_part(p) for p in m.media)
    if returned:
        out.append({"role": "user", "content": returned})
    return out


def encode_message(
    m: Message,
    *,
    replay_reasoning: bool = False,
    official: bool = False,
    model: str | None = None,
    own_only: bool = False,
    ids: SentIds | None = None,
) -> dict[str, Any] | None:
    """One message on the wire, or ``None`` for an assistant message with neither text nor calls.

    ``replay_reasoning``: an assistant message with tool calls carries its reasoning back as
    ``reasoning_content`` (``""`` when it has none), as DeepSeek's thinking mode and Kimi's thinking models
    require (:data:`.models.REPLAYS_REASONING`); otherwise reasoning is never sent.

    ``official``: the message goes to OpenAI's own endpoint, which refuses the message fields other servers of
    this wire answered with and want back (OpenRouter's ``reasoning_details``, Gemini's ``extra_content`` /
    ``thought_signature``: :data:`~.decode.FOREIGN_MESSAGE_FIELDS`) — a fallback from such a server to OpenAI
    would send them, and every request of the run would be a 400: they are left out there.

    ``model``: the model the message goes to.  What those fields carry is signed or encrypted for the model that
    made them (``provider_data["openai"]["model"]``, stamped by the decoders; names compared as
    :func:`~agentactors.providers._settings.bare_model` reads them): another model's are left out, as its server
    answers them with a 400 (a fallback ``gemini-3-pro`` -> ``gemini-3-flash``); a call another Gemini model signed
    goes to Gemini 3 and later with :data:`GEMINI_SKIP_SIGNATURE` instead, as Google documents for a trace from a
    different model.  A message without that stamp (stored before it) is sent as before; the stamp never is.

    ``own_only``: the server refuses other servers' fields as OpenAI's does and answers with none of its own
    (Azure OpenAI, whose deployments are OpenAI's models): they are replayed only to the very name that answered
    with them (a gateway behind Azure's shape that does) — not when unstamped, nor to another name of the same
    model (OpenRouter's ``openai/o4-mini`` before a deployment named ``o4-mini``).

    ``ids``: the ids the conversation's calls and results are sent with (:class:`SentIds`; one for this message alone
    when not given): an id over :data:`MAX_CALL_ID` characters is a 400 on OpenAI's endpoint and Azure's.
    """
    extra = dict_or_empty((m.provider_data or {}).get(WIRE))
    if extra:
        extra = _replayed(extra, model, official, own_only=own_only)
    if m.role == "tool":
        # Media a tool returned travel in a user message after the results (see encode_messages).
        call_id = m.tool_call_id
        if call_id is not None and len(call_id) > MAX_CALL_ID:
            call_id = (ids or SentIds((m,), MAX_CALL_ID))(call_id)
        msg: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": m.content}
    elif m.role == "assistant":
        if not m.tool_calls and not m.content and "content" not in extra:
            # null content and no calls is a 400; an empty turn says nothing anyway.
            return None
        msg = {"role": "assistant", "content": m.content or None}
        if m.tool_calls:
            sent = ids or SentIds((m,), MAX_CALL_ID)
            msg["tool_calls"] = [_encode_call(c, official, model, own_only, sent) for c in m.tool_calls]
            if replay_reasoning:
                msg["reasoning_content"] = m.reasoning
    elif m.media:
        msg = {"role": m.role, "content": [encode_part(p) for p in m.parts]}
    else:
        msg = {"role": m.role, "content": m.content}
    msg.update(extra)
    return msg


def _encode_call(
    call: ToolCall, official: bool, model: str | None, own_only: bool, ids: SentIds
) -> dict[str, Any]:
    call_id = call.id
    encoded: dict[str, Any] = {
        "id": call_id if len(call_id) <= MAX_CALL_ID else ids(call_id),
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_json},
    }
    extra = dict_or_empty((call.provider_data or {}).get(WIRE))
    if extra:  # (Gemini's extra_content: see encode_message)
        encoded.update(_replayed(extra, model, official, call=True, own_only=own_only))
    return encoded


def _replayed(
    extra: dict[str, Any], model: str | None, official: bool, *, call: bool = False, own_only: bool = False
) -> dict[str, Any]:
    """The kept fields of a message (or a ``call``) to send to ``model``: the stamp never, the foreign fields not to
    OpenAI's own endpoint nor to another model than the one that made them (``own_only``: another name than the
    one that made them; see :func:`encode_message`)."""
    made_by = extra.get("model")
    if made_by is None and not official and not own_only:
        return extra  # the common path: nothing stamped (OpenAI's own answers keep nothing)
    kept = {k: v for k, v in extra.items() if k != "model"}
    if official:
        return {k: v for k, v in kept.items() if k not in FOREIGN_MESSAGE_FIELDS}
    if own_only:
        if made_by is not None and made_by == model:
            return kept
    elif not isinstance(made_by, str) or model is None or made_by == model or bare_model(made_by) == bare_model(model):
        return kept
    # The rare path: another model made it (a fallback on this wire); its signature or encrypted reasoning is a 400.
    signed = call and _google_signature(kept.get("extra_content"))
    kept = {k: v for k, v in kept.items() if k not in FOREIGN_MESSAGE_FIELDS}
    if signed and model is not None and signs_calls(bare_model(model)):
        kept["extra_content"] = {"google": {"thought_signature": GEMINI_SKIP_SIGNATURE}}
    return kept


def _google_signature(value: Any) -> bool:
    """Whether ``extra_content`` holds a Gemini thought signature (``{"google": {"thought_signature": ...}}``)."""
    google = value.get("google") if isinstance(value, Mapping) else None
    return isinstance(google, Mapping) and bool(google.get("thought_signature"))


def _encode_tool(spec: ToolSpec, strict: bool, model: str) -> dict[str, Any]:
    parameters = tool_parameters(spec, strict, wire=WIRE, model=model)
    function: dict[str, Any] = {"name": spec.name, "description": spec.description, "parameters": parameters}
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def encode_part(part: Part) -> dict[str, Any]:
    """One content part as a Chat Completions content part (what the part is was checked by ``check_parts``)."""
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Image):
        return {"type": "image_url", "image_url": {"url": part.url if part.url is not None else part.data_url()}}
    if isinstance(part, Document):
        text = part.text
        if text is not None:
            return {"type": "text", "text": f"{part.title}\n\n{text}" if part.title else text}
        return {"type": "file", "file": {"filename": part.title or "document.pdf", "file_data": part.data_url()}}
    return {"type": "input_audio", "input_audio": {"data": part.base64(), "format": audio_format(part)}}


def encode_response_format(fmt: ResponseFormat) -> dict[str, Any]:
    """``response_format`` on this wire: a ``json_schema`` format, its schema fitted to strict mode when strict.

    :raises ValueError: a strict schema with a field strict mode cannot carry (named in the message).
    """
    spec: dict[str, Any] = {
        "name": fmt.name,
        "schema": openai_strict_schema(fmt.schema) if fmt.strict else fmt.schema,
        "strict": fmt.strict,
    }
    if fmt.description:
        spec["description"] = fmt.description
    return {"type": "json_schema", "json_schema": spec}


def encode_tool_choice(choice: ToolChoice) -> Any:
    """``tool_choice`` on this wire: ``"auto"`` / ``"none"`` / ``"required"`` or a named function."""
    if choice.mode == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def strict_tool(option: Any, name: str) -> bool:
    """Whether the ``strict_tools`` vendor option (``True``, a tool's name or a collection of names) names ``name``."""
    if option is True:
        return True
    if isinstance(option, str):
        return option == name
    if isinstance(option, Iterable):
        return name in set(option)
    return False


# --- tool schemas as OpenAI takes them ---------------------------------------------------------------------------

# (id(parameters), strict) -> (parameters, the schema sent): the encoder runs per request, the tools' schemas are
# the same objects every time (a ToolSpec is frozen and holds its own copy).  The schema is kept in the value so
# its id cannot be reused meanwhile; a full table is cleared (tools are few: it fills only when they are rebuilt).
_FITTED: dict[tuple[int, bool], tuple[Mapping[str, Any], dict[str, Any]]] = {}
_FITTED_SIZE = 512
_FITTED_LOCK = threading.Lock()
_MAX_DEPTH = 64


def tool_parameters(spec: ToolSpec, strict: bool, *, wire: str, model: str | None) -> dict[str, Any]:
    """``spec``'s parameters as OpenAI's wires (Chat Completions, Responses, Azure) take them.

    An array with no ``items`` (a bare ``list``, ``set``, ``tuple`` or ``Sequence`` parameter; an MCP server's
    schema) is valid JSON Schema, but OpenAI refuses it with a 400 on every request ("array schema missing
    items"): it is sent with ``"items": {}`` (any element: the same meaning), at any depth.  A strict tool's
    schema is fitted to strict mode (:func:`~agentactors.providers._constrained_schema.openai_strict_schema`:
    every property required, an optional one nullable, every object closed) — the model may then send ``null``
    for an optional parameter, which the tool reads as omitted (:meth:`agentactors.tools.registry.Tool.validate`).
    Remembered per schema object; the spec itself is not changed (its tool validates against it).

    :raises UnsupportedSettingError: ``strict`` and a schema strict mode cannot carry (an open mapping such as
        ``dict[str, V]`` or ``**kwargs``, a tuple, a value of any type): ``strict_tools`` constrains what comes
        back, so the tool is refused before anything is sent rather than sent loose (``docs/settings.md``).
    """
    parameters = spec.parameters
    key = (id(parameters), strict)
    hit = _FITTED.get(key)
    if hit is not None and hit[0] is parameters:
        return hit[1]
    try:
        fitted = _strict_parameters(parameters) if strict else _with_items(parameters, 0)
    except ValueError as exc:
        raise UnsupportedSettingError(
            f"strict_tools: tool {spec.name!r} cannot be sent strict: {exc}; leave it out of strict_tools (a list "
            f"of the tools' names selects them) or change its parameters (model {model!r}); nothing was sent",
            provider=wire, model=model, setting="strict_tools",
        ) from None
    with _FITTED_LOCK:
        if len(_FITTED) >= _FITTED_SIZE:
            _FITTED.clear()
        _FITTED[key] = (parameters, fitted)
    return fitted


def _is_array(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


# Where a sub-schema sits in a schema: a map of schemas, a list of them, or one.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONES = ("items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames",
                "unevaluatedItems", "unevaluatedProperties")


def _with_items(node: Any, depth: int) -> Any:
    """``node`` with ``"items": {}`` on each array that has no ``items``: ``node`` itself when none lacks it.

    Copies only the path to a change, so a schema with nothing to fit (most) is sent as it is.  Deeper than
    64 levels it stops (the vendor judges the rest): a tool's schema is never that deep.
    """
    if not isinstance(node, Mapping) or depth > _MAX_DEPTH:
        return node
    out: dict[str, Any] | None = None
    if _is_array(node) and "items" not in node:
        out = {**node, "items": {}}
    for key in _SCHEMA_ONES:
        sub = node.get(key)
        if isinstance(sub, Mapping):
            fitted = _with_items(sub, depth + 1)
            if fitted is not sub:
                out = out if out is not None else dict(node)
                out[key] = fitted
    for key in _SCHEMA_LISTS:
        subs = node.get(key)
        if isinstance(subs, list):
            fitted_list = [_with_items(s, depth + 1) for s in subs]
            if any(f is not s for f, s in zip(fitted_list, subs, strict=True)):
                out = out if out is not None else dict(node)
                out[key] = fitted_list
    for key in _SCHEMA_MAPS:
        subs = node.get(key)
        if isinstance(subs, Mapping):
            fitted_map = {name: _with_items(s, depth + 1) for name, s in subs.items()}
            if any(fitted_map[name] is not s for name, s in subs.items()):
                out = out if out is not None else dict(node)
                out[key] = fitted_map
    return node if out is None else out


def _strict_parameters(parameters: dict[str, Any]) -> dict[str, Any]:
    """The schema fitted to strict mode, with every value's type named (strict mode's own rule).

    A schema strict mode takes already (every object closed, every property required: a pydantic-ai or
    hand-written strict schema) is sent as written, its ``$defs`` and ``$ref``\\ s kept (strict mode reads them).

    :raises ValueError: what strict mode cannot carry, named (see :func:`tool_parameters`).
    """
    fitted = openai_strict_schema(parameters)
    _check_typed(fitted, "")
    return parameters if fitted == inline_refs(parameters) else fitted


def _check_typed(node: Any, path: str) -> None:
    # Strict mode answers a schema node without a type ("schema must have a 'type' key") with a 400, and `{}`
    # (any value, as a bare list's elements or an Any parameter are) has none: no rewrite can name one.
    if not isinstance(node, Mapping):
        return
    where = path or "the parameters"
    if not any(k in node for k in ("type", "anyOf", "enum", "const")):
        raise ValueError(f"{where} takes a value of any type, and strict mode needs every value's type named; "
                         "annotate it (e.g. str, list[str])")
    if _is_array(node) and not isinstance(node.get("items"), Mapping):
        raise ValueError(f"{where} is an array with no element type (a bare list, set or tuple), and strict "
                         "mode needs the elements' type named; annotate it (e.g. list[str])")
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            _check_typed(sub, f"{path}.{name}" if path else str(name))
    if isinstance(node.get("items"), Mapping):
        _check_typed(node["items"], f"{path}[]")
    for key in ("anyOf", "allOf"):
        if isinstance(node.get(key), list):
            for sub in node[key]:
                _check_typed(sub, path)
