"""The caller's history made well-formed for every wire before a run sends it: each call answered, each result
after its call.

Every vendor refuses a conversation holding a tool call with no result after it (OpenAI: "An assistant message
with 'tool_calls' must be followed by tool messages...", Responses: "No tool output found for function call",
Anthropic: "`tool_use` ids were found without `tool_result` blocks immediately after", Gemini and Bedrock
alike), and OpenAI, Responses, Anthropic and Bedrock refuse a result whose call is not right before it.  Such a
history comes from another framework, a user's own storage, a history trimmed in the middle, or a paused run's
``RunResult.messages`` taken as the next turn's history instead of being resumed.  Sent as is, it fails every
later run over it: the conversation is poisoned.  So a run repairs it once, before its first step, the way agent
products do (an interrupted call answered "[Request interrupted by user for tool use]" in Claude Code,
"aborted" in Codex CLI), wire-neutral, so that every provider — a user's own included — gets the same
well-formed conversation:

* a call without a result after it is answered, right after the assistant message that made it (after the
  results that do exist for that message, in call order), by an **error** tool result, :data:`NO_RESULT`: the
  model reads that the call ended without one and can call again.  A result of that call found *later* in the
  history before the next step's calls (a framework that put a text message between a step's calls and its
  results) is moved there instead: it is the real answer;
* a result whose call is not right before it — nowhere before it (a history trimmed in the middle), a second
  result of one call, a result cut off from its step — is **dropped**.  Not turned into a user message: a
  tool's output is data from outside (a web page, a file), and made the user's words it would speak with the
  user's authority; without its call (the name and arguments it answers) it is unreadable anyway.  And a new
  user message in the middle of a conversation moves the turn boundaries some vendors validate (Gemini 3's
  thought signatures, Anthropic's thinking blocks).

What was repaired is recorded: a ``run.history_repaired`` event (counts, and each call's id, name and what was
done, no arguments, no content) and a WARNING log line.  The caller's messages are not changed (they are frozen);
the run's conversation — and so ``RunResult.messages``, and a session's history after the turn — is the
repaired one, so the repair is made once, not at every turn.

A call with an empty id (some OpenAI-compatible servers send none; the loop renames its own, :mod:`.call_ids`)
can be named by no result: it is left as it is.

Cost: nothing on the common path.  :class:`~agentactors.loop.state.LoopState` calls :func:`repair_history` only
for a history holding tool calls or results, once per run (the loop's own steps answer every call they make);
a well-formed one is checked in one pass that allocates only a set of ids per step with calls.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final, Literal

import attrs

from ..messages import Message, ToolCall

__all__ = ["NO_RESULT", "HistoryRepair", "repair_history"]

log = logging.getLogger("agentactors.loop")

#: The error result a call without one gets: what happened, as far as anyone knows, and what the model can do.
NO_RESULT: Final = (
    "No result: this call ended without one (the run that made it was cancelled, interrupted or failed, or its "
    "result was lost). Whether the tool ran is unknown; call it again if you still need its result."
)

#: The most repaired calls an event lists (the counts are whole): a history of thousands stays a small record.
_SHOWN: Final = 50

#: A call id as a record or log line shows it: at most this many characters, then an ellipsis.
_ID_CHARS: Final = 64

Repair = Literal["answered", "moved", "dropped"]


@attrs.frozen(slots=True)
class HistoryRepair:
    """What :func:`repair_history` did to a history.

    :ivar messages: the repaired history.
    :ivar answered: the calls that got a :data:`NO_RESULT` error result, in history order.
    :ivar moved: the results moved up to right after their call's message, in history order.
    :ivar dropped: the results dropped (no call right before them), in history order.
    """

    messages: tuple[Message, ...]
    answered: tuple[ToolCall, ...] = ()
    moved: tuple[Message, ...] = ()
    dropped: tuple[Message, ...] = ()

    def event_data(self) -> dict[str, Any]:
        """The ``run.history_repaired`` event's payload: the counts, and each repaired call (at most 50) with its
        id, its tool's name and what was done (``answered``, ``moved``, ``dropped``) — no arguments, no content."""
        calls: list[dict[str, str | None]] = []
        for repair, items in (("answered", self.answered), ("moved", self.moved), ("dropped", self.dropped)):
            for item in items:
                if len(calls) == _SHOWN:
                    break
                call_id = item.id if isinstance(item, ToolCall) else item.tool_call_id
                calls.append({"call_id": _shown(call_id or ""), "name": item.name, "repair": repair})
        return {"answered": len(self.answered), "moved": len(self.moved), "dropped": len(self.dropped),
                "calls": calls}


