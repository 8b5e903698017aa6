"""The fake vendor's Bedrock Converse wire: routes, requests read back, answers, errors and SigV4 checks.

Written from Bedrock's API reference and the recorded corpus (``tests/corpus/bedrock__*``), independently of
the client codec in :mod:`agentactors.providers.bedrock`.  ``POST /model/{modelId}/converse`` answers in JSON,
``/converse-stream`` in the AWS event stream (:mod:`._fake_eventstream`).  Every request must carry a SigV4
``Authorization`` header of the documented shape (checked here; the signature itself is not recomputed, the
fake knows no secret), an ``X-Amz-Date`` of the credential's day, and ``X-Amz-Security-Token`` signed when sent.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from ._fake_eventstream import event_message, exception_message
from ._fake_script import (
    Conversation,
    FakeError,
    FakeReply,
    FakeToolCall,
    OfferedTool,
    SeenPart,
    SeenToolCall,
    SeenToolResult,
)

__all__ = [
    "EVENT_STREAM",
    "bedrock_error_payload",
    "bedrock_error_type",
    "bedrock_frame_bytes",
    "bedrock_frames",
    "bedrock_json",
    "bedrock_route",
    "parse_bedrock",
    "sigv4_problem",
    "stream_exception_event",
    "thinking_turn_problem",
]

EVENT_STREAM = "application/vnd.amazon.eventstream"
Fail = Callable[[int, str], None]
#: ``(payload, event, content)``: one stream message before framing (``content`` counts for the faults).
RawFrame = tuple[Any, str | None, bool]

_PATH = re.compile(r"^/model/(?P<model>[^/]+)/(?P<op>converse|converse-stream)$")
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[A-Za-z0-9]+)/(?P<day>\d{8})/(?P<region>[a-z0-9-]+)/bedrock/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[a-z0-9;-]+),\s*Signature=(?P<sig>[0-9a-f]{64})$"
)
_AMZ_DATE = re.compile(r"^\d{8}T\d{6}Z$")
_STOPS = {"end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens",
          "stop_sequence": "stop_sequence", "content_filter": "content_filtered"}
_ERROR_TYPES = {
    400: ("ValidationException", "Malformed input request, please reformat your input and try again."),
    403: ("AccessDeniedException", "You don't have access to the model with the specified model ID."),
    404: ("ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier."),
    408: ("ModelTimeoutException", "Model has timed out in processing the request. Try your request again."),
    424: ("ModelErrorException", "The model produced an error while processing the request."),
    429: ("ThrottlingException", "Too many requests, please wait before trying again."),
    500: ("InternalServerException", "The server encountered an internal error while processing the request."),
    503: ("ServiceUnavailableException", "The service isn't currently available. Try again later."),
}
# toolChoice any / tool per family (Bedrock's ToolChoice reference).
_ANY = ("anthropic.claude-3", "anthropic.claude-", "amazon.nova-", "mistral.mistral-large")
_NAMED = ("anthropic.claude-3", "anthropic.claude-", "amazon.nova-")
_PROFILE = re.compile(r"^(?:us|eu|apac|global|us-gov|jp|au|ca|ap)\.")


#: The Messages API's 400 for a tool loop under manual thinking whose first assistant message does not begin with a
#: thinking block (recorded answers; Claude on Bedrock passes it on after "The model returned the following errors: ").
_THINKING_TURN = (
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When "
    "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost "
    "set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To "
    "avoid this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_MODEL_ERRORS = "The model returned the following errors: "


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _invalid(where: str, constraint: str, *, value: Any = None) -> str:
    """Bedrock's validation message for one field."""
    shown = f"Value '{value}' at" if value is not None else "The value at"
    return f"1 validation error detected: {shown} '{where}' failed to satisfy constraint: {constraint}"


def bedrock_route(method: str, path: str) -> tuple[str, str, bool] | None:
    """``("bedrock", model id, stream)`` for a Converse path (the id percent-decoded), else ``None``."""
    m = _PATH.match(path) if method == "POST" else None
    if m is None:
        return None
    return "bedrock", unquote(m.group("model")), m.group("op") == "converse-stream"


# --- auth -------------------------------------------------------------------------------------------


def _denied(message: str, code: str = "UnrecognizedClientException") -> FakeError:
    return FakeError(403, message=message, code=code)


