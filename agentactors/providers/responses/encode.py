"""Writing the OpenAI Responses wire: an :class:`~agentactors.LLMRequest` as a ``POST /responses`` body.

Pure functions, no I/O.  The mapping (``docs/wire.md``, "OpenAI Responses"):

* leading system messages → top-level ``instructions`` (joined by a blank line); a later one → a
  ``system`` input item;
* a user message → ``{"role": "user", "content": text}``, or content parts (``input_text``,
  ``input_image``, ``input_file``) when it carries media;
* an assistant message → its output items again: when the message carries this wire's replay skeleton
  (``provider_data[WIRE]["items"]``, see :mod:`.decode`) and its text is unchanged, the reasoning items
  verbatim (``encrypted_content`` included), the message items with their ids and ``phase`` and the
  ``function_call`` items with their ``fc_`` ids, in the order they came; otherwise its text as one
  assistant message and one ``function_call`` item per call (no item ids: an item id whose reasoning item
  is not sent is a 400); the reasoning items are left out (and with them the item ids) when
  ``provider_data[WIRE]["model"]`` names another model than the request's (names compared as
  :func:`~agentactors.providers._settings.bare_model` reads them), as encrypted reasoning is readable by the model
  that made it only (``invalid_encrypted_content``) and a model that does not reason refuses reasoning items; a
  message without that stamp is replayed as before, and the stamp is never sent;
* a tool message → ``function_call_output {call_id, output}``; media a tool returned go in ``output`` as
  content parts (this wire takes them there);
* a call id over :data:`MAX_CALL_ID` (64) characters — a caller's history from another vendor or framework — is a 400
  ("Invalid 'input[i].call_id': string too long"): it is sent as
  :class:`~agentactors.providers.openai.encode.SentIds` makes it, in the ``function_call`` and its
  ``function_call_output`` alike (decoded answers keep the ids the vendor sent);
* tools → flat ``{"type": "function", "name", "description", "parameters", "strict"}`` (``strict`` sent
  always: the wire's default is ``true``); ``tool_choice`` → ``"auto" | "none" | "required"`` or
  ``{"type": "function", "name"}``;
* ``response_format`` → ``text.format {"type": "json_schema", "name", "schema", "strict"}``;
* ``store: false`` always (the loop sends the whole conversation), and
  ``include: ["reasoning.encrypted_content"]`` for a model known to reason, so its reasoning can be replayed.

``vendor_options[WIRE]`` is merged over the body (a ``None`` value removes a field; a dict merges into a
dict the codec built, so ``{"reasoning": {"summary": "auto"}}`` keeps the effort; a ``tools`` list beside declared
tools is appended to them — a hosted tool such as ``{"type": "web_search"}`` — not put in their place); ``model``,
``input`` and
``stream`` are refused (:func:`~agentactors.providers._settings.check_owned`).  The codec's own keys,
not sent: ``strict_tools`` (``True`` or tool names) and ``reasoning_summary`` (``"auto"``, ``"concise"``,
``"detailed"``: ``reasoning.summary``).  What the merged body sends for a mapped setting (``temperature``,
``top_p``, ``max_output_tokens``, ``reasoning.effort``) is judged as the setting is (:func:`.models.check_sent`).
Tool names follow OpenAI's rule (``^[a-zA-Z0-9_-]{1,64}$``) on OpenAI's endpoint and on Azure
(:class:`~agentactors.providers.errors.UnsupportedToolNameError`); a compatible server judges them itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...messages import LLMRequest, Message, ResponseFormat, ToolCall, ToolChoice, ToolSpec
from ...parts import Document, Image, Part, Text
from .._constrained_schema import openai_strict_schema
from .._settings import OPENAI_TOOL_NAMES, bare_model, check_owned, check_tool_names
from ..openai.encode import SentIds, raw_tools, strict_tool, tool_parameters
from .models import WIRE, check_max_output_tokens, check_parts, check_sent, encode_settings, reasons

__all__ = [
    "CODEC_OPTIONS",
    "MAX_CALL_ID",
    "encode_input",
    "encode_message",
    "encode_part",
    "encode_request",
    "encode_text_format",
    "encode_tool",
    "encode_tool_choice",
]

CODEC_OPTIONS = frozenset({"strict_tools", "reasoning_summary"})
# Body fields no vendor option may set or remove: the model, the conversation and the call's kind.
_OWNED = frozenset({"model", "input", "stream"})
_ENCRYPTED = "reasoning.encrypted_content"
#: The longest ``call_id`` the Responses API takes (``input[i].call_id``): a longer one is a 400 ("string too long.
#: Expected a string with maximum length 64").
MAX_CALL_ID = 64


def encode_request(
    request: LLMRequest, model: str, *, stream: bool, official: bool = False, sent_as: str | None = None
) -> dict[str, Any]:
    """The request body (see the module docstring for the mapping).

    ``sent_as``: the name the request goes out as when ``model`` is another name for it (Azure: the deployment,
    ``model`` its underlying model, which the settings are judged by) — the name the decoder stamps, which a
    message's reasoning items are compared with (:func:`encode_message`); ``model`` itself when not given.
    """
    options = request.options_for(WIRE)
    check_owned(WIRE, model, options, _OWNED)
    check_max_output_tokens(request, model, official=official)
    check_parts(request.messages, model, official=official)
    if request.tools and official:
        # OpenAI's rule, on OpenAI's endpoint only: a compatible server (vLLM, Ollama, a proxy to another vendor)
        # takes the names it takes, whatever model name it serves — a model OpenAI's tables know included.
        check_tool_names(WIRE, model, request.tools, OPENAI_TOOL_NAMES)
    instructions, items = encode_input(request.messages, model=model if sent_as is None else sent_as)
    body: dict[str, Any] = {"model": model, "input": items}
    if instructions is not None:
        body["instructions"] = instructions
    if request.tools:
        strict = options.get("strict_tools", False)
        body["tools"] = [encode_tool(t, strict_tool(strict, t.name), model=model) for t in request.tools]
        body["tool_choice"] = encode_tool_choice(request.tool_choice)
    body["stream"] = stream
    body["store"] = False
    if reasons(model):
        body["include"] = [_ENCRYPTED]
    if request.max_tokens is not None:
        body["max_output_tokens"] = request.max_tokens
    body.update(encode_settings(request, model, tools=bool(request.tools)))
    summary = options.get("reasoning_summary")
    if summary is not None:
        body["reasoning"] = {**body.get("reasoning", {}), "summary": summary}
    if request.response_format is not None:
        body["text"] = encode_text_format(request.response_format)
    _merge(body, options, model, declared=bool(request.tools))
    if options:
        check_sent(body, model, options, official=official)  # the options' values judged as the settings were
    return body


def _merge(body: dict[str, Any], options: dict[str, Any], model: str, *, declared: bool) -> None:
    for key, value in options.items():
        if key in CODEC_OPTIONS:
            continue
        if value is None:
            body.pop(key, None)
        elif key == "tools" and declared:
            body["tools"] = body["tools"] + raw_tools(WIRE, model, value)  # appended: see raw_tools
        elif isinstance(value, dict) and isinstance(body.get(key), dict):
            body[key] = {**body[key], **value}
        else:
            body[key] = value


def encode_input(messages: Sequence[Message], *, model: str | None = None) -> tuple[str | None, list[dict[str, Any]]]:
    """``(instructions, input items)``: the leading system messages become ``instructions``.

    ``model``: the model they go to (another model's reasoning items are not replayed: see :func:`encode_message`).
    A call id over :data:`MAX_CALL_ID` characters is sent as :class:`~agentactors.providers.openai.encode.SentIds`
    makes it.
    """
    lead: list[str] = []
    start = 0
    for m in messages:
        if m.role != "system":
            break
        lead.append(m.content)
        start += 1
    items: list[dict[str, Any]] = []
    ids = SentIds(messages, MAX_CALL_ID)
    for m in messages[start:]:
        items.extend(encode_message(m, model=model, ids=ids))
    return ("\n\n".join(lead) if lead else None), items


def encode_message(m: Message, *, model: str | None = None, ids: SentIds | None = None) -> list[dict[str, Any]]:
    """One message as input items (an assistant message may be several; an empty one is none).

    ``model``: the model it goes to; an assistant message stamped with another model
    (``provider_data[WIRE]["model"]``) is sent without its reasoning items (``None``: no model compared).
    ``ids``: the ids the conversation's calls and results are sent with (one for this message alone when not given).
    """
    if m.role == "assistant":
        return _assistant(m, model, ids or SentIds((m,), MAX_CALL_ID))
    if m.role == "tool":
        output: Any = m.content
        if m.media:
            output = [encode_part(p) for p in m.parts]
        call_id = m.tool_call_id
        if call_id is not None and len(call_id) > MAX_CALL_ID:
            call_id = (ids or SentIds((m,), MAX_CALL_ID))(call_id)
        return [{"type": "function_call_output", "call_id": call_id, "output": output}]
    if m.media:
        return [{"role": m.role, "content": [encode_part(p) for p in m.parts]}]
    return [{"role": m.role, "content": m.content}]


def _skeleton(m: Message, model: str | None) -> list[dict[str, Any]] | None:
    """The message's replay skeleton, when it still describes the message (its text unchanged), for ``model``."""
    data = (m.provider_data or {}).get(WIRE)
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return None
    text = "".join(str(i.get("text", "")) for i in items if i.get("type") == "message")
    if text != m.content:
        return None
    made_by = data.get("model") if isinstance(data, dict) else None
    if isinstance(made_by, str) and model is not None and made_by != model and bare_model(made_by) != bare_model(model):
        # The rare path: another model made it (a fallback o4-mini -> gpt-5, or to a model that does not reason).
        # Its encrypted reasoning is a 400 there ("could not be verified"), so it stays home; the items it produced
        # then go without their ids (_assistant), as an item id without its reasoning item is a 400 too.
        return [i for i in items if i.get("type") != "reasoning"]
    return items


def _assistant(m: Message, model: str | None, ids: SentIds) -> list[dict[str, Any]]:
    items = _skeleton(m, model)
    if items is None:
        out = [_assistant_text(m.content, None, None)] if m.content else []
        return out + [encode_call(c, with_id=False, ids=ids) for c in m.tool_calls]
    with_ids = any(i.get("type") == "reasoning" for i in items)
    calls = {c.id: c for c in m.tool_calls}
    placed: set[str] = set()
    out = []
    for item in items:
        kind = item.get("type")
        if kind == "reasoning":
            out.append(dict(item))
        elif kind == "message":
            text, item_id = str(item.get("text", "")), item.get("id")
            if text or item_id:
                out.append(_assistant_text(text, item_id if with_ids else None, item.get("phase")))
        elif kind == "function_call":
            call = calls.get(str(item.get("call_id")))
            if call is not None and call.id not in placed:
                placed.add(call.id)
                out.append(encode_call(call, with_id=with_ids, ids=ids))
    out.extend(encode_call(c, with_id=False, ids=ids) for c in m.tool_calls if c.id not in placed)
    return out


def _assistant_text(text: str, item_id: Any, phase: Any) -> dict[str, Any]:
    if isinstance(item_id, str) and item_id:
        # The output message item again, as the response gave it (its id ties it to its reasoning item).
        item: dict[str, Any] = {
            "type": "message",
            "role": "assistant",
            "id": item_id,
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    else:
        item = {"role": "assistant", "content": text}
    if isinstance(phase, str):
        item["phase"] = phase
    return item


def encode_call(call: ToolCall, *, with_id: bool, ids: SentIds | None = None) -> dict[str, Any]:
    """A ``function_call`` input item; ``with_id``: with the item's ``fc_`` id (only beside its reasoning).

    ``ids``: the ids the conversation's calls are sent with (an id over :data:`MAX_CALL_ID` characters is cut).
    """
    call_id = call.id
    if len(call_id) > MAX_CALL_ID:
        call_id = (ids or SentIds((), MAX_CALL_ID))(call_id)
    item: dict[str, Any] = {
        "type": "function_call",
        "call_id": call_id,
        "name": call.name,
        "arguments": call.arguments_json,
    }
    data = (call.provider_data or {}).get(WIRE)
    item_id = data.get("id") if isinstance(data, dict) else None
    if with_id and isinstance(item_id, str) and item_id:
        item["id"] = item_id
    return item


def encode_part(part: Part) -> dict[str, Any]:
    """One content part as a Responses input part (what the part is was checked by ``check_parts``)."""
    if isinstance(part, Text):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, Image):
        return {"type": "input_image", "image_url": part.url if part.url is not None else part.data_url()}
    if isinstance(part, Document):
        text = part.text
        if text is not None:
            return {"type": "input_text", "text": f"{part.title}\n\n{text}" if part.title else text}
        if part.url is not None:
            return {"type": "input_file", "file_url": part.url}
        return {"type": "input_file", "filename": part.title or "document.pdf", "file_data": part.data_url()}
    raise TypeError(f"the Responses API takes no {type(part).__name__} parts")


def encode_tool(spec: ToolSpec, strict: bool, *, model: str | None = None) -> dict[str, Any]:
    """A flat function tool (``strict`` always sent: this wire defaults it to ``true``).

    Its parameters as OpenAI takes them (:func:`~agentactors.providers.openai.encode.tool_parameters`: an array
    with no ``items`` gets ``{}``, a strict tool's schema is fitted to strict mode).

    :raises UnsupportedSettingError: a strict tool whose schema strict mode cannot carry (named).
    """
    parameters = tool_parameters(spec, strict, wire=WIRE, model=model)
    tool: dict[str, Any] = {"type": "function", "name": spec.name, "parameters": parameters, "strict": strict}
    if spec.description:
        tool["description"] = spec.description
    return tool


def encode_tool_choice(choice: ToolChoice) -> Any:
    """``tool_choice``: ``"auto"`` / ``"none"`` / ``"required"`` or ``{"type": "function", "name"}``."""
    if choice.mode == "tool":
        return {"type": "function", "name": choice.name}
    return choice.mode


def encode_text_format(fmt: ResponseFormat) -> dict[str, Any]:
    """``text: {"format": {"type": "json_schema", ...}}``, the schema fitted to strict mode when strict.

    :raises ValueError: a strict schema with a field strict mode cannot carry (named in the message).
    """
    spec: dict[str, Any] = {
        "type": "json_schema",
        "name": fmt.name,
        "schema": openai_strict_schema(fmt.schema) if fmt.strict else fmt.schema,
        "strict": fmt.strict,
    }
    if fmt.description:
        spec["description"] = fmt.description
    return {"format": spec}


