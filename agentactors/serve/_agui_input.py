"""An AG-UI ``RunAgentInput``, read into what a run takes: the ids to echo and the conversation.

Hand-read rather than through the ``ag-ui-protocol`` package's pydantic models: the input needs a dozen
checks, and serving AG-UI then costs no dependency (the tests hold the app to the package's models).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..messages import Message, ToolCall
from ..parts import Image, Part, Text

__all__ = ["InvalidInput", "RunInput", "read_run_input"]


class InvalidInput(Exception):
    """A body that is not a RunAgentInput this app can serve (answered with 422)."""


@attrs.frozen(slots=True)
class RunInput:
    """The ids the events echo, the conversation the run continues, and what is new in it.

    ``new``: the messages after the thread's last ``assistant`` or ``tool`` message (all of them when it has
    none) — what a thread kept by the server (``sessions=True``) or a live run (a steer) has not seen yet.
    ``state``: the client's ``state``, which the run's ``STATE_SNAPSHOT`` events carry on.  ``users``: the
    thread's user messages with their ``id`` (``None`` when it has none), which tell a live run what it has
    not seen yet.  ``resume``: the ids of the interrupts the input answers (AG-UI's ``resume``) — which this app
    does not take yet: such an input is refused whole, its messages not read (docs/serve.md, "AG-UI").
    """

    thread_id: str
    run_id: str
    messages: tuple[Message, ...]
    new: tuple[Message, ...] = ()
    state: Any = None
    users: tuple[tuple[str | None, Message], ...] = ()
    resume: tuple[str, ...] = ()


def read_run_input(body: Mapping[str, Any]) -> RunInput:
    """The run ``body`` asks for.  :raises InvalidInput: a required field missing or of the wrong shape."""
    thread_id, run_id = body.get("threadId"), body.get("runId")
    if not isinstance(thread_id, str) or not isinstance(run_id, str):
        raise InvalidInput("a RunAgentInput needs 'threadId' and 'runId' (strings)")
    resume = _resume(body.get("resume"))
    if resume:  # answers to interrupts: refused whole (the run's events say so), whatever the messages hold
        return RunInput(thread_id, run_id, (), state=body.get("state"), resume=resume)
    raw = body.get("messages")
    if not isinstance(raw, list):
        raise InvalidInput("a RunAgentInput needs 'messages' (an array)")
    messages = conversation(raw)
    if not messages:
        raise InvalidInput("'messages' holds nothing to answer: send at least one user message")
    new = conversation(raw[_after_last_answer(raw) :])
    return RunInput(thread_id, run_id, messages, new, body.get("state"), _users(raw))


def _resume(raw: Any) -> tuple[str, ...]:
    """The ids of the interrupts a ``resume`` answers (``()``: absent or empty).

    :raises InvalidInput: not an array of ``{"interruptId": <string>, ...}``."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidInput("'resume' must be an array of answers to interrupts")
    ids = []
    for i, entry in enumerate(raw):
        given = entry.get("interruptId") if isinstance(entry, dict) else None
        if not isinstance(given, str):
            raise InvalidInput(f"resume[{i}] must be an object with an 'interruptId' (a string)")
        ids.append(given)
    return tuple(ids)


def _users(raw: Sequence[Any]) -> tuple[tuple[str | None, Message], ...]:
    """The user messages (already checked by :func:`conversation`) with their ids."""
    users = []
    for index, item in enumerate(raw):
        if item.get("role") == "user":
            given = item.get("id")
            message = _user(item.get("content"), f"messages[{index}]")
            users.append((given if isinstance(given, str) and given else None, message))
    return tuple(users)


def _after_last_answer(raw: Sequence[Any]) -> int:
    """The index after the thread's last assistant or tool message (0 when there is none)."""
    for index in range(len(raw) - 1, -1, -1):
        item = raw[index]
        if isinstance(item, dict) and item.get("role") in ("assistant", "tool"):
            return index + 1
    return 0


def conversation(raw: Sequence[Any]) -> tuple[Message, ...]:
    """The thread's messages as a run's conversation: system and developer messages, wherever they stand,
    become one leading system message (appended to the agent's system prompt); activity and reasoning
    messages are the UI's own and are left out."""
    system: list[str] = []
    messages: list[Message] = []
    for index, item in enumerate(raw):
        where = f"messages[{index}]"
        if not isinstance(item, dict):
            raise InvalidInput(f"{where} must be an object")
        role = item.get("role")
        content = item.get("content")
        if role in ("system", "developer"):
            system.append(_text(content, where))
        elif role == "user":
            messages.append(_user(content, where))
        elif role == "assistant":
            messages.append(Message.assistant(_text(content, where), _calls(item.get("toolCalls"), where)))
        elif role == "tool":
            call_id = item.get("toolCallId")
            if not isinstance(call_id, str) or not call_id:
                raise InvalidInput(f"{where}.toolCallId must be a non-empty string")
            messages.append(Message.tool(call_id, _text(content, where), is_error=bool(item.get("error"))))
        elif role not in ("activity", "reasoning"):
            raise InvalidInput(f"{where}.role {role!r} is not an AG-UI message role")
    head = (Message.system("\n\n".join(t for t in system if t)),) if any(system) else ()
    return head + tuple(messages) if messages else ()


def _text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.text for p in _parts(content, where) if isinstance(p, Text))
    raise InvalidInput(f"{where}.content must be a string or an array of parts")