def sigv4_problem(headers: Mapping[str, str], expected_key_id: str | None = None) -> FakeError | None:
    """Why the SigV4 headers are not what AWS takes (``None``: they are), as the 403 AWS answers with."""
    auth = headers.get("authorization", "")
    if not auth:
        return _denied("Missing Authentication Token", "MissingAuthenticationTokenException")
    m = _AUTH.match(auth)
    if m is None:
        return _denied("Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' "
                       "(AWS4-HMAC-SHA256).", "IncompleteSignatureException")
    date = headers.get("x-amz-date", "")
    if not _AMZ_DATE.match(date) or not date.startswith(m.group("day")):
        return _denied("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP",
                       "InvalidSignatureException")
    signed = m.group("signed").split(";")
    for needed in ("host", "x-amz-date", *(("x-amz-security-token",) if "x-amz-security-token" in headers else ())):
        if needed not in signed:
            return _denied(f"'{needed}' must be a signed header.", "IncompleteSignatureException")
    if expected_key_id is not None and m.group("key") != expected_key_id:
        return _denied("The security token included in the request is invalid.")
    return None


# --- requests ---------------------------------------------------------------------------------------


def thinking_turn_problem(
    messages: Sequence[Any], block_type: Callable[[Any], str], is_result: Callable[[Any], bool]
) -> str | None:
    """The Messages API's message when the current turn's first assistant message does not begin with thinking.

    Asked only with manual thinking on.  The current turn starts after the last user message holding more than
    tool results; its first assistant message, when a tool result follows it (a tool loop under way), must begin
    with a ``thinking`` or ``redacted_thinking`` block.  Earlier turns ask for nothing (their thinking may be left
    out), nor do the turn's later steps.  ``block_type`` names a block as the Messages API does.
    """
    first: int | None = None
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else _items(content)
        if message.get("role") == "assistant":
            first = i
        elif message.get("role") == "user" and any(not is_result(b) for b in blocks):
            break  # the user's own message: the current turn began after it
    if first is None or first == len(messages) - 1:
        return None
    content = messages[first].get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else _items(content)
    found = block_type(blocks[0]) if blocks else None
    if found is None or found in _THINKING_BLOCKS:
        return None
    return _THINKING_TURN.format(index=first, found=found)


def _converse_type(block: Any) -> str:
    """A Converse content block named as the Messages API names it (``reasoningContent`` → ``thinking``)."""
    if not isinstance(block, Mapping) or not block:
        return "unknown"
    if "reasoningContent" in block:
        reasoning = _obj(block["reasoningContent"])
        return "redacted_thinking" if "redactedContent" in reasoning else "thinking"
    key = str(next(iter(block)))
    return {"toolUse": "tool_use", "toolResult": "tool_result"}.get(key, key)


def _is_converse_result(block: Any) -> bool:
    return isinstance(block, Mapping) and "toolResult" in block


def _manual_claude_thinking(body: Mapping[str, Any], model: str) -> bool:
    """Whether a Converse request asks Claude for manual thinking (``additionalModelRequestFields.thinking``)."""
    thinking = _obj(body.get("additionalModelRequestFields")).get("thinking")
    return _family(model).startswith("anthropic.claude") and isinstance(thinking, Mapping) and thinking.get(
        "type") == "enabled"


def _family(model: str) -> str:
    name = model.lower().rsplit("/", 1)[-1]
    return _PROFILE.sub("", name)


def _part(block: Mapping[str, Any], role: str, fail: Fail) -> SeenPart | None:
    for kind in ("image", "document"):
        inner = block.get(kind)
        if not isinstance(inner, Mapping):
            continue
        source = _obj(inner.get("source"))
        fmt = str(inner.get("format"))
        if kind == "document" and not inner.get("name"):
            fail(400, "The value at messages.content.document.name failed to satisfy constraint: Member must not "
                 "be null")
        if "bytes" in source:
            try:
                size = len(base64.b64decode(str(source["bytes"]), validate=True))
            except ValueError:
                fail(400, f"Invalid base64 in {kind}.source.bytes")
                size = 0
            return SeenPart(kind, f"{'image' if kind == 'image' else 'application'}/{fmt}", "data", size=size,
                            role=role, title=inner.get("name") if kind == "document" else None)
        location = source.get("s3Location")
        if isinstance(location, Mapping):
            return SeenPart(kind, fmt, "url", url=str(location.get("uri")), role=role)
        fail(400, f"{kind}.source must hold bytes or an s3Location")
    return None