def repair_history(messages: Sequence[Message], run_id: str | None = None) -> HistoryRepair | None:
    """``messages`` with every call answered and every result right after its call (see the module docstring),
    or ``None`` when they are so already.

    A repair is logged at WARNING under ``run_id`` (counts and call ids).  ``messages`` are not changed.
    """
    if _well_formed(messages):
        return None
    repair = _repaired(messages)
    _log(repair, run_id)
    return repair


def _well_formed(messages: Sequence[Message]) -> bool:
    """Whether each call of ``messages`` has one result right after its message, and each result follows its call:
    one pass, nothing allocated but a set per assistant message with calls."""
    waiting: set[str] | None = None  # the ids of the last assistant message's calls not answered yet
    for m in messages:
        if m.role == "tool":
            if waiting is None or m.tool_call_id not in waiting:
                return False
            waiting.discard(m.tool_call_id)
            continue
        if waiting:
            return False
        calls = m.tool_calls
        waiting = {c.id for c in calls if c.id} if calls else None
    return not waiting


def _repaired(messages: Sequence[Message]) -> HistoryRepair:
    """The repair itself (see the module docstring): one pass, with each result's later places indexed first."""
    later: dict[str, list[int]] = {}  # call id -> the positions of its results, in order
    for index, m in enumerate(messages):
        if m.role == "tool" and m.tool_call_id is not None:
            later.setdefault(m.tool_call_id, []).append(index)
    taken: set[int] = set()  # positions of results placed already (after their call, here or moved up)
    out: list[Message] = []
    answered: list[ToolCall] = []
    moved: list[Message] = []
    dropped: list[Message] = []
    n = len(messages)
    i = 0
    while i < n:
        m = messages[i]
        i += 1
        if m.role == "tool":  # a result not in the block after its call's message
            if i - 1 not in taken:
                dropped.append(m)
            continue
        out.append(m)
        if not m.tool_calls:
            continue
        ids = {c.id for c in m.tool_calls}
        seen: set[str] = set()
        while i < n and messages[i].role == "tool":  # the block of results right after the calls
            result = messages[i]
            call_id = result.tool_call_id
            if call_id in ids and call_id not in seen:
                seen.add(call_id)
                taken.add(i)
                out.append(result)
            else:
                dropped.append(result)
            i += 1
        # A result cut off from its step is looked for up to the next step's calls, never past them: a later step
        # that reuses the id (a foreign history's ids can repeat) has its own result, which stays its own.
        stop = next((k for k in range(i, n) if messages[k].tool_calls), n)
        for call in m.tool_calls:
            call_id = call.id
            if not call_id or call_id in seen:
                continue
            seen.add(call_id)
            found = next((p for p in later.get(call_id, ()) if i <= p < stop and p not in taken), None)
            if found is not None:  # its result comes later, cut off from its step: moved up here
                taken.add(found)
                moved.append(messages[found])
                out.append(messages[found])
            else:
                answered.append(call)
                out.append(Message.tool(call_id, NO_RESULT, call.name, is_error=True))
    return HistoryRepair(tuple(out), tuple(answered), tuple(moved), tuple(dropped))


def _log(repair: HistoryRepair, run_id: str | None) -> None:
    parts = []
    for what, ids in (
        ("call(s) without a result answered with an error result", [c.id for c in repair.answered]),
        ("result(s) moved up to right after their call", [m.tool_call_id or "" for m in repair.moved]),
        ("result(s) dropped, their call not right before them", [m.tool_call_id or "" for m in repair.dropped]),
    ):
        if ids:
            more = f", ... and {len(ids) - 10} more" if len(ids) > 10 else ""
            shown = ", ".join(_shown(i) for i in ids[:10]) + more
            parts.append(f"{len(ids)} {what}: {shown}")
    log.warning("run %s: the input history was repaired before it was sent: %s", run_id, "; ".join(parts))


def _shown(call_id: str) -> str:
    """``call_id`` as a record or a log line shows it: whole up to 64 characters, else its head and an ellipsis."""
    return call_id if len(call_id) <= _ID_CHARS else call_id[:_ID_CHARS] + "…"
