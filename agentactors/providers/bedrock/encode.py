"""Writing the Bedrock Converse wire: the request body for an :class:`~agentactors.LLMRequest`.

Mapping of the internal (OpenAI-chat shaped) conversation, per ``docs/wire.md``:

* system messages → ``system: [{text}]``, one block each, wherever they stand;
* a user message → ``{role: user, content: [{text} | {image} | {document}]}`` (a blank — empty or
  whitespace-only — text is dropped: Converse rejects a blank text block with a 400 ValidationException);
* an assistant message → its replayed ``reasoningContent`` blocks (``provider_data["bedrock"]["blocks"]``,
  verbatim: a signature covers its exact text; left out when ``provider_data["bedrock"]["model"]`` names another
  model than the request's — :func:`~.models.model_id` compared, so another inference profile of one model is the
  same model — as a signature is valid for the model that made it only), a text block if not blank, then one
  ``toolUse {toolUseId, name, input}`` per call; a message left with no block at all is not sent (Claude
  with manual thinking on, in a tool loop whose first assistant message has no ``reasoningContent`` block,
  has its ``thinking`` left out with ``llm.setting_dropped``, as the Anthropic wire does);
* a tool message → a ``toolResult {toolUseId, content: [{text}, media…], status: success|error}`` block
  in a **user** message (a blank text dropped beside media; a result with neither — a tool that returned
  nothing — sends :data:`EMPTY_TOOL_RESULT`, as Converse takes no blank text and no empty content);
  neighbours of one role merge (Converse wants the roles to alternate), tool results first;
* a call id Converse does not take as a ``toolUseId`` (``[a-zA-Z0-9_-]``, 1 to 64) is sent as the Anthropic wire
  sends it (:func:`~agentactors.providers.anthropic.encode.sendable_call_id`); a conversation with nothing to send is
  refused before sending with a request-kind :class:`~agentactors.ProviderError`;
* tools → ``toolConfig.tools[].toolSpec {name, description (when not empty), inputSchema: {json}}``; the tool
  choice → ``toolConfig.toolChoice``: ``required`` → ``{any: {}}``, a named tool → ``{tool: {name}}``, ``auto``
  → nothing (the default; models without ``toolChoice`` support accept its absence only), ``none`` → the tools
  are left out, or, when the conversation already holds tool blocks (Converse then requires a
  ``toolConfig``), sent without a choice and the setting dropped with ``llm.setting_dropped``;
* ``max_tokens`` / ``temperature`` / ``top_p`` / ``stop`` → ``inferenceConfig.maxTokens`` / ``temperature`` /
  ``topP`` / ``stopSequences`` (a temperature above 1 is refused: Converse takes 0 to 1 for every model; so is a
  whitespace-only stop sequence for Claude);
  ``seed`` and ``parallel_tool_calls`` have no field (dropped, said out loud);
* reasoning → ``additionalModelRequestFields``: Claude's ``thinking`` (and ``output_config.effort``) planned by
  the Anthropic wire's own tables from ``thinking_budget`` / ``reasoning_effort``; ``reasoning_effort`` for
  gpt-oss, ``reasoning_config`` for Qwen 3; an effort for another model is dropped, a thinking budget refused;
* ``ModelSettings(cache=…)`` → ``cachePoint {type: default}`` blocks after the system prompt, after the tools
  and at the end of the newest message, on the models that cache (:mod:`.models`); dropped on the others;
* ``LLMRequest.response_format`` → ``outputConfig.textFormat {type: json_schema, structure: {jsonSchema:
  {name, schema (a JSON string), description}}}``;
* images → ``{image: {format, source: {bytes}}}``; documents → ``{document: {format, name, source: {bytes}}}``
  (the name from the title, cut to the characters Converse allows, else ``document-N``); a part given by URL
  is refused (Converse reads only bytes or an S3 location, never an http or gs URL), and so is audio.

``vendor_options["bedrock"]`` is merged into the body last, a dict into the dict the codec built key by key
(``additionalModelRequestFields``, so a vendor field such as ``top_k`` sits beside the mapped ones;
``inferenceConfig``, so ``{"maxTokens": 500}`` keeps the mapped ``temperature`` and ``stopSequences``;
``toolConfig``), anything else as given (``guardrailConfig``, ``performanceConfig``, …), except
``tool_extras`` (``{tool name: {field: value}}`` merged into that tool's ``toolSpec``, e.g. ``strict: true``)
and ``messages``, the conversation, and ``model`` / ``modelId`` and ``stream``, the URL's and the route's, which
are refused (:func:`~agentactors.providers._settings.check_owned`), as is a ``toolConfig`` naming ``tools`` beside
declared tools (it would replace them).
What the merged ``inferenceConfig`` then sends is judged as the settings are (a temperature above 1 refused, and
Claude's conflict table), and tool names follow Converse's rule (``[a-zA-Z0-9_-]+``, 1 to 64 characters: no
dots; :class:`~agentactors.providers.errors.UnsupportedToolNameError`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...errors import UnsupportedToolChoiceError
from ...messages import LLMRequest, Message
from ...parts import Audio, Document, Image, Part, Text
from .._constrained_schema import anthropic_output_schema
from .._media import check_limits, media_of, unsupported
from .._settings import BEDROCK_TOOL_NAMES, check_owned, check_tool_names, dropped, refused, sent_integer, sent_number
from ..anthropic.encode import (
    UNTHINKABLE_TURN,
    conversation_error,
    sendable_call_id,
    trim_final_assistant,
    turn_begins_thinking,
)
from ..anthropic.models import check_sent_sampling, check_sent_stop, plan_thinking, sampling_fields
from .models import DOCUMENT_FORMATS, IMAGE_FORMATS, LIMITS, WIRE, BedrockModel, model_id, model_row

__all__ = ["CACHE_POINT", "EMPTY_TOOL_RESULT", "check_parts", "encode_request", "forced_choice_refusal", "part_block"]

#: The block a cache breakpoint is.
CACHE_POINT: Mapping[str, Any] = {"cachePoint": {"type": "default"}}
#: The text of a tool result that has none (blank text, no media): Converse rejects a blank text block, and
#: the model is told the tool answered with nothing rather than the call being left unanswered.
EMPTY_TOOL_RESULT = "(no output)"
_EFFORTS = ("low", "medium", "high")
# Converse's InferenceConfiguration.temperature, whatever the model ("must have value less than or equal to 1").
_MAX_TEMPERATURE = 1.0
# Body fields no vendor option may set: the conversation, and the model and streaming, which are the URL's (the
# model id) and the route's: an option naming them could not switch them, only put a stray field in the body.
_OWNED = frozenset({"messages", "model", "modelId", "stream"})
_NAME_CHARS = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")
_SPACES = re.compile(r"\s+")


def _is_claude(row: BedrockModel | None) -> bool:
    return row is not None and row.reasoning == "anthropic"


def _anthropics(row: BedrockModel | None) -> bool:
    """Whether ``row`` is a Claude model, any generation (:func:`_is_claude`: those that think)."""
    return row is not None and row.patterns[0].startswith("anthropic.")


def check_parts(messages: Sequence[Message], model: str) -> None:
    """Raise :class:`~agentactors.UnsupportedContentError` for a part this model or wire cannot carry."""
    row = model_row(model)
    for part in media_of(messages):
        if isinstance(part, Audio):
            raise unsupported(part, "the Converse API takes no audio input", wire=WIRE, model=model)
        if part.url is not None:
            raise unsupported(part, "Converse takes media as bytes (or an S3 location), never an http or gs URL",
                              wire=WIRE, model=model)
        if isinstance(part, Image):
            if row is not None and not row.vision:
                raise unsupported(part, "the model takes no images", wire=WIRE, model=model)
            if part.media_type not in IMAGE_FORMATS:
                raise unsupported(part, "Converse takes PNG, JPEG, GIF or WebP images", wire=WIRE, model=model)
        elif isinstance(part, Document):
            if row is not None and not row.documents:
                raise unsupported(part, "the model takes no documents", wire=WIRE, model=model)
            if part.media_type not in DOCUMENT_FORMATS:
                raise unsupported(part, "Converse takes PDF, CSV, DOC(X), XLS(X), HTML, TXT and MD documents",
                                  wire=WIRE, model=model)
    check_limits(messages, LIMITS, wire=WIRE, model=model)


def _document_name(title: str | None, n: int) -> str:
    # Converse allows letters, digits, single spaces, hyphens, parentheses and brackets in a document name.
    name = _SPACES.sub(" ", _NAME_CHARS.sub("-", title or "")).strip(" -")
    return name[:200] or f"document-{n}"


def part_block(part: Part, n: int = 1) -> dict[str, Any] | None:
    """One content part as a content block (``None`` for blank text).  ``n`` numbers an untitled document."""
    if isinstance(part, Text):
        return {"text": part.text} if part.text.strip() else None
    if isinstance(part, Image):
        assert part.media_type is not None  # check_parts refused an image of unknown type
        return {"image": {"format": IMAGE_FORMATS[part.media_type], "source": {"bytes": part.base64()}}}
    assert isinstance(part, Document)  # check_parts refused audio before encoding began
    return {"document": {"format": DOCUMENT_FORMATS[part.media_type], "name": _document_name(part.title, n),
                         "source": {"bytes": part.base64()}}}


class _Numbering:
    """Numbers the documents of one request, so that untitled ones get distinct names."""

    def __init__(self) -> None:
        self.count = 0

    def blocks(self, message: Message) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, Document):
                self.count += 1
            block = part_block(part, self.count)
            if block is not None:
                out.append(block)
        return out


def _replayed(message: Message, model: str) -> list[dict[str, Any]]:
    data = (message.provider_data or {}).get(WIRE)
    if not isinstance(data, Mapping):
        return []
    blocks = data.get("blocks")
    if not isinstance(blocks, list):
        return []
    made_by = data.get("model")
    if isinstance(made_by, str) and made_by != model and model_id(made_by) != model_id(model):
        # The rare path: another model made it (a fallback opus -> sonnet): its signatures are a 400 here
        # ("Invalid `signature` in `thinking` block"), and its reasoning is not this model's to continue.
        return []
    return [dict(b) for b in blocks if isinstance(b, Mapping) and "reasoningContent" in b]


def _blocks_for(message: Message, numbering: _Numbering, model: str) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        if message.media:
            content = numbering.blocks(message)  # a blank text beside the media is dropped
        else:
            content = [{"text": message.content}] if message.content.strip() else []
        result = {"toolUseId": sendable_call_id(message.tool_call_id or ""),
                  "content": content or [{"text": EMPTY_TOOL_RESULT}],
                  "status": "error" if message.is_error else "success"}
        return "user", [{"toolResult": result}]
    if message.role == "user":
        return "user", numbering.blocks(message)
    blocks = _replayed(message, model)
    if message.content.strip():
        blocks.append({"text": message.content})
    for call in message.tool_calls:
        blocks.append({"toolUse": {"toolUseId": sendable_call_id(call.id), "name": call.name,
                                   "input": dict(call.arguments)}})
    return "assistant", blocks


def _messages(messages: Iterable[Message], model: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    numbering = _Numbering()
    for message in messages:
        if message.role == "system":
            if message.content.strip():
                system.append({"text": message.content})
            continue
        role, blocks = _blocks_for(message, numbering, model)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)  # Converse wants the roles to alternate
        else:
            out.append({"role": role, "content": blocks})
    for entry in out:
        results = [b for b in entry["content"] if "toolResult" in b]
        if results and len(results) < len(entry["content"]):
            entry["content"] = results + [b for b in entry["content"] if "toolResult" not in b]
    return system, out


def _has_tool_blocks(messages: Sequence[dict[str, Any]]) -> bool:
    return any("toolUse" in b or "toolResult" in b for m in messages for b in m["content"])


def _tool_config(request: LLMRequest, model: str, row: BedrockModel | None,
                 messages: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    if not request.tools:
        return None
    choice = request.tool_choice
    if choice.mode == "none" and not _has_tool_blocks(messages):
        return None
    if row is not None and not row.tools:
        # The rare path: Converse answers a toolConfig for this model with a ValidationException (see .models).
        raise refused(WIRE, model, "tools", "the model takes no tools through Converse; send the request without "
                      "tools (an Agent describes them in the prompt for such a model)")
    extras = request.options_for(WIRE).get("tool_extras")
    extras = extras if isinstance(extras, Mapping) else {}
    tools: list[dict[str, Any]] = []
    for spec in request.tools:
        tool: dict[str, Any] = {"name": spec.name, "inputSchema": {"json": dict(spec.parameters)}}
        if spec.description:
            tool["description"] = spec.description
        more = extras.get(spec.name)
        if isinstance(more, Mapping):
            tool.update(more)  # e.g. strict: true
        tools.append({"toolSpec": tool})
    config: dict[str, Any] = {"tools": tools}
    if choice.mode == "none":
        dropped(WIRE, model, "tool_choice", "none",
                "Converse has no 'none' choice and needs the tools while the conversation holds tool calls")
    elif choice.mode == "required":
        config["toolChoice"] = {"any": {}}
    elif choice.mode == "tool":
        if row is not None and row.forced != "any_and_tool":
            raise UnsupportedToolChoiceError(
                f"model {model!r} takes toolChoice 'any' but not a named tool on Bedrock; use ToolChoice.required()",
                provider=WIRE, model=model)
        config["toolChoice"] = {"tool": {"name": choice.name}}
    return config


def _inference(request: LLMRequest, model: str, row: BedrockModel | None, *, thinking: bool) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if request.max_tokens is not None:
        config["maxTokens"] = request.max_tokens
    if _is_claude(row):
        sampling = sampling_fields(request, model, thinking=thinking, wire=WIRE)  # Claude's conflict table
    else:
        sampling = {k: v for k in ("temperature", "top_p") if (v := getattr(request, k)) is not None}
    if sampling.get("temperature", 0) > _MAX_TEMPERATURE:
        raise refused(WIRE, model, "temperature",
                      f"Converse takes 0 to {_MAX_TEMPERATURE:g} for every model, not {sampling['temperature']!r}")
    if "temperature" in sampling:
        config["temperature"] = sampling["temperature"]
    if "top_p" in sampling:
        config["topP"] = sampling["top_p"]
    if request.stop:
        config["stopSequences"] = list(request.stop)
    if request.seed is not None:
        dropped(WIRE, model, "seed", request.seed, "the Converse API has no seed")
    if request.parallel_tool_calls is not None:
        dropped(WIRE, model, "parallel_tool_calls", request.parallel_tool_calls,
                "the Converse API has no parallel_tool_calls")
    return config


def _reasoning(request: LLMRequest, model: str, row: BedrockModel | None) -> dict[str, Any]:
    """The ``additionalModelRequestFields`` that ask ``model`` to reason, from the request's settings."""
    if _is_claude(row):
        thinking, effort = plan_thinking(request, model, wire=WIRE)
        fields: dict[str, Any] = {}
        if thinking is not None:
            fields["thinking"] = thinking
        if effort is not None:
            fields["output_config"] = {"effort": effort}
        return fields
    if request.thinking_budget:
        raise refused(WIRE, model, "thinking_budget", "only Claude takes a thinking budget on Bedrock")
    effort = request.reasoning_effort
    if effort is None or effort == "none":
        return {}
    kind = row.reasoning if row is not None else "none"
    if kind in ("reasoning_effort", "reasoning_config"):
        if effort not in _EFFORTS:
            raise refused(WIRE, model, "reasoning_effort", f"{effort!r} is not accepted: use 'low', 'medium' or 'high'")
        return {kind: effort}
    dropped(WIRE, model, "reasoning_effort", effort, "the model has no reasoning setting on Bedrock")
    return {}