def _tools(body: Mapping[str, Any], model: str, fail: Fail) -> tuple[list[OfferedTool], str, str | None]:
    config = body.get("toolConfig")
    if not isinstance(config, Mapping):
        return [], "auto", None
    raw = config.get("tools")
    if raw is not None and not isinstance(raw, list):
        fail(400, _invalid("toolConfig.tools", "Member must be a list"))
    tools: list[OfferedTool] = []
    for i, t in enumerate(_items(raw)):
        spec = t.get("toolSpec") if isinstance(t, Mapping) else None
        if not isinstance(spec, Mapping):
            continue
        schema = _obj(spec.get("inputSchema")).get("json", {})
        if not isinstance(spec.get("name"), str) or not isinstance(schema, Mapping):
            where = "name" if not isinstance(spec.get("name"), str) else "inputSchema.json"
            fail(400, _invalid(f"toolConfig.tools.{i}.member.toolSpec.{where}", "Member must not be null"
                               if where == "name" else "Member must be a JSON object"))
            continue
        tools.append(OfferedTool(spec["name"], str(spec.get("description") or ""), schema))
    if not tools:
        fail(400, "The value at toolConfig.tools failed to satisfy constraint: Member must have length greater "
             "than or equal to 1")
    choice = config.get("toolChoice")
    family = _family(model)
    if not isinstance(choice, Mapping) or "auto" in choice:
        return tools, "auto", None
    if "any" in choice:
        if not family.startswith(_ANY):
            fail(400, "This model doesn't support the toolConfig.toolChoice.any field. Remove "
                 "toolConfig.toolChoice.any and try again.")
        return tools, "required", None
    name = choice.get("tool", {}).get("name") if isinstance(choice.get("tool"), Mapping) else None
    if not family.startswith(_NAMED):
        fail(400, "This model doesn't support the toolConfig.toolChoice.tool field. Remove "
             "toolConfig.toolChoice.tool and try again.")
    if not any(t.name == name for t in tools):
        fail(400, f"toolConfig.toolChoice.tool.name {name!r} is not one of the tools")
    return tools, "tool", name if isinstance(name, str) else None


def _settings(body: Mapping[str, Any], forced: bool, fail: Fail) -> dict[str, Any]:
    config = _obj(body.get("inferenceConfig"))
    out = {ours: config[theirs] for ours, theirs in (("temperature", "temperature"), ("top_p", "topP"),
                                                      ("stop", "stopSequences")) if theirs in config}
    extra = body.get("additionalModelRequestFields")
    if isinstance(extra, Mapping):
        thinking = extra.get("thinking")
        if isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive"):
            out["thinking"] = thinking.get("type")
            if "budget_tokens" in thinking:
                out["thinking_budget"] = thinking["budget_tokens"]
            if forced:
                fail(400, "Thinking may not be enabled when tool_choice forces tool use.")
        for field in ("reasoning_effort", "reasoning_config"):
            if field in extra:
                out["reasoning_effort"] = extra[field]
    return out


