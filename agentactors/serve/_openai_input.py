"""A Chat Completions request body, read into what a run takes: the conversation and the settings.

Every way a body can be wrong raises :class:`BadRequest` naming the offending ``param`` (OpenAI's
error shape carries it), before any run starts.  Every field of OpenAI's request is decided one by one
(``docs/serve.md`` has the table), never dropped unread:

* a field that asks for a kind of answer is honoured or refused: ``response_format`` (a JSON answer,
  :class:`JsonFormat`), ``tool_choice`` / ``function_call`` naming a client's tool (which no run here can call),
  ``max_tokens`` past the limit; ``logprobs``, audio output, ``web_search_options``, ``moderation`` and a
  ``logit_bias`` ask for what no run gives (``unsupported_parameter`` / ``unsupported_value``);
* the sampling settings (``temperature``, ``top_p``, ``stop``, ``seed``, ``reasoning_effort``, the token limit)
  become the run's settings, each checked by its own bound and named when wrong;
* the tuning hints and the metadata no run reads (penalties, ``verbosity``, ``prediction``, ``user``,
  ``metadata``, ``store``, ``service_tier``, the prompt-cache hints) are checked for their type and size, and
  not used;
* a field OpenAI's API does not have is refused (``unknown_parameter``) unless the app was told to ignore it.

A ``response_format`` schema is the client's, so it is held to what it can make the server do before any run
starts: at most :data:`MAX_SCHEMA_CHARS` of JSON text, :data:`MAX_SCHEMA_DEPTH` levels deep and
:data:`MAX_SCHEMA_NODES` values once its ``$ref`` are inlined (a few kilobytes of ``$defs`` that refer to each
other twice over inline to billions), local references only, none recursive.  Whether it is a JSON Schema at all
is the output's validator's to say, when the agent is given it (:mod:`~._openai_format`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from ..messages import Message, ToolCall
from ..parts import Image, Part, Text
from ..settings import (
    ModelSettings,
    check_reasoning_effort,
    check_seed,
    check_stop,
    check_temperature,
    check_top_p,
)
from ..tools.json_refs import pointed_at

__all__ = [
    "CHAT_FIELDS",
    "MAX_METADATA_PAIRS",
    "MAX_OUTPUT_TOKENS",
    "MAX_SCHEMA_CHARS",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "MAX_STOP",
    "MAX_STOP_CHARS",
    "BadRequest",
    "ChatRequest",
    "JsonFormat",
    "read_chat_request",
]

#: The most JSON text a client's schema may have (what OpenAI's own SDK makes of a model is a few hundred).
MAX_SCHEMA_CHARS: Final = 100_000
#: The deepest a client's schema may nest (JSON levels: an object's property is two).
MAX_SCHEMA_DEPTH: Final = 48
#: The most values a client's schema may hold once its ``$ref`` are inlined.
MAX_SCHEMA_NODES: Final = 20_000
#: The most output tokens a request may ask for whatever the app's limit: more than any model writes, and past
#: what some wires carry (Gemini's ``maxOutputTokens`` is a 32-bit integer) — a vendor's 400, a 502 here.
MAX_OUTPUT_TOKENS: Final = 2**31 - 1

#: The most stop sequences a request may set (OpenAI's own limit: its API refuses a fifth; Gemini takes five).
MAX_STOP: Final = 4
#: The longest a stop sequence may be: a stop is a few characters, and each step of the run sends it again.
MAX_STOP_CHARS: Final = 1_000
#: ``metadata``: at most 16 pairs, keys of at most 64 characters, string values of at most 512 (OpenAI's rule).
MAX_METADATA_PAIRS: Final = 16
_METADATA_KEY_CHARS, _METADATA_VALUE_CHARS = 64, 512
#: The longest an identifier a client sends for its own bookkeeping may be (``user``, ``safety_identifier``,
#: ``prompt_cache_key``, ``service_tier``, ``prompt_cache_retention``): none is read, each is held to a size.
_ID_CHARS = 256
#: The most choices OpenAI's API takes (``n``): past it, its own range error; from 2 up, a run's one answer refuses it.
_MAX_N = 128

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # OpenAI's own rule for json_schema.name

#: The fields read into a run: the conversation, the answer's shape and the sampling settings.
_READ: Final = frozenset({
    "model", "messages", "stream", "stream_options", "tools", "functions", "tool_choice", "function_call",
    "response_format", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed",
    "reasoning_effort", "n",
})
#: The fields that ask for an answer no served run gives: refused unless at their "off" value.
_REFUSED: Final = frozenset({
    "logprobs", "top_logprobs", "modalities", "audio", "web_search_options", "moderation", "logit_bias",
})
#: The fields accepted, checked and not used: tuning hints no run takes, and the client's own bookkeeping.
_NOT_USED: Final = frozenset({
    "presence_penalty", "frequency_penalty", "verbosity", "prediction", "parallel_tool_calls", "user",
    "safety_identifier", "metadata", "store", "service_tier", "prompt_cache_key", "prompt_cache_retention",
    "prompt_cache_options",
})
#: Every field of OpenAI's Chat Completions request (``openai`` 3.63's ``CompletionCreateParams``): any other is
#: refused, unless the app names it in ``ignored_fields``.
CHAT_FIELDS: Final = _READ | _REFUSED | _NOT_USED


class BadRequest(Exception):
    """A request the app refuses with 400: ``message`` for the client, ``param`` the field at fault, ``code`` the
    error code OpenAI's own API gives for such a refusal (``invalid_type``, ``invalid_value``,
    ``decimal_above_max_value``, ``unsupported_value``, ... : docs/serve.md) — required, so no refusal goes without the
    code a client's error handling reads."""

    def __init__(self, message: str, param: str | None = None, *, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code


@attrs.frozen(slots=True)
class JsonFormat:
    """A JSON answer the client asked for (``response_format``): the schema (``{"type": "object"}`` for
    ``json_object``), its name, and the field a schema the output cannot take is refused as."""

    name: str
    schema: dict[str, Any]
    param: str = "response_format.json_schema.schema"


@attrs.frozen(slots=True)
class ChatRequest:
    """What a request asks for: which agent (``model``), on which conversation, streamed or not, in which shape
    (``response_format``: ``None`` for text)."""

    model: str
    messages: tuple[Message, ...]
    stream: bool = False
    include_usage: bool = False
    settings: ModelSettings | None = None
    new: tuple[Message, ...] = ()  # the messages after the last assistant or tool message: a session's turn
    response_format: JsonFormat | None = None
    #: ``(setting, field)``: the ``settings`` field each request field set — ``("max_tokens",
    #: "max_completion_tokens")`` — so a model's refusal of it is the client's 400 naming the field as sent.
    set_fields: tuple[tuple[str, str], ...] = ()

    def field_of(self, setting: str | None) -> str | None:
        """The request field that set the run's ``setting``; ``None`` when the request did not set it."""
        return next((field for name, field in self.set_fields if name == setting), None)


def read_chat_request(
    body: Mapping[str, Any],
    *,
    max_completion_tokens: int | None = None,
    ignored_fields: frozenset[str] = frozenset(),
) -> ChatRequest:
    """The request in ``body``.  :raises BadRequest: a field missing, of the wrong type or unsupported.

    ``max_completion_tokens``: the most output tokens a request may ask for (the app's limit; default, and
    never more than, :data:`MAX_OUTPUT_TOKENS`).  ``ignored_fields``: fields outside :data:`CHAT_FIELDS` (a
    compatible server's extensions a client sends, ``top_k``) the app takes and does not read; any other is refused.
    """
    model = body.get("model")
    if model is None or model == "":
        raise BadRequest("you must provide a model parameter (the name of an agent)", "model",
                         code="missing_required_parameter")
    if not isinstance(model, str):
        raise BadRequest("'model' must be a string (the name of an agent)", "model", code="invalid_type")
    raw = body.get("messages")
    if raw is None:
        raise BadRequest("Missing required parameter: 'messages'", "messages", code="missing_required_parameter")
    if not isinstance(raw, list):
        raise BadRequest("'messages' must be a non-empty array", "messages", code="invalid_type")
    if not raw:
        raise BadRequest("'messages' must be a non-empty array", "messages", code="empty_array")
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise BadRequest("'stream' must be a boolean", "stream", code="invalid_type")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise BadRequest("'stream_options' must be an object", "stream_options", code="invalid_type")
    include_usage = (options or {}).get("include_usage")
    if include_usage is not None and not isinstance(include_usage, bool):  # "no" is truthy: it asked for usage
        raise BadRequest("'stream_options.include_usage' must be a boolean", "stream_options", code="invalid_type")
    _check_known(body, ignored_fields)
    _check_refused(body)
    _check_ignored(body)
    _check_tools(body)
    response_format = read_format(body.get("response_format"))
    messages = conversation(raw)
    tail = raw[_after_last_answer(raw) :]
    settings, set_fields = _settings(body, max_completion_tokens)
    return ChatRequest(
        model=model,
        messages=messages,
        stream=bool(stream),
        include_usage=bool(include_usage),
        settings=settings,
        new=conversation(tail) if any(m.get("role") == "user" for m in tail) else (),
        response_format=response_format,
        set_fields=set_fields,
    )


def _check_known(body: Mapping[str, Any], ignored: frozenset[str]) -> None:
    """Refuse a field OpenAI's API does not have, as OpenAI does ("Unknown parameter"): a compatible server's
    extension (``top_k``, ``guided_json``) or a typo (``temprature``) taken and dropped would answer other than
    the client asked — the operator names those it is content to ignore (``openai_app(ignored_fields=)``)."""
    for field in body:
        if field not in CHAT_FIELDS and field not in ignored:
            shown = field[:64]
            raise BadRequest(
                f"Unknown parameter: {shown!r}: this server takes OpenAI's Chat Completions fields only",
                shown,
                code="unknown_parameter",
            )


def _unsupported(field: str, what: str, value: bool = False) -> BadRequest:
    return BadRequest(
        f"{'Unsupported value' if value else 'Unsupported parameter'}: '{field}': {what}",
        field,
        code="unsupported_value" if value else "unsupported_parameter",
    )


def _check_refused(body: Mapping[str, Any]) -> None:
    """Refuse what asks for an answer no run here gives — dropped, the client would read an answer other than the
    one it relies on: log probabilities (a run's answer carries none), audio output, a web-searched or moderated
    answer, a ``logit_bias`` (token ids of a tokenizer the client cannot know: the model name is an agent's).  Each
    at its "off" value (``logprobs: false``, ``modalities: ["text"]``, ``{}``, ``null``) asks for nothing: taken.
    """
    logprobs = body.get("logprobs")
    if logprobs is not None and not isinstance(logprobs, bool):
        raise BadRequest("'logprobs' must be a boolean", "logprobs", code="invalid_type")
    if logprobs:
        raise _unsupported("logprobs", "an agent's answer carries no log probabilities (send false or none)", True)
    top = body.get("top_logprobs")
    if top is not None:
        _integer_in(top, "top_logprobs", 0, 20)
    if top:
        raise _unsupported("top_logprobs", "an agent's answer carries no log probabilities (send 0 or none)")
    modalities = body.get("modalities")
    if modalities is not None:
        if not isinstance(modalities, list):
            raise BadRequest("'modalities' must be an array of 'text' and 'audio'", "modalities", code="invalid_type")
        if not all(m in ("text", "audio") for m in modalities):
            raise BadRequest("'modalities' must be an array of 'text' and 'audio'", "modalities", code="invalid_value")
        if "audio" in modalities:
            raise _unsupported("modalities", "an agent answers text only (send ['text'] or none)", True)
    for field, what in (
        ("audio", "an agent answers text only, never audio"),
        ("web_search_options", "an agent searches the web only with a tool of its own, which the server chose"),
        ("moderation", "this server runs no moderation model on the request or the answer"),
    ):
        if body.get(field) is not None:
            raise _unsupported(field, what)
    bias = body.get("logit_bias")
    if bias is not None and not isinstance(bias, dict):
        raise BadRequest("'logit_bias' must be an object of token ids to biases", "logit_bias", code="invalid_type")
    if bias:
        raise _unsupported(
            "logit_bias", "a model name here is an agent's, whose tokenizer a client cannot know (send {} or none)"
        )


def _check_ignored(body: Mapping[str, Any]) -> None:
    """The fields a run does not take, checked all the same: one it would misread is refused, not dropped.

    ``n``: a run gives one answer, so ``n`` > 1 answered with one choice would lose the rest without a word.
    The tuning hints — ``presence_penalty``, ``frequency_penalty``, ``verbosity``, ``prediction`` (a latency
    hint), ``parallel_tool_calls`` (about the client's tools, which are not offered) — no run takes: the answer
    is the same kind without them.  The client's bookkeeping — ``user``, ``safety_identifier`` (for OpenAI's
    abuse checks), ``metadata``, ``store`` (stored completions), ``service_tier``, the prompt-cache hints — is
    the client's with OpenAI, and nothing here keeps it.  Each is held to its type and a size, and a message
    naming one never repeats its value.
    """
    n = body.get("n")
    if n is not None:
        _integer_in(n, "n", 1, _MAX_N)  # OpenAI's own bounds: outside them, its codes
        if n != 1:
            raise BadRequest(
                "Unsupported value: 'n' must be 1: an agent's run gives one answer (send n requests for n answers)",
                "n",
                code="unsupported_value",
            )
    for field in ("user", "safety_identifier", "prompt_cache_key", "service_tier", "prompt_cache_retention"):
        value = body.get(field)
        if value is None:
            continue
        if not isinstance(value, str) or len(value) > _ID_CHARS:
            raise BadRequest(
                f"'{field}' must be a string of at most {_ID_CHARS} characters",
                field,
                code="invalid_type" if not isinstance(value, str) else "string_above_max_length",
            )
    for field in ("store", "parallel_tool_calls"):
        value = body.get(field)
        if value is not None and not isinstance(value, bool):
            raise BadRequest(f"'{field}' must be a boolean", field, code="invalid_type")
    for field in ("prediction", "prompt_cache_options"):
        value = body.get(field)
        if value is not None and not isinstance(value, dict):
            raise BadRequest(f"'{field}' must be an object", field, code="invalid_type")
    for field in ("presence_penalty", "frequency_penalty"):
        value = body.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadRequest(f"'{field}' must be a number from -2 to 2", field, code="invalid_type")
        if not -2 <= value <= 2:  # NaN: False
            raise BadRequest(f"'{field}' must be a number from -2 to 2", field, code=_range_code(value, -2, 2))
    verbosity = body.get("verbosity")
    if verbosity is not None and verbosity not in ("low", "medium", "high"):
        raise BadRequest(
            "'verbosity' must be 'low', 'medium' or 'high'",
            "verbosity",
            code="invalid_value" if isinstance(verbosity, str) else "invalid_type",
        )
    _check_metadata(body.get("metadata"))


def _check_metadata(metadata: Any) -> None:
    """``metadata`` as OpenAI takes it: at most 16 pairs of short strings (never echoed: it may hold anything)."""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise BadRequest("'metadata' must be an object of strings", "metadata", code="invalid_type")
    if len(metadata) > MAX_METADATA_PAIRS:
        raise BadRequest(
            f"'metadata' holds {len(metadata)} pairs: at most {MAX_METADATA_PAIRS} are taken",
            "metadata",
            code="object_above_max_properties",
        )
    shape = (
        f"'metadata' keys must be at most {_METADATA_KEY_CHARS} characters and its values strings of at most "
        f"{_METADATA_VALUE_CHARS}"
    )
    for key, value in metadata.items():
        if len(key) > _METADATA_KEY_CHARS:
            raise BadRequest(shape, "metadata", code="property_name_above_max_length")
        if not isinstance(value, str):
            raise BadRequest(shape, "metadata", code="invalid_type")
        if len(value) > _METADATA_VALUE_CHARS:
            raise BadRequest(shape, "metadata", code="string_above_max_length")


def _check_tools(body: Mapping[str, Any]) -> None:
    """A client's ``tools`` (and the older ``functions``) are not offered to the agent — its own run here, and
    nothing the server runs could call the client's — so ``tool_choice`` (``function_call``) may leave the choice
    to the model (``auto``, ``none``, absent), which is answered without them, as documented.  One that *requires*
    a client's tool (``required``, a named function, ``allowed_tools`` in ``required`` mode) asks for an answer no
    run here gives: a 400, not an answer that silently is not the call the client waits for.
    """
    for field in ("tools", "functions"):
        value = body.get(field)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, dict) for v in value)):
            raise BadRequest(f"'{field}' must be an array of objects", field, code="invalid_type")
    for field, free in (("tool_choice", ("auto", "none", "required")), ("function_call", ("auto", "none"))):
        choice = body.get(field)
        if choice is None:
            continue
        if isinstance(choice, str):
            if choice not in free:
                raise BadRequest(
                    f"'{field}' must be one of {', '.join(map(repr, free))} or an object", field, code="invalid_value"
                )
            if choice != "required":
                continue
        elif not isinstance(choice, dict):
            raise BadRequest(f"'{field}' must be a string or an object", field, code="invalid_type")
        elif field == "tool_choice" and _choice_object(choice) == "auto":
            continue
        raise BadRequest(
            f"'{field}' requires a call of the client's own tools, which an agent served here cannot make: its own "
            "tools run in the server, and the client gets its answer (send tool_choice 'auto' or 'none', or none)",
            field,
            code="unsupported_tool_choice",
        )


