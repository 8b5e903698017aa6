"""An AG-UI ``RunAgentInput``, read into what a run takes: the ids to echo, the conversation, and the context the
application shares with the agent for the run.

Hand-read rather than through the ``ag-ui-protocol`` package's pydantic models: the input needs a dozen
checks, and serving AG-UI then costs no dependency (the tests hold the app to the package's models).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from ..messages import Message, ToolCall
from ..parts import Image, Part, Text
from ..tools.registry import Tool

__all__ = [
    "APPROVAL_SCHEMA",
    "CONTEXT_HEADING",
    "MAX_CONTEXT_CHARS",
    "MAX_CONTEXT_ITEMS",
    "MAX_CONTEXT_ITEM_CHARS",
    "Decided",
    "InvalidInput",
    "ResumeAnswer",
    "ResumeRefused",
    "RunInput",
    "approval_schema",
    "decisions_of",
    "read_run_input",
]


class InvalidInput(Exception):
    """A body that is not a RunAgentInput this app can serve (answered with 422)."""


class ResumeRefused(Exception):
    """Resume answers that do not decide the thread's pause: the run ends ``RUN_ERROR`` with ``code``, nothing
    decided — a well-formed input whose answers do not fit what the server waits for, which only the server can
    tell (a malformed one is :class:`InvalidInput`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@attrs.frozen(slots=True)
class ResumeAnswer:
    """One AG-UI resume entry: the interrupt it answers, whether it was ``"resolved"`` or abandoned
    (``"cancelled"``), and the answer itself (``payload``, any JSON value; read by :func:`decisions_of`)."""

    interrupt_id: str
    status: Literal["resolved", "cancelled"]
    payload: Any = None


#: The answer an approval interrupt asks for (its ``responseSchema``): ``approved``, and for a denial the reason
#: the model reads.  No ``editedArgs``: a call is approved as the model made it, or denied (AG-UI reads that
#: property's presence as the capability to edit) — unless its tool takes edits (:func:`approval_schema`).
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "reason": {"type": "string", "description": "why the call is denied: the model reads it"},
    },
    "required": ["approved"],
}

#: The reason a call reads when the person abandoned its interrupt (status ``cancelled``): it is not run.
ABANDONED = "the person dismissed the approval without deciding: the call was not run"


@attrs.frozen(slots=True)
class RunInput:
    """The ids the events echo, the conversation the run continues, and what is new in it.

    ``new``: the messages after the thread's last ``assistant`` or ``tool`` message (all of them when it has
    none) — what a thread kept by the server (``sessions=True``) or a live run (a steer) has not seen yet.
    ``state``: the client's ``state``, which the run's ``STATE_SNAPSHOT`` events carry on.  ``users``: the
    thread's user messages with their ``id`` (``None`` when it has none), which tell a live run what it has
    not seen yet.  ``resume``: the answers to the interrupts of the thread's paused run (AG-UI's ``resume``):
    such an input continues that run rather than starting one, so its messages are not read — the server kept
    the paused turn (``sessions=True``), and without sessions the input is refused (docs/serve.md, "AG-UI").
    ``context``: the input's ``context`` rendered as the run's instructions (:func:`read_context`; ``""``: none) —
    kept apart from the messages, so that it reaches this run alone and never becomes part of a thread.
    """

    thread_id: str
    run_id: str
    messages: tuple[Message, ...]
    new: tuple[Message, ...] = ()
    state: Any = None
    users: tuple[tuple[str | None, Message], ...] = ()
    resume: tuple[ResumeAnswer, ...] = ()
    context: str = attrs.field(default="", repr=False)  # the application's: not for a repr (a log line, a traceback)


def read_run_input(body: Mapping[str, Any]) -> RunInput:
    """The run ``body`` asks for.  :raises InvalidInput: a required field missing or of the wrong shape."""
    thread_id, run_id = body.get("threadId"), body.get("runId")
    if not isinstance(thread_id, str) or not isinstance(run_id, str):
        raise InvalidInput("a RunAgentInput needs 'threadId' and 'runId' (strings)")
    _check_unread(body)
    state = body.get("state")
    if state is not None and not isinstance(state, dict):
        # Every STATE_SNAPSHOT is the client's state with the run's under "agentactors", which only an object can
        # hold: a snapshot without the client's own state would replace it in the frontend, dropped without a word.
        raise InvalidInput(
            f"'state' must be an object (the run's own state is sent under its 'agentactors' key), not "
            f"{_json_type(state)}"
        )
    context = read_context(body.get("context"))
    resume = _resume(body.get("resume"))
    if resume:  # answers to interrupts: they continue the paused run, whatever the messages hold
        return RunInput(thread_id, run_id, (), state=state, resume=resume, context=context)
    raw = body.get("messages")
    if not isinstance(raw, list):
        raise InvalidInput("a RunAgentInput needs 'messages' (an array)")
    messages = conversation(raw)
    if not messages:
        raise InvalidInput("'messages' holds nothing to answer: send at least one user message")
    new = conversation(raw[_after_last_answer(raw) :])
    return RunInput(thread_id, run_id, messages, new, state, _users(raw), context=context)


