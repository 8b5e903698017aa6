"""The fake vendor's reading of content parts and generation settings, with their strict checks.

Written from the vendors' documented request shapes, independently of the client codecs (like the rest of
:mod:`agentactors.testing`), so a codec that sends a part or a setting the vendor rejects fails the
integration tests.  Each check mirrors a documented rejection (the message reads like the vendor's), nothing
stricter.  Failures go through ``fail(status, message)``, which raises in strict mode and records nothing
otherwise; what is read is recorded as :class:`~agentactors.testing.SeenPart` values and a neutral
settings mapping (see :class:`~agentactors.testing.Conversation`).

Never fetches a URL: a ``url`` part is recorded as sent.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
from collections.abc import Callable, Mapping
from typing import Any

from ._fake_script import SeenPart

__all__ = [
    "anthropic_block_part",
    "anthropic_settings",
    "gemini_part",
    "gemini_settings",
    "openai_content_parts",
    "openai_settings",
    "openai_type_problem",
]

Fail = Callable[[int, str], None]

_OPENAI_PART_TYPES = frozenset({"text", "image_url", "input_audio", "file", "refusal", "audio"})
_OPENAI_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})
_ANTHROPIC_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_ANTHROPIC_EFFORTS = frozenset({"low", "medium", "high", "xhigh", "max"})
_ANTHROPIC_IMAGE_BYTES = 5 * 1024 * 1024
_ANTHROPIC_MAX_BREAKPOINTS = 4
_ANTHROPIC_MIN_BUDGET = 1024
_GEMINI_LEVELS = frozenset({"minimal", "low", "medium", "high"})
_KIND_OF = {"image": "image", "audio": "audio"}


def _decoded_size(data: Any, where: str, fail: Fail) -> int | None:
    if not isinstance(data, str):
        fail(400, f"{where}: Input should be a valid base64 string")
        return None
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        fail(400, f"{where}: Input should be a valid base64 string")
        return None


def _kind(media_type: str | None) -> str:
    top = (media_type or "").split("/", 1)[0]
    return _KIND_OF.get(top, "document")


def _range(value: Any, low: float, high: float, name: str, fail: Fail, message: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        fail(400, message.format(name=name, value=value, low=low, high=high))


# --- OpenAI chat completions --------------------------------------------------------------------


def openai_type_problem(where: str, value: Any, expected: str, *kinds: type) -> str | None:
    """OpenAI's "Invalid type for 'x'" message if ``value`` (present) is none of ``kinds``, else ``None``.

    ``bool`` is an ``int`` to Python, not to OpenAI: it passes only where ``bool`` is among ``kinds``.
    """
    if value is None and type(None) in kinds:
        return None
    if isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool)):
        return None
    got = ("null" if value is None else "a boolean" if isinstance(value, bool) else "an integer"
           if isinstance(value, int) else "a decimal" if isinstance(value, float) else "a string"
           if isinstance(value, str) else "an array" if isinstance(value, list) else "an object")
    return f"Invalid type for '{where}': expected {expected}, but got {got} instead."


def _openai_data_url(url: str, where: str, fail: Fail) -> tuple[str | None, int | None]:
    header, sep, payload = url[5:].partition(",")
    if not sep or ";base64" not in header:
        fail(400, f"Invalid value for '{where}': expected a base64-encoded data URL.")
        return None, None
    return header.split(";", 1)[0] or None, _decoded_size(payload, where, fail)


def openai_content_parts(content: Any, *, where: str, role: str, fail: Fail) -> list[SeenPart]:
    """The media parts of one message's ``content`` (a string has none)."""
    if not isinstance(content, list):
        return []
    seen: list[SeenPart] = []
    for j, part in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str) or kind not in _OPENAI_PART_TYPES:
            fail(400, f"Invalid value: '{kind}'. Supported values are: 'text', 'image_url', 'input_audio', "
                 f"'refusal', 'audio', and 'file'. ({at}.type)")
            continue
        if kind != "text" and role == "tool":
            fail(400, f"Invalid value for '{at}.type': tool messages support text content parts only.")
            continue
        if kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else None
            if not isinstance(url, str):
                fail(400, f"Missing required parameter: '{at}.image_url.url'.")
                continue
            if url.startswith("data:"):
                media_type, size = _openai_data_url(url, f"{at}.image_url.url", fail)
                if media_type is not None and not media_type.startswith("image/"):
                    fail(400, f"Invalid image data URL at '{at}': the media type must be image/*.")
                seen.append(SeenPart("image", media_type, "data", size, role=role))
            elif url.startswith(("http://", "https://")):
                seen.append(SeenPart("image", None, "url", url=url, role=role))
            else:
                fail(400, f"Invalid image URL: '{at}.image_url.url' must be an http(s) or data URL.")
        elif kind == "input_audio":
            audio = part.get("input_audio")
            fmt = audio.get("format") if isinstance(audio, dict) else None
            if fmt not in ("wav", "mp3"):
                fail(400, f"Invalid value for '{at}.input_audio.format': supported values are 'wav' and 'mp3'.")
            data = audio.get("data") if isinstance(audio, dict) else None
            size = _decoded_size(data, f"{at}.input_audio.data", fail)
            seen.append(SeenPart("audio", f"audio/{'mpeg' if fmt == 'mp3' else fmt}", "data", size, role=role))
        elif kind == "file":
            file = part.get("file")
            if not isinstance(file, dict) or not ("file_data" in file or "file_id" in file):
                fail(400, f"Missing required parameter: '{at}.file.file_data' or '{at}.file.file_id'.")
                continue
            if "file_id" in file:
                seen.append(SeenPart("document", None, "file_id", role=role))
                continue
            data = file.get("file_data")
            if not isinstance(data, str) or not data.startswith("data:"):
                fail(400, f"Invalid value for '{at}.file.file_data': expected a base64-encoded data URL.")
                continue
            media_type, size = _openai_data_url(data, f"{at}.file.file_data", fail)
            if media_type != "application/pdf":
                fail(400, f"Invalid file data at '{at}': only PDF files are supported.")
            title = file.get("filename") if isinstance(file.get("filename"), str) else None
            seen.append(SeenPart("document", media_type, "data", size, role=role, title=title))
    return seen