#: The objects ``tool_choice`` may be, by ``type``: each names its content under the same key.
_CHOICE_TYPES = ("function", "allowed_tools", "custom")


def _choice_object(choice: Mapping[str, Any]) -> str | None:
    """A ``tool_choice`` object checked for OpenAI's shapes; its ``allowed_tools`` mode (``"auto"`` leaves the
    choice to the model), else ``None`` (one that names a tool: required).

    Every value is type-checked before it is read: each comes from the client, and a ``.get`` on its string or
    list would be an ``AttributeError`` out of the app — a 500 with a traceback, not the client's 400.

    :raises BadRequest: a ``type`` that is not one of :data:`_CHOICE_TYPES`, or its content not an object of
        OpenAI's shape (``param`` names the value, ``code`` says how it is wrong).
    """
    kind = choice.get("type")
    if kind is None:
        raise BadRequest(
            f"'tool_choice.type' is required: one of {', '.join(map(repr, _CHOICE_TYPES))}", "tool_choice.type",
            code="missing_required_parameter",
        )
    if not isinstance(kind, str) or kind not in _CHOICE_TYPES:
        raise BadRequest(
            f"'tool_choice.type' must be one of {', '.join(map(repr, _CHOICE_TYPES))}", "tool_choice.type",
            code="invalid_value" if isinstance(kind, str) else "invalid_type",
        )
    where = f"tool_choice.{kind}"
    content = choice.get(kind)
    if not isinstance(content, dict):
        raise BadRequest(
            f"'{where}' must be an object", where,
            code="missing_required_parameter" if content is None else "invalid_type",
        )
    if kind != "allowed_tools":  # {"name": ...}: a tool the client requires
        name = content.get("name")
        if not isinstance(name, str):
            raise BadRequest(
                f"'{where}.name' must be a string", f"{where}.name",
                code="missing_required_parameter" if name is None else "invalid_type",
            )
        return None
    mode = content.get("mode")
    if mode not in ("auto", "required"):
        raise BadRequest(
            f"'{where}.mode' must be 'auto' or 'required'", f"{where}.mode",
            code="missing_required_parameter" if mode is None
            else "invalid_value" if isinstance(mode, str) else "invalid_type",
        )
    tools = content.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        raise BadRequest(f"'{where}.tools' must be an array of objects", f"{where}.tools", code="invalid_type")
    return str(mode)