def _thinking_on(request: LLMRequest, fields: Mapping[str, Any]) -> bool:
    extra = request.options_for(WIRE).get("additionalModelRequestFields")
    thinking = extra.get("thinking") if isinstance(extra, Mapping) and "thinking" in extra else fields.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type", "enabled") != "disabled"


def _manual_thinking(request: LLMRequest, fields: Mapping[str, Any]) -> bool:
    """Whether Claude's thinking sent is manual (``enabled``: every step thinks), not adaptive (optional)."""
    extra = request.options_for(WIRE).get("additionalModelRequestFields")
    thinking = extra.get("thinking") if isinstance(extra, Mapping) and "thinking" in extra else fields.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type", "enabled") == "enabled"


def forced_choice_refusal(request: LLMRequest, model: str) -> str | None:
    """Why ``request``'s settings rule out a forced tool choice for ``model`` (Claude thinking on), or ``None``."""
    row = model_row(model)
    if not _is_claude(row):
        return None
    if not _thinking_on(request, _reasoning(request, model, row)):
        return None
    return "extended thinking is on, and Claude on Bedrock refuses a forced tool choice together with thinking"


def _mark_cache(body: dict[str, Any], request: LLMRequest, model: str, row: BedrockModel | None) -> None:
    policy = request.cache
    if policy is None or not policy.enabled:
        return
    if row is None or not row.cache:
        dropped(WIRE, model, "cache", policy, "the model has no prompt caching on Bedrock")
        return
    if policy.retention == "extended":
        dropped(WIRE, model, "cache.retention", "extended", "Bedrock's cachePoint takes the default retention")
    if policy.system and body.get("system"):
        body["system"].append(dict(CACHE_POINT))
    tools = body.get("toolConfig", {}).get("tools")
    if policy.tools and tools:
        tools.append(dict(CACHE_POINT))
    if policy.conversation and body["messages"]:
        body["messages"][-1]["content"].append(dict(CACHE_POINT))


