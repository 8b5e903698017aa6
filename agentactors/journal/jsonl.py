"""A recorded run read from a JSONL event record (:class:`~agentactors.events.JsonlRecorder`'s file).

The events of a run already hold what a replay serves, without a field added for it: each ``llm.response``
the step's whole response; each ``llm.request`` the whole conversation sent, so the first one holds the
run's input (after the agent's system message) and each later one the text of the tool results fed back
(the first ``size`` characters of a tool message: a nudge's note may follow them); ``tools.finished`` and
``tools.result_truncated`` / ``tools.result_refused`` each result's status, duration and flags; each
``run.steered`` a steer's text, taken after the step it names (before the next one's model call); a
``run.interrupted`` that the run was interrupted (its reason as the record has it: redacted); and
``run.finished`` how the run ended.  Events of other runs in the file (a delegated run's) are skipped.

Limits (a journal has none of them): the results of a run's last tool step are only known when a model
call followed it; a media part's bytes are not in the record; an input that began with its own system
message, replaced by the agent's, is read as the agent's; a steer is read as a user message of its text (one
sent as a :class:`~agentactors.messages.Message` of another role, or with media parts, is not rebuilt as it was).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import AgentActorsError
from ..events import Event, read_jsonl, to_jsonable
from ..loop.tape import Ending
from ..messages import LLMRequest, Message
from ..tools.results import ToolResult, ToolStatus
from .codec import message_from_event, response_from_event
from .records import RecordedRun, RecordedStep, RunNotRecordedError
from .store import JournalFormatError

__all__ = ["read_run", "run_from_events"]


def read_run(path: str | Path, run_id: str) -> RecordedRun:
    """The run ``run_id`` of the JSONL record at ``path``.

    :raises RunNotRecordedError: the file holds no ``run.started`` and first request for ``run_id``.
    :raises JournalFormatError: the run's events hold a value of the wrong kind (a hand-edited or damaged
        record: a message without a role, a response whose content is no string...); it names the run and file.
    :raises OSError, ValueError: the file cannot be read, or a line is not JSON.
    """
    return run_from_events(read_jsonl(path, run_id=run_id), run_id, where=str(path))


def run_from_events(events: Iterable[Event], run_id: str, *, where: str = "the events") -> RecordedRun:
    """The run ``run_id`` told by ``events`` (a JSONL record's, or a recorder's: objects are read as JSON).

    :raises RunNotRecordedError: ``events`` hold no ``run.started`` and first request for ``run_id``.
    :raises JournalFormatError: a value of the run's events is of the wrong kind.  Each event is JSON, but
        nothing checked its payload: decoded as it was, a hand-edited or damaged record raised a bare
        ``TypeError`` from a constructor deep inside (a traceback from ``python -m agentactors replay``), as a
        journal's damaged row does not (``load_run``'s :class:`JournalFormatError`).
    """
    try:
        return _told(events, run_id, where)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        if isinstance(exc, AgentActorsError):  # a line that is not an event (EventRecordError), said already
            raise
        raise JournalFormatError(
            f"{where}: run {run_id!r}'s events do not decode ({type(exc).__name__}: {exc}): a damaged record?"
        ) from exc  # (kept: were it a bug of ours on a sound record, its traceback is the way to it)


def _told(events: Iterable[Event], run_id: str, where: str) -> RecordedRun:
    started: Mapping[str, Any] | None = None
    # step -> its request's messages as recorded (JSON, decoded when needed), or, from a recorder's events, the
    # request itself: each request holds the whole conversation, and decoding each one read a long run's N²/2
    # messages.
    requests: dict[int, _Request] = {}
    responses: dict[int, Any] = {}
    finished: dict[int, list[dict[str, Any]]] = {}  # step -> its tools.finished payloads, in order
    flags: dict[str, dict[str, Any]] = {}  # call id -> truncated / refused, with the original size
    steered: dict[int, list[Message]] = {}  # step -> the steers taken before its model call, in order
    status = "running"
    content: str | None = None
    ending: Ending | None = None  # an interrupt (a cancellation is in run.finished's status: RecordedRun.cut_short)
    for e in events:
        if e.run_id != run_id:
            continue
        kind, step = e.type, e.step
        if kind == "llm.request":
            request = e.data.get("request")
            if step is None or step in requests:
                continue
            if isinstance(request, LLMRequest):
                requests[step] = request
                continue
            if not isinstance(request, Mapping):  # a record's is JSON already: not walked again (N²/2 messages)
                request = to_jsonable(request)
            if isinstance(request, Mapping):
                messages = request.get("messages") or []
                requests[step] = messages if isinstance(messages, list) else list(messages)
            continue
        data = {k: to_jsonable(v) for k, v in e.data.items()}
        if kind == "run.started":
            started = data
        elif kind == "llm.response" and step is not None:
            responses[step] = response_from_event(data["response"])
        elif kind == "tools.finished" and step is not None:
            finished.setdefault(step, []).append(data)
        elif kind == "run.steered":  # taken after step ``step`` (none: before the first), before the next one's call
            steered.setdefault((step or 0) + 1, []).append(Message("user", str(data.get("text") or "")))
        elif kind in ("tools.result_truncated", "tools.result_refused"):
            flags[str(data.get("call_id"))] = {kind.rpartition("_")[2]: True, "original_chars": data.get("size")}
        elif kind == "run.interrupted":
            reason = data.get("reason")
            ending = Ending("interrupted", reason=reason if isinstance(reason, str) else None)
        elif kind == "run.finished":
            status, content = _ending(data), data.get("content")
    first = _messages(requests[min(requests)]) if requests else None
    if started is None or first is None:
        raise RunNotRecordedError(f"no run.started and first request for run {run_id!r} in {where}")
    agent = started.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise TypeError(f"run.started's agent is a name, not {type(agent).__name__}")
    if content is not None and not isinstance(content, str):
        raise TypeError(f"run.finished's content is a string, not {type(content).__name__}")
    inputs, system = _inputs(first, int(started.get("messages") or 0))
    steps = tuple(
        RecordedStep(
            n,
            responses[n],
            _results(finished[n], requests.get(n + 1), flags) if n in finished else None,
            tuple(steered.get(n, ())),
        )
        for n in sorted(responses)
    )
    # Steers taken after the last response, before a model call that never answered: the run went on for them.
    after = tuple(steered.get(max(responses, default=0) + 1, ()))
    return RecordedRun(
        run_id, agent, inputs, steps, status,
        native=started.get("native_tools"), system=system, content=content,
        ending=ending if status == "finished" else None, steers_after=after,
    )


#: A step's request, as run_from_events keeps it: its messages as a record holds them (JSON objects, not yet
#: decoded), or the request itself.
_Request = list[Any] | LLMRequest


def _inputs(request: list[Message], count: int) -> tuple[tuple[Message, ...], str | None]:
    """The run's input and the agent's system prompt, from its first request (``count`` input messages)."""
    if len(request) == count + 1 and request and request[0].role == "system":
        return tuple(request[1:]), request[0].content
    return tuple(request[-count:]) if count else (), None


def _messages(request: _Request) -> list[Message]:
    """A request's messages as an event records them."""
    if not isinstance(request, LLMRequest):
        return [message_from_event(m) for m in request]
    record = to_jsonable(request)
    return [message_from_event(m) for m in record.get("messages") or ()] if isinstance(record, Mapping) else []


