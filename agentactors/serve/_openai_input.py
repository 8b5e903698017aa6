"""A Chat Completions request body, read into what a run takes: the conversation and the settings.

Every way a body can be wrong raises :class:`BadRequest` naming the offending ``param`` (OpenAI's
error shape carries it), before any run starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..messages import Message, ToolCall
from ..parts import Image, Part, Text
from ..settings import ModelSettings

__all__ = ["BadRequest", "ChatRequest", "read_chat_request"]


class BadRequest(Exception):
    """A request the app refuses with 400: ``message`` for the client, ``param`` the field at fault."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code


@attrs.frozen(slots=True)
class ChatRequest:
    """What a request asks for: which agent (``model``), on which conversation, streamed or not."""

    model: str
    messages: tuple[Message, ...]
    stream: bool = False
    include_usage: bool = False
    settings: ModelSettings | None = None
    new: tuple[Message, ...] = ()  # the messages after the last assistant or tool message: a session's turn


def read_chat_request(body: Mapping[str, Any]) -> ChatRequest:
    """The request in ``body``.  :raises BadRequest: a field missing, of the wrong type or unsupported."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("you must provide a model parameter (the name of an agent)", "model")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise BadRequest("'messages' must be a non-empty array", "messages")
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise BadRequest("'stream' must be a boolean", "stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise BadRequest("'stream_options' must be an object", "stream_options")
    include_usage = (options or {}).get("include_usage")
    if include_usage is not None and not isinstance(include_usage, bool):  # "no" is truthy: it asked for usage
        raise BadRequest("'stream_options.include_usage' must be a boolean", "stream_options")
    _check_ignored(body)
    messages = conversation(raw)
    tail = raw[_after_last_answer(raw) :]
    return ChatRequest(
        model=model,
        messages=messages,
        stream=bool(stream),
        include_usage=bool(include_usage),
        settings=_settings(body),
        new=conversation(tail) if any(m.get("role") == "user" for m in tail) else (),
    )


def _check_ignored(body: Mapping[str, Any]) -> None:
    """The fields a run does not take, checked all the same: one it would misread is refused, not dropped.

    ``n``: a run gives one answer, so ``n`` > 1 answered with one choice would lose the rest without a word.
    ``user`` (an end user's id, for the vendor's abuse checks): a string, as OpenAI's API requires; the run has
    no use for it.
    """
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n != 1):
        raise BadRequest("'n' must be 1: an agent's run gives one answer (send n requests for n answers)", "n")
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise BadRequest("'user' must be a string", "user")


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
            raise BadRequest(f"{param} must be an object", param)
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
                raise BadRequest(f"{param}.tool_call_id must be a non-empty string", f"{param}.tool_call_id")
            if call_id not in called:
                raise BadRequest(
                    f"{param} (role 'tool') must answer a call of an earlier assistant message's 'tool_calls'; "
                    f"none made {call_id[:100]!r}",
                    f"{param}.tool_call_id",
                )
            messages.append(Message.tool(call_id, _text(item.get("content"), f"{param}.content")))
        else:
            raise BadRequest(
                f"{param}.role must be one of 'system', 'developer', 'user', 'assistant', 'tool'", f"{param}.role"
            )
    if not messages:
        raise BadRequest("'messages' must hold at least one user message", "messages")
    head = (Message.system("\n\n".join(t for t in system if t)),) if any(system) else ()
    return head + tuple(messages)


def _text(content: Any, param: str) -> str:
    """Text content: a string, or an array of text parts (joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise BadRequest(f"{param}[{i}] must be a text part: {{'type': 'text', 'text': ...}}", f"{param}[{i}]")
            texts.append(part["text"])
        return "\n".join(texts)
    raise BadRequest(f"{param} must be a string or an array of content parts", param)


def _user(content: Any, param: str) -> Message:
    if isinstance(content, str):
        return Message.user(content)
    if not isinstance(content, list):
        raise BadRequest(f"{param} must be a string or an array of content parts", param)
    parts: list[Part] = []
    for i, part in enumerate(content):
        where = f"{param}[{i}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(Text(part["text"]))
        elif kind == "image_url":
            parts.append(_image(part.get("image_url"), where))
        else:
            raise BadRequest(f"{where} must be a 'text' or 'image_url' part", where)
    return Message.user(parts) if parts else Message.user("")


def _image(value: Any, param: str) -> Image:
    url = value.get("url") if isinstance(value, dict) else value
    if not isinstance(url, str) or not url:
        raise BadRequest(f"{param}.image_url.url must be a URL or a data: URL", f"{param}.image_url")
    try:
        return Image(url=url)
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"{param}.image_url: {exc}", f"{param}.image_url") from None


def _assistant(item: Mapping[str, Any], param: str) -> Message:
    text = _text(item.get("content"), f"{param}.content")
    raw_calls = item.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise BadRequest(f"{param}.tool_calls must be an array", f"{param}.tool_calls")
    calls = [_tool_call(c, f"{param}.tool_calls[{i}]") for i, c in enumerate(raw_calls)]
    return Message.assistant(text, calls)


def _tool_call(value: Any, param: str) -> ToolCall:
    function = value.get("function") if isinstance(value, dict) else None
    call_id = value.get("id") if isinstance(value, dict) else None
    if not isinstance(function, dict) or not isinstance(call_id, str) or not isinstance(function.get("name"), str):
        raise BadRequest(f"{param} must be {{'id', 'type': 'function', 'function': {{'name', 'arguments'}}}}", param)
    raw = function.get("arguments") or "{}"
    if not isinstance(raw, str):
        raise BadRequest(f"{param}.function.arguments must be a JSON string", f"{param}.function.arguments")
    if not function["name"]:
        raise BadRequest(f"{param}.function.name must be a non-empty string", f"{param}.function.name")
    # Parsed as a model's arguments are (within the library's JSON policy): text that is not a JSON object
    # is kept, marked "unparseable", as the call the client says its assistant made.
    return ToolCall.from_raw(call_id, function["name"], raw)


_NUMBERS = {"temperature": "temperature", "top_p": "top_p"}


def _settings(body: Mapping[str, Any]) -> ModelSettings | None:
    """The sampling fields the request sets, as settings that win over the agent's for this run."""
    fields: dict[str, Any] = {}
    for key, name in _NUMBERS.items():
        value = body.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise BadRequest(f"'{key}' must be a number", key)
            try:
                fields[name] = float(value)
            except OverflowError:  # an integer beyond any float: JSON has no limit on its digits
                raise BadRequest(f"'{key}' must be a finite number", key) from None
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise BadRequest("'max_completion_tokens' must be a positive integer", "max_completion_tokens")
        fields["max_tokens"] = limit
    stop = body.get("stop")
    if stop is not None:
        if isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            raise BadRequest("'stop' must be a string or an array of strings", "stop")
        fields["stop"] = tuple(stop)
    seed = body.get("seed")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise BadRequest("'seed' must be an integer", "seed")
        fields["seed"] = seed
    if not fields:
        return None
    try:
        return ModelSettings(**fields)
    except (TypeError, ValueError) as exc:
        raise BadRequest(str(exc), next(iter(fields))) from None