def _check_unread(body: Mapping[str, Any]) -> None:
    """The RunAgentInput fields the app does not read, held to their AG-UI types all the same (a client that sends
    them wrong has a bug the 422 shows, rather than a run that looks as if it took them): ``parentRunId`` a string,
    ``tools`` (a frontend's tools; the agent's own run here) an array of objects.  (``forwardedProps``, any value
    AG-UI passes through for the agent's framework, is not read either: nothing here is configured by it.)"""
    parent = body.get("parentRunId")
    if parent is not None and not isinstance(parent, str):
        raise InvalidInput("'parentRunId' must be a string")
    tools = body.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(v, dict) for v in tools)):
        raise InvalidInput("'tools' must be an array of objects")


#: How much context one input may share with the agent: entries, characters of one (its description and value), and
#: characters of them all.  Bounds on what every model request of the run carries, in the system message, which
#: the run cannot trim as it trims old tool results (``context_budget_chars``).
MAX_CONTEXT_ITEMS = 100
MAX_CONTEXT_ITEM_CHARS = 20_000
MAX_CONTEXT_CHARS = 100_000

#: The line the run's context starts with, in its system message: what the entries below it are.
CONTEXT_HEADING = "Context from the application:"


def read_context(raw: Any) -> str:
    """AG-UI's ``context`` — ``[{"description": <string>, "value": <string>}, ...]``, what the application shares
    with the agent for the run (CopilotKit's readables: "the user's cart", "the open document") — as the text the
    run's model reads (``""``: none): :data:`CONTEXT_HEADING`, then ``- <description>: <value>`` per entry, a
    value's later lines indented under it.  An entry that says nothing (an empty value) is left out; other keys
    of an entry are not read (AG-UI keeps unknown fields).

    :raises InvalidInput: not an array of such objects (both strings: AG-UI's types — a value the application
        meant as structured data it serialises itself, as CopilotKit does), or past the bounds
        (:data:`MAX_CONTEXT_ITEMS`, :data:`MAX_CONTEXT_ITEM_CHARS`, :data:`MAX_CONTEXT_CHARS`).  The message names
        the entry and the bound, never what it holds.
    """
    if raw is None:
        return ""
    if not isinstance(raw, list) or not all(isinstance(v, dict) for v in raw):
        raise InvalidInput("'context' must be an array of objects ({'description': string, 'value': string})")
    if len(raw) > MAX_CONTEXT_ITEMS:
        raise InvalidInput(f"'context' holds {len(raw)} entries: at most {MAX_CONTEXT_ITEMS} are taken")
    lines: list[str] = []
    total = 0
    for i, entry in enumerate(raw):
        description, value = entry.get("description"), entry.get("value")
        if not isinstance(description, str):
            raise InvalidInput(f"context[{i}].description must be a string, not {_json_type(description)}")
        if not isinstance(value, str):
            raise InvalidInput(f"context[{i}].value must be a string, not {_json_type(value)}")
        size = len(description) + len(value)
        if size > MAX_CONTEXT_ITEM_CHARS:
            raise InvalidInput(
                f"context[{i}] holds {size} characters: at most {MAX_CONTEXT_ITEM_CHARS} per entry are taken"
            )
        total += size
        if total > MAX_CONTEXT_CHARS:
            raise InvalidInput(
                f"'context' holds over {MAX_CONTEXT_CHARS} characters (past it at context[{i}]): at most that many "
                "are taken"
            )
        if not value.strip():
            continue
        text = value.strip("\n").replace("\n", "\n  ")
        label = " ".join(description.split())  # one line: a description's newlines would break the list
        lines.append(f"- {label}: {text}" if label else f"- {text}")
    return "\n".join((CONTEXT_HEADING, *lines)) if lines else ""


def _json_type(value: Any) -> str:
    """What ``value`` is, as JSON (for a message: never the value itself)."""
    if value is None:
        return "missing or null"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "an array" if isinstance(value, list) else "an object"