def openai_settings(body: Mapping[str, Any], fail: Fail) -> dict[str, Any]:
    """The generation settings of a Chat Completions body, checked."""
    out: dict[str, Any] = {}
    _range(body.get("temperature"), 0, 2, "temperature", fail,
           "Invalid 'temperature': decimal above maximum value. Expected a value <= {high:g}, but got {value}.")
    _range(body.get("top_p"), 0, 1, "top_p", fail,
           "Invalid 'top_p': decimal above maximum value. Expected a value <= {high:g}, but got {value}.")
    effort = body.get("reasoning_effort")
    if effort is not None and (not isinstance(effort, str) or effort not in _OPENAI_EFFORTS):
        fail(400, f"Invalid value: '{effort}'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', "
             "and 'xhigh'.")
    stop = body.get("stop")
    problem = openai_type_problem("stop", stop, "one of a string or array of strings", str, list, type(None))
    if problem is None and isinstance(stop, list) and not all(isinstance(s, str) for s in stop):
        problem = ("Invalid type for 'stop': expected one of a string or array of strings, but got an array with "
                   "other values instead.")
    if problem is not None:
        fail(400, problem)
    if isinstance(stop, list) and len(stop) > 4:
        fail(400, "Invalid 'stop': array too long. Expected an array with maximum length 4.")
    for key in ("temperature", "top_p", "seed", "parallel_tool_calls", "reasoning_effort"):
        if key in body:
            out[key] = body[key]
    if stop is not None:
        out["stop"] = [stop] if isinstance(stop, str) else stop
    if "prompt_cache_retention" in body:
        out["cache_retention"] = body["prompt_cache_retention"]
    return out


# --- Anthropic messages -------------------------------------------------------------------------


