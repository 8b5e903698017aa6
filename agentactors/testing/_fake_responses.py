"""The fake vendor's OpenAI Responses wire and Azure OpenAI routes.

Served paths: ``POST /v1/responses`` (and ``/responses``), Azure's v1 route ``POST /openai/v1/responses``
(the deployment as the body's ``model``) and Azure's chat route
``POST /openai/deployments/{deployment}/chat/completions?api-version=…`` (the Chat Completions wire, the
model from the path; without ``api-version`` Azure answers 404, and so does this server).  Credentials:
``api-key`` or ``Authorization: Bearer`` (the app's credential check reads both).

Written from the Responses API reference and the recorded corpus, independently of the client codec in
:mod:`agentactors.providers.responses`.  The app imports the functions below in place of the shared
ones; each serves the ``responses`` wire and hands every other wire to the shared function.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from ._fake_errors import error_response as _shared_error_response
from ._fake_errors import stream_error_frame as _shared_stream_error_frame
from ._fake_media import openai_settings, openai_type_problem
from ._fake_parse import ParsedRequest, WireRejection, too_long
from ._fake_parse import parse_request as _shared_parse_request
from ._fake_parse import route as _shared_route
from ._fake_script import Conversation, FakeError, FakeReply, OfferedTool, SeenToolCall, SeenToolResult
from ._fake_wires import Frame, WireContext, dumps
from ._fake_wires import reply_frames as _shared_reply_frames
from ._fake_wires import reply_json as _shared_reply_json

__all__ = ["WIRE", "error_response", "parse_request", "reply_frames", "reply_json", "route", "stream_error_frame"]

WIRE = "responses"
_RESPONSES_PATHS = frozenset({"/v1/responses", "/responses", "/openai/v1/responses"})
_AZURE_CHAT = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions$")
_API_VERSION = re.compile(r"(?:^|&)api-version=[^&]+")
# The body fields the Responses API knows (anything else is "Unknown parameter").
_KNOWN = frozenset({
    "model", "input", "instructions", "tools", "tool_choice", "stream", "store", "include", "max_output_tokens",
    "temperature", "top_p", "parallel_tool_calls", "reasoning", "text", "previous_response_id", "metadata",
    "prompt_cache_key", "prompt_cache_retention", "truncation", "user", "service_tier", "background",
    "max_tool_calls", "safety_identifier", "top_logprobs", "stream_options", "conversation", "prompt",
})
#: A message's roles (an item without ``type`` is a message) and the content parts each takes.
_ROLES = frozenset({"user", "system", "developer", "assistant"})
_INPUT_PARTS = ("input_text", "input_image", "input_file", "input_audio")
_OUTPUT_PARTS = ("output_text", "refusal")
#: The string field each text-like part must carry.
_PART_TEXT = {"input_text": "text", "output_text": "text", "refusal": "refusal"}
#: The input item types the Responses API knows (the ones this server reads, and the tool items it passes by).
_ITEM_TYPES = frozenset({
    "message", "function_call", "function_call_output", "reasoning", "item_reference", "file_search_call",
    "computer_call", "computer_call_output", "web_search_call", "image_generation_call", "code_interpreter_call",
    "local_shell_call", "local_shell_call_output", "shell_call", "shell_call_output", "apply_patch_call",
    "apply_patch_call_output", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "mcp_call",
    "custom_tool_call", "custom_tool_call_output", "compaction", "tool_search_call", "tool_search_output",
})
_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})
#: OpenAI's least ``max_output_tokens``.
_MIN_OUTPUT_TOKENS = 16
_INCOMPLETE = {"max_tokens": "max_output_tokens", "content_filter": "content_filter"}


def route(method: str, path: str, query: str = "") -> tuple[str, str | None, bool | None] | None:
    """The shared routes, plus the Responses and Azure paths."""
    if method == "POST" and path in _RESPONSES_PATHS:
        return WIRE, None, None
    m = _AZURE_CHAT.match(path)
    if method == "POST" and m is not None:
        return ("openai", m.group("deployment"), None) if _API_VERSION.search(query) else None
    return _shared_route(method, path)


def parse_request(
    wire: str,
    body: Any,
    headers: Mapping[str, str],
    *,
    path_model: str | None,
    path_stream: bool | None,
    strict: bool,
) -> ParsedRequest:
    """Read ``body`` as the given wire (an Azure chat request's model is its deployment, from the path)."""
    if wire == WIRE:
        if not isinstance(body, dict):
            raise WireRejection(400, "the request body must be a JSON object")
        return _parse(body, strict)
    if wire == "openai" and path_model is not None and isinstance(body, dict):
        body = {**body, "model": path_model}
    return _shared_parse_request(wire, body, headers, path_model=path_model, path_stream=path_stream, strict=strict)


# --- reading a request ----------------------------------------------------------------------------


def _reject(strict: bool, status: int, message: str) -> None:
    if strict:
        raise WireRejection(status, message)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _tools(body: dict[str, Any], strict: bool) -> list[OfferedTool]:
    tools: list[OfferedTool] = []
    raw = body.get("tools")
    for i, t in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(t.get("name"), str):
            _reject(strict, 400, f"Missing required parameter: 'tools[{i}].name'.")
            continue
        for problem in (
            openai_type_problem(f"tools[{i}].parameters", t.get("parameters"), "an object", dict, type(None)),
            openai_type_problem(f"tools[{i}].description", t.get("description"), "a string", str, type(None)),
            openai_type_problem(f"tools[{i}].strict", t.get("strict"), "a boolean", bool, type(None)),
        ):
            if problem is not None:
                _reject(strict, 400, problem)
        params = t.get("parameters")
        schema = params if isinstance(params, dict) else {}
        tools.append(OfferedTool(t["name"], str(t.get("description") or ""), schema))
    return tools


def _choice(value: Any, tools: list[OfferedTool], strict: bool) -> tuple[str, str | None]:
    if value is None:
        return "auto", None
    if value in ("auto", "none", "required"):
        return str(value), None
    if isinstance(value, dict) and value.get("type") == "function":
        name = value.get("name")
        if isinstance(name, str) and any(t.name == name for t in tools):
            return "tool", name
        _reject(strict, 400, f"Tool choice '{name}' not found in 'tools' parameter.")
        return "auto", None
    _reject(strict, 400, "Invalid value for 'tool_choice'.")
    return "auto", None


def _settings(body: dict[str, Any], strict: bool) -> dict[str, Any]:
    def fail(status: int, message: str) -> None:
        _reject(strict, status, message)

    out = openai_settings({k: body[k] for k in ("temperature", "top_p", "parallel_tool_calls") if k in body}, fail)
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
    if effort is not None:
        if not isinstance(effort, str) or effort not in _EFFORTS:
            fail(400, f"Invalid value: '{effort}'. Supported values are: 'none', 'minimal', 'low', 'medium', "
                 "'high', and 'xhigh'.")
        out["reasoning_effort"] = effort
    if "prompt_cache_retention" in body:
        out["cache_retention"] = body["prompt_cache_retention"]
    return out


def _format(body: dict[str, Any], strict: bool) -> dict[str, Any] | None:
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    if not isinstance(fmt.get("name"), str) or not isinstance(fmt.get("schema"), dict):
        _reject(strict, 400, "Missing required parameter: 'text.format.name'.")
        return None
    return {"name": fmt["name"], "schema": fmt["schema"], "strict": fmt.get("strict") is True}


@attrs.define
class _History:
    calls: list[SeenToolCall] = attrs.Factory(list)
    results: list[SeenToolResult] = attrs.Factory(list)
    names: dict[str, str] = attrs.Factory(dict)
    last_user: str = ""
    system: list[str] = attrs.Factory(list)


#: The longest ``call_id`` the Responses API takes.
_MAX_CALL_ID = 64


def _read_item(i: int, item: Any, history: _History, *, stored: bool, strict: bool) -> None:
    if not isinstance(item, dict):
        _reject(strict, 400, f"Invalid type for 'input[{i}]': expected an object.")
        return
    kind = item.get("type", "message")
    if kind == "reasoning":
        if not stored and not isinstance(item.get("encrypted_content"), str):
            _reject(strict, 404, f"Item with id '{item.get('id')}' not found. Items are not persisted when `store` "
                    "is set to false. Try again with `store` set to true, or remove this item from your input.")
    elif kind == "function_call":
        name, call_id = item.get("name"), item.get("call_id")
        if not isinstance(name, str) or not isinstance(call_id, str) or not isinstance(item.get("arguments"), str):
            _reject(strict, 400, f"Missing required parameter: 'input[{i}].call_id'.")
            return
        if len(call_id) > _MAX_CALL_ID:
            too_long(strict, f"input[{i}].call_id", call_id, _MAX_CALL_ID)
        history.calls.append(SeenToolCall(call_id, name, _loads(item["arguments"])))
        history.names[call_id] = name
    elif kind == "function_call_output":
        call_id = item.get("call_id")
        if isinstance(call_id, str) and len(call_id) > _MAX_CALL_ID:
            too_long(strict, f"input[{i}].call_id", call_id, _MAX_CALL_ID)
        if not isinstance(call_id, str) or call_id not in history.names:
            _reject(strict, 400, f"No tool call found for function call output with call_id {call_id}.")
        if strict:
            _check_content(f"input[{i}].output", item, "output", "user")
        cid = call_id if isinstance(call_id, str) else None
        history.results.append(SeenToolResult(cid, history.names.get(cid or ""), _text(item.get("output"))))
    elif kind == "message":
        role = item.get("role")
        if strict and isinstance(role, str) and role in _ROLES:
            _check_content(f"input[{i}].content", item, "content", role)
        if role in ("system", "developer"):
            history.system.append(_text(item.get("content")))
        elif role == "user":
            history.last_user = _text(item.get("content"))
        elif role != "assistant":
            _reject(strict, 400, f"Invalid value: '{role}'. Supported values are: 'assistant', 'system', "
                    "'developer', and 'user'.")
    elif strict and (not isinstance(kind, str) or kind not in _ITEM_TYPES):
        raise WireRejection(400, f"Invalid value: '{kind}'. Supported values are: "
                            + ", ".join(f"'{t}'" for t in sorted(_ITEM_TYPES)) + f". (input[{i}].type)")


def _check_content(where: str, item: dict[str, Any], key: str, role: str) -> None:
    """Refuse (strict mode) a message's ``content`` or an output's ``output`` that is neither a string nor
    an array of content parts of the kinds its role takes, each with its text a string."""
    if key not in item:
        raise WireRejection(400, f"Missing required parameter: '{where}'.")
    value = item[key]
    problem = openai_type_problem(where, value, "one of a string or array of input content parts", str, list)
    if problem is not None:
        raise WireRejection(400, problem)
    if isinstance(value, str):
        return
    allowed = _OUTPUT_PARTS if role == "assistant" else _INPUT_PARTS
    for j, part in enumerate(value):
        at = f"{where}[{j}]"
        problem = openai_type_problem(at, part, "an object", dict)
        if problem is not None:
            raise WireRejection(400, problem)
        kind = part.get("type")
        if kind is None:
            raise WireRejection(400, f"Missing required parameter: '{at}.type'.")
        if kind not in allowed:
            raise WireRejection(400, f"Invalid value: '{kind}'. Supported values are: {_listed(allowed)}. ({at}.type)")
        field = _PART_TEXT.get(kind)
        if field is not None:
            if field not in part:
                raise WireRejection(400, f"Missing required parameter: '{at}.{field}'.")
            problem = openai_type_problem(f"{at}.{field}", part[field], "a string", str)
            if problem is not None:
                raise WireRejection(400, problem)


def _listed(values: tuple[str, ...]) -> str:
    quoted = [f"'{v}'" for v in values]
    return " and ".join(quoted) if len(quoted) == 2 else ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _parse(body: dict[str, Any], strict: bool) -> ParsedRequest:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        _reject(strict, 400, "Missing required parameter: 'model'.")
    unknown = sorted(set(body) - _KNOWN)
    if unknown:
        _reject(strict, 400, f"Unknown parameter: '{unknown[0]}'.")
    for problem in (
        openai_type_problem("instructions", body.get("instructions"), "a string", str, type(None)),
        openai_type_problem("previous_response_id", body.get("previous_response_id"), "a string", str, type(None)),
        openai_type_problem("tools", body.get("tools"), "an array of objects", list, type(None)),
        openai_type_problem("include", body.get("include"), "an array of strings", list, type(None)),
        openai_type_problem("reasoning", body.get("reasoning"), "an object", dict, type(None)),
        openai_type_problem("text", body.get("text"), "an object", dict, type(None)),
        openai_type_problem("text.format", _dig(body, "text", "format"), "an object", dict, type(None)),
        openai_type_problem("stream", body.get("stream"), "a boolean", bool, type(None)),
        openai_type_problem("max_output_tokens", body.get("max_output_tokens"), "an integer", int, type(None)),
    ):
        if problem is not None:
            _reject(strict, 400, problem)
    limit = body.get("max_output_tokens")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit < _MIN_OUTPUT_TOKENS:
        _reject(strict, 400, "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= "
                f"{_MIN_OUTPUT_TOKENS}, but got {limit} instead.")
    raw_input = body.get("input")
    items: list[Any] = [{"role": "user", "content": raw_input}] if isinstance(raw_input, str) else (
        raw_input if isinstance(raw_input, list) else [])
    if not items:
        _reject(strict, 400, "Missing required parameter: 'input'.")
    tools = _tools(body, strict)
    choice, choice_name = _choice(body.get("tool_choice"), tools, strict)
    history = _History()
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        history.system.append(instructions)
    stored = body.get("store") is not False
    for i, item in enumerate(items):
        _read_item(i, item, history, stored=stored, strict=strict)
    if strict:
        # Every function_call of the input needs its function_call_output in the same input (order aside).
        answered = {r.call_id for r in history.results}
        unanswered = next((c.id for c in history.calls if c.id not in answered), None)
        if unanswered is not None:
            raise WireRejection(400, f"No tool output found for function call {unanswered}.")
    max_tokens = body.get("max_output_tokens")
    conv = Conversation(
        system="\n".join(history.system),
        last_user_text=history.last_user,
        message_count=len(items),
        tools=tuple(tools),
        tool_choice=choice,
        tool_choice_name=choice_name,
        tool_calls=tuple(history.calls),
        tool_results=tuple(history.results),
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        settings=_settings(body, strict),
        response_format=_format(body, strict),
    )
    return ParsedRequest(WIRE, model if isinstance(model, str) else None, body.get("stream") is True, conv)


# --- answering ----------------------------------------------------------------------------------


def _args(call: Any) -> str:
    return call.arguments if isinstance(call.arguments, str) else dumps(call.arguments)


def _tokens(reply: FakeReply, ctx: WireContext) -> tuple[int, int]:
    inp = reply.input_tokens if reply.input_tokens is not None else ctx.input_tokens
    if reply.output_tokens is not None:
        return inp, reply.output_tokens
    size = len(reply.text) + len(reply.reasoning) + sum(len(_args(c)) for c in reply.tool_calls)
    return inp, max(1, size // 4)


def _usage(reply: FakeReply, ctx: WireContext) -> dict[str, Any]:
    inp, out = _tokens(reply, ctx)
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": max(1, len(reply.reasoning) // 4) if reply.reasoning else 0},
        "total_tokens": inp + out,
    }


def _items(reply: FakeReply, ctx: WireContext) -> list[dict[str, Any]]:
    n = ctx.index
    items: list[dict[str, Any]] = []
    if reply.reasoning:
        blob = base64.b64encode(f"fake-encrypted-reasoning:{n}".encode()).decode("ascii")
        items.append({"id": f"rs_fake{n:05d}", "type": "reasoning", "encrypted_content": blob,
                      "summary": [{"type": "summary_text", "text": reply.reasoning}]})
    if reply.text:
        items.append({"id": f"msg_fake{n:05d}", "type": "message", "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}]})
    for i, c in enumerate(reply.tool_calls):
        call_id = c.id if c.id is not None else f"call_fake{n:05d}x{i}"
        items.append({"id": f"fc_fake{n:05d}x{i}", "type": "function_call", "status": "completed",
                      "call_id": call_id, "name": c.name, "arguments": _args(c)})
    return items


def _response(reply: FakeReply, ctx: WireContext, *, done: bool) -> dict[str, Any]:
    incomplete = _INCOMPLETE.get(reply.stop_reason) if done else None
    return {
        "id": f"resp_fake{ctx.index:05d}",
        "object": "response",
        "created_at": int(time.time()),
        "status": ("incomplete" if incomplete else "completed") if done else "in_progress",
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "model": ctx.model,
        "output": _items(reply, ctx) if done else [],
        "store": False,
        "usage": _usage(reply, ctx) if done else None,
    }


def reply_json(reply: FakeReply, ctx: WireContext) -> dict[str, Any]:
    """The complete answer body for ``reply`` (the shared encoders for the other wires)."""
    if ctx.wire != WIRE:
        return _shared_reply_json(reply, ctx)
    return _response(reply, ctx, done=True)


def reply_frames(reply: FakeReply, ctx: WireContext) -> list[Frame]:
    """The stream events that deliver ``reply``: each named twice (``event:`` and ``type``), sequence-numbered."""
    if ctx.wire != WIRE:
        return _shared_reply_frames(reply, ctx)
    frames: list[Frame] = []
    for payload, content in _events(reply, ctx):
        payload = {"type": payload["type"], "sequence_number": len(frames), **payload}
        frames.append(Frame(payload, payload["type"], content))
    return frames


def _chunks(text: str, words: int) -> list[str]:
    tokens = re.findall(r"\s*\S+\s*", text) or ([text] if text else [])
    return ["".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]


def _events(reply: FakeReply, ctx: WireContext) -> Iterator[tuple[dict[str, Any], bool]]:
    yield {"type": "response.created", "response": _response(reply, ctx, done=False)}, False
    yield {"type": "response.in_progress", "response": _response(reply, ctx, done=False)}, False
    for index, item in enumerate(_items(reply, ctx)):
        kind, item_id = item["type"], item["id"]
        base = {"output_index": index, "item_id": item_id}
        if kind == "reasoning":
            yield {"type": "response.output_item.added", "output_index": index,
                   "item": {**item, "summary": []}}, False
            yield {"type": "response.reasoning_summary_part.added", **base, "summary_index": 0,
                   "part": {"type": "summary_text", "text": ""}}, False
            for piece in _chunks(reply.reasoning, reply.words_per_chunk):
                yield {"type": "response.reasoning_summary_text.delta", **base, "summary_index": 0,
                       "delta": piece}, True
            # Each part ends as the service ends it (text, then part): a client may close the part only then.
            yield {"type": "response.reasoning_summary_text.done", **base, "summary_index": 0,
                   "text": reply.reasoning}, False
            yield {"type": "response.reasoning_summary_part.done", **base, "summary_index": 0,
                   "part": item["summary"][0]}, False
        elif kind == "message":
            yield {"type": "response.output_item.added", "output_index": index,
                   "item": {**item, "status": "in_progress", "content": []}}, False
            yield {"type": "response.content_part.added", **base, "content_index": 0,
                   "part": {"type": "output_text", "text": "", "annotations": []}}, False
            for piece in _chunks(reply.text, reply.words_per_chunk):
                yield {"type": "response.output_text.delta", **base, "content_index": 0, "delta": piece,
                       "logprobs": [], "obfuscation": "fake"}, True
            yield {"type": "response.output_text.done", **base, "content_index": 0, "text": reply.text}, False
            # As recorded (tests/corpus): the part, as it ended, between the text's end and the item's.
            yield {"type": "response.content_part.done", **base, "content_index": 0,
                   "part": item["content"][0]}, False
        else:
            yield {"type": "response.output_item.added", "output_index": index,
                   "item": {**item, "status": "in_progress", "arguments": ""}}, False
            args = item["arguments"]
            for start in range(0, len(args), 7):
                yield {"type": "response.function_call_arguments.delta", **base, "delta": args[start:start + 7],
                       "obfuscation": "fake"}, True
            yield {"type": "response.function_call_arguments.done", **base, "arguments": args}, False
        yield {"type": "response.output_item.done", "output_index": index, "item": item}, False
    final = _response(reply, ctx, done=True)
    yield {"type": f"response.{final['status']}", "response": final}, False


def error_response(err: FakeError, ctx: WireContext) -> tuple[int, list[tuple[str, str]], bytes]:
    """An HTTP error answer: the Responses API's error body is Chat Completions' (``{"error": {...}}``)."""
    return _shared_error_response(err, attrs.evolve(ctx, wire="openai") if ctx.wire == WIRE else ctx)


def stream_error_frame(err: FakeError, ctx: WireContext) -> Frame:
    """An in-band error: the Responses ``error`` event (``{"type": "error", "code", "message", "param"}``)."""
    if ctx.wire != WIRE:
        return _shared_stream_error_frame(err, ctx)
    if err.body is not None:
        return Frame(err.body, "error")
    shared = _shared_stream_error_frame(err, attrs.evolve(ctx, wire="openai")).payload
    error = shared.get("error", {}) if isinstance(shared, dict) else {}
    return Frame({"type": "error", "sequence_number": 0, "code": error.get("code") or error.get("type"),
                  "message": error.get("message"), "param": None}, "error")
