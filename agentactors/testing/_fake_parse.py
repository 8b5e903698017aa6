"""The fake vendor's reading of incoming requests: which wire, which model, and a neutral conversation.

Independent of the client codecs on purpose.  In strict mode a request that the
real vendor would reject with a 400 is rejected here too, with the vendor's
message, so a codec bug shows up in the integration tests instead of in
production.  The checks are conservative: each one mirrors a documented (or
recorded) rejection of the real service, nothing stricter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from ._fake_bedrock import bedrock_route, parse_bedrock, thinking_turn_problem
from ._fake_media import (
    anthropic_block_part,
    anthropic_settings,
    gemini_part,
    gemini_settings,
    openai_content_parts,
    openai_settings,
    openai_type_problem,
)
from ._fake_script import Conversation, OfferedTool, SeenPart, SeenToolCall, SeenToolResult
from ._fake_vertex import vertex_anthropic_body, vertex_route

__all__ = ["ParsedRequest", "WireRejection", "parse_request", "route", "too_long"]

_GEMINI_PATH = re.compile(r"^/v1(?:beta|alpha)?/models/(?P<model>[^/:]+(?:/[^/:]+)?):(?P<method>[A-Za-z]+)$")
_OPENAI_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_ANTHROPIC_PATHS = frozenset({"/v1/messages"})

# Keys of Gemini's OpenAPI-subset ``Schema`` message; anything else in ``parameters`` is a 400.
_GEMINI_SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
_GEMINI_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null", "type_unspecified"})
_FORMAT_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# Gemini models before 3 answer tools beside a JSON response (responseMimeType application/json) with a 400.
_GEMINI_MAJOR = re.compile(r"gemini-(\d+)")
_GEMINI_OLD_ALIASES = ("gemini-pro", "gemini-exp")


class WireRejection(Exception):
    """The request is one the real vendor rejects; the app answers with this status and message.

    Not an :class:`~agentactors.errors.AgentActorsError`: the fake vendor turns it into an HTTP answer, and it
    never reaches a user of the library.
    """

    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code  # the vendor's error code, when it answers with one (``string_above_max_length``)
        self.param = param  # the parameter it names (``messages[1].tool_calls[0].id``)


@attrs.frozen(slots=True)
class ParsedRequest:
    wire: str
    model: str | None
    stream: bool
    conversation: Conversation


def route(method: str, path: str) -> tuple[str, str | None, bool | None] | None:
    """``(wire, model from the path, stream from the path)`` for a vendor endpoint, else ``None``."""
    if method != "POST":
        return None
    cloud = bedrock_route(method, path) or vertex_route(method, path)  # Bedrock Converse, Vertex AI
    if cloud is not None:
        return cloud
    if path in _OPENAI_PATHS:
        return "openai", None, None
    if path in _ANTHROPIC_PATHS:
        return "anthropic", None, None
    m = _GEMINI_PATH.match(path)
    if m and m.group("method") in ("generateContent", "streamGenerateContent"):
        model = m.group("model")
        return "gemini", model.removeprefix("models/"), m.group("method") == "streamGenerateContent"
    return None


def parse_request(
    wire: str,
    body: Any,
    headers: Mapping[str, str],
    *,
    path_model: str | None,
    path_stream: bool | None,
    strict: bool,
) -> ParsedRequest:
    """Read ``body`` as the given wire.

    Raises :class:`WireRejection` (strict mode) for a request the vendor rejects.
    """
    if not isinstance(body, dict):
        raise WireRejection(400, "the request body must be a JSON object")
    if wire == "openai":
        return _openai(body, strict)
    if wire == "bedrock":
        conversation = parse_bedrock(body, path_model or "", _failer(strict))
        return ParsedRequest(wire, path_model, bool(path_stream), conversation)
    if wire == "anthropic":
        if path_model is not None:  # Claude on Vertex AI: the model in the path, the version in the body
            body, headers = vertex_anthropic_body(body, headers, path_model, _failer(strict))
        return _anthropic(body, headers, strict)
    return _gemini(body, path_model, bool(path_stream), strict)


# --- helpers ------------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    """Text of a content value: a string, or a list of text parts/blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
            elif isinstance(part, str):
                out.append(part)
        return "".join(out)
    return ""


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _reject(strict: bool, status: int, message: str, *, code: str | None = None, param: str | None = None) -> None:
    if strict:
        raise WireRejection(status, message, code=code, param=param)


def too_long(strict: bool, param: str, value: str, cap: int) -> None:
    """OpenAI's answer to a string over its cap (a call id over 40 characters on Chat Completions, 64 on
    Responses): a 400 ``string_above_max_length`` naming the parameter."""
    _reject(strict, 400, f"Invalid '{param}': string too long. Expected a string with maximum length {cap}, but got "
            f"a string with length {len(value)} instead.", code="string_above_max_length", param=param)