def anthropic_block_part(block: Mapping[str, Any], *, where: str, role: str, fail: Fail) -> SeenPart | None:
    """The media part an ``image`` or ``document`` block carries (``None`` for any other block)."""
    kind = block.get("type")
    if kind not in ("image", "document"):
        return None
    source = block.get("source")
    stype = source.get("type") if isinstance(source, dict) else None
    title = block.get("title") if isinstance(block.get("title"), str) else None
    if stype == "url":
        url = source.get("url") if isinstance(source, dict) else None
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            fail(400, f"{where}.{kind}.source.url: URL must be an http(s) URL")
        media_type = "application/pdf" if kind == "document" else None
        return SeenPart(str(kind), media_type, "url", url=url if isinstance(url, str) else None, role=role,
                        title=title)
    if stype == "base64" and isinstance(source, dict):
        media_type = source.get("media_type")
        if kind == "image" and media_type not in _ANTHROPIC_IMAGE_TYPES:
            fail(400, f"{where}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', "
                 "'image/gif' or 'image/webp'")
        if kind == "document" and media_type != "application/pdf":
            fail(400, f"{where}.document.source.base64.media_type: Input should be 'application/pdf'")
        size = _decoded_size(source.get("data"), f"{where}.{kind}.source.base64.data", fail)
        encoded = source.get("data")
        if kind == "image" and isinstance(encoded, str) and len(encoded) > _ANTHROPIC_IMAGE_BYTES:
            # As Anthropic does: the limit is on the base64 text (a 4.8 MB file is 6.4 MB of it), not the image.
            fail(400, f"{where}.image.source.base64: image exceeds 5 MB maximum: {len(encoded)} bytes > "
                 f"{_ANTHROPIC_IMAGE_BYTES} bytes")
        return SeenPart(str(kind), media_type if isinstance(media_type, str) else None, "data", size, role=role,
                        title=title)
    if stype == "text" and kind == "document" and isinstance(source, dict):
        if source.get("media_type") != "text/plain" or not isinstance(source.get("data"), str):
            fail(400, f"{where}.document.source.text: media_type must be 'text/plain' and data a string")
        data = source.get("data")
        size = len(data.encode("utf-8")) if isinstance(data, str) else None
        return SeenPart("document", "text/plain", "data", size, role=role, title=title)
    fail(400, f"{where}.{kind}.source: Input tag '{stype}' found using 'type' does not match any of the expected "
         "tags: 'base64', 'url', 'text', 'file'")
    return None


def _count_breakpoints(value: Any) -> tuple[int, list[str]]:
    """``cache_control`` markers anywhere in ``value``, and their TTLs (``5m`` when unset)."""
    count, ttls = 0, []
    if isinstance(value, dict):
        control = value.get("cache_control")
        if isinstance(control, dict):
            count += 1
            ttls.append(str(control.get("ttl", "5m")))
        for key, sub in value.items():
            if key != "cache_control":
                more, more_ttls = _count_breakpoints(sub)
                count += more
                ttls.extend(more_ttls)
    elif isinstance(value, list):
        for sub in value:
            more, more_ttls = _count_breakpoints(sub)
            count += more
            ttls.extend(more_ttls)
    return count, ttls


#: Claude models that take ``temperature`` or ``top_p``, not both (Anthropic's "cannot both be specified").
_ANTHROPIC_ONE_SAMPLER = (
    "claude-opus-4-1*", "claude-opus-4-5*", "claude-opus-4-6*", "claude-sonnet-4-5*", "claude-sonnet-4-6*",
    "claude-haiku-4-5*",
)