def read_format(raw: Any) -> JsonFormat | None:
    """The JSON answer ``response_format`` asks for; ``None`` for text (absent, ``null``, ``{"type": "text"}``).

    :raises BadRequest: not one of OpenAI's shapes, or a schema past the bounds (the module's docstring).
    """
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise BadRequest(
            "'response_format' must be an object: {'type': 'text' | 'json_object' | 'json_schema'}",
            "response_format",
            code="invalid_type",
        )
    kind = raw.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return JsonFormat("json_object", {"type": "object"}, "response_format")
    if kind != "json_schema":
        raise BadRequest(
            "'response_format.type' must be 'text', 'json_object' or 'json_schema'",
            "response_format.type",
            code="invalid_value",
        )
    spec = raw.get("json_schema")
    where = "response_format.json_schema"
    if not isinstance(spec, dict):
        raise BadRequest(
            f"'{where}' must be an object: {{'name', 'schema', 'strict'?, 'description'?}}",
            where,
            code="missing_required_parameter" if spec is None else "invalid_type",
        )
    name = spec.get("name")
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise BadRequest(
            f"'{where}.name' must be 1 to 64 letters, digits, '_' or '-'",
            f"{where}.name",
            code="missing_required_parameter" if name is None else "invalid_value",
        )
    strict = spec.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise BadRequest(f"'{where}.strict' must be a boolean", f"{where}.strict", code="invalid_type")
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        raise BadRequest(f"'{where}.description' must be a string", f"{where}.description", code="invalid_type")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        # OpenAI reads a missing schema as "any JSON": said here by its own name, json_object.
        raise BadRequest(
            f"'{where}.schema' must be a JSON Schema object (for any JSON object, send {{'type': 'json_object'}})",
            f"{where}.schema",
            code="missing_required_parameter" if schema is None else "invalid_type",
        )
    _check_bounds(schema, f"{where}.schema")
    if description and "description" not in schema:
        schema = {**schema, "description": description}
    return JsonFormat(name, schema)