def _user(content: Any, where: str) -> Message:
    if isinstance(content, str):
        return Message.user(content)
    if not isinstance(content, list):
        raise InvalidInput(f"{where}.content must be a string or an array of parts")
    parts = _parts(content, where)
    return Message.user(parts) if parts else Message.user("")


def _parts(content: list[Any], where: str) -> list[Part]:
    """Text and image parts; other media a UI may attach (audio, video, documents) are not taken yet."""
    parts: list[Part] = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(Text(part["text"]))
        elif kind == "image":
            parts.append(_image(part.get("source"), f"{where}.content[{i}]"))
        elif kind == "binary" and str(part.get("mimeType", "")).startswith("image/"):
            parts.append(_image(_legacy_source(part), f"{where}.content[{i}]"))
        else:
            raise InvalidInput(f"{where}.content[{i}]: only text and image parts are served")
    return parts


def _legacy_source(part: Mapping[str, Any]) -> dict[str, Any]:
    """A pre-1.0 ``binary`` part as a 1.0 source."""
    if isinstance(part.get("data"), str):
        return {"type": "data", "value": part["data"], "mimeType": part.get("mimeType")}
    return {"type": "url", "value": part.get("url"), "mimeType": part.get("mimeType")}


def _image(source: Any, where: str) -> Image:
    if not isinstance(source, dict) or not isinstance(source.get("value"), str):
        raise InvalidInput(f"{where}.source must be {{'type': 'data' | 'url', 'value': ...}}")
    kind, value, media_type = source.get("type"), source["value"], source.get("mimeType")
    try:
        if kind == "data":
            if not isinstance(media_type, str):
                raise InvalidInput(f"{where}.source.mimeType is required for inline data")
            return Image(url=f"data:{media_type};base64,{value}")
        if kind == "url":
            return Image(url=value, media_type=media_type if isinstance(media_type, str) else None)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    raise InvalidInput(f"{where}.source.type must be 'data' or 'url'")


def _calls(raw: Any, where: str) -> list[ToolCall]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidInput(f"{where}.toolCalls must be an array")
    calls = []
    for i, item in enumerate(raw):
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(item.get("id"), str) or not isinstance(
            function.get("name"), str
        ):
            raise InvalidInput(f"{where}.toolCalls[{i}] must be {{'id', 'function': {{'name', 'arguments'}}}}")
        if not function["name"]:
            raise InvalidInput(f"{where}.toolCalls[{i}].function.name must be a non-empty string")
        text = function.get("arguments") or "{}"
        # Parsed as a model's arguments are (within the library's JSON policy): anything but a JSON object's
        # text is kept, marked "unparseable", as the call the client says its assistant made.
        calls.append(ToolCall.from_raw(item["id"], function["name"], text if isinstance(text, str) else str(text)))
    return calls