def anthropic_settings(body: Mapping[str, Any], max_tokens: Any, fail: Fail) -> dict[str, Any]:
    """The generation settings of a Messages body, checked against the thinking rules and the cache limit."""
    out: dict[str, Any] = {}
    thinking = body.get("thinking")
    on = False
    if isinstance(thinking, dict):
        ttype = thinking.get("type")
        if ttype not in ("enabled", "disabled", "adaptive"):
            fail(400, f"thinking: Input tag '{ttype}' found using 'type' does not match any of the expected tags: "
                 "'enabled', 'disabled', 'adaptive'")
        on = ttype in ("enabled", "adaptive")
        if on:
            out["thinking"] = ttype
        if ttype == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or isinstance(budget, bool) or budget < _ANTHROPIC_MIN_BUDGET:
                fail(400, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
            elif isinstance(max_tokens, int) and budget >= max_tokens:
                fail(400, "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                     "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking")
            out["thinking_budget"] = budget
    temperature = body.get("temperature")
    _range(temperature, 0, 1, "temperature", fail, "temperature: Input should be less than or equal to {high:g}")
    _range(body.get("top_p"), 0, 1, "top_p", fail, "top_p: Input should be less than or equal to {high:g}")
    model = body.get("model")
    if (
        temperature is not None and body.get("top_p") is not None
        and isinstance(model, str) and any(fnmatch.fnmatchcase(model, p) for p in _ANTHROPIC_ONE_SAMPLER)
    ):
        fail(400, "`temperature` and `top_p` cannot both be specified for this model. Please use only one.")
    if on and temperature is not None and temperature != 1:
        fail(400, "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation "
             "at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility")
    if on and "top_k" in body:
        fail(400, "`top_k` must be unset when thinking is enabled. Please consult our documentation at "
             "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility")
    top_p = body.get("top_p")
    if on and isinstance(top_p, int | float) and top_p < 0.95:
        fail(400, "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled.")
    config = body.get("output_config")
    effort = config.get("effort") if isinstance(config, dict) else None
    if effort is not None:
        if effort not in _ANTHROPIC_EFFORTS:
            fail(400, f"output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max' ({effort!r})")
        out["reasoning_effort"] = effort
    for key in ("temperature", "top_p", "top_k"):
        if key in body:
            out[key] = body[key]
    if "stop_sequences" in body:
        out["stop"] = body["stop_sequences"]
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("disable_parallel_tool_use"), bool):
        out["parallel_tool_calls"] = not choice["disable_parallel_tool_use"]
    count, ttls = _count_breakpoints({k: body.get(k) for k in ("tools", "system", "messages")})
    if count > _ANTHROPIC_MAX_BREAKPOINTS:
        fail(400, f"A maximum of {_ANTHROPIC_MAX_BREAKPOINTS} blocks with cache_control may be provided. "
             f"Found {count}.")
    if count:
        out["cache_breakpoints"] = count
        out["cache_retention"] = ttls
    return out


# --- Gemini generateContent ---------------------------------------------------------------------


def gemini_part(part: Mapping[str, Any], key: str, *, where: str, role: str, fail: Fail) -> SeenPart | None:
    """The media part of an ``inlineData`` / ``fileData`` part (``None`` for any other part)."""
    if key in ("inlineData", "inline_data"):
        data = part[key]
        mime = data.get("mimeType", data.get("mime_type")) if isinstance(data, dict) else None
        if not isinstance(mime, str) or not mime:
            fail(400, f"* GenerateContentRequest.{where}.inline_data.mime_type: a mime type is required")
        size = _decoded_size(data.get("data") if isinstance(data, dict) else None, f"{where}.inline_data.data", fail)
        return SeenPart(_kind(mime if isinstance(mime, str) else None), mime if isinstance(mime, str) else None,
                        "data", size, role=role)
    if key in ("fileData", "file_data"):
        data = part[key]
        uri = data.get("fileUri", data.get("file_uri")) if isinstance(data, dict) else None
        mime = data.get("mimeType", data.get("mime_type")) if isinstance(data, dict) else None
        if not isinstance(uri, str) or not uri:
            fail(400, f"* GenerateContentRequest.{where}.file_data.file_uri: a file URI is required")
        return SeenPart(_kind(mime if isinstance(mime, str) else None), mime if isinstance(mime, str) else None,
                        "url", url=uri if isinstance(uri, str) else None, role=role)
    return None


def gemini_settings(generation: Mapping[str, Any], fail: Fail) -> dict[str, Any]:
    """The generation settings of a ``generationConfig``, checked."""
    out: dict[str, Any] = {}
    _range(generation.get("temperature"), 0, 2, "temperature", fail,
           "* GenerateContentRequest.generation_config.temperature: must be between {low:g} and {high:g}")
    _range(generation.get("topP"), 0, 1, "top_p", fail,
           "* GenerateContentRequest.generation_config.top_p: must be between {low:g} and {high:g}")
    stop = generation.get("stopSequences", generation.get("stop_sequences"))
    if isinstance(stop, list) and len(stop) > 5:
        fail(400, "* GenerateContentRequest.generation_config.stop_sequences: at most 5 stop sequences are allowed")
    thinking = generation.get("thinkingConfig", generation.get("thinking_config"))
    if isinstance(thinking, dict):
        level = thinking.get("thinkingLevel", thinking.get("thinking_level"))
        budget = thinking.get("thinkingBudget", thinking.get("thinking_budget"))
        if level is not None and budget is not None:
            fail(400, "thinking_budget and thinking_level are not supported together.")
        if level is not None:
            if str(level).lower() not in _GEMINI_LEVELS:
                fail(400, f"Invalid value at 'generation_config.thinking_config.thinking_level' ({level!r})")
            out["reasoning_effort"] = str(level).lower()
        if budget is not None:
            out["thinking_budget"] = budget
    for wire_key, key in (("temperature", "temperature"), ("topP", "top_p"), ("seed", "seed")):
        if wire_key in generation:
            out[key] = generation[wire_key]
    if stop is not None:
        out["stop"] = stop
    return out