def parse_bedrock(body: Mapping[str, Any], model: str, fail: Fail) -> Conversation:
    """Read a Converse body; ``fail(status, message)`` for what Bedrock rejects (strict mode raises)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        fail(400, "The value at messages failed to satisfy constraint: Member must have length greater than or "
             "equal to 1")
        messages = []
    tools, choice, choice_name = _tools(body, model, fail)
    parts: list[SeenPart] = []
    calls: list[SeenToolCall] = []
    results: list[SeenToolResult] = []
    names: dict[str, str] = {}
    last_user, previous_role = "", None
    pending: list[str] = []
    for i, entry in enumerate(m for m in messages if isinstance(m, Mapping)):
        role, blocks = entry.get("role"), entry.get("content")
        if role not in ("user", "assistant") or not isinstance(blocks, list) or not blocks:
            fail(400, f"messages.{i}: a message needs a role of user or assistant and at least one content block")
            continue
        if role == previous_role:
            fail(400, "A conversation must alternate between user and assistant roles. Make sure the conversation "
                 "alternates between user and assistant roles and try again.")
        if i == 0 and role != "user":
            fail(400, "A conversation must start with a user message. Try again with a conversation that starts "
                 "with a user message.")
        answered: list[str] = []
        for block in blocks:
            if not isinstance(block, Mapping):
                continue
            if "text" in block:
                if not str(block["text"]).strip():
                    fail(400, f"The text field in the ContentBlock object at messages.{i} is blank. Add text to "
                         "the text field, and try again.")
                if role == "user":
                    last_user = str(block["text"])
            elif "toolUse" in block and role == "assistant":
                use = block["toolUse"]
                if not isinstance(use, Mapping):
                    fail(400, _invalid(f"messages.{i}.member.content.toolUse", "Member must be an object"))
                    continue
                names[str(use.get("toolUseId"))] = str(use.get("name"))
                calls.append(SeenToolCall(str(use.get("toolUseId")), str(use.get("name")), use.get("input")))
            elif "toolResult" in block and role == "user":
                result = block["toolResult"]
                if not isinstance(result, Mapping):
                    fail(400, _invalid(f"messages.{i}.member.content.toolResult", "Member must be an object"))
                    continue
                call_id = str(result.get("toolUseId"))
                if call_id not in pending:
                    fail(400, f"The toolResult blocks at messages.{i}.content contain a toolUseId ({call_id}) that "
                         "no toolUse block of the previous turn has.")
                answered.append(call_id)
                content = _items(result.get("content"))
                text = "".join(str(c["text"]) for c in content if isinstance(c, Mapping) and "text" in c)
                for c in content:
                    seen = _part(c, "tool", fail) if isinstance(c, Mapping) else None
                    if seen is not None:
                        parts.append(seen)
                results.append(SeenToolResult(call_id, names.get(call_id), text,
                                              is_error=result.get("status") == "error"))
            elif role == "user":
                seen = _part(block, "user", fail)
                if seen is not None:
                    parts.append(seen)
        if role == "user" and pending and sorted(answered) != sorted(pending):
            fail(400, f"Expected toolResult blocks at messages.{i}.content for the following Ids: "
                 + ", ".join(u for u in pending if u not in answered))
        if (calls or results) and not tools:
            fail(400, "The toolConfig field must be defined when using toolUse and toolResult content blocks.")
        pending = [str(b["toolUse"].get("toolUseId")) for b in blocks
                   if isinstance(b, Mapping) and isinstance(b.get("toolUse"), Mapping)] if role == "assistant" else []
        previous_role = role
    if _manual_claude_thinking(body, model):
        problem = thinking_turn_problem(messages, _converse_type, _is_converse_result)
        if problem is not None:
            fail(400, _MODEL_ERRORS + problem)
    system = _items(body.get("system"))
    config = _obj(body.get("inferenceConfig"))
    max_tokens = config.get("maxTokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1):
        fail(400, _invalid("inferenceConfig.maxTokens", "Member must have value greater than or equal to 1",
                           value=max_tokens))
    text_format = _obj(body.get("outputConfig")).get("textFormat")
    response_format = None
    if isinstance(text_format, Mapping):
        spec = _obj(_obj(text_format.get("structure")).get("jsonSchema"))
        try:
            schema = json.loads(spec.get("schema", ""))
        except (TypeError, ValueError):
            fail(400, "outputConfig.textFormat.structure.jsonSchema.schema is not a JSON document")
            schema = {}
        response_format = {"name": spec.get("name"), "schema": schema, "strict": True}
    return Conversation(
        system="".join(str(b["text"]) for b in system if isinstance(b, Mapping) and "text" in b),
        last_user_text=last_user,
        message_count=len(messages),
        tools=tuple(tools),
        tool_choice=choice,
        tool_choice_name=choice_name,
        tool_calls=tuple(calls),
        tool_results=tuple(results),
        max_tokens=config.get("maxTokens") if isinstance(config.get("maxTokens"), int) else None,
        parts=tuple(parts),
        settings=_settings(body, choice in ("required", "tool"), fail),
        response_format=response_format,
    )


# --- answers ----------------------------------------------------------------------------------------


def _call_id(call: FakeToolCall, index: int, i: int) -> str:
    return call.id if call.id is not None else f"tooluse_fake{index:05d}x{i}"


def _input(call: FakeToolCall) -> Any:
    if not isinstance(call.arguments, str):
        return dict(call.arguments)
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


def _input_text(call: FakeToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(dict(call.arguments))


def _signature(index: int) -> str:
    return base64.b64encode(f"fake-bedrock-signature:{index}".encode() + b"\xfb\xef\xff").decode()


def _usage(inp: int, out: int) -> dict[str, Any]:
    return {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out,
            "cacheReadInputTokens": 0, "cacheWriteInputTokens": 0}


def _stop(reply: FakeReply) -> str:
    return _STOPS.get(reply.stop_reason, "end_turn")


def bedrock_json(
    reply: FakeReply, *, index: int, input_tokens: int, output_tokens: int, redacted: str | None = None
) -> dict[str, Any]:
    """The Converse answer body for ``reply`` (``redacted``: a ``redactedContent`` reasoning block first)."""
    content: list[dict[str, Any]] = []
    if redacted is not None:
        content.append({"reasoningContent": {"redactedContent": redacted}})
    if reply.reasoning:
        content.append({"reasoningContent": {"reasoningText": {"text": reply.reasoning,
                                                               "signature": _signature(index)}}})
    if reply.text:
        content.append({"text": reply.text})
    for i, call in enumerate(reply.tool_calls):
        content.append({"toolUse": {"toolUseId": _call_id(call, index, i), "name": call.name,
                                    "input": _input(call)}})
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": _stop(reply),
        "usage": _usage(input_tokens, output_tokens),
        "metrics": {"latencyMs": 1},
    }


def _pieces(text: str, words: int) -> Iterator[str]:
    tokens = re.findall(r"\s*\S+\s*", text) or ([text] if text else [])
    for i in range(0, len(tokens), max(1, words)):
        yield "".join(tokens[i : i + max(1, words)])


def bedrock_frames(
    reply: FakeReply, *, index: int, input_tokens: int, output_tokens: int, redacted: str | None = None
) -> list[RawFrame]:
    """The ConverseStream messages that deliver ``reply``: text blocks have no start; tool uses do."""
    frames: list[RawFrame] = [({"role": "assistant"}, "messageStart", False)]
    block = 0
    if redacted is not None:  # a redacted reasoning block arrives whole in one delta
        frames.append(({"contentBlockIndex": block, "delta": {"reasoningContent": {"redactedContent": redacted}}},
                       "contentBlockDelta", False))
        frames.append(({"contentBlockIndex": block}, "contentBlockStop", False))
        block += 1
    if reply.reasoning:
        for piece in _pieces(reply.reasoning, reply.words_per_chunk):
            frames.append(({"contentBlockIndex": block, "delta": {"reasoningContent": {"text": piece}}},
                           "contentBlockDelta", True))
        frames.append(({"contentBlockIndex": block, "delta": {"reasoningContent": {"signature": _signature(index)}}},
                       "contentBlockDelta", False))
        frames.append(({"contentBlockIndex": block}, "contentBlockStop", False))
        block += 1
    if reply.text:
        for piece in _pieces(reply.text, reply.words_per_chunk):
            frames.append(({"contentBlockIndex": block, "delta": {"text": piece}}, "contentBlockDelta", True))
        frames.append(({"contentBlockIndex": block}, "contentBlockStop", False))
        block += 1
    for i, call in enumerate(reply.tool_calls):
        start = {"toolUse": {"toolUseId": _call_id(call, index, i), "name": call.name}}
        frames.append(({"contentBlockIndex": block, "start": start}, "contentBlockStart", True))
        text = _input_text(call)
        for at in range(0, len(text), 9):
            frames.append(({"contentBlockIndex": block, "delta": {"toolUse": {"input": text[at : at + 9]}}},
                           "contentBlockDelta", True))
        frames.append(({"contentBlockIndex": block}, "contentBlockStop", False))
        block += 1
    frames.append(({"stopReason": _stop(reply)}, "messageStop", False))
    frames.append(({"usage": _usage(input_tokens, output_tokens), "metrics": {"latencyMs": 1}}, "metadata", False))
    return frames


def bedrock_frame_bytes(payload: Any, event: str | None, n: int) -> bytes:
    """One framed message; every JSON payload gets the random-length ``p`` padding the service adds."""
    if isinstance(payload, str | bytes):  # a malformed payload, sent as it is
        raw = payload.encode("utf-8") if isinstance(payload, str) else payload
        return event_message(event or "messageStart", raw)
    if event is not None and event.startswith("exception:"):
        return exception_message(event.partition(":")[2], json.dumps(payload).encode("utf-8"))
    padded = {**payload, "p": "abcdefghijklmnopqrstuvwxyz"[: n % 26]}
    return event_message(event or "messageStart", json.dumps(padded, separators=(",", ":")).encode("utf-8"))


# --- errors -----------------------------------------------------------------------------------------


def bedrock_error_type(err: FakeError) -> str:
    """The ``x-amzn-ErrorType`` of an error answer (``err.code``, else the status's documented type)."""
    default = _ERROR_TYPES.get(err.status, ("InternalServerException" if err.status >= 500 else
                                            "ValidationException", ""))[0]
    return err.code or default


def bedrock_error_payload(err: FakeError) -> dict[str, Any]:
    """``{"message": …}``: Bedrock's error body."""
    message = _ERROR_TYPES.get(err.status, ("", f"HTTP {err.status}"))[1]
    return {"message": err.message or message}


def stream_exception_event(err: FakeError) -> str:
    """The event name an in-stream exception is framed under: ``exception:throttlingException``."""
    name = bedrock_error_type(err)
    return "exception:" + name[:1].lower() + name[1:]