def _output_config(request: LLMRequest, row: BedrockModel | None) -> dict[str, Any] | None:
    fmt = request.response_format
    if fmt is None:
        return None
    schema = anthropic_output_schema(fmt.schema) if _is_claude(row) else dict(fmt.schema)
    spec: dict[str, Any] = {"name": fmt.name, "schema": json.dumps(schema, ensure_ascii=False)}
    if fmt.description:
        spec["description"] = fmt.description
    return {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": spec}}}


def encode_request(request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
    """The Converse / ConverseStream body for ``request`` (see the module docstring for the mapping)."""
    del stream  # the same body goes to /converse and /converse-stream
    row = model_row(model)
    options = request.options_for(WIRE)
    check_owned(WIRE, model, options, _OWNED)
    tool_config = options.get("toolConfig")
    if request.tools and isinstance(tool_config, Mapping) and "tools" in tool_config:
        # It would replace the declared tools (toolConfig merges key by key): the model could not call them.
        raise refused(WIRE, model, "vendor_options",
                      "vendor_options['bedrock']['toolConfig'] may not set 'tools' beside the request's declared "
                      "tools (it would replace them); declare every tool, or send raw tools without declared ones")
    check_parts(request.messages, model)
    check_tool_names(WIRE, model, request.tools, BEDROCK_TOOL_NAMES)
    additional = _reasoning(request, model, row)
    thinking = _thinking_on(request, additional)
    if thinking and request.tool_choice.forced and request.tools:
        raise UnsupportedToolChoiceError(
            f"a forced tool choice ({request.tool_choice.mode!r}) cannot be combined with extended thinking on "
            "Claude; use ToolChoice.auto() or turn thinking off for this request", provider=WIRE, model=model)
    system, messages = _messages(request.messages, model)
    if messages and messages[-1]["role"] == "assistant" and _anthropics(row):
        trim_final_assistant(messages, "text")  # (Claude's rule: its final assistant text ends with no whitespace)
    error = conversation_error(WIRE, model, messages)
    if error is not None:
        raise error
    if thinking and _is_claude(row) and _manual_thinking(request, additional) and not turn_begins_thinking(
            messages, lambda block: "reasoningContent" in block):
        # The rare path: another wire made the turn's first step (its thinking, if any, is not Converse's to send).
        extra = options.get("additionalModelRequestFields")
        given = extra if isinstance(extra, Mapping) and "thinking" in extra else None
        dropped(WIRE, model, "thinking", (given or additional).get("thinking"), UNTHINKABLE_TURN)
        additional = {key: value for key, value in additional.items() if key != "thinking"}
        thinking = False
        if given is not None:
            options = {**options, "additionalModelRequestFields": {
                key: value for key, value in given.items() if key != "thinking"}}
    body: dict[str, Any] = {"messages": messages}
    if system:
        body["system"] = system
    inference = _inference(request, model, row, thinking=thinking)
    if inference:
        body["inferenceConfig"] = inference
    tools = _tool_config(request, model, row, messages)
    if tools is not None:
        body["toolConfig"] = tools
    output = _output_config(request, row)
    if output is not None:
        body["outputConfig"] = output
    _mark_cache(body, request, model, row)
    if additional:
        body["additionalModelRequestFields"] = additional
    for key, value in options.items():
        if key == "tool_extras":
            continue  # read into the tool specs above
        built = body.get(key)
        if isinstance(value, Mapping):
            # Into a dict the codec built key by key: a mapped setting the option does not name stays.
            body[key] = {**built, **value} if isinstance(built, dict) else dict(value)
        else:
            body[key] = value
    if options:
        _check_sent(body, model, row, options)  # what the options set is judged as the settings were
    if _is_claude(row) and "inferenceConfig" in body:
        # Claude refuses a whitespace-only stop sequence on Bedrock as on its own API.
        named = options.get("inferenceConfig")
        check_sent_stop(WIRE, model, body["inferenceConfig"].get("stopSequences"),
                        named if isinstance(named, Mapping) else {}, key="stopSequences")
    return body


def _check_sent(body: Mapping[str, Any], model: str, row: BedrockModel | None, options: Mapping[str, Any]) -> None:
    """Judge the ``inferenceConfig`` (and Claude's ``thinking``) a body merged with vendor options sends.

    A temperature of 0 to 1 for every model, a ``topP`` of 0 to 1, a positive ``maxTokens``; for Claude, the
    Anthropic wire's conflict table (one sampler, thinking's temperature and ``top_p``).
    """
    config = body.get("inferenceConfig")
    config = config if isinstance(config, Mapping) else {}
    named = options.get("inferenceConfig")
    named = named if isinstance(named, Mapping) else {}
    temperature, top_p = config.get("temperature"), config.get("topP")
    if _is_claude(row):
        extra = body.get("additionalModelRequestFields")
        thinking = extra.get("thinking") if isinstance(extra, Mapping) else None
        check_sent_sampling(WIRE, model, named, temperature=temperature, top_p=top_p, thinking=thinking,
                            keys=("temperature", "topP"))
    sent_number(WIRE, model, "temperature", "temperature", temperature, named, low=0.0, high=_MAX_TEMPERATURE)
    sent_number(WIRE, model, "top_p", "topP", top_p, named, low=0.0, high=1.0)
    sent_integer(WIRE, model, "max_tokens", "maxTokens", config.get("maxTokens"), named, low=1, high=2**31 - 1)