def _texts(finished: list[dict[str, Any]], after: _Request) -> dict[str | None, str]:
    """Tool result texts of ``after`` by call id, the last of each id (the step's results are at its end)."""
    # From the end, until each of the step's calls is found: what a record's copy would say of them (a string
    # is recorded as it is), without reading the conversation before them.
    wanted = {str(data["call_id"]) for data in finished}
    messages: Iterable[Message] = (
        reversed(after.messages) if isinstance(after, LLMRequest) else _tool_messages(reversed(after))
    )
    texts: dict[str | None, str] = {}
    for m in messages:
        call_id = m.tool_call_id
        if m.role == "tool" and call_id in wanted and call_id not in texts:
            texts[call_id] = m.content
            if len(texts) == len(wanted):
                break
    return texts


def _tool_messages(docs: Iterable[Any]) -> Iterator[Message]:
    """The tool messages among a record's messages, decoded one at a time (the others are not decoded)."""
    for doc in docs:
        if isinstance(doc, Mapping) and doc.get("role") == "tool":
            yield message_from_event(doc)


def _results(
    finished: list[dict[str, Any]], after: _Request | None, flags: Mapping[str, Mapping[str, Any]]
) -> tuple[ToolResult, ...] | None:
    """A tool step's results, their text from the request that followed (``None`` when none followed)."""
    if after is None:
        return None
    texts = _texts(finished, after)
    out = []
    for data in finished:
        call_id = str(data["call_id"])
        size = int(data.get("size") or 0)
        text = texts.get(call_id)
        if text is None and not data.get("awaiting_approval"):
            return None
        extra = flags.get(call_id, {})
        out.append(
            ToolResult(
                call_id,
                str(data["name"]),
                ToolStatus(data["status"]),
                (text or "")[:size],
                size,
                float(data.get("duration") or 0.0),
                truncated=bool(extra.get("truncated", False)),
                refused=bool(extra.get("refused", False)),
                original_chars=extra.get("original_chars"),
                awaiting_approval=bool(data.get("awaiting_approval", False)),
            )
        )
    return tuple(out)


def _ending(data: Mapping[str, Any]) -> str:
    if data.get("cancelled"):
        return "cancelled"
    if data.get("paused"):
        return "paused"
    if "content" not in data:  # the run raised (its run.finished has no outcome)
        return "raised"
    return "finished"