def _failer(strict: bool) -> Callable[[int, str], None]:
    """``_reject`` bound to the mode, for the media and settings readers."""

    def fail(status: int, message: str) -> None:
        _reject(strict, status, message)

    return fail


# --- OpenAI chat completions --------------------------------------------------------------------

#: The longest call id Chat Completions takes (``tool_calls[j].id``, ``tool_call_id``).
_MAX_CHAT_CALL_ID = 40


def _openai(body: dict[str, Any], strict: bool) -> ParsedRequest:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        _reject(strict, 400, "you must provide a model parameter")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        _reject(strict, 400, "[] is too short - 'messages'")
        messages = messages if isinstance(messages, list) else []
    stream = body.get("stream") is True
    tools_raw = body.get("tools")
    for problem in (
        openai_type_problem("stream", body.get("stream"), "a boolean", bool, type(None)),
        openai_type_problem("tools", tools_raw, "an array of objects", list, type(None)),
        openai_type_problem("stream_options", body.get("stream_options"), "an object", dict, type(None)),
        *(_openai_token_limit_problem(key, body.get(key)) for key in ("max_tokens", "max_completion_tokens")),
    ):
        if problem is not None:
            _reject(strict, 400, problem)
    tools: list[OfferedTool] = []
    for i, t in enumerate(tools_raw if isinstance(tools_raw, list) else []):
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            _reject(strict, 400, f"Missing required parameter: 'tools[{i}].function'.")
            continue
        problem = _openai_tool_problem(i, t, fn) if strict else None
        if problem is not None:
            _reject(strict, 400, problem)
        params = fn.get("parameters")
        schema = params if isinstance(params, dict) else {}
        tools.append(OfferedTool(fn["name"], str(fn.get("description") or ""), schema))
    if strict and "parallel_tool_calls" in body and not tools:
        raise WireRejection(
            400,
            "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are "
            "specified.",
        )
    if strict and "stream_options" in body and not stream:
        raise WireRejection(400, "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
    choice, choice_name = _openai_choice(body.get("tool_choice"), tools, strict)

    fail = _failer(strict)
    settings = openai_settings(body, fail)
    parts: list[SeenPart] = []
    system: list[str] = []
    last_user = ""
    calls: list[SeenToolCall] = []
    results: list[SeenToolResult] = []
    pending: dict[str, str] = {}  # call id -> name, awaiting a tool message
    names_by_id: dict[str, str] = {}
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            _reject(strict, 400, f"Invalid type for 'messages[{i}]': expected an object.")
            continue
        role = m.get("role")
        if role != "tool" and pending:
            _reject(strict, 400, _openai_unanswered(pending))
            pending = {}
        if role in ("system", "developer", "user", "tool") and "content" not in m:
            _reject(strict, 400, f"Missing required parameter: 'messages[{i}].content'.")
        elif role in ("system", "developer", "user", "tool", "assistant"):
            problem = openai_type_problem(f"messages[{i}].content", m.get("content"),
                                          "one of a string or array of objects", str, list,
                                          *((type(None),) if role == "assistant" else ()))
            if problem is not None:
                _reject(strict, 400, problem)
        if role in ("system", "developer"):
            system.append(_text_of(m.get("content")))
        elif role == "user":
            last_user = _text_of(m.get("content"))
            parts.extend(openai_content_parts(m.get("content"), where=f"messages[{i}]", role="user", fail=fail))
        elif role == "assistant":
            tcs = m.get("tool_calls")
            problem = openai_type_problem(f"messages[{i}].tool_calls", tcs, "an array of objects", list, type(None))
            if problem is not None:
                _reject(strict, 400, problem)
            if m.get("content") is None and not tcs:
                _reject(strict, 400, f"Invalid value for 'messages[{i}].content': expected a string, got null.")
            for j, tc in enumerate(tcs if isinstance(tcs, list) else []):
                fn = tc.get("function") if isinstance(tc, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    _reject(strict, 400, f"Missing required parameter: 'messages[{i}].tool_calls[0].function'.")
                    continue
                if not isinstance(fn.get("arguments"), str):
                    _reject(strict, 400, f"Invalid type for 'messages[{i}].tool_calls[0].function.arguments'.")
                call_id = tc.get("id") if isinstance(tc.get("id"), str) else None
                if call_id is not None and len(call_id) > _MAX_CHAT_CALL_ID:
                    too_long(strict, f"messages[{i}].tool_calls[{j}].id", call_id, _MAX_CHAT_CALL_ID)
                calls.append(SeenToolCall(call_id, fn["name"], _loads(fn.get("arguments"))))
                if call_id is not None:
                    pending[call_id] = fn["name"]
                    names_by_id[call_id] = fn["name"]
        elif role == "tool":
            call_id = m.get("tool_call_id")
            if isinstance(call_id, str) and len(call_id) > _MAX_CHAT_CALL_ID:
                too_long(strict, f"messages[{i}].tool_call_id", call_id, _MAX_CHAT_CALL_ID)
            if not isinstance(call_id, str) or call_id not in pending:
                _reject(
                    strict,
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'.",
                )
            if isinstance(call_id, str):
                pending.pop(call_id, None)
            cid = call_id if isinstance(call_id, str) else None
            results.append(SeenToolResult(cid, names_by_id.get(cid or ""), _text_of(m.get("content"))))
            parts.extend(openai_content_parts(m.get("content"), where=f"messages[{i}]", role="tool", fail=fail))
        else:
            _reject(strict, 400, f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
                    "'tool', 'function' and 'developer'.")
    if pending:
        _reject(strict, 400, _openai_unanswered(pending))
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    options = body.get("stream_options")
    response_format = _openai_response_format(body.get("response_format"), strict)
    conv = Conversation(
        system="\n".join(system),
        last_user_text=last_user,
        message_count=len(messages),
        tools=tuple(tools),
        tool_choice=choice,
        tool_choice_name=choice_name,
        tool_calls=tuple(calls),
        tool_results=tuple(results),
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        include_usage=isinstance(options, dict) and options.get("include_usage") is True,
        parts=tuple(parts),
        settings=settings,
        response_format=response_format,
    )
    return ParsedRequest("openai", model if isinstance(model, str) else None, stream, conv)


def _openai_tool_problem(i: int, tool: dict[str, Any], fn: dict[str, Any]) -> str | None:
    """What OpenAI refuses in a ``tools`` entry that has a ``function`` (its ``type``, the function's fields)."""
    kind = tool.get("type")
    if kind is None:
        return f"Missing required parameter: 'tools[{i}].type'."
    if kind != "function":
        return f"Invalid value: '{kind}'. Supported values are: 'function' and 'custom'."
    return (
        openai_type_problem(f"tools[{i}].function.description", fn.get("description"), "a string", str)
        if "description" in fn else None
    ) or (
        openai_type_problem(f"tools[{i}].function.parameters", fn.get("parameters"), "an object", dict)
        if "parameters" in fn else None
    ) or (
        openai_type_problem(f"tools[{i}].function.strict", fn.get("strict"), "a boolean", bool, type(None))
    )


def _openai_token_limit_problem(key: str, value: Any) -> str | None:
    problem = openai_type_problem(key, value, "an integer", int, type(None))
    if problem is None and isinstance(value, int) and value < 1:
        problem = f"Invalid '{key}': integer below minimum value. Expected a value >= 1, but got {value} instead."
    return problem


def _openai_response_format(value: Any, strict: bool) -> dict[str, Any] | None:
    """``response_format`` read as OpenAI reads it (``text`` / ``json_object`` / ``json_schema``)."""
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        _reject(strict, 400, "Invalid value for 'response_format.type': supported values are 'text', "
                "'json_object' and 'json_schema'.")
        return None
    if kind != "json_schema":
        return None
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        _reject(strict, 400, "Missing required parameter: 'response_format.json_schema'.")
        return None
    name = spec.get("name")
    if not isinstance(name, str) or not _FORMAT_NAME.match(name):
        _reject(strict, 400, "Invalid 'response_format.json_schema.name': string does not match pattern. Expected "
                "a string that matches the pattern '^[a-zA-Z0-9_-]+$'.")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        _reject(strict, 400, "Invalid type for 'response_format.json_schema.schema': expected an object.")
        schema = {}
    if spec.get("strict") is True:
        problem = _openai_strict_problem(schema, ())
        if problem:
            _reject(strict, 400, f"Invalid schema for response_format '{name}': {problem}")
    return {"name": name, "schema": schema, "strict": spec.get("strict") is True}


def _openai_strict_problem(schema: Any, where: tuple[str, ...]) -> str | None:
    """The first rule of OpenAI's strict mode ``schema`` breaks (its own wording), or ``None``."""
    context = f"In context={where!r}, "
    if not isinstance(schema, dict):
        return None
    if not where and schema.get("type") != "object":
        return f"{context}schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{schema.get('type')}\"'."
    kinds = schema.get("type")
    if kinds == "object" or (isinstance(kinds, list) and "object" in kinds):
        if schema.get("additionalProperties") is not False:
            return f"{context}'additionalProperties' is required to be supplied and to be false."
        properties = schema.get("properties") or {}
        required = schema.get("required") or []
        missing = [k for k in properties if k not in required]
        if missing:
            return (f"{context}'required' is required to be supplied and to be an array including every key in "
                    f"properties. Missing '{missing[0]}'.")
        for key, sub in properties.items():
            problem = _openai_strict_problem(sub, (*where, "properties", key))
            if problem:
                return problem
    for key in ("items",):
        if isinstance(schema.get(key), dict):
            problem = _openai_strict_problem(schema[key], (*where, key))
            if problem:
                return problem
    for i, sub in enumerate(schema.get("anyOf") or []):
        problem = _openai_strict_problem(sub, (*where, "anyOf", str(i)))
        if problem:
            return problem
    for keyword in ("minLength", "maxLength", "default", "prefixItems", "uniqueItems"):
        if keyword in schema:
            return f"{context}'{keyword}' is not permitted."
    return None


def _openai_unanswered(pending: Mapping[str, str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}"
    )


def _openai_choice(value: Any, tools: Sequence[OfferedTool], strict: bool) -> tuple[str, str | None]:
    if value is None:
        return "auto", None
    if not tools and strict:
        raise WireRejection(
            400, "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
        )
    if value in ("auto", "none", "required"):
        return str(value), None
    if isinstance(value, dict) and value.get("type") == "function":
        fn = value.get("function")
        name = fn.get("name") if isinstance(fn, dict) else None
        if isinstance(name, str) and any(t.name == name for t in tools):
            return "tool", name
        _reject(strict, 400, f"Invalid value for 'tool_choice': function '{name}' not found in 'tools'.")
        return "auto", None
    _reject(strict, 400, "Invalid value for 'tool_choice'.")
    return "auto", None


# --- Anthropic messages -------------------------------------------------------------------------


def _anthropic(body: dict[str, Any], headers: Mapping[str, str], strict: bool) -> ParsedRequest:
    if strict and not headers.get("anthropic-version"):
        raise WireRejection(400, "anthropic-version: header is required")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        _reject(strict, 400, "model: Field required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        _reject(strict, 400, "max_tokens: Field required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        _reject(strict, 400, "messages: at least one message is required")
        messages = messages if isinstance(messages, list) else []
    tools: list[OfferedTool] = []
    tools_raw = body.get("tools")
    if tools_raw is not None and not isinstance(tools_raw, list):
        _reject(strict, 400, "tools: Input should be a valid list")
    for k, t in enumerate(tools_raw if isinstance(tools_raw, list) else []):
        if not isinstance(t, dict):
            _reject(strict, 400, f"tools.{k}: Input should be a valid dictionary or object to extract fields from")
        elif "input_schema" in t and not isinstance(t["input_schema"], dict):
            _reject(strict, 400, f"tools.{k}.custom.input_schema: Input should be a valid dictionary")
        if isinstance(t, dict) and isinstance(t.get("name"), str) and isinstance(t.get("input_schema"), dict):
            tools.append(OfferedTool(t["name"], str(t.get("description") or ""), t["input_schema"]))
    choice, choice_name = "auto", None
    tc = body.get("tool_choice")
    for field, value in (("tool_choice", tc), ("thinking", body.get("thinking"))):
        if value is not None and not isinstance(value, dict):
            _reject(strict, 400, f"{field}: Input should be a valid dictionary or object to extract fields from")
    system_raw = body.get("system")
    if system_raw is not None and not isinstance(system_raw, str) and not (
            isinstance(system_raw, list) and all(isinstance(b, dict) for b in system_raw)):
        _reject(strict, 400, "system: Input should be a valid string or a list of text blocks")
    if isinstance(tc, dict):
        kind = tc.get("type")
        choice = {"auto": "auto", "any": "required", "none": "none", "tool": "tool"}.get(str(kind), "auto")
        if kind == "tool":
            choice_name = tc.get("name") if isinstance(tc.get("name"), str) else None
            if choice_name is None or not any(t.name == choice_name for t in tools):
                _reject(strict, 400, f"tool_choice: tool {choice_name!r} not found in tools")
        thinking = body.get("thinking")
        if kind in ("any", "tool") and isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive"):
            _reject(strict, 400, "Thinking may not be enabled when tool_choice forces tool use.")
    fail = _failer(strict)
    settings = anthropic_settings(body, max_tokens, fail)
    parts: list[SeenPart] = []

    last_user = ""
    calls: list[SeenToolCall] = []
    results: list[SeenToolResult] = []
    names_by_id: dict[str, str] = {}
    previous_uses: list[str] = []  # tool_use ids of the previous (assistant) message
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            role = m.get("role") if isinstance(m, dict) else None
            _reject(strict, 400, f'messages: Unexpected role "{role}". The Messages API accepts a top-level '
                    '`system` parameter, not "system" as an input message role.')
            continue
        role = m["role"]
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            _reject(strict, 400, f"messages.{i}.content: Input should be a valid list")
            blocks = []
        final_assistant = role == "assistant" and i == len(messages) - 1
        if strict and not blocks and not final_assistant:
            raise WireRejection(400, f"messages.{i}: all messages must have non-empty content except for the "
                                "optional final assistant message")
        if strict and final_assistant and blocks and isinstance(blocks[-1], dict) and blocks[-1].get("type") == "text" \
                and isinstance(text := blocks[-1].get("text"), str) and text != text.rstrip():
            raise WireRejection(400, "messages: final assistant content cannot end with trailing whitespace")
        uses: list[str] = []
        answered: list[str] = []
        for j, b in enumerate(blocks):
            if not isinstance(b, dict):
                _reject(strict, 400, f"messages.{i}.content.{j}: Input should be a valid dictionary or object to "
                        "extract fields from")
            kind = b.get("type") if isinstance(b, dict) else None
            if kind == "text":
                if strict and not b.get("text") and not final_assistant:
                    raise WireRejection(400, f"messages.{i}.content.{j}.text: text content blocks must be non-empty")
                if role == "user":
                    last_user = str(b.get("text") or "")
            elif kind == "tool_use" and role == "assistant" and isinstance(b, dict):
                if strict and not isinstance(b.get("input"), dict):
                    raise WireRejection(400, f"messages.{i}.content.{j}.tool_use.input: Input should be a valid "
                                        "dictionary")
                call_id, name = str(b.get("id")), str(b.get("name"))
                uses.append(call_id)
                names_by_id[call_id] = name
                calls.append(SeenToolCall(call_id, name, b.get("input")))
            elif kind in ("image", "document") and role == "user" and isinstance(b, dict):
                part = anthropic_block_part(b, where=f"messages.{i}.content.{j}", role="user", fail=fail)
                if part is not None:
                    parts.append(part)
            elif kind == "tool_result" and role == "user" and isinstance(b, dict):
                inner = b.get("content")
                for k, sub in enumerate(inner if isinstance(inner, list) else []):
                    if isinstance(sub, dict):
                        part = anthropic_block_part(sub, where=f"messages.{i}.content.{j}.content.{k}", role="tool",
                                                    fail=fail)
                        if part is not None:
                            parts.append(part)
                call_id = str(b.get("tool_use_id"))
                if strict and call_id not in previous_uses:
                    raise WireRejection(
                        400,
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{call_id}. Each `tool_result` block must have a corresponding `tool_use` block in the "
                        "previous message.",
                    )
                answered.append(call_id)
                results.append(
                    SeenToolResult(call_id, names_by_id.get(call_id), _text_of(b.get("content")),
                                   is_error=b.get("is_error") is True)
                )
        if strict and previous_uses:
            missing = [u for u in previous_uses if u not in answered]
            if missing:
                raise WireRejection(
                    400,
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
                    "in the next message.",
                )
        previous_uses = uses
    thinking = body.get("thinking")
    if strict and isinstance(thinking, dict) and thinking.get("type") == "enabled":
        problem = thinking_turn_problem(messages, _block_type, _is_tool_result)
        if problem is not None:
            raise WireRejection(400, problem)
    system = body.get("system")
    response_format = _anthropic_output_format(body.get("output_config"), strict)
    conv = Conversation(
        system=_text_of(system),
        last_user_text=last_user,
        message_count=len(messages),
        tools=tuple(tools),
        tool_choice=choice,
        tool_choice_name=choice_name,
        tool_calls=tuple(calls),
        tool_results=tuple(results),
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        parts=tuple(parts),
        settings=settings,
        response_format=response_format,
    )
    return ParsedRequest("anthropic", model if isinstance(model, str) else None, body.get("stream") is True, conv)


def _block_type(block: Any) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    return kind if isinstance(kind, str) else "unknown"


def _is_tool_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _anthropic_output_format(config: Any, strict: bool) -> dict[str, Any] | None:
    """``output_config.format`` read as the Messages API reads it (``json_schema`` with a closed-object schema)."""
    fmt = config.get("format") if isinstance(config, dict) else None
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        _reject(strict, 400, "output_config.format.type: Input should be 'json_schema'")
        return None
    schema = fmt.get("schema")
    if not isinstance(schema, dict):
        _reject(strict, 400, "output_config.format.schema: Field required")
        return None
    problem = _anthropic_schema_problem(schema, "")
    if problem:
        _reject(strict, 400, f"output_config.format.schema: {problem}")
    return {"name": None, "schema": schema, "strict": True}


def _anthropic_schema_problem(schema: Any, where: str) -> str | None:
    if not isinstance(schema, dict):
        return None
    kinds = schema.get("type")
    if (kinds == "object" or (isinstance(kinds, list) and "object" in kinds)) and schema.get(
        "additionalProperties"
    ) is not False:
        return f"For 'object' type, 'additionalProperties' must be explicitly set to false{where}"
    for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
                    "maxLength"):
        if keyword in schema:
            return f"'{keyword}' is not supported{where}"
    for key, sub in (schema.get("properties") or {}).items():
        problem = _anthropic_schema_problem(sub, f" (at {key})")
        if problem:
            return problem
    subs = [schema.get("items"), *(schema.get("anyOf") or [])]
    for sub in subs:
        problem = _anthropic_schema_problem(sub, where)
        if problem:
            return problem
    return None


# --- Gemini generateContent ---------------------------------------------------------------------


def _gemini_schema_problem(schema: Any, where: str) -> str | None:
    """The first thing in a legacy ``parameters`` schema that Gemini's Schema message has no field for."""
    if not isinstance(schema, dict):
        return f"Invalid value at '{where}': expected an object"
    for key, value in schema.items():
        if key not in _GEMINI_SCHEMA_KEYS:
            return f'Invalid JSON payload received. Unknown name "{key}" at \'{where}\': Cannot find field.'
        if key == "type" and (not isinstance(value, str) or value.lower() not in _GEMINI_TYPES):
            return f"Invalid value at '{where}.type': {json.dumps(value)}"
        if key == "properties" and isinstance(value, dict):
            for name, sub in value.items():
                problem = _gemini_schema_problem(sub, f"{where}.properties[{name}].value")
                if problem:
                    return problem
        elif key == "items":
            problem = _gemini_schema_problem(value, f"{where}.items")
            if problem:
                return problem
        elif key == "anyOf" and isinstance(value, list):
            for k, sub in enumerate(value):
                problem = _gemini_schema_problem(sub, f"{where}.any_of[{k}]")
                if problem:
                    return problem
    return None


def _response_text(response: Any) -> str:
    # {"result": "sunny"} reads better as "sunny"; anything richer stays JSON.
    if isinstance(response, dict) and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return json.dumps(response, ensure_ascii=False, sort_keys=True) if response is not None else ""


def _gemini(body: dict[str, Any], path_model: str | None, stream: bool, strict: bool) -> ParsedRequest:
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        _reject(strict, 400, "* GenerateContentRequest.contents: contents is not specified")
        contents = contents if isinstance(contents, list) else []
    tools: list[OfferedTool] = []
    tools_raw = body.get("tools")
    if tools_raw is not None and not isinstance(tools_raw, list):
        _reject(strict, 400, f"Invalid value at 'tools' ({_proto_type(tools_raw)}), expected a list of Tool")
    for ti, t in enumerate(tools_raw if isinstance(tools_raw, list) else []):
        if not isinstance(t, dict):
            _reject(strict, 400, f"Invalid value at 'tools[{ti}]' ({_proto_type(t)}), expected a Tool object")
            continue
        decls = t.get("functionDeclarations") or t.get("function_declarations") or []
        if not isinstance(decls, list):
            _reject(strict, 400, f"Invalid value at 'tools[{ti}].function_declarations' ({_proto_type(decls)}), "
                    "expected a list of FunctionDeclaration")
            decls = []
        for di, d in enumerate(decls):
            if not isinstance(d, dict) or not isinstance(d.get("name"), str):
                _reject(strict, 400, f"* GenerateContentRequest.tools[{ti}].function_declarations[{di}].name: "
                        "Invalid function name.")
                continue
            params: Any = None
            for key in ("parametersJsonSchema", "parameters_json_schema"):
                if isinstance(d.get(key), dict):
                    params = d[key]
            if params is None and "parameters" in d:
                params = d["parameters"]
                where = f"tools[{ti}].function_declarations[{di}].parameters"
                problem = _gemini_schema_problem(params, where)
                if problem:
                    _reject(strict, 400, problem)
            tools.append(OfferedTool(d["name"], str(d.get("description") or ""),
                                     params if isinstance(params, dict) else {}))
    for field, proto, message in (("toolConfig", "tool_config", "ToolConfig"),
                                  ("systemInstruction", "system_instruction", "Content"),
                                  ("generationConfig", "generation_config", "GenerationConfig")):
        value = body.get(field, body.get(proto))
        if value is not None and not isinstance(value, dict):
            _reject(strict, 400, f"Invalid value at '{proto}' ({_proto_type(value)}), expected a {message} object")
    config = body.get("toolConfig") or body.get("tool_config") or {}
    fcc = (config.get("functionCallingConfig") or config.get("function_calling_config") or {}) if isinstance(
        config, dict) else {}
    mode = str(fcc.get("mode", "AUTO")).upper() if isinstance(fcc, dict) else "AUTO"
    allowed = fcc.get("allowedFunctionNames") or fcc.get("allowed_function_names") if isinstance(fcc, dict) else None
    choice, choice_name = "auto", None
    if mode == "NONE":
        choice = "none"
    elif mode == "ANY":
        choice = "required"
        if isinstance(allowed, list) and len(allowed) == 1 and isinstance(allowed[0], str):
            choice, choice_name = "tool", allowed[0]
    elif allowed and strict:
        raise WireRejection(400, "allowed_function_names may only be set when mode is ANY")

    fail = _failer(strict)
    seen_parts: list[SeenPart] = []
    last_user = ""
    calls: list[SeenToolCall] = []
    results: list[SeenToolResult] = []
    called = 0  # how many functionCall parts the previous content held: the next must answer each
    for i, c in enumerate(contents):
        role = c.get("role", "user") if isinstance(c, dict) else None
        if role not in ("user", "model"):
            _reject(strict, 400, "Please use a valid role: user, model.")
            continue
        parts = c.get("parts") if isinstance(c, dict) else None
        if not isinstance(parts, list) or not parts:
            _reject(strict, 400, f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty.")
            continue
        user_text = []
        answers = any(isinstance(p, dict) and ("functionResponse" in p or "function_response" in p) for p in parts)
        if strict:
            _gemini_pairing(parts, called)
            called = sum(1 for p in parts if isinstance(p, dict) and ("functionCall" in p or "function_call" in p)) \
                if role == "model" else 0
        for j, p in enumerate(parts):
            data = [k for k in ("text", "functionCall", "functionResponse", "inlineData", "fileData",
                                "function_call", "function_response", "executableCode", "codeExecutionResult")
                    if isinstance(p, dict) and k in p]
            if len(data) != 1:
                _reject(strict, 400, f"* GenerateContentRequest.contents[{i}].parts[{j}].data: required oneof "
                        "field 'data' must have one initialized field")
                continue
            key = data[0]
            media = gemini_part(p, key, where=f"contents[{i}].parts[{j}]", role="tool" if answers else "user",
                                fail=fail)
            if media is not None:
                seen_parts.append(media)
            elif key == "text":
                if role == "user" and not p.get("thought"):
                    user_text.append(str(p["text"]))
            elif key in ("functionCall", "function_call"):
                fc = p[key]
                name = fc.get("name") if isinstance(fc, dict) else None
                if not isinstance(name, str) or not name:
                    _reject(strict, 400, f"* GenerateContentRequest.contents[{i}].parts[{j}].function_call.name: "
                            "Name cannot be empty.")
                    continue
                args = fc.get("args", {})
                if strict and not isinstance(args, dict):
                    raise WireRejection(400, f"Invalid value at 'contents[{i}].parts[{j}].function_call.args'")
                calls.append(SeenToolCall(fc.get("id") if isinstance(fc.get("id"), str) else None, name, args))
            elif key in ("functionResponse", "function_response"):
                fr = p[key]
                name = fr.get("name") if isinstance(fr, dict) else None
                if not isinstance(name, str) or not name:
                    _reject(strict, 400, f"* GenerateContentRequest.contents[{i}].parts[{j}].function_response."
                            "name: Name cannot be empty.")
                    continue
                response = fr.get("response")
                if strict and not isinstance(response, dict):
                    raise WireRejection(400, f"Invalid value at 'contents[{i}].parts[{j}].function_response."
                                        "response': expected an object")
                text = _response_text(response)
                rid = fr.get("id") if isinstance(fr.get("id"), str) else None
                results.append(SeenToolResult(rid, name, text))
        if role == "user" and user_text:
            last_user = "".join(user_text)
    if strict and _gemini_signs(path_model):
        problem = _gemini_unsigned_call(contents)
        if problem is not None:
            raise WireRejection(400, problem)
    system = body.get("systemInstruction") or body.get("system_instruction")
    gen = body.get("generationConfig") or body.get("generation_config") or {}
    max_tokens = gen.get("maxOutputTokens", gen.get("max_output_tokens")) if isinstance(gen, dict) else None
    settings = gemini_settings(gen, fail) if isinstance(gen, dict) else {}
    response_format = _gemini_response_format(gen if isinstance(gen, dict) else {}, strict)
    mime = gen.get("responseMimeType", gen.get("response_mime_type")) if isinstance(gen, dict) else None
    if tools and mime == "application/json" and _gemini_before_3(path_model):
        _reject(strict, 400, "Function calling with a response mime type: 'application/json' is unsupported")
    conv = Conversation(
        system=_text_of(system.get("parts")) if isinstance(system, dict) else "",
        last_user_text=last_user,
        message_count=len(contents),
        tools=tuple(tools),
        tool_choice=choice,
        tool_choice_name=choice_name,
        tool_calls=tuple(calls),
        tool_results=tuple(results),
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        parts=tuple(seen_parts),
        settings=settings,
        response_format=response_format,
    )
    return ParsedRequest("gemini", path_model, stream, conv)


def _gemini_pairing(parts: Sequence[Any], called: int) -> None:
    """Gemini's 400s for a content that does not answer the previous one's function calls: ``called`` calls need as
    many ``functionResponse`` parts; a response needs calls right before it."""
    answered = sum(1 for p in parts if isinstance(p, dict) and ("functionResponse" in p or "function_response" in p))
    if answered and not called:
        raise WireRejection(400, "Please ensure that function response turn comes immediately after a function call "
                            "turn.")
    if called and answered != called:
        raise WireRejection(400, "Please ensure that the number of function response parts is equal to the number of "
                            "function call parts of the function call turn.")


def _proto_type(value: Any) -> str:
    """How Gemini's JSON-to-proto errors name a value's type: ``TYPE_NUMBER``, ``TYPE_STRING``, ..."""
    if isinstance(value, bool):
        return "TYPE_BOOL"
    if isinstance(value, int | float):
        return "TYPE_NUMBER"
    if isinstance(value, str):
        return "TYPE_STRING"
    if isinstance(value, list):
        return "TYPE_LIST"
    return "TYPE_NULL" if value is None else "TYPE_OBJECT"


def _gemini_before_3(model: str | None) -> bool:
    """Whether ``model`` is a Gemini model before 3 (``gemini-2.5-flash``, ``gemini-pro``), by its name."""
    bare = (model or "").rsplit("/", 1)[-1].lower()
    major = _GEMINI_MAJOR.match(bare)
    return (major is not None and int(major.group(1)) < 3) or bare.startswith(_GEMINI_OLD_ALIASES)


def _gemini_signs(model: str | None) -> bool:
    """Whether ``model`` validates thought signatures: Gemini 3 and later, but not the image models."""
    bare = (model or "").rsplit("/", 1)[-1].lower()
    major = _GEMINI_MAJOR.match(bare)
    return major is not None and int(major.group(1)) >= 3 and "image" not in bare


def _gemini_unsigned_call(contents: Sequence[Any]) -> str | None:
    """Gemini 3's 400 for a step of the current turn whose first ``functionCall`` part has no ``thoughtSignature``.

    The current turn is the contents after the last user content holding more than function responses; each model
    content in it is a step, and only a step's first call is signed (of parallel calls, the first).  Earlier turns
    are not validated.  Any signature passes here (the documented ``skip_thought_signature_validator`` too): the
    fake cannot check one, only see that it was replayed.
    """
    start = 0
    for i in range(len(contents) - 1, -1, -1):
        c = contents[i]
        parts = c.get("parts") if isinstance(c, dict) else None
        if isinstance(c, dict) and c.get("role", "user") == "user" and isinstance(parts, list) and any(
                not (isinstance(p, dict) and ("functionResponse" in p or "function_response" in p)) for p in parts):
            start = i + 1
            break
    for i in range(start, len(contents)):
        c = contents[i]
        if not isinstance(c, dict) or c.get("role") != "model" or not isinstance(c.get("parts"), list):
            continue
        for p in c["parts"]:
            fc = (p.get("functionCall") or p.get("function_call")) if isinstance(p, dict) else None
            if not isinstance(fc, dict):
                continue
            sig = p.get("thoughtSignature", p.get("thought_signature"))
            if isinstance(sig, str) and sig:
                break
            # "position": the 1-based place of the content in ``contents``, as the recorded messages read.
            return (
                "Function call is missing a thought_signature in functionCall parts. This is required for tools to "
                "work correctly, and missing thought_signature may lead to degraded model performance. Additional "
                f"data, function call `default_api:{fc.get('name')}` , position {i + 1}. Please refer to "
                "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
            )
    return None


def _gemini_response_format(gen: Mapping[str, Any], strict: bool) -> dict[str, Any] | None:
    """``responseJsonSchema`` / ``responseSchema`` with the ``responseMimeType`` they need, as Gemini reads them."""
    json_schema = gen.get("responseJsonSchema", gen.get("response_json_schema"))
    legacy = gen.get("responseSchema", gen.get("response_schema"))
    if json_schema is None and legacy is None:
        return None
    if json_schema is not None and legacy is not None:
        _reject(strict, 400, "response_schema and response_json_schema cannot both be set.")
    mime = gen.get("responseMimeType", gen.get("response_mime_type"))
    if mime not in ("application/json", "text/x.enum"):
        _reject(strict, 400, "* GenerationConfig.response_mime_type: response_mime_type must be one of "
                "['application/json', 'text/x.enum'] when a response schema is set.")
    schema = json_schema if json_schema is not None else legacy
    if not isinstance(schema, dict):
        _reject(strict, 400, "Invalid value at 'generation_config.response_json_schema': expected an object")
        return None
    return {"name": None, "schema": schema, "strict": False}