def _resume(raw: Any) -> tuple[ResumeAnswer, ...]:
    """The answers a ``resume`` carries (``()``: absent or empty), in the shape of AG-UI's resume entries.

    :raises InvalidInput: not an array of ``{"interruptId": <string>, "status": "resolved" | "cancelled",
        "payload"?: <any>, "metadata"?: <object>}``, or an interrupt answered twice (which answer would hold?).
    """
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidInput("'resume' must be an array of answers to interrupts")
    answers: list[ResumeAnswer] = []
    for i, entry in enumerate(raw):
        given = entry.get("interruptId") if isinstance(entry, dict) else None
        if not isinstance(given, str) or not given:
            raise InvalidInput(f"resume[{i}] must be an object with an 'interruptId' (a non-empty string)")
        status = entry.get("status")
        if status not in ("resolved", "cancelled"):
            raise InvalidInput(f"resume[{i}].status must be 'resolved' or 'cancelled'")
        metadata = entry.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidInput(f"resume[{i}].metadata must be an object")
        if any(a.interrupt_id == given for a in answers):
            raise InvalidInput(f"resume answers interrupt {given[:100]!r} twice")
        answers.append(ResumeAnswer(given, status, entry.get("payload")))
    return tuple(answers)


@attrs.frozen(slots=True)
class Decided:
    """What resume answers decide of a pause: a decision per pending call (``True`` approves, a reason denies — the
    shape a session's ``resolve`` takes), the arguments a person put in place of the model's for approved calls
    (``edits``, by call id), and the ids of the answers skipped because they name no open interrupt."""

    decisions: dict[str, bool | str]
    edits: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    skipped: tuple[str, ...] = ()


def decisions_of(
    answers: Sequence[ResumeAnswer], pending: Sequence[ToolCall], editable: Mapping[str, Tool[Any, Any]] | None = None
) -> Decided:
    """What ``answers`` decide of the calls ``pending`` (each interrupt's id is its call's).

    An answer naming no pending call is skipped, as AG-UI asks (SHOULD ignore): a client that still holds an
    interrupt decided already — or one of another run — has its other answers taken, and the skipped one decides
    nothing and is never read.  Of the rest, all or nothing, as AG-UI asks (a resume covers every open interrupt)
    and as a pause is decided (once, every call at a time): an answer that does not fit refuses the whole list,
    and nothing is decided.

    ``editable``: the tools, by name, whose calls a person may approve with other arguments (``editedArgs``, a
    whole replacement): the edit is checked against the tool's schema as a model's call is, here — before
    anything is decided — so a bad edit runs nothing.

    :raises ResumeRefused: nothing is pending (``NoOpenInterrupts``: never paused, or decided already — a resume
        sent again), a pending call has no answer (``InterruptsNotCovered``: also when every answer was skipped),
        or a ``resolved`` answer's payload is not :func:`approval_schema`'s (``InvalidResumePayload``: among them an
        edit that breaks the tool's schema, or of a call whose tool takes none).
    """
    waiting = [call.id for call in pending]
    if not waiting:
        raise ResumeRefused(
            "NoOpenInterrupts",
            "this thread has no interrupt to answer: its last run did not pause, or its interrupts were answered "
            "already (post the thread's next message without 'resume'); nothing was decided or started",
        )
    known = [a for a in answers if a.interrupt_id in waiting]
    skipped = tuple(a.interrupt_id for a in answers if a.interrupt_id not in waiting)
    answered = {a.interrupt_id for a in known}
    missing = [i for i in waiting if i not in answered]
    if missing:
        ignored = f" (skipped, as they name no open interrupt: {_ids(skipped)})" if skipped else ""
        raise ResumeRefused(
            "InterruptsNotCovered",
            f"a resume answers every open interrupt — approve, deny or cancel each — and {_ids(missing)} has no "
            f"answer{ignored}: nothing was decided",
        )
    calls = {call.id: call for call in pending}
    decisions: dict[str, bool | str] = {}
    edits: dict[str, dict[str, Any]] = {}
    for answer in known:
        decision, edited = _decision(answer)
        decisions[answer.interrupt_id] = decision
        if edited is not None:
            given = answer.interrupt_id
            edits[given] = _checked_edit(given, calls[given], edited, editable)
    return Decided(decisions, edits, skipped)


