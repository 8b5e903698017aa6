"""Writing the Anthropic Messages wire: an :class:`~agentactors.LLMRequest` as a request body.

Pure functions, no I/O: :class:`~agentactors.providers.anthropic.provider.AnthropicWire` calls
:func:`encode_request` and the provider sends what it returns.

Request mapping (internal OpenAI-chat-shaped conversation → Messages):

* system messages, wherever they stand, are joined (blank line between) into top-level ``system``;
* a user message → ``{"type": "text"}`` blocks (a blank text — empty or whitespace only — is dropped: the API
  rejects it);
* an assistant message → its replayed opaque blocks (``provider_data["anthropic"]["blocks"]``:
  thinking / redacted_thinking with signatures, server tool blocks — verbatim, as received; the thinking
  blocks left out when ``provider_data["anthropic"]["model"]`` names another model than the request's, since a
  signature is valid for the model that made it only, and a message without that stamp replayed whole),
  a text block only if the text is not blank, then one ``tool_use{id, name, input}`` per call; with
  manual thinking on (``thinking.type: enabled``), a tool loop whose first assistant message does not
  begin with a thinking block (another provider or model made that step: nothing to replay) is sent with
  thinking left out, said with ``llm.setting_dropped`` (:data:`UNTHINKABLE_TURN`) — the API's 400 otherwise;
* a tool message → a ``tool_result{tool_use_id, content, is_error}`` block in a user message (no content:
  :data:`EMPTY_TOOL_RESULT`, as an empty error result is a 400); consecutive results merge into ONE user message
  (right after the assistant's ``tool_use`` message), and any same-role neighbours merge, tool results first;
* a call id the API does not take (``^[a-zA-Z0-9_-]+$``) is sent as :func:`sendable_call_id` makes it, in the
  ``tool_use`` and the ``tool_result`` alike; a conversation with nothing to send is refused before sending
  (:func:`conversation_error`);
* ``tool_choice`` → ``{"type": auto|any|none}`` or ``{"type": "tool", "name": N}``, sent only
  with tools; ``max_tokens`` is required (default :data:`DEFAULT_MAX_TOKENS`); ``stop`` →
  ``stop_sequences`` (a whitespace-only one refused: Claude's 400); ``temperature``.

The request's settings (``docs/settings.md``; per-model data in :mod:`.models`):
``thinking_budget`` → ``thinking: {type: enabled, budget_tokens}`` (at least 1024, below ``max_tokens``);
``reasoning_effort`` → ``output_config.effort`` with adaptive thinking on the models that have them, a
thinking budget on older thinking models; ``top_p``; ``parallel_tool_calls: false`` →
``tool_choice.disable_parallel_tool_use``; ``cache`` → ``cache_control`` breakpoints on the last tool, the
system prompt and the newest message (a 1-hour TTL on the first two for an extended retention).  Thinking
refuses a temperature other than 1, a ``top_p`` below 0.95 and a forced tool choice before sending.  The
wire has no ``seed``: it is dropped with an ``llm.setting_dropped`` event.

Content parts: images → ``image`` blocks, PDFs → ``document`` blocks (``base64`` or ``url`` sources), text
documents → ``document`` blocks with a ``text`` source; a tool result with media → a ``tool_result`` whose
content is the text block and those blocks.

``vendor_options["anthropic"]`` is merged into the body last, so it can set any vendor field
(``thinking``, ``cache_control``, ``metadata``, ``top_k``, ...) or override a mapped one, but for ``model``,
``messages`` and ``stream``, which are refused (:func:`~agentactors.providers._settings.check_owned`), and for
``tools`` beside declared tools, which it would replace (``extra_tools`` appends); what the
merged body then sends for ``temperature``, ``top_p``, ``max_tokens`` and ``thinking`` is judged as the settings
are (:func:`.models.check_sent`: ``{"temperature": 0.5}`` beside a ``top_p`` on Claude 4.5 is refused too).
Three keys are read by the codec instead of being copied: ``disable_parallel_tool_use``
(bool, goes into ``tool_choice``; never with ``none``), ``tool_extras`` (``{tool name: {field:
value}}`` merged into that tool's definition, e.g. ``cache_control`` or ``defer_loading``) and
``extra_tools`` (raw tool definitions appended after the declared ones, e.g. server tools).

``LLMRequest.response_format`` → ``output_config.format: {"type": "json_schema", "schema": S}`` (merged
with any ``output_config`` of the vendor options), the schema fitted to what Anthropic's structured
outputs compile (:mod:`agentactors.providers._constrained_schema`).

Tool names follow Anthropic's rule (``^[a-zA-Z0-9_-]{1,64}$``: no dots).

Errors: :class:`~agentactors.UnsupportedContentError` / :class:`~agentactors.UnsupportedSettingError` for
what the model cannot take, :class:`~agentactors.providers.errors.UnsupportedToolNameError` for a tool name
Anthropic refuses, :class:`~agentactors.UnsupportedToolChoiceError` for a forced tool choice with
extended thinking on (:func:`forced_with_thinking_error`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...errors import ErrorKind, ProviderError, UnsupportedToolChoiceError
from ...messages import LLMRequest, Message, ToolChoice
from ...parts import Document, Image, Part, Text
from ...settings import CachePolicy
from .._constrained_schema import anthropic_output_schema
from .._settings import ANTHROPIC_TOOL_NAMES, bare_model, check_owned, check_tool_names, dropped, refused
from .models import WIRE, check_parts, check_sent, check_sent_stop, plan_thinking, sampling_fields

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "EMPTY_TOOL_RESULT",
    "UNTHINKABLE_TURN",
    "conversation_error",
    "encode_request",
    "forced_choice_refusal",
    "forced_with_thinking_error",
    "part_block",
    "sendable_call_id",
    "thinking_enabled",
    "trim_final_assistant",
    "turn_begins_thinking",
]

#: ``max_tokens`` for a request that sets none: the Messages API requires one.
DEFAULT_MAX_TOKENS = 4096
#: The content of a tool result that has none (a tool that returned ``""``): the API answers an empty error result
#: with a 400 ("content cannot be empty if `is_error` is true") and a blank text with another.
EMPTY_TOOL_RESULT = "(no output)"
# A tool-use id the Messages API (``^[a-zA-Z0-9_-]+$``) and Converse (``[a-zA-Z0-9_-]+``, 1 to 64) take.
_SENDABLE_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_NOT_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")

# vendor_options keys the codec consumes instead of copying into the body.
_CODEC_KEYS = frozenset({"disable_parallel_tool_use", "tool_extras", "extra_tools"})
# Body fields no vendor option may set: the model, the conversation and the call's kind.
_OWNED = frozenset({"model", "messages", "stream"})


def thinking_enabled(options: Mapping[str, Any]) -> bool:
    """Whether ``vendor_options["anthropic"]`` turns on extended thinking (``enabled`` / ``adaptive``)."""
    thinking = options.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type", "enabled") != "disabled"


def _default_max_tokens(options: Mapping[str, Any]) -> int:
    # With thinking, max_tokens must exceed budget_tokens; leave the default room for the answer.
    thinking = options.get("thinking")
    budget = thinking.get("budget_tokens") if isinstance(thinking, Mapping) else None
    if isinstance(budget, int) and not isinstance(budget, bool) and budget >= DEFAULT_MAX_TOKENS:
        return budget + DEFAULT_MAX_TOKENS
    return DEFAULT_MAX_TOKENS


def _tool_choice(choice: ToolChoice, disable_parallel: Any) -> dict[str, Any]:
    wire: dict[str, Any]
    if choice.mode == "tool":
        wire = {"type": "tool", "name": choice.name}
    else:
        wire = {"type": {"auto": "auto", "none": "none", "required": "any"}[choice.mode]}
    # The API rejects disable_parallel_tool_use together with "none" (there is nothing to parallelise).
    if isinstance(disable_parallel, bool) and choice.mode != "none":
        wire["disable_parallel_tool_use"] = disable_parallel
    return wire


def _replayed_blocks(message: Message, model: str) -> list[dict[str, Any]]:
    data = (message.provider_data or {}).get(WIRE)
    if not isinstance(data, Mapping):
        return []
    blocks = data.get("blocks")
    if not isinstance(blocks, list):
        return []
    made_by = data.get("model")
    if isinstance(made_by, str) and made_by != model and not _same_model(made_by, model):
        # The rare path: another model made it (a fallback opus -> sonnet) and its thinking signatures are a 400
        # here ("Invalid `signature` in `thinking` block"); server tool blocks are not bound to a model.
        return [dict(b) for b in blocks if isinstance(b, Mapping) and b.get("type") not in _THINKING_BLOCKS]
    # Verbatim: a thinking block's signature covers its exact text; any change is a 400.
    return [dict(b) for b in blocks if isinstance(b, Mapping)]


def _same_model(made_by: str, model: str) -> bool:
    """Whether a block stamped ``made_by`` (the model its request was sent to) was made by ``model``.

    Names are compared as the model tables match them (:func:`~agentactors.providers._settings.bare_model`: case,
    a router's ``vendor/`` and a cloud's ``anthropic.`` prefix aside); anything else is another model.
    """
    return bare_model(made_by) == bare_model(model)


def part_block(part: Part) -> dict[str, Any] | None:
    """One content part as a content block (``None`` for blank text: the API rejects a text block that is empty or
    whitespace only)."""
    if isinstance(part, Text):
        return {"type": "text", "text": part.text} if part.text and not part.text.isspace() else None
    if isinstance(part, Image):
        if part.url is not None:
            return {"type": "image", "source": {"type": "url", "url": part.url}}
        return {"type": "image", "source": {"type": "base64", "media_type": part.media_type, "data": part.base64()}}
    assert isinstance(part, Document)  # check_parts refused audio before encoding began
    text = part.text
    if text is not None:
        source: dict[str, Any] = {"type": "text", "media_type": "text/plain", "data": text}
    elif part.url is not None:
        source = {"type": "url", "url": part.url}
    else:
        source = {"type": "base64", "media_type": "application/pdf", "data": part.base64()}
    block: dict[str, Any] = {"type": "document", "source": source}
    if part.title:
        block["title"] = part.title
    return block


def _content_blocks(message: Message) -> list[dict[str, Any]]:
    return [b for b in (part_block(p) for p in message.parts) if b is not None]


def _blocks_for(message: Message, model: str) -> tuple[str, list[dict[str, Any]]]:
    """The wire role and content blocks of one non-system message."""
    if message.role == "tool":
        content: str | list[dict[str, Any]] = _content_blocks(message) if message.media else message.content
        if not content or (isinstance(content, str) and content.isspace()):
            content = EMPTY_TOOL_RESULT  # an empty or blank result is a 400 (the rare path: a tool returned "")
        return "user", [
            {
                "type": "tool_result",
                "tool_use_id": sendable_call_id(message.tool_call_id or ""),
                "content": content,
                "is_error": message.is_error,
            }
        ]
    blocks: list[dict[str, Any]] = []
    if message.role == "assistant":
        blocks.extend(_replayed_blocks(message, model))
    if message.media:
        blocks.extend(_content_blocks(message))
    elif message.content and not message.content.isspace():
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        # An unparseable call still has to be replayed (its tool_result refers to it); {} is the
        # only object we can honestly send, and the result tells the model what went wrong.
        blocks.append({"type": "tool_use", "id": sendable_call_id(call.id), "name": call.name,
                       "input": dict(call.arguments)})
    return message.role, blocks


def sendable_call_id(call_id: str) -> str:
    """``call_id`` as Anthropic's ``tool_use.id`` and Converse's ``toolUseId`` take it (``[a-zA-Z0-9_-]``, 1 to 64).

    Another vendor's id may hold other characters (Kimi's ``functions.get_weather:0``) and is a 400 there: it is
    sent with each such character as ``_`` and a digest of the whole id (so two ids never become one), the same
    every time — the call and its result, this request and the next.
    """
    if _SENDABLE_ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{_NOT_ID_CHARS.sub('_', call_id)[:48]}_{digest}"


def trim_final_assistant(messages: list[dict[str, Any]], text_key: str) -> None:
    """End a conversation whose last turn is the assistant's (a prefill: "Sure, ", ``<answer>\\n``) without trailing
    whitespace: Claude's APIs answer it with a 400 ("final assistant content cannot end with trailing whitespace").

    ``text_key``: where a text block holds its text (``"text"`` on both Messages' ``{"type": "text"}`` and
    Converse's ``{"text": ...}``).  A final text block that was only whitespace goes; a turn left with nothing goes.
    Only the last turn's last block: whitespace anywhere else is the model's to read.  The rare path: a loop's
    conversation ends with a user or tool turn.
    """
    last = messages[-1] if messages else None
    if last is None or last.get("role") != "assistant" or not last.get("content"):
        return
    block = last["content"][-1]
    text = block.get(text_key) if isinstance(block, dict) and block.get("type", "text") == "text" else None
    if not isinstance(text, str) or text == (trimmed := text.rstrip()):
        return
    if trimmed:
        last["content"][-1] = {**block, text_key: trimmed}  # (a copy: a replayed block is the message's own)
        return
    del last["content"][-1]
    if not last["content"]:
        del messages[-1]


def conversation_error(wire: str, model: str, messages: Sequence[Mapping[str, Any]]) -> ProviderError | None:
    """The request-kind error for a Messages- or Converse-shaped conversation with nothing to send, or ``None``.

    Every message empty or blank (system messages aside): the API answers a 400 for an empty ``messages``.  A
    conversation that opens with the assistant's turn is sent as it is: the APIs have refused one ("first message
    must use the "user" role") and may again, but a 400 they give is a request-kind error all the same, and
    refusing it here would refuse it where they no longer do.
    """
    if messages:
        return None
    why = "nothing to send: every message of the conversation is empty (system messages aside)"
    return ProviderError(f"{why}; nothing was sent", provider=wire, model=model, kind=ErrorKind.request)


def _tool_results_first(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # In a user turn the API wants tool_result blocks before any other content.
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if not results or len(results) == len(blocks):
        return blocks
    return results + [b for b in blocks if b.get("type") != "tool_result"]


def _messages(messages: Iterable[Message], model: str) -> tuple[str, list[dict[str, Any]]]:
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            if message.content:
                system.append(message.content)
            continue
        role, blocks = _blocks_for(message, model)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            # The API wants strict user/assistant alternation: neighbours of one role merge.
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for entry in out:
        if entry["role"] == "user":
            entry["content"] = _tool_results_first(entry["content"])
    if out and out[-1]["role"] == "assistant":
        trim_final_assistant(out, "text")
    return "\n\n".join(system), out


# Blocks a cache_control breakpoint may sit on (not thinking blocks: those are cached with their turn).
_CACHEABLE = frozenset({"text", "image", "document", "tool_result", "tool_use"})


def _mark_cache(body: dict[str, Any], policy: CachePolicy) -> None:
    """Put ``cache_control`` breakpoints where ``policy`` asks: last tool, system prompt, newest message."""
    lasting: dict[str, Any] = {"type": "ephemeral"}
    if policy.retention == "extended":
        lasting["ttl"] = "1h"  # the prefix outlives the conversation's tail, which moves every step
    tools = body.get("tools")
    if policy.tools and tools:
        tools[-1] = {**tools[-1], "cache_control": tools[-1].get("cache_control", lasting)}
    system = body.get("system")
    if policy.system and isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": lasting}]
    messages = body.get("messages")
    if policy.conversation and messages and isinstance(messages[-1].get("content"), list):
        for block in reversed(messages[-1]["content"]):
            if isinstance(block, dict) and block.get("type") in _CACHEABLE:
                block.setdefault("cache_control", {"type": "ephemeral"})
                break


def encode_request(request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
    """The Messages API body for ``request`` (see the module docstring for the mapping)."""
    options = request.options_for(WIRE)
    check_owned(WIRE, model, options, _OWNED)
    if request.tools and "tools" in options:
        # It would replace the declared tools: the model could not call them, and a named choice would be a 400.
        raise refused(WIRE, model, "vendor_options",
                      "vendor_options['anthropic'] may not set 'tools' beside the request's declared tools (it would "
                      "replace them); append raw tool definitions with 'extra_tools'")
    check_parts(request.messages, model)
    check_tool_names(WIRE, model, request.tools, ANTHROPIC_TOOL_NAMES)
    thinking, effort = plan_thinking(request, model)
    thinking_on = _thinking_on(options, thinking)
    if thinking_on and request.tool_choice.forced and request.tools:
        raise forced_with_thinking_error(request, model, WIRE)
    system, messages = _messages(request.messages, model)
    error = conversation_error(WIRE, model, messages)
    if error is not None:
        raise error
    unthinkable = thinking_on and _manual_thinking(options, thinking) and not turn_begins_thinking(
        messages, lambda block: block.get("type") in _THINKING_BLOCKS)
    if unthinkable:
        # The rare path: a fallback from another wire made the turn's first step, which has no thinking to replay.
        dropped(WIRE, model, "thinking", options.get("thinking", thinking), UNTHINKABLE_TURN)
        thinking = None
        thinking_on = False
        options = {key: value for key, value in options.items() if key != "thinking"}
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens or _default_max_tokens(options if "thinking" in options else
                                                                {"thinking": thinking}),
        "messages": messages,
        "stream": stream,
    }
    if system:
        body["system"] = system
    extras = options.get("tool_extras")
    extras = extras if isinstance(extras, Mapping) else {}
    tools: list[dict[str, Any]] = []
    for spec in request.tools:
        tool = {"name": spec.name, "description": spec.description, "input_schema": dict(spec.parameters)}
        more = extras.get(spec.name)
        if isinstance(more, Mapping):
            tool.update(more)
        tools.append(tool)
    extra_tools = options.get("extra_tools")
    if isinstance(extra_tools, list | tuple):
        tools.extend(dict(t) for t in extra_tools if isinstance(t, Mapping))
    if tools:
        body["tools"] = tools
        disable = options.get("disable_parallel_tool_use")
        if disable is None and request.parallel_tool_calls is not None:
            disable = not request.parallel_tool_calls
        body["tool_choice"] = _tool_choice(request.tool_choice, disable)
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    body.update(sampling_fields(request, model, thinking=thinking_on))
    if thinking_on and "top_k" in options:
        raise refused(WIRE, model, "top_k", "extended thinking is not compatible with top_k")
    if request.seed is not None:
        dropped(WIRE, model, "seed", request.seed, "the Messages API has no seed")
    if thinking is not None:
        body["thinking"] = thinking
    if effort is not None:
        body["output_config"] = {"effort": effort}
    if request.cache is not None and request.cache.enabled:
        _mark_cache(body, request.cache)
    for key, value in options.items():
        if key in _CODEC_KEYS:
            continue
        if key == "output_config" and isinstance(value, Mapping) and isinstance(body.get(key), dict):
            body[key] = {**body[key], **value}  # e.g. a response format beside our effort
        else:
            body[key] = value
    if request.response_format is not None:
        config = body.get("output_config")
        body["output_config"] = {
            **(dict(config) if isinstance(config, Mapping) else {}),
            "format": {"type": "json_schema", "schema": anthropic_output_schema(request.response_format.schema)},
        }
    if options:
        check_sent(body, model, options)  # what the options set is judged as the settings were
    if "stop_sequences" in body:
        check_sent_stop(WIRE, model, body["stop_sequences"], options, key="stop_sequences")
    return body


_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
#: Why manual thinking is left out of a request whose turn began without a thinking block (``llm.setting_dropped``).
UNTHINKABLE_TURN = (
    "with extended thinking enabled the API requires the turn's first assistant message (before the latest "
    "tool_use and tool_result blocks) to begin with a thinking block, and this one has none to replay (another "
    "provider or model made it): thinking is left out of this request instead of a certain 400"
)


def turn_begins_thinking(messages: Sequence[Mapping[str, Any]], thinking: Callable[[Mapping[str, Any]], bool]) -> bool:
    """Whether the current turn of a wire conversation (Messages or Converse shaped) begins as thinking requires.

    The current turn starts after the last user message holding more than tool results; its first assistant
    message, when there is one (a tool loop under way), must begin with a block ``thinking`` accepts.  A
    conversation ending with a user turn asks for nothing.
    """
    first: Mapping[str, Any] | None = None
    for message in reversed(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "assistant":
            first = message
        elif any(not _is_result(b) for b in blocks):
            break  # a user's own message: the turn began after it
    if first is None:
        return True
    content = first.get("content")
    return isinstance(content, list) and bool(content) and isinstance(content[0], Mapping) and thinking(content[0])


def _is_result(block: Any) -> bool:
    return isinstance(block, Mapping) and (block.get("type") == "tool_result" or "toolResult" in block)


def _manual_thinking(options: Mapping[str, Any], planned: Mapping[str, Any] | None) -> bool:
    """Whether the thinking sent is manual (``enabled``): the model thinks on every step.

    Adaptive thinking is optional for the model — it may answer a step without thinking — so a turn without a
    thinking block is no conflict there.
    """
    thinking = options.get("thinking") if "thinking" in options else planned
    return isinstance(thinking, Mapping) and thinking.get("type", "enabled") == "enabled"


def _thinking_on(options: Mapping[str, Any], planned: Mapping[str, Any] | None) -> bool:
    """Whether a request's extended thinking is on: its vendor options' ``thinking``, else the settings' plan."""
    return thinking_enabled(options) if "thinking" in options else planned is not None


def forced_choice_refusal(request: LLMRequest, model: str) -> str | None:
    """Why ``request``'s settings rule out a forced tool choice for ``model`` (extended thinking on), or ``None``.

    The same reading of the settings as :func:`encode_request`'s, which refuses such a request.
    """
    options = request.options_for(WIRE)
    thinking, _ = plan_thinking(request, model)
    if not _thinking_on(options, thinking):
        return None
    if "thinking" in options:
        cause = "vendor options turn extended thinking on"
    elif request.thinking_budget:
        cause = f"thinking_budget={request.thinking_budget} turns extended thinking on"
    else:
        cause = f"reasoning_effort={request.reasoning_effort!r} turns thinking on"
    return f"{cause}, and Anthropic refuses a forced tool choice together with thinking"


def forced_with_thinking_error(request: LLMRequest, model: str, provider: str) -> UnsupportedToolChoiceError:
    """The error for ``request``'s forced tool choice with extended thinking on: refused before sending."""
    return UnsupportedToolChoiceError(
        f"a forced tool choice ({request.tool_choice.mode!r}) cannot be combined with extended "
        "thinking on Anthropic; use ToolChoice.auto() or turn thinking off for this request",
        provider=provider,
        model=model,
    )