def _check_bounds(schema: dict[str, Any], where: str) -> None:
    """Refuse a schema past :data:`MAX_SCHEMA_CHARS`, :data:`MAX_SCHEMA_DEPTH` or :data:`MAX_SCHEMA_NODES`
    (inlined), or with a ``$ref`` that is remote, dangling or recursive — before anything inlines it."""
    size = len(json.dumps(schema, ensure_ascii=False))
    if size > MAX_SCHEMA_CHARS:
        raise BadRequest(
            f"'{where}' is {size} characters of JSON: at most {MAX_SCHEMA_CHARS} are taken",
            where,
            code="invalid_json_schema",
        )
    try:
        nodes = _Inlined(schema).count(schema, (), 0)
    except _SchemaRefused as exc:
        raise BadRequest(f"'{where}': {exc}", where, code="invalid_json_schema") from None
    if nodes > MAX_SCHEMA_NODES:
        raise BadRequest(
            f"'{where}' holds more than {MAX_SCHEMA_NODES} values once its $ref are inlined",
            where,
            code="invalid_json_schema",
        )


class _SchemaRefused(Exception):
    """A schema past a bound, said by :class:`_Inlined` (made a :class:`BadRequest` naming the field)."""


class _Inlined:
    """Counts the values a schema holds with every ``$ref`` inlined, without inlining it: each reference's count
    is made once (memoised), so ``$defs`` that refer to each other twice over cost their own size, not 2**n."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.counted: dict[str, int] = {}

    def count(self, node: Any, refs: tuple[str, ...], depth: int) -> int:
        if depth > MAX_SCHEMA_DEPTH:
            raise _SchemaRefused(f"it nests deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(node, list):
            return 1 + sum(self.count(item, refs, depth + 1) for item in node)
        if not isinstance(node, dict):
            return 1
        total = 1
        ref = node.get("$ref")
        if isinstance(ref, str):
            total += self.referenced(ref, refs, depth)
        for key, value in node.items():
            if key not in ("$ref", "$defs", "definitions"):
                total += self.count(value, refs, depth + 1)
            if total > MAX_SCHEMA_NODES:  # past the bound already: the rest need not be counted
                return total
        return total

    def referenced(self, ref: str, refs: tuple[str, ...], depth: int) -> int:
        if ref in refs:
            raise _SchemaRefused(f"$ref {ref[:100]!r} refers to itself: a recursive schema cannot be answered")
        known = self.counted.get(ref)
        if known is not None:
            return known
        if not ref.startswith("#/"):
            raise _SchemaRefused(f"$ref {ref[:100]!r} is not a local reference ('#/...'): nothing is fetched")
        try:
            target = pointed_at(self.root, ref)
        except LookupError:
            raise _SchemaRefused(f"$ref {ref[:100]!r} points at nothing in the schema") from None
        counted = self.counted[ref] = self.count(target, (*refs, ref), depth + 1)
        return counted


def _after_last_answer(raw: Sequence[Any]) -> int:
    """The index after the last assistant or tool message (0 when there is none)."""
    for index in range(len(raw) - 1, -1, -1):
        if raw[index].get("role") in ("assistant", "tool"):
            return index + 1
    return 0


def conversation(raw: Sequence[Any]) -> tuple[Message, ...]:
    """The request's messages as a run's conversation.

    System and developer messages, wherever they stand, become one leading system message: the agent
    appends it to its own system prompt (a run merges a leading system message after the agent's).  A tool
    message answers a call an earlier assistant message made, or is refused (as OpenAI's API refuses it): run
    anyway, the vendor would refuse the conversation, and the client's mistake would come back as a 502.
    """
    system: list[str] = []
    messages: list[Message] = []
    called: set[str] = set()  # the ids of the calls the assistant messages so far made
    for index, item in enumerate(raw):
        param = f"messages[{index}]"
        if not isinstance(item, dict):
            raise BadRequest(f"{param} must be an object", param, code="invalid_type")
        role = item.get("role")
        if role in ("system", "developer"):
            system.append(_text(item.get("content"), f"{param}.content"))
        elif role == "user":
            messages.append(_user(item.get("content"), f"{param}.content"))
        elif role == "assistant":
            messages.append(_assistant(item, param))
            called.update(call.id for call in messages[-1].tool_calls)
        elif role == "tool":
            call_id = item.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise BadRequest(
                    f"{param}.tool_call_id must be a non-empty string",
                    f"{param}.tool_call_id",
                    code="missing_required_parameter" if not call_id else "invalid_type",
                )
            if call_id not in called:
                raise BadRequest(
                    f"{param} (role 'tool') must answer a call of an earlier assistant message's 'tool_calls'; "
                    f"none made {call_id[:100]!r}",
                    f"{param}.tool_call_id",
                    code="invalid_value",
                )
            messages.append(Message.tool(call_id, _text(item.get("content"), f"{param}.content")))
        else:
            raise BadRequest(
                f"{param}.role must be one of 'system', 'developer', 'user', 'assistant', 'tool'",
                f"{param}.role",
                code="invalid_value",
            )
    if not messages:
        raise BadRequest("'messages' must hold at least one user message", "messages", code="invalid_value")
    head = (Message.system("\n\n".join(t for t in system if t)),) if any(system) else ()
    return head + tuple(messages)


def _text(content: Any, param: str, *, refusals: bool = False) -> str:
    """Text content: a string, or an array of text parts (joined); ``refusals``: refusal parts too (an assistant's)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for i, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            field = "refusal" if refusals and kind == "refusal" else "text"
            if kind != field or not isinstance(part.get(field), str):
                also = " or a refusal part: {'type': 'refusal', 'refusal': ...}" if refusals else ""
                raise BadRequest(
                    f"{param}[{i}] must be a text part: {{'type': 'text', 'text': ...}}{also}", f"{param}[{i}]",
                    code="invalid_value",
                )
            texts.append(part[field])
        return "\n".join(texts)
    raise BadRequest(f"{param} must be a string or an array of content parts", param, code="invalid_type")


def _user(content: Any, param: str) -> Message:
    if isinstance(content, str):
        return Message.user(content)
    if not isinstance(content, list):
        raise BadRequest(f"{param} must be a string or an array of content parts", param, code="invalid_type")
    parts: list[Part] = []
    for i, part in enumerate(content):
        where = f"{param}[{i}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(Text(part["text"]))
        elif kind == "image_url":
            parts.append(_image(part.get("image_url"), where))
        else:
            raise BadRequest(f"{where} must be a 'text' or 'image_url' part", where, code="invalid_value")
    return Message.user(parts) if parts else Message.user("")


def _image(value: Any, param: str) -> Image:
    url = value.get("url") if isinstance(value, dict) else value
    if not isinstance(url, str) or not url:
        raise BadRequest(
            f"{param}.image_url.url must be a URL or a data: URL", f"{param}.image_url", code="invalid_value"
        )
    try:
        return Image(url=url)
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"{param}.image_url: {exc}", f"{param}.image_url", code="invalid_value") from None


def _assistant(item: Mapping[str, Any], param: str) -> Message:
    """An assistant message of the history.  Its refusal — the ``refusal`` field OpenAI answers with instead of
    ``content``, or a content part of type ``"refusal"`` — is its text: what the model said (a client echoes the
    SDK's message back as it got it)."""
    content = item.get("content")
    text = _text(content, f"{param}.content", refusals=True)
    refusal = item.get("refusal")
    if not text and isinstance(refusal, str):
        text = refusal
    raw_calls = item.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise BadRequest(f"{param}.tool_calls must be an array", f"{param}.tool_calls", code="invalid_type")
    calls = [_tool_call(c, f"{param}.tool_calls[{i}]") for i, c in enumerate(raw_calls)]
    return Message.assistant(text, calls)


def _tool_call(value: Any, param: str) -> ToolCall:
    function = value.get("function") if isinstance(value, dict) else None
    call_id = value.get("id") if isinstance(value, dict) else None
    if not isinstance(function, dict) or not isinstance(call_id, str) or not isinstance(function.get("name"), str):
        raise BadRequest(
            f"{param} must be {{'id', 'type': 'function', 'function': {{'name', 'arguments'}}}}", param,
            code="invalid_value",
        )
    raw = function.get("arguments") or "{}"
    if not isinstance(raw, str):
        raise BadRequest(
            f"{param}.function.arguments must be a JSON string", f"{param}.function.arguments", code="invalid_type"
        )
    if not function["name"]:
        raise BadRequest(
            f"{param}.function.name must be a non-empty string", f"{param}.function.name", code="invalid_value"
        )
    # Parsed as a model's arguments are (within the library's JSON policy): text that is not a JSON object
    # is kept, marked "unparseable", as the call the client says its assistant made.
    return ToolCall.from_raw(call_id, function["name"], raw)


def _settings(
    body: Mapping[str, Any], max_completion_tokens: int | None = None
) -> tuple[ModelSettings | None, tuple[tuple[str, str], ...]]:
    """The sampling fields the request sets, as settings that win over the agent's for this run, and which
    setting each field set.  Each is checked by its own bound, so a refusal names the field at fault."""
    fields: dict[str, Any] = {}
    for key in ("temperature", "top_p"):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadRequest(f"'{key}' must be a number", key, code="invalid_type")
        try:
            number = float(value)
        except OverflowError:  # an integer beyond any float: JSON has no limit on its digits
            raise BadRequest(f"'{key}' must be a finite number", key, code=_range_code(value, 0, 2)) from None
        if key == "temperature":
            _checked(check_temperature, number, key, (0.0, 2.0))
        else:
            _checked(check_top_p, number, key, (0.0, 1.0))
        fields[key] = number
    seed = body.get("seed")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise BadRequest("'seed' must be an integer", "seed", code="invalid_type")
        _checked(check_seed, seed, "seed", (-(2**63), 2**63 - 1), "integer")
        fields["seed"] = seed
    effort = body.get("reasoning_effort")
    if effort is not None:
        _checked(check_reasoning_effort, effort, "reasoning_effort")
        fields["reasoning_effort"] = effort
    stop = _stop(body.get("stop"))
    if stop:  # an empty list asks for no stop of the client's own, as OpenAI reads it: the agent's stay
        fields["stop"] = stop
    set_fields = [(name, name) for name in fields]
    limit = _max_tokens(body, max_completion_tokens)
    if limit is not None:
        fields["max_tokens"] = limit
        set_fields.append(
            ("max_tokens", "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens")
        )
    return (ModelSettings(**fields) if fields else None), tuple(set_fields)


def _checked(
    check: Any, value: Any, field: str, bounds: tuple[float, float] | None = None, kind: str = "decimal"
) -> None:
    """``check(value)``, its refusal the client's 400 naming ``field``: a number outside ``bounds`` with OpenAI's
    code for its side (``decimal_above_max_value``, ``integer_below_min_value``, ...), else ``invalid_value``."""
    try:
        check(value)
    except (TypeError, ValueError) as exc:  # the message repeats the value: a client's string may be long
        code = "invalid_value" if bounds is None else _range_code(value, *bounds, kind=kind)
        code = "invalid_type" if isinstance(exc, TypeError) else code
        raise BadRequest(f"'{field}': {str(exc)[:300]}", field, code=code) from None


def _range_code(value: Any, low: float, high: float, *, kind: str = "decimal") -> str:
    """OpenAI's code for a number refused by its bounds: which side it fell on (``invalid_value``: neither, a NaN)."""
    if value < low:
        return f"{kind}_below_min_value"
    if value > high:
        return f"{kind}_above_max_value"
    return "invalid_value"


def _integer_in(value: Any, field: str, low: int, high: int) -> None:
    """``value`` an integer from ``low`` to ``high``, or the 400 with OpenAI's code for what it is instead."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"'{field}' must be an integer from {low} to {high}", field, code="invalid_type")
    if not low <= value <= high:
        code = _range_code(value, low, high, kind="integer")
        raise BadRequest(f"'{field}' must be an integer from {low} to {high}", field, code=code)


def _stop(stop: Any) -> tuple[str, ...]:
    """``stop``: a string or at most :data:`MAX_STOP` of them, each 1 to :data:`MAX_STOP_CHARS` characters."""
    if stop is None:
        return ()
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise BadRequest("'stop' must be a string or an array of strings", "stop", code="invalid_type")
    if len(stop) > MAX_STOP:
        raise BadRequest(
            f"'stop' holds {len(stop)} sequences: at most {MAX_STOP} are taken", "stop", code="array_above_max_length"
        )
    if any(len(s) > MAX_STOP_CHARS for s in stop):
        raise BadRequest(
            f"each 'stop' sequence must be at most {MAX_STOP_CHARS} characters", "stop", code="string_above_max_length"
        )
    _checked(check_stop, tuple(stop), "stop")
    return tuple(stop)


def _max_tokens(body: Mapping[str, Any], bound: int | None) -> int | None:
    """The output tokens the request asks for at most: ``max_completion_tokens``, else the older ``max_tokens``
    (a ``null`` one says nothing), held to the app's ``bound`` and :data:`MAX_OUTPUT_TOKENS` — past it, a 400
    naming the field as the client sent it, before any model call (the vendor's own 400 would be a 502 here).
    """
    field = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    limit = body.get(field)
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise BadRequest(f"'{field}' must be a positive integer", field, code="invalid_type")
    if limit < 1:
        raise BadRequest(f"'{field}' must be a positive integer", field, code="integer_below_min_value")
    most = min(bound, MAX_OUTPUT_TOKENS) if bound is not None else MAX_OUTPUT_TOKENS
    if limit > most:
        raise BadRequest(
            f"'{field}' is too large: {limit}; this model writes at most {most} completion tokens",
            field,
            code="invalid_value",
        )
    return limit