def _decision(answer: ResumeAnswer) -> tuple[bool | str, Any]:
    """``True`` (approved), or the reason a denied or abandoned call reads; and an approval's ``editedArgs`` (``None``:
    none — an edit of a denied call is not read: that call does not run).

    :raises ResumeRefused: a ``resolved`` payload other than ``{"approved": bool, "reason"?: str, "editedArgs"?: ...}``.
    """
    if answer.status == "cancelled":
        return ABANDONED, None
    payload = answer.payload
    where = f"the answer to {answer.interrupt_id[:100]!r}"
    if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
        raise ResumeRefused(
            "InvalidResumePayload", f'{where} must have the payload {{"approved": true | false, "reason"?: string}}'
        )
    reason = payload.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ResumeRefused("InvalidResumePayload", f"{where}: 'reason' must be a string")
    if payload["approved"]:
        return True, payload.get("editedArgs")
    return (reason or "").strip()[:2000] or "denied by a person", None


def _checked_edit(
    call_id: str, call: ToolCall, edited: Any, editable: Mapping[str, Tool[Any, Any]] | None
) -> dict[str, Any]:
    """``edited`` — a person's arguments for the approved ``call``, in place of the model's — checked as the model's
    would be (the tool's schema), before anything is decided.

    :raises ResumeRefused: ``InvalidResumePayload``: the call's tool takes no edit here (its interrupt offered
        none), the edit is not an object, or it breaks the tool's schema.
    """
    where = f"the answer to {call_id[:100]!r}"
    tool = (editable or {}).get(call.name)
    if tool is None:
        raise ResumeRefused(
            "InvalidResumePayload",
            f"{where} edits the call's arguments, which this server takes only for its agent's own tools (the "
            "interrupt's responseSchema then has 'editedArgs'): approve or deny the call as made; nothing was decided",
        )
    if not isinstance(edited, dict):
        raise ResumeRefused(
            "InvalidResumePayload",
            f"{where}: 'editedArgs' must be an object — the call's arguments, replaced whole; nothing was decided",
        )
    issues = tool.validate(edited)
    if issues:
        listed = "; ".join(issue.line()[2:] for issue in issues[:5]) + ("; ..." if len(issues) > 5 else "")
        raise ResumeRefused(
            "InvalidResumePayload",
            f"{where}: 'editedArgs' do not fit the parameters of {call.name}: {listed[:600]}; nothing was decided",
        )
    return dict(edited)


def approval_schema(tool: Tool[Any, Any] | None) -> dict[str, Any]:
    """The answer an interrupt for a call of ``tool`` asks for (its ``responseSchema``): :data:`APPROVAL_SCHEMA`, and
    when the call may be approved with other arguments (``tool``: one whose edits the server checks), ``editedArgs``
    — AG-UI reads that property's presence as the capability to edit — with the tool's parameters as its schema."""
    if tool is None:
        return APPROVAL_SCHEMA
    parameters = tool.spec.parameters
    edited: dict[str, Any] = {"type": "object", "description": EDITED_ARGS}
    # The tool's own parameters describe the edit, unless they refer to definitions ($ref), which would be read
    # against the responseSchema's root and mean nothing there.
    if "$ref" not in json.dumps(parameters):
        edited = {**parameters, "type": "object", "description": EDITED_ARGS}
    properties = {**APPROVAL_SCHEMA["properties"], "editedArgs": edited}
    return {**APPROVAL_SCHEMA, "properties": properties}


#: What ``editedArgs`` is, for whoever reads an interrupt's ``responseSchema``.
EDITED_ARGS = (
    "with approved: true, the arguments the call runs with instead of the model's — replaced whole, not merged; "
    "checked against the tool's parameters"
)


def _ids(ids: Sequence[str]) -> str:
    """Interrupt ids for a message (bounded: they are the client's)."""
    return ", ".join(repr(i[:100]) for i in ids[:10]) + (" ..." if len(ids) > 10 else "")


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
            error = item.get("error")
            messages.append(Message.tool(call_id, _with_reason(_text(content, where), error), is_error=bool(error)))
        elif role not in ("activity", "reasoning"):
            raise InvalidInput(f"{where}.role {role!r} is not an AG-UI message role")
    head = (Message.system("\n\n".join(t for t in system if t)),) if any(system) else ()
    return head + tuple(messages) if messages else ()


def _with_reason(text: str, error: Any) -> str:
    """A tool message's content with its ``error`` — AG-UI 1.0's string saying why the tool failed — after it, for the
    model to read: ``is_error`` alone tells it only that the call failed.  A reason the content already holds is not
    said twice; an ``error`` that is no text (a flag) adds nothing."""
    if not isinstance(error, str) or not error.strip() or error.strip() in text:
        return text
    return f"{text}\n\nError: {error}" if text else f"Error: {error}"


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
